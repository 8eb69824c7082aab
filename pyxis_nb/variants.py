"""Attention layers of the models of 2024-26, each on the one kernel.

Every class here is a :class:`~pyxis_nb.multihead.MultiHeadAttention` that
projects, rotates and mixes as its transformers module does, and leaves the
softmax to the kernel chosen by name
(``px.attention.ATTENTION_FUNCTIONS[attn_implementation]``). What makes a
variant is what it overrides or hands that kernel: a ``mask_mod`` (local and
global layers, ``config.layer_types``), ``sinks`` (gpt-oss), a ``score_mod``
(Gemma 2's soft-capping, Bloom's ALiBi), no rotation (SmolLM3's NoPE layers), a
gate on the output (Qwen3-Next), two maps subtracted (DiffLlama), or keys and
values from a cached latent (DeepSeek-V3's multi-head latent attention, weights
absorbed or not).

Each class is built from the module's own ``state_dict`` and its config,
``Cls.from_state_dict(state_dict, config, layer_idx)``, and called on the
hidden states and their positions.

Shape legend:
    B        batch
    T        query positions
    S        key/value positions (S = T without a cache)
    d_model  hidden size
    H        query heads
    H_kv     key/value heads
    d_head   size of one head
    r_q      MLA: q_lora_rank, the queries' bottleneck
    r        MLA: kv_lora_rank, the cached latent c_kv
    d_nope   MLA: qk_nope_head_dim, the query/key slice without RoPE
    d_rope   MLA: qk_rope_head_dim, the rotated slice (k_pe, shared)
    d_qk     MLA: d_nope + d_rope
    d_v      MLA: v_head_dim
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import (as_config_dict, as_float_array, check_choice,
                      check_even, check_number, check_positive_int,
                      check_same_dtype, check_state_shapes, is_index)
from .attention import ATTENTION_FUNCTIONS
from .kv_cache import Cache, LatentLayer
from .masks import causal_mask_mod, sliding_window_mask_mod
from .multihead import (MultiHeadAttention, linear, merge_heads_core,
                        split_heads_core)
from .norms import rms_norm_core
from .rope import (apply_rotary, compute_rope_parameters,
                   interleaved_to_half_permutation, yarn_get_mscale)

__all__ = ["GptOssAttention", "Gemma2Attention", "Gemma3Attention",
           "Qwen3NextAttention", "DiffLlamaAttention", "DeepseekV3Attention",
           "DeepseekV32Attention", "SmolLM3Attention",
           "alibi", "alibi_slopes", "soft_cap"]

#: the layer kinds of ``config.layer_types`` an attention layer can be
LAYER_TYPES = ("full_attention", "sliding_attention")


def soft_cap(cap: float):
    """Gemma 2's logit soft-capping as FlexAttention's ``score_mod``.

    ``cap``: ``attn_logit_softcapping`` > 0; scores stay in (-cap, cap)."""
    cap = check_number("cap", cap, above=0)

    def score_mod(score, b, h, q_idx, kv_idx):
        return cap * np.tanh(score / cap)
    return score_mod


def alibi_slopes(num_heads: int) -> np.ndarray:
    """Bloom's ALiBi slopes, one a head: ``2 ** (-8 h / H)``, h = 1 .. H.

    ``num_heads`` H; if it is not a power of two ``n``, the rest take every
    other slope of ``2 n`` heads (Bloom's ``_get_alibi_slopes``)."""
    H = check_positive_int("num_heads", num_heads)
    n = 2 ** int(math.log2(H))  # the power of two at or below H
    slopes = 2.0 ** (-8.0 * np.arange(1, n + 1) / n)
    extra = 2.0 ** (-8.0 * np.arange(1, 2 * (H - n), 2) / (2 * n))
    return np.concatenate([slopes, extra])  # extra is empty for H = n


def alibi(slopes):
    """ALiBi (Press et al., 2021; Bloom) as FlexAttention's ``score_mod``.

    ``slopes`` (H,), each > 0 (:func:`alibi_slopes`): a key ``q_idx - kv_idx``
    tokens back loses that many times its head's slope."""
    slopes = as_float_array("slopes", slopes, ndim=1, finite=True)
    if slopes.size == 0 or np.any(slopes <= 0):
        raise ValueError(f"slopes must be one number > 0 a head, got "
                         f"{slopes.tolist()}")

    def score_mod(score, b, h, q_idx, kv_idx):
        return score - slopes[h] * (q_idx - kv_idx)
    return score_mod


class _VariantAttention(MultiHeadAttention):
    """A variant built from its transformers config: what every variant
    shares beside :class:`~pyxis_nb.multihead.MultiHeadAttention`'s core."""

    #: the config keys the layer reads (all variants)
    _REQUIRED = ("hidden_size", "num_attention_heads", "num_key_value_heads")
    #: q_proj's width in heads' widths (Qwen3-Next: 2, with its gate)
    _Q_WIDTH = 1
    #: the entries of ``config.layer_types`` this class can be
    _KINDS = LAYER_TYPES
    q_norm = k_norm = None

    def __init__(self, config, layer_idx: int = 0,
                 attn_implementation: str = "flex_attention"):
        """``config``: the model's transformers config or its ``to_dict()``;
        ``layer_idx``: the layer's entry of ``config.layer_types`` and of the
        cache; ``attn_implementation``: the kernel."""
        c = self.config = as_config_dict(config, self._REQUIRED)
        H = c["num_attention_heads"]
        self._sizes(c["hidden_size"], H, c.get("num_key_value_heads", H),
                    c.get("head_dim") or (check_positive_int(
                        "hidden_size", c["hidden_size"]) // check_positive_int(
                        "num_attention_heads", H)),
                    layer_idx, attn_implementation)
        self.layer_type = self._layer_type(c.get("layer_types"), layer_idx)
        self.sliding_window = None
        if self.layer_type == "sliding_attention":
            self.sliding_window = check_positive_int("sliding_window",
                                                     c["sliding_window"])
            #: the kernel's mask_mod: a window of the causal triangle
            self.mask_mod = sliding_window_mask_mod(self.sliding_window)
        self.attention_bias = bool(c.get("attention_bias", False))
        self.rms_norm_eps = check_number("rms_norm_eps",
                                         c.get("rms_norm_eps", 1e-6),
                                         at_least=0)
        self.inv_freq, self.attention_scaling = compute_rope_parameters(
            self._rope_parameters(c), self.head_dim,
            max_position_embeddings=c.get("max_position_embeddings"))

    @property
    def num_heads(self) -> int:
        """transformers' older name of ``num_attention_heads``."""
        return self.num_attention_heads

    @classmethod
    def _layer_type(cls, layer_types, layer_idx) -> str:
        """``layer_types[layer_idx]``, an attention kind; full without
        ``layer_types``."""
        if layer_types is None:
            return "full_attention"
        if (not is_index(layer_idx, len(layer_types))
                or layer_types[layer_idx] not in cls._KINDS):
            raise ValueError(
                f"layer_idx must index an attention layer of "
                f"config.layer_types (0 .. {len(layer_types) - 1}, kinds "
                f"{sorted(set(layer_types))}), got {layer_idx!r}")
        return layer_types[layer_idx]

    def _rope_parameters(self, c: dict) -> dict:
        """This layer's ``rope_parameters`` (one layer type's if nested)."""
        rope = c.get("rope_parameters") or {
            "rope_type": "default", "rope_theta": c.get("rope_theta")}
        if self.layer_type in rope:  # Gemma 3: one entry a layer type
            rope = rope[self.layer_type]
        factor = c.get("partial_rotary_factor")
        if factor is not None and "partial_rotary_factor" not in rope:
            rope = {**rope, "partial_rotary_factor": factor}
        return rope

    # ---------------------------------------------------------- weights
    def state_shapes(self) -> dict:
        """The module's ``state_dict`` keys and shapes (torch's layout)."""
        D, d = self.hidden_size, self.head_dim
        H, H_kv = self.num_attention_heads, self.num_key_value_heads
        shapes = {"q_proj.weight": (self._Q_WIDTH * H * d, D),
                  "k_proj.weight": (H_kv * d, D),
                  "v_proj.weight": (H_kv * d, D),
                  "o_proj.weight": (D, H * d)}
        if self.attention_bias:
            shapes.update({name.replace("weight", "bias"): shape[:1]
                           for name, shape in shapes.items()})
        return shapes

    @classmethod
    def from_state_dict(cls, state_dict, config, layer_idx: int = 0,
                        attn_implementation: str = "flex_attention"):
        """The layer from transformers' module's own ``state_dict()``
        (every key of the module, no other, one float dtype) and the
        model's ``config``; the other parameters are the class's."""
        layer = cls(config, layer_idx, attn_implementation)
        check_state_shapes(
            "state_dict", {k: tuple(np.shape(v))
                           for k, v in state_dict.items()},
            layer.state_shapes(), against="config")
        weights = {k: as_float_array(k, np.asarray(v))
                   for k, v in state_dict.items()}
        check_same_dtype(**weights)
        layer.load(weights)
        return layer

    def load(self, weights: dict) -> None:
        """Keep the checked arrays of ``weights`` (a variant adds its
        own)."""
        for n in "qkvo":
            setattr(self, f"{n}_proj", weights[f"{n}_proj.weight"])
            setattr(self, f"{n}_proj_bias", weights.get(f"{n}_proj.bias"))

    def project(self, x):
        """(q, k, v) of (B, T, d_model): (B, H, T, d_head), (B, H_kv, T,
        d_head) twice, pre-RoPE."""
        return self.heads(x)[:3]

    def heads(self, x):
        d = self.head_dim
        q = linear(x, self.q_proj, self.q_proj_bias)  # (B, T, H*d_head)
        k = linear(x, self.k_proj, self.k_proj_bias)  # (B, T, H_kv*d_head)
        v = linear(x, self.v_proj, self.v_proj_bias)
        # (B, T, heads*d_head) -> (B, heads, T, d_head)
        q, k, v = (split_heads_core(y, d) for y in (q, k, v))
        if self.q_norm is not None:  # per head, before RoPE
            q = rms_norm_core(q, self.q_norm, self.rms_norm_eps)
            k = rms_norm_core(k, self.k_norm, self.rms_norm_eps)
        return q, k, v, None

    def __repr__(self) -> str:
        window = (f", sliding_window={self.sliding_window}"
                  if self.sliding_window else "")
        return (f"{type(self).__name__}(layer_idx={self.layer_idx}, "
                f"{self.layer_type}{window}, heads="
                f"{self.num_attention_heads}/{self.num_key_value_heads} of "
                f"{self.head_dim}, attn_implementation="
                f"{self.attn_implementation!r})")


def _state_shapes_with_norms(self) -> dict:
    """q/k/v/o and the two (d_head,) norms of q and k."""
    d = self.head_dim
    return _VariantAttention.state_shapes(self) | {"q_norm.weight": (d,),
                                                  "k_norm.weight": (d,)}


def _load_with_norms(self, weights: dict) -> None:
    """The projections and the norms' gains, ``1 + w`` as Gemma keeps
    them, from the checked ``weights``."""
    _VariantAttention.load(self, weights)
    self.q_norm = 1 + weights["q_norm.weight"]  # Gemma's (1 + w) gain
    self.k_norm = 1 + weights["k_norm.weight"]


class GptOssAttention(_VariantAttention):
    """gpt-oss's attention: biases, learned sinks, YaRN, local/global.

    One learned logit per head (``sinks``) joins every row's softmax and is
    then dropped, so a row's weights over the real keys sum to less than 1.

    See Also
    --------
    transformers.models.gpt_oss.modeling_gpt_oss.GptOssAttention
    """

    def state_shapes(self) -> dict:
        """The module's keys and shapes: q/k/v/o and ``sinks`` (H,)."""
        return super().state_shapes() | {"sinks": (self.num_heads,)}

    def load(self, weights: dict) -> None:
        """Keep the projections and the sinks.

        ``weights``: the state_dict, checked."""
        super().load(weights)
        self.sinks = weights["sinks"]  # (H,): the kernel's extra column


class Gemma2Attention(_VariantAttention):
    """Gemma 2's attention: soft-capped logits, local and global layers.

    Scores are scaled by ``query_pre_attn_scalar ** -0.5``, then capped by a
    ``score_mod``, :func:`soft_cap` of ``attn_logit_softcapping``.

    See Also
    --------
    transformers.models.gemma2.modeling_gemma2.Gemma2Attention
    """

    _REQUIRED = _VariantAttention._REQUIRED + ("query_pre_attn_scalar",)

    def __init__(self, config, layer_idx: int = 0,
                 attn_implementation: str = "flex_attention"):
        super().__init__(config, layer_idx, attn_implementation)
        c = self.config
        self.scaling = check_number("query_pre_attn_scalar",
                                    c["query_pre_attn_scalar"],
                                    above=0) ** -0.5
        cap = c.get("attn_logit_softcapping")
        self.score_mod = None if cap is None else soft_cap(cap)


class Gemma3Attention(Gemma2Attention):
    """Gemma 3's attention: q/k norms with ``1 + w``, two RoPE bases.

    Sliding layers rotate with ``rope_parameters["sliding_attention"]`` (or
    ``rope_local_base_freq``), full ones with
    ``rope_parameters["full_attention"]``.

    See Also
    --------
    transformers.models.gemma3.modeling_gemma3.Gemma3Attention
    """

    def _rope_parameters(self, c: dict) -> dict:
        """The layer type's entry; ``rope_local_base_freq`` for sliding
        layers of a config that has one base only."""
        local = c.get("rope_local_base_freq")
        rope = c.get("rope_parameters") or {}
        if (local is not None and self.layer_type == "sliding_attention"
                and self.layer_type not in rope):
            return {"rope_type": "default", "rope_theta": local}
        return super()._rope_parameters(c)

    state_shapes = _state_shapes_with_norms
    load = _load_with_norms

class Qwen3NextAttention(_VariantAttention):
    """Qwen3-Next's gated attention: a sigmoid gate on every output.

    ``q_proj`` is twice as wide: each head's ``2 * d_head`` numbers are its
    query and its gate; the kernel's output is multiplied by ``sigmoid(gate)``
    before ``o_proj``. Queries and keys go through RMSNorm with ``1 + w``.

    See Also
    --------
    transformers.models.qwen3_next.modeling_qwen3_next.Qwen3NextAttention
    """

    _Q_WIDTH = 2
    state_shapes = _state_shapes_with_norms
    load = _load_with_norms

    def heads(self, x):
        """Queries (normalised), keys (normalised), values, and the
        queries' gates (B, H, T, d_head), of ``x`` (B, T, d_model)."""
        B, T, _ = x.shape
        d = self.head_dim
        # (B, T, H*2*d_head) -> (B, T, H, 2*d_head) -> (B, H, T, 2*d_head)
        qg = linear(x, self.q_proj, self.q_proj_bias).reshape(
            B, T, -1, 2 * d).transpose(0, 2, 1, 3)
        q, gate = qg[..., :d], qg[..., d:]  # (B, H, T, d_head) each
        # (B, T, H_kv*d_head) -> (B, H_kv, T, d_head)
        k = split_heads_core(linear(x, self.k_proj, self.k_proj_bias), d)
        v = split_heads_core(linear(x, self.v_proj, self.v_proj_bias), d)
        return (rms_norm_core(q, self.q_norm, self.rms_norm_eps),
                rms_norm_core(k, self.k_norm, self.rms_norm_eps), v, gate)

    def combine(self, out, gate):
        """``out * sigmoid(gate)``, per head and channel, heads merged.

        ``out``, ``gate`` (B, H, T, d_head) -> (B, T, H*d_head)."""
        return merge_heads_core(out / (1 + np.exp(-gate)))


class SmolLM3Attention(_VariantAttention):
    """SmolLM3's attention: RoPE on most layers, none (NoPE) on the rest.

    ``config.no_rope_layers[layer_idx]`` is 1 where the layer rotates its
    queries and keys, 0 where it does not (every 4th layer in SmolLM3): a NoPE
    layer knows the order of its tokens only through the causal mask.

    See Also
    --------
    transformers.models.smollm3.modeling_smollm3.SmolLM3Attention
    """

    _REQUIRED = _VariantAttention._REQUIRED + ("no_rope_layers",)

    def __init__(self, config, layer_idx: int = 0,
                 attn_implementation: str = "flex_attention"):
        super().__init__(config, layer_idx, attn_implementation)
        flags = self.config["no_rope_layers"]
        if (not isinstance(flags, (list, tuple))
                or not is_index(layer_idx, len(flags))):
            raise ValueError(
                f"no_rope_layers must be a list with an entry for "
                f"layer_idx = {layer_idx!r} (1: RoPE, 0: NoPE), got "
                f"{flags!r}")
        #: HF's name: 1 (True) rotates, 0 is a NoPE layer
        self.use_rope = bool(check_choice(f"no_rope_layers[{layer_idx}]",
                                          flags[layer_idx], (0, 1)))

    def rotate(self, x, cos, sin, layout="half"):
        """RoPE on a RoPE layer; on a NoPE layer, ``x`` as it is.

        ``cos``, ``sin``, ``layout``: as :meth:`MultiHeadAttention.rotate`."""
        return super().rotate(x, cos, sin, layout) if self.use_rope else x

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", use_rope={self.use_rope})"


class DiffLlamaAttention(_VariantAttention):
    """Differential attention: two maps' outputs, the second times lambda
    subtracted.

    Head ``h`` of the first half and head ``h + H/2`` of the second are map 1
    and map 2 of a pair; each mixes both halves of the value heads side by side
    (one kernel call). Then ``out_1 - lambda * out_2``, an RMSNorm over the
    pair's ``2 * d_head`` channels, times ``1 - lambda_init``: ``lambda =
    exp(lq1 . lk1) - exp(lq2 . lk2) + lambda_init``, ``lambda_init = 0.8 - 0.6
    exp(-0.3 layer_idx)``.

    See Also
    --------
    transformers.models.diffllama.modeling_diffllama.DiffLlamaAttention
    """

    _LAMBDAS = ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")

    def __init__(self, config, layer_idx: int = 0,
                 attn_implementation: str = "flex_attention"):
        super().__init__(config, layer_idx, attn_implementation)
        if self.num_key_value_heads % 2:
            raise ValueError(
                f"num_key_value_heads = {self.num_key_value_heads} must be "
                "even: the value heads split into two halves")
        self.lambda_init = 0.8 - 0.6 * math.exp(-0.3 * layer_idx)

    def state_shapes(self) -> dict:
        """The module's keys and shapes: q/k/v/o and four (d_head,)
        vectors, ``lambda_q1`` ... ``lambda_k2``."""
        return super().state_shapes() | {
            name: (self.head_dim,) for name in self._LAMBDAS}

    def load(self, weights: dict) -> None:
        """Keep the projections and lambda.

        ``weights``: the state_dict, checked."""
        super().load(weights)
        lq1, lk1, lq2, lk2 = (weights[n] for n in self._LAMBDAS)
        lambda_full = np.exp(lq1 @ lk1) - np.exp(lq2 @ lk2) + self.lambda_init
        self.lambda_full = lq1.dtype.type(lambda_full)  # the weights' dtype

    def values(self, v):
        """Both halves of the value heads, side by side, for every head.

        ``v`` (B, H_kv, S, d_head) -> (B, H_kv, S, 2*d_head): head ``j`` holds
        ``[v[j mod H_kv/2], v[H_kv/2 + j mod H_kv/2]]``."""
        v1, v2 = np.split(v, 2, axis=1)  # (B, H_kv/2, S, d_head) each
        # each half repeated twice -> (B, H_kv, S, d_head), side by side
        return np.concatenate([np.concatenate([v1, v1], axis=1),
                               np.concatenate([v2, v2], axis=1)], axis=-1)

    def combine(self, out, extra):
        """``(1 - lambda_init) RMSNorm(out_1 - lambda out_2)``, merged.

        ``out`` (B, H, T, 2*d_head) -> (B, T, H*d_head); ``extra``: unused."""
        out1, out2 = np.split(out, 2, axis=1)  # (B, H/2, T, 2*d_head) each
        diff = out1 - self.lambda_full * out2
        ones = np.ones(diff.shape[-1], diff.dtype)  # no gain: a plain norm
        diff = (1 - self.lambda_init) * rms_norm_core(diff, ones,
                                                      self.rms_norm_eps)
        return merge_heads_core(diff)  # (B, T, H/2 * 2*d_head)


class DeepseekV3Attention(_VariantAttention):
    """Multi-head latent attention (DeepSeek-V2/V3).

    Queries pass a low-rank bottleneck (``q_a_proj``, ``q_a_layernorm``,
    ``q_b_proj``; one ``q_proj`` when ``q_lora_rank`` is None). Keys and values
    come from one latent a token, cached alone: ``c_kv`` (``kv_lora_rank``,
    normalised) and a key slice ``k_pe`` (``qk_rope_head_dim``) that every head
    shares; ``kv_b_proj`` expands ``c_kv`` to each head's ``k_nope`` and ``v``
    or, with ``absorb = True``, is folded into the queries and the output. RoPE
    turns only ``q_pe`` and ``k_pe`` ("decoupled RoPE").

    See Also
    --------
    transformers.models.deepseek_v3.modeling_deepseek_v3.DeepseekV3Attention
    """

    _REQUIRED = ("hidden_size", "num_attention_heads", "kv_lora_rank",
                 "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
    #: the eps of ``q_a_layernorm`` and ``kv_a_layernorm``: transformers
    #: builds them with DeepseekV3RMSNorm's default, not ``rms_norm_eps``
    NORM_EPS = 1e-6

    def __init__(self, config, layer_idx: int = 0,
                 attn_implementation: str = "flex_attention"):
        c = self.config = as_config_dict(config, self._REQUIRED)
        self.qk_rope_head_dim = check_even("qk_rope_head_dim",
                                           c["qk_rope_head_dim"])
        H = c["num_attention_heads"]  # keys and values expand to H heads
        self._sizes(c["hidden_size"], H, H, self.qk_rope_head_dim,
                    layer_idx, attn_implementation)  # head_dim: HF's
        rank = c.get("q_lora_rank")
        self.q_lora_rank = (None if rank is None
                            else check_positive_int("q_lora_rank", rank))
        self.kv_lora_rank = check_positive_int("kv_lora_rank",
                                               c["kv_lora_rank"])
        self.qk_nope_head_dim = check_positive_int("qk_nope_head_dim",
                                                   c["qk_nope_head_dim"])
        self.v_head_dim = check_positive_int("v_head_dim", c["v_head_dim"])
        self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
        self.layer_type = self._layer_type(c.get("layer_types"), layer_idx)
        self.sliding_window = None
        self.attention_bias = bool(c.get("attention_bias", False))
        self.rope_interleave = bool(c.get("rope_interleave", True))
        rope = self._rope_parameters(c)
        self.inv_freq, self.attention_scaling = compute_rope_parameters(
            rope, self.qk_rope_head_dim,
            max_position_embeddings=c.get("max_position_embeddings"))
        self.scaling = self.qk_head_dim ** -0.5
        if (rope.get("rope_type", "default") != "default"
                and rope.get("mscale_all_dim")):  # YaRN's, on both q and k
            mscale = yarn_get_mscale(rope["factor"], rope["mscale_all_dim"])
            self.scaling = self.scaling * mscale * mscale
        #: attend over the latent with the weights absorbed, instead of
        #: expanding every cached token's keys and values
        self.absorb = False

    # ---------------------------------------------------------- weights
    def state_shapes(self) -> dict:
        """The module's ``state_dict`` keys and shapes (torch's layout)."""
        D, H, r = self.hidden_size, self.num_heads, self.kv_lora_rank
        d_qk, d_v = self.qk_head_dim, self.v_head_dim
        bias = self.attention_bias
        if self.q_lora_rank is None:
            shapes = {"q_proj.weight": (H * d_qk, D)}
        else:
            r_q = self.q_lora_rank
            shapes = {"q_a_proj.weight": (r_q, D),
                      "q_a_layernorm.weight": (r_q,),
                      "q_b_proj.weight": (H * d_qk, r_q)}
            if bias:
                shapes["q_a_proj.bias"] = (r_q,)
        shapes |= {
            "kv_a_proj_with_mqa.weight": (r + self.qk_rope_head_dim, D),
            "kv_a_layernorm.weight": (r,),
            "kv_b_proj.weight": (H * (self.qk_nope_head_dim + d_v), r),
            "o_proj.weight": (D, H * d_v)}
        if bias:
            shapes |= {"kv_a_proj_with_mqa.bias":
                       (r + self.qk_rope_head_dim,), "o_proj.bias": (D,)}
        return shapes

    def load(self, weights: dict) -> None:
        """Keep the projections and the norms' gains.

        ``weights``: the state_dict, checked."""
        get = weights.get
        self.q_proj = get("q_proj.weight")
        self.q_a_proj, self.q_a_bias = (get("q_a_proj.weight"),
                                        get("q_a_proj.bias"))
        self.q_a_layernorm = get("q_a_layernorm.weight")
        self.q_b_proj = get("q_b_proj.weight")
        self.kv_a_proj_with_mqa = weights["kv_a_proj_with_mqa.weight"]
        self.kv_a_bias = get("kv_a_proj_with_mqa.bias")
        self.kv_a_layernorm = weights["kv_a_layernorm.weight"]
        self.kv_b_proj = weights["kv_b_proj.weight"]
        self.o_proj = weights["o_proj.weight"]
        self.o_proj_bias = get("o_proj.bias")
        H, r = self.num_heads, self.kv_lora_rank
        # (H*(d_nope + d_v), r) -> (H, d_nope + d_v, r): each head's rows
        w = self.kv_b_proj.reshape(H, -1, r)
        self.w_uk = w[:, :self.qk_nope_head_dim]  # (H, d_nope, r): keys
        self.w_uv = w[:, self.qk_nope_head_dim:]  # (H, d_v, r): values

    # ---------------------------------------------------------- pieces
    def rotate(self, x, cos, sin, layout="half"):
        """RoPE on a whole slice (``q_pe`` or ``k_pe``), interleaved with
        ``rope_interleave``.

        ``x`` (..., T, d_rope), ``cos``, ``sin``; ``layout`` is ignored. Pairs
        ``(2i, 2i + 1)`` come back first members, then second ones, as
        transformers' ``apply_rotary_pos_emb_interleave`` writes them."""
        if self.rope_interleave:  # (2i, 2i + 1) -> (i, i + d_rope/2)
            x = x[..., interleaved_to_half_permutation(x.shape[-1])]
        return apply_rotary(x, cos, sin)

    def queries(self, x, cos, sin):
        """Each head's query: the slice without RoPE, the rotated slice.

        ``x`` (B, T, d_model), ``cos``, ``sin`` (B, 1, T, d_rope) -> (B, H, T,
        d_nope), (B, H, T, d_rope)."""
        B, T, _ = x.shape
        if self.q_lora_rank is None:  # (B, T, d_model) -> (B, T, H*d_qk)
            q = linear(x, self.q_proj, None)
        else:  # (B, T, r_q) -> (B, T, H*d_qk)
            q = linear(self.q_resid(x), self.q_b_proj, None)
        # (B, T, H*d_qk) -> (B, T, H, d_qk) -> (B, H, T, d_qk)
        q = q.reshape(B, T, -1, self.qk_head_dim).transpose(0, 2, 1, 3)
        d = self.qk_nope_head_dim
        return q[..., :d], self.rotate(q[..., d:], cos, sin)

    def q_resid(self, x):
        """The queries' low-rank bottleneck: ``q_a_layernorm(q_a_proj(x))``.

        ``x`` (B, T, d_model) -> (B, T, q_lora_rank)."""
        # (B, T, d_model) @ (d_model, r_q) -> (B, T, r_q)
        return rms_norm_core(linear(x, self.q_a_proj, self.q_a_bias),
                             self.q_a_layernorm, self.NORM_EPS)

    def latent(self, x, cos, sin):
        """What the cache keeps of each token: ``c_kv`` and rotated ``k_pe``.

        ``x`` (B, T, d_model), ``cos``, ``sin`` (B, T, d_rope) -> (B, T, r),
        (B, T, d_rope)."""
        # (B, T, d_model) @ (d_model, r + d_rope) -> (B, T, r + d_rope)
        ckv = linear(x, self.kv_a_proj_with_mqa, self.kv_a_bias)
        r = self.kv_lora_rank
        c_kv = rms_norm_core(ckv[..., :r], self.kv_a_layernorm, self.NORM_EPS)
        return c_kv, self.rotate(ckv[..., r:], cos, sin)

    def attend_expanded(self, q_nope, q_pe, latent, mask_mod, **kernel):
        """Expand the latent to every head's keys and values; attend.

        ``q_nope`` (B, H, T, d_nope), ``q_pe`` (B, H, T, d_rope); ``latent``
        (B, S, r + d_rope), ``[c_kv, k_pe]`` a key; ``mask_mod`` (query ``i``:
        the ``i``-th new token) and ``kernel``: the kernel's. -> (B, H, T,
        d_v), weights or None."""
        B, S, _ = latent.shape
        H, d, r = self.num_heads, self.qk_nope_head_dim, self.kv_lora_rank
        c_kv, k_pe = latent[..., :r], latent[..., r:]  # (B, S, r | d_rope)
        # (B, S, r) @ (r, H*(d_nope + d_v)) -> (B, S, H, d_nope + d_v)
        kv = linear(c_kv, self.kv_b_proj, None).reshape(B, S, H, -1)
        kv = kv.transpose(0, 2, 1, 3)  # (B, H, S, d_nope + d_v)
        k_rot = np.broadcast_to(k_pe[:, None], (B, H, S, k_pe.shape[-1]))
        key = np.concatenate([kv[..., :d], k_rot], axis=-1)  # (B,H,S,d_qk)
        query = np.concatenate([q_nope, q_pe], axis=-1)  # (B, H, T, d_qk)
        attention = ATTENTION_FUNCTIONS[self.attn_implementation]  # by name
        return attention(query, key, kv[..., d:], scaling=self.scaling,
                         mask_mod=mask_mod, **kernel)

    def attend_absorbed(self, q_nope, q_pe, latent, mask_mod, **kernel):
        """Attend over the latent itself: ``kv_b_proj`` folded away.

        ``q_nope . (W_uk c) = (W_uk^T q_nope) . c``: the key half of
        ``kv_b_proj`` moves onto the query, so every head scores the shared
        ``[c_kv, k_pe]`` (one key/value head of ``r + d_rope``, values its
        first ``r``). ``sum_j p_j W_uv c_j = W_uv sum_j p_j c_j``: the value
        half moves after the sum. ``q_nope``, ``q_pe``, ``latent``,
        ``mask_mod``, ``kernel``: as :meth:`attend_expanded`."""
        # (B, H, T, d_nope) @ (H, d_nope, r) -> (B, H, T, r)
        q_latent = q_nope @ self.w_uk
        query = np.concatenate([q_latent, q_pe], axis=-1)  # (B,H,T,r+d_rope)
        # (B, S, r + d_rope) -> (B, 1, S, r + d_rope): one key head, and
        # its first r numbers the one value head (views, no copy)
        key = latent[:, None]
        attention = ATTENTION_FUNCTIONS[self.attn_implementation]  # by name
        out, weights = attention(query, key, key[..., :self.kv_lora_rank],
                                 scaling=self.scaling, mask_mod=mask_mod,
                                 **kernel)
        # (B, H, T, r) @ (H, r, d_v) -> (B, H, T, d_v)
        return out @ self.w_uv.transpose(0, 2, 1), weights

    # ---------------------------------------------------------- forward
    def attend(self, x, attn_mask, position_embeddings, *, cache=None,
               is_causal=False, head_mask=None, rope_layout="half",
               hook=None):
        """MLA's core: queries, the latent (it joins ``cache``'s
        :class:`~pyxis_nb.kv_cache.LatentLayer`), attention over it expanded
        or, with ``absorb``, over the latent itself; ``o_proj``. ``x``,
        ``attn_mask``, ``position_embeddings`` (required), ``is_causal``,
        ``head_mask``, ``hook``: as :meth:`MultiHeadAttention.attend`;
        ``rope_layout`` is ignored."""
        cos, sin = position_embeddings  # (B, T, d_rope) each
        q_nope, q_pe = self.queries(x, cos[:, None], sin[:, None])
        c_kv, k_pe = self.latent(x, cos, sin)  # (B, T, r), (B, T, d_rope)
        if cache is None:
            latent = np.concatenate([c_kv, k_pe], axis=-1)  # (B, T, r+d)
        else:  # (B, S, r + d_rope): the held tokens, then the new ones
            latent = self.check_cache(cache).update(c_kv, k_pe,
                                                    self.layer_idx)
        attend = self.attend_absorbed if self.absorb else self.attend_expanded
        out, weights = attend(q_nope, q_pe, latent,
                              self.key_mask_mod(x, cos, sin),
                              attn_mask=attn_mask, is_causal=is_causal,
                              head_mask=head_mask)  # (B, H, T, d_v)
        if hook is not None:
            out = hook(out)
        # (B, H, T, d_v) -> (B, T, H*d_v) @ (H*d_v, d_model)
        return linear(merge_heads_core(out), self.o_proj,
                      self.o_proj_bias), weights

    def check_cache(self, cache):
        """``cache``, if its entry ``layer_idx`` is a latent one of this
        layer's sizes (``DynamicCache(config)`` of an MLA config)."""
        layer = (cache.entry(self.layer_idx, grow=True)
                 if isinstance(cache, Cache) else None)
        if not isinstance(layer, LatentLayer) or (
                layer.kv_lora_rank, layer.qk_rope_head_dim) != (
                self.kv_lora_rank, self.qk_rope_head_dim):
            raise TypeError(
                f"cache must hold a LatentLayer of (kv_lora_rank, "
                f"qk_rope_head_dim) = ({self.kv_lora_rank}, "
                f"{self.qk_rope_head_dim}) at layer_idx {self.layer_idx} "
                f"(px.kv_cache.DynamicCache(config) of this config), got "
                f"{type(cache).__name__} with {type(layer).__name__}")
        return cache

    def key_mask_mod(self, x, cos, sin):
        """The kernel's ``mask_mod`` for this call: the causal triangle
        (DeepSeek-V3.2: its indexer's choice of keys); ``x``, ``cos``, ``sin``
        as :meth:`latent` takes them."""
        return self.mask_mod

    def __repr__(self) -> str:
        return (f"DeepseekV3Attention(layer_idx={self.layer_idx}, heads="
                f"{self.num_heads}, q_lora_rank={self.q_lora_rank}, "
                f"kv_lora_rank={self.kv_lora_rank}, qk "
                f"{self.qk_nope_head_dim}+{self.qk_rope_head_dim}, v "
                f"{self.v_head_dim}, attn_implementation="
                f"{self.attn_implementation!r})")


class DeepseekV32Attention(DeepseekV3Attention):
    """DeepSeek-V3.2: multi-head latent attention over the top keys only.

    DeepSeek Sparse Attention: an indexer scores every earlier key for each
    query, ``I[t, s] = sum_j w_j(x_t) relu(q_j(t) . k(s) / sqrt(d_index))``
    (``index_n_heads`` heads ``q_j`` from the queries' bottleneck, one key
    ``k`` a token after a LayerNorm, RoPE in the half layout on their first
    ``qk_rope_head_dim`` channels), and each query attends, as
    :class:`DeepseekV3Attention`, to its ``index_topk`` best-scored keys only
    (a ``mask_mod``). ``config`` must set ``q_lora_rank``.

    See Also
    --------
    transformers.models.deepseek_v32.modeling_deepseek_v32.DeepseekV32Attention
    """

    _REQUIRED = DeepseekV3Attention._REQUIRED + (
        "q_lora_rank", "index_n_heads", "index_head_dim", "index_topk")
    #: DeepseekV32Config names its layers "indexed_attention"
    _KINDS = LAYER_TYPES + ("indexed_attention",)
    #: the eps of the indexer's key LayerNorm (transformers': 1e-6)
    INDEX_NORM_EPS = 1e-6

    def __init__(self, config, layer_idx: int = 0,
                 attn_implementation: str = "flex_attention"):
        super().__init__(config, layer_idx, attn_implementation)
        c = self.config
        if self.q_lora_rank is None:
            raise ValueError("q_lora_rank must be set for DeepSeek-V3.2 "
                             "(its indexer reads the queries' bottleneck), "
                             "got None")
        self.index_n_heads = check_positive_int("index_n_heads",
                                                c["index_n_heads"])
        self.index_head_dim = check_positive_int("index_head_dim",
                                                 c["index_head_dim"])
        if self.index_head_dim < self.qk_rope_head_dim:
            raise ValueError(
                f"index_head_dim must be at least qk_rope_head_dim = "
                f"{self.qk_rope_head_dim} (RoPE turns that many of its "
                f"channels), got {self.index_head_dim}")
        self.index_topk = check_positive_int("index_topk", c["index_topk"])

    def state_shapes(self) -> dict:
        """The module's ``state_dict`` keys and shapes (torch's layout)."""
        n, d, D = self.index_n_heads, self.index_head_dim, self.hidden_size
        return super().state_shapes() | {
            "indexer.wq_b.weight": (n * d, self.q_lora_rank),
            "indexer.wk.weight": (d, D), "indexer.k_norm.weight": (d,),
            "indexer.k_norm.bias": (d,), "indexer.weights_proj.weight": (n, D)}

    def load(self, weights: dict) -> None:
        """Keep MLA's weights and the indexer's.

        ``weights``: the state_dict, checked."""
        super().load(weights)
        self.index_wq, self.index_wk = (weights["indexer.wq_b.weight"],
                                        weights["indexer.wk.weight"])
        self.index_norm = (weights["indexer.k_norm.weight"],
                           weights["indexer.k_norm.bias"])
        self.index_weights = weights["indexer.weights_proj.weight"]

    def index_scores(self, x, cos, sin):
        """The indexer's score of every key for every query.

        ``x`` (B, T, d_model), ``cos``, ``sin`` (B, T, d_rope) -> (B, T, S)."""
        B, T, _ = x.shape
        n, d = self.index_n_heads, self.index_head_dim
        r = self.qk_rope_head_dim
        # (B, T, r_q) @ (r_q, n*d) -> (B, T, n, d): n query heads a token
        q = linear(self.q_resid(x), self.index_wq, None)
        q = q.reshape(B, T, n, d)
        k = linear(x, self.index_wk, None)  # (B, T, d): one key a token
        mean = k.mean(-1, keepdims=True)
        var = ((k - mean) ** 2).mean(-1, keepdims=True)
        k = ((k - mean) / np.sqrt(var + self.INDEX_NORM_EPS)
             * self.index_norm[0] + self.index_norm[1])  # LayerNorm
        q = np.concatenate([apply_rotary(q[..., :r], cos[:, :, None],
                                         sin[:, :, None]), q[..., r:]], -1)
        k = np.concatenate([apply_rotary(k[..., :r], cos, sin), k[..., r:]],
                           -1)
        # (B, T, n, d) @ (B, 1, d, S) -> (B, T, n, S): every head's scores
        scores = np.maximum(q @ k[:, None].swapaxes(-1, -2) * d ** -0.5, 0)
        w = linear(x, self.index_weights, None) * n ** -0.5  # (B, T, n)
        # (B, T, 1, n) @ (B, T, n, S) -> (B, T, S): heads summed, weighted
        return (w[..., None, :] @ scores)[..., 0, :]

    def chosen(self, scores):
        """The keys each query attends to: its ``index_topk`` best-scored.

        Earlier keys only, all of them while it has fewer; ``scores`` (B, T,
        S)."""
        B, T, S = scores.shape
        seen = causal_mask_mod(0, 0, np.arange(T)[:, None], np.arange(S))
        scores = np.where(seen, scores, -np.inf)  # (B, T, S)
        k = min(self.index_topk, S)
        top = np.argpartition(-scores, k - 1, axis=-1)[..., :k]  # (B, T, k)
        keep = np.zeros(scores.shape, bool)
        np.put_along_axis(keep, top, True, axis=-1)
        return keep & seen

    def attend(self, x, attn_mask, position_embeddings, *, cache=None,
               **kernel):
        """:meth:`DeepseekV3Attention.attend`, without a cache.

        ``x``, ``attn_mask``, ``position_embeddings``, ``kernel``: as there;
        ``cache`` must be None."""
        if cache is not None:
            raise TypeError("cache: DeepseekV32Attention runs without a "
                            "cache here (its indexer keeps keys of its "
                            "own); pass cache=None")
        return super().attend(x, attn_mask, position_embeddings, **kernel)

    def key_mask_mod(self, x, cos, sin):
        """The indexer's choice as the kernel's ``mask_mod``: query ``t``
        may attend to key ``s`` where :meth:`chosen` keeps it; ``x``, ``cos``,
        ``sin`` as :meth:`index_scores` takes them."""
        keep = self.chosen(self.index_scores(x, cos, sin))  # (B, T, S)

        def top_k_mask_mod(b, h, q_idx, kv_idx):
            return keep[b, q_idx, kv_idx]
        return top_k_mask_mod

    def __repr__(self) -> str:
        return (super().__repr__()[:-1] + f", index_topk={self.index_topk}"
                f", index_n_heads={self.index_n_heads})").replace(
            "DeepseekV3Attention(", "DeepseekV32Attention(", 1)
