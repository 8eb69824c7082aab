"""The reader's checks of book/modern_attention.ipynb's exercises: the right
answer passes, the usual mistakes get a hint, and no hint gives the answer
away."""

import math

import pytest

import pyxis_nb as px


def check(n, answer, capsys):
    right = bool(px.exercises.check("modern_attention", n, answer))
    return right, capsys.readouterr().out


# ---- 1. gpt-oss-120b's cache, layer by layer --------------------------------
PER_LAYER = 2 * 8 * 64 * 2  # K and V, 8 heads of 64, bf16


def oss_cache(T):
    return 18 * PER_LAYER * T + 18 * PER_LAYER * min(T, 128)


def test_1_right(capsys):
    right, out = check(1, oss_cache, capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (lambda T: 36 * PER_LAYER * T, "every layer as full"),
    (lambda T: 18 * PER_LAYER * (T + min(T, 127)), "one token too few"),
    (lambda T: oss_cache(T) // 2, "half the bytes"),
    (lambda T: oss_cache(T) // 4, "factor of 0.25"),
    (lambda T: 18 * PER_LAYER * T + 17 * PER_LAYER * min(T, 128),
     "on its own"),
    (lambda T: None, "returned None"),
])
def test_1_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(1, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out
    assert "18 *" not in out and "min(T" not in out


# ---- 2. the sink that takes half --------------------------------------------
def test_2_right(capsys):
    right, out = check(2, math.log(10), capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (10.0, "the exponent itself"),
    (0.0, "more than half"),
    (5.0, "less than half"),
    (float("inf"), "finite"),
])
def test_2_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(2, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out
    assert "2.30" not in out and "log(" not in out and "ln " not in out


# ---- 3. forgetting ----------------------------------------------------------
def test_3_right(capsys):
    right, out = check(3, 0.25, capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (1.0, "without decay"), (0.5, "read's own step"),
    (0.125, "too many halvings"), (0.3, "halve new once"),
])
def test_3_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(3, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out
    assert "0.25" not in out and "1/4" not in out


# ---- 4. where the latent pays -----------------------------------------------
def first_twice(scale=1.0):
    ds = px.memory.attention_configs()["DeepSeek-V3"]
    W = px.memory.mla_decode_cost(ds, 1, absorb=True)["weight_bytes"]
    return math.ceil(scale * W / (128 * 320 * 2 - 576 * 2))


def test_4_right(capsys):
    right, out = check(4, first_twice(), capsys)
    assert right and out == "Right.\n"


def test_4_mistakes_get_a_hint(capsys):
    S = first_twice()
    for wrong, words in ((S - 1, "not yet twice"),
                         (S + 1, "look for the shortest"),
                         (first_twice(0.5), "FP8"), (2.5, "whole number")):
        right, out = check(4, wrong, capsys)
        assert not right and out.startswith("Not yet:") and words in out
        assert f"{S:,}" not in out and str(S) not in out
