"""A tiny random decoder that generates greedily, with and without a KV cache.

Shape legend:
    B        batch
    T        positions fed to one forward call (the whole sequence without
             a cache; a prompt chunk, or 1 when decoding, with one)
    S        positions the new queries attend over (cache + T)
    d_model  hidden_size
    V        vocab_size
    L        num_hidden_layers

``generate`` takes a prompt of ``P`` positions (left padding included) and
adds ``N = max_new_tokens``.

The model is Qwen3's skeleton without the MLPs: embed the ids; in each layer
add ``attention(rms_norm(h))`` to the residual stream ``h``; a final
``rms_norm``; ``lm_head``. The attention layers are complete Qwen3 layers
(q/k norms, RoPE, GQA). The weights are seeded random numbers, so the tokens
it produces mean nothing; what the book measures is that the cache (and
left padding) changes the cost of producing them and nothing else.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_01_mask, check_bool, check_int, check_positive_int
from .kv_cache import KVCache
from .multihead import attention_inputs
from .norms import rms_norm_core
from .qwen3 import ModelConfig, random_attention
from .rope import rotary_cos_sin

__all__ = ["TinyDecoder", "decode_step_flops"]


class TinyDecoder:
    """Embedding, ``L`` Qwen3 attention layers with residuals and RMSNorm.

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
        RoPE base (a config-level name, as ``Qwen3Config``'s).
    max_position_embeddings : int, default 4096
        The longest sequence ``generate`` accepts.
    seed : int, default 0
    dtype : numpy float dtype, default float64

    Attributes
    ----------
    embed_tokens, lm_head : ndarray, shape (V, d_model)
    layers : list of MultiHeadAttention
        ``random_attention(..., qk_norm=True, theta=rope_theta)``.
    config : ModelConfig
        The sizes, with ``intermediate_size=0`` (no MLP).

    See Also
    --------
    transformers.Qwen3ForCausalLM : the real model (MLPs, trained weights).
    """

    def __init__(self, vocab_size: int = 64, hidden_size: int = 32,
                 num_hidden_layers: int = 2, num_attention_heads: int = 4,
                 num_key_value_heads: int = 2, head_dim: int = 8, *,
                 rope_theta: float = 10_000.0,
                 max_position_embeddings: int = 4096,
                 seed: int = 0, dtype=np.float64):
        V = check_positive_int("vocab_size", vocab_size)
        d_model = check_positive_int("hidden_size", hidden_size)
        L = check_positive_int("num_hidden_layers", num_hidden_layers)
        self.max_position_embeddings = check_positive_int(
            "max_position_embeddings", max_position_embeddings)
        rng = np.random.default_rng(seed)
        self.embed_tokens = rng.standard_normal((V, d_model)).astype(dtype)
        self.layers = [random_attention(
            d_model, num_attention_heads, num_key_value_heads, head_dim,
            seed=seed + 1 + i, dtype=dtype, qk_norm=True, theta=rope_theta)
            for i in range(L)]
        lm_head = rng.standard_normal((V, d_model)) / np.sqrt(d_model)
        self.lm_head = lm_head.astype(dtype)
        self.norm_weight = np.ones(d_model, dtype=dtype)  # RMSNorm gains: 1
        first = self.layers[0]
        self.config = ModelConfig(
            hidden_size=d_model, num_attention_heads=first.num_attention_heads,
            num_key_value_heads=first.num_key_value_heads,
            head_dim=first.head_dim, num_hidden_layers=L,
            rope_theta=first.theta, rms_norm_eps=first.rms_norm_eps,
            intermediate_size=0, vocab_size=V,
            max_position_embeddings=self.max_position_embeddings)

    @property
    def vocab_size(self) -> int:
        return self.embed_tokens.shape[0]

    @property
    def dtype(self):
        return self.embed_tokens.dtype

    def new_cache(self, max_seq_len: int, batch_size: int = 1) -> KVCache:
        """An empty ``KVCache`` that fits this model and its dtype."""
        c = self.config
        return KVCache(c.num_hidden_layers, batch_size, c.num_key_value_heads,
                       c.head_dim, max_seq_len, dtype=self.dtype)

    def _check_ids(self, input_ids) -> np.ndarray:
        ids = np.asarray(input_ids)
        if ids.ndim == 1:
            ids = ids[None]  # (T,) -> (1, T)
        if (not np.issubdtype(ids.dtype, np.integer) or ids.ndim != 2
                or ids.shape[1] == 0):
            raise ValueError(
                "input_ids must be integers of shape (B, T) or (T,) with "
                f"T >= 1, got shape {np.shape(input_ids)} and dtype "
                f"{ids.dtype}")
        if ids.min() < 0 or ids.max() >= self.vocab_size:
            raise ValueError(
                f"input_ids must lie in 0 .. {self.vocab_size - 1}, "
                f"got {ids.min()} .. {ids.max()}")
        return ids

    def forward(self, input_ids, *, attention_mask=None, position_ids=None,
                past_key_values: KVCache | None = None,
                logits_to_keep: int = 0) -> np.ndarray:
        """Next-token logits for ``T`` new tokens (after the cache, if given).

        Parameters
        ----------
        input_ids : array_like of int, shape (B, T) or (T,)
        attention_mask : ndarray, shape (B, S) or (B, 1, T, S), optional
            Passed to every layer: 1 = real token, over cache + new tokens.
        position_ids : ndarray of int, shape (T,) or (B, T), optional
            Default: derived from the mask, as in Hugging Face's generate.
        past_key_values : KVCache, optional
            Layer ``i`` appends at ``layer_idx=i``. HF 5.x calls it
            ``cache`` (``past_key_values`` until 5.40).
        logits_to_keep : int, default 0
            Logits for the last this many positions only (0: all).

        Returns
        -------
        ndarray, shape (B, T, V), or (B, logits_to_keep, V)

        See Also
        --------
        transformers.Qwen3ForCausalLM.forward
        """
        ids = self._check_ids(input_ids)  # (B, T)
        keep = check_int("logits_to_keep", logits_to_keep, low=0)
        (B, T), cached = ids.shape, past_key_values is not None
        past = past_key_values.get_seq_length(0) if cached else 0
        mask, pos = attention_inputs(
            attention_mask, position_ids, B, T, past,
            max_position_embeddings=self.max_position_embeddings)  # once
        rope = rotary_cos_sin(pos, self.config.head_dim, dtype=self.dtype,
                              theta=self.config.rope_theta)  # (B, T, d_head)
        h = self.embed_tokens[ids]  # (B, T) -> (B, T, d_model)
        for i, layer in enumerate(self.layers):
            normed = rms_norm_core(h, self.norm_weight)  # (B, T, d_model)
            h = h + layer.attend(normed, mask, rope, past_key_values, i)[0]
        h = rms_norm_core(h[:, -keep:] if keep else h, self.norm_weight)
        return h @ self.lm_head.T  # (B, T, d_model) @ (d_model, V)

    __call__ = forward

    def generate(self, prompt_ids, max_new_tokens: int, *, attention_mask=None,
                 use_cache: bool = True, eos_token_id: int | None = None,
                 prefill_chunk: int | None = None):
        """Greedy decoding (HF ``generate(do_sample=False)``): argmax, append.

        Prompt (B, P) or (P,), mask (B, P), 0 = left padding -> ids (B, P+N),
        logits (B, N, V). A cache prefills ``prefill_chunk`` tokens a call.
        """
        ids, mask, one, eos, chunk = self._generate_args(
            prompt_ids, max_new_tokens, attention_mask, use_cache,
            eos_token_id, prefill_chunk)  # (B, P) each
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
            new = np.where(done, eos, np.argmax(steps[-1], axis=-1))  # (B,)
            done |= new == eos  # a finished row repeats eos (-1: none)
            ids = np.concatenate([ids, new[:, None]], axis=1)  # (B, P + 1..)
            mask = np.pad(mask, ((0, 0), (0, 1)), constant_values=True)
        steps = np.stack(steps, axis=1)  # (B, N, V)
        return (ids[0], steps[0]) if one else (ids, steps)

    def _generate_args(self, prompt_ids, max_new_tokens, attention_mask,
                       use_cache, eos_token_id, prefill_chunk):
        """generate's door: ids, mask (B, P), 1-D?, eos (-1: none), chunk."""
        ids = np.asarray(prompt_ids)
        one = ids.ndim == 1
        ids = ids[None] if one else ids  # (P,) -> (1, P)
        if (ids.ndim != 2 or ids.size == 0
                or not np.issubdtype(ids.dtype, np.integer)):
            raise ValueError(
                "prompt_ids must be a non-empty (B, P) or (P,) array of token "
                f"ids, got shape {np.shape(prompt_ids)} and dtype {ids.dtype}")
        ids = self._check_ids(ids).astype(np.int64)
        B, P = ids.shape
        n_new = check_positive_int("max_new_tokens", max_new_tokens)
        use_cache = check_bool("use_cache", use_cache)
        if P + n_new > self.max_position_embeddings:
            raise ValueError(
                f"prompt ({P}) + max_new_tokens ({n_new}) = {P + n_new} "
                f"exceeds max_position_embeddings = "
                f"{self.max_position_embeddings}")
        mask = np.ones((B, P), bool) if attention_mask is None else \
            check_01_mask("attention_mask", attention_mask)
        if mask.shape != (B, P) or not mask.any(axis=-1).all():
            raise ValueError(
                f"attention_mask has shape {mask.shape}, expected (B, P) = "
                f"({B}, {P}) with a real token (1) in every row")
        eos = -1 if eos_token_id is None else check_int(
            "eos_token_id", eos_token_id, low=0, high=self.vocab_size - 1)
        if prefill_chunk is None:
            return ids, mask, one, eos, P
        if not use_cache:
            raise ValueError("prefill_chunk needs use_cache=True: without "
                             "a cache every step reruns the sequence")
        chunk = check_positive_int("prefill_chunk", prefill_chunk)
        return ids, mask, one, eos, chunk

    def __repr__(self) -> str:
        c = self.config
        return (f"TinyDecoder(vocab_size={c.vocab_size}, "
                f"hidden_size={c.hidden_size}, "
                f"num_hidden_layers={c.num_hidden_layers}, "
                f"num_attention_heads={c.num_attention_heads}, "
                f"num_key_value_heads={c.num_key_value_heads}, "
                f"head_dim={c.head_dim}, dtype={self.dtype})")


def decode_step_flops(config, context_len: int, *,
                      use_cache: bool = True) -> int:
    """FLOPs of one decode step, the matrix products only (2 a multiply-add).

    ``config``: a ModelConfig (``QWEN3_1_7B``, ``TinyDecoder().config``;
    ``intermediate_size`` 0: no MLP). The new token is the last of ``T =
    context_len`` positions. With the cache: 1 token's projections and 1
    query against T keys; without: T tokens' projections and the full
    (T, T) scores. Both: ``lm_head`` of the last position. Linear in T
    with the cache, quadratic without; norms, RoPE, softmax are left out.

    >>> import pyxis_nb as px
    >>> cached = decode_step_flops(px.QWEN3_1_7B, 2048)
    >>> round(decode_step_flops(px.QWEN3_1_7B, 2048, use_cache=False) / cached)
    1722
    """
    T = check_positive_int("context_len", context_len)
    d_model, H, H_kv, d_head = (config.hidden_size, config.num_attention_heads,
                                config.num_key_value_heads, config.head_dim)
    d_ff = config.intermediate_size
    per_token = (2 * d_model * (H + 2 * H_kv) * d_head  # q, k, v
                 + 2 * H * d_head * d_model + 6 * d_model * d_ff)  # o, MLP
    if check_bool("use_cache", use_cache):  # one query row against T keys
        per_layer = per_token + 4 * H * d_head * T
    else:  # every token; the full (T, T) scores
        per_layer = T * per_token + 4 * H * d_head * T * T
    L = config.num_hidden_layers
    return L * per_layer + 2 * d_model * config.vocab_size
