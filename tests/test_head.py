"""Tests of pyxis_nb.head.Head: seeding, identity head, scores, weights, forward."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyxis_nb as px


def test_shapes_and_repr():
    h = px.Head(6, 4, seed=1)
    assert (h.hidden_size, h.head_dim) == (6, 4)
    assert h.Wq.shape == h.Wk.shape == h.Wv.shape == (6, 4)
    assert repr(h) == "Head(hidden_size=6, head_dim=4)"


def test_same_seed_same_weights_different_seed_different():
    a, b, c = px.Head(8, 4, seed=3), px.Head(8, 4, seed=3), px.Head(8, 4, seed=4)
    for name in ("Wq", "Wk", "Wv"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
        assert not np.allclose(getattr(a, name), getattr(c, name))
    # the three projections are different matrices
    assert not np.allclose(a.Wq, a.Wk) and not np.allclose(a.Wk, a.Wv)


def test_weights_have_std_one_over_sqrt_d_model():
    h = px.Head(256, 64, seed=0)
    W = np.concatenate([h.Wq, h.Wk, h.Wv])
    assert abs(W.std() * np.sqrt(256) - 1.0) < 0.02
    assert abs(W.mean()) < 0.01


def test_identity_head_passes_inputs_through(rng):
    h = px.Head.identity(5)
    assert (h.hidden_size, h.head_dim) == (5, 5)
    x = rng.standard_normal((2, 4, 5))
    q, k, v = h.qkv(x)
    assert np.array_equal(q, x) and np.array_equal(k, x) and np.array_equal(v, x)
    np.testing.assert_allclose(h.scores(x, scaled=False), x @ np.swapaxes(x, -1, -2), rtol=1e-14)


def test_qkv_projects_rows(rng):
    h = px.Head(6, 3, seed=2)
    x = rng.standard_normal((4, 6))
    q, k, v = h.qkv(x)
    np.testing.assert_allclose(q, x @ h.Wq, rtol=1e-14)
    np.testing.assert_allclose(k, x @ h.Wk, rtol=1e-14)
    np.testing.assert_allclose(v, x @ h.Wv, rtol=1e-14)


def test_scaled_and_unscaled_scores_differ_by_sqrt_d_head(rng):
    h = px.Head(8, 16, seed=0)
    x = rng.standard_normal((5, 8))
    np.testing.assert_allclose(h.scores(x, scaled=False), 4.0 * h.scores(x), rtol=1e-14)
    np.testing.assert_allclose(h.scores(x), h.scores(x, scaled=True), rtol=0)


def test_weights_and_forward_match_sdpa(rng):
    h = px.Head(6, 4, seed=5)
    x = rng.standard_normal((2, 5, 6))
    q, k, v = h.qkv(x)
    for causal in (False, True):
        out, w = h.forward(x, is_causal=causal, output_attentions=True)
        ref_out, ref_w = px.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                         output_attentions=True)
        np.testing.assert_allclose(out, ref_out, rtol=1e-14)
        np.testing.assert_allclose(h.weights(x, is_causal=causal), ref_w, rtol=1e-14)
        np.testing.assert_allclose(h(x, is_causal=causal), out, rtol=1e-14)
    np.testing.assert_allclose(h.weights(x), px.softmax(h.scores(x)), rtol=1e-14)
    np.testing.assert_allclose(h.weights(x, scaled=False), px.softmax(h.scores(x, scaled=False)),
                               rtol=1e-14)


def test_causal_weights_are_lower_triangular(rng):
    w = px.Head(4, 4, seed=0).weights(rng.standard_normal((6, 4)), is_causal=True)
    assert np.all(np.triu(w, 1) == 0)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-14)
    assert w[0, 0] == 1.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_head_keeps_its_dtype(rng, dtype):
    x = rng.standard_normal((3, 4)).astype(dtype)
    for h in (px.Head(4, 2, dtype=dtype), px.Head.identity(4, dtype=dtype)):
        assert all(a.dtype == dtype for a in h.qkv(x))
        assert h.scores(x).dtype == dtype
        assert h.scores(x, scaled=False).dtype == dtype
        assert h.weights(x).dtype == dtype
        assert h.forward(x, is_causal=True).dtype == dtype


def test_a_head_refuses_mixed_dtypes_as_torch_does(rng):
    x32 = rng.standard_normal((3, 4)).astype(np.float32)
    with pytest.raises(ValueError, match="x has dtype float32 but Wq has "
                                         "dtype float64"):
        px.Head(4, 2).qkv(x32)


@given(st.integers(1, 5), st.integers(1, 6), st.integers(0, 1000))
def test_weights_rows_sum_to_one(T, d, seed):
    x = np.random.default_rng(seed).standard_normal((T, d))
    w = px.Head(d, 3, seed=seed).weights(x)
    assert w.shape == (T, T)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)
