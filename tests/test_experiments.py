"""Tests of pyxis_nb.experiments: the measurements of the scaling chapter."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyxis_nb as px

DS = [8, 32, 64, 256]


# ---- random_attention_weights -------------------------------------------------

@given(d=st.integers(1, 64), T=st.integers(1, 8), seed=st.integers(0, 2**16),
       scaled=st.booleans())
def test_weights_are_rows_of_probabilities(d, T, seed, scaled):
    w = px.experiments.random_attention_weights(d, T=T, seed=seed, scaled=scaled)
    assert w.shape == (T, T)
    assert w.dtype == np.float64
    assert np.all(w >= 0)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)


@given(d=st.integers(1, 64), seed=st.integers(0, 2**16))
def test_default_init_is_weight_std_one_over_sqrt_d(d, seed):
    default = px.experiments.random_attention_weights(d, seed=seed)
    explicit = px.experiments.random_attention_weights(d, seed=seed, weight_std=1 / np.sqrt(d))
    np.testing.assert_allclose(default, explicit, rtol=1e-10, atol=1e-12)


def test_scaling_is_a_no_op_for_d_1():
    # sqrt(1) = 1: dividing by it changes nothing
    np.testing.assert_array_equal(px.experiments.random_attention_weights(1, scaled=True),
                                  px.experiments.random_attention_weights(1, scaled=False))


def test_weights_are_seeded():
    a = px.experiments.random_attention_weights(16, seed=3)
    np.testing.assert_array_equal(a, px.experiments.random_attention_weights(16, seed=3))
    assert not np.allclose(a, px.experiments.random_attention_weights(16, seed=4))


def test_weights_match_a_hand_built_head():
    d, T, seed = 16, 6, 7
    head = px.Head(d, d, seed=seed)
    x = np.random.default_rng([seed, 1]).standard_normal((T, d))
    q, k = x @ head.Wq, x @ head.Wk  # (T, d) x (d, d) -> (T, d)
    scores = q @ k.T / np.sqrt(d)  # (T, d) x (d, T) -> (T, T)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    want = e / e.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(px.experiments.random_attention_weights(d, T=T, seed=seed), want, rtol=1e-10)


# ---- max_attention_weight: the trends the chapter states -----------------------

def test_max_weight_lies_between_uniform_and_one():
    for d in (1, 8, 256):
        for scaled in (True, False):
            m = px.experiments.max_attention_weight(d, scaled=scaled, seeds=range(5))
            assert 1 / 6 <= m <= 1.0


def test_unscaled_attention_collapses_as_d_grows():
    m = [px.experiments.max_attention_weight(d, scaled=False) for d in DS]
    assert all(a < b for a, b in zip(m, m[1:])), m
    assert m[-1] > 0.95, m


def test_scaled_attention_stays_soft_with_a_fan_in_init():
    scaled = [px.experiments.max_attention_weight(d, scaled=True) for d in DS]
    unscaled = [px.experiments.max_attention_weight(d, scaled=False) for d in DS]
    assert max(scaled) < 0.5, scaled
    assert max(scaled) - min(scaled) < 0.1, scaled
    assert all(s < u for s, u in zip(scaled, unscaled))


def test_scaled_attention_still_sharpens_with_a_fixed_init():
    scaled = [px.experiments.max_attention_weight(d, scaled=True, weight_std=8**-0.5) for d in DS]
    assert all(a < b for a, b in zip(scaled, scaled[1:])), scaled
    assert scaled[-1] > 0.95, scaled


# ---- dot_product_std --------------------------------------------------------------

@pytest.mark.parametrize("d", [1, 4, 16, 64, 256, 1024])
def test_dot_product_std_is_sqrt_d(d):
    # 5000 pairs: the sample std is within about 1 % of the true one
    assert px.experiments.dot_product_std(d, n=5000) == pytest.approx(np.sqrt(d), rel=0.03)
    assert px.experiments.dot_product_std(d, n=5000, scaled=True) == pytest.approx(1.0, rel=0.03)


@given(d=st.integers(1, 200), seed=st.integers(0, 2**16))
def test_scaled_std_is_std_over_sqrt_d(d, seed):
    raw = px.experiments.dot_product_std(d, n=500, seed=seed)
    assert px.experiments.dot_product_std(d, n=500, seed=seed, scaled=True) == pytest.approx(
        raw / np.sqrt(d), rel=1e-12)


def test_dot_product_std_is_seeded():
    assert px.experiments.dot_product_std(32, seed=1) == px.experiments.dot_product_std(32, seed=1)
    assert px.experiments.dot_product_std(32, seed=1) != px.experiments.dot_product_std(32, seed=2)


# ---- softmax_jacobian ---------------------------------------------------------------

def test_jacobian_hand_values():
    # p = [1/2, 1/2]: J = diag(p) - p p^T = [[1/4, -1/4], [-1/4, 1/4]]
    np.testing.assert_allclose(px.experiments.softmax_jacobian(np.zeros(2)),
                               [[0.25, -0.25], [-0.25, 0.25]])
    # p = [1/6, 2/6, 3/6] (the qkv chapter's example): J[0, 0] = 1/6 - 1/36 = 5/36
    J = px.experiments.softmax_jacobian(np.log([1.0, 2.0, 3.0]))
    assert J[0, 0] == pytest.approx(5 / 36)
    assert J[1, 2] == pytest.approx(-6 / 36)


@given(st.lists(st.floats(-20, 20), min_size=1, max_size=8))
def test_jacobian_is_symmetric_with_zero_row_sums(x):
    J = px.experiments.softmax_jacobian(np.array(x))
    np.testing.assert_allclose(J, J.T, atol=1e-15)
    np.testing.assert_allclose(J.sum(axis=-1), 0.0, atol=1e-12)


def test_jacobian_matches_finite_differences(rng):
    x = rng.standard_normal(5)
    eps = 1e-6
    numeric = np.stack([(px.softmax(x + eps * e) - px.softmax(x - eps * e)) / (2 * eps)
                        for e in np.eye(5)], axis=1)  # column j = d p / d x_j
    np.testing.assert_allclose(px.experiments.softmax_jacobian(x), numeric, atol=1e-8)


def test_jacobian_vanishes_when_the_softmax_saturates():
    base = np.array([0.0, 1.0, 2.0, 3.0])
    peaks = [np.abs(px.experiments.softmax_jacobian(c * base)).max() for c in (1, 4, 16)]
    assert peaks[0] > peaks[1] > peaks[2]
    assert peaks[0] > 0.1 and peaks[2] < 1e-6  # p_max = 1 - O(exp(-16))


def test_jacobian_keeps_float32():
    assert px.experiments.softmax_jacobian(np.zeros(3, dtype=np.float32)).dtype == np.float32


def test_jacobian_against_torch_autograd(rng):
    torch = pytest.importorskip("torch", reason="torch not installed: autograd reference skipped")
    x = rng.standard_normal(6)
    want = torch.autograd.functional.jacobian(
        lambda t: torch.softmax(t, dim=-1), torch.tensor(x)).numpy()
    np.testing.assert_allclose(px.experiments.softmax_jacobian(x), want, atol=1e-12)


# ---- errors -------------------------------------------------------------------------


def test_best_time_is_the_minimum_of_the_runs():
    calls = []
    t = px.experiments.best_time(lambda: calls.append(1), repeats=4)
    assert len(calls) == 4 and 0 <= t < 1
