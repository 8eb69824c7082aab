"""Gemma 3 in numpy: a trained model with local and global layers.

Shape legend:
    B        batch
    T        positions fed to one forward call
    L        decoder layers (num_hidden_layers)
    V        vocab_size
    d_model  hidden_size
    d_ff     intermediate_size
    d_head   head_dim

Google's Gemma 3 (2025) is the package's decoder (``Qwen3ForCausalLM``'s
``forward``, its one layer loop) around the 2024-26 chapter's
:class:`~pyxis_nb.variants.Gemma3Attention`: q/k RMSNorm with gain ``1 + w``,
scores scaled by ``query_pre_attn_scalar ** -0.5``, five sliding layers (a
window of ``sliding_window`` keys, RoPE base 10,000) to one full layer (RoPE
base ``rope_theta``). Around it, Gemma's own: the embedding times
``sqrt(d_model)``, four RMSNorms of gain ``1 + w`` a layer (input,
post-attention, pre- and post-feedforward), a GELU-tanh MLP, tied embeddings.
:meth:`Gemma3ForCausalLM.from_pretrained` reads Gemma 3 270M's GGUF file
(:data:`GEMMA3_GGUF`, fetched by ``px.fetch_gemma3()``; Gemma Terms of Use).
"""

from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass, replace

import numpy as np

from ._checks import (check_choice, check_config_value, check_float_dtype,
                      check_found, check_model_config, check_needs,
                      check_same_dtype, check_state_shapes)
from .gguf_file import (dequantizable_types, dequantized, generation_config,
                        gguf_metadata, gguf_tensor_data, gguf_tensor_types)
from .kv_cache import DynamicCache
from .loading import GEMMA3_FETCH_HINT, GEMMA3_GGUF
from .model import (Qwen3DecoderLayer, Qwen3ForCausalLM, Qwen3MLP,
                    Qwen3RMSNorm)
from .multihead import check_attn_implementation
from .norms import rms_norm_core
from .qwen3 import ModelConfig, state_shapes as qwen3_state_shapes
from .qwen3 import weight_order
from .variants import Gemma3Attention

__all__ = ["GEMMA3_GGUF", "Gemma3TextConfig", "Gemma3RMSNorm", "Gemma3MLP",
           "Gemma3DecoderLayer", "Gemma3ForCausalLM", "state_shapes",
           "read_gemma3_gguf", "gelu_tanh"]


@dataclass(frozen=True)
class Gemma3TextConfig(ModelConfig):
    """``ModelConfig`` and Gemma 3's own keys, HF's names and defaults.

    ``rope_theta`` is the full layers' base, ``rope_local_base_freq`` the
    sliding layers'; ``layer_types`` (L,) says which each layer is.

    Parameters
    ----------
    hidden_size, num_attention_heads, num_key_value_heads, head_dim : int
    num_hidden_layers, intermediate_size, vocab_size : int
    max_position_embeddings : int
    rope_theta, rms_norm_eps : float
    rope_parameters, _attn_implementation : as in ``ModelConfig``
    layer_types : tuple of str, "sliding_attention" or "full_attention"
    sliding_window : int, keys a sliding layer's query sees, itself included
    query_pre_attn_scalar : float, scores are scaled by its ``** -0.5``
    rope_local_base_freq : float, the sliding layers' RoPE base
    final_logit_softcapping : float, optional; logits capped by ``tanh``

    See Also
    --------
    transformers.Gemma3TextConfig
    """

    layer_types: tuple = ()
    sliding_window: int = 4096
    query_pre_attn_scalar: float = 256
    rope_local_base_freq: float = 10_000.0
    final_logit_softcapping: float | None = None


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GELU's tanh approximation (torch's ``approximate="tanh"``) of
    ``x``: ``x / 2 * (1 + tanh(z))``, ``z = sqrt(2 / pi) * (x + 0.044715
    x**3)``, computed as ``x / (1 + exp(-2 z))`` (the same function: ``(1 +
    tanh(z)) / 2`` is the sigmoid of ``2 z``), in one temporary array.
    numpy's float32 ``exp`` is twice as fast as its ``tanh`` on AVX2."""
    c = 2 * math.sqrt(2 / math.pi)
    e = x * x  # -2 z = -c x (1 + 0.044715 x**2)
    e *= -c * 0.044715
    e -= c
    e *= x
    with np.errstate(over="ignore"):  # exp(-2 z) = inf: x / inf = -0.0
        np.exp(e, out=e)
    e += 1
    return np.divide(x, e, out=e)


class Gemma3RMSNorm(Qwen3RMSNorm):
    """RMSNorm of gain ``1 + weight``: Gemma stores the gain minus one.

    ``weight`` (d_model,): as the checkpoint stores it (zero-centred);
    ``eps``: added to the mean square.

    See Also
    --------
    transformers.models.gemma3.modeling_gemma3.Gemma3RMSNorm
    """

    def __init__(self, weight: np.ndarray, eps: float = 1e-6):
        super().__init__(weight, eps)
        self.gain = 1 + weight  # HF: 1.0 + self.weight

    def forward(self, hidden_states: np.ndarray) -> np.ndarray:
        """Unchecked: (..., d_model) -> (..., d_model).

        ``hidden_states``: of the dtype of ``weight``."""
        return rms_norm_core(hidden_states, self.gain, self.variance_epsilon)

    __call__ = forward


class Gemma3MLP(Qwen3MLP):
    """GeGLU: ``down_proj(gelu_tanh(gate_proj(x)) * up_proj(x))``.

    ``gate_proj``, ``up_proj`` (d_ff, d_model), ``down_proj`` (d_model,
    d_ff), as :class:`~pyxis_nb.model.Qwen3MLP` keeps them.

    See Also
    --------
    transformers.models.gemma3.modeling_gemma3.Gemma3MLP
    """

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Unchecked: ``x`` (B, T, d_model) -> (B, T, d_model)."""
        # (B, T, d_model) @ (d_model, 2 d_ff) -> gate, up: (B, T, d_ff) each
        gate_up = x @ self.gate_up_proj.T
        d_ff = gate_up.shape[-1] // 2
        gate, up = gate_up[..., :d_ff], gate_up[..., d_ff:]  # two views
        return (gelu_tanh(gate) * up) @ self.down_proj.T

    __call__ = forward


class Gemma3DecoderLayer(Qwen3DecoderLayer):
    """One Gemma 3 block: four norms, two of them on the sublayers' outputs.

    ``h = h + post_attention_layernorm(self_attn(input_layernorm(h)))``, then
    ``h = h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))``.
    ``self_attn``: a ``Gemma3Attention``; ``mlp``: a ``Gemma3MLP``;
    ``input_layernorm``, ``post_attention_layernorm``,
    ``pre_feedforward_layernorm``, ``post_feedforward_layernorm``:
    ``Gemma3RMSNorm``; ``layer_idx``: its cache entry.

    See Also
    --------
    transformers.models.gemma3.modeling_gemma3.Gemma3DecoderLayer
    """

    def __init__(self, self_attn, input_layernorm, mlp,
                 post_attention_layernorm, pre_feedforward_layernorm,
                 post_feedforward_layernorm, *, layer_idx: int = 0):
        super().__init__(self_attn, input_layernorm, mlp,
                         post_attention_layernorm, layer_idx=layer_idx)
        self.pre_feedforward_layernorm = pre_feedforward_layernorm
        self.post_feedforward_layernorm = post_feedforward_layernorm

    def forward(self, hidden_states, attention_mask, position_embeddings, *,
                cache=None, is_causal=False, head_mask=None,
                rope_layout="half", heads_hook=None):
        """Unchecked: (B, T, d_model) -> same, and the attention weights.

        ``hidden_states``, ``attention_mask``, ``position_embeddings``,
        ``cache``, ``is_causal``, ``head_mask``, ``rope_layout``,
        ``heads_hook``: as :meth:`Qwen3DecoderLayer.forward` takes them."""
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, attn_weights = self.self_attn.attend(
            hidden_states, attention_mask, position_embeddings, cache=cache,
            is_causal=is_causal, head_mask=head_mask,
            rope_layout=rope_layout, hook=heads_hook)
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.pre_feedforward_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = self.post_feedforward_layernorm(hidden_states)
        return residual + hidden_states, attn_weights

    __call__ = forward


def state_shapes(config: Gemma3TextConfig) -> dict:
    """Every tensor name of a Gemma 3 checkpoint of ``config``, its shape
    (HF's names; ``lm_head.weight`` listed, though tied)."""
    shapes, d = qwen3_state_shapes(config, True), config.hidden_size
    for i in range(config.num_hidden_layers):
        p = f"model.layers.{i}."
        shapes |= {p + "pre_feedforward_layernorm.weight": (d,),
                   p + "post_feedforward_layernorm.weight": (d,)}
    return shapes


# ----------------------------------------------------------- the GGUF file
#: llama.cpp's name of a layer's tensor -> Hugging Face's
GGUF_NAMES = {
    "attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "post_attention_norm": "post_attention_layernorm",
    "ffn_norm": "pre_feedforward_layernorm",
    "post_ffw_norm": "post_feedforward_layernorm", "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def _hf_name(name: str) -> str:
    """``blk.3.ffn_norm.weight`` -> ``model.layers.3.pre_feedforward_layernorm
    .weight``; a name it does not know is returned as it is."""
    top = {"token_embd.weight": "model.embed_tokens.weight",
           "output_norm.weight": "model.norm.weight"}
    parts = name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[2] in GGUF_NAMES:
        return f"model.layers.{parts[1]}.{GGUF_NAMES[parts[2]]}.weight"
    return top.get(name, name)


def _gemma3_config(fields: dict, name: str) -> Gemma3TextConfig:
    """The config transformers builds from a gemma3 GGUF's metadata."""
    def key(k, default=None):
        value = fields.get(f"gemma3.{k}", default)
        check_needs(value is not None, name, f"metadata key gemma3.{k}",
                    "a decoder's size is not optional")
        return value

    check_config_value(name, "gemma3.rope.scaling.type", fields.get(
        "gemma3.rope.scaling.type", "none"), ("none",),
        "RoPE scaling is not implemented")
    d_head = key("attention.key_length", 256)
    check_config_value(name, "gemma3.attention.value_length", fields.get(
        "gemma3.attention.value_length", d_head), (d_head,),
        f"it must equal head_dim {d_head}")
    H, L = key("attention.head_count", 8), key("block_count")
    tokens = fields.get("tokenizer.ggml.tokens")
    vocab = fields.get("gemma3.vocab_size") or (len(tokens) if tokens
                                                else None)
    check_needs(vocab is not None, name, "gemma3.vocab_size or "
                "tokenizer.ggml.tokens", "the vocabulary's size")
    config = Gemma3TextConfig(
        hidden_size=key("embedding_length"), num_attention_heads=H,
        num_key_value_heads=key("attention.head_count_kv", H),
        head_dim=d_head, num_hidden_layers=L,
        rope_theta=key("rope.freq_base", 1_000_000.0),
        rms_norm_eps=key("attention.layer_norm_rms_epsilon", 1e-6),
        intermediate_size=key("feed_forward_length"),
        vocab_size=vocab,
        max_position_embeddings=key("context_length", 131_072),
        # HF's default: every sixth layer full, the others sliding
        layer_types=tuple("full_attention" if (i + 1) % 6 == 0
                          else "sliding_attention" for i in range(L)),
        sliding_window=key("attention.sliding_window", 4096))
    check_model_config(config)
    return config


def read_gemma3_gguf(path, *, dtype=np.float32):
    """A Gemma 3 GGUF file: (config, generation config, state dict).

    Everything is checked before a weight is read (the file, its
    architecture, its metadata, every tensor's name, shape and ggml type);
    then each tensor is dequantized (``gguf.quants.dequantize``) to
    ``dtype``, under Hugging Face's names.

    Parameters
    ----------
    path : str or os.PathLike, a GGUF file
    dtype : numpy float dtype

    See Also
    --------
    transformers.modeling_gguf_pytorch_utils.load_gguf_checkpoint
    """
    dtype = check_float_dtype("dtype", dtype)
    file = pathlib.Path(path)
    check_found(file.is_file(), f"path {str(path)!r} is not a file: expected "
                "a GGUF file" + (f"; {GEMMA3_FETCH_HINT}"
                                 if file.name == GEMMA3_GGUF else ""))
    fields = gguf_metadata(file)  # a ValueError for a truncated file
    check_config_value(file.name, "general.architecture",
                       fields.get("general.architecture"), ("gemma3",),
                       "Gemma3ForCausalLM reads gemma3 files")
    config = _gemma3_config(fields, file.name)
    types = gguf_tensor_types(file)  # {name: (ggml type, shape)}
    hf = {n: _hf_name(n) for n in types}
    want = state_shapes(config)
    check_state_shapes(file.name, {hf[n]: shape for n, (_, shape)
                                   in types.items()}, want,
                       ("lm_head.weight",), against="its metadata")
    for n, (qtype, _) in types.items():
        check_choice(f"{n} in {file.name}: ggml type", qtype,
                     dequantizable_types())
    state_dict = {}
    for n, (qtype, shape) in types.items():  # all checked: now read
        data = gguf_tensor_data(file, n)
        if n.endswith("norm.weight"):  # llama.cpp stored 1 + w (its
            w = dequantized(data, qtype, shape) - np.float32(1)  # norm_shift)
            state_dict[hf[n]] = w.astype(dtype)  # HF's w, as HF subtracts
        else:  # llama.cpp leaves gemma3's q/k rows in HF's order (its
            # Gemma3Model has no permute, and llama.cpp rotates gemma3 in
            # NeoX's halves); checked: the rows equal transformers' weights
            state_dict[hf[n]] = dequantized(data, qtype, shape, dtype,
                                            weight_order(shape))
    return config, generation_config(fields), state_dict


class Gemma3ForCausalLM(Qwen3ForCausalLM):
    """Gemma 3: the embedding times ``sqrt(d_model)``, ``L`` Gemma blocks
    (five sliding to one full), the final norm, the tied ``lm_head``.

    Build one with :meth:`from_pretrained` or :meth:`from_state_dict`; the
    constructor takes the parts as :class:`Qwen3ForCausalLM` does: ``config``
    (a :class:`Gemma3TextConfig`), ``embed_tokens``, ``layers``
    (:class:`Gemma3DecoderLayer`), ``norm``, ``lm_head`` (None: tied),
    ``generation_config``. Each kind of
    layer rotates with its own RoPE (its attention's ``inv_freq``); a new
    cache is a ``DynamicCache`` whose sliding layers keep their window only.

    See Also
    --------
    transformers.Gemma3ForCausalLM
    """

    model_type, qk_norm = "gemma3", True

    def __init__(self, config: Gemma3TextConfig, embed_tokens, layers, norm,
                 lm_head=None, *, generation_config: dict | None = None):
        super().__init__(config, embed_tokens, layers, norm, lm_head,
                         generation_config=generation_config)
        # HF: a float32 scalar, cast to the weights' dtype
        self.embed_scale = np.asarray(np.float32(config.hidden_size ** 0.5),
                                      embed_tokens.dtype)

    @classmethod
    def from_state_dict(cls, state_dict, config: Gemma3TextConfig, *,
                        generation_config: dict | None = None,
                        attn_implementation: str | None = None):
        """A model from arrays under Hugging Face's names, used as given.

        Parameters
        ----------
        state_dict : mapping of str to ndarray
            Every key of :func:`state_dict` but a tied ``lm_head.weight``,
            one float dtype; norms zero-centred, as HF stores them.
        config : Gemma3TextConfig
        generation_config : dict, optional
        attn_implementation : {"flex_attention", "eager"}, optional
        """
        c = config if attn_implementation is None else replace(
            config, _attn_implementation=check_attn_implementation(
                attn_implementation))
        check_config_value("config", "layer_types", len(c.layer_types),
                           (c.num_hidden_layers,), "one a layer")
        check_state_shapes("state_dict", {k: np.shape(v) for k, v in
                                          state_dict.items()},
                           state_shapes(c), ("lm_head.weight",))
        w = {k: np.asarray(v) for k, v in state_dict.items()}
        check_float_dtype("state_dict's dtype", check_same_dtype(**w))
        eps, layers = c.rms_norm_eps, []
        for i in range(c.num_hidden_layers):
            p = f"model.layers.{i}."
            attn = Gemma3Attention(c, i, c._attn_implementation)
            attn.load({k.removeprefix(p + "self_attn."): v for k, v in
                       w.items() if k.startswith(p + "self_attn.")})
            mlp = Gemma3MLP(*[w[f"{p}mlp.{n}_proj.weight"]
                              for n in ("gate", "up", "down")])
            norms = [Gemma3RMSNorm(w[f"{p}{n}_layernorm.weight"], eps)
                     for n in ("input", "post_attention", "pre_feedforward",
                               "post_feedforward")]
            layers.append(Gemma3DecoderLayer(attn, norms[0], mlp, *norms[1:],
                                             layer_idx=i))
        return cls(c, w["model.embed_tokens.weight"], layers,
                   Gemma3RMSNorm(w["model.norm.weight"], eps),
                   generation_config=generation_config)

    @classmethod
    def from_pretrained(cls, path, *, gguf_file=None, dtype=np.float32,
                        attn_implementation: str | None = None):
        """Load a Gemma 3 GGUF file (:func:`read_gemma3_gguf`).

        Parameters
        ----------
        path : str or os.PathLike, the folder (``px.fetch_gemma3()``)
        gguf_file : str, the file in it; default :data:`GEMMA3_GGUF`
        dtype : numpy float dtype, default float32
        attn_implementation : {"flex_attention", "eager"}, optional

        See Also
        --------
        transformers.AutoModelForCausalLM.from_pretrained
        """
        if attn_implementation is not None:
            check_attn_implementation(attn_implementation)
        config, generation, weights = read_gemma3_gguf(
            pathlib.Path(path) / (gguf_file or GEMMA3_GGUF), dtype=dtype)
        return cls.from_state_dict(weights, config,
                                   generation_config=generation,
                                   attn_implementation=attn_implementation)

    def state_dict(self) -> dict:
        """The arrays under Hugging Face's names (no ``lm_head``: tied)."""
        out = {"model.embed_tokens.weight": self.embed_tokens,
               "model.norm.weight": self.norm.weight}
        for i, layer in enumerate(self.layers):
            p = f"model.layers.{i}."
            a = layer.self_attn
            out |= {f"{p}self_attn.{n}_proj.weight": getattr(a, f"{n}_proj")
                    for n in "qkvo"}
            out |= {f"{p}self_attn.{n}.weight": getattr(a, n) - 1
                    for n in ("q_norm", "k_norm")}
            out |= {f"{p}{n}_layernorm.weight": getattr(
                layer, f"{n}_layernorm").weight for n in (
                "input", "post_attention", "pre_feedforward",
                "post_feedforward")}
            out |= {f"{p}mlp.{n}.weight": getattr(layer.mlp, n)
                    for n in ("gate_proj", "up_proj", "down_proj")}
        return out

    def rope_by_type(self) -> dict:
        """``{layer type: (inv_freq, attention_scaling)}`` of the layers'
        own attentions: base 10,000 for sliding, ``rope_theta`` for full."""
        return {layer.layer_type: (layer.self_attn.inv_freq,
                                   layer.self_attn.attention_scaling)
                for layer in self.layers}

    def new_cache(self, max_cache_len: int = 0, batch_size: int = 1):
        """An empty ``DynamicCache`` of the layers' types (a sliding layer
        keeps ``sliding_window - 1`` tokens); ``max_cache_len`` and
        ``batch_size`` are unused: it grows."""
        return DynamicCache(self.config)

    def forward(self, input_ids, **kwargs):
        """:meth:`Qwen3ForCausalLM.forward` (``input_ids`` and ``kwargs``
        as it takes them), the logits then capped at
        ``final_logit_softcapping`` if the config sets it."""
        out = super().forward(input_ids, **kwargs)
        cap = self.config.final_logit_softcapping
        if cap is None:
            return out
        return replace(out, logits=cap * np.tanh(out.logits / cap))

    __call__ = forward
