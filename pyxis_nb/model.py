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

The model is Qwen3's: embed the ids; in each of ``L`` pre-norm layers add
``self_attn(input_layernorm(h))`` to the residual stream ``h``, then
``mlp(post_attention_layernorm(h))``; a final ``norm``; ``lm_head`` (with
tied embeddings, the embedding matrix itself). The attention is the book's
``MultiHeadAttention``, the norms ``rms_norm``, the positions RoPE, the
cache ``KVCache``. With ``intermediate_size = 0`` the layers have no MLP:
that is the small random decoder of the KV-cache and padding chapters.

Checkpoints are read as transformers writes them: ``config.json`` and
``model.safetensors``, or shards listed in ``model.safetensors.index.json``.
bfloat16 is the top half of a float32, so it widens exactly with a shift.
``safetensors`` and ``tokenizers`` are imported only when a file is read.
"""

from __future__ import annotations

import functools
import json
import pathlib
from dataclasses import dataclass, replace

import numpy as np

from ._checks import (as_float_array, check_01_mask, check_bool,
                      check_callable, check_choice,
                      check_config_value, check_float_dtype, check_found,
                      check_heads, check_int, check_keys, check_model_config,
                      check_needs, check_number, check_positive_int,
                      check_same_dtype, check_shape, check_state_shapes,
                      check_theta, check_token_ids)
from .kv_cache import KVCache
from .multihead import (MultiHeadAttention, attention_inputs,
                        check_attn_implementation, check_output_attentions,
                        weight_shapes)
from .norms import rms_norm_core
from .gguf_file import read_gguf
from .qwen3 import ModelConfig, random_attention, state_shapes, weight_order
from .rope import (ROPE_KEYS, compute_rope_parameters, rope_frequencies,
                   rotary_cos_sin)
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
    "safetensors_header",
]

#: the interventions ``Qwen3ForCausalLM.forward(hooks=...)`` takes
HOOK_POINTS = ("heads", "residual")

#: The Qwen3 trained on Shakespeare that ships with the package (a folder
#: in Hugging Face's format; ``make real-model`` rebuilds it).
SHAKESPEARE_CHECKPOINT = (pathlib.Path(__file__).parent / "data"
                          / "qwen3_shakespeare")

#: ``transformers.Qwen3Config``'s defaults, for keys a config.json omits.
QWEN3_DEFAULTS = dict(
    vocab_size=151_936, hidden_size=4096, intermediate_size=22_016,
    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=None,
    head_dim=128, hidden_act="silu", max_position_embeddings=32_768,
    rms_norm_eps=1e-6, tie_word_embeddings=False, rope_theta=10_000.0,
    attention_bias=False, use_sliding_window=False)

#: ``transformers.LlamaConfig``'s defaults (``head_dim`` None: d_model / H).
LLAMA_DEFAULTS = dict(
    vocab_size=32_000, hidden_size=4096, intermediate_size=11_008,
    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=None,
    head_dim=None, hidden_act="silu", max_position_embeddings=2048,
    rms_norm_eps=1e-6, tie_word_embeddings=False, rope_theta=10_000.0,
    attention_bias=False, mlp_bias=False, use_sliding_window=False)

#: The RoPE scalings the models run (``rope_parameters["rope_type"]``);
#: "dynamic" is refused: its frequencies change with the sequence length.
ROPE_SCALINGS = ("linear", "yarn", "llama3")

#: config.json's model_type -> the defaults of its transformers config.
CONFIG_DEFAULTS = {"qwen3": QWEN3_DEFAULTS, "llama": LLAMA_DEFAULTS}

#: safetensors dtype -> how its bytes are read (BF16: as uint16, shifted)
SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2",
                      "BF16": "<u2"}


@dataclass(frozen=True)
class CausalLMOutputWithPast:
    """What ``forward`` returns, as Hugging Face's class of the name.

    Parameters
    ----------
    logits : ndarray, shape (B, T, V)
        Next-token scores before the softmax (``T``: the kept positions).
    cache : KVCache or None
        The cache the call appended to (``use_cache=True`` or a cache
        given), else None. HF: ``past_key_values``.
    attentions : ndarray, shape (L, B, H, T, S), or None
        With ``output_attentions=True``: every layer's attention weights;
        ``attentions[i]`` is layer ``i``'s (B, H, T, S), as HF's tuple.
    hidden_states : ndarray, shape (L + 1, B, T, d_model), or None
        With ``output_hidden_states=True``, as HF's tuple: the input of
        each layer (``hidden_states[0]``, the embeddings), then the final
        norm of the last layer's output.

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

    Parameters
    ----------
    sequences : ndarray of int, shape (B, P + N)
        The prompt and the new tokens.
    scores : tuple of ndarray (B, V), or None
        With ``output_scores``: each step's scores after the sampling
        settings (temperature, top-k, top-p); for greedy decoding, the
        logits.
    logits : tuple of ndarray (B, V), or None
        With ``output_logits``: each step's raw logits.

    See Also
    --------
    transformers.generation.GenerateDecoderOnlyOutput
    """

    sequences: np.ndarray
    scores: tuple | None = None
    logits: tuple | None = None


class Qwen3RMSNorm:
    """RMSNorm with a learned gain, as a layer: ``weight`` (d_model,).

    Parameters
    ----------
    weight : ndarray, shape (d_model,)
        The gain, used as given (not checked, not copied).
    eps : float, default 1e-6
        Added to the mean square (HF: ``variance_epsilon``).

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3RMSNorm
    rms_norm : the checked function.
    """

    def __init__(self, weight: np.ndarray, eps: float = 1e-6):
        self.weight, self.variance_epsilon = weight, eps

    def forward(self, hidden_states: np.ndarray) -> np.ndarray:
        """Unchecked: (..., d_model) -> (..., d_model), ``rms_norm_core``.

        Parameters
        ----------
        hidden_states : ndarray, shape (..., d_model)
            Of the dtype of ``weight``.

        Returns
        -------
        ndarray, shape (..., d_model)
        """
        return rms_norm_core(hidden_states, self.weight,
                             self.variance_epsilon)

    __call__ = forward


class Qwen3MLP:
    """SwiGLU: ``down_proj(silu(gate_proj(x)) * up_proj(x))``.

    The weights are torch's ``Linear`` layout (out, in), no biases, used as
    given (not checked).

    Parameters
    ----------
    gate_proj, up_proj : ndarray, shape (d_ff, d_model)
        Kept side by side in one array, ``gate_up_proj`` (2 d_ff, d_model),
        of which the attributes ``gate_proj`` and ``up_proj`` are views.
    down_proj : ndarray, shape (d_model, d_ff)

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3MLP
    """

    def __init__(self, gate_proj, up_proj, down_proj):
        # both input projections in one matrix (Phi-3's gate_up_proj): one
        # product for both, a single pass over their weights when decoding;
        # gate_proj and up_proj stay as views of its two halves
        # (laid out as gate_proj is: column-major from a checkpoint reader,
        # see weight_order)
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

        Parameters
        ----------
        x : ndarray, shape (B, T, d_model)
            Of the weights' dtype.

        Returns
        -------
        ndarray, shape (B, T, d_model)
        """
        # (B, T, d_model) @ (d_model, 2 d_ff) -> gate, up: (B, T, d_ff) each
        gate, up = np.split(x @ self.gate_up_proj.T, 2, axis=-1)
        h = silu_mul(gate, up)  # silu(gate) * up, (B, T, d_ff)
        return h @ self.down_proj.T  # (B, T, d_ff) @ (d_ff, d_model)

    __call__ = forward


def silu_mul(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Unchecked: ``silu(gate) * up``, written into ``up``, which it returns.

    ``silu(x) = x * sigmoid(x) = x / (1 + exp(-x))``, as torch computes it,
    in one more array of ``gate``'s shape instead of five.

    Parameters
    ----------
    gate, up : ndarray, one shape and dtype
        ``up`` is overwritten.

    Returns
    -------
    ndarray
        ``up``.
    """
    denom = np.negative(gate)
    with np.errstate(over="ignore"):  # exp(-x) = inf: silu(x) = -0.0
        np.exp(denom, out=denom)
    denom += 1
    up *= np.divide(gate, denom, out=denom)
    return up


class Qwen3DecoderLayer:
    """One pre-norm block: attention, then (if there is one) the MLP.

    Parameters
    ----------
    self_attn : MultiHeadAttention
    input_layernorm : Qwen3RMSNorm
    mlp : Qwen3MLP, optional
        None: an attention-only layer (no ``post_attention_layernorm``).
    post_attention_layernorm : Qwen3RMSNorm, optional
    layer_idx : int, default 0
        Where the layer keeps its keys and values in a ``KVCache``.

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3DecoderLayer
    """

    def __init__(self, self_attn, input_layernorm, mlp=None,
                 post_attention_layernorm=None, *, layer_idx: int = 0):
        self.self_attn, self.input_layernorm = self_attn, input_layernorm
        self.mlp, self.post_attention_layernorm = mlp, post_attention_layernorm
        self.layer_idx = layer_idx

    def forward(self, hidden_states, attention_mask, position_embeddings, *,
                cache=None, head_mask=None, rope_layout="half",
                heads_hook=None):
        """Unchecked (the model checks once): (B, T, d_model) -> same.

        Parameters
        ----------
        hidden_states : ndarray, shape (B, T, d_model)
        attention_mask : ndarray of bool or None
            The SDPA mask (True = may attend), as the model built it.
        position_embeddings : tuple of ndarray
            ``(cos, sin)``, each (B, T, d_head), built once by the model.
        cache : KVCache, optional
            Appended to at ``layer_idx``.
        head_mask : ndarray, shape (H,), optional
            Multiplies each head's attention weights.
        rope_layout : {"half", "interleaved"}
            Which pairs RoPE rotates (see ``Qwen3ForCausalLM.forward``).
        heads_hook : callable, optional
            ``heads_hook(heads) -> heads`` on the heads' outputs (B, H, T,
            d_head) before ``o_proj`` (``Qwen3ForCausalLM.forward``'s
            ``hooks``).

        Returns
        -------
        hidden_states : ndarray, shape (B, T, d_model)
        attn_weights : ndarray, shape (B, H, T, S), or None
            None from the ``"flex_attention"`` kernel.

        See Also
        --------
        transformers.models.qwen3.modeling_qwen3.Qwen3DecoderLayer.forward
        """
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        # Self Attention
        hidden_states, attn_weights = self.self_attn.attend(
            hidden_states, attention_mask, position_embeddings, cache=cache,
            layer_idx=self.layer_idx, head_mask=head_mask,
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


def _check_context(name_a: str, a: int, name_b: str, b: int,
                   max_position_embeddings: int) -> None:
    """Raise if ``a + b`` positions pass ``max_position_embeddings``."""
    if a + b > max_position_embeddings:
        raise ValueError(
            f"{name_a} ({a}) + {name_b} ({b}) = {a + b} exceeds "
            f"max_position_embeddings = {max_position_embeddings}")


def _check_token_list(name: str, value, vocab_size: int) -> tuple[int, ...]:
    """None, an id or a list of ids in 0 .. vocab_size - 1, as a tuple."""
    values = [] if value is None else (
        list(value) if isinstance(value, (list, tuple)) else [value])
    return tuple(check_int(name, v, low=0, high=vocab_size - 1)
                 for v in values)


def _check_sampling(do_sample, temperature, top_k, top_p, seed) -> dict:
    """``generate``'s sampling arguments, checked (HF's names and ranges)."""
    check_bool("do_sample", do_sample)
    check_number("temperature", temperature, above=0)
    if top_k is not None:
        check_positive_int("top_k", top_k)
    if top_p is not None and not 0 < check_number("top_p", top_p,
                                                  above=0) <= 1:
        raise ValueError(f"top_p must be a number in (0, 1], got {top_p!r}")
    if seed is not None:
        check_int("seed", seed, low=0)
    return dict(temperature=float(temperature), top_k=top_k, top_p=top_p,
                seed=seed)








class Qwen3ForCausalLM:
    """Qwen3: embedding, ``L`` decoder layers, final norm, ``lm_head``.

    Build one with :meth:`from_pretrained` (a checkpoint folder),
    :meth:`from_state_dict` (arrays under the checkpoint's names) or
    :meth:`from_config` (seeded random weights); the constructor takes the
    parts as built, unchecked.

    Parameters
    ----------
    config : ModelConfig
        ``intermediate_size`` 0: layers without MLP.
    embed_tokens : ndarray, shape (V, d_model)
    layers : sequence of Qwen3DecoderLayer
        ``L`` of them, layer ``i`` with ``layer_idx = i``.
    norm : Qwen3RMSNorm
        The final norm.
    lm_head : ndarray, shape (V, d_model), optional
        None: ``embed_tokens`` itself (``tie_word_embeddings``).
    generation_config : dict, optional
        ``generation_config.json`` (``eos_token_id``, ...); default {}.

    Attributes
    ----------
    inv_freq : ndarray of float64, shape (d_head/2,)
        RoPE's frequencies, computed once from ``config`` (its
        ``rope_parameters``: YaRN, llama3, linear; else ``rope_theta``),
        as HF's ``model.rotary_emb.inv_freq``.
    attention_scaling : float
        The factor on RoPE's cos and sin (YaRN's; else 1.0), as HF's
        ``model.rotary_emb.attention_scaling``.

    See Also
    --------
    transformers.Qwen3ForCausalLM
    """

    #: config.json's model_type (GGUF: general.architecture); q/k RMSNorm
    model_type, qk_norm = "qwen3", True

    def __init__(self, config: ModelConfig, embed_tokens, layers, norm,
                 lm_head=None, *, generation_config: dict | None = None):
        self.config, self.embed_tokens, self.norm = config, embed_tokens, norm
        self.layers = list(layers)
        self.lm_head = embed_tokens if lm_head is None else lm_head
        self.generation_config = dict(generation_config or {})
        self.inv_freq, self.attention_scaling = _rope_init(config)

    # ------------------------------------------------------------- building
    @classmethod
    def from_config(cls, config: ModelConfig, *, seed: int = 0,
                    dtype=np.float64, tie_word_embeddings: bool = False,
                    attn_implementation: str | None = None):
        """Seeded random weights of ``config``'s shapes (norm gains 1).

        Drawn in order from ``default_rng(seed)``: ``embed_tokens``
        (standard normal), ``lm_head`` (std ``1/sqrt(d_model)``, unless
        tied), then each layer's MLP (std ``1/sqrt(in_features)``); layer
        ``i``'s attention is ``random_attention(..., seed=seed + 1 + i,
        qk_norm=True)``.

        Parameters
        ----------
        config : ModelConfig
            The sizes; ``intermediate_size`` 0: no MLP.
        seed : int, default 0
            >= 0.
        dtype : numpy float dtype, default float64
        tie_word_embeddings : bool, default False
            Use ``embed_tokens`` as ``lm_head``.
        attn_implementation : {"flex_attention", "eager"}, optional
            The kernel every layer runs; None: the config's
            (``config._attn_implementation``).

        Returns
        -------
        Qwen3ForCausalLM

        See Also
        --------
        transformers.Qwen3ForCausalLM : ``Qwen3ForCausalLM(config)`` draws
            random weights too.
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

        torch's ``load_state_dict(strict=True)``: every key, no other, each of
        its shape.

        Parameters
        ----------
        state_dict : mapping of str to ndarray
            ``model.embed_tokens.weight``,
            ``model.layers.{i}.self_attn.q_proj.weight``, ... to arrays of one
            float dtype.
        config : ModelConfig
            The sizes the arrays must have.
        tie_word_embeddings : bool, optional
            None: tied if there is no ``lm_head.weight``. If tied and there is
            one, it must equal ``model.embed_tokens.weight``.
        generation_config : dict, optional
            Kept as :attr:`generation_config` (``eos_token_id``, ...).
        attn_implementation : {"flex_attention", "eager"}, optional
            The kernel; None: the config's.

        Returns
        -------
        Qwen3ForCausalLM
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

        Reads ``config.json`` (and ``generation_config.json`` if there),
        then ``model.safetensors`` or the shards that
        ``model.safetensors.index.json`` lists. Every file, key, shape and
        config feature is checked before any weight is read.

        Parameters
        ----------
        path : str or os.PathLike
            The checkpoint folder, e.g. :data:`SHAKESPEARE_CHECKPOINT`.
        gguf_file : str, optional
            The name of a GGUF file in the folder, read instead
            (``read_gguf``: dequantized; Llama's q/k rows, which llama.cpp
            permuted, put back in Hugging Face's order).
        dtype : numpy float dtype, default float32
            bf16 / f16 / f32 / f64 (and quantized) weights become it.
        attn_implementation : {"flex_attention", "eager"}, optional
            The kernel, as transformers' argument of that name: None gives
            the tiled ``"flex_attention"``; ``"eager"`` returns the weights
            (``output_attentions``).

        Returns
        -------
        Qwen3ForCausalLM (or the subclass it is called on)

        Raises
        ------
        FileNotFoundError
            No such folder, no config.json, no weights, a missing shard.
        ValueError
            Another architecture, a config feature not implemented here,
            a corrupt file, missing or unexpected keys, a shape that does
            not fit.

        See Also
        --------
        transformers.AutoModelForCausalLM.from_pretrained :
            ``(folder, gguf_file=...)`` too.
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
        folder = _checkpoint_folder(path)
        config, tied = read_hf_config(folder / "config.json", cls.model_type)
        dtype = check_float_dtype("dtype", dtype)
        files = _weight_files(folder)  # {file: its keys, or None}
        header = {}
        for file, keys in files.items():
            header |= _checked_header(file, keys)
        source = ", ".join(f.name for f in files)
        check_state_shapes(source, {k: s for k, (_, s) in header.items()},
                           state_shapes(config, tied, qk_norm=cls.qk_norm),
                           ("lm_head.weight",) if tied else ())
        arrays = {}
        for file in files:
            arrays |= _read_tensors(file, dtype)
        gen = folder / "generation_config.json"
        return cls.from_state_dict(
            arrays, config, tie_word_embeddings=tied,
            generation_config=json.loads(gen.read_text("utf-8"))
            if gen.is_file() else None,
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

        Parameters
        ----------
        attn_implementation : {"flex_attention", "eager"}
            Recorded in ``config._attn_implementation``, as transformers'
            method of this name does.
        """
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

    def new_cache(self, max_cache_len: int, batch_size: int = 1) -> KVCache:
        """An empty ``KVCache`` that fits this model and its dtype.

        Parameters
        ----------
        max_cache_len : int
            Positions it can hold (prompt and new tokens).
        batch_size : int, default 1

        Returns
        -------
        KVCache
            ``L`` layers of (B, H_kv, max_cache_len, d_head).
        """
        c = self.config
        return KVCache(c.num_hidden_layers, batch_size, c.num_key_value_heads,
                       c.head_dim, max_cache_len, dtype=self.dtype)

    # -------------------------------------------------------------- running
    def forward(self, input_ids, *, attention_mask=None, position_ids=None,
                cache: KVCache | None = None, use_cache: bool = False,
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
        cache : KVCache, optional
            Holds the keys and values of earlier calls; this call appends.
        use_cache : bool, default False
            Without ``cache``: start a new one of ``max_position_embeddings``
            positions and return it.
        logits_to_keep : int, default 0
            The last this many positions only (0: all).
        output_attentions : bool, default False
            Also return every layer's attention weights: needs the eager
            kernel (``attn_implementation="eager"``); the tiled one never
            holds (B, H, T, S) weights.
        output_hidden_states : bool, default False
            Also return the residual stream at the input of every layer.
        head_mask : array_like, shape (L, H), optional
            Multiplies head ``h`` of layer ``i``'s weights by
            ``head_mask[i, h]`` (0 switches it off), as older transformers
            models took it.
        interleaved_rope : bool, default False
            Rotate neighbouring pairs (2i, 2i + 1) instead of the half
            layout Qwen3 and Llama were trained with: the layout bug of the
            RoPE chapter, for demonstrations. Never set it to run a model.
        hooks : dict, optional
            Interventions, as TransformerLens's hook points: ``"heads"``:
            ``f(layer_idx, heads) -> heads`` on each layer's heads' outputs
            (B, H, T, d_head) before ``o_proj``; ``"residual"``:
            ``f(layer_idx, hidden_states) -> hidden_states`` on the residual
            stream at the input of each layer, and with ``layer_idx = L``
            before the final norm. Path patching and ablations go through
            them, so no chapter writes the layer loop again.

        Returns
        -------
        CausalLMOutputWithPast
            ``logits`` (B, T, V), ``cache``, ``attentions`` (L, B, H, T, S),
            ``hidden_states`` (L + 1, B, T, d_model).

        See Also
        --------
        transformers.Qwen3ForCausalLM.forward
        """
        ids, keep, cache, past, heads, rope_layout, hooks = self._forward_args(
            input_ids, logits_to_keep, use_cache, cache, output_attentions,
            output_hidden_states, head_mask, interleaved_rope,
            hooks)  # ids (B, T), heads (L, H) or None
        B, T = ids.shape
        mask, pos = attention_inputs(
            attention_mask, position_ids, B, T, past,
            max_position_embeddings=self.max_position_embeddings)  # once
        rope = rotary_cos_sin(
            pos, self.config.head_dim, dtype=self.dtype,
            inv_freq=self.inv_freq,
            attention_scaling=self.attention_scaling)  # (B, T, d_head)
        residual_hook, heads_hook = hooks.get("residual"), hooks.get("heads")
        h = self.embed_tokens[ids]  # (B, T) -> (B, T, d_model)
        attentions, hidden_states = [], []
        for i, layer in enumerate(self.layers):
            if residual_hook is not None:
                h = residual_hook(i, h)
            hidden_states.append(h)  # the layer's input
            h, w = layer(h, mask, rope, cache=cache,
                         head_mask=None if heads is None else heads[i],
                         rope_layout=rope_layout, heads_hook=None
                         if heads_hook is None else functools.partial(
                             heads_hook, i))  # (B, T, d_model)
            attentions.append(w)  # (B, H, T, S), or None
        if residual_hook is not None:
            h = residual_hook(len(self.layers), h)
        h = self.norm(h)
        hidden_states.append(h)
        logits = (h[:, -keep:] if keep else h) @ self.lm_head.T  # (B, T, V)
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
        keep = check_int("logits_to_keep", logits_to_keep, low=0)
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
            cache = self.new_cache(self.max_position_embeddings, len(ids))
        past = 0 if cache is None else cache.get_seq_length(0)
        _check_context("cached", past, "input_ids", ids.shape[1],
                       self.max_position_embeddings)
        heads = None
        if head_mask is not None:
            c = self.config
            shape = (c.num_hidden_layers, c.num_attention_heads)
            heads = as_float_array("head_mask", head_mask, ndim=2)
            check_shape("head_mask", heads, heads.shape == shape,
                        f"(L, H) = {shape}")
            heads = heads.astype(self.dtype)
        return ids, keep, cache, past, heads, layout, hooks

    def generate(self, input_ids, max_new_tokens, *, attention_mask=None,
                 use_cache=True, do_sample=False, temperature=1.0, top_k=None,
                 top_p=None, seed=None, eos_token_id=None,
                 prefill_chunk_size=None, output_scores=False,
                 output_logits=False, return_dict_in_generate=False):
        """Greedy decoding (argmax, append) or, with ``do_sample``, sampling.

        Prefill the prompt (through the cache, ``prefill_chunk_size``
        tokens a call), then one token at a time. A row that reaches
        ``eos_token_id`` repeats it from then on.

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
            Return a ``GenerateDecoderOnlyOutput`` instead of the ids.

        Returns
        -------
        ndarray of int, shape (B, P + N) (or (P + N,) for a 1-D prompt)
            Or ``GenerateDecoderOnlyOutput`` with ``return_dict_in_generate``.

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
        (B, P), n_new = ids.shape, check_positive_int("max_new_tokens",
                                                      max_new_tokens)
        use_cache = check_bool("use_cache", use_cache)
        for name, flag in [("output_scores", output_scores),
                           ("output_logits", output_logits),
                           ("return_dict_in_generate",
                            return_dict_in_generate)]:
            check_bool(name, flag)
        _check_context("prompt", P, "max_new_tokens", n_new,
                       self.max_position_embeddings)
        mask = np.ones((B, P), bool) if attention_mask is None else \
            check_01_mask("attention_mask", attention_mask)
        check_shape("attention_mask", mask, mask.shape == (B, P)
                    and mask.any(axis=-1).all(), f"(B, P) = ({B}, {P}) "
                    "with a real token (1) in every row")
        if eos_token_id is None:
            eos_token_id = self.generation_config.get("eos_token_id")
        eos = np.array(_check_token_list("eos_token_id", eos_token_id,
                                         self.vocab_size) or (-1,))
        sampling = _check_sampling(do_sample, temperature, top_k, top_p, seed)
        rng = np.random.default_rng(sampling.pop("seed"))
        choose = functools.partial(_choose, rng=rng,
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

    A ``Qwen3ForCausalLM`` (same ``forward``, ``generate``, ``new_cache``)
    built by ``Qwen3ForCausalLM.from_config(config, seed=seed,
    dtype=dtype)`` with ``intermediate_size=0`` and an untied ``lm_head``.

    Parameters
    ----------
    vocab_size : int, default 64
    hidden_size : int, default 32
    num_hidden_layers : int, default 2
    num_attention_heads : int, default 4
    num_key_value_heads : int, default 2
    head_dim : int, default 8
        Even (RoPE).
    rope_theta : float, default 10_000.0
    max_position_embeddings : int, default 4096
        The longest sequence the model accepts.
    seed : int, default 0
    dtype : numpy float dtype, default float64
    attn_implementation : {"flex_attention", "eager"}
        The kernel; "eager" to get the weights (``output_attentions``).

    See Also
    --------
    Qwen3ForCausalLM : the model, with MLPs and checkpoint loading.
    """

    # A constructor, not a second model: the book's one decoder with
    # intermediate_size = 0 (the KV-cache and padding chapters' model).

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


def _choose(logits, rng, sampling):
    """One step's scores and next ids: (B, V) -> (B, V), (B,).

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
    everything else (the layer, the forward pass, ``generate``) is shared.
    :meth:`from_pretrained` reads a Llama folder (config.json model_type
    ``llama``, e.g. SmolLM2's) or, with ``gguf_file``, a llama GGUF, whose
    q/k rows llama.cpp permuted for its interleaved RoPE: they are put
    back in Hugging Face's order (``permute_qk_proj``).

    Parameters
    ----------
    config : ModelConfig
    embed_tokens : ndarray, shape (V, d_model)
    layers : list of Qwen3DecoderLayer
        Their attention has no ``q_norm`` / ``k_norm``.
    norm : Qwen3RMSNorm
    lm_head : ndarray, shape (V, d_model), optional
        None: tied to ``embed_tokens``.
    generation_config : dict, optional

    See Also
    --------
    transformers.LlamaForCausalLM
    """

    model_type, qk_norm = "llama", False


# ------------------------------------------------------------ checkpoints
def _check_rope_type(where: str, rope_type) -> None:
    """A rope_type the models run: "default" or one of ROPE_SCALINGS."""
    if rope_type == "dynamic":
        raise ValueError(
            f"{where} is 'dynamic', which is not implemented: dynamic NTK "
            "scaling recomputes inv_freq from the sequence length as it "
            "grows past max_position_embeddings, and these models compute "
            "theirs once, at load")
    allowed = ("default", *ROPE_SCALINGS)
    if rope_type not in allowed:
        raise ValueError(
            f"{where} is {rope_type!r}, expected "
            f"{' or '.join(map(repr, allowed))} (the RoPE types "
            "implemented)")


def _rope_init(config: ModelConfig) -> tuple[np.ndarray, float]:
    """``inv_freq`` (d_head/2,) and the attention scaling of a config.

    ``config.rope_parameters`` None: plain RoPE of base ``rope_theta``.
    Otherwise its ``rope_type`` must be one the models run, its
    ``rope_theta`` the config's, with no ``partial_rotary_factor`` (the
    layers rotate whole heads); :func:`compute_rope_parameters` does the
    rest, with the config's ``max_position_embeddings``.
    """
    rope = config.rope_parameters
    if rope is None:
        return rope_frequencies(config.head_dim, config.rope_theta), 1.0
    if not isinstance(rope, dict):
        raise ValueError(
            "config.rope_parameters must be a dict or None, got "
            f"{type(rope).__name__} {rope!r}")
    _check_rope_type("config.rope_parameters['rope_type']",
                     rope.get("rope_type"))
    if rope.get("rope_theta") != config.rope_theta:
        raise ValueError(
            "config.rope_parameters['rope_theta'] is "
            f"{rope.get('rope_theta')!r}, expected config.rope_theta = "
            f"{config.rope_theta!r}")
    if rope.get("partial_rotary_factor", 1.0) != 1.0:
        raise ValueError(
            "config.rope_parameters['partial_rotary_factor'] is "
            f"{rope['partial_rotary_factor']!r}, expected 1.0 (the layers "
            "rotate whole heads)")
    return compute_rope_parameters(
        rope, config.head_dim,
        max_position_embeddings=config.max_position_embeddings)


def _check_json_file(file):
    """The parsed JSON of ``file`` (a config or an index), or a ValueError."""
    try:
        return json.loads(pathlib.Path(file).read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{pathlib.Path(file).name} is not a readable JSON "
                         f"file: {err}") from None


def read_hf_config(file, model_type: str = "qwen3"
                   ) -> tuple[ModelConfig, bool]:
    """A Qwen3 / Llama ``config.json``: its sizes, ``tie_word_embeddings``.

    ``model_type``: the one wanted. Missing keys take the defaults of
    ``transformers.Qwen3Config`` / ``LlamaConfig``. RoPE is read from the
    keys transformers 5 reads (:func:`_rope_parameters`): a "linear",
    "yarn" or "llama3" scaling is kept in ``rope_parameters``. What this
    code does not implement ("dynamic" RoPE, sliding windows, biases,
    another activation) raises instead of being ignored.
    """
    file = pathlib.Path(file)
    raw = _check_json_file(file)
    name = file.name
    check_config_value(name, "model_type", raw.get("model_type"),
                       (model_type,), f"this class runs {model_type} "
                       "checkpoints only")
    cfg = CONFIG_DEFAULTS[model_type] | raw
    rope = _rope_parameters(cfg, name)
    check_config_value(name, "use_sliding_window", cfg["use_sliding_window"],
                        (False,), "sliding-window attention is not "
                        "implemented")
    kinds = sorted(set(cfg.get("layer_types") or ["full_attention"]))
    check_config_value(name, "layer_types", kinds, (["full_attention"],),
                       "only full attention is implemented")
    check_config_value(name, "attention_bias", cfg["attention_bias"],
                       (False,), "attention biases are not implemented")
    check_config_value(name, "mlp_bias", cfg.get("mlp_bias", False),
                       (False,), "MLP biases are not implemented")
    check_config_value(name, "hidden_act", cfg["hidden_act"], ("silu",),
                       "the MLP is SwiGLU")
    H = cfg["num_attention_heads"]
    config = ModelConfig(
        hidden_size=cfg["hidden_size"], num_attention_heads=H,
        num_key_value_heads=cfg["num_key_value_heads"] or H,
        head_dim=cfg["head_dim"] or cfg["hidden_size"] // H,
        num_hidden_layers=cfg["num_hidden_layers"],
        rope_theta=rope["rope_theta"],
        rms_norm_eps=cfg["rms_norm_eps"],
        intermediate_size=cfg["intermediate_size"],
        vocab_size=cfg["vocab_size"],
        max_position_embeddings=cfg["max_position_embeddings"],
        rope_parameters=None if rope["rope_type"] == "default" else rope)
    check_model_config(config)
    _rope_init(config)  # the scaling's own keys and values
    return config, check_bool("tie_word_embeddings",
                              cfg["tie_word_embeddings"])


def _rope_parameters(cfg: dict, name: str) -> dict:
    """RoPE's parameters, from the keys transformers 5.24 reads for them.

    As ``convert_rope_params_to_dict`` and ``standardize_rope_params`` do:
    the legacy ``rope_scaling`` wins over ``rope_parameters``; the top-level
    ``rope_theta`` (and ``partial_rotary_factor``) fill in what that dict
    lacks; the type is ``rope_type``, else ``type``, else ``"default"``;
    a dict nested by layer type gives its ``"full_attention"`` entry;
    "yarn" and "llama3" take ``original_max_position_embeddings`` from the
    dict, else ``max_position_embeddings`` (a top-level key of that name,
    Phi3's place, is set after Qwen3Config and LlamaConfig standardize
    their RoPE: ignored). The default RoPE and the scalings of
    :data:`ROPE_SCALINGS` are implemented: "dynamic" or another type, or
    a key the type does not read (``partial_rotary_factor`` too), raises
    rather than being run differently. Returns a flat dict with
    ``rope_type`` (no legacy ``type``) and ``rope_theta``.
    """
    source = "rope_scaling" if cfg.get("rope_scaling") else "rope_parameters"
    rope = dict(cfg.get(source) or {})
    if "full_attention" in rope:  # nested by layer type: the full layers'
        source, rope = f"{source}['full_attention']", dict(
            rope["full_attention"] or {})
    rope.setdefault("rope_theta", cfg["rope_theta"])
    if cfg.get("partial_rotary_factor") is not None:
        rope.setdefault("partial_rotary_factor", cfg["partial_rotary_factor"])
    rope.setdefault("rope_type", rope.get("type", "default"))
    rope.pop("type", None)
    kind = rope["rope_type"]
    _check_rope_type(f"{name}: {source} rope type", kind)
    if kind in ("yarn", "llama3"):  # a top-level key: set too late to count
        rope.setdefault("original_max_position_embeddings",
                        cfg["max_position_embeddings"])
    required, optional = ROPE_KEYS[kind]
    extra = sorted(set(rope) - {"rope_type", "rope_theta", *required,
                                *optional})
    beyond = ("rope_theta" if kind == "default"
              else f"those of {kind} RoPE")
    check_config_value(name, f"{source} keys beyond {beyond}", extra,
                       ([],), "RoPE scaling is not implemented"
                       if kind == "default" else "the layers rotate whole "
                       "heads; nothing else is implemented")
    return rope


def _checkpoint_folder(path) -> pathlib.Path:
    folder = pathlib.Path(path)
    check_found((folder / "config.json").is_file(),
                 f"path {str(path)!r} is not a checkpoint folder: expected a "
                 "folder with config.json and model.safetensors")
    return folder


def _weight_files(folder: pathlib.Path) -> dict:
    """{file: the keys the index gives it, or None for one whole file}."""
    single, index = (folder / "model.safetensors",
                     folder / "model.safetensors.index.json")
    if single.is_file():
        return {single: None}
    check_found(index.is_file(), f"no weights in {folder}: expected "
                 "model.safetensors or model.safetensors.index.json, found "
                 f"{sorted(p.name for p in folder.iterdir())}")
    raw = _check_json_file(index)
    weight_map = raw.get("weight_map") if isinstance(raw, dict) else None
    check_needs(isinstance(weight_map, dict), index.name, "a weight_map",
                "a mapping of tensor names to shard files")
    files = {}
    for key, name in weight_map.items():
        files.setdefault(folder / name, set()).add(key)
    for file in files:
        check_found(file.is_file(), f"{index.name} lists {file.name}, "
                     f"which is not in {folder}")
    return files


def safetensors_header(file) -> dict:
    """The tensors of a safetensors file: ``{name: (dtype, shape)}``.

    Reads only the header (8 bytes of length, then JSON), with the
    ``safetensors`` library; dtypes as it names them (``"BF16"``, ...).

    Parameters
    ----------
    file : str or os.PathLike
        A ``.safetensors`` file.

    Returns
    -------
    dict of str to (str, tuple of int)

    Raises
    ------
    ValueError
        If the file is not a valid safetensors file.

    See Also
    --------
    safetensors.safe_open
    """
    from safetensors import SafetensorError, safe_open
    file = pathlib.Path(file)
    try:
        with safe_open(file, framework="np") as f:
            return {k: (f.get_slice(k).get_dtype(),
                        tuple(f.get_slice(k).get_shape())) for k in f.keys()}
    except SafetensorError as err:
        raise ValueError(  # reason: the library's error, naming the file
            f"{file.name} is not a valid safetensors file "
            f"(truncated or corrupt?): {err}") from None


def _checked_header(file: pathlib.Path, keys) -> dict:
    """The header of one file, its keys those the index gives it."""
    header = safetensors_header(file)
    if keys is not None:
        check_keys(f"{file.name} (by model.safetensors.index.json)",
                   header, keys, keys)
    for key, (dtype, _) in header.items():
        check_choice(f"{key} in {file.name}: dtype", dtype,
                     tuple(sorted(SAFETENSORS_DTYPES)))
    return header


def _read_tensors(file: pathlib.Path, dtype) -> dict:
    """Every tensor of a safetensors file, as ``dtype`` arrays of their own.

    The file was checked by :func:`safetensors_header` (the library). Its
    layout: 8 bytes giving the header's length ``n``, ``n`` bytes of JSON
    (each tensor's dtype, shape and ``data_offsets``), then the data. The
    data is mapped, not read, so each tensor is copied once: into its array,
    a matrix column-major (:func:`~pyxis_nb.qwen3.weight_order`).
    """
    with open(file, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    if not header:
        return {}
    data = np.memmap(file, np.uint8, mode="r", offset=8 + n)
    out = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        x = data[begin:end].view(SAFETENSORS_DTYPES[t["dtype"]])
        x, shape = x.reshape(t["shape"]), t["shape"]
        order = weight_order(shape)  # a matrix column-major
        if t["dtype"] == "BF16":  # bf16 = the top 16 bits of a float32
            wide = np.empty(shape, np.uint32, order)  # shifted in one pass,
            np.left_shift(x, 16, out=wide, dtype=np.uint32)  # no temporary
            x = wide.view(np.float32).astype(dtype, copy=False)
        else:  # a copy of its own, so the file can close
            x = x.astype(dtype, order)
        out[name] = x
    return out
