"""Tests of pyxis_nb.memory against hand-computed figures of public model configurations."""

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyxis_nb as px


def test_qwen3_1_7b_config():
    c = px.QWEN3_1_7B
    assert (c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim) == (2048, 16, 8, 128)
    assert (c.num_hidden_layers, c.intermediate_size, c.vocab_size) == (28, 6144, 151_936)
    assert (c.rope_theta, c.rms_norm_eps, c.max_position_embeddings) == (1e6, 1e-6, 40_960)
    assert c.num_key_value_groups == 2
    assert c.attention_config() == {"hidden_size": 2048, "num_attention_heads": 16,
                                    "num_key_value_heads": 8, "head_dim": 128}
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.head_dim = 64


def test_kv_cache_bytes_hand_computed():
    # Qwen3-1.7B, bf16: 2 x 28 x 8 x 128 x 2 = 114,688 bytes = 112 KiB a token
    assert px.kv_cache_bytes(28, 8, 128, seq_len=1) == 114_688
    assert px.format_bytes(114_688) == "112 KiB"
    assert px.kv_cache_bytes(28, 16, 128, seq_len=1) == 229_376  # as MHA
    assert px.kv_cache_bytes(28, 1, 128, seq_len=1) == 14_336  # as MQA
    assert px.kv_cache_bytes(28, 8, 128, seq_len=40_960) == 4_697_620_480  # 4.375 GiB
    assert px.format_bytes(4_697_620_480) == "4.38 GiB"
    # the group-size trap: 16 / 8 = 2 "kv heads" gives a quarter of the right figure
    assert px.kv_cache_bytes(28, 16 // 8, 128, seq_len=1) * 4 == 114_688
    # Llama-3-8B: 32 layers, 8 kv heads, head_dim 128 -> 2 x 32 x 8 x 128 x 2 = 131,072 (128 KiB)
    assert px.kv_cache_bytes(32, 8, 128, seq_len=1) == 131_072
    assert px.kv_cache_bytes(32, 8, 128, seq_len=8192) == 1_073_741_824  # exactly 1 GiB at 8k
    # Mistral-7B (v0.1): 32 layers, 8 kv heads, head_dim 128; fp32 and a batch of 4
    assert px.kv_cache_bytes(32, 8, 128, seq_len=1000, dtype_bytes=4, batch_size=4) == 2 * 32 * 8 * 128 * 4 * 1000 * 4
    assert px.kv_cache_bytes(32, 8, 128, seq_len=0) == 0


def test_attention_parameter_count_hand_computed():
    # Qwen3-1.7B: q 2048x2048 + k 1024x2048 + v 1024x2048 + o 2048x2048
    one = 2048 * 2048 + 1024 * 2048 + 1024 * 2048 + 2048 * 2048
    assert one == 12_582_912
    assert px.attention_parameter_count(2048, 16, 8, 128) == one
    assert px.attention_parameter_count(2048, 16, 8, 128, qk_norm=True) == one + 256
    assert 28 * px.attention_parameter_count(2048, 16, 8, 128) == 352_321_536
    # Llama-3-8B and Mistral-7B share the attention shapes: hidden 4096, 32 heads, 8 kv, 128
    assert px.attention_parameter_count(4096, 32, 8, 128) == 4096 * 4096 * 2 + 2 * 4096 * 1024 == 41_943_040
    # GPT-2 small as MHA: 768 hidden, 12 heads of 64 -> 4 x 768^2 (its biases not counted)
    assert px.attention_parameter_count(768, 12, 12, 64) == 4 * 768 * 768


@given(C=st.integers(1, 64), H=st.integers(1, 8), D=st.integers(1, 16), data=st.data(),
       qk_norm=st.booleans(), bias=st.booleans())
def test_parameter_count_equals_the_layer_weights(C, H, D, data, qk_norm, bias):
    Hkv = data.draw(st.sampled_from([h for h in range(1, H + 1) if H % h == 0]))
    layer = px.random_attention(C, H, Hkv, D, qk_norm=qk_norm, bias=bias)
    assert px.attention_parameter_count(C, H, Hkv, D, qk_norm=qk_norm, bias=bias) == \
        sum(w.size for w in layer.state_dict().values())


@given(L=st.integers(1, 64), Hkv=st.integers(1, 16), D=st.integers(1, 256), T=st.integers(0, 10_000))
def test_kv_cache_bytes_is_linear_in_each_size(L, Hkv, D, T):
    per_token = px.kv_cache_bytes(L, Hkv, D, 1)
    assert px.kv_cache_bytes(L, Hkv, D, T) == T * per_token
    assert px.kv_cache_bytes(2 * L, Hkv, D, T) == 2 * px.kv_cache_bytes(L, Hkv, D, T)


def test_score_matrix_bytes():
    assert px.score_matrix_bytes(1_000) == 2_000_000
    assert px.score_matrix_bytes(8_000) == 128_000_000
    assert px.score_matrix_bytes(32_000) == 2_048_000_000
    assert px.score_matrix_bytes(1_000, dtype_bytes=4, num_attention_heads=16, batch_size=2) == 128_000_000


def test_format_bytes():
    assert [px.format_bytes(n) for n in (0, 1023, 1024, 1536, 2**20 * 224, 2**30 * 4.375)] == \
        ["0 B", "1023 B", "1 KiB", "1.5 KiB", "224 MiB", "4.38 GiB"]


def test_bad_sizes():
    with pytest.raises(ValueError, match="num_key_value_heads must be an integer >= 1, got 0"):
        px.kv_cache_bytes(28, 0, 128, 1)
    with pytest.raises(ValueError, match="head_dim must be an integer >= 1, got 128.0"):
        px.kv_cache_bytes(28, 8, 128.0, 1)
    with pytest.raises(ValueError, match="seq_len must be an integer 0 <= seq_len, got -1"):
        px.kv_cache_bytes(28, 8, 128, -1)
    with pytest.raises(ValueError, match="num_key_value_heads must be an integer >= 1"):
        px.attention_parameter_count(2048, 16, None, 128)
    with pytest.raises(ValueError, match="num_attention_heads must be an integer >= 1, got 0"):
        px.score_matrix_bytes(10, num_attention_heads=0)


def test_memory_does_not_import_the_model_configs():
    import pyxis_nb.memory as memory
    assert not hasattr(memory, "ModelConfig") and not hasattr(memory, "QWEN3_1_7B")
    assert px.QWEN3_1_7B.__class__.__module__ == "pyxis_nb.qwen3"
