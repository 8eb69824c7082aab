"""Checks for the exercises of "The permutation experiment"
(book/permutation.ipynb)."""

from __future__ import annotations

import numpy as np

from ..positions import sinusoidal_positions

NO_BODY = "no answer yet: write the function's body, then run the cell"
# permutations the check of exercise 1 tries: a swap (its own inverse), the
# chapter's cycle, and a longer shuffle
_PERMS = ([0, 3, 2, 1], [1, 2, 3, 0], [4, 0, 5, 2, 1, 3])


def unshuffle(answer) -> str | None:
    """1. ``unshuffle(rows, perm)``: rows computed for ``x[perm]``, put back
    in the order of ``x``."""
    rng = np.random.default_rng(0)
    for perm in _PERMS:
        perm = np.array(perm)
        rows = rng.standard_normal((len(perm), 3))  # (T, 3): out(X)
        shuffled = rows[perm]                       # out(PX) = P out(X)
        got = answer(shuffled.copy(), perm.copy())
        if got is None:
            return NO_BODY
        got = np.asarray(got, dtype=float)
        if got.shape != rows.shape:
            return (f"for {len(perm)} rows of size 3 it returned shape "
                    f"{got.shape}: it should return the rows, reordered")
        if np.allclose(got, rows):
            continue
        if np.allclose(got, shuffled[perm]):
            return ("indexing with perm shuffles the rows a second time; "
                    "a swap undoes itself, so that passes for [0, 3, 2, 1], "
                    f"but not for {perm.tolist()}. Row i of the shuffled "
                    "rows came from position perm[i] of x")
        return (f"for perm = {perm.tolist()} the rows do not come back in "
                "the order of x. Row i of the shuffled rows came from "
                "position perm[i] of x")
    return None


def causal_rows(answer) -> str | None:
    """2. The positions whose output stays equivariant under the causal
    mask when tokens 1 and 3 of "hungry cats chase dogs" swap."""
    got = sorted({int(i) for i in np.atleast_1d(np.asarray(answer))})
    if got == [0]:
        return None
    if any(i < 0 or i > 3 for i in got):
        return "the sentence has four positions, numbered from 0 to 3"
    if not got:
        return ("one position does keep its output: which token sees the "
                "same tokens in both sentences?")
    if got == [0, 1, 2, 3]:
        return ("under the causal mask the query at position i sees only "
                "positions 0..i, and the swap changes who sits there")
    return ("a row stays equivariant when its token sees the same tokens "
            "in both sentences; list, for each position, the tokens its "
            "query may see before and after the swap")


def dot_at_offset(answer) -> str | None:
    """3. ``dot_at_offset(k, d_model)``: ``PE_p . PE_{p+k}`` as a function
    of the offset ``k`` alone."""
    for d_model in (16, 8, 64):
        table = sinusoidal_positions(40, d_model)  # (T, d_model)
        for k in (3, 0, 1, 10):
            want = table[5] @ table[5 + k]
            got = answer(k, d_model)
            if got is None:
                return NO_BODY
            got = float(got)
            if np.isclose(got, want, rtol=1e-9, atol=1e-9):
                continue
            freqs = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
            if np.isclose(got, np.sin(k * freqs).sum()):
                return ("that is the sum of the sines; sin a sin b + "
                        "cos a cos b is a cosine of a - b")
            every = 10000.0 ** (-np.arange(d_model) / d_model)
            if np.isclose(got, np.cos(k * every).sum()):
                return ("there is one frequency per sin/cos pair, "
                        "d_model / 2 of them, not d_model")
            return (f"for k = {k}, d_model = {d_model} it gives {got:.4g}, "
                    "which is not the table's dot product; each sin/cos "
                    "pair adds one term that depends on k and that pair's "
                    "frequency only")
    return None


CHECKS = {1: unshuffle, 2: causal_rows, 3: dot_at_offset}
