"""The reader's checks of book/kv_cache.ipynb's exercises: the right answer
passes, the usual mistakes get a hint, and no hint gives the answer away."""

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb.exercises import kv_cache as checks


def check(n, answer, capsys):
    right = bool(px.exercises.check("kv_cache", n, answer))
    return right, capsys.readouterr().out


# ---- 1. cache_bytes ---------------------------------------------------------
def cache_bytes(layers, H_kv, d_head, seq_len, dtype_bytes=2):
    return 2 * layers * H_kv * d_head * seq_len * dtype_bytes


def test_1_right(capsys):
    right, out = check(1, cache_bytes, capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (lambda L, h, d, T, b=2: L * h * d * T * b, "a key and a value"),
    (lambda L, h, d, T, b=2: 2 * L * h * d * T, "bytes of one value"),
    (lambda L, h, d, T, b=2: 2 * L * h * d * b, "you get"),  # no seq_len
    (lambda L, h, d, T, b=2: None, "returned None"),
])
def test_1_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(1, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out
    assert "2 * " not in out and "dtype_bytes" not in out


# ---- 2. step_flops ----------------------------------------------------------
def step_flops(config, S, use_cache=True):
    d, H, H_kv = (config.hidden_size, config.num_attention_heads,
                  config.num_key_value_heads)
    d_head, d_ff = config.head_dim, config.intermediate_size
    per_token = (2 * d * (H + 2 * H_kv) * d_head + 2 * H * d_head * d
                 + 6 * d * d_ff)
    if use_cache:
        per_layer = per_token + 4 * H * d_head * S
    else:
        per_layer = S * per_token + 4 * H * d_head * S * S
    return (config.num_hidden_layers * per_layer
            + 2 * d * config.vocab_size)


def test_2_right(capsys):
    right, out = check(2, step_flops, capsys)
    assert right and out == "Right.\n"


def test_2_the_solution_s_answer():
    def ratio(S):
        return step_flops(px.QWEN3_1_7B, S, False) / step_flops(
            px.QWEN3_1_7B, S)
    S = next(S for S in range(1, 1000) if ratio(S) >= 100)
    assert S == 122


@pytest.mark.parametrize("wrong, words", [
    (lambda c, S, u=True: step_flops(c, S, u) - 2 * c.hidden_size
     * c.vocab_size, "output head"),
    (lambda c, S, u=True: (step_flops(c, S, u) - 2 * c.hidden_size
                           * c.vocab_size) // c.num_hidden_layers
     + 2 * c.hidden_size * c.vocab_size, "every layer"),
    # the uncached step projecting one token only
    (lambda c, S, u=True: step_flops(c, S, True) if u else step_flops(
        c, S, True) + 4 * c.num_attention_heads * c.head_dim * S * (S - 1)
     * c.num_hidden_layers, "you get"),
    (lambda c, S, u=True: None, "returned None"),
])
def test_2_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(2, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out


# ---- 3. attend_last ---------------------------------------------------------
def attend_last(q, k, v, window):
    return px.scaled_dot_product_attention(q, k[-window:], v[-window:])


def test_3_right(capsys):
    right, out = check(3, attend_last, capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (lambda q, k, v, w: px.scaled_dot_product_attention(
        q, k[-w - 1:], v[-w - 1:]), "the query's own included"),
    (lambda q, k, v, w: px.scaled_dot_product_attention(q, k, v),
     "reads"),
    (lambda q, k, v, w: px.scaled_dot_product_attention(
        q, k[-w:], v), "raised"),  # shapes that do not fit
    (lambda q, k, v, w: q @ k[-w:].T @ v[-w:], "softmax"),
    (lambda q, k, v, w: px.scaled_dot_product_attention(
        q, k[-w:], v[-w:])[0], "shape"),
])
def test_3_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(3, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out


def test_no_hint_contains_an_answer(capsys):
    """The hints name what is off, never the code or the number."""
    wrong = {1: lambda L, h, d, T, b=2: L * h * d * T * b,
             2: lambda c, S, u=True: 0,
             3: lambda q, k, v, w: px.scaled_dot_product_attention(q, k, v)}
    for n, answer in wrong.items():
        _, out = check(n, answer, capsys)
        for giveaway in ("[-window:]", "k[-", "122", "2 * layers",
                         "4 * H * d_head * S"):
            assert giveaway not in out, (n, out)


def test_every_exercise_is_checked():
    assert sorted(checks.CHECKS) == [1, 2, 3]
    assert np.isclose(cache_bytes(28, 8, 128, 1), 114_688)
