"""Tests of pyxis_nb.attention.scaled_dot_product_attention (torch's SDPA semantics).

The reference here is a per-row loop written from the definition, in plain
Python floats: for each query, score every key, add the mask, take a softmax
over the allowed keys (none allowed: zero weights) and average the values.
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import pyxis_nb as px

sdpa = px.scaled_dot_product_attention


# ---------------------------------------------------------------- the reference

def attend_one_query(q_row, keys, values, bias_row, scale):
    """One query against S keys, from first principles. bias -inf = not allowed."""
    scores = []
    for j, k_row in enumerate(keys):
        dot = sum(float(a) * float(b) for a, b in zip(q_row, k_row))
        scores.append(dot * scale + float(bias_row[j]))
    allowed = [j for j, s in enumerate(scores) if s != -math.inf]
    weights = [0.0] * len(scores)
    if allowed:  # a query with no allowed key keeps zero weights
        top = max(scores[j] for j in allowed)
        exps = {j: math.exp(scores[j] - top) for j in allowed}
        total = sum(exps.values())
        for j in allowed:
            weights[j] = exps[j] / total
    out = [sum(w * float(v_row[c]) for w, v_row in zip(weights, values))
           for c in range(len(values[0]))]
    return out, weights


def reference_sdpa(q, k, v, *, bias=None, scale=None):
    """Loop over every leading index and every query row. bias: float, broadcastable."""
    L, E = q.shape[-2:]
    S, Ev = v.shape[-2:]
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    bias = np.zeros((L, S)) if bias is None else bias
    qb = np.broadcast_to(q, batch + (L, E))
    kb = np.broadcast_to(k, batch + (S, E))
    vb = np.broadcast_to(v, batch + (S, Ev))
    bb = np.broadcast_to(bias, batch + (L, S))
    out = np.zeros(batch + (L, Ev))
    weights = np.zeros(batch + (L, S))
    for idx in np.ndindex(*batch):
        for i in range(L):
            out[idx + (i,)], weights[idx + (i,)] = attend_one_query(
                qb[idx + (i,)], kb[idx], vb[idx], bb[idx + (i,)], scale)
    return out, weights


def to_bias(mask):
    return np.where(mask, 0.0, -np.inf)


# ---------------------------------------------------------------- hand-computed values

Q1 = np.array([[1.0]])
K3 = np.log(np.array([[1.0], [2.0], [3.0]]))
V3 = np.array([[2.0], [4.0], [8.0]])


def test_worked_example():
    out, w = sdpa(Q1, K3, V3, scale=1.0, output_attentions=True)
    np.testing.assert_allclose(w, [[1 / 6, 2 / 6, 3 / 6]], rtol=1e-14)
    np.testing.assert_allclose(out, [[17 / 3]], rtol=1e-14)  # (2 + 8 + 24) / 6


def test_worked_example_with_third_key_masked():
    out, w = sdpa(Q1, K3, V3, scale=1.0, attn_mask=np.array([[True, True, False]]),
                  output_attentions=True)
    np.testing.assert_allclose(w, [[1 / 3, 2 / 3, 0.0]], rtol=1e-14)
    assert w[0, 2] == 0.0
    np.testing.assert_allclose(out, [[10 / 3]], rtol=1e-14)  # (2 + 8) / 3


def test_float_mask_is_added_to_the_scores():
    # adding ln 3 to the first key's score turns weights 1:2:3 into 3:2:3
    bias = np.array([[np.log(3.0), 0.0, 0.0]])
    _, w = sdpa(Q1, K3, V3, scale=1.0, attn_mask=bias, output_attentions=True)
    np.testing.assert_allclose(w, [[3 / 8, 2 / 8, 3 / 8]], rtol=1e-14)


def test_bool_mask_equals_float_mask_of_zeros_and_minus_inf(rng):
    q, k, v = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 6, 5)), rng.standard_normal((3, 6, 2))
    mask = rng.random((4, 6)) < 0.6
    a = sdpa(q, k, v, attn_mask=mask)
    b = sdpa(q, k, v, attn_mask=to_bias(mask))
    assert np.array_equal(a, b)


def test_default_scale_is_one_over_sqrt_E(rng):
    q, k, v = rng.standard_normal((4, 9)), rng.standard_normal((5, 9)), rng.standard_normal((5, 3))
    np.testing.assert_allclose(sdpa(q, k, v), sdpa(q, k, v, scale=1 / 3), rtol=1e-15)
    assert not np.allclose(sdpa(q, k, v), sdpa(q, k, v, scale=1.0))
    np.testing.assert_allclose(sdpa(q, k, v, scale=0.7), reference_sdpa(q, k, v, scale=0.7)[0],
                               rtol=1e-12)


def test_is_causal_is_top_left_aligned_when_L_differs_from_S(rng):
    for L, S in [(3, 5), (5, 3), (4, 4)]:
        q, k, v = rng.standard_normal((L, 4)), rng.standard_normal((S, 4)), rng.standard_normal((S, 2))
        out, w = sdpa(q, k, v, is_causal=True, output_attentions=True)
        expected = reference_sdpa(q, k, v, bias=to_bias(np.tril(np.ones((L, S), bool))))
        np.testing.assert_allclose(out, expected[0], rtol=1e-12, atol=1e-14)
        assert np.all(w[np.triu_indices(L, 1, S)] == 0)
        assert np.array_equal(out, sdpa(q, k, v, attn_mask=px.causal_mask(L, S, align="top_left")))


def test_bottom_right_causal_mask_for_the_kv_cache(rng):
    # the last 2 queries of a 5-token causal pass equal 2 queries against all 5 keys
    q, k, v = rng.standard_normal((5, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 3))
    full = sdpa(q, k, v, is_causal=True)
    tail = sdpa(q[3:], k, v, attn_mask=px.causal_mask(2, 5))
    np.testing.assert_allclose(tail, full[3:], rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fully_masked_rows_give_zero_output_and_weights(rng, dtype):
    q = rng.standard_normal((2, 3, 4)).astype(dtype)
    k = rng.standard_normal((2, 5, 4)).astype(dtype)
    v = rng.standard_normal((2, 5, 2)).astype(dtype)
    mask = np.ones((2, 3, 5), dtype=bool)
    mask[0, 1] = False
    mask[1, :] = False
    for m in (mask, to_bias(mask).astype(dtype)):
        with np.errstate(divide="raise", invalid="raise", over="raise"), warnings.catch_warnings():
            warnings.simplefilter("error")
            out, w = sdpa(q, k, v, attn_mask=m, output_attentions=True)
        assert out.dtype == w.dtype == dtype
        assert not np.isnan(out).any() and not np.isnan(w).any()
        assert np.array_equal(out[0, 1], np.zeros(2, dtype)) and np.array_equal(w[0, 1], np.zeros(5, dtype))
        assert np.array_equal(out[1], np.zeros((3, 2), dtype))
        np.testing.assert_allclose(w[0, [0, 2]].sum(-1), 1.0, rtol=1e-6)


def test_leading_dims_broadcast(rng):
    q = rng.standard_normal((2, 1, 3, 4))  # (B, 1, L, E)
    k = rng.standard_normal((1, 3, 5, 4))  # (1, H, S, E)
    v = rng.standard_normal((3, 5, 2))  # (H, S, Ev)
    mask = rng.random((3, 1, 5)) < 0.7  # (H, 1, S)
    out, w = sdpa(q, k, v, attn_mask=mask, output_attentions=True)
    assert out.shape == (2, 3, 3, 2) and w.shape == (2, 3, 3, 5)
    ref_out, ref_w = reference_sdpa(q, k, v, bias=to_bias(mask))
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_preserved(rng, dtype):
    q, k, v = (rng.standard_normal((2, 3, 4)).astype(dtype) for _ in range(3))
    for kwargs in ({}, {"is_causal": True}, {"attn_mask": np.ones((3, 3), bool)},
                   {"attn_mask": np.zeros((3, 3))}, {"scale": 0.5}):
        out, w = sdpa(q, k, v, output_attentions=True, **kwargs)
        assert out.dtype == dtype and w.dtype == dtype, kwargs


def test_gqa_consecutive_query_heads_share_a_kv_head(rng):
    q = rng.standard_normal((1, 4, 3, 2))  # Hq = 4
    k = rng.standard_normal((1, 2, 5, 2))  # Hkv = 2
    v = rng.standard_normal((1, 2, 5, 3))
    out = sdpa(q, k, v, enable_gqa=True)
    for h in range(4):  # query heads 0, 1 use kv head 0; heads 2, 3 use kv head 1
        np.testing.assert_allclose(out[0, h], sdpa(q[0, h], k[0, h // 2], v[0, h // 2]), rtol=1e-14)


def test_only_output_attentions_changes_the_return_value(rng):
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    out = sdpa(q, k, v)
    assert isinstance(out, np.ndarray) and out.shape == (3, 2)
    out2, w = sdpa(q, k, v, output_attentions=True)
    assert np.array_equal(out, out2) and w.shape == (3, 5)
    np.testing.assert_allclose(w @ v, out, rtol=1e-14)


# ---------------------------------------------------------------- properties

values = st.floats(-3.0, 3.0, allow_nan=False, width=64)


def _shrink(batch, draw):
    """A shape that broadcasts to ``batch``: some leading dims dropped, some set to 1."""
    keep = draw(st.integers(0, len(batch)))
    tail = batch[len(batch) - keep:]
    return tuple(draw(st.sampled_from([n, 1])) for n in tail)


@st.composite
def attention_problems(draw):
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    L, S, E, Ev = (draw(st.integers(1, 4)) for _ in range(4))
    q = draw(arrays(np.float64, _shrink(batch, draw) + (L, E), elements=values))
    k = draw(arrays(np.float64, _shrink(batch, draw) + (S, E), elements=values))
    v = draw(arrays(np.float64, _shrink(batch, draw) + (S, Ev), elements=values))
    full_batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    kind = draw(st.sampled_from(["none", "bool", "float", "causal"]))
    kwargs, bias = {}, None
    mask_shape = _shrink(full_batch, draw) + (draw(st.sampled_from([L, 1])), S)
    if kind == "bool":
        kwargs["attn_mask"] = draw(arrays(bool, mask_shape))
        bias = to_bias(kwargs["attn_mask"])
    elif kind == "float":
        kwargs["attn_mask"] = bias = draw(arrays(
            np.float64, mask_shape, elements=st.one_of(values, st.just(-np.inf))))
    elif kind == "causal":
        kwargs["is_causal"] = True
        bias = to_bias(np.tril(np.ones((L, S), bool)))
    scale = draw(st.one_of(st.none(), st.floats(0.1, 2.0)))
    return q, k, v, kwargs, bias, scale


@given(attention_problems())
def test_sdpa_equals_the_per_row_loop(problem):
    q, k, v, kwargs, bias, scale = problem
    out, w = sdpa(q, k, v, scale=scale, output_attentions=True, **kwargs)
    ref_out, ref_w = reference_sdpa(q, k, v, bias=bias, scale=scale)
    assert out.shape == ref_out.shape and w.shape == ref_w.shape
    np.testing.assert_allclose(w, ref_w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out, ref_out, rtol=1e-10, atol=1e-12)
    sums = w.sum(axis=-1)
    assert np.all(np.isclose(sums, 1.0) | (sums == 0.0))


@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 2**32 - 1), st.data())
def test_causal_outputs_ignore_later_tokens_bit_for_bit(T, E, seed, data):
    p = data.draw(st.integers(0, T - 1))  # positions 0..p are kept, later ones change
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((2, T, E)) for _ in range(3))
    q2, k2, v2 = q.copy(), k.copy(), v.copy()
    for a in (q2, k2, v2):
        a[:, p + 1:] = 100 * rng.standard_normal(a[:, p + 1:].shape)
    out, w = sdpa(q, k, v, is_causal=True, output_attentions=True)
    out2, w2 = sdpa(q2, k2, v2, is_causal=True, output_attentions=True)
    assert np.array_equal(out[:, :p + 1], out2[:, :p + 1])
    assert np.array_equal(w[:, :p + 1], w2[:, :p + 1])


@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 3), st.integers(1, 4),
       st.integers(1, 4), st.booleans(), st.integers(0, 2**32 - 1))
def test_gqa_equals_explicitly_repeated_kv_heads(B, hkv, n_rep, L, S, causal, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, hkv * n_rep, L, 3))
    k = rng.standard_normal((B, hkv, S, 3))
    v = rng.standard_normal((B, hkv, S, 2))
    out, w = sdpa(q, k, v, enable_gqa=True, is_causal=causal, output_attentions=True)
    kr, vr = np.repeat(k, n_rep, axis=-3), np.repeat(v, n_rep, axis=-3)
    out_r, w_r = sdpa(q, kr, vr, is_causal=causal, output_attentions=True)
    np.testing.assert_allclose(out, out_r, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(w, w_r, rtol=1e-14, atol=1e-15)


@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4),
       st.sampled_from([np.float32, np.float64]), st.integers(0, 2**32 - 1))
def test_batched_equals_one_at_a_time(B, H, L, S, dtype, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, H, L, 4)).astype(dtype)
    k = rng.standard_normal((B, H, S, 4)).astype(dtype)
    v = rng.standard_normal((B, H, S, 3)).astype(dtype)
    mask = rng.random((B, 1, L, S)) < 0.7
    out, w = sdpa(q, k, v, attn_mask=mask, output_attentions=True)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    for b in range(B):
        for h in range(H):
            o1, w1 = sdpa(q[b, h], k[b, h], v[b, h], attn_mask=mask[b, 0], output_attentions=True)
            np.testing.assert_allclose(out[b, h], o1, rtol=tol, atol=tol)
            np.testing.assert_allclose(w[b, h], w1, rtol=tol, atol=tol)


# ------------------------- tiled_attention_core: the "flex_attention" kernel

def _tiled_case(rng, dtype, H, H_kv, mask_kind, B=2, T=70, past=37):
    """q (B, H, T, 16), k and v (B, H_kv, S, 16 and 19), and a mask."""
    S = T + past
    q = rng.standard_normal((B, H, T, 16)).astype(dtype)
    k = rng.standard_normal((B, H_kv, S, 16)).astype(dtype)
    v = rng.standard_normal((B, H_kv, S, 19)).astype(dtype)
    causal = px.causal_mask(T, S)  # bottom-right: the cache's mask
    keys = np.ones((B, S), bool)
    keys[0, :40] = False  # row 0 left-padded
    empty = causal.copy()
    empty[[3, -1]] = False  # two queries see no key at all
    mask = {"none": None, "causal": causal,
            "padded": keys[:, None, None, :] & causal,
            "random": rng.random((B, 1, T, S)) < 0.3,
            "empty rows": empty[None, None],
            "window": causal & px.sliding_window_mask(T, S, window=20)}
    return q, k, v, mask[mask_kind]


@pytest.mark.parametrize("dtype, atol", [(np.float64, 1e-12),
                                         (np.float32, 2e-5)])
@pytest.mark.parametrize("H, H_kv", [(4, 4), (8, 4), (9, 3), (6, 1)])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "padded", "random",
                                       "empty rows", "window"])
@pytest.mark.parametrize("block_k", [1024, 48])  # one key tile, or three
def test_the_tiled_core_gives_sdpa_cores_output(rng, dtype, atol, H, H_kv,
                                                mask_kind, block_k):
    from pyxis_nb.attention import sdpa_core
    from pyxis_nb.tiled import tiled_attention_core
    q, k, v, mask = _tiled_case(rng, dtype, H, H_kv, mask_kind)
    want = sdpa_core(q, k, v, attn_mask=mask, enable_gqa=True)[0]
    got = tiled_attention_core(q, k, v, attn_mask=mask, block_q=32,
                               block_k=block_k)
    assert got.shape == want.shape and got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=0, atol=atol)
    if mask_kind == "empty rows":  # no allowed key: zeros, as sdpa_core
        assert np.all(got[:, :, [3, -1]] == 0)


def test_the_tiled_core_lays_its_output_out_for_merging(rng):
    from pyxis_nb.multihead import merge_heads_core
    from pyxis_nb.tiled import tiled_attention_core
    q, k, v, mask = _tiled_case(rng, np.float32, 8, 4, "causal")
    out = tiled_attention_core(q, k, v, attn_mask=mask)
    assert np.shares_memory(merge_heads_core(out), out)  # no copy


@pytest.mark.parametrize("case", ["short T", "float mask", "mask per head"])
def test_the_tiled_core_takes_every_mask_sdpa_core_takes(rng, case):
    """Five queries, a float mask, a mask per head: the tiles, equal to
    sdpa_core."""
    from pyxis_nb.attention import sdpa_core
    from pyxis_nb.tiled import tiled_attention_core
    q, k, v, mask = _tiled_case(rng, np.float64, 8, 4, "causal",
                                T=5 if case == "short T" else 70)
    if case == "float mask":
        mask = np.where(mask, 0.0, -np.inf) + rng.standard_normal(mask.shape)
    elif case == "mask per head":
        mask = np.broadcast_to(mask, (2, 8) + mask.shape[-2:]) & (
            rng.random((2, 8) + mask.shape[-2:]) < 0.7)
    want = sdpa_core(q, k, v, attn_mask=mask, enable_gqa=True)[0]
    got = tiled_attention_core(q, k, v, attn_mask=mask, block_q=16,
                               block_k=32)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
