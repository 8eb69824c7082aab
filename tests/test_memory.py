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
    assert px.memory.kv_cache_bytes(28, 8, 128, seq_len=1) == 114_688
    assert px.memory.format_bytes(114_688) == "112 KiB"
    assert px.memory.kv_cache_bytes(28, 16, 128, seq_len=1) == 229_376  # as MHA
    assert px.memory.kv_cache_bytes(28, 1, 128, seq_len=1) == 14_336  # as MQA
    assert px.memory.kv_cache_bytes(28, 8, 128, seq_len=40_960) == 4_697_620_480  # 4.375 GiB
    assert px.memory.format_bytes(4_697_620_480) == "4.38 GiB"
    # the group-size trap: 16 / 8 = 2 "kv heads" gives a quarter of the right figure
    assert px.memory.kv_cache_bytes(28, 16 // 8, 128, seq_len=1) * 4 == 114_688
    # Llama-3-8B: 32 layers, 8 kv heads, head_dim 128 -> 2 x 32 x 8 x 128 x 2 = 131,072 (128 KiB)
    assert px.memory.kv_cache_bytes(32, 8, 128, seq_len=1) == 131_072
    assert px.memory.kv_cache_bytes(32, 8, 128, seq_len=8192) == 1_073_741_824  # exactly 1 GiB at 8k
    # Mistral-7B (v0.1): 32 layers, 8 kv heads, head_dim 128; fp32 and a batch of 4
    bf16 = px.memory.kv_cache_bytes(32, 8, 128, seq_len=1000)
    assert px.memory.kv_cache_bytes(32, 8, 128, seq_len=1000, dtype_bytes=4, batch_size=4) == 2 * 4 * bf16
    assert px.memory.kv_cache_bytes(32, 8, 128, seq_len=0) == 0


@pytest.mark.parametrize("sizes, qk_norm, bias, model", [
    ((2048, 16, 8, 128), True, False, "qwen3"),  # Qwen3-1.7B
    ((4096, 32, 8, 128), False, False, "llama"),  # Llama-3-8B, Mistral-7B
    ((768, 12, 12, 64), False, False, "llama"),  # GPT-2 small's shapes, MHA
    ((1536, 12, 2, 128), False, True, "qwen2"),  # Qwen2-1.5B: q/k/v biases
], ids=["qwen3-1.7b", "llama-3-8b", "gpt2-shapes", "qwen2-1.5b"])
def test_attention_parameter_count_is_hugging_faces(sizes, qk_norm, bias, model):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    d_model, H, H_kv, d_head = sizes
    names = {"qwen3": "Qwen3", "llama": "Llama", "qwen2": "Qwen2"}
    config = getattr(transformers, f"{names[model]}Config")(
        hidden_size=d_model, num_attention_heads=H, num_key_value_heads=H_kv, head_dim=d_head)
    module = __import__(f"transformers.models.{model}.modeling_{model}", fromlist=["x"])
    with torch.device("meta"):  # shapes only: no memory for the weights
        attention = getattr(module, f"{names[model]}Attention")(config, layer_idx=0)
    counted = sum(p.numel() for p in attention.parameters())
    assert px.memory.attention_parameter_count(*sizes, qk_norm=qk_norm, bias=bias) == counted


@given(C=st.integers(1, 64), H=st.integers(1, 8), D=st.integers(1, 16), data=st.data(),
       qk_norm=st.booleans(), bias=st.booleans())
def test_parameter_count_equals_the_layer_weights(C, H, D, data, qk_norm, bias):
    Hkv = data.draw(st.sampled_from([h for h in range(1, H + 1) if H % h == 0]))
    layer = px.random_attention(C, H, Hkv, D, qk_norm=qk_norm, bias=bias)
    assert px.memory.attention_parameter_count(C, H, Hkv, D, qk_norm=qk_norm, bias=bias) == \
        sum(w.size for w in layer.state_dict().values())


@given(L=st.integers(1, 64), Hkv=st.integers(1, 16), D=st.integers(1, 256), T=st.integers(0, 10_000))
def test_kv_cache_bytes_is_linear_in_each_size(L, Hkv, D, T):
    per_token = px.memory.kv_cache_bytes(L, Hkv, D, 1)
    assert px.memory.kv_cache_bytes(L, Hkv, D, T) == T * per_token
    assert px.memory.kv_cache_bytes(2 * L, Hkv, D, T) == 2 * px.memory.kv_cache_bytes(L, Hkv, D, T)


def test_score_matrix_bytes():
    assert px.memory.score_matrix_bytes(1_000) == 2_000_000
    assert px.memory.score_matrix_bytes(8_000) == 128_000_000
    assert px.memory.score_matrix_bytes(32_000) == 2_048_000_000
    assert px.memory.score_matrix_bytes(1_000, dtype_bytes=4, num_attention_heads=16, batch_size=2) == 128_000_000


def test_format_bytes():
    assert [px.memory.format_bytes(n) for n in (0, 1023, 1024, 1536, 2**20 * 224, 2**30 * 4.375)] == \
        ["0 B", "1023 B", "1 KiB", "1.5 KiB", "224 MiB", "4.38 GiB"]





def test_memory_does_not_import_the_model_configs():
    import pyxis_nb.memory as memory
    assert not hasattr(memory, "ModelConfig") and not hasattr(memory, "QWEN3_1_7B")
    assert px.QWEN3_1_7B.__class__.__module__ == "pyxis_nb.qwen3"


# ---- decode_step_flops (moved with it from generation.py)

def test_decode_step_flops_by_hand():
    cfg = px.ModelConfig(hidden_size=4, num_attention_heads=2, num_key_value_heads=1, head_dim=2,
                         num_hidden_layers=1, rope_theta=1e4, rms_norm_eps=1e-6,
                         intermediate_size=0, vocab_size=10, max_position_embeddings=16)
    # per token: q, k, v = 2*4*(2*2 + 2*1*2) = 64; o = 2*(2*2)*4 = 32 -> 96; lm_head 2*4*10 = 80
    assert px.memory.decode_step_flops(cfg, 3) == 96 + 4 * 2 * 2 * 3 + 80 == 224
    assert px.memory.decode_step_flops(cfg, 3, use_cache=False) == 3 * 96 + 4 * 2 * 2 * 9 + 80 == 512
    assert px.memory.decode_step_flops(cfg, 1) == px.memory.decode_step_flops(cfg, 1, use_cache=False)
    # Qwen3-1.7B with its MLP: 28 layers, intermediate 6144, vocab 151,936
    per_token = 2 * 2048 * (2048 + 2 * 1024) + 2 * 2048 * 2048 + 6 * 2048 * 6144
    assert px.memory.decode_step_flops(px.QWEN3_1_7B, 1000) == 28 * (per_token + 4 * 2048 * 1000) + 2 * 2048 * 151_936


@given(T=st.integers(1, 5000))
def test_flops_linear_with_cache_quadratic_without(T):
    cfg = px.TinyDecoder().config
    f = lambda t, c: px.memory.decode_step_flops(cfg, t, use_cache=c)  # noqa: E731
    attn = 4 * cfg.num_attention_heads * cfg.head_dim * cfg.num_hidden_layers
    assert f(T + 1, True) - f(T, True) == attn  # constant first difference: linear
    assert f(T + 2, False) - 2 * f(T + 1, False) + f(T, False) == 2 * attn  # constant second difference
    assert f(T, False) >= f(T, True)
