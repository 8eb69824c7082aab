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
    cache = px.KVCache(3, 2, 3, 4, max_cache_len=sum(chunks))
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


def test_earlier_views_survive_later_updates():
    cache = px.KVCache(1, 2, 3, 4, max_cache_len=5)
    k1, v1 = kv(t=2, seed=1)
    keys1, _ = cache.update(k1, v1, 0)
    saved = keys1.copy()
    cache.update(*kv(t=3, seed=2), 0)
    np.testing.assert_array_equal(keys1, saved)


def test_float32_cache_nbytes_reset_and_repr():
    cache = px.KVCache(2, 1, 2, 8, max_cache_len=10, dtype=np.float32)
    keys, values = cache.update(*kv(B=1, Hkv=2, t=3, D=8, dtype=np.float32), 1)
    assert keys.dtype == np.float32 and values.shape == (1, 2, 3, 8)
    # allocated bytes = the formula of memory.py at max_cache_len, 4 bytes a value
    assert cache.nbytes == px.memory.kv_cache_bytes(2, 2, 8, seq_len=10, dtype_bytes=4) == 2 * 2 * 2 * 8 * 4 * 10
    assert "seen=[0, 3], held=[0, 3]" in repr(cache)
    cache.reset()
    assert cache.get_seq_length(1) == 0


@given(chunks=st.lists(st.integers(1, 3), min_size=1, max_size=4), keep=st.integers(0, 12))
def test_crop_keeps_a_prefix_and_appends_after_it(chunks, keep):
    cache = px.KVCache(2, 2, 3, 4, max_cache_len=sum(chunks) + 2)
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


def test_cache_bytes_by_hand():
    # Qwen3-1.7B in bf16: 2 (K and V) x 28 layers x 8 KV heads x 128 x 2 bytes per token
    assert px.memory.kv_cache_bytes(28, 8, 128, seq_len=1) == 2 * 28 * 8 * 128 * 2 == 114_688
    assert px.memory.kv_cache_bytes(28, 16, 128, seq_len=1) == 229_376  # MHA: twice as much
    assert px.memory.kv_cache_bytes(28, 1, 128, seq_len=1) == 14_336  # MQA: an eighth
    assert px.memory.kv_cache_bytes(28, 8, 128, seq_len=32_768) == 3_758_096_384  # 3.5 GiB
    per_token = px.memory.kv_cache_bytes(28, 8, 128, seq_len=1)
    assert px.memory.kv_cache_bytes(28, 8, 128, seq_len=1000, dtype_bytes=4, batch_size=3) == per_token * 2 * 1000 * 3
    # the numpy cache allocates exactly what the formula says (float32: 4 bytes)
    cache = px.KVCache(3, 2, 2, 16, max_cache_len=7, dtype=np.float32)
    assert cache.nbytes == px.memory.kv_cache_bytes(3, 2, 16, seq_len=7, dtype_bytes=4, batch_size=2) == 2 * 3 * 2 * 16 * 4 * 7 * 2


@given(chunks=st.lists(st.integers(1, 3), min_size=1, max_size=4), drop=st.integers(1, 12))
def test_negative_crop_drops_from_the_end_as_dynamic_cache(chunks, drop):
    """HF 5.x: DynamicCache.crop(-n) removes the last n tokens."""
    cache = px.KVCache(2, 2, 3, 4, max_cache_len=sum(chunks))
    for i, t in enumerate(chunks):
        cache.update(*kv(t=t, seed=i), 0)
    cache.crop(-drop)
    assert cache.get_seq_length(0) == max(sum(chunks) - drop, 0)
    assert cache.get_seq_length(1) == 0


def test_a_cache_fills_exactly_to_max_cache_len():
    # the refusal one position later is a row of test_bad_input.LAYER_ROWS
    cache = px.KVCache(1, 2, 3, 4, max_cache_len=4)
    cache.update(*kv(t=3), 0)
    keys, _ = cache.update(*kv(t=1, seed=1), 0)
    assert cache.get_seq_length() == 4 and keys.shape == (2, 3, 4, 4)
    np.testing.assert_array_equal(keys[:, :, 3:], kv(t=1, seed=1)[0])


def sink_window_mask(T, window, sink_tokens):
    """(T, T) True = may attend: causal, in the window or a sink."""
    q, kv = np.arange(T)[:, None], np.arange(T)[None, :]
    return (kv <= q) & ((q - kv < window) | (kv < sink_tokens))


def test_a_window_cache_keeps_the_sinks_and_the_last_positions():
    cache = px.kv_cache.SlidingWindowCache(1, window=3, sink_tokens=2)
    for t in range(9):
        x = np.full((1, 1, 1, 1), float(t))
        keys, _ = cache.update(x, x, 0)
        want = [s for s in range(t + 1) if s < 2 or t - s < 3]
        assert keys[0, 0, :, 0].tolist() == want
    assert cache.get_held_length() == 2 + 2  # sinks + window - 1
    assert cache.get_seq_length() == 9  # every token seen
    assert repr(cache).startswith("SlidingWindowCache(layers=1 's', seen=9, "
                                  "held=4")


@pytest.mark.parametrize("sink_tokens", [0, 2])
def test_decoding_through_a_window_cache_equals_one_masked_pass(sink_tokens):
    model = px.TinyDecoder(num_hidden_layers=2, seed=0)
    T, window = 14, 4
    ids = np.random.default_rng(1).integers(0, model.vocab_size, (1, T))
    mask = sink_window_mask(T, window, sink_tokens)[None, None]  # (1,1,T,T)
    want = model(ids, attention_mask=mask).logits
    cache = px.kv_cache.SlidingWindowCache(2, window=window,
                                           sink_tokens=sink_tokens)
    got = [model(ids[:, t:t + 1], cache=cache,
                 position_ids=np.array([[t]])).logits for t in range(T)]
    np.testing.assert_allclose(np.concatenate(got, axis=1), want,
                               rtol=1e-10, atol=1e-12)
    if sink_tokens == 0:  # the window matters: a plain causal pass differs
        assert not np.allclose(model(ids).logits, want)


# ------------------------------------------ DynamicCache: one layer a type
LOCAL_GLOBAL = dict(layer_types=["sliding_attention", "full_attention"],
                    sliding_window=4)


@given(st.lists(st.integers(1, 5), min_size=1, max_size=6))
def test_dynamic_cache_keeps_the_window_in_sliding_layers(chunks):
    cache = px.kv_cache.DynamicCache(LOCAL_GLOBAL)
    seen = 0
    for T in chunks:
        new = seen + np.arange(T, dtype=float)  # token t's key is t
        k = np.broadcast_to(new[None, None, :, None], (1, 2, T, 3))
        for i in (0, 1):
            held_before = cache.layers[i].held
            keys, values = cache.update(k, k, i)
            # returned: what was held, then the new tokens, in order
            assert keys.shape[2] == held_before + T
            np.testing.assert_array_equal(keys[0, 0, :, 0],
                                          np.arange(seen + T)[-(
                                              held_before + T):])
        seen += T
        assert cache.layers[0].held == min(seen, 3)  # window - 1
        assert cache.layers[1].held == seen
        assert cache.get_seq_length(0) == cache.get_seq_length(1) == seen
    assert cache.nbytes == 2 * 2 * 3 * 8 * (min(seen, 3) + seen)


def test_dynamic_cache_without_config_adds_full_layers():
    cache = px.kv_cache.DynamicCache()
    k = np.zeros((1, 1, 2, 4))
    cache.update(k, k, 2)
    assert len(cache.layers) == 3 and cache.get_seq_length(2) == 2
    assert cache.get_seq_length(0) == 0 and cache.get_seq_length(7) == 0
    assert "layers=3 'fff'" in repr(cache)


def _variant_layers(cls, config):
    rng = np.random.default_rng(0)
    layers = []
    for i in range(len(config["layer_types"])):
        shapes = cls(config, i).state_shapes()
        state = {k: 0.3 * rng.standard_normal(s) for k, s in shapes.items()}
        layers.append(cls.from_state_dict(state, config, i))
    return layers


VARIANT_CONFIG = dict(hidden_size=16, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=4, sliding_window=4,
                      layer_types=["sliding_attention", "full_attention"],
                      rope_parameters={"rope_type": "default",
                                       "rope_theta": 1e4},
                      query_pre_attn_scalar=4, attn_logit_softcapping=2.0,
                      attention_bias=True)


@pytest.mark.parametrize("name", ["GptOssAttention", "Gemma2Attention",
                                  "Gemma3Attention", "DiffLlamaAttention"])
@pytest.mark.parametrize("chunks", [(5, 1, 1, 1, 3, 1), (1,) * 9, (9,)])
def test_variants_through_a_dynamic_cache_equal_one_pass(name, chunks):
    """Prefill and decode through the per-layer cache give the outputs of
    one masked pass over all tokens, on the sliding and the full layer."""
    layers = _variant_layers(getattr(px.variants, name), VARIANT_CONFIG)
    x = np.random.default_rng(1).standard_normal((2, sum(chunks), 16))
    cache = px.kv_cache.DynamicCache(VARIANT_CONFIG)
    for layer in layers:
        whole = layer(x)
        start, parts = 0, []
        for T in chunks:
            parts.append(layer(x[:, start:start + T], cache=cache))
            start += T
        np.testing.assert_allclose(np.concatenate(parts, axis=1), whole,
                                   rtol=0, atol=1e-12)
    assert cache.layers[0].held == min(sum(chunks), 3)
    assert cache.layers[1].held == sum(chunks)
