"""AttentionOnlyTransformer: hand-written backward against torch.autograd.

With torch, ``loss_and_grads`` must equal autograd's gradients of the same
model written in torch (float64, 1e-10), over random shapes, 1 to 3 layers,
several head counts and labels with -100. Without torch those tests skip and
the finite-difference check still runs. Bad input must raise ValueError.
"""

import numpy as np
import pytest

import pyxis_nb as px

try:
    import torch
except ImportError:  # the finite-difference tests below still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None,
                                 reason="torch is not installed")


def batch(rng, V, B, T, ignore=0.2):
    ids = rng.integers(0, V, size=(B, T))
    labels = rng.integers(0, V, size=(B, T))
    labels[rng.random((B, T)) < ignore] = -100
    labels[0, 0] = rng.integers(0, V)  # at least one label to score
    return ids, labels


def torch_loss(state, ids, labels, num_layers, H, scale, is_causal=True):
    """The same model in torch, for autograd; returns loss and leaves."""
    F = torch.nn.functional
    w = {k: torch.tensor(v, requires_grad=True) for k, v in state.items()}
    ids_t = torch.tensor(ids)
    B, T = ids.shape
    x = w["embed_tokens.weight"][ids_t] + w["embed_positions.weight"][:T]
    for i in range(num_layers):
        p = {n: w[f"layers.{i}.self_attn.{n}_proj.weight"] for n in "qkvo"}
        q, k, v = (F.linear(x, p[n]).view(B, T, H, -1).transpose(1, 2)
                   for n in "qkv")
        z = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal,
                                           scale=scale)
        x = x + F.linear(z.transpose(1, 2).reshape(B, T, -1), p["o"])
    logits = F.linear(x, w["lm_head.weight"])
    loss = F.cross_entropy(logits.reshape(B * T, -1),
                           torch.tensor(labels).reshape(-1), ignore_index=-100)
    return loss, logits, w


@needs_torch
@pytest.mark.parametrize("num_layers", [1, 2, 3])
@pytest.mark.parametrize("num_heads", [1, 2, 4])
@pytest.mark.parametrize("scale", [None, 1.0])
def test_loss_and_grads_match_torch_autograd(num_layers, num_heads, scale):
    rng = np.random.default_rng(100 * num_layers + num_heads)
    V = int(rng.integers(3, 12))
    d_model = num_heads * int(rng.integers(1, 5))
    T_max = int(rng.integers(2, 9))
    B, T = int(rng.integers(1, 4)), int(rng.integers(1, T_max + 1))
    model = px.attention_only.AttentionOnlyTransformer(V, d_model, num_layers, num_heads,
                                        T_max, scale=scale, seed=int(V))
    ids, labels = batch(rng, V, B, T)
    loss, grads = model.loss_and_grads(ids, labels)
    ref, logits, leaves = torch_loss(model.state_dict(), ids, labels,
                                     num_layers, num_heads, model.scale)
    ref.backward()
    assert loss == pytest.approx(ref.item(), rel=1e-12)
    np.testing.assert_allclose(model(ids), logits.detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    assert list(grads) == list(model.state_dict())
    for key, g in grads.items():
        np.testing.assert_allclose(g, leaves[key].grad.numpy(),
                                   rtol=1e-10, atol=1e-12, err_msg=key)


@needs_torch
def test_forward_without_mask_matches_torch():
    model = px.attention_only.AttentionOnlyTransformer(7, 8, 2, 2, 6, seed=3)
    ids, labels = batch(np.random.default_rng(0), 7, 2, 6)
    _, logits, _ = torch_loss(model.state_dict(), ids, labels, 2, 2,
                              model.scale, is_causal=False)
    np.testing.assert_allclose(model(ids, is_causal=False),
                               logits.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_finite_differences_agree_with_loss_and_grads():
    model = px.attention_only.AttentionOnlyTransformer(9, 6, 2, 3, 5, seed=1)
    ids, labels = batch(np.random.default_rng(1), 9, 2, 5)
    errors = px.attention_only.gradient_check(model, ids, labels, per_key=3)
    assert set(errors) == set(model.state_dict())
    assert max(errors.values()) < 1e-6, errors


def test_softmax_backward_is_the_jacobian_product():
    rng = np.random.default_rng(2)
    scores, g = rng.standard_normal((2, 7))
    p = px.softmax(scores)
    expected = px.experiments.softmax_jacobian(scores) @ g
    np.testing.assert_allclose(px.attention_only.softmax_backward(p, g), expected,
                               rtol=1e-12, atol=1e-15)


def test_weights_are_causal_and_shaped():
    model = px.attention_only.AttentionOnlyTransformer(5, 8, 3, 4, 6)
    ids = np.zeros((2, 6), dtype=int)
    logits, weights = model.forward(ids, output_attentions=True)
    assert logits.shape == (2, 6, 5) and len(weights) == 3
    for w in weights:
        assert w.shape == (2, 4, 6, 6)
        assert np.all(np.triu(w[0, 0], k=1) == 0)
        np.testing.assert_allclose(w.sum(-1), 1.0)


def test_float32_stays_float32():
    model = px.attention_only.AttentionOnlyTransformer(5, 8, 1, 2, 4, dtype=np.float32)
    ids, labels = batch(np.random.default_rng(3), 5, 2, 4)
    _, grads = model.loss_and_grads(ids, labels)
    assert model(ids).dtype == np.float32
    assert all(g.dtype == np.float32 for g in grads.values())


def test_adam_lowers_the_loss_and_updates_in_place():
    model = px.attention_only.AttentionOnlyTransformer(6, 8, 1, 2, 4, seed=0)
    before = model.state_dict()["lm_head.weight"]
    ids, labels = batch(np.random.default_rng(4), 6, 4, 4, ignore=0.0)
    opt = px.attention_only.Adam(model.state_dict(), lr=0.05)
    first, _ = model.loss_and_grads(ids, labels)
    for _ in range(30):
        opt.step(model.loss_and_grads(ids, labels)[1])
    assert model.loss_and_grads(ids, labels)[0] < 0.5 * first
    assert model.state_dict()["lm_head.weight"] is before


def test_repeated_tokens_repeat_and_label_the_next_token():
    ids, labels, halves = px.attention_only.repeated_tokens(
        8, (3, 5), 20, np.random.default_rng(5))
    assert ids.shape == labels.shape == (8, 10)
    for row, lab, h in zip(ids, labels, halves):
        assert np.array_equal(row[h:2 * h], row[:h])
        assert np.array_equal(lab[:2 * h - 1], row[1:2 * h])
        assert np.all(lab[2 * h - 1:] == -100)
    first, second = px.attention_only.half_masks(halves, 10)
    assert not np.any(first & second)


def test_state_dict_round_trip():
    a = px.attention_only.AttentionOnlyTransformer(5, 8, 2, 2, 4, seed=0)
    b = px.attention_only.AttentionOnlyTransformer(5, 8, 2, 2, 4, seed=1)
    b.load_state_dict(a.state_dict())
    ids = np.arange(4)[None] % 5
    np.testing.assert_array_equal(a(ids), b(ids))


# Bad configurations, inputs and state dicts: rows of tests/test_bad_input.py.


def test_stored_weights_reproduce_from_their_seed():
    """The first steps of `make trained-heads`, retrained, give the stored
    loss and head-score history; the stored weights give the stored
    model's behaviour, and the last recorded scores are theirs."""
    model, history = px.attention_only.load_trained_heads("main")
    _, short = px.attention_only.train_run("main", steps=40)
    for part in ("first_half", "second_half"):
        np.testing.assert_allclose(short[part], history[part][:40], rtol=1e-9)
    n = len(short["score_steps"])  # steps 0, 10, 20, 30 and 40
    np.testing.assert_array_equal(short["score_steps"],
                                  history["score_steps"][:n])
    for name in ("previous", "duplicate", "induction"):
        np.testing.assert_allclose(short[name], history[name][:n],
                                   atol=1e-6, err_msg=name)
    ids, _, halves = px.attention_only.repeated_tokens(
        256, (4, 8), model.vocab_size, np.random.default_rng(1))
    final = px.attention_only.head_scores(model, ids, halves)
    assert history["score_steps"][-1] == 1500
    for name, scores in final.items():  # float32 weights: 1e-4
        np.testing.assert_allclose(scores, history[name][-1], atol=1e-4)
    assert final["induction"][1].min() > 0.8


def test_recording_scores_leaves_training_unchanged():
    kw = dict(steps=12, batch_size=4, half=(2, 3), seed=3)
    plain = px.attention_only.train(px.attention_only.AttentionOnlyTransformer(6, 8, 2, 2, 6), **kw)
    model = px.attention_only.AttentionOnlyTransformer(6, 8, 2, 2, 6)
    scored = px.attention_only.train(model, score_every=5, **kw)
    np.testing.assert_array_equal(plain["second_half"],
                                  scored["second_half"])
    assert list(scored["score_steps"]) == [0, 5, 10, 12]
    assert scored["induction"].shape == (4, 2, 2)
    ids, _, halves = px.attention_only.repeated_tokens(256, (2, 3), 6,
                                        np.random.default_rng(1))
    last = px.attention_only.head_scores(model, ids, halves)["induction"]
    np.testing.assert_allclose(scored["induction"][-1], last, rtol=1e-12)


def test_scores_over_mixed_block_lengths_are_per_query_means():
    rng = np.random.default_rng(6)
    halves = np.array([2, 4, 3])
    weights = rng.random((3, 2, 8, 8))
    for shift, score in ((0, px.circuits.duplicate_token_score),
                         (1, px.circuits.induction_score)):
        picked = [weights[b, :, h + j, j + shift]
                  for b, h in enumerate(halves) for j in range(h - shift)]
        np.testing.assert_allclose(score(weights, halves),
                                   np.mean(picked, axis=0), rtol=1e-12)
        np.testing.assert_allclose(score(weights[1:2], 4),
                                   score(weights[1:2], halves[1:2]))
    np.testing.assert_array_equal(px.circuits.offset_score(weights, 1),
                                  px.circuits.previous_token_score(weights))
    t = np.arange(3, 8)
    np.testing.assert_allclose(px.circuits.offset_score(weights, 3),
                               weights[:, :, t, t - 3].mean(axis=(0, 2)))


def head_output(model, ids, layer, head):
    """Head ``head`` of ``layer``'s write to the residual stream, from the
    model's own weights (B, T, d_model)."""
    _, weights = model.forward(ids, output_attentions=True)
    x = model.state_dict()["embed_tokens.weight"][ids] \
        + model.state_dict()["embed_positions.weight"][:ids.shape[1]]
    w = {n: model.state_dict()[f"layers.{layer}.self_attn.{n}.weight"]
         for n in ("v_proj", "o_proj")}
    assert layer == 0  # x is the input of layer 0
    cols = slice(head * model.head_dim, (head + 1) * model.head_dim)
    v = x @ w["v_proj"][cols].T  # (B, T, d_head)
    return (weights[0][:, head] @ v) @ w["o_proj"][:, cols].T


def without_head(model, layer, head):
    state = {k: v.copy() for k, v in model.state_dict().items()}
    cols = slice(head * model.head_dim, (head + 1) * model.head_dim)
    state[f"layers.{layer}.self_attn.o_proj.weight"][:, cols] = 0
    ablated = px.attention_only.AttentionOnlyTransformer(
        model.vocab_size, model.hidden_size, model.num_hidden_layers,
        model.num_attention_heads, model.max_position_embeddings)
    ablated.load_state_dict(state)
    return ablated


def test_path_patch_removes_the_head_from_later_inputs_only():
    model = px.attention_only.AttentionOnlyTransformer(7, 8, 2, 2, 6, seed=4)
    ids = np.random.default_rng(7).integers(0, 7, size=(3, 6))
    np.testing.assert_allclose(
        px.attention_only.path_patch(model, ids, layer=0, head=1, into=()), model(ids),
        rtol=1e-12, atol=1e-12)
    # removed from all of layer 1's inputs: the ablated model's logits
    # plus the head's direct path to lm_head
    c = head_output(model, ids, 0, 1)
    expected = without_head(model, 0, 1)(ids) \
        + c @ model.state_dict()["lm_head.weight"].T
    patched = px.attention_only.path_patch(model, ids, layer=0, head=1,
                            into=("query", "key", "value"))
    np.testing.assert_allclose(patched, expected, rtol=1e-10, atol=1e-12)
    # each input alone changes the logits, and differently
    alone = [px.attention_only.path_patch(model, ids, layer=0, head=1, into=n)
             for n in ("query", "key", "value")]
    for a in alone:
        assert not np.allclose(a, model(ids))
    assert not np.allclose(alone[0], alone[1])
    # the last layer has no later layer to remove it from
    np.testing.assert_allclose(
        px.attention_only.path_patch(model, ids, layer=1, head=0, into="query"), model(ids),
        rtol=1e-12, atol=1e-12)


def torch_path_patch(model, ids, head, into):
    """path_patch in torch for a 2-layer model, layer 0's head ``head``."""
    F = torch.nn.functional
    w = {k: torch.tensor(v) for k, v in model.state_dict().items()}
    B, T = ids.shape
    H, d_head = model.num_attention_heads, model.head_dim
    x = w["embed_tokens.weight"][torch.tensor(ids)] \
        + w["embed_positions.weight"][:T]

    def attend(i, xq, xk, xv):
        p = {n: w[f"layers.{i}.self_attn.{n}_proj.weight"] for n in "qkvo"}
        q, k, v = (F.linear(x_, p[n]).view(B, T, H, -1).transpose(1, 2)
                   for x_, n in zip((xq, xk, xv), "qkv"))
        z = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           scale=model.scale)
        cols = slice(head * d_head, (head + 1) * d_head)
        c = z[:, head] @ p["o"][:, cols].T
        return F.linear(z.transpose(1, 2).reshape(B, T, -1), p["o"]), c

    out, c = attend(0, x, x, x)
    x = x + out
    xs = [x - c if n in into else x for n in ("query", "key", "value")]
    x = x + attend(1, *xs)[0]
    return F.linear(x, w["lm_head.weight"]).numpy()


@needs_torch
@pytest.mark.parametrize("into", ["query", "key", "value",
                                  ("query", "value")])
def test_path_patch_matches_torch(into):
    model = px.attention_only.AttentionOnlyTransformer(7, 8, 2, 2, 6, seed=6)
    ids = np.random.default_rng(9).integers(0, 7, size=(3, 6))
    np.testing.assert_allclose(
        px.attention_only.path_patch(model, ids, layer=0, head=1, into=into),
        torch_path_patch(model, ids, 1, into), rtol=1e-10, atol=1e-12)


def test_value_parts_add_up_to_the_head():
    model = px.attention_only.AttentionOnlyTransformer(7, 8, 1, 2, 6, seed=5)
    ids = np.random.default_rng(8).integers(0, 7, size=(2, 6))
    parts = [px.attention_only.value_from_embedding(model, ids, head=0, part=p)
             for p in ("tokens", "positions")]
    # one layer: logits are linear in the head's output, which is linear
    # in its input, tokens + positions
    np.testing.assert_allclose(parts[0] + parts[1],
                               model(ids) + without_head(model, 0, 0)(ids),
                               rtol=1e-10, atol=1e-12)


def test_copying_score_of_an_identity_and_a_negated_circuit():
    V = d = 4
    model = px.attention_only.AttentionOnlyTransformer(V, d, 1, 1, 3)
    state = model.state_dict()
    state["embed_tokens.weight"][...] = np.eye(V)
    state["lm_head.weight"][...] = np.eye(V)
    state["layers.0.self_attn.v_proj.weight"][...] = np.eye(d)
    state["layers.0.self_attn.o_proj.weight"][...] = 2 * np.eye(d)
    assert px.attention_only.copying_score(model, 0).tolist() == [1.0]
    state["layers.0.self_attn.o_proj.weight"][...] = -np.eye(d)
    assert px.attention_only.copying_score(model, 0).tolist() == [0.0]


@pytest.mark.parametrize("call, match", [
    (lambda m, x: px.attention_only.path_patch(m, x, layer=0, head=0, into="queries"),
     r"into must be one of .*got 'queries'"),
    (lambda m, x: px.attention_only.path_patch(m, x, layer=2, head=0, into="query"),
     r"layer .*<= 1, got 2"),
    (lambda m, x: px.attention_only.path_patch(m, x, layer=0, head=2, into="key"),
     r"head .*<= 1, got 2"),
    (lambda m, x: px.attention_only.value_from_embedding(m, x, head=0, part="both"),
     r"part must be one of .*got 'both'"),
    (lambda m, x: px.attention_only.copying_score(m, -1), r"layer .*0 <= layer"),
])
def test_bad_patch_arguments_raise(call, match):
    model = px.attention_only.AttentionOnlyTransformer(5, 8, 2, 2, 4)
    with pytest.raises(ValueError, match=match):
        call(model, np.zeros((1, 4), dtype=int))


def test_a_run_without_stored_weights_is_refused_not_made_up():
    with pytest.raises(ValueError, match=r"keeps the history .* not its "
                                         r"weights"):
        px.attention_only.load_trained_heads("wide, scale 1 (unscaled)")
    history = px.attention_only.load_training_history(
        "wide, scale 1 (unscaled)")
    assert history["first_half"].shape == history["second_half"].shape
    with pytest.raises(ValueError, match=r"name .*'nope'"):
        px.attention_only.load_trained_heads("nope")


def test_a_file_without_the_run_is_refused(tmp_path):
    empty = tmp_path / "heads.npz"
    np.savez(empty, **{"main/first_half": np.zeros(3)})
    with pytest.raises(ValueError, match=r"holds nothing of that run"):
        px.attention_only.load_training_history("wide, scale 1 (unscaled)",
                                                 path=empty)
