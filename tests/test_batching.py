"""Tests of pyxis_nb.batching: padding token lists and TinyLM."""

import numpy as np

import pyxis_nb as px


def test_pad_right_and_left():
    ids, lengths = px.batching.pad_sequences([[5, 6, 7], [8]], pad_id=0)
    np.testing.assert_array_equal(ids, [[5, 6, 7], [8, 0, 0]])
    np.testing.assert_array_equal(lengths, [3, 1])
    ids, _ = px.batching.pad_sequences([[5, 6, 7], [8]], pad_id=9, side="left", length=4)
    np.testing.assert_array_equal(ids, [[9, 5, 6, 7], [9, 9, 9, 8]])


def test_pad_lengths_fit_padding_mask():
    ids, lengths = px.batching.pad_sequences([[1, 2], [3, 4, 5, 6]], side="left")
    mask = px.padding_mask(lengths, ids.shape[1], side="left")[:, 0, 0]  # (B, S)
    np.testing.assert_array_equal(mask, ids != 0)


def test_tinylm_shapes_and_causality():
    model = px.batching.TinyLM(11, seed=3)
    ids = np.array([[1, 2, 3, 4], [4, 3, 2, 1]])
    logits = model(ids)
    assert logits.shape == (2, 4, 11)
    edited = ids.copy()
    edited[:, -1] = 10
    np.testing.assert_array_equal(model(edited)[:, :-1], logits[:, :-1])
    assert not np.array_equal(model(edited, is_causal=False)[:, :-1], model(ids, is_causal=False)[:, :-1])


def test_tinylm_padding_mask_keeps_real_positions():
    model = px.batching.TinyLM(11, seed=3)
    ids, lengths = px.batching.pad_sequences([[1, 2, 3, 4], [5, 6]])
    batch = model(ids, attn_mask=px.padding_mask(lengths, ids.shape[1]), is_causal=False)
    alone = model(np.array([5, 6]), is_causal=False)
    np.testing.assert_allclose(batch[1, :2], alone, rtol=1e-12, atol=1e-13)
