"""The reader's checks of "Why divide by √d" (pyxis_nb/exercises/scaling.py).

The solution's answer is right, a reader's own measurement (other seeds,
own code) is right too, the mistakes a reader makes get a hint, and no hint
gives the answer away.
"""

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb.exercises.scaling import CHECKS

mean_peak = px.experiments.max_attention_weight


def _right(n, answer, capsys):
    assert px.exercises.check("scaling", n, answer)
    assert capsys.readouterr().out == "Right.\n"


def _hint(n, answer, capsys, *forbidden):
    """Not yet, with a hint that names none of the ``forbidden`` strings."""
    assert not px.exercises.check("scaling", n, answer)
    out = capsys.readouterr().out
    assert out.startswith("Not yet: ") and len(out) > 30, out
    for text in forbidden:
        assert text not in out, (text, out)
    return out


def test_the_chapter_has_four_checks():
    assert sorted(CHECKS) == [1, 2, 3, 4]


# ---- 1. twelve tokens at d = 64
def _twelve(seeds=range(20)):
    return tuple(mean_peak(64, T=12, scaled=s, seeds=seeds)
                 for s in (False, True))


def test_1_the_solution_and_a_readers_own_heads_are_right(capsys):
    _right(1, (1 / 12, *_twelve()), capsys)
    _right(1, [1 / 12, *_twelve(range(100, 120))], capsys)
    _right(1, np.array([0.0833333, *_twelve(range(50))]), capsys)


@pytest.mark.parametrize("answer, says", [
    ((1 / 6, 0.85, 0.28), "same share"),
    ((1 / 12, 0.28, 0.85), "which scores were divided"),
    ((1 / 12, *(mean_peak(64, scaled=s) for s in (False, True))),
     "6 tokens"),
    ((1 / 12, 0.5, 0.28), "off by more than"),
    ((1 / 12, 0.85), "give 3 numbers"),
    ((1 / 12, np.nan, 0.28), "finite"),
])
def test_1_mistakes_get_a_hint(answer, says, capsys):
    out = _hint(1, answer, capsys, "0.85", "0.28", "0.083")
    assert says in out


# ---- 2. dividing by d
def _stds(divide):
    rng = np.random.default_rng(5)  # a reader's own draws
    out = []
    for d in (4, 64, 1024):
        q, k = rng.standard_normal((2, 10_000, d))
        out.append(np.std((q * k).sum(axis=-1) / divide(d)))
    return out


@pytest.mark.slow
def test_2_the_solution_and_a_readers_measurement_are_right(capsys):
    _right(2, [px.experiments.dot_product_std(d, n=10_000) / d
               for d in (4, 64, 1024)], capsys)
    _right(2, _stds(lambda d: d), capsys)
    _right(2, np.array([4, 64, 1024]) ** -0.5, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("divide, says", [
    (lambda d: 1, "divide each dot product by d"),
    (lambda d: np.sqrt(d), "divide by d instead"),
    (lambda d: d ** 1.5, "measure it"),
    (lambda d: 2 * d, "many random pairs"),
])
def test_2_mistakes_get_a_hint(divide, says, capsys):
    out = _hint(2, _stds(divide), capsys, "0.5", "0.125", "0.031", "1/sqrt")
    assert says in out


def test_2_needs_three_numbers(capsys):
    assert "give 3 numbers" in _hint(2, [0.5, 0.125], capsys)


# ---- 3. the Jacobian of a uniform row
def test_3_the_solution_is_right(capsys):
    J = px.experiments.softmax_jacobian(np.zeros(6))
    _right(3, (J[0, 0], np.trace(J)), capsys)
    _right(3, [5 / 36, 5 / 6], capsys)


@pytest.mark.parametrize("answer, says", [
    ((1 / 6, 5 / 6), "a weight p_i itself"),
    ((1 / 36, 5 / 6), "with every p_i"),
    ((5 / 36, 1.0), "not the six weights"),
    ((5 / 36, 5 / 36), "sum of the six diagonal entries"),
    ((5 / 36,), "give 2 numbers"),
])
def test_3_mistakes_get_a_hint(answer, says, capsys):
    out = _hint(3, answer, capsys, "5/36", "5/6", "0.1389", "0.8333")
    assert says in out


# ---- 4. the largest score after q_norm and k_norm
def test_4_the_solution_and_a_measured_bound_are_right(capsys):
    d = 128
    q = px.rms_norm(np.random.default_rng(0).standard_normal(d), np.ones(d))
    _right(4, float(q @ q / np.sqrt(d)), capsys)  # q = k: the bound
    _right(4, np.sqrt(128), capsys)
    _right(4, [11.3137], capsys)


@pytest.mark.parametrize("answer, says", [
    (128.0, "divides it by sqrt(d)"),
    (1.0, "its length is not 1"),
    (1 / np.sqrt(128), "its length is not 1"),
    (3.0, "at most a b"),
])
def test_4_mistakes_get_a_hint(answer, says, capsys):
    out = _hint(4, answer, capsys, "11.3", "sqrt(128)", "sqrt(d) =")
    assert says in out


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_no_answer_yet_is_not_yet(n, capsys):
    assert not px.exercises.check("scaling", n, None)
    assert capsys.readouterr().out.startswith("Not yet: no answer yet")
