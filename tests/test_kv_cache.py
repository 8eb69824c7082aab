"""Tests of pyxis_nb.kv_cache.KVCache: appends, views, lengths and every refusal."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyxis_nb as px


def kv(B=2, Hkv=3, t=1, D=4, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((B, Hkv, t, D)).astype(dtype),
            rng.standard_normal((B, Hkv, t, D)).astype(dtype))


@given(chunks=st.lists(st.integers(1, 4), min_size=1, max_size=6), layer=st.integers(0, 2))
def test_appends_return_everything_so_far(chunks, layer):
    cache = px.KVCache(3, 2, 3, 4, max_seq_len=sum(chunks))
    keys_seen, values_seen = [], []
    for i, t in enumerate(chunks):
        k, v = kv(t=t, seed=i)
        keys_seen.append(k)
        values_seen.append(v)
        keys, values = cache.update(k, v, layer)
        np.testing.assert_array_equal(keys, np.concatenate(keys_seen, axis=2))
        np.testing.assert_array_equal(values, np.concatenate(values_seen, axis=2))
        assert np.shares_memory(keys, cache.key_cache[layer])  # a view, not a copy
    assert cache.get_seq_length(layer) == sum(chunks)
    assert all(cache.get_seq_length(i) == 0 for i in range(3) if i != layer)


@given(max_seq_len=st.integers(1, 6), chunks=st.lists(st.integers(1, 4), min_size=1, max_size=5))
def test_overflow_is_refused_and_changes_nothing(max_seq_len, chunks):
    cache = px.KVCache(1, 2, 3, 4, max_seq_len=max_seq_len)
    held = 0
    for i, t in enumerate(chunks):
        k, v = kv(t=t, seed=i)
        if held + t > max_seq_len:
            before = cache.key_cache[0].copy()
            with pytest.raises(ValueError, match=f"cannot append {t} positions to layer 0: it holds "
                                                 f"{held} and max_seq_len is {max_seq_len}"):
                cache.update(k, v, 0)
            np.testing.assert_array_equal(cache.key_cache[0], before)
        else:
            cache.update(k, v, 0)
            held += t
        assert cache.get_seq_length() == held


def test_earlier_views_survive_later_updates():
    cache = px.KVCache(1, 2, 3, 4, max_seq_len=5)
    k1, v1 = kv(t=2, seed=1)
    keys1, _ = cache.update(k1, v1, 0)
    saved = keys1.copy()
    cache.update(*kv(t=3, seed=2), 0)
    np.testing.assert_array_equal(keys1, saved)


def test_float32_cache_nbytes_reset_and_repr():
    cache = px.KVCache(2, 1, 2, 8, max_seq_len=10, dtype=np.float32)
    keys, values = cache.update(*kv(B=1, Hkv=2, t=3, D=8, dtype=np.float32), 1)
    assert keys.dtype == np.float32 and values.shape == (1, 2, 3, 8)
    # allocated bytes = the formula of memory.py at max_seq_len, 4 bytes a value
    assert cache.nbytes == px.kv_cache_bytes(2, 2, 8, seq_len=10, dtype_bytes=4) == 2 * 2 * 2 * 8 * 4 * 10
    assert "lengths=[0, 3]" in repr(cache)
    cache.reset()
    assert cache.get_seq_length(1) == 0


def test_shape_and_dtype_mismatch():
    cache = px.KVCache(2, 2, 3, 4, max_seq_len=8)
    k, v = kv()
    with pytest.raises(ValueError, match=r"key_states has shape \(2, 2, 1, 4\) and dtype float64, expected \(B, H_kv, T, d_head\) = \(2, 3, T, 4\)"):
        cache.update(k[:, :2], v, 0)
    with pytest.raises(ValueError, match=r"value_states has shape \(2, 3, 1, 5\) and dtype float64, expected \(B, H_kv, T, d_head\) = \(2, 3, T, 4\)"):
        cache.update(k, np.ones((2, 3, 1, 5)), 0)
    with pytest.raises(ValueError, match=r"value_states has shape \(1, 3, 1, 4\)"):
        cache.update(k, v[:1], 0)
    with pytest.raises(ValueError, match=r"key_states must have 4 dimensions, got shape \(2, 3, 4\)"):
        cache.update(k[:, :, 0], v, 0)
    with pytest.raises(ValueError, match=r"key_states has shape \(2, 3, 0, 4\).*T >= 1"):
        cache.update(k[:, :, :0], v[:, :, :0], 0)
    with pytest.raises(ValueError, match=r"value_states has shape \(2, 3, 1, 4\) .* = \(2, 3, T, 4\)"):
        cache.update(np.concatenate([k, k], axis=2), v, 0)
    with pytest.raises(ValueError, match="key_states has shape .* and dtype float32, expected .* dtype float64"):
        cache.update(k.astype(np.float32), v, 0)
    with pytest.raises(ValueError, match="value_states must be a floating-point array"):
        cache.update(k, v.astype(np.int32), 0)
    assert cache.get_seq_length() == 0


def test_bad_layer_index_and_construction():
    cache = px.KVCache(2, 2, 3, 4, max_seq_len=8)
    for bad in (2, -1):
        with pytest.raises(ValueError, match=rf"layer_idx must be an integer 0 <= layer_idx <= 1, got {bad}"):
            cache.update(*kv(), bad)
    for bad in (1.0, True):
        with pytest.raises(ValueError, match=rf"layer_idx must be an integer, got {bad}"):
            cache.update(*kv(), bad)
    with pytest.raises(ValueError, match=r"layer_idx must be an integer 0 <= layer_idx <= 1, got 5"):
        cache.get_seq_length(5)
    with pytest.raises(ValueError, match="max_seq_len must be an integer >= 1, got 0"):
        px.KVCache(1, 1, 1, 1, max_seq_len=0)
    with pytest.raises(ValueError, match="dtype must be a float dtype"):
        px.KVCache(1, 1, 1, 1, max_seq_len=4, dtype=np.int32)


def test_key_and_value_dtypes_are_checked_separately():
    cache = px.KVCache(1, 2, 3, 4, max_seq_len=8, dtype=np.float32)
    k, v = kv(dtype=np.float32)
    with pytest.raises(ValueError, match="value_states has .* dtype float64, expected .* dtype float32"):
        cache.update(k, v.astype(np.float64), 0)
    with pytest.raises(ValueError, match="key_states has .* dtype float64, expected .* dtype float32"):
        cache.update(k.astype(np.float64), v, 0)
    assert cache.get_seq_length() == 0


def test_overflow_message_names_both_lengths():
    cache = px.KVCache(1, 2, 3, 4, max_seq_len=4)
    cache.update(*kv(t=3), 0)
    with pytest.raises(ValueError, match=r"cannot append 2 positions to layer 0: it holds 3 and "
                                         r"max_seq_len is 4 \(3 \+ 2 = 5 > 4\)"):
        cache.update(*kv(t=2), 0)
    cache.update(*kv(t=1), 0)  # exactly full is fine
    with pytest.raises(ValueError, match="it holds 4 and max_seq_len is 4"):
        cache.update(*kv(t=1), 0)


@given(chunks=st.lists(st.integers(1, 3), min_size=1, max_size=4), keep=st.integers(0, 12))
def test_crop_keeps_a_prefix_and_appends_after_it(chunks, keep):
    cache = px.KVCache(2, 2, 3, 4, max_seq_len=sum(chunks) + 2)
    for i, t in enumerate(chunks):
        cache.update(*kv(t=t, seed=i), 0)
    held = sum(chunks)
    before = cache.key_cache[0][:, :, :held].copy()
    cache.crop(keep)
    kept = min(keep, held)
    assert cache.get_seq_length(0) == kept and cache.get_seq_length(1) == 0
    k, v = kv(t=2, seed=99)
    keys, _ = cache.update(k, v, 0)
    np.testing.assert_array_equal(keys[:, :, :kept], before[:, :, :kept])
    np.testing.assert_array_equal(keys[:, :, kept:], k)


def test_crop_refuses_bad_lengths():
    cache = px.KVCache(1, 1, 1, 1, max_seq_len=4)
    for bad in (1.5, True, None):
        with pytest.raises(ValueError, match="max_length must be an integer, got"):
            cache.crop(bad)


def test_cache_bytes_by_hand():
    # Qwen3-1.7B in bf16: 2 (K and V) x 28 layers x 8 KV heads x 128 x 2 bytes per token
    assert px.kv_cache_bytes(28, 8, 128, seq_len=1) == 2 * 28 * 8 * 128 * 2 == 114_688
    assert px.kv_cache_bytes(28, 16, 128, seq_len=1) == 229_376  # MHA: twice as much
    assert px.kv_cache_bytes(28, 1, 128, seq_len=1) == 14_336  # MQA: an eighth
    assert px.kv_cache_bytes(28, 8, 128, seq_len=32_768) == 3_758_096_384  # 3.5 GiB
    assert px.kv_cache_bytes(28, 8, 128, seq_len=1000, dtype_bytes=4, batch_size=3) == 2 * 28 * 8 * 128 * 4 * 1000 * 3
    # the numpy cache allocates exactly what the formula says (float32: 4 bytes)
    cache = px.KVCache(3, 2, 2, 16, max_seq_len=7, dtype=np.float32)
    assert cache.nbytes == px.kv_cache_bytes(3, 2, 16, seq_len=7, dtype_bytes=4, batch_size=2) == 2 * 3 * 2 * 16 * 4 * 7 * 2


@given(chunks=st.lists(st.integers(1, 3), min_size=1, max_size=4), drop=st.integers(1, 12))
def test_negative_crop_drops_from_the_end_as_dynamic_cache(chunks, drop):
    """HF 5.x: DynamicCache.crop(-n) removes the last n tokens."""
    cache = px.KVCache(2, 2, 3, 4, max_seq_len=sum(chunks))
    for i, t in enumerate(chunks):
        cache.update(*kv(t=t, seed=i), 0)
    cache.crop(-drop)
    assert cache.get_seq_length(0) == max(sum(chunks) - drop, 0)
    assert cache.get_seq_length(1) == 0
