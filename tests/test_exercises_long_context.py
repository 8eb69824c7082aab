"""The reader's checks of book/long_context.ipynb's exercises: the right
answer passes, the usual mistakes get a hint, and no hint gives the answer
away."""

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb.exercises import long_context as checks


def check(n, answer, capsys):
    right = bool(px.exercises.check("long_context", n, answer))
    return right, capsys.readouterr().out


# ---- 1. score_bytes ---------------------------------------------------------
def score_bytes(T, H, B, dtype_bytes):
    return T * T * H * B * dtype_bytes


def test_1_right(capsys):
    right, out = check(1, score_bytes, capsys)
    assert right and out == "Right.\n"
    assert score_bytes(40_960, 16, 1, 2) == 53_687_091_200


@pytest.mark.parametrize("wrong, words", [
    (lambda T, H, B, b: T * T * H * B, "bytes of one value"),
    (lambda T, H, B, b: T * H * B * b, "linearly with T"),
    (lambda T, H, B, b: T * T * B * b, "one head"),
    (lambda T, H, B, b: T * T * H * b, "one sequence"),
    (lambda T, H, B, b: 2 * T * T * H * B, "you get"),
    (lambda T, H, B, b: None, "returned None"),
    (lambda T, H: T * T * H, "raised TypeError"),
])
def test_1_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(1, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out


# ---- 2. causal_tiles --------------------------------------------------------
def causal_tiles(T, b):
    n = -(-T // b)  # ceil: a partial last tile is a tile
    return n * (n + 1) // 2


def test_2_right(capsys):
    right, out = check(2, causal_tiles, capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (lambda T, b: (T // b) ** 2, "every tile"),
    (lambda T, b: (T // b) * (T // b - 1) // 2, "strictly below"),
    (lambda T, b: (T // b) * (T // b + 1) // 2, "partial"),
    (lambda T, b: T // b, "row by row"),
    (lambda T, b: None, "returned None"),
])
def test_2_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(2, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out


# ---- 3. merge ---------------------------------------------------------------
def merge(a, b):
    m = np.maximum(a.row_max, b.row_max)
    ea, eb = np.exp(a.row_max - m), np.exp(b.row_max - m)
    return (a.acc * ea + b.acc * eb) / (a.row_sum * ea + b.row_sum * eb)


def test_3_right(capsys):
    right, out = check(3, merge, capsys)
    assert right and out == "Right.\n"


def _unnormalised(a, b):
    m = np.maximum(a.row_max, b.row_max)
    return a.acc * np.exp(a.row_max - m) + b.acc * np.exp(b.row_max - m)


@pytest.mark.parametrize("wrong, words", [
    (lambda a, b: (a.acc + b.acc) / (a.row_sum + b.row_sum),
     "its own maximum"),
    (_unnormalised, "wrong length"),
    (lambda a, b: a.acc / a.row_sum, "rescale each half"),
    (lambda a, b: merge(a, b)[0], "shape"),
    (lambda a, b: a, "return a state"),
    (lambda a, b: None, "returned None"),
    (lambda a, b: a.acc @ b.acc, "raised"),
])
def test_3_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(3, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out


def test_3_the_checks_halves_are_far_apart():
    """Without the rescaling the merge is far off, not off by rounding:
    the check's halves have maxima several units apart."""
    rng = np.random.default_rng(0)
    s, v = rng.standard_normal((2, 10)), rng.standard_normal((10, 3))
    s[:, 5:] += 6.0
    a, b = checks._state(s[:, :5], v[:5]), checks._state(s[:, 5:], v[5:])
    plain = (a.acc + b.acc) / (a.row_sum + b.row_sum)
    assert np.abs(plain - merge(a, b)).max() > 0.01


def test_no_hint_contains_an_answer(capsys):
    """The hints name what is off, never the code or the number."""
    wrong = {1: lambda T, H, B, b: 0,
             2: lambda T, b: 0,
             3: lambda a, b: (a.acc + b.acc) / (a.row_sum + b.row_sum)}
    for n, answer in wrong.items():
        _, out = check(n, answer, capsys)
        for giveaway in ("53,687", "n * (n + 1)", "(n + 1)", "np.exp",
                         "row_max -", "T * T"):
            assert giveaway not in out, (n, out)


def test_every_exercise_is_checked():
    assert sorted(checks.CHECKS) == [1, 2, 3]
