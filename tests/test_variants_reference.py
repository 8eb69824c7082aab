"""pyxis_nb.variants against transformers' own modules, and the kernel's
score_mod / mask_mod against torch's flex_attention (float64, CPU).

Skipped where torch or transformers is not installed."""

import importlib

import numpy as np
import pytest

import pyxis_nb as px
from conftest import run_in_float64

torch = pytest.importorskip(
    "torch", reason="torch is not installed: reference checks skipped")
pytest.importorskip("transformers", reason="transformers is not installed: "
                    "reference checks skipped")

B, T, D, H, H_KV, D_HEAD, WINDOW = 2, 70, 32, 4, 2, 8, 5
SIZES = dict(hidden_size=D, num_attention_heads=H, num_key_value_heads=H_KV,
             head_dim=D_HEAD, num_hidden_layers=2, attention_dropout=0.0)
LOCAL_GLOBAL = ["sliding_attention", "full_attention"]

# name: (transformers module, config class, config overrides, layer_idx's)
VARIANTS = {
    "GptOssAttention": ("gpt_oss", "GptOssConfig", dict(
        sliding_window=WINDOW, layer_types=LOCAL_GLOBAL,
        attention_bias=True), (0, 1)),
    "Gemma2Attention": ("gemma2", "Gemma2Config", dict(
        sliding_window=WINDOW, layer_types=LOCAL_GLOBAL,
        query_pre_attn_scalar=6, attn_logit_softcapping=2.0), (0, 1)),
    "Gemma3Attention": ("gemma3", "Gemma3TextConfig", dict(
        sliding_window=WINDOW, layer_types=LOCAL_GLOBAL,
        query_pre_attn_scalar=6), (0, 1)),
    "Qwen3NextAttention": ("qwen3_next", "Qwen3NextConfig", dict(
        layer_types=["linear_attention", "full_attention"],
        rope_parameters=dict(rope_type="default", rope_theta=10000.0,
                             partial_rotary_factor=0.5)), (1,)),
    "DiffLlamaAttention": ("diffllama", "DiffLlamaConfig", {}, (0, 1)),
    # RoPE + full, NoPE + full, NoPE + sliding
    "SmolLM3Attention": ("smollm3", "SmolLM3Config", dict(
        num_hidden_layers=3, no_rope_layers=[1, 0, 0],
        use_sliding_window=True, sliding_window=WINDOW,
        layer_types=["full_attention", "full_attention",
                     "sliding_attention"]), (0, 1, 2)),
}
CASES = [(name, layer_idx) for name, (*_, idxs) in VARIANTS.items()
         for layer_idx in idxs]


def _reference(name, layer_idx, monkeypatch):
    """transformers' module (float64, random weights), its config, its
    rotary embedding, with their float32 casts made float64."""
    module_name, config_name, overrides, _ = VARIANTS[name]
    modeling = importlib.import_module(
        f"transformers.models.{module_name}.modeling_{module_name}")
    rope_utils = importlib.import_module("transformers.modeling_rope_utils")
    run_in_float64(monkeypatch, modeling, rope_utils, tensor_float=True)
    config = getattr(importlib.import_module("transformers"), config_name)(
        **SIZES | overrides)
    config._attn_implementation = "eager"
    torch.manual_seed(layer_idx)
    module = getattr(modeling, name)(config, layer_idx).double().eval()
    with torch.no_grad():  # every parameter random (sinks start empty)
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    rotary = getattr(modeling, name.replace("Attention",
                                            "RotaryEmbedding"))(config)
    return module, config, rotary


def _reference_call(module, rotary, x, positions, layer_type):
    """The module's output and weights, with the mask transformers builds
    (masking_utils' functions on every (query, key) pair)."""
    from transformers import masking_utils as mu
    fn = (mu.sliding_window_causal_mask_function(WINDOW)
          if layer_type == "sliding_attention" else mu.causal_mask_function)
    idx = torch.arange(T)
    allowed = fn(0, 0, idx[:, None], idx[None, :])  # (T, S)
    mask = torch.zeros(1, 1, T, T, dtype=torch.float64).masked_fill(
        ~allowed, float("-inf"))  # (1, 1, T, S), added to the scores
    xt = torch.from_numpy(x)
    pos = torch.from_numpy(positions)
    extra = ({"layer_type": layer_type}
             if type(rotary).__name__ == "Gemma3RotaryEmbedding" else {})
    with torch.no_grad():
        cos_sin = rotary(xt, pos, **extra)
        out, weights = module(hidden_states=xt, position_embeddings=cos_sin,
                              attention_mask=mask)
    return out.numpy(), weights.numpy()


@pytest.mark.parametrize("start", [0, 3000])
@pytest.mark.parametrize("name, layer_idx", CASES)
def test_variant_equals_its_transformers_module(name, layer_idx, start,
                                                monkeypatch):
    module, config, rotary = _reference(name, layer_idx, monkeypatch)
    layer_type = getattr(config, "layer_types", None)
    layer_type = layer_type[layer_idx] if layer_type else "full_attention"
    x = np.random.default_rng(layer_idx).standard_normal((B, T, D))
    positions = np.broadcast_to(start + np.arange(T), (B, T)).copy()
    ref, ref_weights = _reference_call(module, rotary, x, positions,
                                       layer_type)
    cls = getattr(px.variants, name)
    state = module.state_dict()
    flex = cls.from_state_dict(state, config, layer_idx)
    eager = cls.from_state_dict(state, config.to_dict(), layer_idx,
                                attn_implementation="eager")
    assert flex.layer_type == layer_type
    if hasattr(module, "use_rope"):  # SmolLM3: its flag, as HF reads it
        assert flex.use_rope == eager.use_rope == bool(module.use_rope)
    out = flex(x, position_ids=positions)
    out_eager, weights = eager(x, position_ids=positions,
                               output_attentions=True)
    assert out.shape == ref.shape == (B, T, D)
    assert np.abs(out - ref).max() < 1e-6 * max(1, np.abs(ref).max())
    assert np.abs(out_eager - ref).max() < 1e-6 * max(1, np.abs(ref).max())
    np.testing.assert_allclose(weights, ref_weights, rtol=0, atol=1e-6)
    np.testing.assert_allclose(out, out_eager, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="output_attentions=True needs"):
        flex(x, position_ids=positions, output_attentions=True)


def test_learned_sinks_leave_rows_below_one(monkeypatch):
    module, config, _ = _reference("GptOssAttention", 1, monkeypatch)
    layer = px.variants.GptOssAttention.from_state_dict(
        module.state_dict(), config, 1, attn_implementation="eager")
    x = np.random.default_rng(0).standard_normal((B, T, D))
    _, weights = layer(x, output_attentions=True)
    rows = weights.sum(-1)  # (B, H, T): the sink took the rest
    assert np.all(rows < 1) and np.all(rows > 0)


def test_positions_default_to_0_to_T(monkeypatch):
    module, config, _ = _reference("Gemma2Attention", 0, monkeypatch)
    layer = px.variants.Gemma2Attention.from_state_dict(
        module.state_dict(), config, 0)
    x = np.random.default_rng(0).standard_normal((B, T, D))
    np.testing.assert_array_equal(layer(x),
                                  layer(x, position_ids=np.arange(T)))


# ----------------------------------- the kernel against torch's flex_attention
def _alibi(slopes):
    """ALiBi (Bloom) as a score_mod; one body for numpy and torch."""
    return lambda score, b, h, q_idx, kv_idx: (
        score + slopes[h] * (kv_idx - q_idx))


def _soft_cap(tanh, cap=2.0):
    return lambda score, b, h, q_idx, kv_idx: cap * tanh(score / cap)


def _window(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx < 6)


@pytest.mark.filterwarnings(
    "ignore:flex_attention called without torch.compile")
@pytest.mark.parametrize("mod", ["soft-cap", "alibi", "none"])
@pytest.mark.parametrize("masked", [True, False], ids=["window", "no mask"])
def test_kernels_equal_torch_flex_attention(mod, masked):
    flex = pytest.importorskip(
        "torch.nn.attention.flex_attention",
        reason="this torch has no flex_attention: check skipped")
    rng = np.random.default_rng(5)
    q = rng.standard_normal((2, 4, 40, 8)) * 2  # (B, H, T, d_head)
    k, v = (rng.standard_normal((2, 2, 40, 8)) for _ in "kv")  # H_kv = 2
    slopes = px.variants.alibi_slopes(4)  # (H,): Bloom's, 2^-2 .. 2^-8
    mods = {"soft-cap": (_soft_cap(np.tanh), _soft_cap(torch.tanh)),
            "alibi": (px.variants.alibi(slopes),
                      _alibi(torch.from_numpy(slopes))),
            "none": (None, None)}
    ours, theirs = mods[mod]
    block_mask = (flex.create_block_mask(_window, 2, 4, 40, 40, device="cpu",
                                         BLOCK_SIZE=16) if masked else None)
    ref = flex.flex_attention(*map(torch.from_numpy, (q, k, v)),
                              score_mod=theirs, block_mask=block_mask,
                              enable_gqa=True).numpy()
    mask_mod = _window if masked else None
    for name, kernel in px.attention.ATTENTION_FUNCTIONS.items():
        out, _ = kernel(q, k, v, None, score_mod=ours, mask_mod=mask_mod)
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12, err_msg=name)
    tiles, stats = px.tiled_attention(  # small tiles: hidden ones skipped
        q, k, v, score_mod=ours, mask_mod=mask_mod, enable_gqa=True,
        block_q=16, block_k=16, return_stats=True)
    np.testing.assert_allclose(tiles, ref, rtol=0, atol=1e-12)
    assert (stats.n_skipped > 0) == masked


@pytest.mark.parametrize("H", [1, 2, 3, 4, 6, 8, 12, 16, 20, 112])
def test_alibi_slopes_are_blooms(H):
    from transformers.models.bloom import modeling_bloom
    ref = modeling_bloom._get_alibi_slopes(H, "cpu").double().numpy()
    ours = px.variants.alibi_slopes(H)
    assert ours.shape == (H,) and ours.dtype == np.float64
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=0)  # float32


def test_alibi_score_mod_equals_blooms_bias():
    """The score_mod's bias, -slope_h (i - j), against the tensor Bloom
    adds, slope_h j, under the causal mask: the rows differ by slope_h i,
    a constant the softmax drops."""
    from transformers.models.bloom import modeling_bloom
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((3, 2, 6, 30, 8))  # (B, H, T, d_head)
    alibi = modeling_bloom.build_alibi_tensor(
        torch.ones(2, 30, dtype=torch.long), 6, torch.float64)
    scores = (torch.from_numpy(q) @ torch.from_numpy(k).transpose(-1, -2)
              / 8 ** 0.5 + alibi.reshape(2, 6, 1, 30))  # (B, H, T, S)
    causal = torch.ones(30, 30, dtype=torch.bool).tril()
    ref = (scores.masked_fill(~causal, float("-inf")).softmax(-1)
           @ torch.from_numpy(v)).numpy()
    # Bloom's slopes in float32 (its alibi tensor), so ours from them
    slopes = modeling_bloom._get_alibi_slopes(6, "cpu").double().numpy()
    for name, kernel in px.attention.ATTENTION_FUNCTIONS.items():
        out, _ = kernel(q, k, v, None, score_mod=px.variants.alibi(slopes),
                        mask_mod=px.masks.causal_mask_mod)
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12,
                                   err_msg=name)


def test_dynamic_cache_holds_what_transformers_cache_holds():
    """The same updates into transformers' DynamicCache(config=...) and
    ours: each layer holds the same keys (a window in the sliding layer)."""
    from transformers import DynamicCache, GptOssConfig
    config = GptOssConfig(**SIZES, sliding_window=WINDOW,
                          layer_types=LOCAL_GLOBAL)
    ref, ours = DynamicCache(config=config), px.kv_cache.DynamicCache(config)
    rng = np.random.default_rng(0)
    for T in (3, 1, 1, 4, 1, 2):
        for i in (0, 1):
            k, v = rng.standard_normal((2, 1, H_KV, T, D_HEAD))
            ref_k, _ = ref.update(torch.from_numpy(k), torch.from_numpy(v), i)
            out_k, _ = ours.update(k, v, i)
            np.testing.assert_array_equal(out_k, ref_k.numpy())
            np.testing.assert_array_equal(ours.layers[i].keys,
                                          ref.layers[i].keys.numpy())
            assert ours.get_seq_length(i) == ref.get_seq_length(i)
