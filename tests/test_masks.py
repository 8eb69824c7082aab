"""Tests of pyxis_nb.masks: causal (both alignments), sliding window, padding."""

import numpy as np
import pytest
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


@pytest.mark.parametrize("args, kwargs, match", [
    ((0,), {}, r"L must be an integer >= 1, got 0"),
    ((-1, 3), {}, r"L must be an integer >= 1, got -1"),
    ((2.0,), {}, r"L must be an integer >= 1, got 2\.0"),
    ((True,), {}, r"L must be an integer >= 1, got True"),
    ((3, 0), {}, r"S must be an integer >= 1, got 0"),
    ((3, "4"), {}, r"S must be an integer >= 1, got '4'"),
    ((2, 3), {"align": "top-left"}, r"align must be one of .*'top-left'"),
])
def test_causal_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        px.causal_mask(*args, **kwargs)


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


@pytest.mark.parametrize("kwargs, match", [
    ({"window": 0}, r"window must be an integer >= 1, got 0"),
    ({"window": 2.5}, r"window must be an integer >= 1, got 2\.5"),
    ({"window": 2, "align": "left"}, r"align must be one of"),
])
def test_sliding_window_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        px.sliding_window_mask(4, **kwargs)


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


@pytest.mark.parametrize("lengths, S, kwargs, match", [
    ([[1, 2]], 3, {}, r"lengths must be a non-empty 1-D integer array of shape \(B,\), got shape \(1, 2\)"),
    ([], 3, {}, r"lengths must be .* got shape \(0,\)"),
    ([1.0, 2.0], 3, {}, r"lengths must be .*dtype float64"),
    ([0, 2], 3, {}, r"lengths must lie in 1 \.\. S=3, got \[0, 2\]"),
    ([4, 2], 3, {}, r"lengths must lie in 1 \.\. S=3, got \[4, 2\]"),
    ([1, 2], 0, {}, r"S must be an integer >= 1, got 0"),
    ([1, 2], 3, {"side": "top"}, r"side must be 'right' or 'left', got 'top'"),
])
def test_padding_bad_input(lengths, S, kwargs, match):
    with pytest.raises(ValueError, match=match):
        px.padding_mask(lengths, S, **kwargs)
