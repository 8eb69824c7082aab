"""Tests of pyxis_nb.tiled: the online softmax and exact attention in tiles."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyxis_nb as px
from conftest import fresh_python


def _qkv(rng, q_shape, k_shape, v_shape, dtype=np.float64):
    return tuple(rng.standard_normal(s).astype(dtype) for s in (q_shape, k_shape, v_shape))


# ---------------------------------------------------------------- online softmax

@given(
    rows=st.integers(1, 4), n=st.integers(1, 40), block=st.integers(1, 50),
    seed=st.integers(0, 2**16), masked=st.floats(0.0, 0.9),
)
def test_online_softmax_equals_softmax(rows, n, block, seed, masked):
    rng = np.random.default_rng(seed)
    x = 5 * rng.standard_normal((rows, n))
    x[rng.random((rows, n)) < masked] = -np.inf
    np.testing.assert_allclose(px.tiled.online_softmax(x, block), px.softmax(x), rtol=0, atol=1e-14)


def test_online_softmax_fully_masked_row_is_zeros_and_large_scores_are_stable():
    x = np.array([[-np.inf, -np.inf, -np.inf], [1e4, 1e4 - 1.0, -np.inf]])
    y = px.tiled.online_softmax(x, 1)
    assert not np.isnan(y).any()
    np.testing.assert_array_equal(y[0], 0.0)
    e = np.exp(-1.0)
    np.testing.assert_allclose(y[1], [1 / (1 + e), e / (1 + e), 0.0], rtol=1e-15)


def test_online_softmax_keeps_float32():
    x = np.random.default_rng(0).standard_normal((3, 17)).astype(np.float32)
    y = px.tiled.online_softmax(x, 4)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, px.softmax(x), atol=1e-6)


def test_online_softmax_update_rescales_by_hand():
    # block 1: scores [0, ln 2] -> m = ln 2, l = 1/2 + 1; block 2: [ln 4] -> m = ln 4,
    # old sum shrinks by e^(ln 2 - ln 4) = 1/2: l = 3/4 + 1 = 7/4 (= (1 + 2 + 4) / 4)
    state = px.tiled.OnlineSoftmaxState.empty((1,), np.float64, value_dim=1)
    px.tiled.online_softmax_update(state, np.log([[1.0, 2.0]]), np.array([[2.0], [4.0]]))
    np.testing.assert_allclose([state.row_max[0, 0], state.row_sum[0, 0]], [np.log(2), 1.5])
    px.tiled.online_softmax_update(state, np.log([[4.0]]), np.array([[8.0]]))
    np.testing.assert_allclose([state.row_max[0, 0], state.row_sum[0, 0]], [np.log(4), 1.75])
    # output = (1*2 + 2*4 + 4*8) / (1 + 2 + 4) = 42 / 7 = 6
    np.testing.assert_allclose(state.acc[0, 0] / state.row_sum[0, 0], 6.0)


# ---------------------------------------------------------------- tiled attention

def test_tiled_attention_hand_computed_example():
    # the worked example of the book: weights 1/6, 2/6, 3/6 -> 17/3
    q = np.array([[1.0]])
    k = np.log(np.array([[1.0], [2.0], [3.0]]))
    v = np.array([[2.0], [4.0], [8.0]])
    for block in (1, 2, 3, 5):
        out = px.tiled_attention(q, k, v, scale=1.0, block_q=block, block_k=block)
        np.testing.assert_allclose(out, [[17 / 3]], rtol=1e-15)
    out = px.tiled_attention(q, k, v, scale=1.0, attn_mask=np.array([[True, True, False]]),
                             block_k=1)
    np.testing.assert_allclose(out, [[(2 + 2 * 4) / 3]], rtol=1e-15)


@given(
    batch=st.sampled_from([(), (2,), (1, 3), (2, 2)]),
    L=st.integers(1, 13), S=st.integers(1, 13), E=st.integers(1, 6), Ev=st.integers(1, 5),
    block_q=st.integers(1, 16), block_k=st.integers(1, 16),
    mode=st.sampled_from(["none", "causal", "bool", "float", "bool_row", "float_col", "bool_full"]),
    seed=st.integers(0, 2**16),
)
def test_tiled_attention_equals_sdpa(batch, L, S, E, Ev, block_q, block_k, mode, seed):
    rng = np.random.default_rng(seed)
    q, k, v = _qkv(rng, batch + (L, E), batch + (S, E), batch + (S, Ev))
    kw = {}
    if mode == "causal":
        kw["is_causal"] = True
    elif mode == "bool":
        kw["attn_mask"] = rng.random((L, S)) < 0.6  # broadcast over the batch
    elif mode == "float":
        kw["attn_mask"] = np.where(rng.random((L, S)) < 0.3, -np.inf, rng.standard_normal((L, S)))
    elif mode == "bool_row":
        kw["attn_mask"] = rng.random((1, S)) < 0.5  # one key mask for every query
    elif mode == "float_col":
        kw["attn_mask"] = rng.standard_normal((L, 1))  # one bias per query row
    elif mode == "bool_full":
        kw["attn_mask"] = rng.random(batch + (L, S)) < 0.4
    ref = px.scaled_dot_product_attention(q, k, v, **kw)
    out = px.tiled_attention(q, k, v, block_q=block_q, block_k=block_k, **kw)
    assert out.shape == ref.shape and out.dtype == np.float64
    assert not np.isnan(out).any()
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)


@given(
    hkv=st.integers(1, 3), n_rep=st.integers(1, 3), L=st.integers(1, 9), S=st.integers(1, 9),
    block=st.integers(1, 10), causal=st.booleans(), head_mask=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_tiled_attention_gqa_equals_sdpa(hkv, n_rep, L, S, block, causal, head_mask, seed):
    rng = np.random.default_rng(seed)
    hq = hkv * n_rep
    q, k, v = _qkv(rng, (2, hq, L, 4), (2, hkv, S, 4), (2, hkv, S, 3))
    kw = {"is_causal": True} if causal else {
        "attn_mask": rng.random((hq, L, S) if head_mask else (1, 1, L, S)) < 0.5}
    ref = px.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw)
    out = px.tiled_attention(q, k, v, enable_gqa=True, block_q=block, block_k=block + 1, **kw)
    assert out.shape == (2, hq, L, 3)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)


def test_tiled_attention_broadcasts_leading_dims_like_sdpa(rng):
    q, k, v = _qkv(rng, (3, 5, 4), (2, 1, 7, 4), (7, 2))
    out = px.tiled_attention(q, k, v, is_causal=True, block_q=2, block_k=3)
    ref = px.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.shape == ref.shape == (2, 3, 5, 2)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("L, S", [(5, 9), (9, 5), (8, 8)])
def test_causal_is_top_left_and_skips_tiles_above_the_diagonal(rng, L, S):
    q, k, v = _qkv(rng, (2, L, 3), (2, S, 3), (2, S, 3))
    out, stats = px.tiled_attention(q, k, v, is_causal=True, block_q=2, block_k=2,
                                    return_stats=True)
    ref = px.scaled_dot_product_attention(
        q, k, v, attn_mask=px.causal_mask(L, S, align="top_left"))
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
    # tile (i, j) is needed iff its first key (2j) is at most its last query (2i + 1)
    i, j = np.indices(stats.computed.shape)
    np.testing.assert_array_equal(stats.computed, 2 * j <= np.minimum(2 * i + 1, L - 1))
    assert stats.n_computed + stats.n_skipped == stats.computed.size
    assert len(stats.steps) == stats.computed.size


def test_stats_count_flops_and_record_the_running_max(rng):
    L, S, E, Ev = 6, 6, 4, 3
    q, k, v = _qkv(rng, (L, E), (S, E), (S, Ev))
    _, full = px.tiled_attention(q, k, v, block_q=2, block_k=3, return_stats=True)
    _, causal = px.tiled_attention(q, k, v, is_causal=True, block_q=2, block_k=3,
                                   return_stats=True)
    assert full.flops == 2 * L * S * (E + Ev)  # the same FLOPs as the untiled product
    assert full.n_skipped == 0 and causal.n_skipped == 1
    # causal tiles stop at the block's last query: rows 0-1 see 2 columns of key block 0
    # (not 3); rows 2-3 see 3 + 1 columns; rows 4-5 see 3 + 3: 12 columns of 2 rows
    assert causal.flops == 2 * 2 * (2 + 3 + 1 + 3 + 3) * (E + Ev) == 336
    scores = (q @ k.T) / np.sqrt(E)
    last = [s for s in full.steps if s.q_block == 0][-1]
    np.testing.assert_allclose(last.row_max, scores[:2].max(axis=1))
    np.testing.assert_allclose(
        last.row_sum, np.exp(scores[:2] - scores[:2].max(axis=1, keepdims=True)).sum(axis=1))


def test_fully_masked_rows_give_zeros_never_nan(rng):
    q, k, v = _qkv(rng, (2, 6, 4), (2, 7, 4), (2, 7, 3))
    mask = rng.random((6, 7)) < 0.5
    mask[[1, 4]] = False
    out, stats = px.tiled_attention(q, k, v, attn_mask=mask, block_q=2, block_k=2,
                                    return_stats=True)
    assert not np.isnan(out).any()
    np.testing.assert_array_equal(out[:, [1, 4]], 0.0)
    np.testing.assert_allclose(out, px.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                               rtol=0, atol=1e-12)
    all_hidden = np.zeros((6, 7), dtype=bool)
    out, stats = px.tiled_attention(q, k, v, attn_mask=all_hidden, block_q=4, block_k=4,
                                    return_stats=True)
    np.testing.assert_array_equal(out, 0.0)
    assert stats.n_computed == 0  # every tile was hidden by the mask, so none was computed


def test_float32_stays_float32_and_matches_to_1e5(rng):
    q, k, v = _qkv(rng, (1, 4, 300, 64), (1, 2, 300, 64), (1, 2, 300, 64), np.float32)
    for kw in ({"is_causal": True}, {"attn_mask": rng.random((300, 300)) < 0.7}):
        out = px.tiled_attention(q, k, v, enable_gqa=True, block_q=64, block_k=96, **kw)
        ref = px.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-5)
    mask32 = np.where(rng.random((300, 300)) < 0.5, np.float32(0), np.float32(-np.inf))
    assert px.tiled_attention(q[:, :2], k, v, attn_mask=mask32).dtype == np.float32


def test_matches_torch_sdpa():
    torch = pytest.importorskip("torch", reason="torch is not installed: reference check skipped")
    rng = np.random.default_rng(7)
    q, k, v = _qkv(rng, (2, 8, 37, 16), (2, 4, 37, 16), (2, 4, 37, 16))
    tq, tk, tv = map(torch.from_numpy, (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True,
                                                           enable_gqa=True).numpy()
    out = px.tiled_attention(q, k, v, is_causal=True, enable_gqa=True, block_q=8, block_k=16)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
    mask = rng.random((37, 37)) < 0.5
    mask[3] = False  # a fully masked row: torch >= 2.5 gives zeros there too
    ref = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=torch.from_numpy(mask), enable_gqa=True).numpy()
    out = px.tiled_attention(q, k, v, attn_mask=mask, enable_gqa=True, block_q=8, block_k=16)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)


# ---------------------------------------------------------------- bad input


# ---------------------------------------------------------------- mask_mod

def window_mod(w):
    """Mistral's one-sided window: query i sees keys i - w + 1 .. i."""
    return lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & (q_idx - kv_idx < w)


def window_mask(T, w):
    return px.sliding_window_mask(T, window=w) & px.causal_mask(T)


@given(
    T=st.integers(1, 40), w=st.integers(1, 12), block_q=st.integers(1, 16),
    block_k=st.integers(1, 16), gqa=st.booleans(), seed=st.integers(0, 2**16),
)
def test_window_mask_mod_equals_sdpa_with_sliding_window_mask(
        T, w, block_q, block_k, gqa, seed):
    rng = np.random.default_rng(seed)
    hkv = 2 if gqa else 4
    q, k, v = _qkv(rng, (2, 4, T, 8), (2, hkv, T, 8), (2, hkv, T, 3))
    ref = px.scaled_dot_product_attention(
        q, k, v, attn_mask=window_mask(T, w), enable_gqa=gqa)
    out, stats = px.tiled_attention(
        q, k, v, mask_mod=window_mod(w), enable_gqa=gqa, block_q=block_q,
        block_k=block_k, return_stats=True)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
    # a tile is computed iff the window keeps one of its (query, key) pairs
    keep = window_mask(T, w)
    for step in stats.steps:
        i0, j0 = step.q_block * block_q, step.k_block * block_k
        tile = keep[i0:i0 + block_q, j0:j0 + block_k]
        assert step.computed == tile.any()


def test_window_computes_tiles_linear_in_T():
    Ts, w, b = [512, 1024, 2048, 4096], 128, 64
    counts, flops = [], []
    for T in Ts:
        q = np.zeros((T, 4), dtype=np.float32)
        _, st = px.tiled_attention(q, q, q, mask_mod=window_mod(w),
                                   block_q=b, block_k=b, return_stats=True)
        counts.append(st.n_computed)
        flops.append(st.flops)
    # query block r sees key blocks r - 2 .. r: 3 per block after the first 2
    assert counts == [3 * (T // b) - 3 for T in Ts]
    assert np.diff(counts).tolist() == [3 * (T // b) for T in Ts[:-1]]
    assert flops[-1] / flops[-2] < 2.05  # doubling T about doubles the work
    _, causal = px.tiled_attention(q, q, q, is_causal=True, block_q=b,
                                   block_k=b, return_stats=True)
    assert causal.n_computed == (T // b) * (T // b + 1) // 2  # quadratic


def test_window_memory_is_linear_with_mask_mod_quadratic_with_attn_mask(rng):
    import tracemalloc

    def peak(fn):
        tracemalloc.start()
        try:
            fn()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    mod, dense = [], []
    for T in (512, 1024, 2048):
        q = rng.standard_normal((T, 16)).astype(np.float32)
        mod.append(peak(lambda: px.tiled_attention(
            q, q, q, mask_mod=window_mod(64))))
        dense.append(peak(lambda: px.tiled_attention(  # the (T, S) mask too
            q, q, q, attn_mask=window_mask(T, 64))))
    assert all(b / a < 2.5 for a, b in zip(mod, mod[1:]))
    assert all(b / a > 3.5 for a, b in zip(dense, dense[1:]))
    assert mod[-1] < 0.05 * dense[-1]


def test_mask_mod_sees_batch_and_head_indices_padding_included(rng):
    lengths = np.array([7, 4])  # right padding: key j is real iff j < length
    real = px.padding_mask(lengths, 7)[:, 0, 0]  # (B, S)

    def mod(b, h, q_idx, kv_idx):  # head h widens the window by h
        return real[b, kv_idx] & (q_idx >= kv_idx) & (q_idx - kv_idx < 2 + h)

    q, k, v = _qkv(rng, (2, 3, 7, 4), (2, 3, 7, 4), (2, 3, 7, 2))
    heads = np.arange(3)[:, None, None]
    dense = (real[:, None, None, :] & px.causal_mask(7)
             & (np.subtract.outer(np.arange(7), np.arange(7)) < 2 + heads))
    ref = px.scaled_dot_product_attention(q, k, v, attn_mask=dense)
    for block in (1, 2, 3, 7):
        out = px.tiled_attention(q, k, v, mask_mod=mod, block_q=block,
                                 block_k=block)
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
    # padding alone, as a mask_mod: the padded keys get no weight
    out = px.tiled_attention(q, k, v, mask_mod=lambda b, h, q_idx, kv_idx:
                             real[b, kv_idx], block_q=2, block_k=3)
    np.testing.assert_allclose(out, px.scaled_dot_product_attention(
        q, k, v, attn_mask=px.padding_mask(lengths, 7)), rtol=0, atol=1e-12)


def test_mask_mod_hiding_everything_gives_zeros_and_computes_nothing(rng):
    q, k, v = _qkv(rng, (5, 4), (6, 4), (6, 2))
    out, stats = px.tiled_attention(
        q, k, v, mask_mod=lambda b, h, q_idx, kv_idx: kv_idx < 0,
        block_q=2, block_k=4, return_stats=True)
    np.testing.assert_array_equal(out, 0.0)
    assert stats.n_computed == 0 and stats.flops == 0
    out, stats = px.tiled_attention(
        q, k, v, mask_mod=lambda b, h, q_idx, kv_idx: True, block_q=2,
        block_k=4, return_stats=True)  # a plain bool broadcasts: no mask
    np.testing.assert_allclose(out, px.scaled_dot_product_attention(q, k, v),
                               rtol=0, atol=1e-12)
    assert stats.n_skipped == 0


def test_mask_mod_is_called_on_tiles_only(rng):
    shapes = []

    def mod(b, h, q_idx, kv_idx):
        shapes.append(np.broadcast_shapes(b.shape, h.shape, q_idx.shape,
                                          kv_idx.shape))
        return q_idx >= kv_idx

    q, k, v = _qkv(rng, (2, 3, 10, 4), (2, 3, 10, 4), (2, 3, 10, 4))
    px.tiled_attention(q, k, v, mask_mod=mod, block_q=4, block_k=8)
    # 3 query tiles x 2 key tiles, index arrays of one tile: (B, H, 4|2, 8|2)
    assert len(shapes) == 6
    assert set(shapes) == {(2, 3, 4, 8), (2, 3, 4, 2), (2, 3, 2, 8),
                           (2, 3, 2, 2)}


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_mask_mod_matches_torch_flex_attention():
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: flex_attention check skipped")
    flex = pytest.importorskip(
        "torch.nn.attention.flex_attention",
        reason="this torch has no flex_attention: check skipped")
    rng = np.random.default_rng(11)
    q, k, v = _qkv(rng, (2, 4, 40, 8), (2, 2, 40, 8), (2, 2, 40, 8))
    lengths = np.array([40, 29])

    def window_with_padding(real):  # one body for numpy and torch tensors
        return lambda b, h, q_idx, kv_idx: (
            real[b, kv_idx] & (q_idx >= kv_idx) & (q_idx - kv_idx < 6 + h))

    real = px.padding_mask(lengths, 40)[:, 0, 0]
    block_mask = flex.create_block_mask(
        window_with_padding(torch.from_numpy(real)), 2, 4, 40, 40,
        device="cpu", BLOCK_SIZE=16)
    ref = flex.flex_attention(*map(torch.from_numpy, (q, k, v)),
                              block_mask=block_mask, enable_gqa=True).numpy()
    out = px.tiled_attention(q, k, v, mask_mod=window_with_padding(real),
                             enable_gqa=True, block_q=16, block_k=16)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)


def _record_parts(monkeypatch, tiled) -> list:
    """The parts of the heads each later kernel call attends, in order."""
    parts, split = [], tiled._across_cores

    def recording(attend, work, parallel=True):
        def attend_part(heads):
            parts.append(heads)
            return attend(heads)
        return split(attend_part, work, parallel)
    monkeypatch.setattr(tiled, "_across_cores", recording)
    return parts


@pytest.mark.parametrize("mask", ["causal", "per batch", "per head"])
def test_heads_split_across_cores_give_the_one_thread_result(rng, monkeypatch, mask):
    """With two BLAS threads the batch is split in four parts (two per
    core), attended in a pool of two threads (BLAS on one thread in each);
    the result is the one-thread result."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import pyxis_nb.tiled as tiled

    monkeypatch.setattr(tiled, "PARALLEL_MIN_MACS", 0)  # split even this
    q, k, v = _qkv(rng, (5, 4, 70, 8), (5, 2, 70, 8), (5, 2, 70, 8))
    kw = {"is_causal": True} if mask == "causal" else {"attn_mask": rng.random(
        (5, 1, 70, 70) if mask == "per batch" else (5, 4, 70, 70)) < 0.6}
    kw.update(enable_gqa=True, block_q=16, block_k=32)
    with threadpoolctl.threadpool_limits(1, "blas"):  # one core: one part
        one = px.tiled_attention(q, k, v, **kw)
    parts = _record_parts(monkeypatch, tiled)
    with threadpoolctl.threadpool_limits(2, "blas"):
        both = px.tiled_attention(q, k, v, **kw)
    np.testing.assert_allclose(both, one, rtol=0, atol=1e-13)
    np.testing.assert_allclose(both, px.scaled_dot_product_attention(
        q, k, v, **{a: b for a, b in kw.items() if "block" not in a}), atol=1e-12)
    if tiled._blas().lib_controllers:  # numpy's BLAS found: 5 -> 1+1+1+2
        assert sorted(parts, key=str) == [(slice(a, b),) for a, b in (
            (0, 1), (1, 2), (2, 3), (3, 5))]


def test_small_work_stays_on_one_thread(rng, monkeypatch):
    """Below PARALLEL_MIN_MACS the heads are one part even with two BLAS
    threads (a pool would cost more than it saves); above, they split."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import pyxis_nb.tiled as tiled

    parts = _record_parts(monkeypatch, tiled)
    q, k, v = _qkv(rng, (1, 8, 64, 16), (1, 4, 64, 16), (1, 4, 64, 16))
    with threadpoolctl.threadpool_limits(2, "blas"):
        px.tiled_attention(q, k, v, is_causal=True, enable_gqa=True)
        assert parts == [()]  # 8 * 64 * 64 * 16 = 524,288 multiply-adds
        monkeypatch.setattr(tiled, "PARALLEL_MIN_MACS", 8 * 64 * 64 * 16)
        parts.clear()
        px.tiled_attention(q, k, v, is_causal=True, enable_gqa=True)
    if tiled._blas().lib_controllers:  # numpy's BLAS found: 4 heads, 4 parts
        assert len(parts) == 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("B, H, H_kv, S", [(1, 9, 3, 512), (1, 9, 3, 50),
                                           (2, 8, 8, 7), (1, 6, 1, 1),
                                           (3, 4, 2, 300)])
def test_a_decode_step_is_the_loops_one_tile(rng, monkeypatch, dtype, B, H,
                                             H_kv, S):
    """A decode step (one query per head, every key in one tile) runs the
    loop once, on one thread: one online update from the empty state, which
    gives the numbers of one plain softmax over the tile (as a shortcut
    that bypassed the loop did, before issue 50), bit for bit."""
    import pyxis_nb.tiled as tiled
    q = rng.standard_normal((B, H, 1, 16)).astype(dtype)
    k = rng.standard_normal((B, H_kv, S, 16)).astype(dtype)
    v = rng.standard_normal((B, H_kv, S, 24)).astype(dtype)
    updates, update = [], tiled.online_softmax_update
    monkeypatch.setattr(tiled, "online_softmax_update",
                        lambda *a: updates.append(a) or update(*a))
    step = tiled.tiled_attention_core(q, k, v)
    assert len(updates) == 1  # one tile, through the loop
    assert step.shape == (B, H, 1, 24) and step.dtype == dtype
    # the one-tile softmax, as the shortcut wrote it: (B, H_kv, n_rep, .)
    rows = q.reshape(B, H_kv, H // H_kv, 16) * dtype(1 / np.sqrt(16))
    s = rows @ np.swapaxes(k, -1, -2)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    want = np.divide(p @ v, p @ np.ones((S, 1), dtype))
    assert step.tobytes() == want.reshape(B, H, 1, 24).tobytes()


def test_the_fast_path_equals_the_loop_it_shows(rng):
    """tiled_attention (heads across cores, one tile buffer) gives the
    numbers of tiled_attention_loop run once on everything, bit for bit."""
    from pyxis_nb.tiled import OnlineSoftmaxState, Tiles, tiled_attention_loop

    q, k, v = _qkv(rng, (3, 4, 70, 8), (3, 4, 70, 8), (3, 4, 70, 8))
    scale = np.float64(1 / np.sqrt(8))  # as tiled_attention computes it
    causal = px.causal_mask(70)

    def keep(i0, i1, j0, j1):  # the causal tiles, written out
        if j0 >= j1:  # past the diagonal: no key
            return np.zeros((1, 1), bool)
        tile = causal[i0:i1, j0:j1]
        return None if tile.all() else tile

    def start(rows_shape, d_v):
        return OnlineSoftmaxState.empty(rows_shape, np.float64, d_v)

    tiles = Tiles(16, 32, scale, 1, keep, None, lambda i0, i1: (0, i1),
                  start, lambda rows, cols: None)
    shown = tiled_attention_loop(q, k, v, np.empty_like(q), tiles)
    fast = px.tiled_attention(q, k, v, is_causal=True, block_q=16, block_k=32)
    np.testing.assert_array_equal(fast, shown)


def test_import_and_tiles_without_threadpoolctl():
    """threadpoolctl is imported where the tiles run in parallel, and only
    there: without it the package imports and the tiles run on one thread."""
    code = ("import sys; sys.modules['threadpoolctl'] = None\n"
            "import numpy as np, pyxis_nb as px\n"
            "q = np.random.default_rng(0).standard_normal((2, 3, 40, 8))\n"
            "out = px.tiled_attention(q, q, q, is_causal=True, block_q=16)\n"
            "ref = px.scaled_dot_product_attention(q, q, q, is_causal=True)\n"
            "assert np.allclose(out, ref, atol=1e-12)\n"
            "assert 'threadpoolctl' not in [m for m in sys.modules"
            " if sys.modules[m] is not None]\n")
    done = fresh_python(code)
    assert done.returncode == 0, done.stderr
