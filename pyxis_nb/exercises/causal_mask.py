"""Checks for the exercises of "The causal mask" (book/causal_mask.ipynb)."""

from __future__ import annotations

import numpy as np

from ..engine import engine_causal_attention
from ..masks import causal_mask, sliding_window_mask

NO_ANSWER = "no answer yet: write the function's body, then run the cell"


def band_pairs(answer) -> str | None:
    """1. ``band_pairs(T, w)``: the pairs a two-sided band allows."""
    for T in range(1, 13):
        for w in range(1, T + 1):
            got = answer(T, w)
            if got is None:
                return NO_ANSWER
            want = int(sliding_window_mask(T, window=w).sum())
            if np.isclose(float(got), want):
                continue
            if np.isclose(float(got), T * (2 * w - 1)):
                return ("every row gets the same count in your formula, but "
                        "a row near the first or the last token has fewer "
                        "keys on one side: count what row 0 allows")
            if np.isclose(float(got), T * w - w * (w - 1) / 2):
                return ("that counts a one-sided window (causal & band); "
                        "the band is two-sided, |i - j| < w")
            return (f"for T = {T}, w = {w} your formula gives {got}, the "
                    f"mask allows {want}: print "
                    f"px.sliding_window_mask({T}, window={w}).astype(int) "
                    "and count row by row")
    return None


def to_may_attend(answer) -> str | None:
    """2. ``to_may_attend(mha_mask)``: True = hidden to True = may attend."""
    rng = np.random.default_rng(0)
    masks = [~causal_mask(6)]  # the causal mask as MultiheadAttention's
    masks += [rng.random(shape) < 0.5 for shape in [(4, 4), (3, 7), (5, 2)]]
    for n, mha_mask in enumerate(masks):
        got = answer(mha_mask.copy())
        if got is None:
            return NO_ANSWER
        got = np.asarray(got)
        want = ~mha_mask
        if got.shape != want.shape:
            return (f"a mask of shape {mha_mask.shape} came back with shape "
                    f"{got.shape}: keep one entry per (query, key)")
        if got.dtype != bool:
            return (f"your mask has dtype {got.dtype}: return a boolean "
                    "array (px.scaled_dot_product_attention refuses an "
                    "integer mask, and adds a float one to the scores)")
        if np.array_equal(got, mha_mask):
            return ("this is the mask you were given: in it, True still "
                    "means hidden")
        if not np.array_equal(got, want):
            if n == 0:
                return ("for the causal mask it differs from True = may "
                        "attend: print both with .astype(int) and compare")
            return ("right for the causal mask, but a random mask comes "
                    f"back wrong (shape {mha_mask.shape}): convert any "
                    "mask, not only the causal one")
    return None


def decode_one(answer) -> str | None:
    """3. ``decode_one(q_new, k, v)``: the newest token's output."""
    rng = np.random.default_rng(1)
    for S, d_head in [(1, 4), (5, 8), (9, 3)]:
        q_new = rng.standard_normal(d_head)
        k, v = rng.standard_normal((2, S, d_head))
        got = answer(q_new.copy(), k.copy(), v.copy())
        if got is None:
            return NO_ANSWER
        got = np.asarray(got, dtype=float)
        want = engine_causal_attention(q_new[None], k, v)[0]  # (d_head,)
        if got.shape != want.shape:
            if got.size == want.size:
                return (f"your output has shape {got.shape}: return one "
                        f"vector, shape ({d_head},)")
            return (f"for S = {S}, d_head = {d_head} your output has shape "
                    f"{got.shape}, the newest token's output is "
                    f"({d_head},)")
        if np.allclose(got, want, rtol=1e-10, atol=1e-12):
            continue
        if S > 1 and np.allclose(got, v[0]):
            return ("your output is the first value alone: the query saw "
                    "key 0 only. With one query, top-left alignment (torch's "
                    "is_causal=True) hides every later key; the newest "
                    "token may see them all (section \"When T ≠ S\")")
        unscaled = engine_causal_attention(q_new[None], k, v, scale=1.0)[0]
        if np.allclose(got, unscaled):
            return "check the scale of the scores (chapter 2)"
        if S > 1 and np.allclose(
                got, engine_causal_attention(q_new[None], k[:-1], v[:-1])[0]):
            return ("the newest token's own key and value are missing: a "
                    "query sees itself too")
        return (f"for S = {S}, d_head = {d_head} your output differs from "
                f"the package's by up to {np.abs(got - want).max():.3g}")
    return None


CHECKS = {1: band_pairs, 2: to_may_attend, 3: decode_one}
