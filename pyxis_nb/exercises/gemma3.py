"""Checks for the exercises of "Gemma 3: local and global layers, trained"
(book/gemma3.ipynb).

Both answers are functions of attention weights (B, H, T, T); the checks
run them on causal weights they make and compare with the formula.
"""

from __future__ import annotations

import numpy as np

from ..masks import causal_mask
from ..stable_softmax import softmax


def _weights():
    """Causal attention weights of three shapes, (B, H, T, T) each."""
    rng = np.random.default_rng(21)
    for B, H, T in [(1, 4, 7), (2, 3, 9), (3, 2, 5)]:
        z = 2 * rng.standard_normal((B, H, T, T))
        yield softmax(np.where(causal_mask(T), z, -np.inf))


def _back(T: int) -> np.ndarray:
    """(T, T): i - j, how far key j lies behind query i."""
    return np.arange(T)[:, None] - np.arange(T)


def _shape_hint(got, want) -> str | None:
    if got is None:
        return "your function returned None: return one number a head"
    got = np.asarray(got, dtype=float)
    if got.shape != want.shape:
        return (f"for {want.size} heads return shape {want.shape}, one "
                f"number a head (averaged over batch rows and queries), "
                f"got {got.shape}")
    return None


def mean_distance(answer) -> str | None:
    """1. mean_distance(weights): (B, H, T, T) -> (H,) tokens back."""
    for w in _weights():
        back = _back(w.shape[-1])
        want = (w * back).sum(-1).mean(axis=(0, 2))
        got = answer(w.copy())
        hint = _shape_hint(got, want)
        if hint:
            return hint
        got = np.asarray(got, dtype=float)
        if np.allclose(got, want):
            continue
        if np.allclose(got, -want):
            return ("your distances are negative: a key lies i - j tokens "
                    "behind query i")
        if np.allclose(got, (w * back).sum(-1).sum(-1).mean(0)):
            return ("you add up the queries: average them (each query's "
                    "distance is already a weighted mean)")
        if np.allclose(got, (w * back).mean(-1).mean(axis=(0, 2))):
            return ("each query's distance is a sum over keys weighted by "
                    "the attention weights, not a mean over keys")
        return ("for each query i, sum w[i, j] * (i - j) over the keys j, "
                "then average over queries and batch rows")
    return None


def near_share(answer) -> str | None:
    """2. near_share(weights, k): (H,) weight on the last k keys."""
    for w in _weights():
        back = _back(w.shape[-1])
        for k in (1, 3):
            want = (w * (back < k)).sum(-1).mean(axis=(0, 2))
            got = answer(w.copy(), k)
            hint = _shape_hint(got, want)
            if hint:
                return hint
            got = np.asarray(got, dtype=float)
            if np.allclose(got, want):
                continue
            if np.allclose(got, (w * (back <= k)).sum(-1).mean(axis=(0, 2))):
                return (f"with k = {k} you count {k + 1} keys: the last k "
                        "keys are the query's own and the k - 1 before it")
            if np.allclose(got, (w * (back > 0) * (back <= k)).sum(-1)
                           .mean(axis=(0, 2))):
                return ("the query's own key is one of the last k: its "
                        "distance is 0")
            return (f"with k = {k}: for each query i, add the weights of "
                    "the keys j with i - j < k, then average over queries "
                    "and batch rows")
    return None


CHECKS = {1: mean_distance, 2: near_share}
