"""The reader's checks of book/smollm2.ipynb's exercises: the right answer
passes, the usual mistakes get a hint, and no hint gives the answer away.

Fast: no GGUF file is read. Exercise 3's value is the chapter's measurement
on the model; the chapter's solution cell asserts that the check accepts
what it measures."""

import numpy as np
import pytest

import pyxis_nb as px


def check(n, answer, capsys):
    right = bool(px.exercises.check("smollm2", n, answer))
    return right, capsys.readouterr().out


# ---- 1. decode_q8_0 ---------------------------------------------------------
def decode_q8_0(block):
    d = block[:2].view(np.float16).astype(np.float32)
    return d * block[2:].view(np.int8).astype(np.float32)


def test_1_right(capsys):
    right, out = check(1, decode_q8_0, capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (lambda b: b[:2].view(np.float16).astype(np.float32)
     * b[2:].astype(np.float32), "with their sign"),
    (lambda b: b[2:].view(np.int8).astype(np.float32), "you return the codes"),
    (lambda b: b[-2:].view(np.float16).astype(np.float32)
     * b[:32].view(np.int8).astype(np.float32), "float16 scale"),
    (lambda b: decode_q8_0(b)[:16], "32 weights"),
    (lambda b: None, "returned None"),
])
def test_1_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(1, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out
    assert "view(np.int8)" not in out and "int8" not in out


# ---- 2. sink_scores ---------------------------------------------------------
def sink_scores(weights):
    return weights[:, :, 1:, 0].mean(axis=(0, 2))


def test_2_right(capsys):
    right, out = check(2, sink_scores, capsys)
    assert right and out == "Right.\n"


def test_2_equals_the_package():
    w = np.random.default_rng(0).random((2, 3, 5, 5))
    np.testing.assert_allclose(sink_scores(w), px.circuits.sink_score(w))


@pytest.mark.parametrize("wrong, words", [
    (lambda w: w[:, :, :, 0].mean(axis=(0, 2)), "query 0"),
    (lambda w: w[:, :, 1:, 0].sum(axis=2).mean(axis=0), "mean"),
    (lambda w: w[:, :, 1:, 0].mean(axis=2), "averaged over the batch"),
    (lambda w: w[:, :, 1:, -1].mean(axis=(0, 2)), "first key"),
    (lambda w: None, "returned None"),
])
def test_2_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(2, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out
    assert "[:, :, 1:, 0]" not in out


# ---- 3. the best induction head alone ----------------------------------------
def test_3_right(capsys):
    right, out = check(3, 1.872, capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (5.042, "with the head off"),        # the loss, not the change
    (8.514, "top 6 together"),
    (-1.872, "sign"),
    (1.419, "you get 1.419"),            # a sixth of the six
    ("more", "give a number"),
    (True, "give a number"),
])
def test_3_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(3, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out
    assert "1.87" not in out
