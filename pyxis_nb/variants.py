"""Attention layers of the models of 2024-26, each on the one kernel.

Every layer here projects, rotates and mixes as its transformers module
does, and leaves the softmax to the kernel chosen by name
(``px.attention.ATTENTION_FUNCTIONS[attn_implementation]``). What makes a
variant is what it hands that kernel:

* local and global layers: a ``mask_mod`` (``config.layer_types``, the
  causal triangle or a sliding window of ``config.sliding_window``);
* gpt-oss's learned sinks: ``sinks``, one logit per head;
* Gemma 2's logit soft-capping: a ``score_mod``, ``cap * tanh(s / cap)``;
* Bloom's ALiBi: a ``score_mod``, ``s - slope_h * (q_idx - kv_idx)``;
* SmolLM3's NoPE layers: no rotation at all (``config.no_rope_layers``);
* Qwen3-Next's gate: a sigmoid on the kernel's output, per head and
  channel;
* DiffLlama's differential attention: two maps' outputs, subtracted;
* DeepSeek-V3's multi-head latent attention: keys and values expanded
  from a cached latent, or (weights absorbed) the latent itself as one
  key/value head of ``kv_lora_rank + qk_rope_head_dim``.

Each class is built from the module's own ``state_dict`` and its config,
``Cls.from_state_dict(state_dict, config, layer_idx)``, and called on the
hidden states and their positions.

Shape legend:
    B        batch
    T        query positions
    S        key/value positions (S = T, but with a LatentCache)
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

from ._checks import (as_config_dict, as_float_array, check_bool,
                      check_choice, check_even, check_heads, check_keys,
                      check_number, check_positive_int, check_same_dtype,
                      check_shape, check_state_shapes, is_index)
from .attention import ATTENTION_FUNCTIONS
from .kv_cache import DynamicCache
from .masks import causal_mask_mod, sliding_window_mask_mod
from .multihead import (attention_inputs, check_attn_implementation,
                        check_output_attentions, merge_heads_core)
from .norms import rms_norm_core
from .rope import (apply_rotary, compute_rope_parameters,
                   interleaved_to_half_permutation, rotary_cos_sin_core,
                   yarn_get_mscale)

__all__ = ["GptOssAttention", "Gemma2Attention", "Gemma3Attention",
           "Qwen3NextAttention", "DiffLlamaAttention", "DeepseekV3Attention",
           "DeepseekV32Attention", "LatentCache", "SmolLM3Attention",
           "alibi", "alibi_slopes", "soft_cap"]

#: the layer kinds of ``config.layer_types`` an attention layer can be
LAYER_TYPES = ("full_attention", "sliding_attention")


def _config_dict(config, required: tuple) -> dict:
    """A transformers config, or its ``to_dict()``, as a dict."""
    config = as_config_dict(config)
    check_keys("config", [k for k in required if k in config], required,
               required)
    return config


def soft_cap(cap: float):
    """Gemma 2's logit soft-capping as FlexAttention's ``score_mod``.

    Parameters
    ----------
    cap : float
        ``attn_logit_softcapping``, > 0: the scores stay in (-cap, cap).

    Returns
    -------
    callable
        ``score_mod(score, b, h, q_idx, kv_idx) = cap * tanh(score / cap)``.
    """
    cap = check_number("cap", cap, above=0)

    def score_mod(score, b, h, q_idx, kv_idx):
        return cap * np.tanh(score / cap)
    return score_mod


def alibi_slopes(num_heads: int) -> np.ndarray:
    """Bloom's ALiBi slopes, one a head: ``2 ** (-8 h / H)``, h = 1 .. H.

    For H not a power of two, the first ``n`` (the power of two below H)
    follow the rule for ``n`` heads and the rest take every other slope of
    ``2 n`` heads, as Bloom's ``_get_alibi_slopes`` does.

    Parameters
    ----------
    num_heads : int
        H, the number of query heads, >= 1.

    Returns
    -------
    ndarray, shape (H,)
        The slopes, float64, from ``2 ** (-8 / n)`` down.
    """
    H = check_positive_int("num_heads", num_heads)
    n = 2 ** int(math.log2(H))  # the power of two at or below H
    slopes = 2.0 ** (-8.0 * np.arange(1, n + 1) / n)
    extra = 2.0 ** (-8.0 * np.arange(1, 2 * (H - n), 2) / (2 * n))
    return np.concatenate([slopes, extra])  # extra is empty for H = n


def alibi(slopes):
    """ALiBi (Press et al., 2021; Bloom) as FlexAttention's ``score_mod``.

    Parameters
    ----------
    slopes : array_like of float, shape (H,)
        One slope a head (:func:`alibi_slopes`), each > 0.

    Returns
    -------
    callable
        ``score_mod(score, b, h, q_idx, kv_idx) = score - slopes[h] *
        (q_idx - kv_idx)``: a key ``q_idx - kv_idx`` tokens back loses
        that many slopes.
    """
    slopes = as_float_array("slopes", slopes, ndim=1, finite=True)
    if slopes.size == 0 or np.any(slopes <= 0):
        raise ValueError(f"slopes must be one number > 0 a head, got "
                         f"{slopes.tolist()}")

    def score_mod(score, b, h, q_idx, kv_idx):
        return score - slopes[h] * (q_idx - kv_idx)
    return score_mod


def _linear(x, weight, bias):
    """torch's ``F.linear``: (B, T, in) @ (in, out) -> (B, T, out), + bias."""
    y = x @ weight.T
    return y if bias is None else y + bias


class _VariantAttention:
    """What every variant shares: q/k/v/o, RoPE, the mask, the kernel.

    Parameters
    ----------
    config : transformers config or dict
        The model's config (or its ``to_dict()``).
    layer_idx : int, default 0
        The layer's index: its entry of ``config.layer_types``.
    attn_implementation : {"flex_attention", "eager"}
        The kernel, by name; "eager" returns the weights too.
    """

    #: the config keys the layer reads (all variants)
    _REQUIRED = ("hidden_size", "num_attention_heads", "num_key_value_heads")
    #: q_proj's width in heads' widths (Qwen3-Next: 2, with its gate)
    _Q_WIDTH = 1

    def __init__(self, config, layer_idx: int = 0,
                 attn_implementation: str = "flex_attention"):
        c = _config_dict(config, self._REQUIRED)
        self.config = c
        self.attn_implementation = check_attn_implementation(
            attn_implementation)
        self.hidden_size = check_positive_int("hidden_size",
                                              c["hidden_size"])
        self.num_heads, self.num_key_value_heads = check_heads(
            c["num_attention_heads"], c["num_key_value_heads"])
        self.head_dim = check_positive_int("head_dim", c.get("head_dim") or (
            self.hidden_size // self.num_heads))
        self.layer_idx = layer_idx
        self.layer_type = self._layer_type(c.get("layer_types"), layer_idx)
        self.sliding_window = None
        if self.layer_type == "sliding_attention":
            self.sliding_window = check_positive_int("sliding_window",
                                                     c["sliding_window"])
        #: the kernel's mask_mod: the causal triangle, or a window of it
        self.mask_mod = (causal_mask_mod if self.sliding_window is None
                         else sliding_window_mask_mod(self.sliding_window))
        self.attention_bias = bool(c.get("attention_bias", False))
        self.scaling = self.head_dim ** -0.5
        self.inv_freq, self.attention_scaling = compute_rope_parameters(
            self._rope_parameters(c), self.head_dim,
            max_position_embeddings=c.get("max_position_embeddings"))
        self.score_mod, self.sinks = None, None

    #: the entries of ``config.layer_types`` this class can be
    _KINDS = LAYER_TYPES

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
        """The module's ``state_dict`` keys and shapes (torch's layout).

        Returns
        -------
        dict of str to tuple
        """
        D, d = self.hidden_size, self.head_dim
        H, H_kv = self.num_heads, self.num_key_value_heads
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
        """The layer from transformers' module's own ``state_dict()``.

        Parameters
        ----------
        state_dict : mapping of str to ndarray or torch.Tensor
            Every key of the module, no other, one float dtype.
        config : transformers config or dict
            The model's config, or its ``to_dict()``.
        layer_idx : int, default 0
            The layer's index (its entry of ``config.layer_types``).
        attn_implementation : {"flex_attention", "eager"}
            The kernel, by name; "eager" can return the weights.

        Returns
        -------
        the layer
        """
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
        """Keep the checked arrays (a variant adds its own).

        Parameters
        ----------
        weights : dict of str to ndarray
            The state_dict, checked.
        """
        self.q_proj, self.k_proj = weights["q_proj.weight"], \
            weights["k_proj.weight"]
        self.v_proj, self.o_proj = weights["v_proj.weight"], \
            weights["o_proj.weight"]
        self.q_bias, self.k_bias, self.v_bias, self.o_bias = (
            weights.get(f"{n}_proj.bias") for n in "qkvo")

    # ---------------------------------------------------------- forward
    def __call__(self, hidden_states, position_ids=None,
                 output_attentions: bool = False, past_key_values=None):
        """The module's output (and the weights with ``output_attentions``).

        Parameters
        ----------
        hidden_states : ndarray, shape (B, T, d_model)
            The layer's input, of the weights' dtype.
        position_ids : array_like of int, shape (T,) or (B, T), optional
            Each token's position (RoPE); by default ``S_seen .. S_seen +
            T - 1``, after the tokens the cache has seen (0 .. T-1 without
            one). The mask is causal over the tokens whatever the positions.
        output_attentions : bool, default False
            Also return the (B, H, T, S) weights; needs
            ``attn_implementation="eager"``.
        past_key_values : DynamicCache, optional
            The model's cache (:class:`pyxis_nb.kv_cache.DynamicCache`):
            the new keys and values join this layer's entry, and the new
            tokens attend to what it holds and to each other.

        Returns
        -------
        output : ndarray, shape (B, T, d_model)
        weights : ndarray, shape (B, H, T, S), with ``output_attentions``
        """
        x = as_float_array("hidden_states", hidden_states)
        check_shape("hidden_states", x, x.ndim == 3 and x.shape[1] >= 1
                    and x.shape[2] == self.hidden_size,
                    f"(B, T, d_model) with T >= 1, d_model = "
                    f"{self.hidden_size}")
        check_same_dtype(**{"o_proj.weight": self.o_proj,
                            "hidden_states": x})
        B, T, _ = x.shape
        output_attentions = check_output_attentions(
            output_attentions, self.attn_implementation)
        cache = past_key_values
        if cache is not None and not isinstance(cache, DynamicCache):
            raise TypeError(f"past_key_values must be a DynamicCache, got "
                            f"{type(cache).__name__}")
        if position_ids is None:
            seen = 0 if cache is None else cache.get_seq_length(
                self.layer_idx)
            position_ids = seen + np.arange(T)
        _, pos = attention_inputs(None, position_ids, B, T, 0)  # (B, T)
        out, weights = self.forward_core(x, pos, cache)
        return (out, weights) if output_attentions else out

    def forward_core(self, x, position_ids, cache=None):
        """Unchecked core of :meth:`__call__`: out and weights (or None).

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            The layer's input.
        position_ids : ndarray of int, shape (B, T)
            Each token's position.
        cache : DynamicCache or None
            The model's cache; this layer's entry grows by T tokens.

        Returns
        -------
        out : ndarray, shape (B, T, d_model)
        weights : ndarray, shape (B, H, T, S), or None
        """
        q, k, v, extra = self.project(x)  # (B, H | H_kv, T, d_head)
        # (B, T, d_rot) each, d_rot = 2 * len(inv_freq) -> (B, 1, T, d_rot)
        cos, sin = rotary_cos_sin_core(position_ids, self.inv_freq,
                                       self.attention_scaling, x.dtype)
        q = self.rotate(q, cos[:, None], sin[:, None])
        k = self.rotate(k, cos[:, None], sin[:, None])
        mask_mod = self.mask_mod
        if cache is not None:  # the held tokens come first: shift the mask
            held = (cache.layers[self.layer_idx].held
                    if self.layer_idx < len(cache.layers) else 0)
            k, v = cache.update(k, v, self.layer_idx)  # (B, H_kv, S, d)
            mask_mod = _shifted(mask_mod, held)
        attention = ATTENTION_FUNCTIONS[self.attn_implementation]  # by name
        out, weights = attention(q, k, self.values(v), None,
                                 scaling=self.scaling,
                                 score_mod=self.score_mod,
                                 mask_mod=mask_mod, sinks=self.sinks)
        out = self.combine(out, extra)  # (B, H', T, d') -> (B, T, H*d_head)
        # (B, T, H*d_head) @ (H*d_head, d_model) -> (B, T, d_model)
        return _linear(out, self.o_proj, self.o_bias), weights

    def project(self, x):
        """Queries, keys and values, split into heads.

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            The layer's input.

        Returns
        -------
        q : ndarray, shape (B, H, T, d_head)
        k, v : ndarray, shape (B, H_kv, T, d_head)
        extra : None
            What a variant carries to :meth:`combine` (Qwen3-Next: its
            gate).
        """
        B, T, _ = x.shape
        q = _linear(x, self.q_proj, self.q_bias)  # (B, T, H*d_head)
        k = _linear(x, self.k_proj, self.k_bias)  # (B, T, H_kv*d_head)
        v = _linear(x, self.v_proj, self.v_bias)
        # (B, T, heads*d_head) -> (B, T, heads, d_head) -> (B, heads, T, d)
        q, k, v = (y.reshape(B, T, -1, self.head_dim).transpose(0, 2, 1, 3)
                   for y in (q, k, v))
        return q, k, v, None

    def rotate(self, x, cos, sin):
        """RoPE on the first ``d_rot`` channels of each head (all of them
        unless ``partial_rotary_factor``), half layout.

        Parameters
        ----------
        x : ndarray, shape (B, H | H_kv, T, d_head)
            Queries or keys.
        cos, sin : ndarray, shape (B, 1, T, d_rot)
            The tables.

        Returns
        -------
        ndarray, shape of ``x``
        """
        d_rot = cos.shape[-1]
        if d_rot == x.shape[-1]:
            return apply_rotary(x, cos, sin)
        # (B, H, T, d_rot) rotated, (B, H, T, d_head - d_rot) as they are
        return np.concatenate([apply_rotary(x[..., :d_rot], cos, sin),
                               x[..., d_rot:]], axis=-1)

    def values(self, v):
        """The values the kernel mixes (DiffLlama: both halves side by side).

        Parameters
        ----------
        v : ndarray, shape (B, H_kv, S, d_head)
            The values.

        Returns
        -------
        ndarray, shape (B, H_kv, S, d_head)
        """
        return v

    def combine(self, out, extra):
        """The kernel's output, as ``o_proj`` reads it.

        Parameters
        ----------
        out : ndarray, shape (B, H, T, d_head)
            Each head's output.
        extra : object
            What :meth:`project` returned beside q, k, v.

        Returns
        -------
        ndarray, shape (B, T, H*d_head)
        """
        return merge_heads_core(out)

    def __repr__(self) -> str:
        window = (f", sliding_window={self.sliding_window}"
                  if self.sliding_window else "")
        return (f"{type(self).__name__}(layer_idx={self.layer_idx}, "
                f"{self.layer_type}{window}, heads={self.num_heads}/"
                f"{self.num_key_value_heads} of {self.head_dim}, "
                f"attn_implementation={self.attn_implementation!r})")


class GptOssAttention(_VariantAttention):
    """gpt-oss's attention: biases, learned sinks, YaRN, local/global.

    One learned logit per head (``sinks``) joins every row's softmax and is
    then dropped, so a row's weights over the real keys sum to less than
    1. Sliding layers see ``config.sliding_window`` keys; RoPE as
    ``config.rope_parameters`` says (YaRN, factor 32, in gpt-oss).

    Parameters
    ----------
    config : GptOssConfig or dict
        A transformers config or its ``to_dict()``.
    layer_idx : int, default 0
        Its entry of ``config.layer_types`` picks the mask.
    attn_implementation : {"flex_attention", "eager"}
        The kernel, by name.

    See Also
    --------
    transformers.models.gpt_oss.modeling_gpt_oss.GptOssAttention
    """

    def state_shapes(self) -> dict:
        """The module's keys and shapes: q/k/v/o and ``sinks`` (H,).

        Returns
        -------
        dict of str to tuple
        """
        return super().state_shapes() | {"sinks": (self.num_heads,)}

    def load(self, weights: dict) -> None:
        """Keep the projections and the sinks.

        Parameters
        ----------
        weights : dict of str to ndarray
            The state_dict, checked.
        """
        super().load(weights)
        self.sinks = weights["sinks"]  # (H,): the kernel's extra column


class Gemma2Attention(_VariantAttention):
    """Gemma 2's attention: soft-capped logits, local and global layers.

    The scores are scaled by ``query_pre_attn_scalar ** -0.5`` and capped,
    ``cap * tanh(score / cap)`` with ``cap = attn_logit_softcapping``,
    before the mask: a ``score_mod`` of the kernel.

    Parameters
    ----------
    config : Gemma2Config or dict
        A transformers config or its ``to_dict()``.
    layer_idx : int, default 0
        Its entry of ``config.layer_types`` picks the mask.
    attn_implementation : {"flex_attention", "eager"}
        The kernel, by name.

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

    Sliding layers rotate with ``rope_parameters["sliding_attention"]``
    (base 10,000; older configs: ``rope_local_base_freq``), full layers
    with ``rope_parameters["full_attention"]`` (1,000,000). No soft-cap
    unless the config sets one.

    Parameters
    ----------
    config : Gemma3TextConfig or dict
        A transformers config or its ``to_dict()``.
    layer_idx : int, default 0
        Its entry of ``config.layer_types`` picks the mask and the base.
    attn_implementation : {"flex_attention", "eager"}
        The kernel, by name.

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

    def state_shapes(self) -> dict:
        """The module's keys and shapes: q/k/v/o and the two norms.

        Returns
        -------
        dict of str to tuple
        """
        d = self.head_dim
        return super().state_shapes() | {"q_norm.weight": (d,),
                                         "k_norm.weight": (d,)}

    def load(self, weights: dict) -> None:
        """Keep the projections and the norms' ``1 + w``.

        Parameters
        ----------
        weights : dict of str to ndarray
            The state_dict, checked.
        """
        super().load(weights)
        self.q_norm = 1 + weights["q_norm.weight"]  # Gemma's (1 + w) gain
        self.k_norm = 1 + weights["k_norm.weight"]
        self.eps = check_number("rms_norm_eps",
                                self.config.get("rms_norm_eps", 1e-6),
                                at_least=0)

    def project(self, x):
        """Queries and keys normalised per head before RoPE.

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            The layer's input.

        Returns
        -------
        q : ndarray, shape (B, H, T, d_head)
        k, v : ndarray, shape (B, H_kv, T, d_head)
        extra : None
        """
        q, k, v, extra = super().project(x)
        return (rms_norm_core(q, self.q_norm, self.eps),
                rms_norm_core(k, self.k_norm, self.eps), v, extra)


class Qwen3NextAttention(Gemma3Attention):
    """Qwen3-Next's gated attention: a sigmoid gate on every output.

    ``q_proj`` is twice as wide: each head's ``2 * d_head`` numbers are its
    query and its gate. The kernel's output is multiplied by
    ``sigmoid(gate)`` per head and channel before ``o_proj``. Queries and
    keys go through RMSNorm with ``1 + w``; RoPE turns the first
    ``partial_rotary_factor`` of each head (a quarter in Qwen3-Next).

    Parameters
    ----------
    config : Qwen3NextConfig or dict
        A transformers config or its ``to_dict()``.
    layer_idx : int, default 0
        Must name a "full_attention" entry of ``config.layer_types``.
    attn_implementation : {"flex_attention", "eager"}
        The kernel, by name.

    See Also
    --------
    transformers.models.qwen3_next.modeling_qwen3_next.Qwen3NextAttention
    """

    _REQUIRED = _VariantAttention._REQUIRED
    _Q_WIDTH = 2

    def __init__(self, config, layer_idx: int = 0,
                 attn_implementation: str = "flex_attention"):
        _VariantAttention.__init__(self, config, layer_idx,
                                   attn_implementation)

    def project(self, x):
        """Queries (normalised), their gates, keys (normalised), values.

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            The layer's input.

        Returns
        -------
        q : ndarray, shape (B, H, T, d_head)
        k, v : ndarray, shape (B, H_kv, T, d_head)
        gate : ndarray, shape (B, H, T, d_head)
        """
        B, T, _ = x.shape
        d = self.head_dim
        # (B, T, H*2*d_head) -> (B, T, H, 2*d_head) -> (B, H, T, 2*d_head)
        qg = _linear(x, self.q_proj, self.q_bias).reshape(
            B, T, -1, 2 * d).transpose(0, 2, 1, 3)
        q, gate = qg[..., :d], qg[..., d:]  # (B, H, T, d_head) each
        k = _linear(x, self.k_proj, self.k_bias)  # (B, T, H_kv*d_head)
        v = _linear(x, self.v_proj, self.v_bias)
        # (B, T, H_kv*d_head) -> (B, H_kv, T, d_head)
        k, v = (y.reshape(B, T, -1, d).transpose(0, 2, 1, 3) for y in (k, v))
        return (rms_norm_core(q, self.q_norm, self.eps),
                rms_norm_core(k, self.k_norm, self.eps), v, gate)

    def combine(self, out, gate):
        """``out * sigmoid(gate)``, per head and channel, heads merged.

        Parameters
        ----------
        out : ndarray, shape (B, H, T, d_head)
            Each head's output.
        gate : ndarray, shape (B, H, T, d_head)
            The gate's logits.

        Returns
        -------
        ndarray, shape (B, T, H*d_head)
        """
        return merge_heads_core(out / (1 + np.exp(-gate)))


class SmolLM3Attention(_VariantAttention):
    """SmolLM3's attention: RoPE on most layers, none (NoPE) on the rest.

    ``config.no_rope_layers[layer_idx]`` is 1 where the layer rotates its
    queries and keys and 0 where it does not; SmolLM3's config leaves every
    ``no_rope_layer_interval``-th layer (4th) without. A NoPE layer knows
    the order of its tokens only through the causal mask. Otherwise a
    Llama layer: q/k/v/o, GQA, and the mask of ``config.layer_types``.

    Parameters
    ----------
    config : SmolLM3Config or dict
        A transformers config or its ``to_dict()``.
    layer_idx : int, default 0
        Its entry of ``no_rope_layers`` says RoPE or not, its entry of
        ``config.layer_types`` the mask.
    attn_implementation : {"flex_attention", "eager"}
        The kernel, by name.

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

    def rotate(self, x, cos, sin):
        """RoPE on a RoPE layer; on a NoPE layer, ``x`` as it is.

        Parameters
        ----------
        x : ndarray, shape (B, H | H_kv, T, d_head)
            Queries or keys.
        cos, sin : ndarray, shape (B, 1, T, d_head)
            The tables (unused on a NoPE layer).

        Returns
        -------
        ndarray, shape of ``x``
        """
        return super().rotate(x, cos, sin) if self.use_rope else x

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", use_rope={self.use_rope})"


class DiffLlamaAttention(_VariantAttention):
    """Differential attention: two maps' outputs, the second times lambda
    subtracted.

    Head ``h`` of the first half and head ``h + H/2`` of the second form a
    pair: map 1 and map 2. Each map mixes both halves of the value heads
    side by side (``2 * d_head`` numbers a head: one kernel call, values
    concatenated). Then ``out_1 - lambda * out_2``, an RMSNorm over the
    pair's ``2 * d_head`` channels, times ``1 - lambda_init``, with
    ``lambda = exp(lq1 . lk1) - exp(lq2 . lk2) + lambda_init`` and
    ``lambda_init = 0.8 - 0.6 exp(-0.3 layer_idx)``.

    Parameters
    ----------
    config : DiffLlamaConfig or dict
        A transformers config or its ``to_dict()``.
    layer_idx : int, default 0
        The layer's index (it sets ``lambda_init``).
    attn_implementation : {"flex_attention", "eager"}
        The kernel, by name.

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
        self.eps = check_number("rms_norm_eps",
                                self.config.get("rms_norm_eps", 1e-6),
                                at_least=0)

    def state_shapes(self) -> dict:
        """The module's keys and shapes: q/k/v/o and four (d_head,)
        vectors.

        Returns
        -------
        dict of str to tuple
        """
        return super().state_shapes() | {
            name: (self.head_dim,) for name in self._LAMBDAS}

    def load(self, weights: dict) -> None:
        """Keep the projections and lambda.

        Parameters
        ----------
        weights : dict of str to ndarray
            The state_dict, checked.
        """
        super().load(weights)
        lq1, lk1, lq2, lk2 = (weights[n] for n in self._LAMBDAS)
        lambda_full = np.exp(lq1 @ lk1) - np.exp(lq2 @ lk2) + self.lambda_init
        self.lambda_full = lq1.dtype.type(lambda_full)  # the weights' dtype

    def values(self, v):
        """Both halves of the value heads, side by side, for every head.

        Parameters
        ----------
        v : ndarray, shape (B, H_kv, S, d_head)
            The values.

        Returns
        -------
        ndarray, shape (B, H_kv, S, 2*d_head)
            Head ``j`` holds ``[v[j mod H_kv/2], v[H_kv/2 + j mod H_kv/2]]``.
        """
        v1, v2 = np.split(v, 2, axis=1)  # (B, H_kv/2, S, d_head) each
        # each half repeated twice -> (B, H_kv, S, d_head), side by side
        return np.concatenate([np.concatenate([v1, v1], axis=1),
                               np.concatenate([v2, v2], axis=1)], axis=-1)

    def combine(self, out, extra):
        """``(1 - lambda_init) RMSNorm(out_1 - lambda out_2)``, merged.

        Parameters
        ----------
        out : ndarray, shape (B, H, T, 2*d_head)
            Each head's output over both value halves.
        extra : None
            Unused.

        Returns
        -------
        ndarray, shape (B, T, H*d_head)
        """
        out1, out2 = np.split(out, 2, axis=1)  # (B, H/2, T, 2*d_head) each
        diff = out1 - self.lambda_full * out2
        ones = np.ones(diff.shape[-1], diff.dtype)  # no gain: a plain norm
        diff = (1 - self.lambda_init) * rms_norm_core(diff, ones, self.eps)
        return merge_heads_core(diff)  # (B, T, H/2 * 2*d_head)


# ------------------------------------------- multi-head latent attention
class LatentCache:
    """MLA's cache: the latent ``c_kv`` and the rotated ``k_pe`` a token.

    ``kv_lora_rank + qk_rope_head_dim`` numbers a token, whatever the
    heads: no key or value of any head is kept. ``c_kv`` is kept after
    ``kv_a_layernorm``, ``k_pe`` after RoPE, side by side in one row as
    ``kv_a_proj_with_mqa`` lays them out, so the absorbed decode step
    reads the rows as its keys (and their ``c_kv`` part as its values)
    without a copy. The buffer doubles when full.

    Parameters
    ----------
    kv_lora_rank : int
        ``r``, the latent's width, >= 1.
    qk_rope_head_dim : int
        ``d_rope``, the rotated key slice's width, >= 1.
    """

    def __init__(self, kv_lora_rank: int, qk_rope_head_dim: int):
        self.kv_lora_rank = check_positive_int("kv_lora_rank", kv_lora_rank)
        self.qk_rope_head_dim = check_positive_int("qk_rope_head_dim",
                                                   qk_rope_head_dim)
        self.buffer = None  # (B, capacity, r + d_rope)
        self.seq_len = 0

    @property
    def latent(self):
        """ndarray, shape (B, S, r + d_rope): ``[c_kv, k_pe]`` a token."""
        return None if self.buffer is None else self.buffer[:, :self.seq_len]

    @property
    def c_kv(self):
        """ndarray, shape (B, S, r): the normalised latents."""
        latent = self.latent
        return None if latent is None else latent[..., :self.kv_lora_rank]

    @property
    def k_pe(self):
        """ndarray, shape (B, S, d_rope): the rotated key slices."""
        latent = self.latent
        return None if latent is None else latent[..., self.kv_lora_rank:]

    @property
    def nbytes(self) -> int:
        """Bytes of the tokens held: ``B * S * (r + d_rope) * itemsize``."""
        return 0 if self.buffer is None else self.latent.nbytes

    def update(self, c_kv, k_pe):
        """Append the new tokens' latent and rotated key; return all.

        Parameters
        ----------
        c_kv : ndarray, shape (B, T, r)
            The new tokens' normalised latent.
        k_pe : ndarray, shape (B, T, d_rope)
            Their rotated key slice.

        Returns
        -------
        ndarray, shape (B, S, r + d_rope)
            Every token held, the new ones last (a view of the buffer).
        """
        B, T, r = c_kv.shape
        S = self.seq_len + T
        if self.buffer is None or S > self.buffer.shape[1]:  # grow: x2
            grown = np.empty((B, max(S, 2 * self.seq_len),
                              r + k_pe.shape[-1]), c_kv.dtype)
            grown[:, :self.seq_len] = self.latent
            self.buffer = grown
        self.buffer[:, self.seq_len:S, :r] = c_kv
        self.buffer[:, self.seq_len:S, r:] = k_pe
        self.seq_len = S
        return self.latent

    def __repr__(self) -> str:
        return (f"LatentCache(seq_len={self.seq_len}, kv_lora_rank="
                f"{self.kv_lora_rank}, qk_rope_head_dim="
                f"{self.qk_rope_head_dim}, nbytes={self.nbytes})")


class DeepseekV3Attention(_VariantAttention):
    """Multi-head latent attention (DeepSeek-V2/V3).

    Queries pass a low-rank bottleneck (``q_a_proj``, ``q_a_layernorm``,
    ``q_b_proj``; one ``q_proj`` when ``q_lora_rank`` is None). Keys and
    values come from one latent a token: ``kv_a_proj_with_mqa`` gives
    ``c_kv`` (``kv_lora_rank`` numbers, then ``kv_a_layernorm``) and a
    key slice ``k_pe`` (``qk_rope_head_dim``) that every head shares;
    ``kv_b_proj`` expands ``c_kv`` to each head's ``k_nope`` and ``v``.
    RoPE turns only ``q_pe`` and ``k_pe`` ("decoupled RoPE"), in the
    interleaved layout with ``rope_interleave`` (pairs ``(2i, 2i + 1)``,
    written back as transformers does: first members, then second ones).
    Scale: ``(qk_nope_head_dim + qk_rope_head_dim) ** -0.5``, times YaRN's
    ``mscale ** 2`` where ``rope_parameters`` sets ``mscale_all_dim``.

    :meth:`decode` runs new tokens against a :class:`LatentCache`,
    expanded or with the weights absorbed (``absorb=True``): then the
    kernel attends over the latent itself, one key/value head of
    ``kv_lora_rank + qk_rope_head_dim``.

    Parameters
    ----------
    config : DeepseekV3Config or dict
        A transformers config or its ``to_dict()``.
    layer_idx : int, default 0
        The layer's index.
    attn_implementation : {"flex_attention", "eager"}
        The kernel, by name.

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
        c = _config_dict(config, self._REQUIRED)
        self.config = c
        self.attn_implementation = check_attn_implementation(
            attn_implementation)
        self.hidden_size = check_positive_int("hidden_size",
                                              c["hidden_size"])
        self.num_heads = check_positive_int("num_attention_heads",
                                            c["num_attention_heads"])
        # the expanded keys and values: one of each a query head
        self.num_key_value_heads = self.num_heads
        rank = c.get("q_lora_rank")
        self.q_lora_rank = (None if rank is None
                            else check_positive_int("q_lora_rank", rank))
        self.kv_lora_rank = check_positive_int("kv_lora_rank",
                                               c["kv_lora_rank"])
        self.qk_nope_head_dim = check_positive_int("qk_nope_head_dim",
                                                   c["qk_nope_head_dim"])
        self.qk_rope_head_dim = check_even("qk_rope_head_dim",
                                           c["qk_rope_head_dim"])
        self.v_head_dim = check_positive_int("v_head_dim", c["v_head_dim"])
        self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
        self.head_dim = self.qk_rope_head_dim  # as DeepseekV3Config sets it
        self.layer_idx = layer_idx
        self.layer_type = self._layer_type(c.get("layer_types"), layer_idx)
        self.sliding_window, self.mask_mod = None, causal_mask_mod
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
        self.score_mod, self.sinks = None, None

    # ---------------------------------------------------------- weights
    def state_shapes(self) -> dict:
        """The module's ``state_dict`` keys and shapes (torch's layout).

        Returns
        -------
        dict of str to tuple
        """
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

        Parameters
        ----------
        weights : dict of str to ndarray
            The state_dict, checked.
        """
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
        self.o_proj, self.o_bias = weights["o_proj.weight"], get("o_proj.bias")
        H, r = self.num_heads, self.kv_lora_rank
        # (H*(d_nope + d_v), r) -> (H, d_nope + d_v, r): each head's rows
        w = self.kv_b_proj.reshape(H, -1, r)
        self.w_uk = w[:, :self.qk_nope_head_dim]  # (H, d_nope, r): keys
        self.w_uv = w[:, self.qk_nope_head_dim:]  # (H, d_v, r): values

    # ---------------------------------------------------------- pieces
    def rotate(self, x, cos, sin):
        """RoPE on a whole slice (``q_pe`` or ``k_pe``), interleaved with
        ``rope_interleave``.

        Interleaved pairs ``(2i, 2i + 1)`` come back with the rotated first
        members, then the second ones, as transformers'
        ``apply_rotary_pos_emb_interleave`` writes them; queries and keys
        alike, so every dot product is the interleaved layout's.

        Parameters
        ----------
        x : ndarray, shape (..., T, d_rope)
            The slice to turn.
        cos, sin : ndarray, broadcastable to (..., T, d_rope)
            The tables.

        Returns
        -------
        ndarray, shape of ``x``
        """
        if self.rope_interleave:  # (2i, 2i + 1) -> (i, i + d_rope/2)
            x = x[..., interleaved_to_half_permutation(x.shape[-1])]
        return apply_rotary(x, cos, sin)

    def queries(self, x, cos, sin):
        """Each head's query: the slice without RoPE, the rotated slice.

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            The layer's input.
        cos, sin : ndarray, shape (B, 1, T, d_rope)
            The tables at the tokens' positions.

        Returns
        -------
        q_nope : ndarray, shape (B, H, T, d_nope)
        q_pe : ndarray, shape (B, H, T, d_rope), rotated
        """
        B, T, _ = x.shape
        if self.q_lora_rank is None:  # (B, T, d_model) -> (B, T, H*d_qk)
            q = _linear(x, self.q_proj, None)
        else:  # (B, T, r_q) -> (B, T, H*d_qk)
            q = _linear(self.q_resid(x), self.q_b_proj, None)
        # (B, T, H*d_qk) -> (B, T, H, d_qk) -> (B, H, T, d_qk)
        q = q.reshape(B, T, -1, self.qk_head_dim).transpose(0, 2, 1, 3)
        d = self.qk_nope_head_dim
        return q[..., :d], self.rotate(q[..., d:], cos, sin)

    def q_resid(self, x):
        """The queries' low-rank bottleneck: ``q_a_layernorm(q_a_proj(x))``.

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            The layer's input.

        Returns
        -------
        ndarray, shape (B, T, q_lora_rank)
        """
        # (B, T, d_model) @ (d_model, r_q) -> (B, T, r_q)
        return rms_norm_core(_linear(x, self.q_a_proj, self.q_a_bias),
                             self.q_a_layernorm, self.NORM_EPS)

    def latent(self, x, cos, sin):
        """What the cache keeps of each token: ``c_kv`` and rotated ``k_pe``.

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            The layer's input.
        cos, sin : ndarray, shape (B, T, d_rope)
            The tables at the tokens' positions.

        Returns
        -------
        c_kv : ndarray, shape (B, T, r), after ``kv_a_layernorm``
        k_pe : ndarray, shape (B, T, d_rope), rotated, shared by all heads
        """
        # (B, T, d_model) @ (d_model, r + d_rope) -> (B, T, r + d_rope)
        ckv = _linear(x, self.kv_a_proj_with_mqa, self.kv_a_bias)
        r = self.kv_lora_rank
        c_kv = rms_norm_core(ckv[..., :r], self.kv_a_layernorm, self.NORM_EPS)
        return c_kv, self.rotate(ckv[..., r:], cos, sin)

    def tables(self, position_ids, dtype):
        """RoPE's cos and sin at these positions.

        Parameters
        ----------
        position_ids : ndarray of int, shape (B, T)
            Each token's position.
        dtype : numpy dtype
            The tables' dtype.

        Returns
        -------
        cos, sin : ndarray, shape (B, T, d_rope)
        """
        return rotary_cos_sin_core(position_ids, self.inv_freq,
                                   self.attention_scaling, dtype)

    def attend_expanded(self, q_nope, q_pe, latent, mask_mod):
        """Expand the latent to every head's keys and values; attend.

        Parameters
        ----------
        q_nope : ndarray, shape (B, H, T, d_nope)
        q_pe : ndarray, shape (B, H, T, d_rope)
            The queries' two slices, ``q_pe`` rotated.
        latent : ndarray, shape (B, S, r + d_rope)
            ``[c_kv, k_pe]`` of every key: the latent, the rotated slice.
        mask_mod : callable or None
            The kernel's mask (query ``i`` is the ``i``-th new token).

        Returns
        -------
        out : ndarray, shape (B, H, T, d_v)
        weights : ndarray, shape (B, H, T, S), or None
        """
        B, S, _ = latent.shape
        H, d, r = self.num_heads, self.qk_nope_head_dim, self.kv_lora_rank
        c_kv, k_pe = latent[..., :r], latent[..., r:]  # (B, S, r | d_rope)
        # (B, S, r) @ (r, H*(d_nope + d_v)) -> (B, S, H, d_nope + d_v)
        kv = _linear(c_kv, self.kv_b_proj, None).reshape(B, S, H, -1)
        kv = kv.transpose(0, 2, 1, 3)  # (B, H, S, d_nope + d_v)
        k_rot = np.broadcast_to(k_pe[:, None], (B, H, S, k_pe.shape[-1]))
        key = np.concatenate([kv[..., :d], k_rot], axis=-1)  # (B,H,S,d_qk)
        query = np.concatenate([q_nope, q_pe], axis=-1)  # (B, H, T, d_qk)
        attention = ATTENTION_FUNCTIONS[self.attn_implementation]  # by name
        return attention(query, key, kv[..., d:], None, scaling=self.scaling,
                         mask_mod=mask_mod)

    def attend_absorbed(self, q_nope, q_pe, latent, mask_mod):
        """Attend over the latent itself: ``kv_b_proj`` folded away.

        ``q_nope . (W_uk c) = (W_uk^T q_nope) . c``: the key half of
        ``kv_b_proj`` moves onto the query, so every head scores the
        shared ``[c_kv, k_pe]`` (one key/value head). ``sum_j p_j W_uv
        c_j = W_uv sum_j p_j c_j``: the value half moves after the
        weighted sum, onto the way to ``o_proj``. The kernel runs with
        ``d_head = r + d_rope`` and values of ``r``.

        Parameters
        ----------
        q_nope : ndarray, shape (B, H, T, d_nope)
        q_pe : ndarray, shape (B, H, T, d_rope)
            The queries' two slices, ``q_pe`` rotated.
        latent : ndarray, shape (B, S, r + d_rope)
            ``[c_kv, k_pe]`` of every key: the latent, the rotated slice.
        mask_mod : callable or None
            The kernel's mask (query ``i`` is the ``i``-th new token).

        Returns
        -------
        out : ndarray, shape (B, H, T, d_v)
        weights : ndarray, shape (B, H, T, S), or None
        """
        # (B, H, T, d_nope) @ (H, d_nope, r) -> (B, H, T, r)
        q_latent = q_nope @ self.w_uk
        query = np.concatenate([q_latent, q_pe], axis=-1)  # (B,H,T,r+d_rope)
        # (B, S, r + d_rope) -> (B, 1, S, r + d_rope): one key head, and
        # its first r numbers the one value head (views, no copy)
        key = latent[:, None]
        attention = ATTENTION_FUNCTIONS[self.attn_implementation]  # by name
        out, weights = attention(query, key, key[..., :self.kv_lora_rank],
                                 None,
                                 scaling=self.scaling, mask_mod=mask_mod)
        # (B, H, T, r) @ (H, r, d_v) -> (B, H, T, d_v)
        return out @ self.w_uv.transpose(0, 2, 1), weights

    # ---------------------------------------------------------- forward
    def forward_core(self, x, position_ids, cache=None):
        """Unchecked core of :meth:`__call__`: out and weights (or None).

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            The layer's input.
        position_ids : ndarray of int, shape (B, T)
            Each token's position.
        cache : None
            MLA caches a latent, not keys and values: :meth:`decode` takes
            its :class:`LatentCache`.

        Returns
        -------
        out : ndarray, shape (B, T, d_model)
        weights : ndarray, shape (B, H, T, T), or None
        """
        if cache is not None:
            raise TypeError(
                "past_key_values: DeepseekV3Attention caches a latent, not "
                "keys and values; pass a LatentCache to decode() instead "
                "(layer.decode(hidden_states, layer.new_cache()))")
        cos, sin = self.tables(position_ids, x.dtype)  # (B, T, d_rope)
        q_nope, q_pe = self.queries(x, cos[:, None], sin[:, None])
        latent = np.concatenate(self.latent(x, cos, sin), axis=-1)
        out, weights = self.attend_expanded(q_nope, q_pe, latent,
                                            self.key_mask_mod(x, cos, sin))
        # (B, H, T, d_v) -> (B, T, H*d_v) @ (H*d_v, d_model)
        return _linear(merge_heads_core(out), self.o_proj,
                       self.o_bias), weights

    def key_mask_mod(self, x, cos, sin):
        """The kernel's ``mask_mod`` for this call: the causal triangle
        (DeepSeek-V3.2: its indexer's choice of keys).

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            The layer's input.
        cos, sin : ndarray, shape (B, T, d_rope)
            RoPE's tables at the tokens' positions.

        Returns
        -------
        callable
        """
        return self.mask_mod

    def new_cache(self) -> LatentCache:
        """An empty :class:`LatentCache` of this layer's sizes.

        Returns
        -------
        LatentCache
        """
        return LatentCache(self.kv_lora_rank, self.qk_rope_head_dim)

    def decode(self, hidden_states, cache, position_ids=None,
               absorb: bool = False):
        """New tokens against the cache: they join it, then attend to it.

        Parameters
        ----------
        hidden_states : ndarray, shape (B, T, d_model)
            The new tokens' input (a prompt, or one token a step).
        cache : LatentCache
            The layer's cache (:meth:`new_cache`); it grows by T tokens.
        position_ids : array_like of int, shape (T,) or (B, T), optional
            The new tokens' positions; by default ``S_old .. S_old + T -
            1``, after the ``S_old`` tokens the cache holds.
        absorb : bool, default False
            Attend over the latent with the weights absorbed, instead of
            expanding every cached token's keys and values.

        Returns
        -------
        ndarray, shape (B, T, d_model)
            The module's output for the new tokens, each seeing the
            cached tokens and the new ones up to itself.
        """
        x = as_float_array("hidden_states", hidden_states)
        check_shape("hidden_states", x, x.ndim == 3 and x.shape[1] >= 1
                    and x.shape[2] == self.hidden_size,
                    f"(B, T, d_model) with T >= 1, d_model = "
                    f"{self.hidden_size}")
        check_same_dtype(**{"o_proj.weight": self.o_proj,
                            "hidden_states": x})
        if not isinstance(cache, LatentCache):
            raise TypeError(f"cache must be a LatentCache, got "
                            f"{type(cache).__name__}")
        if (cache.kv_lora_rank, cache.qk_rope_head_dim) != (
                self.kv_lora_rank, self.qk_rope_head_dim):
            raise ValueError(
                f"cache holds (kv_lora_rank, qk_rope_head_dim) = "
                f"({cache.kv_lora_rank}, {cache.qk_rope_head_dim}), "
                f"expected this layer's ({self.kv_lora_rank}, "
                f"{self.qk_rope_head_dim})")
        B, T, _ = x.shape
        past = cache.seq_len
        if past and cache.buffer.shape[0] != B:
            raise ValueError(
                f"hidden_states has a batch of {B}, expected the cache's "
                f"{cache.buffer.shape[0]}")
        if past and cache.buffer.dtype != x.dtype:
            raise ValueError(
                f"hidden_states has dtype {x.dtype}, expected the cache's "
                f"{cache.buffer.dtype}")
        absorb = check_bool("absorb", absorb)
        if position_ids is None:
            position_ids = past + np.arange(T)
        _, pos = attention_inputs(None, position_ids, B, T, 0)  # (B, T)
        cos, sin = self.tables(pos, x.dtype)  # (B, T, d_rope)
        q_nope, q_pe = self.queries(x, cos[:, None], sin[:, None])
        latent = cache.update(*self.latent(x, cos, sin))  # (B, S, r+d_rope)
        # new token i sits at key index past + i: bottom-right causal
        mask_mod = None if T == 1 else _shifted(causal_mask_mod, past)
        attend = self.attend_absorbed if absorb else self.attend_expanded
        out, _ = attend(q_nope, q_pe, latent, mask_mod)
        # (B, H, T, d_v) -> (B, T, H*d_v) @ (H*d_v, d_model)
        return _linear(merge_heads_core(out), self.o_proj, self.o_bias)

    def __repr__(self) -> str:
        return (f"DeepseekV3Attention(layer_idx={self.layer_idx}, heads="
                f"{self.num_heads}, q_lora_rank={self.q_lora_rank}, "
                f"kv_lora_rank={self.kv_lora_rank}, qk "
                f"{self.qk_nope_head_dim}+{self.qk_rope_head_dim}, v "
                f"{self.v_head_dim}, attn_implementation="
                f"{self.attn_implementation!r})")


class DeepseekV32Attention(DeepseekV3Attention):
    """DeepSeek-V3.2: multi-head latent attention over the top keys only.

    DeepSeek Sparse Attention. A lightweight indexer scores every earlier
    key for each query, ``I[t, s] = sum_j w_j(x_t) relu(q_j(t) . k(s) /
    sqrt(d_index))`` (``index_n_heads`` query heads ``q_j`` from the
    queries' bottleneck, one key ``k`` a token after a LayerNorm, RoPE in
    the half layout on the first ``qk_rope_head_dim`` channels of both),
    and each query then attends, as :class:`DeepseekV3Attention`, to its
    ``index_topk`` best-scored keys only: the choice is a ``mask_mod`` of
    the kernel.

    Parameters
    ----------
    config : DeepseekV32Config or dict
        A transformers config or its ``to_dict()``; ``q_lora_rank`` set.
    layer_idx : int, default 0
        The layer's index.
    attn_implementation : {"flex_attention", "eager"}
        The kernel, by name.

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
        """The module's ``state_dict`` keys and shapes (torch's layout).

        Returns
        -------
        dict of str to tuple
        """
        n, d, D = self.index_n_heads, self.index_head_dim, self.hidden_size
        return super().state_shapes() | {
            "indexer.wq_b.weight": (n * d, self.q_lora_rank),
            "indexer.wk.weight": (d, D), "indexer.k_norm.weight": (d,),
            "indexer.k_norm.bias": (d,), "indexer.weights_proj.weight": (n, D)}

    def load(self, weights: dict) -> None:
        """Keep MLA's weights and the indexer's.

        Parameters
        ----------
        weights : dict of str to ndarray
            The state_dict, checked.
        """
        super().load(weights)
        self.index_wq, self.index_wk = (weights["indexer.wq_b.weight"],
                                        weights["indexer.wk.weight"])
        self.index_norm = (weights["indexer.k_norm.weight"],
                           weights["indexer.k_norm.bias"])
        self.index_weights = weights["indexer.weights_proj.weight"]

    def index_scores(self, x, cos, sin):
        """The indexer's score of every key for every query.

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            The layer's input.
        cos, sin : ndarray, shape (B, T, d_rope)
            RoPE's tables at the tokens' positions.

        Returns
        -------
        ndarray, shape (B, T, S)
            ``I[t, s]``, before the mask.
        """
        B, T, _ = x.shape
        n, d = self.index_n_heads, self.index_head_dim
        r = self.qk_rope_head_dim
        # (B, T, r_q) @ (r_q, n*d) -> (B, T, n, d): n query heads a token
        q = _linear(self.q_resid(x), self.index_wq, None)
        q = q.reshape(B, T, n, d)
        k = _linear(x, self.index_wk, None)  # (B, T, d): one key a token
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
        w = _linear(x, self.index_weights, None) * n ** -0.5  # (B, T, n)
        # (B, T, 1, n) @ (B, T, n, S) -> (B, T, S): heads summed, weighted
        return (w[..., None, :] @ scores)[..., 0, :]

    def chosen(self, scores):
        """Which keys each query attends to: its ``index_topk`` best-scored
        earlier keys (all of them while it has fewer).

        Parameters
        ----------
        scores : ndarray, shape (B, T, S)
            :meth:`index_scores`.

        Returns
        -------
        ndarray of bool, shape (B, T, S)
        """
        B, T, S = scores.shape
        seen = causal_mask_mod(0, 0, np.arange(T)[:, None], np.arange(S))
        scores = np.where(seen, scores, -np.inf)  # (B, T, S)
        k = min(self.index_topk, S)
        top = np.argpartition(-scores, k - 1, axis=-1)[..., :k]  # (B, T, k)
        keep = np.zeros(scores.shape, bool)
        np.put_along_axis(keep, top, True, axis=-1)
        return keep & seen

    def forward_core(self, x, position_ids, cache=None):
        """Unchecked core of :meth:`__call__`: out and weights (or None).

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            The layer's input.
        position_ids : ndarray of int, shape (B, T)
            Each token's position.
        cache : None
            Not supported: the indexer would need its own key cache.

        Returns
        -------
        out : ndarray, shape (B, T, d_model)
        weights : ndarray, shape (B, H, T, T), or None
        """
        if cache is not None:
            raise TypeError("past_key_values: DeepseekV32Attention runs "
                            "without a cache here (its indexer keeps keys of "
                            "its own); pass past_key_values=None")
        return super().forward_core(x, position_ids)

    def key_mask_mod(self, x, cos, sin):
        """The indexer's choice as the kernel's ``mask_mod``: query ``t``
        may attend to key ``s`` where :meth:`chosen` keeps it.

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            The layer's input.
        cos, sin : ndarray, shape (B, T, d_rope)
            RoPE's tables at the tokens' positions.

        Returns
        -------
        callable
        """
        keep = self.chosen(self.index_scores(x, cos, sin))  # (B, T, S)

        def top_k_mask_mod(b, h, q_idx, kv_idx):
            return keep[b, q_idx, kv_idx]
        return top_k_mask_mod

    def decode(self, hidden_states, cache, position_ids=None,
               absorb: bool = False):
        """Not here: DeepSeek-V3.2's decode also caches the indexer's keys.

        Parameters
        ----------
        hidden_states, cache, position_ids, absorb
            As :meth:`DeepseekV3Attention.decode`.

        Raises
        ------
        TypeError
            Always.
        """
        raise TypeError("DeepseekV32Attention.decode is not implemented "
                        "(the indexer keeps a key cache of its own); call "
                        "the layer on the whole sequence instead")

    def __repr__(self) -> str:
        return (super().__repr__()[:-1] + f", index_topk={self.index_topk}"
                f", index_n_heads={self.index_n_heads})").replace(
            "DeepseekV3Attention(", "DeepseekV32Attention(", 1)


def _shifted(mask_mod, past: int):
    """``mask_mod`` for queries that follow ``past`` held keys: new token
    ``i`` is key ``past + i``. The held keys are the last ones before the
    new tokens, so the causal and the sliding masks stay right."""
    def shifted(b, h, q_idx, kv_idx):
        return mask_mod(b, h, q_idx + past, kv_idx)
    return shifted
