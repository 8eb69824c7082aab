"""Checks for the exercises of "Long contexts: attention in tiles"
(book/long_context.ipynb)."""

from __future__ import annotations

import numpy as np

from ..attention import scaled_dot_product_attention
from ..memory import score_matrix_bytes
from ..tiled import OnlineSoftmaxState, online_softmax_update, tiled_attention

# (T, H, B, dtype_bytes)
_SCORE_SIZES = [(1_000, 1, 1, 2), (40_960, 16, 1, 2), (7, 3, 5, 4),
                (300, 2, 8, 1), (1, 1, 1, 2)]


def score_bytes(answer) -> str | None:
    """1. score_bytes(T, H, B, dtype_bytes): the stored score matrices."""
    runs = [(size, answer(*size),
             score_matrix_bytes(size[0], dtype_bytes=size[3],
                                num_attention_heads=size[1],
                                batch_size=size[2]))
            for size in _SCORE_SIZES]
    wrong = [(size, got, want) for size, got, want in runs if got != want]
    if not wrong:
        return None
    (T, H, B, nbytes), got, want = wrong[0]
    size = (f"for T = {T:,}, H = {H}, B = {B} at {nbytes} bytes a value")
    if got is None:
        return f"your function returned None {size}: return a number"
    if all(np.isclose(g * s[3], w) for s, g, w in runs):
        return (f"{size} you count values, not bytes: multiply by the "
                "bytes of one value")
    if all(np.isclose(g * s[0], w) for s, g, w in runs):
        return (f"{size} your count grows linearly with T: every query "
                "scores every key")
    if all(np.isclose(g * s[1], w) for s, g, w in runs):
        return (f"{size} you count one head: each query head scores its "
                "own matrix")
    if all(np.isclose(g * s[2], w) for s, g, w in runs):
        return (f"{size} you count one sequence: each sequence of the "
                "batch has its own matrices")
    return (f"{size} you get {got:,}, the stored scores take {want:,} "
            "bytes: one score per query and key, for each head of each "
            "sequence")


# (T, b): square causal tiles of b, the last ones partial when b does not
# divide T
_TILE_SIZES = [(1024, 64), (1024, 128), (1024, 256), (8, 2), (1000, 128),
               (10, 3), (5, 5), (3, 8)]


def _causal_tiles(T: int, b: int) -> int:
    """What tiled_attention computes, counted by itself."""
    q = np.zeros((T, 1))
    _, stats = tiled_attention(q, q, q, is_causal=True, block_q=b,
                               block_k=b, return_stats=True)
    return stats.n_computed


def causal_tiles(answer) -> str | None:
    """2. causal_tiles(T, b): tiles computed under the causal mask."""
    for T, b in _TILE_SIZES:
        want = _causal_tiles(T, b)
        got = answer(T, b)
        if got == want:
            continue
        where = f"with T = {T} and tiles of {b}:"
        if got is None:
            return f"{where} your function returned None: return a number"
        n, whole = -(-T // b), T // b  # tiles along a side; whole ones
        if T % b and got in (whole * whole, whole * (whole + 1) // 2):
            return (f"{where} you get {got}, tiled_attention computes "
                    f"{want}: {b} does not divide {T}, and the last, "
                    "partial tiles are tiles too")
        if got == n * n:
            return (f"{where} you count every tile; the tiles strictly "
                    "above the diagonal are skipped")
        if got == n * (n - 1) // 2:
            return (f"{where} you count only the tiles strictly below the "
                    "diagonal; the diagonal tiles are computed too, whole, "
                    "and masked inside")
        return (f"{where} you get {got}, tiled_attention computes {want}: "
                "count, row by row of tiles, the key tiles that query tile "
                "reads")
    return None


def _state(scores, value):
    """The online softmax's state after one block of scores and values."""
    state = OnlineSoftmaxState.empty(scores.shape[:-1], scores.dtype,
                                     value_dim=value.shape[-1])
    return online_softmax_update(state, scores.copy(), value)


def merge(answer) -> str | None:
    """3. merge(a, b): the attention output from two halves' states."""
    rng = np.random.default_rng(13)
    # (rows, S, split, d_head, d_v, shift of the second half's scores)
    for rows, S, cut, d, d_v, shift in [(1, 40, 20, 16, 8, 0.0),
                                        (3, 30, 7, 8, 5, 6.0),
                                        (2, 25, 20, 4, 3, -5.0),
                                        (4, 2, 1, 2, 2, 3.0)]:
        q = rng.standard_normal((rows, d))
        k, v = rng.standard_normal((S, d)), rng.standard_normal((S, d_v))
        bias = np.zeros((rows, S))
        bias[:, cut:] = shift  # one half's maximum well above the other
        scores = q @ k.T / np.sqrt(d) + bias  # (rows, d) @ (d, S)
        a = _state(scores[:, :cut], v[:cut])
        b = _state(scores[:, cut:], v[cut:])
        want = scaled_dot_product_attention(q, k, v, attn_mask=bias)
        where = (f"with {rows} query rows, {S} keys split {cut} + "
                 f"{S - cut}:")
        got = answer(a, b)
        if got is None:
            return f"{where} your function returned None"
        if isinstance(got, OnlineSoftmaxState):
            return (f"{where} you return a state; return the attention "
                    "output, one row of values per query")
        got = np.asarray(got, dtype=float)
        if got.shape != want.shape:
            return (f"{where} the output should have shape {want.shape} "
                    f"(query rows, d_v), got {got.shape}")
        if np.allclose(got, want, rtol=1e-10, atol=1e-12):
            continue
        plain = (a.acc + b.acc) / (a.row_sum + b.row_sum)
        if np.allclose(got, plain, rtol=1e-10, atol=1e-12):
            return (f"{where} you add the two halves as they are, but each "
                    "was measured against its own maximum m: bring both to "
                    "the common maximum first")
        if np.all(np.isfinite(got)) and np.allclose(
                got / np.linalg.norm(got, axis=-1, keepdims=True),
                want / np.linalg.norm(want, axis=-1, keepdims=True)):
            return (f"{where} each row points the right way but has the "
                    "wrong length: the output is the weighted sum divided "
                    "by the sum of the weights")
        return (f"{where} the output differs from attention over all the "
                "keys: rescale each half's sum and partial output to the "
                "common maximum, then add and divide")
    return None


CHECKS = {1: score_bytes, 2: causal_tiles, 3: merge}
