"""The reader's checks of book/gemma3.ipynb's exercises: the right answer
passes, the usual mistakes get a hint, and no hint gives the answer away.

Fast: no GGUF file is read; both checks run on weights they make."""

import numpy as np
import pytest

import pyxis_nb as px


def check(n, answer, capsys):
    right = bool(px.exercises.check("gemma3", n, answer))
    return right, capsys.readouterr().out


def back(w):
    T = w.shape[-1]
    return np.arange(T)[:, None] - np.arange(T)


def mean_distance(w):
    return (w * back(w)).sum(-1).mean(axis=(0, 2))


def near_share(w, k):
    return (w * (back(w) < k)).sum(-1).mean(axis=(0, 2))


def test_1_right(capsys):
    right, out = check(1, mean_distance, capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (lambda w: -mean_distance(w), "negative"),
    (lambda w: (w * back(w)).sum(-1).sum(-1).mean(0), "add up the queries"),
    (lambda w: (w * back(w)).mean(-1).mean(axis=(0, 2)), "not a mean"),
    (lambda w: (w * back(w)).sum(-1).mean(), "one number a head"),
    (lambda w: mean_distance(w) + 1, "sum w[i, j] * (i - j)"),
    (lambda w: None, "returned None"),
])
def test_1_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(1, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out


def test_2_right(capsys):
    right, out = check(2, near_share, capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (lambda w, k: near_share(w, k + 1), "you count"),
    (lambda w, k: (w * (back(w) > 0) * (back(w) <= k)).sum(-1)
     .mean(axis=(0, 2)), "its distance is 0"),
    (lambda w, k: near_share(w, k)[None], "one number a head"),
    (lambda w, k: near_share(w, k) / 2, "i - j < k"),
])
def test_2_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(2, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out


def test_no_hint_gives_the_answer_away(capsys):
    wrongs = [lambda w: -mean_distance(w), lambda w, k: near_share(w, k) / 2]
    for n, wrong in enumerate(wrongs, 1):
        check(n, wrong, capsys)
        assert "(w * back" not in capsys.readouterr().out
