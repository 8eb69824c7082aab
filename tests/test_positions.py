"""Tests of pyxis_nb.positions: the sinusoidal table against hand values and a loop."""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import pyxis_nb as px


def test_position_zero_is_sin0_cos0():
    pe = px.positions.sinusoidal_positions(3, 6)
    np.testing.assert_array_equal(pe[0], [0, 1, 0, 1, 0, 1])


def test_hand_values_d4():
    # d_model = 4: pair 0 has frequency 1, pair 1 has frequency 10000 ** (-2/4) = 0.01
    pe = px.positions.sinusoidal_positions(3, 4)
    expected = np.array([
        [0.0, 1.0, 0.0, 1.0],
        [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],
        [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)],
    ])
    np.testing.assert_allclose(pe, expected, rtol=0, atol=1e-15)


@given(T=st.integers(1, 12), half=st.integers(1, 8), offset=st.integers(0, 50),
       theta=st.sampled_from([100.0, 10000.0, 1e6]))
def test_matches_the_paper_formula_written_as_a_loop(T, half, offset, theta):
    d = 2 * half
    pe = px.positions.sinusoidal_positions(T, d, theta=theta, offset=offset)
    expected = [[f((offset + t) / theta ** (2 * i / d)) for i in range(half) for f in (math.sin, math.cos)]
                for t in range(T)]
    np.testing.assert_allclose(pe, expected, rtol=0, atol=1e-12)


def test_offset_is_a_slice_of_the_longer_table():
    full = px.positions.sinusoidal_positions(10, 8)
    np.testing.assert_array_equal(px.positions.sinusoidal_positions(4, 8, offset=6), full[6:])


def test_rows_are_distinct_and_bounded():
    pe = px.positions.sinusoidal_positions(64, 16)
    assert np.all(np.abs(pe) <= 1.0)
    dist = np.linalg.norm(pe[:, None, :] - pe[None, :, :], axis=-1)  # (64, 64)
    assert np.all(dist[~np.eye(64, dtype=bool)] > 1e-3)


def test_dtype_float32_is_kept():
    assert px.positions.sinusoidal_positions(3, 4, dtype=np.float32).dtype == np.float32
    x = np.zeros((2, 3, 4), dtype=np.float32)
    out = px.positions.add_positions(x)
    assert out.dtype == np.float32 and out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out[1], px.positions.sinusoidal_positions(3, 4, dtype=np.float32))


def test_add_positions_adds_the_table():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(px.positions.add_positions(x, offset=2), x + px.positions.sinusoidal_positions(3, 4, offset=2))


def test_matches_hugging_face_create_sinusoidal_embeddings():
    torch = pytest.importorskip("torch", reason="torch not installed: HF formula check skipped")
    # the body of transformers' DistilBERT create_sinusoidal_embeddings, in torch
    n_pos, dim = 20, 12
    position_enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)]
                             for pos in range(n_pos)])
    out = torch.zeros(n_pos, dim, dtype=torch.float64)
    out[:, 0::2] = torch.tensor(np.sin(position_enc[:, 0::2]))
    out[:, 1::2] = torch.tensor(np.cos(position_enc[:, 1::2]))
    np.testing.assert_allclose(px.positions.sinusoidal_positions(n_pos, dim), out.numpy(), rtol=0, atol=1e-12)
