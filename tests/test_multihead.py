"""Tests of pyxis_nb.multihead: heads, repeat_kv, the MHA/GQA/MQA layer, cached forward."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyxis_nb as px


# (H, Hkv) pairs with Hkv dividing H: MHA, GQA and MQA
heads_st = st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 1), (4, 2), (4, 4), (6, 3), (8, 2)])


def layer_and_input(H, Hkv, D=3, C=5, B=2, T=4, seed=0, dtype=np.float64):
    layer = px.random_attention(C, H, Hkv, D, seed=seed, dtype=dtype,
                                attn_implementation="eager")
    x = np.random.default_rng(seed + 1).standard_normal((B, T, C)).astype(dtype)
    return layer, x


# ---------------------------------------------------------------- split / merge / repeat_kv

@given(B=st.integers(1, 3), T=st.integers(1, 5), H=st.integers(1, 4), D=st.integers(1, 4))
def test_split_merge_roundtrip_and_layout(B, T, H, D):
    x = np.random.default_rng(0).standard_normal((B, T, H * D))
    heads = px.split_heads(x, head_dim=D)
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
        assert px.multihead.kv_head_for(h, Hkv * n_rep, Hkv) == h // n_rep
    np.testing.assert_array_equal(out, np.repeat(kv, n_rep, axis=1))


def test_repeat_kv_hand_example_and_identity():
    kv = np.arange(2.0).reshape(1, 2, 1, 1)  # heads [0, 1]
    assert px.repeat_kv(kv, 3)[0, :, 0, 0].tolist() == [0, 0, 0, 1, 1, 1]  # not 0, 1, 0, 1, ...
    assert px.repeat_kv(kv, 1) is kv  # as Hugging Face: no copy when n_rep == 1
    assert px.repeat_kv(kv.astype(np.float32), 2).dtype == np.float32


def test_kv_head_for_qwen3_mapping():
    mapping = [px.multihead.kv_head_for(h, 16, 8) for h in range(16)]
    assert mapping == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]
    assert [px.multihead.kv_head_for(h, 16, 1) for h in range(16)] == [0] * 16
    assert [px.multihead.kv_head_for(h, 16, 16) for h in range(16)] == list(range(16))


# ---------------------------------------------------------------- the layer

@given(heads=heads_st, T=st.integers(1, 5), causal=st.booleans(), seed=st.integers(0, 50))
def test_per_head_loop_equals_vectorised_layer(heads, T, causal, seed):
    layer, x = layer_and_input(*heads, T=T, seed=seed)
    np.testing.assert_allclose(layer.forward(x, is_causal=causal),
                               px.multihead.attention_per_head(layer, x, is_causal=causal), atol=1e-12)


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


# MHA as GQA with one group, and MQA as one key/value head broadcast: the
# SDPA property (enable_gqa equals the key/value heads repeated, n_rep = 1
# included) is test_attention.py::test_gqa_equals_explicitly_repeated_kv_heads;
# the layer on those head counts ((1, 1), (2, 2), (4, 4); (2, 1), (4, 1) in
# heads_st) is test_layer_matches_independent_loop, and the grouped
# broadcast test_four_gqa_computations_agree. The two tests that asserted
# them again through the layer (test_gqa_with_one_group_is_mha,
# test_mqa_equals_single_kv_head_broadcast) are gone.


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
    out, w = layer(x, output_attentions=True)
    assert out.shape == x.shape and w.shape == (2, 4, 5, 5)
    np.testing.assert_allclose(w.sum(-1), 1.0)
    assert np.all(w[..., np.triu_indices(5, 1)[0], np.triu_indices(5, 1)[1]] == 0)
    # changing the last token leaves the outputs of the earlier tokens bit-identical
    x2 = x.copy()
    x2[:, -1] += 10.0
    np.testing.assert_array_equal(layer(x2)[:, :-1], out[:, :-1])


def test_float32_stays_float32():
    layer, x = layer_and_input(4, 2, dtype=np.float32)
    out, w = layer(x, output_attentions=True)
    assert out.dtype == np.float32 and w.dtype == np.float32
    assert layer.dtype == np.float32


def test_head_dim_need_not_equal_hidden_over_heads():
    layer = px.random_attention(6, 4, 2, 5)  # 4 * 5 = 20 != 6
    assert layer.q_proj.shape == (20, 6) and layer.k_proj.shape == (10, 6)
    assert layer.o_proj.shape == (6, 20)
    assert layer(np.ones((1, 3, 6))).shape == (1, 3, 6)


def test_state_dict_roundtrip_with_prefix_and_extra_keys():
    layer, x = layer_and_input(4, 2)
    prefix = "model.layers.0.self_attn."
    sd = layer.state_dict(prefix) | {"model.layers.1.self_attn.q_norm.weight": np.ones(3)}
    again = px.MultiHeadAttention.from_state_dict(
        sd, hidden_size=5, num_attention_heads=4, num_key_value_heads=2, head_dim=3, prefix=prefix,
        attn_implementation=layer.attn_implementation)
    assert again.q_norm is None and again.rope_theta is None
    np.testing.assert_array_equal(again(x), layer(x))


def test_qwen3_shapes_from_config():
    cfg = px.QWEN3_1_7B.attention_config()
    shapes = {"q_proj": (2048, 2048), "k_proj": (1024, 2048), "v_proj": (1024, 2048),
              "o_proj": (2048, 2048)}
    sd = {f"{n}.weight": np.zeros(s, np.float32) for n, s in shapes.items()}
    layer = px.MultiHeadAttention.from_state_dict(sd, **cfg)
    assert {k[:-7]: v.shape for k, v in layer.state_dict().items()} == shapes
    assert px.multihead.weight_shapes(**cfg)["k_proj"] == (1024, 2048) and layer.num_key_value_groups == 2
    assert "GQA" in repr(layer)


# ---------------------------------------------------------------- with a KV cache

@given(heads=heads_st, T=st.integers(2, 9), data=st.data(), seed=st.integers(0, 50))
def test_cached_chunks_then_decode_equal_full_forward(heads, T, data, seed):
    """Prefill in random chunks, then decode one token at a time: every position matches."""
    layer, x = layer_and_input(*heads, T=T, seed=seed)
    full, full_w = layer(x, output_attentions=True)
    prompt = data.draw(st.integers(1, T), label="prompt length")
    cuts = sorted(data.draw(st.sets(st.integers(1, prompt - 1), max_size=3), label="cuts")) \
        if prompt > 1 else []
    bounds = [0, *cuts, prompt] + list(range(prompt + 1, T + 1))  # chunks, then single tokens
    cache = px.KVCache(2, x.shape[0], layer.num_key_value_heads, layer.head_dim, max_cache_len=T)
    layer.layer_idx = 1  # the layer's entry in the cache
    for a, b in zip(bounds, bounds[1:]):
        out, w = layer(x[:, a:b], output_attentions=True, cache=cache)
        np.testing.assert_allclose(out, full[:, a:b], atol=1e-12)
        np.testing.assert_allclose(w, full_w[:, :, a:b, :b], atol=1e-12)
        assert cache.get_seq_length(1) == b and cache.get_seq_length(0) == 0


def test_cached_forward_without_causal_mask_sees_all_cached_keys():
    layer, x = layer_and_input(4, 2, T=4)
    cache = px.KVCache(1, 2, 2, 3, max_cache_len=4)
    layer(x[:, :3], cache=cache)
    _, w = layer(x[:, 3:], is_causal=False, output_attentions=True, cache=cache)
    assert w.shape == (2, 4, 1, 4)
    _, w_full = layer(x, is_causal=False, output_attentions=True)
    np.testing.assert_allclose(w, w_full[:, :, 3:], atol=1e-12)


def test_position_ids_are_the_callers():
    """Any integer positions, as in HF: each token is rotated by its own."""
    layer = px.random_attention(5, 2, 1, 4, seed=0, rope_theta=10_000.0,
                                attn_implementation="eager")
    x = np.random.default_rng(1).standard_normal((2, 3, 5))
    cache = px.KVCache(1, 2, 1, 4, max_cache_len=6)
    first = layer(x, cache=cache, position_ids=np.arange(3))
    np.testing.assert_array_equal(first, layer(x))
    step = layer(x[:, :1], cache=cache,
                 position_ids=np.array([[3], [3]]))
    whole = layer(np.concatenate([x, x[:, :1]], axis=1))  # no cache
    np.testing.assert_allclose(step[:, 0], whole[:, 3], atol=1e-12)
    assert cache.get_seq_length() == 4
    # no cache: RoPE scores depend on position differences only
    np.testing.assert_allclose(layer(x, position_ids=np.arange(100, 103)),
                               layer(x), atol=1e-12)
    # packed or repeated positions are accepted and change the output
    packed = layer(x, position_ids=np.array([0, 1, 0]))
    assert packed.shape == x.shape
    assert not np.allclose(packed[:, 2], layer(x)[:, 2])
    np.testing.assert_allclose(packed[:, :2], layer(x)[:, :2], atol=1e-12)


# bad input: rows of tests/test_bad_input.py

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
        layer = px.random_attention(16, H, Hkv, 6, seed=H + Hkv,
                                    attn_implementation="eager")
        x = rng.standard_normal((2, 7, 16))
        tx = torch.from_numpy(x)
        w = {n: torch.from_numpy(getattr(layer, n)) for n in ("q_proj", "k_proj", "v_proj", "o_proj")}
        q = F.linear(tx, w["q_proj"]).view(2, 7, H, 6).transpose(1, 2)
        k = F.linear(tx, w["k_proj"]).view(2, 7, Hkv, 6).transpose(1, 2)
        v = F.linear(tx, w["v_proj"]).view(2, 7, Hkv, 6).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        ref = F.linear(o.transpose(1, 2).reshape(2, 7, H * 6), w["o_proj"]).numpy()
        np.testing.assert_allclose(layer(x, is_causal=causal), ref, atol=1e-12)


# ---------------------------------------------------------------- Qwen3: q_norm / k_norm and RoPE

def qwen3_layer(H, Hkv, D=4, C=6, seed=0, dtype=np.float64, qk_norm=True, rope_theta=100.0):
    return px.random_attention(C, H, Hkv, D, seed=seed, dtype=dtype,
                               attn_implementation="eager", qk_norm=qk_norm,
                                        rope_theta=rope_theta)


@given(heads=heads_st, T=st.integers(2, 9), extras=st.sampled_from([(True, 100.0), (True, None), (False, 1e4)]),
       data=st.data(), seed=st.integers(0, 50))
def test_qwen3_cached_chunks_then_decode_equal_full_forward(heads, T, extras, data, seed):
    """With norms and/or RoPE: chunked prefill + one-token decode == one uncached pass."""
    layer = qwen3_layer(*heads, seed=seed, qk_norm=extras[0], rope_theta=extras[1])
    x = np.random.default_rng(seed + 1).standard_normal((2, T, 6))
    full, full_w = layer(x, output_attentions=True)
    prompt = data.draw(st.integers(1, T), label="prompt length")
    chunk = data.draw(st.integers(1, prompt), label="prefill chunk")
    bounds = list(range(0, prompt, chunk)) + list(range(prompt, T + 1))
    cache = px.KVCache(1, 2, layer.num_key_value_heads, layer.head_dim, max_cache_len=T)
    for a, b in zip(bounds, bounds[1:]):
        out, w = layer(x[:, a:b], output_attentions=True, cache=cache,
                       position_ids=np.arange(a, b))
        np.testing.assert_allclose(out, full[:, a:b], atol=1e-12)
        np.testing.assert_allclose(w, full_w[:, :, a:b, :b], atol=1e-12)
    assert cache.get_seq_length() == T


@given(heads=heads_st, T=st.integers(1, 6), causal=st.booleans(), seed=st.integers(0, 50))
def test_qwen3_per_head_loop_equals_vectorised_layer(heads, T, causal, seed):
    layer = qwen3_layer(*heads, seed=seed)
    x = np.random.default_rng(seed).standard_normal((2, T, 6))
    np.testing.assert_allclose(layer(x, is_causal=causal), px.multihead.attention_per_head(layer, x, is_causal=causal),
                               atol=1e-12)


@given(T=st.integers(1, 6), shift=st.integers(1, 500), seed=st.integers(0, 20))
def test_rope_layer_depends_on_relative_positions_only(T, shift, seed):
    layer = qwen3_layer(4, 2, seed=seed)
    x = np.random.default_rng(seed).standard_normal((1, T, 6))
    np.testing.assert_allclose(layer(x, position_ids=np.arange(T) + shift), layer(x), atol=1e-10)


def test_rope_and_norms_change_the_output_and_keep_defaults():
    plain, x = layer_and_input(4, 2, D=4, C=6)
    assert plain.q_norm is None and plain.k_norm is None and plain.rope_theta is None
    weights = plain.state_dict()
    ones = {"q_norm": np.ones(4), "k_norm": np.ones(4)}
    normed = px.MultiHeadAttention(6, 4, 2, 4, **{k[:-7]: v for k, v in weights.items()}, **ones)
    rotated = px.MultiHeadAttention(6, 4, 2, 4, **{k[:-7]: v for k, v in weights.items()},
                                    rope_theta=10_000.0)
    assert not np.allclose(normed(x), plain(x)) and not np.allclose(rotated(x), plain(x))
    # position 0 is not rotated: a single token gives the same output with or without RoPE
    np.testing.assert_allclose(rotated(x[:, :1]), plain(x[:, :1]), atol=1e-14)
    # the norm makes each head's query and key vectors unit-RMS (times the weight of 1)
    q, k, _ = normed.project(x)
    np.testing.assert_allclose(np.sqrt(np.mean(q ** 2, axis=-1)), 1.0, atol=1e-4)  # eps: not exactly 1
    np.testing.assert_allclose(np.sqrt(np.mean(k ** 2, axis=-1)), 1.0, atol=1e-4)


def test_qwen3_state_dict_roundtrip_and_real_shapes():
    layer = qwen3_layer(4, 2)
    sd = layer.state_dict("p.")
    assert sorted(sd) == ["p.k_norm.weight", "p.k_proj.weight", "p.o_proj.weight",
                          "p.q_norm.weight", "p.q_proj.weight", "p.v_proj.weight"]
    again = px.MultiHeadAttention.from_state_dict(sd, hidden_size=6, num_attention_heads=4,
                                                  num_key_value_heads=2, head_dim=4, prefix="p.",
                                                  rope_theta=100.0,
                                                  attn_implementation=layer.attn_implementation)
    x = np.random.default_rng(0).standard_normal((1, 3, 6))
    np.testing.assert_array_equal(again(x), layer(x))
    small = px.ModelConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                           num_hidden_layers=1, rope_theta=1e6, rms_norm_eps=1e-6,
                           intermediate_size=0, vocab_size=8, max_position_embeddings=64)
    q3 = px.qwen3.qwen3_attention(small, seed=1, dtype=np.float32)
    assert q3.dtype == np.float32 and q3.q_norm.shape == (16,) and q3.rope_theta == 1e6
    assert q3(np.ones((1, 2, 32), np.float32)).dtype == np.float32


def test_qwen3_1_7b_layer_shapes():
    layer = px.qwen3.qwen3_attention(dtype=np.float32)  # the real configuration
    assert {n: w.shape for n, w in layer.state_dict().items()} == {
        "q_proj.weight": (2048, 2048), "k_proj.weight": (1024, 2048), "v_proj.weight": (1024, 2048),
        "o_proj.weight": (2048, 2048), "q_norm.weight": (128,), "k_norm.weight": (128,)}
    assert layer.rope_theta == 1_000_000.0 and layer.rms_norm_eps == 1e-6
    assert layer.num_key_value_groups == 2


def test_qwen3_layer_matches_hugging_face_forward_in_torch():
    """Qwen3Attention.forward re-implemented with torch ops, in Hugging Face's order."""
    torch = pytest.importorskip("torch", reason="torch is not installed: reference check skipped")
    F = torch.nn.functional

    def hf_rmsnorm(x, weight, eps):  # Qwen3RMSNorm.forward
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        return weight * x.to(dtype)

    def hf_rotate_half(x):
        return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)

    def hf_cos_sin(position_ids, D, theta):  # Qwen3RotaryEmbedding, in float32
        inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
        freqs = (inv_freq[None, :, None] @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    def hf_attention(layer, x, position_ids):
        w = {n: torch.from_numpy(a) for n, a in layer.state_dict().items()}
        B, T, _ = x.shape
        hidden_shape = (B, T, -1, layer.head_dim)
        q = hf_rmsnorm(F.linear(x, w["q_proj.weight"]).view(hidden_shape), w["q_norm.weight"],
                       layer.rms_norm_eps).transpose(1, 2)
        k = hf_rmsnorm(F.linear(x, w["k_proj.weight"]).view(hidden_shape), w["k_norm.weight"],
                       layer.rms_norm_eps).transpose(1, 2)
        v = F.linear(x, w["v_proj.weight"]).view(hidden_shape).transpose(1, 2)
        cos, sin = hf_cos_sin(position_ids, layer.head_dim, layer.rope_theta)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q, k = q * cos + hf_rotate_half(q) * sin, k * cos + hf_rotate_half(k) * sin
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=layer.scaling,
                                           enable_gqa=True)
        return F.linear(o.transpose(1, 2).reshape(B, T, -1), w["o_proj.weight"])

    cfg = px.ModelConfig(hidden_size=64, num_attention_heads=8, num_key_value_heads=2, head_dim=16,
                         num_hidden_layers=1, rope_theta=1e6, rms_norm_eps=1e-6,
                         intermediate_size=0, vocab_size=8, max_position_embeddings=64)
    rng = np.random.default_rng(3)
    for seed, start in [(0, 0), (1, 37)]:
        layer = px.qwen3.qwen3_attention(cfg, seed=seed, dtype=np.float32)  # as the checkpoint
        x = rng.standard_normal((2, 7, 64)).astype(np.float32)
        pos = np.arange(start, start + 7)
        ref = hf_attention(layer, torch.from_numpy(x), torch.from_numpy(np.stack([pos, pos]))).numpy()
        np.testing.assert_allclose(layer(x, position_ids=pos), ref, rtol=1e-4, atol=2e-5)
        if start == 0:  # prefill 4, then decode 3 tokens through the cache: same numbers
            cache = px.KVCache(1, 2, 2, 16, max_cache_len=7, dtype=np.float32)
            outs = [layer(x[:, :4], cache=cache)]
            outs += [layer(x[:, t:t + 1], cache=cache) for t in range(4, 7)]
            np.testing.assert_allclose(np.concatenate(outs, axis=1), ref, rtol=1e-4, atol=2e-5)


# ---------------------------------------------------------------- HF's attention_mask and position_ids

@given(lengths=st.lists(st.integers(1, 5), min_size=1, max_size=3), heads=heads_st,
       split=st.integers(0, 4), seed=st.integers(0, 30))
def test_left_padded_rows_equal_each_row_alone(lengths, heads, split, seed):
    """Real rows of a left-padded batch, with or without a cache, equal the row run alone."""
    layer = qwen3_layer(*heads, seed=seed)
    T = max(lengths)
    x = np.random.default_rng(seed).standard_normal((len(lengths), T, 6))
    mask = np.array([[0] * (T - n) + [1] * n for n in lengths])
    out = layer(x, attention_mask=mask)
    np.testing.assert_array_equal(px.multihead.position_ids_from_mask(mask)[mask == 0], 0)
    for b, n in enumerate(lengths):
        np.testing.assert_allclose(out[b, T - n:], layer(x[b:b + 1, T - n:])[0], atol=1e-12)
        assert np.all(out[b, :T - n] == 0)  # a padding query sees no key: zeros, not NaN
    if 0 < split < T:  # the same through a cache: prefill, then the rest
        cache = px.KVCache(1, len(lengths), layer.num_key_value_heads, 4, max_cache_len=T)
        first = layer(x[:, :split], attention_mask=mask[:, :split], cache=cache)
        rest = layer(x[:, split:], attention_mask=mask, cache=cache)
        np.testing.assert_allclose(np.concatenate([first, rest], 1), out, atol=1e-12)


def test_position_ids_from_mask_by_hand():
    mask = np.array([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1]])
    assert px.multihead.position_ids_from_mask(mask).tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4],
                                                        [0, 0, 0, 0, 0]]
    assert px.multihead.position_ids_from_mask(mask.astype(bool)).tolist() == \
        px.multihead.position_ids_from_mask(mask).tolist()


def test_a_mask_that_hides_nothing_is_none():
    # as transformers' SDPA path drops it: the kernels then check no mask
    inputs = px.multihead.attention_inputs
    assert inputs(None, None, 2, 1, 7)[0] is None  # one token after 7
    assert inputs(np.ones((2, 8)), None, 2, 1, 7)[0] is None
    padded = np.ones((2, 8))
    padded[0, :2] = 0
    mask = inputs(padded, None, 2, 1, 7)[0]
    assert mask.shape == (2, 1, 1, 8) and mask.sum() == 14
    mask = inputs(np.ones((2, 8)), None, 2, 3, 5)[0]  # three new: causal
    np.testing.assert_array_equal(mask, px.causal_mask(3, 8))
    assert inputs(None, None, 2, 3, 5, is_causal=False)[0] is None


def test_the_tiled_kernel_gets_no_query_by_key_mask():
    # dense=False: the padding as (B, 1, 1, S) and the triangle as a flag
    inputs = px.multihead.attention_inputs
    padded = np.ones((2, 8))
    padded[0, :2] = 0
    mask, causal, _ = inputs(padded, None, 2, 3, 5, dense=False)
    assert mask.shape == (2, 1, 1, 8) and causal
    mask, causal, _ = inputs(None, None, 2, 3, 5, dense=False)
    assert mask is None and causal
    assert inputs(None, None, 2, 1, 7, dense=False)[1] is False  # one row


def test_4d_boolean_mask_is_used_as_given():
    layer, x = layer_and_input(4, 2, T=4)
    allowed = np.tril(np.ones((4, 4), bool))[None, None]  # (1, 1, T, S)
    np.testing.assert_allclose(layer(x, attention_mask=allowed), layer(x), atol=1e-12)
    everything = np.ones((2, 1, 4, 4), bool)  # no causal triangle added on top
    np.testing.assert_allclose(layer(x, attention_mask=everything), layer(x, is_causal=False),
                               atol=1e-12)
    # a 2-D mask is always HF's padding mask, combined with the causal one
    np.testing.assert_allclose(layer(x, attention_mask=np.ones((2, 4), int)), layer(x), atol=1e-12)


def test_explicit_positions_equal_the_derived_ones():
    layer = qwen3_layer(4, 2)
    x = np.random.default_rng(0).standard_normal((2, 4, 6))
    mask = np.array([[0, 1, 1, 1], [1, 1, 1, 1]])
    pos = px.multihead.position_ids_from_mask(mask)
    np.testing.assert_array_equal(layer(x, attention_mask=mask, position_ids=pos),
                                  layer(x, attention_mask=mask))
    pos[0, 0] = 17  # a padding position may be anything
    np.testing.assert_allclose(layer(x, attention_mask=mask, position_ids=pos)[0, 1:],
                               layer(x, attention_mask=mask)[0, 1:], atol=1e-12)


def test_biases_roundtrip_and_are_applied():
    layer = px.random_attention(6, 4, 2, 4, bias=True, qk_norm=True, rope_theta=100.0)
    sd = layer.state_dict("p.")
    assert {"p.q_proj.bias", "p.k_proj.bias", "p.v_proj.bias"} <= set(sd)
    again = px.MultiHeadAttention.from_state_dict(sd, hidden_size=6, num_attention_heads=4,
                                                  num_key_value_heads=2, head_dim=4, prefix="p.",
                                                  rope_theta=100.0,
                                                  attn_implementation=layer.attn_implementation)
    x = np.random.default_rng(0).standard_normal((1, 3, 6))
    np.testing.assert_array_equal(again(x), layer(x))
    np.testing.assert_allclose(px.multihead.attention_per_head(layer, x), layer(x), atol=1e-12)
    no_bias = {k: v for k, v in sd.items() if not k.endswith(".bias")}
    plain = px.MultiHeadAttention.from_state_dict(no_bias, hidden_size=6, num_attention_heads=4,
                                                  num_key_value_heads=2, head_dim=4, prefix="p.",
                                                  rope_theta=100.0)
    assert not np.allclose(plain(x), layer(x))
