"""The reader's checks of book/causal_mask.ipynb's exercises.

Each right answer passes; each mistake a reader makes gets a hint, and no
hint gives the answer away.
"""

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb.exercises import causal_mask as checks


def check(n, answer):
    return checks.CHECKS[n](answer)


# ------------------------------------------------- 1. pairs of a band

def test_band_pairs_right():
    assert check(1, lambda T, w: T * (2 * w - 1) - w * (w - 1)) is None
    # the same count, written another way, is right too
    assert check(1, lambda T, w: T + 2 * sum(T - d for d in range(1, w))) \
        is None


@pytest.mark.parametrize("answer, words", [
    (lambda T, w: T * (2 * w - 1), "row 0"),                # no edges
    (lambda T, w: T * w - w * (w - 1) / 2, "two-sided"),    # one-sided
    (lambda T, w: T * w, "count row by row"),               # anything else
    (lambda T, w: None, "no answer yet"),
])
def test_band_pairs_mistakes_get_a_hint(answer, words):
    hint = check(1, answer)
    assert hint is not None and words in hint
    assert "w (w - 1)" not in hint and "w * (w - 1)" not in hint
    assert "2w - 1" not in hint and "2 * w - 1" not in hint


# --------------------------------------- 2. MultiheadAttention's mask

def test_to_may_attend_right():
    assert check(2, lambda m: ~m) is None
    assert check(2, np.logical_not) is None
    assert check(2, lambda m: m == False) is None  # noqa: E712


@pytest.mark.parametrize("answer, words", [
    (lambda m: m, "True still means hidden"),
    (lambda m: 1 - m.astype(int), "boolean"),
    (lambda m: px.causal_mask(*m.shape), "random mask"),    # causal only
    (lambda m: ~m.ravel(), "shape"),
    (lambda m: np.zeros(m.shape, bool), "causal mask"),
    (lambda m: None, "no answer yet"),
])
def test_to_may_attend_mistakes_get_a_hint(answer, words):
    hint = check(2, answer)
    assert hint is not None and words in hint
    assert "~" not in hint and "logical_not" not in hint


# ------------------------------------------------ 3. decode one token

def _decode(q_new, k, v):
    return px.softmax(k @ q_new / np.sqrt(len(q_new))) @ v


def test_decode_one_right():
    assert check(3, _decode) is None
    assert check(3, lambda q, k, v: px.scaled_dot_product_attention(
        q[None], k, v)[0]) is None
    assert check(3, lambda q, k, v: px.engine.engine_causal_attention(
        q[None], k, v)[0]) is None


@pytest.mark.parametrize("answer, words", [
    # torch's top-left is_causal with one query: it sees key 0 only
    (lambda q, k, v: px.scaled_dot_product_attention(
        q[None], k, v, attn_mask=px.causal_mask(1, len(k),
                                                align="top_left"))[0],
     "top-left"),
    (lambda q, k, v: px.softmax(k @ q) @ v, "scale"),
    (lambda q, k, v: _decode(q, k[:-1], v[:-1]) if len(k) > 1
     else _decode(q, k, v), "sees itself"),
    (lambda q, k, v: _decode(q, k, v)[None], "one vector"),
    (lambda q, k, v: v.mean(axis=0), "differs"),
    (lambda q, k, v: None, "no answer yet"),
])
def test_decode_one_mistakes_get_a_hint(answer, words):
    hint = check(3, answer)
    assert hint is not None and words in hint
    assert "softmax" not in hint and "sqrt" not in hint


def test_the_checks_print_through_px_exercises(capsys):
    assert not px.exercises.check("causal_mask", 1, None)
    assert capsys.readouterr().out.startswith("Not yet: no answer yet")
    assert px.exercises.check("causal_mask", 2, lambda m: ~m)
    assert capsys.readouterr().out == "Right.\n"
