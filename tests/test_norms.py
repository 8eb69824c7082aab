"""Tests of pyxis_nb.norms.rms_norm: hand values, invariants, torch reference, bad input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyxis_nb as px


@st.composite
def rows(draw):
    """A float64 (T, D) array; hypothesis picks the shape, scale and seed."""
    shape = (draw(st.integers(1, 4)), draw(st.sampled_from([2, 8, 128])))
    scale = draw(st.sampled_from([1e-3, 1.0, 100.0]))
    return np.random.default_rng(draw(st.integers(0, 2**32 - 1))).standard_normal(shape) * scale


ROWS = rows()


def test_by_hand():
    # mean of squares of (3, 4) is 12.5
    out = px.rms_norm(np.array([3.0, 4.0]), np.ones(2), eps=0.0)
    np.testing.assert_allclose(out, np.array([3.0, 4.0]) / np.sqrt(12.5))
    out = px.rms_norm(np.array([[3.0, 4.0]]), np.array([2.0, -1.0]), eps=0.0)
    np.testing.assert_allclose(out, [[6.0 / np.sqrt(12.5), -4.0 / np.sqrt(12.5)]])


@given(ROWS)
def test_unit_rms_and_scale_invariance(x):
    y = px.rms_norm(x, np.ones(x.shape[-1]), eps=0.0)
    np.testing.assert_allclose(np.sqrt(np.mean(y * y, axis=-1)), 1.0, rtol=1e-9)
    np.testing.assert_allclose(px.rms_norm(7.5 * x, np.ones(x.shape[-1]), eps=0.0), y, rtol=1e-9,
                               atol=1e-12)


@given(ROWS, st.integers(0, 2**32 - 1))
def test_commutes_with_a_permutation_of_weight_and_input(x, seed):
    """Why permuting q_norm.weight with the q/k rows keeps Qwen3's q_norm exact."""
    rng = np.random.default_rng(seed)
    D = x.shape[-1]
    w = rng.standard_normal(D)
    perm = rng.permutation(D)
    np.testing.assert_allclose(px.rms_norm(x[..., perm], w[perm]), px.rms_norm(x, w)[..., perm],
                               rtol=1e-12, atol=1e-12)


def test_zero_row_gives_zeros_not_nan():
    out = px.rms_norm(np.zeros((2, 8)), np.ones(8))
    np.testing.assert_array_equal(out, 0.0)


def test_dtypes(rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)
    assert px.rms_norm(x, np.ones(8, np.float32)).dtype == np.float32
    assert px.rms_norm(x.astype(np.float16), np.ones(8, np.float16)).dtype == np.float16


def test_against_torch(rng):
    torch = pytest.importorskip("torch", reason="torch is not installed: reference check skipped")
    x = rng.standard_normal((2, 16, 5, 128)).astype(np.float32)
    w = rng.standard_normal(128).astype(np.float32)
    # Qwen3RMSNorm.forward, written out with torch ops
    h = torch.as_tensor(x)
    ref = torch.as_tensor(w) * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6))
    np.testing.assert_allclose(px.rms_norm(x, w, eps=1e-6), ref.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        px.rms_norm(x, w), torch.nn.functional.rms_norm(h, (128,), torch.as_tensor(w), 1e-6).numpy(),
        rtol=1e-5, atol=1e-6)
