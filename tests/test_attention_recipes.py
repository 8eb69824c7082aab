"""The table of attention recipes (pyxis_nb.memory), from the shipped JSON
alone: FACTS.md's numbers, the layer patterns, what each layer keeps."""

import numpy as np
import pytest

import pyxis_nb as px
from conftest import fresh_python

mem = px.memory
CONFIGS = mem.attention_configs()
MODELS = ["Qwen3-1.7B", "SmolLM2-135M", "Llama-3-8B-style GQA",
          "Gemma 3 4B", "gpt-oss-120b", "DeepSeek-V3", "Qwen3-Next-80B-A3B",
          "SmolLM3-3B"]


def test_the_table_has_the_eight_models():
    assert list(CONFIGS) == MODELS
    assert [r["model"] for r in mem.attention_table()] == MODELS


def test_facts_numbers():
    """FACTS.md sections 1 and 6: bf16 bytes a token."""
    r = {name: mem.attention_recipe(c) for name, c in CONFIGS.items()}
    assert r["Qwen3-1.7B"]["bytes_per_token"] == 114_688
    assert r["Qwen3-1.7B"]["mha_bytes_per_token"] == 2 * 114_688
    assert r["DeepSeek-V3"]["bytes_per_token"] == 61 * 576 * 2 == 70_272
    assert r["DeepSeek-V3"]["mha_bytes_per_token"] == 4_997_120
    assert r["DeepSeek-V3"]["cache_form"].startswith(
        "latent c_kv (512) + rotated key k_pe (64)")
    # the same through the KV-cache formula of the earlier chapters
    assert r["SmolLM2-135M"]["bytes_per_token"] == mem.kv_cache_bytes(
        30, 3, 64, 1)
    assert r["Llama-3-8B-style GQA"]["bytes_per_token"] == 131_072


def test_layer_patterns():
    pattern = {n: mem.attention_recipe(c)["layer_pattern"]
               for n, c in CONFIGS.items()}
    assert pattern["Qwen3-1.7B"] == "28 full"
    assert pattern["SmolLM2-135M"] == "30 full"  # no layer_types: all full
    assert pattern["Gemma 3 4B"] == (
        "5 sliding : 1 full (29 sliding, 5 full)")
    assert pattern["gpt-oss-120b"] == (
        "1 sliding : 1 full (18 sliding, 18 full)")
    assert pattern["Qwen3-Next-80B-A3B"] == (
        "3 linear : 1 full (36 linear, 12 full)")
    assert pattern["DeepSeek-V3"] == "61 full"
    assert pattern["SmolLM3-3B"] == "36 full"  # 9 of them NoPE
    odd = dict(CONFIGS["Gemma 3 4B"], num_hidden_layers=3, layer_types=[
        "full_attention", "sliding_attention", "sliding_attention"])
    assert mem.attention_recipe(odd)["layer_pattern"] == "1 full, 2 sliding"


def test_sliding_layers_keep_the_window():
    """Gemma 3 4B's published shape: 34 layers, 29 sliding with a window
    of 1,024 and 5 full, 4 key/value heads of 256."""
    gemma = CONFIGS["Gemma 3 4B"]
    per_layer = 2 * 4 * 256 * 2  # K and V, 4 heads of 256, bf16
    for T in (1, 1024, 1025, 131_072):
        assert mem.cache_bytes(gemma, T) == per_layer * (
            5 * T + 29 * min(T, 1024))
    r = mem.attention_recipe(gemma)
    assert (r["bytes_per_token"], r["bytes_per_token_past_window"]) == (
        34 * per_layer, 5 * per_layer)
    assert r["sliding_window"] == 1024
    assert gemma["rope_parameters"]["full_attention"] == {
        "rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}
    oss = mem.attention_recipe(CONFIGS["gpt-oss-120b"])
    assert oss["bytes_at_seq_len"] == 2 * 8 * 64 * 2 * 18 * (131_072 + 128)


def test_linear_layers_hold_a_constant_state():
    """Qwen3-Next-80B-A3B: 36 states of 32 x 128 x 128 numbers (float32,
    as transformers keeps them) and 8192 x 4 conv inputs (bf16); 12 full
    layers of 2 KV heads of 256, from 1k to 32k tokens."""
    nxt = CONFIGS["Qwen3-Next-80B-A3B"]
    state = mem.layer_cache_bytes(nxt, "linear_attention", 0)
    assert state == mem.layer_cache_bytes(nxt, "linear_attention", 32768)
    assert state == 4 * 32 * 128 * 128 + 2 * 8192 * 4 == 2_162_688
    assert mem.linear_attention_state_bytes(
        nxt, state_dtype_bytes=2) == 2 * (32 * 128 * 128 + 8192 * 4)
    full = [mem.layer_cache_bytes(nxt, "full_attention", T)
            for T in (1024, 32768)]
    assert full == [2048 * 1024, 2048 * 32768]
    r = mem.attention_recipe(nxt)
    assert r["constant_bytes"] == 36 * state
    assert r["bytes_per_token"] == 12 * 2048
    assert r["bytes_at_seq_len"] == 12 * 2048 * 131_072 + 36 * state


def test_measured_bytes_equal_the_formula():
    """A KVCache of Qwen3-1.7B's heads and a Gated DeltaNet cache, in
    float64 (8 bytes a value)."""
    qwen = CONFIGS["Qwen3-1.7B"]
    cache = px.KVCache(2, 1, 8, 128, max_cache_len=10)
    assert cache.nbytes == 2 * mem.layer_cache_bytes(
        qwen, "full_attention", 10, dtype_bytes=8)
    small = dict(hidden_size=16, linear_num_key_heads=2,
                 linear_num_value_heads=4, linear_key_head_dim=4,
                 linear_value_head_dim=3, linear_conv_kernel_dim=4,
                 rms_norm_eps=1e-6, hidden_act="silu",
                 layer_types=["linear_attention"], num_hidden_layers=1)
    gdn = px.linear_attention.Qwen3NextGatedDeltaNet.from_config(small)
    held = px.kv_cache.DynamicCache(small)
    gdn(np.zeros((3, 5, 16)), cache=held)
    assert held.nbytes == mem.cache_bytes(small, 5, dtype_bytes=8,
                                          batch_size=3)


def test_the_table_runs_with_numpy_alone():
    """As a chapter's bare kernel: no transformers, no torch imported."""
    done = fresh_python(
        "import sys, pyxis_nb as px\n"
        "rows = px.memory.attention_table()\n"
        "assert rows[5]['bytes_per_token'] == 70272\n"
        "assert not {'torch', 'transformers'} & set(sys.modules)\n")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", MODELS)
def test_a_transformers_config_reads_as_its_json(name):
    transformers = pytest.importorskip("transformers")
    import json
    entry = json.loads(mem.ATTENTION_CONFIGS.read_text())[name]
    config = getattr(transformers, entry["config_class"])(**entry["kwargs"])
    assert mem.attention_recipe(config) == mem.attention_recipe(
        CONFIGS[name])
