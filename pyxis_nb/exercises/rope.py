"""Checks for the exercises of "Rotary position embeddings (RoPE)"
(book/rope.ipynb)."""

from __future__ import annotations

import numpy as np

from ..rope import apply_rope, permute_qk_proj, rope_frequencies

CONTEXT = 40_960  # Qwen3's context, in tokens
# "Not yet: " and this fit the chapter's 79 columns of printed text
NO_ANSWER = "no answer yet: your function returns None; put yours in its place"


def _number(answer) -> float:
    """The reader's answer as one real number (raises on anything else)."""
    x = np.asarray(answer)
    if x.size != 1 or not np.isrealobj(x):
        raise ValueError(f"expected one number, got {answer!r}")
    return float(x.reshape(()))


def one_position(answer) -> str | None:
    """1. The one position that rotates as position 7, then 1000, does."""
    p = _number(answer)
    if p == 1007:
        return None
    x = np.random.default_rng(0).standard_normal((5, 64))  # (T, d_head)
    twice = apply_rope(apply_rope(x, np.full(5, 7)), np.full(5, 1000))
    once = apply_rope(x, np.full(5, p))
    gap = np.abs(twice - once).max()
    return (f"rotating once by position {p:g} differs from rotating by 7 "
            f"and then by 1000 by up to {gap:.3g}; each rotation turns "
            "pair i by its position times omega_i: what happens to two "
            "angles when one turn follows another?")


def _weights(rng, heads: int, head_dim: int) -> np.ndarray:
    """A random half-layout q/k projection (heads * head_dim, 6)."""
    return rng.standard_normal((heads * head_dim, 6))


def to_interleaved(answer) -> str | None:
    """2. A function that reorders a half-layout projection's rows so that
    interleaved RoPE gives the scores half RoPE gave."""
    rng = np.random.default_rng(1)
    for heads, head_dim in ((3, 8), (2, 32)):
        w = _weights(rng, heads, head_dim)
        got = answer(w.copy(), head_dim)
        if got is None:
            return NO_ANSWER
        got = np.asarray(got)
        want = permute_qk_proj(w, head_dim=head_dim, inverse=True)
        if got.shape != w.shape:
            return (f"for a weight of shape {w.shape} your function returns "
                    f"shape {got.shape}: it should only reorder the rows")
        if np.array_equal(got, want):
            continue
        if np.array_equal(got, w):
            return "the rows have not moved"
        if np.array_equal(got, permute_qk_proj(w, head_dim=head_dim)):
            return ("that is the conversion the other way, interleaved to "
                    "half: here the two rows a pair is made of sit at i and "
                    "i + head_dim/2, and must end up next to each other")
        if np.array_equal(got, permute_qk_proj(w, head_dim=len(w),
                                               inverse=True)):
            return ("the rows were reordered across the whole matrix: cut "
                    "them into heads of head_dim rows first, and reorder "
                    "each head on its own")
        x = rng.standard_normal((1, 5, w.shape[-1]))  # (B, T, d_model)
        gap = _score_gap(x, w, got, heads, head_dim)
        return (f"with {heads} heads of head_dim = {head_dim}, interleaved "
                f"RoPE on your weights gives scores up to {gap:.3g} away from "
                "half RoPE on the originals")
    return None


def _score_gap(x, w, converted, heads, head_dim) -> float:
    """Largest gap between half-layout scores of ``w`` and interleaved
    scores of ``converted`` (queries and keys from the same weight)."""
    pos = np.arange(x.shape[1])

    def scores(weight, layout):
        q = (x @ weight.T).reshape(1, -1, heads, head_dim).swapaxes(1, 2)
        q = apply_rope(q, pos, layout=layout)  # (1, H, T, d_head)
        return q @ q.swapaxes(-1, -2)  # (1, H, T, T)
    return float(np.abs(scores(converted, "interleaved")
                        - scores(w, "half")).max())


def closest_pair(answer) -> str | None:
    """3. The pair of Qwen3's 64 whose wavelength is closest to 40,960."""
    i = _number(answer)
    if i != int(i) or not 0 <= i < 64:
        return (f"{i:g} is not a pair index: Qwen3's head of 128 has pairs "
                "0 to 63")
    wavelength = 2 * np.pi / rope_frequencies(128, 1_000_000.0)  # (64,)
    if int(i) == int(np.argmin(np.abs(wavelength - CONTEXT))):
        return None
    return (f"pair {int(i)} has a wavelength of {wavelength[int(i)]:,.0f} "
            f"positions, {abs(wavelength[int(i)] - CONTEXT):,.0f} away from "
            f"{CONTEXT:,}; another pair is closer")


def rope_complex(answer) -> str | None:
    """4. The half layout with complex numbers: pair i is
    ``x[i] + 1j * x[i + d_head/2]``."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 16))  # (T, d_head)
    positions = np.array([0, 1, 2, 7, 40])
    got = answer(x.copy(), positions)
    if got is None:
        return NO_ANSWER
    got = np.asarray(got)
    want = apply_rope(x, positions, layout="half")
    if got.shape != x.shape or np.iscomplexobj(got):
        return (f"for x of shape {x.shape} your function returns "
                f"{got.dtype} of shape {got.shape}: give back a real array "
                "of x's shape, the real parts where the first coordinates "
                "were and the imaginary parts where the second were")
    if np.allclose(got, want):
        return None
    if np.allclose(got, apply_rope(x, positions, layout="interleaved")):
        return ("that rotates neighbours (2i, 2i + 1), the interleaved "
                "layout; here pair i is coordinate i with i + d_head/2")
    if np.allclose(got, apply_rope(x, -positions, layout="half")):
        return "right pairs, but they turn the wrong way round"
    if np.allclose(got, x):
        return "nothing turned: every pair should be multiplied by its turn"
    return (f"your rotation differs from the half layout's by up to "
            f"{np.abs(got - want).max():.3g}")


CHECKS = {1: one_position, 2: to_interleaved, 3: closest_pair,
          4: rope_complex}
