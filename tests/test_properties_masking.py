"""Property tests of the masking chapters: causality, permutation equivariance,
padding invariance, sliding windows, and engine way == matrix way.

Each property is one claim a chapter makes, checked on shapes and values that
hypothesis draws (derandomized, see conftest.py).
"""

import numpy as np
from hypothesis import given, strategies as st

import pyxis_nb as px

dtypes = st.sampled_from([np.float32, np.float64])
seeds = st.integers(0, 2**16)


def _head_out(head, x, attn_mask=None, is_causal=False):
    q, k, v = (a[..., None, :, :] for a in head.qkv(x))  # (B, 1, T, d_head): one head
    out, w = px.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal,
                                             output_attentions=True)
    return out[..., 0, :, :], w[..., 0, :, :]  # (B, T, d_head), (B, T, T)


@given(B=st.integers(1, 3), T=st.integers(2, 9), d_model=st.integers(1, 12),
       d_head=st.integers(1, 8), seed=seeds, dtype=dtypes, data=st.data())
def test_causality_future_edits_never_change_the_past(B, T, d_model, d_head, seed, dtype, data):
    cut = data.draw(st.integers(1, T - 1), label="first edited position")
    rng = np.random.default_rng(seed)
    head = px.Head(d_model, d_head, seed=seed, dtype=dtype)
    x = rng.standard_normal((B, T, d_model)).astype(dtype)
    edited = x.copy()
    edited[:, cut:] += (100 * rng.standard_normal((B, T - cut, d_model))).astype(dtype)
    before = head(x, is_causal=True)
    after = head(edited, is_causal=True)
    assert np.array_equal(before[:, :cut], after[:, :cut])  # bit for bit
    # the engine way has the same property
    q, k, v = head.qkv(x)
    q2, k2, v2 = head.qkv(edited)
    assert np.array_equal(px.engine.engine_causal_attention(q, k, v)[:, :cut],
                          px.engine.engine_causal_attention(q2, k2, v2)[:, :cut])


@given(T=st.integers(2, 8), d_model=st.integers(1, 12), d_head=st.integers(1, 8), seed=seeds,
       data=st.data())
def test_permutation_equivariance_without_mask(T, d_model, d_head, seed, data):
    perm = np.array(data.draw(st.permutations(range(T)), label="perm"))
    rng = np.random.default_rng(seed)
    head = px.Head(d_model, d_head, seed=seed)
    x = rng.standard_normal((T, d_model))
    np.testing.assert_allclose(head(x[perm]), head(x)[perm], rtol=1e-12, atol=1e-13)
    w = head.weights(x)
    np.testing.assert_allclose(head.weights(x[perm]), w[perm][:, perm], rtol=1e-12, atol=1e-13)


@given(T=st.integers(2, 8), half=st.integers(1, 6), seed=seeds)
def test_positions_break_equivariance(T, half, seed):
    # reversing the order changes the outputs once positions are added (and T >= 2)
    rng = np.random.default_rng(seed)
    head = px.Head(2 * half, 4, seed=seed)
    x = rng.standard_normal((T, 2 * half))
    perm = np.arange(T)[::-1]
    diff = np.abs(head(px.positions.add_positions(x[perm])) - head(px.positions.add_positions(x))[perm]).max()
    assert diff > 1e-9


@given(lengths=st.lists(st.integers(1, 7), min_size=1, max_size=4), extra=st.integers(0, 3),
       side=st.sampled_from(["right", "left"]), causal=st.booleans(), seed=seeds, dtype=dtypes)
def test_padding_invariance(lengths, extra, side, causal, seed, dtype):
    S = max(lengths) + extra
    lengths = np.array(lengths)
    rng = np.random.default_rng(seed)
    head = px.Head(6, 4, seed=seed, dtype=dtype)
    mask = px.padding_mask(lengths, S, side=side)  # (B, 1, 1, S)
    if causal:
        mask = mask & px.causal_mask(S)  # (B, 1, S, S)
    real = mask[:, 0, 0, :] if not causal else px.padding_mask(lengths, S, side=side)[:, 0, 0, :]
    x = rng.standard_normal((len(lengths), S, 6)).astype(dtype)
    other = x.copy()
    other[~real] = (50 * rng.standard_normal(((~real).sum(), 6))).astype(dtype)  # new PAD contents
    out, _ = _head_out(head, x, attn_mask=mask)
    out2, _ = _head_out(head, other, attn_mask=mask)
    assert np.array_equal(out[real], out2[real])  # bit for bit at every real position


@given(T=st.integers(1, 8), extra=st.integers(0, 4), window=st.integers(1, 6), causal=st.booleans(),
       seed=seeds)
def test_sliding_window_never_attends_beyond_w(T, extra, window, causal, seed):
    S = T + extra
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((T, 5)), rng.standard_normal((S, 5)), rng.standard_normal((S, 3))
    mask = px.sliding_window_mask(T, S, window=window)
    if causal:
        mask = mask & px.causal_mask(T, S)
    _, w = px.scaled_dot_product_attention(q, k, v, attn_mask=mask, output_attentions=True)
    q_pos = np.arange(T)[:, None] + S - T  # (T, 1) bottom-right alignment
    k_pos = np.arange(S)[None, :]  # (1, S)
    outside = np.abs(q_pos - k_pos) >= window
    if causal:
        outside |= k_pos > q_pos
    assert np.all(w[outside] == 0.0)  # exactly zero, not merely small
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)  # every row keeps at least itself


@given(batch=st.lists(st.integers(1, 3), max_size=2), T=st.integers(1, 7), extra=st.integers(0, 4),
       d_head=st.integers(1, 8), d_v=st.integers(1, 6), seed=seeds, dtype=dtypes)
def test_engine_equals_matrix_way(batch, T, extra, d_head, d_v, seed, dtype):
    S = T + extra
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((*batch, T, d_head)).astype(dtype)
    k = rng.standard_normal((*batch, S, d_head)).astype(dtype)
    v = rng.standard_normal((*batch, S, d_v)).astype(dtype)
    out_e, w_e = px.engine.engine_causal_attention(q, k, v, output_attentions=True)
    out_m, w_m = px.scaled_dot_product_attention(q, k, v, attn_mask=px.causal_mask(T, S),
                                                 output_attentions=True)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    assert out_e.dtype == dtype
    np.testing.assert_allclose(out_e, out_m, **tol)
    np.testing.assert_allclose(w_e, w_m, **tol)
    assert np.all(w_e[..., px.causal_mask(T, S) == 0] == 0.0)
