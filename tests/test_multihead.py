"""Tests of pyxis_nb.multihead: heads, repeat_kv, the MHA/GQA/MQA layer, cached forward."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyxis_nb as px


# (H, Hkv) pairs with Hkv dividing H: MHA, GQA and MQA
heads_st = st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 1), (4, 2), (4, 4), (6, 3), (8, 2)])


def layer_and_input(H, Hkv, D=3, C=5, B=2, T=4, seed=0, dtype=np.float64):
    layer = px.MultiHeadAttention.random(C, H, Hkv, D, seed=seed, dtype=dtype)
    x = np.random.default_rng(seed + 1).standard_normal((B, T, C)).astype(dtype)
    return layer, x


# ---------------------------------------------------------------- split / merge / repeat_kv

@given(B=st.integers(1, 3), T=st.integers(1, 5), H=st.integers(1, 4), D=st.integers(1, 4))
def test_split_merge_roundtrip_and_layout(B, T, H, D):
    x = np.random.default_rng(0).standard_normal((B, T, H * D))
    heads = px.split_heads(x, H)
    assert heads.shape == (B, H, T, D)
    for h in range(H):  # head h holds features h*D:(h+1)*D of every token
        np.testing.assert_array_equal(heads[:, h], x[..., h * D:(h + 1) * D])
    np.testing.assert_array_equal(px.merge_heads(heads), x)


@given(B=st.integers(1, 3), Hkv=st.integers(1, 4), n_rep=st.integers(1, 4),
       S=st.integers(1, 4), D=st.integers(1, 3))
def test_repeat_kv_matches_per_head_loop(B, Hkv, n_rep, S, D):
    kv = np.random.default_rng(1).standard_normal((B, Hkv, S, D))
    out = px.repeat_kv(kv, n_rep)
    assert out.shape == (B, Hkv * n_rep, S, D)
    for h in range(Hkv * n_rep):
        np.testing.assert_array_equal(out[:, h], kv[:, h // n_rep])
        assert px.kv_head_for(h, Hkv * n_rep, Hkv) == h // n_rep
    np.testing.assert_array_equal(out, np.repeat(kv, n_rep, axis=1))


def test_repeat_kv_hand_example_and_identity():
    kv = np.arange(2.0).reshape(1, 2, 1, 1)  # heads [0, 1]
    assert px.repeat_kv(kv, 3)[0, :, 0, 0].tolist() == [0, 0, 0, 1, 1, 1]  # not 0, 1, 0, 1, ...
    assert px.repeat_kv(kv, 1) is kv  # as Hugging Face: no copy when n_rep == 1
    assert px.repeat_kv(kv.astype(np.float32), 2).dtype == np.float32


def test_kv_head_for_qwen3_mapping():
    mapping = [px.kv_head_for(h, 16, 8) for h in range(16)]
    assert mapping == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]
    assert [px.kv_head_for(h, 16, 1) for h in range(16)] == [0] * 16
    assert [px.kv_head_for(h, 16, 16) for h in range(16)] == list(range(16))


# ---------------------------------------------------------------- the layer

@given(heads=heads_st, T=st.integers(1, 5), causal=st.booleans(), seed=st.integers(0, 50))
def test_per_head_loop_equals_vectorised_layer(heads, T, causal, seed):
    layer, x = layer_and_input(*heads, T=T, seed=seed)
    np.testing.assert_allclose(layer.forward(x, is_causal=causal),
                               layer.forward_per_head(x, is_causal=causal), atol=1e-12)


def independent_loop(layer, x, causal):
    """A second per-head loop written from the formula, with no pyxis_nb helpers."""
    B, T, C = x.shape
    H, Hkv, D = layer.num_attention_heads, layer.num_key_value_heads, layer.head_dim
    out = np.zeros((B, T, H * D))
    for b in range(B):
        for h in range(H):
            g = h * Hkv // H
            q = x[b] @ layer.q_proj[h * D:(h + 1) * D].T
            k = x[b] @ layer.k_proj[g * D:(g + 1) * D].T
            v = x[b] @ layer.v_proj[g * D:(g + 1) * D].T
            s = q @ k.T / np.sqrt(D)
            if causal:
                s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
            w = np.exp(s - s.max(-1, keepdims=True))
            out[b, :, h * D:(h + 1) * D] = (w / w.sum(-1, keepdims=True)) @ v
    return out @ layer.o_proj.T


@given(heads=heads_st, T=st.integers(1, 5), causal=st.booleans(), seed=st.integers(0, 50))
def test_layer_matches_independent_loop(heads, T, causal, seed):
    layer, x = layer_and_input(*heads, T=T, seed=seed)
    np.testing.assert_allclose(layer(x, is_causal=causal), independent_loop(layer, x, causal),
                               atol=1e-12)


@given(H=st.integers(1, 4), T=st.integers(1, 5), causal=st.booleans(), seed=st.integers(0, 50))
def test_gqa_with_one_group_is_mha(H, T, causal, seed):
    """n_rep = 1: enable_gqa and repeat_kv change nothing; the result is plain MHA."""
    layer, x = layer_and_input(H, H, T=T, seed=seed)
    assert layer.num_key_value_groups == 1
    q, k, v = layer.project(x)
    mha = px.scaled_dot_product_attention(q, k, v, is_causal=causal)
    gqa = px.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    np.testing.assert_array_equal(gqa, mha)
    np.testing.assert_allclose(layer(x, is_causal=causal), px.merge_heads(mha) @ layer.o_proj.T,
                               atol=1e-12)


@given(H=st.integers(1, 6), T=st.integers(1, 5), causal=st.booleans(), seed=st.integers(0, 50))
def test_mqa_equals_single_kv_head_broadcast(H, T, causal, seed):
    layer, x = layer_and_input(H, 1, T=T, seed=seed)
    q, k, v = layer.project(x)  # k, v: (B, 1, T, D), broadcast over the H query heads
    assert k.shape[1] == 1
    out = px.scaled_dot_product_attention(q, k, v, is_causal=causal)  # plain broadcasting
    np.testing.assert_allclose(layer(x, is_causal=causal), px.merge_heads(out) @ layer.o_proj.T,
                               atol=1e-12)


@given(heads=heads_st, T=st.integers(1, 5), seed=st.integers(0, 50))
def test_four_gqa_computations_agree(heads, T, seed):
    layer, x = layer_and_input(*heads, T=T, seed=seed)
    q, k, v = layer.project(x)
    n_rep = layer.num_key_value_groups
    a = px.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    b = px.scaled_dot_product_attention(q, px.repeat_kv(k, n_rep), px.repeat_kv(v, n_rep),
                                        is_causal=True)
    B, H, _, D = q.shape
    qg = q.reshape(B, H // n_rep, n_rep, T, D)  # (B, H, T, D) -> (B, Hkv, n_rep, T, D)
    c = px.scaled_dot_product_attention(qg, k[:, :, None], v[:, :, None], is_causal=True)
    np.testing.assert_allclose(a, b, atol=1e-12)
    np.testing.assert_allclose(c.reshape(B, H, T, D), a, atol=1e-12)


def test_weights_shape_rows_and_causality():
    layer, x = layer_and_input(4, 2, T=5)
    out, w = layer(x, return_weights=True)
    assert out.shape == x.shape and w.shape == (2, 4, 5, 5)
    np.testing.assert_allclose(w.sum(-1), 1.0)
    assert np.all(w[..., np.triu_indices(5, 1)[0], np.triu_indices(5, 1)[1]] == 0)
    # changing the last token leaves the outputs of the earlier tokens bit-identical
    x2 = x.copy()
    x2[:, -1] += 10.0
    np.testing.assert_array_equal(layer(x2)[:, :-1], out[:, :-1])


def test_float32_stays_float32():
    layer, x = layer_and_input(4, 2, dtype=np.float32)
    out, w = layer(x, return_weights=True)
    assert out.dtype == np.float32 and w.dtype == np.float32
    assert layer.dtype == np.float32


def test_head_dim_need_not_equal_hidden_over_heads():
    layer = px.MultiHeadAttention.random(6, 4, 2, 5)  # 4 * 5 = 20 != 6
    assert layer.q_proj.shape == (20, 6) and layer.k_proj.shape == (10, 6)
    assert layer.o_proj.shape == (6, 20)
    assert layer(np.ones((1, 3, 6))).shape == (1, 3, 6)


def test_state_dict_roundtrip_with_prefix_and_extra_keys():
    layer, x = layer_and_input(4, 2)
    prefix = "model.layers.0.self_attn."
    sd = layer.state_dict(prefix) | {prefix + "q_norm.weight": np.ones(3)}
    again = px.MultiHeadAttention.from_state_dict(
        sd, hidden_size=5, num_attention_heads=4, num_key_value_heads=2, head_dim=3, prefix=prefix)
    np.testing.assert_array_equal(again(x), layer(x))


def test_qwen3_shapes_from_config():
    cfg = px.QWEN3_1_7B.attention_config()
    shapes = {"q_proj": (2048, 2048), "k_proj": (1024, 2048), "v_proj": (1024, 2048),
              "o_proj": (2048, 2048)}
    sd = {f"{n}.weight": np.zeros(s, np.float32) for n, s in shapes.items()}
    layer = px.MultiHeadAttention.from_state_dict(sd, **cfg)
    assert layer.weight_shapes() == shapes and layer.num_key_value_groups == 2
    assert "GQA" in repr(layer)


# ---------------------------------------------------------------- with a KV cache

@given(heads=heads_st, T=st.integers(2, 9), data=st.data(), seed=st.integers(0, 50))
def test_cached_chunks_then_decode_equal_full_forward(heads, T, data, seed):
    """Prefill in random chunks, then decode one token at a time: every position matches."""
    layer, x = layer_and_input(*heads, T=T, seed=seed)
    full, full_w = layer(x, return_weights=True)
    prompt = data.draw(st.integers(1, T), label="prompt length")
    cuts = sorted(data.draw(st.sets(st.integers(1, prompt - 1), max_size=3), label="cuts")) \
        if prompt > 1 else []
    bounds = [0, *cuts, prompt] + list(range(prompt + 1, T + 1))  # chunks, then single tokens
    cache = px.KVCache(2, x.shape[0], layer.num_key_value_heads, layer.head_dim, max_seq_len=T)
    for a, b in zip(bounds, bounds[1:]):
        out, w = layer(x[:, a:b], return_weights=True, past_key_value=cache, layer_idx=1)
        np.testing.assert_allclose(out, full[:, a:b], atol=1e-12)
        np.testing.assert_allclose(w, full_w[:, :, a:b, :b], atol=1e-12)
        assert cache.get_seq_length(1) == b and cache.get_seq_length(0) == 0


def test_cached_forward_without_causal_mask_sees_all_cached_keys():
    layer, x = layer_and_input(4, 2, T=4)
    cache = px.KVCache(1, 2, 2, 3, max_seq_len=4)
    layer(x[:, :3], past_key_value=cache)
    _, w = layer(x[:, 3:], is_causal=False, return_weights=True, past_key_value=cache)
    assert w.shape == (2, 4, 1, 4)
    _, w_full = layer(x, is_causal=False, return_weights=True)
    np.testing.assert_allclose(w, w_full[:, :, 3:], atol=1e-12)


def test_position_ids_defaults_and_accepted_forms():
    layer, x = layer_and_input(2, 1, T=3)
    cache = px.KVCache(1, 2, 1, 3, max_seq_len=6)
    layer(x, past_key_value=cache, position_ids=np.arange(3))
    layer(x[:, :1], past_key_value=cache, position_ids=np.array([[3], [3]]))
    assert cache.get_seq_length() == 4
    layer(x, position_ids=np.arange(100, 103))  # no cache: any consecutive start


# ---------------------------------------------------------------- bad input

def test_bad_heads_and_sizes():
    with pytest.raises(ValueError, match="num_attention_heads = 6 is not a multiple of num_key_value_heads = 4"):
        px.MultiHeadAttention.random(8, 6, 4, 2)
    with pytest.raises(ValueError, match="head_dim must be an integer >= 1"):
        px.MultiHeadAttention.random(8, 2, 2, 0)
    with pytest.raises(ValueError, match="num_heads = 3"):
        px.split_heads(np.ones((1, 2, 8)), 3)
    with pytest.raises(ValueError, match=r"x has shape \(2, 8\), expected \(B, T, H\*D\)"):
        px.split_heads(np.ones((2, 8)), 2)
    with pytest.raises(ValueError, match=r"x has shape \(1, 2, 8\), expected \(B, H, T, D\)"):
        px.merge_heads(np.ones((1, 2, 8)))
    with pytest.raises(ValueError, match=r"hidden_states has shape \(2, 3\), expected \(B, Hkv, S, D\)"):
        px.repeat_kv(np.ones((2, 3)), 2)
    with pytest.raises(ValueError, match="n_rep must be an integer >= 1, got 0"):
        px.repeat_kv(np.ones((1, 1, 1, 1)), 0)
    with pytest.raises(ValueError, match=r"q_head must be an integer in 0 \.\. 15, got 16"):
        px.kv_head_for(16, 16, 8)


def test_weight_shape_mismatch_names_the_key():
    cfg = px.QWEN3_1_7B.attention_config()
    sd = {"q_proj.weight": np.zeros((2048, 2048), np.float32),
          "k_proj.weight": np.zeros((2048, 2048), np.float32),  # MHA-sized by mistake
          "v_proj.weight": np.zeros((1024, 2048), np.float32),
          "o_proj.weight": np.zeros((2048, 2048), np.float32)}
    with pytest.raises(ValueError, match=r"k_proj.weight has shape \(2048, 2048\), expected \(1024, 2048\)"):
        px.MultiHeadAttention.from_state_dict(sd, **cfg)
    sd["k_proj.weight"] = np.zeros((2048, 1024), np.float32)  # transposed (in, out) by mistake
    with pytest.raises(ValueError, match=r"k_proj.weight has shape \(2048, 1024\), expected \(1024, 2048\)"):
        px.MultiHeadAttention.from_state_dict(sd, **cfg)


def test_missing_keys_and_bad_weights():
    layer, _ = layer_and_input(4, 2)
    sd = layer.state_dict()
    del sd["v_proj.weight"]
    with pytest.raises(ValueError, match=r"state_dict is missing \['v_proj.weight'\]"):
        px.MultiHeadAttention.from_state_dict(sd, hidden_size=5, num_attention_heads=4,
                                              num_key_value_heads=2, head_dim=3)
    with pytest.raises(ValueError, match=r"missing \['model.layers.0.self_attn.q_proj.weight'"):
        px.MultiHeadAttention.from_state_dict(layer.state_dict(), hidden_size=5, num_attention_heads=4,
                                              num_key_value_heads=2, head_dim=3,
                                              prefix="model.layers.0.self_attn.")
    weights = {n: getattr(layer, n) for n in ("q_proj", "k_proj", "v_proj", "o_proj")}
    with pytest.raises(ValueError, match="o_proj.weight must be a float array, got dtype int64"):
        px.MultiHeadAttention(5, 4, 2, 3, **(weights | {"o_proj": np.zeros((5, 12), np.int64)}))
    with pytest.raises(ValueError, match="must share one dtype, got q_proj float32"):
        px.MultiHeadAttention(5, 4, 2, 3, **(weights | {"q_proj": weights["q_proj"].astype(np.float32)}))


def test_bad_hidden_states():
    layer, x = layer_and_input(4, 2)
    with pytest.raises(ValueError, match=r"hidden_states has shape \(2, 4, 6\), expected \(B, T, hidden_size\) with hidden_size = 5"):
        layer(np.ones((2, 4, 6)))
    with pytest.raises(ValueError, match=r"hidden_states has shape \(4, 5\)"):
        layer(np.ones((4, 5)))
    with pytest.raises(ValueError, match="hidden_states must be a floating-point array"):
        layer(np.ones((1, 4, 5), dtype=np.int64))
    with pytest.raises(ValueError, match="0-length sequence axis"):
        layer(np.ones((1, 0, 5)))


def test_bad_position_ids():
    layer, x = layer_and_input(4, 2, T=3)  # B = 2
    with pytest.raises(ValueError, match=r"position_ids has shape \(4,\) and dtype int64, expected integers of shape \(T,\) or \(B, T\) = \(2, 3\)"):
        layer(x, position_ids=np.arange(4))
    with pytest.raises(ValueError, match="dtype float64"):
        layer(x, position_ids=np.arange(3.0))
    with pytest.raises(ValueError, match="consecutive non-negative"):
        layer(x, position_ids=np.array([0, 2, 3]))
    with pytest.raises(ValueError, match="consecutive non-negative"):
        layer(x, position_ids=np.array([-1, 0, 1]))
    cache = px.KVCache(1, 2, 2, 3, max_seq_len=8)
    layer(x, past_key_value=cache)
    with pytest.raises(ValueError, match="the cache already holds 3 positions: expected them to start at 3"):
        layer(x[:, :1], past_key_value=cache, position_ids=np.array([0]))
    assert cache.get_seq_length() == 3  # the refused call appended nothing


def test_cache_errors_surface_from_the_layer():
    layer, x = layer_and_input(4, 2, T=3)
    with pytest.raises(ValueError, match="cannot append 3 positions to layer 0: it holds 0 and max_seq_len is 2"):
        layer(x, past_key_value=px.KVCache(1, 2, 2, 3, max_seq_len=2))
    with pytest.raises(ValueError, match=r"key has shape \(2, 2, 3, 3\), expected \(B, Hkv, t, D\) = \(2, 4, t, 3\)"):
        layer(x, past_key_value=px.KVCache(1, 2, 4, 3, max_seq_len=8))  # built for MHA
    with pytest.raises(ValueError, match="layer_idx must be an integer in 0 .. 0"):
        layer(x, past_key_value=px.KVCache(1, 2, 2, 3, max_seq_len=8), layer_idx=1)


# ---------------------------------------------------------------- reference: torch

def test_repeat_kv_and_layer_match_torch():
    torch = pytest.importorskip("torch", reason="torch is not installed: reference check skipped")
    F = torch.nn.functional
    rng = np.random.default_rng(7)
    kv = rng.standard_normal((2, 3, 5, 4))
    t = torch.from_numpy(kv)
    # Hugging Face's repeat_kv, line for line, in torch
    hf = t[:, :, None, :, :].expand(2, 3, 4, 5, 4).reshape(2, 12, 5, 4)
    np.testing.assert_array_equal(px.repeat_kv(kv, 4), hf.numpy())
    np.testing.assert_array_equal(px.repeat_kv(kv, 4), torch.repeat_interleave(t, 4, dim=1).numpy())

    for H, Hkv, causal in [(8, 2, True), (8, 8, False), (8, 1, True), (4, 2, False)]:
        layer = px.MultiHeadAttention.random(16, H, Hkv, 6, seed=H + Hkv)
        x = rng.standard_normal((2, 7, 16))
        tx = torch.from_numpy(x)
        w = {n: torch.from_numpy(getattr(layer, n)) for n in ("q_proj", "k_proj", "v_proj", "o_proj")}
        q = F.linear(tx, w["q_proj"]).view(2, 7, H, 6).transpose(1, 2)
        k = F.linear(tx, w["k_proj"]).view(2, 7, Hkv, 6).transpose(1, 2)
        v = F.linear(tx, w["v_proj"]).view(2, 7, Hkv, 6).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        ref = F.linear(o.transpose(1, 2).reshape(2, 7, H * 6), w["o_proj"]).numpy()
        np.testing.assert_allclose(layer(x, is_causal=causal), ref, atol=1e-12)
