"""Checks for the exercises of "Queries, keys and values" (book/qkv.ipynb)."""

from __future__ import annotations

import numpy as np

from ..masks import causal_mask
from ..stable_softmax import softmax

T_SENTENCE = 6  # "The cat sat on the mat"


def third_key(answer) -> str | None:
    """1. The third key that gives the weights (1/4, 1/4, 1/2)."""
    x = float(answer)
    if np.isclose(x, np.log(2)):
        return None
    weights = softmax(np.array([0.0, 0.0, x]))
    return (f"with {x:.4g} the weights are {np.round(weights, 4)}: the "
            "third e^score must be twice each of the others' e^0 = 1")


def tril_mask(answer) -> str | None:
    """2. The sentence's causal mask, as a boolean ``attn_mask``."""
    mask = np.asarray(answer)
    if mask.dtype != bool:
        return (f"its dtype is {mask.dtype}: an attn_mask of numbers is "
                "refused (integers) or added to the scores (floats); make "
                "it boolean, True = may attend")
    if mask.shape != (T_SENTENCE, T_SENTENCE):
        return (f"its shape is {mask.shape}: the sentence has T = "
                f"{T_SENTENCE} tokens, one row per query and one column "
                "per key")
    right = causal_mask(T_SENTENCE)
    if np.array_equal(mask, right):
        return None
    if np.array_equal(mask, ~right):
        return ("it is True exactly where attending is forbidden: in "
                "attn_mask, True means may attend")
    if np.array_equal(mask, right.T):
        return ("each query sees itself and the keys *after* it: row i "
                "must allow the keys 0..i, the ones already written")
    if np.array_equal(mask | np.eye(T_SENTENCE, dtype=bool), right):
        return ("a token may also attend to itself: row i allows the keys "
                "0..i, i included")
    wrong = int((mask != right).sum())
    return (f"{wrong} of its {mask.size} entries differ from the causal "
            "mask: row i allows the keys 0..i and no other")


def key_shift(answer) -> str | None:
    """3. The largest change of a weight when ``u`` is added to every key."""
    x = float(answer)
    if not np.isfinite(x) or x < 0:
        return (f"{x} cannot be a largest change |new - old|: that is a "
                "number >= 0")
    if x < 1e-12:  # no change, up to rounding
        return None
    return ("write row i's scores before and after: q_i . (k_j + u) = "
            "q_i . k_j + q_i . u; which of the two terms depends on j, and "
            "what does the softmax do with the other?")


CHECKS = {1: third_key, 2: tril_mask, 3: key_shift}
