"""The reader's checks of book/permutation.ipynb's exercises: the solution's
answer is right, the mistakes a reader makes get a hint, and no hint gives
the answer away."""

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb.exercises import permutation as ex


def _freqs(d_model, step=2):
    return 10000.0 ** (-np.arange(0, d_model, step) / d_model)


def right_unshuffle(rows, perm):
    return rows[np.argsort(perm)]


def right_unshuffle_by_matrix(rows, perm):
    return np.eye(len(perm))[perm].T @ rows  # P^T undoes P


def right_dot(k, d_model):
    return np.cos(k * _freqs(d_model)).sum()


@pytest.mark.parametrize("exercise, answer", [
    (1, right_unshuffle),
    (1, right_unshuffle_by_matrix),
    (2, [0]),
    (2, np.array([0])),
    (2, 0),
    (3, right_dot),
])
def test_the_solution_is_right(exercise, answer, capsys):
    assert px.exercises.check("permutation", exercise, answer)
    assert capsys.readouterr().out == "Right.\n"


def test_the_chapter_solutions_pass():
    """The chapter's own solution to exercise 2, measured as it does."""
    rng = np.random.default_rng(0)
    vocab = sorted({"hungry", "cats", "chase", "dogs"})
    embedding = rng.standard_normal((len(vocab), 16))
    x = embedding[[vocab.index(t)
                   for t in ["hungry", "cats", "chase", "dogs"]]]
    head = px.Head(hidden_size=16, head_dim=8, seed=0)
    perm = np.array([0, 3, 2, 1])
    gap = np.abs(head(x[perm], is_causal=True)
                 - head(x, is_causal=True)[perm]).max(axis=-1)
    assert ex.causal_rows([i for i in range(4) if gap[i] < 1e-12]) is None


MISTAKES = [
    # indexing with perm again: right for a swap, wrong for a cycle
    (1, lambda rows, perm: rows[perm], "second time"),
    (1, lambda rows, perm: rows, "do not come back"),
    (1, lambda rows, perm: rows[0], "returned shape"),
    (1, lambda rows, perm: None, "no answer yet"),
    (2, [0, 1, 2, 3], "sees only positions"),
    (2, [], "one position does keep"),
    (2, [0, 3], "same tokens in both"),
    (2, [1], "same tokens in both"),
    (2, [4], "four positions"),
    (3, lambda k, d: np.sin(k * _freqs(d)).sum(), "sum of the sines"),
    (3, lambda k, d: np.cos(k * _freqs(d, 1)).sum(), "one frequency per"),
    (3, lambda k, d: 2 * right_dot(k, d), "not the table's"),
    (3, lambda k, d: None, "no answer yet"),
]


@pytest.mark.parametrize("exercise, answer, hint", MISTAKES)
def test_a_mistake_gets_a_hint(exercise, answer, hint, capsys):
    assert not px.exercises.check("permutation", exercise, answer)
    out = capsys.readouterr().out
    assert out.startswith("Not yet: ") and hint in out, out


@pytest.mark.parametrize("exercise, answer, hint", MISTAKES)
def test_no_hint_gives_the_answer(exercise, answer, hint, capsys):
    px.exercises.check("permutation", exercise, answer)
    out = capsys.readouterr().out
    for solution in ("argsort", "[0]", "np.cos(", ".T @", "cos(k"):
        assert solution not in out, out


def test_a_broken_answer_is_not_yet(capsys):
    def broken(*args):
        raise IndexError("my bug")
    for exercise in (1, 3):
        assert not px.exercises.check("permutation", exercise, broken)
        assert "my bug" in capsys.readouterr().out
