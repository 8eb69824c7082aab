"""Tests of what analysis asks of the model's forward (every layer's
weights, head ablation, the RoPE layout bug) and of pyxis_nb.circuits' scores."""

import numpy as np
import pytest

import pyxis_nb as px
from checkpoints import CIRCUIT_SIZES

CONFIG = px.ModelConfig(**CIRCUIT_SIZES)
IDS = np.random.default_rng(1).integers(0, 50, (2, 9))


@pytest.fixture(scope="module")
def model():
    return px.Qwen3ForCausalLM.from_config(CONFIG, seed=3,
                                           tie_word_embeddings=True,
                                           attn_implementation="eager")


def _rebuild(model, edit):
    state = {k: v.copy() for k, v in model.state_dict().items()}
    edit(state)
    return px.Qwen3ForCausalLM.from_state_dict(state, CONFIG,
                                               attn_implementation="eager")


def test_attentions_are_the_layers_own(model):
    """Layer 0's weights equal MultiHeadAttention.forward's on its input."""
    out = model(IDS, output_attentions=True)
    np.testing.assert_allclose(out.logits, model(IDS).logits, rtol=0, atol=0)
    assert out.attentions.shape == (2, 2, 4, 9, 9)  # (L, B, H, T, T)
    layer = model.layers[0]
    x = layer.input_layernorm(model.embed_tokens[IDS])
    _, w = layer.self_attn(x, output_attentions=True)
    np.testing.assert_allclose(out.attentions[0], w, rtol=0, atol=1e-13)
    assert np.all(np.triu(out.attentions, k=1) == 0)
    np.testing.assert_allclose(out.attentions.sum(-1), 1.0, atol=1e-12)
    assert model(IDS).attentions is None  # only when asked for


def test_head_mask_is_zeroing_the_heads_o_proj_columns(model):
    mask = np.ones((2, 4))
    mask[1, 2] = 0

    def edit(state):
        state["model.layers.1.self_attn.o_proj.weight"][:, 8:12] = 0

    out = model(IDS, head_mask=mask, output_attentions=True)
    np.testing.assert_allclose(out.logits, _rebuild(model, edit)(IDS).logits,
                               atol=1e-12)
    assert np.abs(out.logits - model(IDS).logits).max() > 1e-3
    assert np.all(out.attentions[1, :, 2] == 0)  # as HF: weights times mask
    np.testing.assert_array_equal(model(IDS, head_mask=np.ones((2, 4))).logits,
                                  model(IDS).logits)


def test_interleaved_rope_needs_rows_and_norms_permuted(model):
    right = model(IDS).logits
    wrong = model(IDS, interleaved_rope=True).logits
    assert np.abs(wrong - right).max() > 1e-3

    def permute(norms):
        def edit(state):
            for key in list(state):
                if "_proj" in key and ("q_" in key or "k_" in key) or (
                        norms and "_norm" in key and "self_attn" in key):
                    state[key] = px.permute_qk_proj(state[key], head_dim=4,
                                                    inverse=True)
        return edit

    model = _rebuild(model, lambda s: None)
    for key in ("q_norm", "k_norm"):  # give the norms gains that matter
        for layer in model.layers:
            setattr(layer.self_attn, key, np.linspace(0.5, 1.5, 4))
    right = model(IDS).logits
    fixed = _rebuild(model, permute(True))(IDS, interleaved_rope=True).logits
    half = _rebuild(model, permute(False))(IDS, interleaved_rope=True).logits
    np.testing.assert_allclose(fixed, right, atol=1e-12)
    assert np.abs(half - right).max() > 1e-6


def test_interleaved_rope_with_a_cache_equals_one_pass(model):
    full = model(IDS, interleaved_rope=True).logits
    cache = model.new_cache(max_cache_len=9, batch_size=2)
    first = model(IDS[:, :5], cache=cache, interleaved_rope=True).logits
    rest = model(IDS[:, 5:], cache=cache, interleaved_rope=True).logits
    np.testing.assert_allclose(np.concatenate([first, rest], 1), full,
                               atol=1e-12)


def test_next_token_loss_is_mean_cross_entropy(model):
    logits = model(IDS).logits
    p = px.softmax(logits[:, :-1])
    picked = np.take_along_axis(p, IDS[:, 1:, None], -1)
    assert px.circuits.next_token_loss(logits, IDS) == pytest.approx(
        -np.log(picked).mean(), rel=1e-12)


def test_next_token_loss_against_torch(model):
    torch = pytest.importorskip("torch")
    logits = model(IDS).logits
    ref = torch.nn.functional.cross_entropy(
        torch.tensor(logits[:, :-1]).flatten(0, 1),
        torch.tensor(IDS[:, 1:]).flatten())
    assert px.circuits.next_token_loss(logits, IDS) == pytest.approx(ref.item(),
                                                            rel=1e-10)


def test_next_token_loss_per_token_against_torch(model):
    """reduction="none" as torch's: token t + 1's loss at [b, t]."""
    torch = pytest.importorskip("torch")
    logits = model(IDS).logits
    ref = torch.nn.functional.cross_entropy(
        torch.tensor(logits[:, :-1]).transpose(1, 2),
        torch.tensor(IDS[:, 1:]), reduction="none").numpy()
    got = px.circuits.next_token_loss(logits, IDS, reduction="none")
    assert got.shape == IDS[:, 1:].shape
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    assert got.mean() == pytest.approx(
        px.circuits.next_token_loss(logits, IDS), rel=1e-12)


def test_next_token_loss_over_several_row_blocks(rng):
    """Longer than the rows summed at a time (16), two rows, float32, and
    logits of 1e4 (a softmax without its max taken out overflows): each
    token's loss is -log softmax of its logits, in float64."""
    logits = (rng.standard_normal((2, 41, 50)) * 3).astype(np.float32)
    logits[1, 20, 7] = 1e4
    ids = rng.integers(0, 50, (2, 41))
    z = logits[:, :-1].astype(np.float64)
    top = z.max(axis=-1, keepdims=True)
    log_p = z - top - np.log(np.exp(z - top).sum(axis=-1, keepdims=True))
    want = -np.take_along_axis(log_p, ids[:, 1:, None], -1)[..., 0]
    got = px.circuits.next_token_loss(logits, ids, reduction="none")
    assert got.dtype == np.float64 and np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_sink_score():
    w = np.zeros((1, 2, 4, 4))
    w[0, 0, :, 0] = 1.0          # head 0: everything on token 0
    w[0, 1] = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]  # uniform
    got = px.circuits.sink_score(w)
    np.testing.assert_allclose(got, [1.0, np.mean([1 / 2, 1 / 3, 1 / 4])])


def test_head_pair_distance():
    rng = np.random.default_rng(0)
    w = px.softmax(rng.standard_normal((2, 3, 5, 5)))
    w[:, 1] = w[:, 0]                        # heads 0 and 1 alike
    w[:, 2] = np.eye(5)[[4, 0, 1, 2, 3]]     # head 2: one-hot rows
    w[:, 0, 1:] = np.eye(5)[[3, 4, 0, 1]] * 1.0
    w[:, 1, 1:] = w[:, 0, 1:]
    d = px.circuits.head_pair_distance(w)
    assert d.shape == (3, 3) and np.array_equal(d, d.T)
    assert d[0, 1] == 0 and np.all(np.diag(d) == 0)
    assert d[0, 2] == pytest.approx(1.0)     # disjoint one-hot rows


def test_ov_copying_score_signs(model):
    """An OV circuit A A^T copies (score 1); its negative suppresses (-1)."""
    layer = model.layers[0].self_attn
    embed = model.embed_tokens * model.layers[0].input_layernorm.weight
    inner = embed.T @ (model.lm_head * model.norm.weight)  # (d_model, .)
    for sign in (1, -1):
        def edit(state):
            w_v = state["model.layers.0.self_attn.v_proj.weight"][:4]
            o = state["model.layers.0.self_attn.o_proj.weight"]
            o[:, :4] = sign * (w_v @ inner).T   # head 0 reads KV head 0
        score = px.circuits.ov_copying_score(_rebuild(model, edit))
        assert score[0, 0] == pytest.approx(sign, abs=1e-9)
        assert score.shape == (2, 4) and np.all(np.abs(score) <= 1 + 1e-12)
    assert layer.o_proj is model.layers[0].self_attn.o_proj  # unchanged


def test_next_token_loss_refuses_mismatched_ids():
    with pytest.raises(ValueError, match=r"input_ids has shape \(2, 8\).*"
                                         r"\(2, 9\)"):
        px.circuits.next_token_loss(np.zeros((2, 9, 50)), IDS[:, :8])
