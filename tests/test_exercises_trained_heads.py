"""The reader's checks of book/trained_heads.ipynb's exercises: the right
answer passes, the usual mistakes get a hint, and no hint gives the answer
away."""

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb.exercises import trained_heads as checks


def check(n, answer, capsys):
    right = bool(px.exercises.check("trained_heads", n, answer))
    return right, capsys.readouterr().out


def second_half(logits):
    _, _, labels, halves = checks._setting()
    token_loss, _ = px.attention_only.cross_entropy(logits, labels)
    return px.attention_only.half_losses(token_loss, halves)


@pytest.fixture(scope="module")
def setting():
    return checks._setting()


# ---- 1. a one-layer model ---------------------------------------------------
def test_1_right(capsys):
    right, out = check(1, checks.ONE_LAYER_SECOND_HALF + 0.004, capsys)
    assert right and out == "Right.\n"


@pytest.mark.parametrize("wrong, words", [
    (0.26, "two-layer"),                 # the stored model's loss
    (4.2, "second_half"),                # a first-half loss
    (1.5, "main run's settings"),
    (np.array([1.9, 1.9]), "one number"),
])
def test_1_mistakes_get_a_hint(wrong, words, capsys):
    right, out = check(1, wrong, capsys)
    assert not right and out.startswith("Not yet:") and words in out
    assert "1.88" not in out and "1.89" not in out


# ---- 2. path patching into the queries --------------------------------------
def patched(setting, into, half=1):
    trained, ids, _, _ = setting
    return [second_half(px.attention_only.path_patch(
        trained, ids, layer=0, head=h, into=into))[half] for h in range(4)]


def test_2_right(setting, capsys):
    right, out = check(2, patched(setting, "query"), capsys)
    assert right and out == "Right.\n"


@pytest.mark.slow
@pytest.mark.parametrize("mistake, words", [
    (("key", 1), "keys"), (("value", 1), "values"),
    (("query", 0), "first-half"),
])
def test_2_mistakes_get_a_hint(setting, mistake, words, capsys):
    right, out = check(2, patched(setting, *mistake), capsys)
    assert not right and out.startswith("Not yet:") and words in out
    assert "2.9" not in out and "0.2" not in out


@pytest.mark.parametrize("wrong, words", [
    ([0.3, 0.3, 0.3], "four losses"), ([0.3, 0.3, 0.3, 3.0], "path_patch"),
])
def test_2_shapes_and_guesses_get_a_hint(wrong, words, capsys):
    right, out = check(2, wrong, capsys)
    assert not right and words in out


# ---- 3. layer 1 switched off ------------------------------------------------
def zeroed(setting, layer):
    trained, ids, _, _ = setting
    state = {k: v.copy() for k, v in trained.state_dict().items()}
    state[f"layers.{layer}.self_attn.o_proj.weight"][...] = 0
    model = px.attention_only.AttentionOnlyTransformer(64, 32, 2, 4, 16)
    model.load_state_dict(state)
    return second_half(model(ids))


def test_3_right(setting, capsys):
    right, out = check(3, zeroed(setting, 1)[1], capsys)
    assert right and out == "Right.\n"


def test_3_mistakes_get_a_hint(setting, capsys):
    trained, ids, _, _ = setting
    for wrong, words in [(second_half(trained(ids))[1], "every head on"),
                         (zeroed(setting, 0)[1], "layer 0 switched off"),
                         (zeroed(setting, 1)[0], "first half"),
                         (9.0, "copy the state dict")]:
        right, out = check(3, wrong, capsys)
        assert not right and words in out
        assert f"{zeroed(setting, 1)[1]:.2f}" not in out
