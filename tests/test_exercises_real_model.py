"""The reader's checks of book/real_model.ipynb's exercises: the right
answer passes, the usual mistakes get a hint, and no hint gives the answer
away."""

import zlib

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb.exercises import real_model as checks


def check(n, answer, capsys):
    right = bool(px.exercises.check("real_model", n, answer))
    return right, capsys.readouterr().out


@pytest.fixture(scope="module")
def setting():
    return checks._setting()


# ---- 1. zlib on the scored bytes --------------------------------------------
def test_1_right_and_mistakes(setting, capsys):
    _, tok, blocks = setting
    used = tok.decode(blocks[:, 1:].ravel().tolist()).encode()
    size = len(zlib.compress(used, 9))
    right_answer = 8 * size / len(used)
    right, out = check(1, right_answer, capsys)
    assert right and out == "Right.\n"
    for wrong, words in [(size / len(used), "8 bits"),
                         (8 * size / blocks[:, 1:].size, "bits per token"),
                         (8 * len(used) / size, "upside down"),
                         (3.187, "level 9")]:  # training.json's figure
        right, out = check(1, wrong, capsys)
        assert not right and out.startswith("Not yet:") and words in out
        assert f"{right_answer:.2f}" not in out


# ---- 2. kv_bytes_per_token(config) ------------------------------------------
def kv_bytes_per_token(config):
    return (2 * config["num_hidden_layers"] * config["num_key_value_heads"]
            * config["head_dim"] * 2)


def test_2_right(capsys):
    right, out = check(2, kv_bytes_per_token, capsys)
    assert right and out == "Right.\n"
    config = checks._CONFIGS["Qwen3-0.6B"]
    assert kv_bytes_per_token(config) == px.memory.kv_cache_bytes(
        28, 8, 128, seq_len=1) == 114_688


@pytest.mark.parametrize("wrong, words", [
    (lambda c: 2 * c["num_hidden_layers"] * c["num_attention_heads"]
     * c["head_dim"] * 2, "every query head"),
    (lambda c: 2 * c["num_hidden_layers"] * c["num_key_value_heads"]
     * (c["hidden_size"] // c["num_attention_heads"]) * 2, "head_dim"),
    (lambda c: c["num_hidden_layers"] * c["num_key_value_heads"]
     * c["head_dim"] * 2, "half the bytes"),
    (lambda c: c["num_hidden_layers"] * c["num_key_value_heads"]
     * c["head_dim"], "one number per head"),
    (lambda c: None, "returned None"),
    (lambda c: 7, "you get 7 bytes"),
])
def test_2_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(2, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out
    assert "114,688" not in out and "2 * " not in out


# ---- 3. four heads, one job -------------------------------------------------
@pytest.fixture(scope="module")
def costs(setting):
    model, _, blocks = setting
    one = blocks[:1]

    def loss(*heads):
        mask = np.ones((4, 8))
        for i, h in heads:
            mask[i, h] = 0
        out = model(one, head_mask=mask)
        return px.circuits.next_token_loss(out.logits, one)

    base = loss()
    alone = np.array([loss((2, h)) for h in range(4, 8)]) - base
    return base, alone, loss(*[(2, h) for h in range(4, 8)]) - base


def test_3_right(costs, capsys):
    _, alone, together = costs
    right, out = check(3, (alone, together), capsys)
    assert right and out == "Right.\n"
    assert together > alone.sum()  # the solution's finding


@pytest.mark.slow
def test_3_mistakes_get_a_hint(costs, capsys):
    base, alone, together = costs
    for wrong, words in [((alone + base, together + base), "losses"),
                         ((alone, alone.sum()), "cost together"),
                         ((alone[:3], together), "shape"),
                         (alone, "pair"),
                         ((alone * 3, together), "head_mask of ones")]:
        right, out = check(3, wrong, capsys)
        assert not right and out.startswith("Not yet:") and words in out
        assert f"{together:.3f}" not in out
