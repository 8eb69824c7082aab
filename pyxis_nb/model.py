"""Qwen3ForCausalLM in numpy: a Hugging Face checkpoint run by the book's code.

Shape legend:
    B        batch
    T        positions fed to one forward call (the whole sequence without
             a cache; a prompt chunk, or 1 when decoding, with one)
    S        positions the new queries attend over (cache + T)
    L        decoder layers (num_hidden_layers)
    V        vocab_size
    d_model  hidden_size
    d_ff     intermediate_size, the width inside the MLP

``generate`` takes a prompt of ``P`` positions (left padding included) and
adds ``N = max_new_tokens``.

Each of the ``L`` pre-norm layers adds ``self_attn(input_layernorm(h))``,
then ``mlp(post_attention_layernorm(h))``, to the residual stream ``h``.
With ``intermediate_size = 0`` the layers have no MLP: the small random
decoder of the KV-cache and padding chapters. :mod:`pyxis_nb.loading`
reads the checkpoints.
"""

from __future__ import annotations

import functools
import pathlib
from dataclasses import dataclass, replace

import numpy as np

from ._checks import (as_float_array, check_01_mask, check_bool,
                      check_callable, check_float_dtype, check_int,
                      check_int_array, check_keys,
                      check_model_config, check_needs, check_number,
                      check_positive_int, check_same_dtype, check_shape,
                      check_state_shapes, check_token_ids)
from .kv_cache import Cache, DynamicCache, KVCache
from .multihead import (MultiHeadAttention, attention_inputs,
                        check_attn_implementation, check_output_attentions)
from .norms import rms_norm_core
from .gguf_file import read_gguf
from .loading import read_checkpoint, rope_init
from .qwen3 import ModelConfig, random_attention, state_shapes
from .rope import (rotary_cos_sin)
from .stable_softmax import softmax_core

__all__ = [
    "SHAKESPEARE_CHECKPOINT",
    "CausalLMOutputWithPast",
    "GenerateDecoderOnlyOutput",
    "Qwen3RMSNorm",
    "Qwen3MLP",
    "Qwen3DecoderLayer",
    "Qwen3ForCausalLM",
    "TinyDecoder",
    "LlamaForCausalLM",
]

#: the interventions ``Qwen3ForCausalLM.forward(hooks=...)`` takes
HOOK_POINTS = ("heads", "residual")

#: The Qwen3 trained on Shakespeare that ships with the package (a folder
#: in Hugging Face's format; ``make real-model`` rebuilds it).
SHAKESPEARE_CHECKPOINT = (pathlib.Path(__file__).parent / "data"
                          / "qwen3_shakespeare")

@dataclass(frozen=True)
class CausalLMOutputWithPast:
    """What ``forward`` returns, as Hugging Face's class of the name.

    ``logits`` (B, T, V): the kept positions' scores. ``cache``: the cache
    the call appended to, or None (HF: ``past_key_values``). With
    ``output_attentions``, ``attentions`` (L, B, H, T, S); with
    ``output_hidden_states``, ``hidden_states`` (L + 1, B, T, d_model):
    each layer's input, then the final norm's output (HF: tuples).

    See Also
    --------
    transformers.modeling_outputs.CausalLMOutputWithPast
    """

    logits: np.ndarray
    cache: KVCache | None = None
    attentions: np.ndarray | None = None
    hidden_states: np.ndarray | None = None


@dataclass(frozen=True)
class GenerateDecoderOnlyOutput:
    """``generate``'s result with ``return_dict_in_generate=True`` (HF's).

    ``sequences`` (B, P + N): the prompt and the new tokens. With
    ``output_scores``, ``scores``: each step's (B, V) after temperature,
    top-k and top-p (greedy: the logits); with ``output_logits``,
    ``logits``: each step's raw (B, V).

    See Also
    --------
    transformers.generation.GenerateDecoderOnlyOutput
    """

    sequences: np.ndarray
    scores: tuple | None = None
    logits: tuple | None = None


class Qwen3RMSNorm:
    """RMSNorm with a learned gain, as a layer: ``weight`` (d_model,).

    ``weight`` is used as given (not checked, not copied); ``eps`` is added
    to the mean square (HF: ``variance_epsilon``).

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3RMSNorm
    rms_norm : the checked function.
    """

    def __init__(self, weight: np.ndarray, eps: float = 1e-6):
        self.weight, self.variance_epsilon = weight, eps

    def forward(self, hidden_states: np.ndarray) -> np.ndarray:
        """Unchecked: (..., d_model) -> (..., d_model), ``rms_norm_core``.

        ``hidden_states``: of the dtype of ``weight``."""
        return rms_norm_core(hidden_states, self.weight,
                             self.variance_epsilon)

    __call__ = forward


class Qwen3MLP:
    """SwiGLU: ``down_proj(silu(gate_proj(x)) * up_proj(x))``.

    Weights in torch's ``Linear`` layout (out, in), no biases, unchecked:
    ``gate_proj``, ``up_proj`` (d_ff, d_model), copied into one array
    ``gate_up_proj`` (2 d_ff, d_model) and kept as its views; ``down_proj``
    (d_model, d_ff).

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3MLP
    """

    def __init__(self, gate_proj, up_proj, down_proj):
        # one product for both (Phi-3's gate_up_proj): a single pass over
        # the weights when decoding; laid out as gate_proj (weight_order)
        d_ff = gate_proj.shape[0]
        self.gate_up_proj = np.empty(
            (2 * d_ff, gate_proj.shape[1]), gate_proj.dtype,
            order="F" if np.isfortran(gate_proj) else "C")
        self.gate_up_proj[:d_ff], self.gate_up_proj[d_ff:] = gate_proj, up_proj
        self.gate_proj = self.gate_up_proj[:d_ff]
        self.up_proj = self.gate_up_proj[d_ff:]
        self.down_proj = down_proj

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Unchecked: x (B, T, d_model) -> (B, T, d_model).

        ``x``: of the weights' dtype."""
        # (B, T, d_model) @ (d_model, 2 d_ff) -> gate, up: (B, T, d_ff) each
        gate_up = x @ self.gate_up_proj.T
        d_ff = gate_up.shape[-1] // 2
        gate, up = gate_up[..., :d_ff], gate_up[..., d_ff:]  # two views
        h = silu_mul(gate, up)  # silu(gate) * up, (B, T, d_ff)
        return h @ self.down_proj.T  # (B, T, d_ff) @ (d_ff, d_model)

    __call__ = forward


def silu_mul(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Unchecked: ``silu(gate) * up``, written into ``up``, which it returns.

    ``gate`` and ``up``: one shape and dtype. As torch computes it,
    ``silu(x) = x / (1 + exp(-x))``, in one temporary array, not five.
    """
    denom = np.negative(gate)
    with np.errstate(over="ignore"):  # exp(-x) = inf: silu(x) = -0.0
        np.exp(denom, out=denom)
    denom += 1
    up *= np.divide(gate, denom, out=denom)
    return up


class Qwen3DecoderLayer:
    """One pre-norm block: attention, then (if there is one) the MLP.

    ``self_attn``: a ``MultiHeadAttention``; ``input_layernorm``,
    ``post_attention_layernorm``: ``Qwen3RMSNorm``; ``mlp``: a ``Qwen3MLP``,
    or None (attention only, no second norm); ``layer_idx``: the layer's
    entry in a ``KVCache``.

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3DecoderLayer
    """

    def __init__(self, self_attn, input_layernorm, mlp=None,
                 post_attention_layernorm=None, *, layer_idx: int = 0):
        self.self_attn, self.input_layernorm = self_attn, input_layernorm
        self.mlp, self.post_attention_layernorm = mlp, post_attention_layernorm
        self.layer_idx = layer_idx

    @property
    def layer_type(self) -> str:
        """Its attention's kind, "full_attention" or "sliding_attention"."""
        return getattr(self.self_attn, "layer_type", "full_attention")

    def forward(self, hidden_states, attention_mask, position_embeddings, *,
                cache=None, is_causal=False, head_mask=None,
                rope_layout="half", heads_hook=None):
        """Unchecked (the model checks once): (B, T, d_model) -> same.

        Also returns the attention weights (B, H, T, S), None from the
        ``"flex_attention"`` kernel.

        Parameters
        ----------
        hidden_states : ndarray, shape (B, T, d_model)
        attention_mask : ndarray of bool or None
            The kernel's mask (True = may attend), built by the model.
        position_embeddings : tuple of ndarray
            ``(cos, sin)``, each (B, T, d_head), built by the model.
        cache : Cache, optional
            Appended to at ``layer_idx``.
        is_causal : bool, default False
            The kernel adds the causal triangle (no (T, S) mask).
        head_mask : ndarray, shape (H,), optional
        rope_layout : {"half", "interleaved"}
        heads_hook : callable, optional
            ``heads_hook(heads) -> heads`` on (B, H, T, d_head) before
            ``o_proj``.

        See Also
        --------
        transformers.models.qwen3.modeling_qwen3.Qwen3DecoderLayer.forward
        """
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        # Self Attention
        hidden_states, attn_weights = self.self_attn.attend(
            hidden_states, attention_mask, position_embeddings, cache=cache,
            is_causal=is_causal, head_mask=head_mask,
            rope_layout=rope_layout, hook=heads_hook)
        hidden_states = residual + hidden_states
        if self.mlp is None:  # an attention-only decoder
            return hidden_states, attn_weights
        # Fully Connected
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states, attn_weights

    __call__ = forward


# ---------------------------------------- the model's own door checks
def _with_kernel(config: ModelConfig, attn_implementation) -> ModelConfig:
    """``config`` with its kernel's name set (None: kept as it is)."""
    if attn_implementation is None:
        return config
    return replace(config, _attn_implementation=check_attn_implementation(
        attn_implementation))


def _check_token_list(name: str, value, vocab_size: int) -> tuple[int, ...]:
    """None, an id or a list of ids in 0 .. vocab_size - 1, as a tuple."""
    values = [] if value is None else (
        list(value) if isinstance(value, (list, tuple)) else [value])
    return tuple(check_int(name, v, low=0, high=vocab_size - 1)
                 for v in values)


def check_sampling(do_sample, temperature, top_k, top_p, seed) -> dict:
    """``generate``'s sampling arguments, checked (HF's names and ranges):
    ``do_sample``, ``temperature``, ``top_k``, ``top_p``, ``seed``, as a
    dict of them."""
    check_bool("do_sample", do_sample)
    check_number("temperature", temperature, above=0)
    if top_k is not None:
        check_positive_int("top_k", top_k)
    if top_p is not None and not 0 < check_number("top_p", top_p,
                                                  above=0) <= 1:
        raise ValueError(f"top_p must be a number in (0, 1], got {top_p!r}")
    if seed is not None:
        check_int("seed", seed, low=0)
    return dict(do_sample=do_sample, temperature=float(temperature),
                top_k=top_k, top_p=top_p, seed=seed)


class Qwen3ForCausalLM:
    """Qwen3: embedding, ``L`` decoder layers, final norm, ``lm_head``.

    Build one with :meth:`from_pretrained` (a checkpoint folder),
    :meth:`from_state_dict` (arrays under the checkpoint's names) or
    :meth:`from_config` (seeded random weights); the constructor takes the
    parts as built, unchecked: ``config`` (a ``ModelConfig``),
    ``embed_tokens`` (V, d_model), ``layers`` (``L``, layer ``i`` with
    ``layer_idx = i``), ``norm`` (the final one), ``lm_head`` (V, d_model;
    None: tied to ``embed_tokens``), ``generation_config`` (the dict of
    ``generation_config.json``: ``eos_token_id``, ...).

    ``inv_freq`` (d_head/2,) and ``attention_scaling`` (1.0 but for YaRN)
    are RoPE's, computed once from ``config``, as HF's
    ``model.rotary_emb`` holds them.

    See Also
    --------
    transformers.Qwen3ForCausalLM
    """

    #: config.json's model_type (GGUF: general.architecture); q/k RMSNorm
    model_type, qk_norm = "qwen3", True
    #: what the embedding is multiplied by (Gemma: sqrt(d_model)); None: 1
    embed_scale = None

    def __init__(self, config: ModelConfig, embed_tokens, layers, norm,
                 lm_head=None, *, generation_config: dict | None = None):
        self.config, self.embed_tokens, self.norm = config, embed_tokens, norm
        self.layers = list(layers)
        self.lm_head = embed_tokens if lm_head is None else lm_head
        self.generation_config = dict(generation_config or {})
        self.inv_freq, self.attention_scaling = rope_init(config)

    # ------------------------------------------------------------- building
    @classmethod
    def from_config(cls, config: ModelConfig, *, seed: int = 0,
                    dtype=np.float64, tie_word_embeddings: bool = False,
                    attn_implementation: str | None = None):
        """Seeded random weights of ``config``'s shapes (norm gains 1).

        Parameters
        ----------
        config : ModelConfig
        seed : int, default 0
            Layer ``i``'s attention draws with ``seed + 1 + i``.
        dtype : numpy float dtype, default float64
        tie_word_embeddings : bool, default False
        attn_implementation : {"flex_attention", "eager"}, optional
            The kernel every layer runs; None: the config's.

        See Also
        --------
        transformers.Qwen3ForCausalLM : ``Qwen3ForCausalLM(config)``.
        """
        check_model_config(config)
        c = _with_kernel(config, attn_implementation)
        dtype = check_float_dtype("dtype", dtype)
        tied = check_bool("tie_word_embeddings", tie_word_embeddings)
        seed = check_int("seed", seed, low=0)
        V, d, d_ff = c.vocab_size, c.hidden_size, c.intermediate_size
        rng = np.random.default_rng(seed)
        embed = rng.standard_normal((V, d)).astype(dtype)
        lm_head = None if tied else (
            rng.standard_normal((V, d)) / np.sqrt(d)).astype(dtype)
        layers = []
        for i in range(c.num_hidden_layers):
            attn = random_attention(
                **c.attention_config(), seed=seed + 1 + i, dtype=dtype,
                qk_norm=cls.qk_norm, rms_norm_eps=c.rms_norm_eps,
                rope_theta=c.rope_theta,
                attn_implementation=c._attn_implementation)
            mlp = None if d_ff == 0 else Qwen3MLP(*[
                (rng.standard_normal(s) / np.sqrt(s[1])).astype(dtype)
                for s in ((d_ff, d), (d_ff, d), (d, d_ff))])
            layers.append(cls._layer(c, attn, mlp, i, dtype))
        norm = Qwen3RMSNorm(np.ones(d, dtype), c.rms_norm_eps)
        return cls(c, embed, layers, norm, lm_head)

    @staticmethod
    def _layer(c: ModelConfig, attn, mlp, i: int, dtype, norms=None):
        """Layer ``i``; its two norm gains given, or ones."""
        ones = np.ones(c.hidden_size, dtype)
        pre, post = (ones, ones) if norms is None else norms
        attn.layer_idx = i  # its entry in the model's cache
        return Qwen3DecoderLayer(
            attn, Qwen3RMSNorm(pre, c.rms_norm_eps), mlp,
            None if mlp is None else Qwen3RMSNorm(post, c.rms_norm_eps),
            layer_idx=i)

    @classmethod
    def from_state_dict(cls, state_dict, config: ModelConfig, *,
                        tie_word_embeddings: bool | None = None,
                        generation_config: dict | None = None,
                        attn_implementation: str | None = None):
        """A model from arrays under Hugging Face's names, used as given.

        As torch's ``load_state_dict(strict=True)``: every key, no other.

        Parameters
        ----------
        state_dict : mapping of str to ndarray
            ``model.embed_tokens.weight``, ...: arrays of one float dtype.
        config : ModelConfig
        tie_word_embeddings : bool, optional
            None: tied if there is no ``lm_head.weight``.
        generation_config : dict, optional
        attn_implementation : {"flex_attention", "eager"}, optional
        """
        check_model_config(config)
        config = _with_kernel(config, attn_implementation)
        tied = ("lm_head.weight" not in state_dict
                if tie_word_embeddings is None
                else check_bool("tie_word_embeddings", tie_word_embeddings))
        check_state_shapes(
            "state_dict", {k: np.shape(v) for k, v in state_dict.items()},
            state_shapes(config, tied, qk_norm=cls.qk_norm),
            ("lm_head.weight",) if tied else ())
        w = {k: np.asarray(v) for k, v in state_dict.items()}
        dtype = check_float_dtype("state_dict's dtype", check_same_dtype(**w))
        if tied and "lm_head.weight" in state_dict and not np.array_equal(
                state_dict["lm_head.weight"],
                state_dict["model.embed_tokens.weight"]):
            raise ValueError("lm_head.weight needs to equal "
                             "model.embed_tokens.weight: "
                             "tie_word_embeddings is true")
        c, layers = config, []
        for i in range(c.num_hidden_layers):
            p = f"model.layers.{i}."
            attn = MultiHeadAttention.from_state_dict(
                w, **c.attention_config(), prefix=p + "self_attn.",
                rms_norm_eps=c.rms_norm_eps, rope_theta=c.rope_theta,
                attn_implementation=c._attn_implementation)
            mlp = None if c.intermediate_size == 0 else Qwen3MLP(*[
                w[f"{p}mlp.{n}_proj.weight"] for n in ("gate", "up", "down")])
            norms = (w[p + "input_layernorm.weight"],
                     w.get(p + "post_attention_layernorm.weight"))
            layers.append(cls._layer(c, attn, mlp, i, dtype, norms))
        norm = Qwen3RMSNorm(w["model.norm.weight"], c.rms_norm_eps)
        return cls(c, w["model.embed_tokens.weight"], layers, norm,
                   None if tied else w["lm_head.weight"],
                   generation_config=generation_config)

    @classmethod
    def from_pretrained(cls, path, *, gguf_file=None, dtype=np.float32,
                        attn_implementation: str | None = None):
        """Load a checkpoint folder (as ``save_pretrained`` wrote it).

        ``read_checkpoint`` checks every file, key, shape and config feature
        before it reads a weight (FileNotFoundError for a missing file,
        ValueError for anything else that does not fit).

        Parameters
        ----------
        path : str or os.PathLike
            The folder, e.g. :data:`SHAKESPEARE_CHECKPOINT`.
        gguf_file : str, optional
            A GGUF file in the folder, read instead (``read_gguf``).
        dtype : numpy float dtype, default float32
            What the weights become.
        attn_implementation : {"flex_attention", "eager"}, optional
            None: the tiled ``"flex_attention"``; ``"eager"`` returns the
            weights (``output_attentions``).

        See Also
        --------
        transformers.AutoModelForCausalLM.from_pretrained
        """
        if attn_implementation is not None:
            check_attn_implementation(attn_implementation)
        if gguf_file is not None:
            ckpt = read_gguf(pathlib.Path(path) / gguf_file, dtype=dtype,
                             architecture=cls.model_type)
            return cls.from_state_dict(
                ckpt.state_dict, ckpt.config,
                tie_word_embeddings=ckpt.tie_word_embeddings,
                generation_config=ckpt.generation_config,
                attn_implementation=attn_implementation)
        arrays, config, tied, generation = read_checkpoint(
            path, cls.model_type, cls.qk_norm, dtype)
        return cls.from_state_dict(
            arrays, config, tie_word_embeddings=tied,
            generation_config=generation,
            attn_implementation=attn_implementation)

    def state_dict(self) -> dict:
        """The arrays under Hugging Face's names (no ``lm_head`` if tied)."""
        out = {"model.embed_tokens.weight": self.embed_tokens}
        for i, layer in enumerate(self.layers):
            p = f"model.layers.{i}."
            out |= layer.self_attn.state_dict(p + "self_attn.")
            out[p + "input_layernorm.weight"] = layer.input_layernorm.weight
            if layer.mlp is not None:
                out[p + "post_attention_layernorm.weight"] = (
                    layer.post_attention_layernorm.weight)
                for n in ("gate_proj", "up_proj", "down_proj"):
                    out[f"{p}mlp.{n}.weight"] = getattr(layer.mlp, n)
        out["model.norm.weight"] = self.norm.weight
        if not self.tie_word_embeddings:
            out["lm_head.weight"] = self.lm_head
        return out

    def set_attn_implementation(self, attn_implementation: str) -> None:
        """Run every layer on the kernel of that name from now on.

        ``attn_implementation``: also kept in ``config``, as transformers'
        method of this name does."""
        self.config = _with_kernel(self.config, attn_implementation)
        for layer in self.layers:
            layer.self_attn.attn_implementation = attn_implementation

    # ----------------------------------------------------------- properties
    @property
    def vocab_size(self) -> int:
        return self.embed_tokens.shape[0]

    @property
    def dtype(self):
        return self.embed_tokens.dtype

    @property
    def tie_word_embeddings(self) -> bool:
        return self.lm_head is self.embed_tokens

    @property
    def max_position_embeddings(self) -> int:
        return self.config.max_position_embeddings

    def num_parameters(self) -> int:
        """Numbers in the weights, a tied matrix once (HF's method)."""
        return sum(a.size for a in self.state_dict().values())

    def rope_by_type(self) -> dict:
        """``{layer type: (inv_freq, attention_scaling)}``, one RoPE for each
        kind of layer (Gemma 3: two bases; HF: ``rotary_emb``)."""
        return {"full_attention": (self.inv_freq, self.attention_scaling)}

    def new_cache(self, max_cache_len: int, batch_size: int = 1) -> KVCache:
        """An empty ``KVCache`` that fits this model and its dtype.

        ``max_cache_len`` positions (prompt and new tokens) of
        ``batch_size`` rows: ``L`` layers of (B, H_kv, max_cache_len,
        d_head)."""
        c = self.config
        return KVCache(c.num_hidden_layers, batch_size, c.num_key_value_heads,
                       c.head_dim, max_cache_len, dtype=self.dtype)

    # -------------------------------------------------------------- running
    def forward(self, input_ids, *, attention_mask=None, position_ids=None,
                cache: Cache | None = None, use_cache: bool = False,
                logits_to_keep: int = 0, output_attentions: bool = False,
                output_hidden_states: bool = False, head_mask=None,
                interleaved_rope: bool = False, hooks=None):
        """Next-token logits for ``T`` new tokens, after what ``cache`` holds.

        Parameters
        ----------
        input_ids : array_like of int, shape (B, T) or (T,)
        attention_mask : array_like, optional
            (B, S): 1 = real token, 0 = left padding, over cached and new
            positions; or 4-D (B or 1, 1, T, S), True = may attend, as HF.
        position_ids : array_like of int, shape (B, T) or (T,), optional
            Default: counted over the real tokens, as HF's ``generate``.
        cache : Cache, optional
            Holds the keys and values of earlier calls; this call appends.
        use_cache : bool, default False
            Without ``cache``: start a new ``DynamicCache`` and return it.
        logits_to_keep : int or 1-D array of int, default 0
            The last this many positions only (0: all), or these positions.
        output_attentions : bool, default False
            Needs the eager kernel: the tiled one holds no (B, H, T, S).
        output_hidden_states : bool, default False
        head_mask : array_like, shape (L, H), optional
            Multiplies head ``h`` of layer ``i``'s weights by
            ``head_mask[i, h]``, as older transformers models took it.
        interleaved_rope : bool, default False
            Rotate pairs (2i, 2i + 1), not Qwen3's and Llama's halves: the
            RoPE chapter's layout bug, for demonstrations only.
        hooks : dict, optional
            As TransformerLens's hook points: ``"heads"``: ``f(layer_idx,
            heads) -> heads`` on (B, H, T, d_head) before ``o_proj``;
            ``"residual"``: ``f(layer_idx, hidden_states) -> hidden_states``
            at each layer's input, and with ``layer_idx = L`` before the
            final norm (path patching, ablations).

        See Also
        --------
        transformers.Qwen3ForCausalLM.forward
        """
        ids, keep, cache, past, held, heads, rope_layout, hooks = \
            self._forward_args(
            input_ids, logits_to_keep, use_cache, cache, output_attentions,
            output_hidden_states, head_mask, interleaved_rope,
            hooks)  # ids (B, T), heads (L, H) or None; held: {kind: n}
        B, T = ids.shape
        inputs = {kind: attention_inputs(  # once for each kind of layer
            _held_columns(attention_mask, past, n), position_ids, B, T, n,
            dense=self.config._attn_implementation == "eager", seen=past)
            for kind, n in held.items()}  # (mask, is_causal, positions)
        _, causal, pos = inputs[max(held, key=held.get)]  # all tokens' mask
        rope = {kind: rotary_cos_sin(
            pos, self.config.head_dim, dtype=self.dtype, inv_freq=inv_freq,
            attention_scaling=scaling)  # (B, T, d_head) each
            for kind, (inv_freq, scaling) in self.rope_by_type().items()}
        residual_hook, heads_hook = hooks.get("residual"), hooks.get("heads")
        h = self.embed_tokens[ids]  # (B, T) -> (B, T, d_model)
        if self.embed_scale is not None:  # Gemma: times sqrt(d_model)
            h = h * self.embed_scale
        attentions, hidden_states = [], []
        for i, layer in enumerate(self.layers):
            if residual_hook is not None:
                h = residual_hook(i, h)
            hidden_states.append(h)  # the layer's input
            kind = layer.layer_type  # its mask and RoPE
            h, w = layer(h, inputs[kind][0], rope[kind], cache=cache,
                         is_causal=causal,
                         head_mask=None if heads is None else heads[i],
                         rope_layout=rope_layout, heads_hook=None
                         if heads_hook is None else functools.partial(
                             heads_hook, i))  # (B, T, d_model)
            attentions.append(w)  # (B, H, T, S), or None
        if residual_hook is not None:
            h = residual_hook(len(self.layers), h)
        h = self.norm(h)
        hidden_states.append(h)
        if isinstance(keep, np.ndarray):  # positions (K,), as HF takes them
            h = h[:, keep]
        elif keep:  # the last ``keep`` positions
            h = h[:, -keep:]
        logits = h @ self.lm_head.T  # (B, T or K, V)
        return CausalLMOutputWithPast(
            logits, cache, np.stack(attentions) if output_attentions else None,
            np.stack(hidden_states) if output_hidden_states else None)

    __call__ = forward

    def _forward_args(self, input_ids, logits_to_keep, use_cache, cache,
                      output_attentions, output_hidden_states, head_mask,
                      interleaved_rope, hooks):
        """forward's door: ids (B, T), kept logits, the cache, its length,
        the head mask (L, H) in the model's dtype, the RoPE layout, the
        hooks (a dict)."""
        ids = check_token_ids("input_ids", input_ids, self.vocab_size,
                              batch=True)
        keep = check_int("logits_to_keep", logits_to_keep, low=0) if np.ndim(
            logits_to_keep) == 0 else check_int_array(
            "logits_to_keep", logits_to_keep, ndim=1, low=0,
            high=ids.shape[1] - 1, want="(K,) positions of input_ids")
        check_output_attentions(output_attentions,
                                self.config._attn_implementation)
        check_bool("output_hidden_states", output_hidden_states)
        hooks = {} if hooks is None else dict(hooks)
        check_keys("hooks", hooks, HOOK_POINTS)
        for name, fn in hooks.items():
            check_callable(f"hooks[{name!r}]", fn,
                           "f(layer_idx, array) -> array")
        layout = ("interleaved" if check_bool("interleaved_rope",
                                              interleaved_rope) else "half")
        if check_bool("use_cache", use_cache) and cache is None:
            cache = DynamicCache(self.config)  # grows; sliding layers slide
        first = {}  # the first layer of each kind
        for i, layer in enumerate(self.layers):
            first.setdefault(layer.layer_type, i)
        past = 0 if cache is None else cache.get_seq_length(0)  # seen
        held = {kind: 0 if cache is None else cache.get_held_length(i)
                for kind, i in first.items()}  # fewer in a sliding layer
        heads = None
        if head_mask is not None:
            c = self.config
            shape = (c.num_hidden_layers, c.num_attention_heads)
            heads = as_float_array("head_mask", head_mask, ndim=2)
            check_shape("head_mask", heads, heads.shape == shape,
                        f"(L, H) = {shape}")
            heads = heads.astype(self.dtype)
        return ids, keep, cache, past, held, heads, layout, hooks

    def generate(self, input_ids, max_new_tokens, *, attention_mask=None,
                 use_cache=True, do_sample=False, temperature=1.0, top_k=None,
                 top_p=None, seed=None, eos_token_id=None,
                 prefill_chunk_size=None, output_scores=False,
                 output_logits=False, return_dict_in_generate=False):
        """Greedy decoding (argmax, append) or, with ``do_sample``, sampling.

        A row that reaches ``eos_token_id`` repeats it from then on.

        Parameters
        ----------
        input_ids : array_like of int, shape (B, P) or (P,)
        max_new_tokens : int
            ``N``, at least 1.
        attention_mask : array_like, shape (B, P), optional
            1 = real, 0 = left padding; every row has a real token.
        use_cache : bool, default True
            False: every step runs the whole sequence again.
        do_sample : bool, default False
        temperature, top_k, top_p : float, int, float
            Sampling settings, applied in HF's order.
        seed : int, optional
            Seeds the sampling generator.
        eos_token_id : int or list of int, optional
            Default: the checkpoint's ``generation_config``.
        prefill_chunk_size : int, optional
            Prompt tokens per prefill call (needs the cache); default all.
        output_scores, output_logits : bool, default False
            Keep each step's scores / raw logits (``return_dict_in_generate``).
        return_dict_in_generate : bool, default False
            Return a ``GenerateDecoderOnlyOutput``, not the ids (B, P + N).

        See Also
        --------
        transformers.GenerationMixin.generate
        """
        ids, mask, one, eos, chunk, choose = self._generate_args(
            input_ids, max_new_tokens, attention_mask, use_cache,
            eos_token_id, prefill_chunk_size, do_sample, temperature, top_k,
            top_p, seed, output_scores, output_logits,
            return_dict_in_generate)
        (B, P), N = ids.shape, max_new_tokens
        cache = self.new_cache(P + N, B) if use_cache else None
        step = dict(cache=cache, logits_to_keep=1)
        for a in range(0, P, chunk):  # prefill (no cache: one chunk, P)
            out = self.forward(ids[:, a:a + chunk],
                               attention_mask=mask[:, :a + chunk], **step)
        done, scores, logits = np.zeros(B, bool), [], []
        while len(logits) < N and not done.all():
            if logits:  # decode the newest token (no cache: all of them)
                out = self.forward(ids[:, -1:] if use_cache else ids,
                                   attention_mask=mask, **step)
            logits.append(out.logits[:, -1])  # (B, V)
            step_scores, picked = choose(logits[-1])  # (B, V), (B,)
            scores.append(step_scores)
            new = np.where(done, eos[0], picked)  # (B,)
            done |= (new[:, None] == eos).any(-1)  # then repeats eos[0]
            ids = np.concatenate([ids, new[:, None]], axis=1)  # (B, P + 1..)
            mask = np.pad(mask, ((0, 0), (0, 1)), constant_values=True)
        if one:
            ids, scores, logits = ids[0], [s[0] for s in scores], [
                z[0] for z in logits]
        if not return_dict_in_generate:
            return ids
        return GenerateDecoderOnlyOutput(
            ids, tuple(scores) if output_scores else None,
            tuple(logits) if output_logits else None)

    def _generate_args(self, input_ids, max_new_tokens, attention_mask,
                       use_cache, eos_token_id, prefill_chunk_size, do_sample,
                       temperature, top_k, top_p, seed, output_scores,
                       output_logits, return_dict_in_generate):
        """generate's door: ids and mask (B, P), 1-D?, eos, chunk, chooser.

        ``eos`` is an array of ids, ``[-1]`` for none; the chooser maps a
        step's logits (B, V) to its scores (B, V) and the next ids (B,).
        """
        one = np.ndim(input_ids) == 1
        ids = check_token_ids("input_ids", input_ids, self.vocab_size,
                              batch=True)
        (B, P) = ids.shape
        check_positive_int("max_new_tokens", max_new_tokens)
        use_cache = check_bool("use_cache", use_cache)
        for name, flag in [("output_scores", output_scores),
                           ("output_logits", output_logits),
                           ("return_dict_in_generate",
                            return_dict_in_generate)]:
            check_bool(name, flag)
        mask = np.ones((B, P), bool) if attention_mask is None else \
            check_01_mask("attention_mask", attention_mask)
        check_shape("attention_mask", mask, mask.shape == (B, P)
                    and mask.any(axis=-1).all(), f"(B, P) = ({B}, {P}) "
                    "with a real token (1) in every row")
        if eos_token_id is None:
            eos_token_id = self.generation_config.get("eos_token_id")
        eos = np.array(_check_token_list("eos_token_id", eos_token_id,
                                         self.vocab_size) or (-1,))
        sampling = check_sampling(do_sample, temperature, top_k, top_p, seed)
        sampling.pop("do_sample")
        rng = np.random.default_rng(sampling.pop("seed"))
        choose = functools.partial(choose_next, rng=rng,
                                   sampling=sampling if do_sample else None)
        chunk = P if prefill_chunk_size is None else check_positive_int(
            "prefill_chunk_size", prefill_chunk_size)
        check_needs(prefill_chunk_size is None or use_cache,
                    "prefill_chunk_size", "use_cache=True",
                    "without a cache every step reruns the sequence")
        return ids.astype(np.int64), mask, one, eos, chunk, choose

    def __repr__(self) -> str:
        c = self.config
        return (f"{type(self).__name__}(vocab_size={c.vocab_size}, "
                f"hidden_size={c.hidden_size}, "
                f"intermediate_size={c.intermediate_size}, "
                f"num_hidden_layers={c.num_hidden_layers}, "
                f"num_attention_heads={c.num_attention_heads}, "
                f"num_key_value_heads={c.num_key_value_heads}, "
                f"head_dim={c.head_dim}, "
                f"tie_word_embeddings={self.tie_word_embeddings}, "
                f"dtype={self.dtype})")


class TinyDecoder(Qwen3ForCausalLM):
    """Qwen3's skeleton without the MLPs, with seeded random weights.

    A constructor, not a second model: ``Qwen3ForCausalLM.from_config``
    with ``intermediate_size=0`` and an untied ``lm_head``. The sizes:
    ``vocab_size``, ``hidden_size``, ``num_hidden_layers``,
    ``num_attention_heads``, ``num_key_value_heads``, ``head_dim`` (even),
    ``rope_theta``, ``max_position_embeddings``; the rest as in
    ``from_config``: ``seed``, ``dtype``, ``attn_implementation``.
    """

    def __init__(self, vocab_size: int = 64, hidden_size: int = 32,
                 num_hidden_layers: int = 2, num_attention_heads: int = 4,
                 num_key_value_heads: int = 2, head_dim: int = 8, *,
                 rope_theta: float = 10_000.0,
                 max_position_embeddings: int = 4096,
                 seed: int = 0, dtype=np.float64,
                 attn_implementation: str = "flex_attention"):
        config = ModelConfig(
            hidden_size=hidden_size, num_attention_heads=num_attention_heads,
            num_key_value_heads=num_key_value_heads, head_dim=head_dim,
            num_hidden_layers=num_hidden_layers, rope_theta=rope_theta,
            rms_norm_eps=1e-6, intermediate_size=0, vocab_size=vocab_size,
            max_position_embeddings=max_position_embeddings)
        model = Qwen3ForCausalLM.from_config(
            config, seed=seed, dtype=dtype,
            attn_implementation=attn_implementation)
        super().__init__(model.config, model.embed_tokens, model.layers,
                         model.norm, model.lm_head)


def _held_columns(attention_mask, past: int, held: int):
    """A mask's last ``held + T`` columns, (B, past + T) or 4-D (B or 1, 1,
    T, past + T): the keys a layer that holds ``held`` of the ``past``
    cached tokens attends."""
    if held == past or attention_mask is None:
        return attention_mask
    return np.asarray(attention_mask)[..., past - held:]


def choose_next(logits, rng, sampling):
    """One step's scores and next ids: ``logits`` (B, V) -> (B, V), (B,),
    drawn with ``rng`` (a numpy Generator) when sampling.

    ``sampling`` None: greedy, the scores are the logits and the argmax is
    picked. Otherwise HF's warpers in HF's order: temperature, then top-k
    (ties kept), then top-p (drop the least likely tokens while they hold
    at most ``1 - top_p``; keep at least one); then one draw per row.
    """
    if sampling is None:
        return logits, np.argmax(logits, axis=-1)
    z = logits.astype(np.float64) / sampling["temperature"]  # (B, V)
    top_k, top_p = sampling["top_k"], sampling["top_p"]
    if top_k is not None:
        kth = np.sort(z, axis=-1)[:, -min(top_k, z.shape[-1])]  # (B,)
        z = np.where(z < kth[:, None], -np.inf, z)
    if top_p is not None:
        order = np.argsort(z, axis=-1, kind="stable")  # ascending
        ranked = np.take_along_axis(z, order, axis=-1)
        drop = np.cumsum(softmax_core(ranked), axis=-1) <= 1 - top_p
        drop[:, -1] = False  # the most likely token always stays
        np.put_along_axis(z, order, np.where(drop, -np.inf, ranked), -1)
    cdf = np.cumsum(softmax_core(z), axis=-1)  # (B, V)
    u = rng.random((len(z), 1)) * cdf[:, -1:]  # inverse-CDF sampling
    return z, (cdf < u).sum(axis=-1)  # first token whose cdf reaches u


# ------------------------------------------------------------------ Llama
class LlamaForCausalLM(Qwen3ForCausalLM):
    """Llama: Qwen3's decoder without ``q_norm`` / ``k_norm``.

    Qwen3 is Llama plus an RMSNorm of every query and key head before RoPE;
    the rest is shared, the constructor's ``config``, ``embed_tokens``,
    ``layers``, ``norm``, ``lm_head`` and ``generation_config`` too.
    :meth:`from_pretrained` reads a Llama folder (e.g. SmolLM2's) or a
    llama GGUF, whose q/k rows llama.cpp permuted for its interleaved RoPE:
    they are put back in Hugging Face's order (``permute_qk_proj``).

    See Also
    --------
    transformers.LlamaForCausalLM
    """

    model_type, qk_norm = "llama", False
