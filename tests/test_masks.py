"""Tests of pyxis_nb.masks: causal (both alignments), sliding window, padding."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import pyxis_nb as px


def test_causal_square_is_lower_triangle():
    m = px.causal_mask(4)
    assert m.dtype == bool and m.shape == (4, 4)
    expected = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=bool)
    assert np.array_equal(m, expected)
    # for L == S the two alignments are the same matrix
    assert np.array_equal(px.causal_mask(4, 4, align="top_left"), expected)


def test_causal_bottom_right_is_default_when_fewer_queries():
    # 2 new queries after 3 cached keys: they sit at absolute positions 3 and 4
    m = px.causal_mask(2, 5)
    expected = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=bool)
    assert np.array_equal(m, expected)
    assert np.array_equal(px.causal_mask(2, 5, align="bottom_right"), expected)


def test_causal_top_left_matches_torch_is_causal_rule():
    m = px.causal_mask(2, 5, align="top_left")
    expected = np.array([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0]], dtype=bool)
    assert np.array_equal(m, expected)


def test_causal_more_queries_than_keys():
    # bottom-right: query i sits at S - L + i = i - 2, so queries 0 and 1 see no key
    br = px.causal_mask(4, 2)
    assert np.array_equal(br, np.array([[0, 0], [0, 0], [1, 0], [1, 1]], dtype=bool))
    tl = px.causal_mask(4, 2, align="top_left")
    assert np.array_equal(tl, np.array([[1, 0], [1, 1], [1, 1], [1, 1]], dtype=bool))


@given(st.integers(1, 9), st.integers(1, 9))
def test_causal_mask_rule_from_positions(L, S):
    i = np.arange(L)[:, None]
    j = np.arange(S)[None, :]
    assert np.array_equal(px.causal_mask(L, S), j <= S - L + i)
    assert np.array_equal(px.causal_mask(L, S, align="top_left"), j <= i)


def test_causal_accepts_numpy_integers():
    assert px.causal_mask(np.int64(3), np.int32(3)).shape == (3, 3)


def test_sliding_window_two_sided_band():
    m = px.sliding_window_mask(5, window=2)
    i, j = np.indices((5, 5))
    assert m.dtype == bool
    assert np.array_equal(m, np.abs(i - j) < 2)
    assert np.array_equal(px.sliding_window_mask(4, window=1), np.eye(4, dtype=bool))


def test_sliding_window_with_causal_is_mistral_window():
    m = px.sliding_window_mask(6, window=3) & px.causal_mask(6)
    # each query sees itself and the 2 keys before it
    assert m.sum(axis=-1).tolist() == [1, 2, 3, 3, 3, 3]
    assert np.array_equal(m[5], [0, 0, 0, 1, 1, 1])


def test_sliding_window_alignment_when_fewer_queries():
    br = px.sliding_window_mask(2, 6, window=2)  # queries at absolute positions 4, 5
    assert np.array_equal(br, np.array([[0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1]], dtype=bool))
    tl = px.sliding_window_mask(2, 6, window=2, align="top_left")  # at 0, 1
    assert np.array_equal(tl, np.array([[1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0]], dtype=bool))


def test_padding_right():
    m = px.padding_mask([3, 1, 4], 4)
    assert m.dtype == bool and m.shape == (3, 1, 1, 4)
    assert np.array_equal(m[:, 0, 0], np.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]], dtype=bool))


def test_padding_left():
    m = px.padding_mask(np.array([3, 1, 4]), 4, side="left")
    assert m.shape == (3, 1, 1, 4)
    assert np.array_equal(m[:, 0, 0], np.array([[0, 1, 1, 1], [0, 0, 0, 1], [1, 1, 1, 1]], dtype=bool))


def test_padding_mask_broadcasts_against_scores():
    scores = np.zeros((3, 2, 5, 4))  # (B, H, L, S)
    m = px.padding_mask([3, 1, 4], 4)
    assert np.broadcast_shapes(m.shape, scores.shape) == scores.shape


@given(st.lists(st.integers(1, 7), min_size=1, max_size=5), st.sampled_from(["right", "left"]))
def test_padding_counts_real_tokens(lengths, side):
    S = 7
    m = px.padding_mask(lengths, S, side=side)
    assert m.sum(axis=-1).ravel().tolist() == lengths
    # the reverse of a right-padded row is the left-padded row
    assert np.array_equal(px.padding_mask(lengths, S, side="left"),
                          px.padding_mask(lengths, S, side="right")[..., ::-1])
