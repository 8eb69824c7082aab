"""Checks for the exercises of "The KV cache: prefill and decode"
(book/kv_cache.ipynb)."""

from __future__ import annotations

import numpy as np

from ..attention import scaled_dot_product_attention
from ..masks import causal_mask
from ..memory import decode_step_flops, kv_cache_bytes
from ..qwen3 import QWEN3_1_7B, ModelConfig

# (num_hidden_layers, num_key_value_heads, head_dim, seq_len, dtype_bytes)
_CACHE_SIZES = [(28, 8, 128, 1, 2), (28, 8, 128, 8_192, 2),
                (2, 3, 16, 5, 4), (32, 1, 64, 100, 1)]


def cache_bytes(answer) -> str | None:
    """1. cache_bytes(layers, H_kv, d_head, seq_len, dtype_bytes)."""
    runs = [(size, answer(*size), kv_cache_bytes(*size[:4],
                                                 dtype_bytes=size[4]))
            for size in _CACHE_SIZES]
    wrong = [(size, got, want) for size, got, want in runs if got != want]
    if not wrong:
        return None
    (L, H_kv, d, T, nbytes), got, want = wrong[0]
    size = (f"for {L} layers, H_kv = {H_kv}, d_head = {d}, {T} tokens at "
            f"{nbytes} bytes a value")
    if got is None:
        return f"your function returned None {size}: return a number"
    if all(np.isclose(2 * g, w) for _, g, w in runs):
        return (f"{size} you get half the bytes: the cache holds a key and "
                "a value for each head of each layer")
    if all(np.isclose(g * s[4], w) for s, g, w in runs):
        return (f"{size} you count values, not bytes: multiply by the "
                "bytes of one value")
    return (f"{size} you get {got:,}, the cache holds {want:,} bytes: per "
            "token, each layer keeps a key and a value of d_head numbers "
            "for each key/value head")


def _small_config() -> ModelConfig:
    return ModelConfig(hidden_size=64, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=16,
                       num_hidden_layers=3, rope_theta=10_000.0,
                       rms_norm_eps=1e-6, intermediate_size=96,
                       vocab_size=100, max_position_embeddings=512)


def step_flops(answer) -> str | None:
    """2. step_flops(config, S, use_cache): one decode step's FLOPs."""
    for config, name in [(QWEN3_1_7B, "Qwen3-1.7B"),
                         (_small_config(), "a small config")]:
        for use_cache in (True, False):
            for S in (1, 7, 512):
                want = decode_step_flops(config, S, use_cache=use_cache)
                got = answer(config, S, use_cache)
                if got == want:
                    continue
                where = f"{name}, S = {S}, use_cache={use_cache}:"
                if got is None:
                    return f"{where} your function returned None"
                head = 2 * config.hidden_size * config.vocab_size
                L = config.num_hidden_layers
                if np.isclose(got + head, want):
                    return (f"{where} the output head is missing: lm_head "
                            "runs once a step, for the last position")
                if np.isclose(L * got, want) or np.isclose(
                        L * (got - head) + head, want):
                    return (f"{where} you count one layer; a step runs "
                            "through every layer")
                return (f"{where} you get {got:,}, the count is {want:,}. "
                        "Per layer: the projections and MLP of each token "
                        "computed, plus the scores and the weighted sum of "
                        "values (4 H d_head FLOPs per query and key pair)")
    return None


def attend_last(answer) -> str | None:
    """3. attend_last(q, k, v, window): one query over its last keys."""
    rng = np.random.default_rng(11)
    for S, window, d in [(20, 5, 16), (9, 1, 4), (6, 6, 8), (12, 3, 2)]:
        q = rng.standard_normal((1, d))  # the newest position, S - 1
        k, v = rng.standard_normal((2, S, d))
        keep = causal_mask(1, S) & (np.arange(S) >= S - window)  # (1, S)
        want = scaled_dot_product_attention(q, k, v, attn_mask=keep)
        got = np.asarray(answer(q, k, v, window), dtype=float)
        if got.shape != want.shape:
            return (f"with S = {S} keys of d_head = {d}, the output should "
                    f"have the query's shape {want.shape}, got {got.shape}")
        if np.allclose(got, want, rtol=1e-10, atol=1e-12):
            continue
        for n in (window - 1, window + 1, S):
            if 1 <= n <= S and np.allclose(got, scaled_dot_product_attention(
                    q, k[S - n:], v[S - n:]), rtol=1e-10, atol=1e-12):
                return (f"with S = {S} and window = {window} your query "
                        f"reads {n} keys: the window is {window} positions "
                        "counted back from the query, the query's own "
                        "included")
        return (f"with S = {S} and window = {window} the output differs "
                "from attention over the window's keys and values: the "
                "softmax should run over those keys only")
    return None


CHECKS = {1: cache_bytes, 2: step_flops, 3: attend_last}
