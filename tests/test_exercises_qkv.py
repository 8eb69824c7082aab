"""The reader's checks of the exercises of book/qkv.ipynb.

The solution's answer is right; the mistakes a reader makes get a hint, and
no hint gives the answer away.
"""

import numpy as np
import pytest

import pyxis_nb as px

TRIL = np.tril(np.ones((6, 6), dtype=bool))  # the solution of exercise 2


def _check(exercise, answer, capsys):
    """(right?, what the reader sees)."""
    right = bool(px.exercises.check("qkv", exercise, answer))
    return right, capsys.readouterr().out


@pytest.mark.parametrize("exercise, answer", [
    (1, np.log(2)), (1, 0.6931471805599453), (1, np.float32(np.log(2))),
    (2, TRIL), (2, px.causal_mask(6)), (2, TRIL.tolist()),
    (3, 0.0), (3, 1.1e-16), (3, 0),
])
def test_the_solutions_are_right(exercise, answer, capsys):
    assert _check(exercise, answer, capsys) == (True, "Right.\n")


@pytest.mark.parametrize("answer, says", [
    (2.0, "twice"),         # e^x = 2 read as x = 2
    (0.5, "twice"),         # the weight, not the key
    (np.log(3), "twice"),   # the worked example's third key
    (0.0, "twice"),
])
def test_exercise_1_hints(answer, says, capsys):
    right, out = _check(1, answer, capsys)
    assert not right and out.startswith("Not yet:") and says in out
    assert "0.6931" not in out and "ln 2" not in out and "log" not in out


@pytest.mark.parametrize("answer, says", [
    (TRIL.astype(int), "boolean"),
    (TRIL.astype(float), "added to the scores"),
    (np.tril(np.ones((5, 5), dtype=bool)), "T = 6"),
    (np.ones(6, dtype=bool), "T = 6"),
    (~TRIL, "True means may attend"),
    (np.triu(np.ones((6, 6), dtype=bool)), "after"),
    (np.tril(np.ones((6, 6), dtype=bool), k=-1), "itself"),
    (np.ones((6, 6), dtype=bool), "15 of its 36 entries"),
    (np.eye(6, dtype=bool), "15 of its 36 entries"),
])
def test_exercise_2_hints(answer, says, capsys):
    right, out = _check(2, answer, capsys)
    assert not right and out.startswith("Not yet:") and says in out
    assert "np.tril(" not in out and str(TRIL.astype(int)) not in out


@pytest.mark.parametrize("answer, says", [
    (0.1, "depends on j"),
    (1e-9, "depends on j"),
    (-1.0, ">= 0"),
    (float("nan"), ">= 0"),
])
def test_exercise_3_hints(answer, says, capsys):
    right, out = _check(3, answer, capsys)
    assert not right and out.startswith("Not yet:") and says in out
    assert "unchanged" not in out and "0.0" not in out


def test_a_wrong_type_is_a_hint_not_an_error(capsys):
    right, out = _check(2, "a triangle", capsys)
    assert not right and out.startswith("Not yet:")
    right, out = _check(3, "zero", capsys)
    assert not right and "raised ValueError" in out

