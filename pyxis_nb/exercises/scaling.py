"""Checks for the exercises of "Why divide by √d" (book/scaling.ipynb)."""

from __future__ import annotations

import numpy as np

from ..experiments import max_attention_weight

#: exercise 1's head size and tokens; a mean over 20 heads moves by about
#: 0.01 with the seeds, so a reader's own heads land well inside TOLERANCE
D_1, T_1, TOLERANCE = 64, 12, 0.05


def _numbers(answer, n: int, what: str) -> np.ndarray | str:
    """The answer as ``n`` finite floats, or a hint saying what it is not."""
    x = np.asarray(answer, dtype=float).ravel()
    if x.size != n:
        return f"give {n} numbers, {what}; got {x.size}"
    if not np.all(np.isfinite(x)):
        return "every number must be finite: no NaN, no inf"
    return x


def twelve_tokens(answer) -> str | None:
    """1. (uniform weight, not scaled, scaled) for T = 12 at d = 64."""
    x = _numbers(answer, 3, "(uniform weight, not scaled, scaled)")
    if isinstance(x, str):
        return x
    uniform, plain, scaled = x
    if not np.isclose(uniform, 1 / T_1):
        return (f"a uniform row of T = {T_1} weights gives each key the "
                f"same share; {uniform:.4g} is not that share")
    if plain < scaled:
        return ("your 'not scaled' number is below your 'scaled' one: "
                "which scores were divided by sqrt(d)?")
    want = [max_attention_weight(D_1, T=T_1, scaled=s) for s in (False, True)]
    for name, got, right, t6 in zip(
            ("not scaled", "scaled"), (plain, scaled), want,
            [max_attention_weight(D_1, scaled=s) for s in (False, True)]):
        if abs(got - right) > TOLERANCE:
            if abs(got - t6) < abs(got - right):
                return (f"your '{name}' number is close to what 6 tokens "
                        f"give: pass T={T_1}")
            return (f"your '{name}' number is off by more than {TOLERANCE}:"
                    " average the largest weight of each row over the 12 "
                    "rows and many seeds, at d = 64")
    return None


def divide_by_d(answer) -> str | None:
    """2. The std of q.k / d for d = 4, 64, 1024."""
    x = _numbers(answer, 3, "one standard deviation for each of d = 4, "
                 "64, 1024")
    if isinstance(x, str):
        return x
    ds = np.array([4.0, 64.0, 1024.0])
    if np.allclose(x, ds**-0.5, rtol=0.05):
        return None
    for guess, hint in ((ds**0.5, "these grow like sqrt(d): divide each "
                         "dot product by d"),
                        (np.ones(3), "these stay at 1, as after dividing "
                         "by sqrt(d): divide by d instead"),
                        (1 / ds, "these shrink like 1/d: the std of q.k "
                         "is sqrt(d) before the division; measure it")):
        if np.allclose(x, guess, rtol=0.1):
            return hint
    return ("measure std(q.k / d) over many random pairs (say 10,000) of "
            "vectors with standard normal entries, for each d")


def uniform_jacobian(answer) -> str | None:
    """3. (diagonal entry, trace) of the Jacobian of six equal scores."""
    x = _numbers(answer, 2, "(a diagonal entry, the trace)")
    if isinstance(x, str):
        return x
    diagonal, trace = x
    p = 1 / 6  # every weight of the uniform row
    if np.isclose(diagonal, p):
        return ("that is a weight p_i itself; a diagonal entry is "
                "p_i (1 - p_i)")
    if not np.isclose(diagonal, p * (1 - p)):
        return ("a diagonal entry is p_i (1 - p_i), with every p_i of a "
                "uniform row")
    if np.isclose(trace, 1.0):
        return ("the trace adds the six diagonal entries, p_i (1 - p_i), "
                "not the six weights")
    if not np.isclose(trace, 6 * p * (1 - p)):
        return "the trace is the sum of the six diagonal entries"
    return None


def normed_score_bound(answer) -> str | None:
    """4. The largest |q.k| / sqrt(d) after q_norm, k_norm (weights 1)."""
    x = _numbers(answer, 1, "the largest size of a score")
    if isinstance(x, str):
        return x
    d, got = 128, float(x[0])
    if np.isclose(got, np.sqrt(d), rtol=1e-3):
        return None
    if np.isclose(got, d, rtol=1e-3):
        return ("that is the largest dot product q.k; the score divides "
                "it by sqrt(d)")
    if np.isclose(got, 1.0, rtol=1e-3) or np.isclose(got, 1 / np.sqrt(d)):
        return ("a normalised vector has root mean square 1, so its "
                "length is not 1: what is the length of d numbers whose "
                "squares average 1?")
    return ("two vectors of lengths a and b have a dot product of at most "
            "a b, when they point the same way; find the length of a "
            "normalised vector first")


CHECKS = {1: twelve_tokens, 2: divide_by_d, 3: uniform_jacobian,
          4: normed_score_bound}
