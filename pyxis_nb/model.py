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

import json
import pathlib
from typing import NamedTuple

import numpy as np

from ._checks import (check_01_mask, check_bool, check_choice,
                      check_config_value, check_context, check_float_dtype,
                      check_found, check_input_ids, check_int,
                      check_json_file, check_keys, check_model_config,
                      check_needs, check_positive_int, check_same_dtype,
                      check_sampling, check_shape, check_state_shapes,
                      check_token_list)
from .kv_cache import KVCache
from .multihead import MultiHeadAttention, attention_inputs, weight_shapes
from .norms import rms_norm_core
from .qwen3 import ModelConfig, random_attention
from .rope import rotary_cos_sin
from .softmax import softmax_core

__all__ = [
    "SHAKESPEARE_CHECKPOINT",
    "CausalLMOutputWithPast",
    "Qwen3RMSNorm",
    "Qwen3MLP",
    "Qwen3DecoderLayer",
    "Qwen3ForCausalLM",
    "load_tokenizer",
    "safetensors_header",
]

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

#: safetensors dtype -> how its bytes are read (BF16: as uint16, shifted)
SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2",
                      "BF16": "<u2"}


class CausalLMOutputWithPast(NamedTuple):
    """``forward``'s result with ``use_cache=True`` (HF's class of the name).

    A tuple, so ``logits, cache = model(ids, use_cache=True)`` works too.
    """

    logits: np.ndarray  # (B, T, V)
    past_key_values: KVCache


class Qwen3RMSNorm:
    """RMSNorm with a learned gain, as a layer: ``weight`` (d_model,).

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3RMSNorm
    rms_norm : the checked function.
    """

    def __init__(self, weight: np.ndarray, eps: float = 1e-6):
        self.weight, self.variance_epsilon = weight, eps

    def forward(self, hidden_states: np.ndarray) -> np.ndarray:
        """Unchecked: (..., d_model) -> (..., d_model), ``rms_norm_core``."""
        return rms_norm_core(hidden_states, self.weight,
                             self.variance_epsilon)

    __call__ = forward


class Qwen3MLP:
    """SwiGLU: ``down_proj(silu(gate_proj(x)) * up_proj(x))``.

    ``gate_proj``, ``up_proj`` (d_ff, d_model) and ``down_proj``
    (d_model, d_ff), torch's ``Linear`` layout (out, in), no biases.

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3MLP
    """

    def __init__(self, gate_proj, up_proj, down_proj):
        self.gate_proj, self.up_proj = gate_proj, up_proj
        self.down_proj = down_proj

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Unchecked: x (B, T, d_model) -> (B, T, d_model)."""
        gate = x @ self.gate_proj.T  # (B, T, d_model) @ (d_model, d_ff)
        up = x @ self.up_proj.T  # (B, T, d_model) @ (d_model, d_ff)
        with np.errstate(over="ignore"):  # exp(-x) = inf: silu(x) = -0.0
            silu = gate / (1 + np.exp(-gate))  # x * sigmoid(x), as torch
        return (silu * up) @ self.down_proj.T  # (B, T, d_ff) @ (d_ff, .)

    __call__ = forward


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

    def forward(self, hidden_states, attention_mask, position_embeddings,
                past_key_values=None):
        """Unchecked (the model checks once): (B, T, d_model) -> same.

        ``attention_mask`` and ``position_embeddings`` as
        ``MultiHeadAttention.attend`` takes them; the model builds them once
        for every layer. HF: ``Qwen3DecoderLayer.forward``.
        """
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        # Self Attention
        hidden_states, _ = self.self_attn.attend(
            hidden_states, attention_mask, position_embeddings,
            past_key_values, self.layer_idx)
        hidden_states = residual + hidden_states
        if self.mlp is None:  # an attention-only decoder
            return hidden_states
        # Fully Connected
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states

    __call__ = forward


class Qwen3ForCausalLM:
    """Qwen3: embedding, ``L`` decoder layers, final norm, ``lm_head``.

    Build one with :meth:`from_pretrained` (a checkpoint folder),
    :meth:`from_state_dict` (arrays under the checkpoint's names) or
    :meth:`from_config` (seeded random weights).

    Attributes
    ----------
    config : ModelConfig
        ``intermediate_size`` 0: layers without MLP.
    embed_tokens : ndarray, shape (V, d_model)
    layers : list of Qwen3DecoderLayer
    norm : Qwen3RMSNorm
    lm_head : ndarray, shape (V, d_model)
        ``embed_tokens`` itself when ``tie_word_embeddings``.
    generation_config : dict
        ``generation_config.json`` (``eos_token_id``, ...), or {}.

    See Also
    --------
    transformers.Qwen3ForCausalLM
    """

    def __init__(self, config: ModelConfig, embed_tokens, layers, norm,
                 lm_head=None, *, generation_config: dict | None = None):
        self.config, self.embed_tokens, self.norm = config, embed_tokens, norm
        self.layers = list(layers)
        self.lm_head = embed_tokens if lm_head is None else lm_head
        self.generation_config = dict(generation_config or {})

    # ------------------------------------------------------------- building
    @classmethod
    def from_config(cls, config: ModelConfig, *, seed: int = 0,
                    dtype=np.float64, tie_word_embeddings: bool = False):
        """Seeded random weights of ``config``'s shapes (norm gains 1).

        Drawn in order from ``default_rng(seed)``: ``embed_tokens``
        (standard normal), ``lm_head`` (std ``1/sqrt(d_model)``, unless
        tied), then each layer's MLP (std ``1/sqrt(in_features)``); layer
        ``i``'s attention is ``random_attention(..., seed=seed + 1 + i,
        qk_norm=True)``. ``intermediate_size`` 0: no MLP.
        """
        check_model_config(config)
        c, dtype = config, check_float_dtype("dtype", dtype)
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
                qk_norm=True, rms_norm_eps=c.rms_norm_eps, theta=c.rope_theta)
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
                        generation_config: dict | None = None):
        """A model from arrays under Hugging Face's names, used as given.

        ``state_dict`` maps ``model.embed_tokens.weight``,
        ``model.layers.{i}.self_attn.q_proj.weight``, ... to arrays of one
        float dtype (torch's ``load_state_dict(strict=True)``: every key,
        no other, each of its shape). ``tie_word_embeddings`` None: tied
        if there is no ``lm_head.weight``.
        """
        check_model_config(config)
        tied = ("lm_head.weight" not in state_dict
                if tie_word_embeddings is None
                else check_bool("tie_word_embeddings", tie_word_embeddings))
        check_state_shapes(
            "state_dict", {k: np.shape(v) for k, v in state_dict.items()},
            state_shapes(config, tied), ("lm_head.weight",) if tied else ())
        w = {k: np.asarray(v) for k, v in state_dict.items()}
        dtype = check_float_dtype("state_dict's dtype", check_same_dtype(**w))
        if tied and "lm_head.weight" in state_dict and not np.array_equal(
                state_dict["lm_head.weight"],
                state_dict["model.embed_tokens.weight"]):
            check_needs(False, "lm_head.weight", "to equal "
                        "model.embed_tokens.weight", "tie_word_embeddings "
                        "is true")
        c, layers = config, []
        for i in range(c.num_hidden_layers):
            p = f"model.layers.{i}."
            attn = MultiHeadAttention.from_state_dict(
                w, **c.attention_config(), prefix=p + "self_attn.",
                rms_norm_eps=c.rms_norm_eps, theta=c.rope_theta)
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
    def from_pretrained(cls, path, *, dtype=np.float32):
        """Load a Qwen3 checkpoint folder (as ``save_pretrained`` wrote it).

        Reads ``config.json`` (and ``generation_config.json`` if there),
        then ``model.safetensors`` or the shards that
        ``model.safetensors.index.json`` lists. Every file, key, shape and
        config feature is checked before any weight is read; bf16 / f16 /
        f32 / f64 weights are converted to ``dtype``.

        Raises
        ------
        FileNotFoundError
            No such folder, no config.json, no weights, a missing shard.
        ValueError
            Not Qwen3, a config feature not implemented here, a corrupt
            file, missing or unexpected keys, a shape that does not fit.

        See Also
        --------
        transformers.Qwen3ForCausalLM.from_pretrained
        """
        folder = _checkpoint_folder(path)
        config, tied = read_qwen3_config(folder / "config.json")
        dtype = check_float_dtype("dtype", dtype)
        files = _weight_files(folder)  # {file: its keys, or None}
        header = {}
        for file, keys in files.items():
            header |= _checked_header(file, keys)
        source = ", ".join(f.name for f in files)
        check_state_shapes(source, {k: s for k, (_, s) in header.items()},
                           state_shapes(config, tied),
                           ("lm_head.weight",) if tied else ())
        arrays = {}
        for file in files:
            arrays |= _read_tensors(file, dtype)
        gen = folder / "generation_config.json"
        return cls.from_state_dict(
            arrays, config, tie_word_embeddings=tied,
            generation_config=json.loads(gen.read_text("utf-8"))
            if gen.is_file() else None)

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

    def new_cache(self, max_seq_len: int, batch_size: int = 1) -> KVCache:
        """An empty ``KVCache`` that fits this model and its dtype."""
        c = self.config
        return KVCache(c.num_hidden_layers, batch_size, c.num_key_value_heads,
                       c.head_dim, max_seq_len, dtype=self.dtype)

    # -------------------------------------------------------------- running
    def forward(self, input_ids, *, attention_mask=None, position_ids=None,
                past_key_values: KVCache | None = None,
                use_cache: bool = False, logits_to_keep: int = 0):
        """Next-token logits (B, T, V) for ``T`` new tokens, after the cache.

        ``input_ids`` (B, T) or (T,); ``attention_mask`` (B, S), 1 = real,
        0 = left padding, over cache + new tokens (or 4-D, as HF's);
        ``position_ids`` default from the mask, as HF's generate sets them.
        ``use_cache``: return ``CausalLMOutputWithPast(logits, cache)``, the
        cache given or a new one of ``max_position_embeddings`` positions.
        ``logits_to_keep``: the last this many positions only (0: all).
        """
        ids, keep, cache, past = self._forward_args(
            input_ids, logits_to_keep, use_cache, past_key_values)  # (B, T)
        B, T = ids.shape
        mask, pos = attention_inputs(
            attention_mask, position_ids, B, T, past,
            max_position_embeddings=self.max_position_embeddings)  # once
        rope = rotary_cos_sin(pos, self.config.head_dim, dtype=self.dtype,
                              theta=self.config.rope_theta)  # (B, T, d_head)
        h = self.embed_tokens[ids]  # (B, T) -> (B, T, d_model)
        for layer in self.layers:
            h = layer(h, mask, rope, cache)  # (B, T, d_model)
        h = self.norm(h[:, -keep:] if keep else h)
        logits = h @ self.lm_head.T  # (B, T, d_model) @ (d_model, V)
        return CausalLMOutputWithPast(logits, cache) if use_cache else logits

    __call__ = forward

    def _forward_args(self, input_ids, logits_to_keep, use_cache, cache):
        """forward's door: ids (B, T), kept logits, the cache, its length."""
        ids = check_input_ids("input_ids", input_ids, self.vocab_size)
        keep = check_int("logits_to_keep", logits_to_keep, low=0)
        if check_bool("use_cache", use_cache) and cache is None:
            cache = self.new_cache(self.max_position_embeddings, len(ids))
        past = 0 if cache is None else cache.get_seq_length(0)
        check_context("cached", past, "input_ids", ids.shape[1],
                      self.max_position_embeddings)
        return ids, keep, cache, past

    def attention_weights(self, input_ids, *, attention_mask=None):
        """Every layer's attention weights, (L, B, H, T, T), for a model view.

        The forward pass of :meth:`forward` (no cache), which also hands
        back what each layer's ``self_attn`` attended to: row ``t`` of head
        ``h`` sums to 1 over the keys ``<= t`` (0 for padding keys). HF:
        ``model(input_ids, output_attentions=True).attentions``, stacked.
        """
        ids, _, _, _ = self._forward_args(input_ids, 0, False, None)
        (B, T), weights = ids.shape, []
        mask, pos = attention_inputs(attention_mask, None, B, T, 0)
        rope = rotary_cos_sin(pos, self.config.head_dim, dtype=self.dtype,
                              theta=self.config.rope_theta)  # (B, T, d_head)
        h = self.embed_tokens[ids]  # (B, T) -> (B, T, d_model)
        for layer in self.layers:  # the layer's input norm, then attention
            _, w = layer.self_attn.attend(layer.input_layernorm(h), mask, rope)
            weights.append(w)  # (B, H, T, T)
            h = layer(h, mask, rope)  # (B, T, d_model)
        return np.stack(weights)  # (L, B, H, T, T)

    def generate(self, input_ids, max_new_tokens, *, attention_mask=None,
                 use_cache=True, do_sample=False, temperature=1.0, top_k=None,
                 top_p=None, seed=None, eos_token_id=None, prefill_chunk=None):
        """Greedy decoding (argmax, append) or, with ``do_sample``, sampling.

        Prompt (B, P) or (P,), mask (B, P), 0 = left padding -> ids (B, P+N),
        logits (B, N, V). A cache prefills ``prefill_chunk`` tokens a call.
        A row ends at ``eos_token_id`` (default: the checkpoint's), repeated.
        """
        ids, mask, one, eos, chunk, pick = self._generate_args(
            input_ids, max_new_tokens, attention_mask, use_cache, eos_token_id,
            prefill_chunk, do_sample, temperature, top_k, top_p, seed)
        (B, P), N = ids.shape, max_new_tokens
        cache = self.new_cache(P + N, B) if use_cache else None
        step = dict(past_key_values=cache, logits_to_keep=1)
        for a in range(0, P, chunk):  # prefill (no cache: one chunk, P)
            logits = self.forward(ids[:, a:a + chunk],
                                  attention_mask=mask[:, :a + chunk], **step)
        done, steps = np.zeros(B, bool), []
        while len(steps) < N and not done.all():
            if steps:  # decode the newest token (no cache: all of them)
                logits = self.forward(ids[:, -1:] if use_cache else ids,
                                      attention_mask=mask, **step)
            steps.append(logits[:, -1])  # (B, V)
            new = np.where(done, eos[0], pick(steps[-1]))  # (B,)
            done |= (new[:, None] == eos).any(-1)  # then repeats eos[0]
            ids = np.concatenate([ids, new[:, None]], axis=1)  # (B, P + 1..)
            mask = np.pad(mask, ((0, 0), (0, 1)), constant_values=True)
        steps = np.stack(steps, axis=1)  # (B, N, V)
        return (ids[0], steps[0]) if one else (ids, steps)

    def _generate_args(self, input_ids, max_new_tokens, attention_mask,
                       use_cache, eos_token_id, prefill_chunk, do_sample,
                       temperature, top_k, top_p, seed):
        """generate's door: ids and mask (B, P), 1-D?, eos, chunk, chooser.

        ``eos`` is an array of ids, ``[-1]`` for none; ``chooser`` maps
        logits (B, V) to the next ids (B,).
        """
        one = np.ndim(input_ids) == 1
        ids = check_input_ids("input_ids", input_ids, self.vocab_size)
        (B, P), n_new = ids.shape, check_positive_int("max_new_tokens",
                                                      max_new_tokens)
        use_cache = check_bool("use_cache", use_cache)
        check_context("prompt", P, "max_new_tokens", n_new,
                      self.max_position_embeddings)
        mask = np.ones((B, P), bool) if attention_mask is None else \
            check_01_mask("attention_mask", attention_mask)
        check_shape("attention_mask", mask, mask.shape == (B, P)
                    and mask.any(axis=-1).all(), f"(B, P) = ({B}, {P}) "
                    "with a real token (1) in every row")
        if eos_token_id is None:
            eos_token_id = self.generation_config.get("eos_token_id")
        eos = np.array(check_token_list("eos_token_id", eos_token_id,
                                        self.vocab_size) or (-1,))
        sampling = check_sampling(do_sample, temperature, top_k, top_p, seed)
        rng = np.random.default_rng(sampling.pop("seed"))
        pick = ((lambda z: _sample(z, rng, **sampling)) if do_sample
                else (lambda z: np.argmax(z, axis=-1)))
        chunk = P if prefill_chunk is None else check_positive_int(
            "prefill_chunk", prefill_chunk)
        check_needs(prefill_chunk is None or use_cache, "prefill_chunk",
                    "use_cache=True", "without a cache every step reruns "
                    "the sequence")
        return ids.astype(np.int64), mask, one, eos, chunk, pick

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


def _sample(logits, rng, temperature, top_k, top_p):
    """One draw per row, after HF's warpers in HF's order: (B, V) -> (B,).

    Temperature, then top-k (ties kept), then top-p (drop the least likely
    tokens while they hold at most ``1 - top_p``; keep at least one).
    """
    z = logits.astype(np.float64) / temperature  # (B, V)
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
    return (cdf < u).sum(axis=-1)  # first token whose cdf reaches u


# ------------------------------------------------------------ checkpoints
def state_shapes(config: ModelConfig, tied: bool) -> dict:
    """Every tensor name of a Qwen3 checkpoint and its shape."""
    c = config
    d, d_ff = c.hidden_size, c.intermediate_size
    att = weight_shapes(**c.attention_config())
    shapes = {"model.embed_tokens.weight": (c.vocab_size, d)}
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        shapes |= {f"{p}self_attn.{n}.weight": att[n] for n in (
            "q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm")}
        shapes[p + "input_layernorm.weight"] = (d,)
        if d_ff:
            shapes |= {p + "post_attention_layernorm.weight": (d,),
                       p + "mlp.gate_proj.weight": (d_ff, d),
                       p + "mlp.up_proj.weight": (d_ff, d),
                       p + "mlp.down_proj.weight": (d, d_ff)}
    shapes["model.norm.weight"] = (d,)
    shapes["lm_head.weight"] = (c.vocab_size, d)  # optional when tied
    return shapes


def read_qwen3_config(file) -> tuple[ModelConfig, bool]:
    """A Qwen3 ``config.json``: its sizes, and ``tie_word_embeddings``.

    Missing keys take ``transformers.Qwen3Config``'s defaults. RoPE is
    read from the keys transformers 5 reads (:func:`_rope_parameters`). What
    this code does not implement (RoPE scaling, sliding windows, biases,
    another activation) raises instead of being ignored.
    """
    file = pathlib.Path(file)
    raw = check_json_file(file)
    name = file.name
    check_config_value(name, "model_type", raw.get("model_type"), ("qwen3",),
                       "this loader runs Qwen3 checkpoints only")
    cfg = QWEN3_DEFAULTS | raw
    rope = _rope_parameters(cfg, name)
    check_config_value(name, "use_sliding_window", cfg["use_sliding_window"],
                       (False,), "sliding-window attention is not "
                       "implemented")
    kinds = sorted(set(cfg.get("layer_types") or ["full_attention"]))
    check_config_value(name, "layer_types", kinds, (["full_attention"],),
                       "only full attention is implemented")
    check_config_value(name, "attention_bias", cfg["attention_bias"],
                       (False,), "attention biases are not implemented")
    check_config_value(name, "hidden_act", cfg["hidden_act"], ("silu",),
                       "the MLP is SwiGLU")
    H = cfg["num_attention_heads"]
    config = ModelConfig(
        hidden_size=cfg["hidden_size"], num_attention_heads=H,
        num_key_value_heads=cfg["num_key_value_heads"] or H,
        head_dim=cfg["head_dim"], num_hidden_layers=cfg["num_hidden_layers"],
        rope_theta=rope["rope_theta"],
        rms_norm_eps=cfg["rms_norm_eps"],
        intermediate_size=cfg["intermediate_size"],
        vocab_size=cfg["vocab_size"],
        max_position_embeddings=cfg["max_position_embeddings"])
    check_model_config(config)
    return config, check_bool("tie_word_embeddings",
                              cfg["tie_word_embeddings"])


def _rope_parameters(cfg: dict, name: str) -> dict:
    """RoPE's parameters, from the keys transformers 5.24 reads for them.

    As ``convert_rope_params_to_dict`` and ``standardize_rope_params`` do:
    the legacy ``rope_scaling`` wins over ``rope_parameters``; the top-level
    ``rope_theta`` (and ``partial_rotary_factor``) fill in what that dict
    lacks; the type is ``rope_type``, else ``type``, else ``"default"``;
    a dict nested by layer type gives its ``"full_attention"`` entry.
    Only the default RoPE is implemented: any other type, or any key
    beyond ``rope_theta``, raises rather than being run differently.
    """
    source = "rope_scaling" if cfg.get("rope_scaling") else "rope_parameters"
    rope = dict(cfg.get(source) or {})
    if "full_attention" in rope:  # nested by layer type: the full layers'
        source, rope = f"{source}['full_attention']", dict(
            rope["full_attention"] or {})
    rope.setdefault("rope_theta", cfg["rope_theta"])
    if cfg.get("partial_rotary_factor") is not None:
        rope.setdefault("partial_rotary_factor", cfg["partial_rotary_factor"])
    check_config_value(name, f"{source} rope type", rope.get(
        "rope_type", rope.get("type", "default")), ("default",),
        "RoPE scaling is not implemented; transformers would apply it")
    extra = sorted(set(rope) - {"rope_type", "type", "rope_theta"})
    check_config_value(name, f"{source} keys beyond rope_theta", extra,
                       ([],), "RoPE scaling is not implemented")
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
    raw = check_json_file(index)
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
    data is mapped, not read, so each tensor is copied once: into its array.
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
        if t["dtype"] == "BF16":  # bf16 = the top 16 bits of a float32
            wide = np.empty(x.shape, np.uint32)  # shifted in one pass,
            np.left_shift(x, 16, out=wide, dtype=np.uint32)  # no temporary
            x = wide.view(np.float32).astype(dtype, copy=False)
        else:  # a copy of its own, so the file can close
            x = x.astype(dtype)
        out[name] = x.reshape(t["shape"])
    return out


def load_tokenizer(path):
    """A checkpoint's ``tokenizer.json``, loaded with HF ``tokenizers``.

    ``path``: the checkpoint folder or the file. Returns a
    ``tokenizers.Tokenizer``: ``encode(text).ids`` / ``.tokens``,
    ``decode(ids)``.
    """
    from tokenizers import Tokenizer
    file = pathlib.Path(path)
    file = file / "tokenizer.json" if file.is_dir() else file
    check_found(file.is_file(), f"path {str(path)!r} has no tokenizer.json")
    return Tokenizer.from_file(str(file))
