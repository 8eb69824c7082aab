"""A tiny random decoder that generates greedily, with and without a KV cache.

Shape legend:
    B       batch
    P       prompt length
    N       new tokens to generate
    T       positions fed to one forward call (the whole sequence without a
            cache; a prompt chunk, or 1 when decoding, with one)
    S       positions the new queries attend over (cache + T)
    C       hidden_size (``d_model`` in the book)
    V       vocab_size
    L       num_hidden_layers (not the book's ``L``, which counts new query positions)

The model is Qwen3's skeleton without the MLPs: embed the ids; in each layer
add ``attention(rms_norm(h))`` to the residual stream ``h``; a final
``rms_norm``; ``lm_head``. The attention layers are complete Qwen3 layers
(q/k norms, RoPE, GQA). The weights are seeded random numbers, so the tokens it
produces mean nothing; what the book measures is that the cache changes the
cost of producing them and nothing else.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_positive_int
from .kv_cache import KVCache
from .memory import ModelConfig
from .multihead import MultiHeadAttention
from .norms import rms_norm

__all__ = ["TinyDecoder", "decode_step_flops"]


class TinyDecoder:
    """Embedding, ``L`` Qwen3 attention layers with residuals and RMSNorm, an output projection.

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
        The longest sequence ``generate`` accepts.
    seed : int, default 0
    dtype : numpy float dtype, default float64

    Attributes
    ----------
    embed_tokens : ndarray, shape (V, C)
    layers : list of MultiHeadAttention
        ``MultiHeadAttention.random(..., qk_norm=True, rope_theta=rope_theta)``.
    lm_head : ndarray, shape (V, C)
        ``Linear`` layout (out, in).
    config : ModelConfig
        The sizes, with ``intermediate_size=0`` (no MLP), for :func:`decode_step_flops`.

    Raises
    ------
    ValueError
        Sizes that are not integers >= 1, or what ``MultiHeadAttention`` refuses.

    See Also
    --------
    transformers.Qwen3ForCausalLM : the real model (with MLPs, 28 layers, trained weights).
    TinyLM : the one-head toy of the padding chapter, without a cache.
    """

    def __init__(self, vocab_size: int = 64, hidden_size: int = 32, num_hidden_layers: int = 2,
                 num_attention_heads: int = 4, num_key_value_heads: int = 2, head_dim: int = 8,
                 *, rope_theta: float = 10_000.0, max_position_embeddings: int = 4096,
                 seed: int = 0, dtype=np.float64):
        V = check_positive_int("vocab_size", vocab_size)
        C = check_positive_int("hidden_size", hidden_size)
        L = check_positive_int("num_hidden_layers", num_hidden_layers)
        self.max_position_embeddings = check_positive_int("max_position_embeddings",
                                                          max_position_embeddings)
        rng = np.random.default_rng(seed)
        self.embed_tokens = rng.standard_normal((V, C)).astype(dtype)
        self.layers = [MultiHeadAttention.random(C, num_attention_heads, num_key_value_heads,
                                                 head_dim, seed=seed + 1 + i, dtype=dtype,
                                                 qk_norm=True, rope_theta=rope_theta)
                       for i in range(L)]
        self.lm_head = (rng.standard_normal((V, C)) / np.sqrt(C)).astype(dtype)
        self.norm_weight = np.ones(C, dtype=dtype)  # RMSNorm gains, left at 1
        first = self.layers[0]
        self.config = ModelConfig(
            hidden_size=C, num_attention_heads=first.num_attention_heads,
            num_key_value_heads=first.num_key_value_heads, head_dim=first.head_dim,
            num_hidden_layers=L, rope_theta=first.rope_theta, rms_norm_eps=first.rms_norm_eps,
            intermediate_size=0, vocab_size=V, max_position_embeddings=self.max_position_embeddings)

    @property
    def vocab_size(self) -> int:
        return self.embed_tokens.shape[0]

    @property
    def dtype(self):
        return self.embed_tokens.dtype

    def new_cache(self, max_seq_len: int, batch_size: int = 1) -> KVCache:
        """An empty ``KVCache`` that fits this model: one slot per layer, its dtype."""
        c = self.config
        return KVCache(c.num_hidden_layers, batch_size, c.num_key_value_heads, c.head_dim,
                       max_seq_len, dtype=self.dtype)

    def _check_ids(self, input_ids) -> np.ndarray:
        ids = np.asarray(input_ids)
        if ids.ndim == 1:
            ids = ids[None]  # (T,) -> (1, T)
        if not np.issubdtype(ids.dtype, np.integer) or ids.ndim != 2 or ids.shape[1] == 0:
            raise ValueError(f"input_ids must be integers of shape (B, T) or (T,) with T >= 1, "
                             f"got shape {np.shape(input_ids)} and dtype {ids.dtype}")
        if ids.min() < 0 or ids.max() >= self.vocab_size:
            raise ValueError(f"input_ids must lie in 0 .. {self.vocab_size - 1}, "
                             f"got {ids.min()} .. {ids.max()}")
        return ids

    def forward(self, input_ids, *, past_key_values: KVCache | None = None,
                logits_to_keep: int = 0) -> np.ndarray:
        """Next-token logits for ``T`` new tokens (after what the cache holds, if given).

        Parameters
        ----------
        input_ids : array_like of int, shape (B, T) or (T,)
        past_key_values : KVCache, optional
            Every layer ``i`` appends its keys and values at ``layer_idx=i``;
            positions continue from the cache length.
        logits_to_keep : int, default 0
            Compute logits only for the last this many positions (0: all).
            Generation needs 1.

        Returns
        -------
        ndarray, shape (B, T, V), or (B, logits_to_keep, V)

        Raises
        ------
        ValueError
            Non-integer ids, ids out of range, a negative ``logits_to_keep``, or
            what the cache refuses (overflow).

        See Also
        --------
        transformers.Qwen3ForCausalLM.forward : same ``past_key_values`` and ``logits_to_keep``.
        """
        ids = self._check_ids(input_ids)  # (B, T)
        if (isinstance(logits_to_keep, bool) or not isinstance(logits_to_keep, (int, np.integer))
                or logits_to_keep < 0):
            raise ValueError(f"logits_to_keep must be an integer >= 0 (0: all), got {logits_to_keep!r}")
        h = self.embed_tokens[ids]  # (B, T) -> (B, T, C)
        for i, layer in enumerate(self.layers):
            normed = rms_norm(h, self.norm_weight)  # (B, T, C)
            h = h + layer(normed, past_key_value=past_key_values, layer_idx=i)  # residual
        if logits_to_keep:
            h = h[:, -logits_to_keep:]  # (B, T, C) -> (B, k, C)
        h = rms_norm(h, self.norm_weight)
        return h @ self.lm_head.T  # (B, T, C) x (C, V) -> (B, T, V)

    __call__ = forward

    def generate(self, prompt_ids, max_new_tokens: int, *, use_cache: bool = True,
                 prefill_chunk: int | None = None):
        """Greedy generation: take the argmax, append it, repeat.

        Without a cache every step runs the whole sequence again. With one, the
        prompt is prefilled (in one call, or in calls of ``prefill_chunk``
        tokens) and then each step feeds only the newest token.

        Parameters
        ----------
        prompt_ids : sequence of int, shape (P,)
        max_new_tokens : int
            ``N >= 1``.
        use_cache : bool, default True
        prefill_chunk : int, optional
            Prefill ``prefill_chunk`` prompt tokens per call (needs the cache).

        Returns
        -------
        ids : ndarray of int64, shape (P + N,)
            The prompt followed by the generated tokens.
        step_logits : ndarray, shape (N, V)
            Row ``n`` is what step ``n`` chose ``ids[P + n]`` from.

        Raises
        ------
        ValueError
            An empty or non-integer prompt, ``max_new_tokens`` < 1, ``P + N``
            over ``max_position_embeddings``, or ``prefill_chunk`` without the cache.

        See Also
        --------
        greedy_generate : the same loop for ``TinyLM``, without a cache.
        transformers.GenerationMixin.generate : ``do_sample=False``, ``use_cache``.
        """
        ids = np.asarray(prompt_ids)
        if ids.ndim != 1 or ids.shape[0] == 0 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"prompt_ids must be a non-empty 1-D sequence of token ids, got "
                             f"shape {ids.shape} and dtype {ids.dtype}")
        n_new = check_positive_int("max_new_tokens", max_new_tokens)
        P, total = ids.shape[0], ids.shape[0] + n_new
        if total > self.max_position_embeddings:
            raise ValueError(f"prompt ({P}) + max_new_tokens ({n_new}) = {total} exceeds "
                             f"max_position_embeddings = {self.max_position_embeddings}")
        if prefill_chunk is not None:
            if not use_cache:
                raise ValueError("prefill_chunk needs use_cache=True: without a cache every "
                                 "step reruns the whole sequence")
            prefill_chunk = check_positive_int("prefill_chunk", prefill_chunk)
        tokens = [int(t) for t in ids]
        cache = self.new_cache(max_seq_len=total) if use_cache else None
        if use_cache:
            chunk = prefill_chunk or P
            for start in range(0, P, chunk):  # prefill: all prompt positions of a chunk at once
                logits = self.forward(ids[None, start:start + chunk], past_key_values=cache,
                                      logits_to_keep=1)  # (1, 1, V)
        step_logits = []
        for n in range(n_new):
            if not use_cache:  # recompute every position of the sequence
                logits = self.forward(np.array([tokens]), logits_to_keep=1)  # (1, 1, V)
            elif n > 0:  # decode: only the newest token goes in
                logits = self.forward(np.array([[tokens[-1]]]), past_key_values=cache,
                                      logits_to_keep=1)  # (1, 1, V)
            step_logits.append(logits[0, -1])  # (V,)
            tokens.append(int(np.argmax(logits[0, -1])))
        return np.array(tokens, dtype=np.int64), np.stack(step_logits)  # (P + N,), (N, V)

    def __repr__(self) -> str:
        c = self.config
        return (f"TinyDecoder(vocab_size={c.vocab_size}, hidden_size={c.hidden_size}, "
                f"num_hidden_layers={c.num_hidden_layers}, num_attention_heads="
                f"{c.num_attention_heads}, num_key_value_heads={c.num_key_value_heads}, "
                f"head_dim={c.head_dim}, dtype={self.dtype})")


def decode_step_flops(config, context_len: int, *, use_cache: bool = True) -> int:
    """Floating-point operations of one decode step, with or without the KV cache.

    Counts the matrix products only (2 FLOPs per multiply-add; norms, RoPE and
    the softmax are lower order). The new token is the last of ``T =
    context_len`` positions. With ``d_model`` = hidden_size, ``d_head`` =
    head_dim, ``H`` / ``H_kv`` query / key-value heads and ``d_ff`` =
    intermediate_size, per layer and per token the projections cost
    ``2 d_model (H d_head + 2 H_kv d_head) + 2 H d_head d_model`` and the MLP
    ``6 d_model d_ff`` (gate, up, down). Then:

    * with the cache: the projections of 1 token, and 1 query against ``T``
      keys, ``4 H d_head T`` (scores and weighted sum);
    * without: the projections of all ``T`` tokens, and the full ``(T, T)``
      score matrix as the matrix form computes it, ``4 H d_head T^2`` (the
      mask discards half of it).

    Both add the ``lm_head`` for the last position only, ``2 d_model V``.

    Parameters
    ----------
    config : ModelConfig
        Reads ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads``,
        ``head_dim``, ``num_hidden_layers``, ``intermediate_size`` (0: no MLP)
        and ``vocab_size``. ``QWEN3_1_7B`` or ``TinyDecoder(...).config``.
    context_len : int
        ``T >= 1``.
    use_cache : bool, default True

    Returns
    -------
    int
        Linear in ``T`` with the cache, quadratic without.

    Raises
    ------
    ValueError
        If ``context_len`` is not an integer >= 1.

    Examples
    --------
    >>> import pyxis_nb as px
    >>> cached = decode_step_flops(px.QWEN3_1_7B, 2048)
    >>> round(decode_step_flops(px.QWEN3_1_7B, 2048, use_cache=False) / cached)
    1722
    """
    T = check_positive_int("context_len", context_len)
    # C = d_model, Hkv = H_kv, D = d_head; intermediate_size = d_ff
    C, H, Hkv, D = (config.hidden_size, config.num_attention_heads,
                    config.num_key_value_heads, config.head_dim)
    per_token = 2 * C * (H * D + 2 * Hkv * D) + 2 * H * D * C + 6 * C * config.intermediate_size
    if use_cache:
        per_layer = per_token + 4 * H * D * T  # one token; one query row against T keys
    else:
        per_layer = T * per_token + 4 * H * D * T * T  # every token; the full (T, T) scores
    return config.num_hidden_layers * per_layer + 2 * C * config.vocab_size
