"""Tests of pyxis_nb.stable_softmax: stability, fully masked rows, dtypes, bad input."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import pyxis_nb as px


def test_hand_computed_values():
    # exp([0, ln 2, ln 3]) = [1, 2, 3], total 6
    w = px.softmax(np.log(np.array([1.0, 2.0, 3.0])))
    np.testing.assert_allclose(w, [1 / 6, 2 / 6, 3 / 6], rtol=1e-15)


def test_shift_invariance():
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(px.softmax(x + 1000.0), px.softmax(x), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scores_of_magnitude_1e4_are_stable(dtype):
    # 1e4 - 1 is exact in float32 too; the naive exp(1e4) would overflow
    x = np.array([[1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4, -1e4]], dtype=dtype)
    # overflow, 0/0 or inf/inf would raise here; underflow of exp(-2e4) to 0 is expected
    with np.errstate(over="raise", divide="raise", invalid="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        w = px.softmax(x)
    assert w.dtype == dtype
    assert np.all(np.isfinite(w))
    tol = 1e-6 if dtype == np.float32 else 1e-12
    e = np.exp(-1.0)
    np.testing.assert_allclose(w[0], [1 / (1 + e), e / (1 + e), 0.0], atol=tol)
    np.testing.assert_allclose(w[1], [1 / 3, 1 / 3, 1 / 3], atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fully_masked_row_gives_zeros_without_nan_or_warning(dtype):
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 0.0]], dtype=dtype)
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        w = px.softmax(x)
    assert w.dtype == dtype
    assert np.array_equal(w[0], np.zeros(3, dtype=dtype))
    assert np.array_equal(w[1], np.array([0.5, 0.0, 0.5], dtype=dtype))


def test_axis_argument():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(px.softmax(x, axis=0), px.softmax(x.T, axis=-1).T, rtol=1e-15)
    np.testing.assert_allclose(px.softmax(x, axis=0).sum(axis=0), [1.0, 1.0, 1.0], rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_preserved(dtype):
    assert px.softmax(np.zeros((2, 3), dtype=dtype)).dtype == dtype


finite = st.floats(-50.0, 50.0, allow_nan=False)


@given(arrays(np.float64, array_shapes(min_dims=1, max_dims=3, max_side=6), elements=finite))
def test_rows_sum_to_one(x):
    w = px.softmax(x)
    assert w.shape == x.shape
    assert np.all(w >= 0)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)


@given(
    arrays(np.float32, array_shapes(min_dims=2, max_dims=2, max_side=6),
           elements=st.floats(-1e4, 1e4, allow_nan=False, width=32)),
    st.data(),
)
def test_rows_sum_to_one_or_zero_with_masked_entries(x, data):
    hide = data.draw(arrays(bool, x.shape))
    x = np.where(hide, np.float32(-np.inf), x)
    w = px.softmax(x)
    assert w.dtype == np.float32
    assert not np.any(np.isnan(w))
    assert np.all(w[hide] == 0)
    fully = hide.all(axis=-1)
    np.testing.assert_allclose(w.sum(axis=-1)[~fully], 1.0, rtol=1e-5)
    assert np.all(w[fully] == 0)
