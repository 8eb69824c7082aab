"""pyxis_nb.variants.DeepseekV3Attention (multi-head latent attention)
against transformers' module (float64, CPU): the full forward, the latent
cache, and the absorbed decode step against the expanded one.

Skipped where torch or transformers is not installed."""

import numpy as np
import pytest

import pyxis_nb as px
from conftest import run_in_float64

torch = pytest.importorskip(
    "torch", reason="torch is not installed: reference checks skipped")
pytest.importorskip("transformers", reason="transformers is not installed: "
                    "reference checks skipped")

B, T, D, H = 2, 40, 32, 4
#: a tiny DeepSeek-V3: every width differs, so a swapped one fails
SIZES = dict(hidden_size=D, num_attention_heads=H, num_key_value_heads=H,
             q_lora_rank=12, kv_lora_rank=10, qk_nope_head_dim=6,
             qk_rope_head_dim=4, v_head_dim=5, num_hidden_layers=1,
             attention_dropout=0.0)
YARN = dict(rope_type="yarn", rope_theta=10000.0, factor=40.0,
            original_max_position_embeddings=128, beta_fast=32,
            beta_slow=1, mscale=1.0, mscale_all_dim=1.0)
CONFIGS = {"low-rank q": {}, "q_proj": dict(q_lora_rank=None),
           "yarn, biases": dict(rope_parameters=YARN, attention_bias=True,
                                max_position_embeddings=128 * 40),
           "half layout": dict(rope_interleave=False)}


def decode(layer, x, cache, position_ids=None, absorb=False):
    """New tokens through ``cache`` (a DynamicCache of the MLA config),
    the latent expanded or (``absorb``) the weights absorbed."""
    layer.absorb = absorb
    return layer(x, cache=cache, position_ids=position_ids)


def _reference(overrides, monkeypatch, model="deepseek_v3"):
    """transformers' module (float64, random weights), its config, its
    rotary embedding, with their float32 casts made float64: DeepSeek-V3's
    or, with ``model="deepseek_v32"``, DeepSeek-V3.2's."""
    import importlib

    from transformers import modeling_rope_utils as rope_utils
    m = importlib.import_module(f"transformers.models.{model}.modeling_{model}")
    name = {"deepseek_v3": "DeepseekV3", "deepseek_v32": "DeepseekV32"}[model]
    run_in_float64(monkeypatch, m, rope_utils, tensor_float=True)
    config = getattr(m, f"{name}Config")(**SIZES | dict(overrides))
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    module = getattr(m, f"{name}Attention")(config, 0).double().eval()
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    return module, config, getattr(m, f"{name}RotaryEmbedding")(config)


def _reference_call(module, rotary, x, positions):
    """The module's output and weights under the causal mask."""
    n = x.shape[1]
    allowed = torch.tril(torch.ones(n, n, dtype=torch.bool))
    mask = torch.zeros(1, 1, n, n, dtype=torch.float64).masked_fill(
        ~allowed, float("-inf"))  # (1, 1, T, S), added to the scores
    xt = torch.from_numpy(x)
    with torch.no_grad():
        cos_sin = rotary(xt, torch.from_numpy(positions))
        out, weights = module(hidden_states=xt, position_embeddings=cos_sin,
                              attention_mask=mask)
    return out.numpy(), weights.numpy()


def _layers(module, config):
    state = module.state_dict()
    cls = px.variants.DeepseekV3Attention
    return (cls.from_state_dict(state, config, 0),
            cls.from_state_dict(state, config.to_dict(), 0,
                                attn_implementation="eager"))


@pytest.mark.parametrize("start", [0, 3000])
@pytest.mark.parametrize("overrides", CONFIGS.values(), ids=CONFIGS)
def test_mla_equals_transformers(overrides, start, monkeypatch):
    module, config, rotary = _reference(overrides, monkeypatch)
    x = np.random.default_rng(1).standard_normal((B, T, D))
    positions = np.broadcast_to(start + np.arange(T), (B, T)).copy()
    ref, ref_weights = _reference_call(module, rotary, x, positions)
    flex, eager = _layers(module, config)
    assert flex.scaling == pytest.approx(module.scaling, rel=1e-15)
    out = flex(x, position_ids=positions)
    out_eager, weights = eager(x, position_ids=positions,
                               output_attentions=True)
    scale = max(1, np.abs(ref).max())
    assert out.shape == ref.shape == (B, T, D)
    assert np.abs(out - ref).max() < 1e-6 * scale
    assert np.abs(out_eager - ref).max() < 1e-6 * scale
    np.testing.assert_allclose(weights, ref_weights, rtol=0, atol=1e-6)
    np.testing.assert_allclose(out, out_eager, rtol=0, atol=1e-12)


@pytest.mark.parametrize("absorb", [False, True], ids=["expanded",
                                                       "absorbed"])
@pytest.mark.parametrize("name", ["flex_attention", "eager"])
def test_prefill_then_decode_equals_the_full_forward(name, absorb,
                                                     monkeypatch):
    module, config, _ = _reference(CONFIGS["yarn, biases"], monkeypatch)
    layer = px.variants.DeepseekV3Attention.from_state_dict(
        module.state_dict(), config, 0, attn_implementation=name)
    x = np.random.default_rng(2).standard_normal((B, T, D))
    positions = np.broadcast_to(3000 + np.arange(T), (B, T)).copy()
    full = layer(x, position_ids=positions)
    cache = px.kv_cache.DynamicCache(layer.config)
    P = 25  # a prompt, a chunk of 5, then one token a step
    steps = [decode(layer, x[:, :P], cache, positions[:, :P], absorb=absorb),
             decode(layer, x[:, P:P + 5], cache, positions[:, P:P + 5],
                          absorb=absorb)]
    for t in range(P + 5, T):
        steps.append(decode(layer, x[:, t:t + 1], cache, positions[:, t:t + 1],
                                  absorb=absorb))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, rtol=0,
                               atol=1e-12)
    r, d_rope = SIZES["kv_lora_rank"], SIZES["qk_rope_head_dim"]
    entry = cache.layers[0]  # a LatentLayer
    assert entry.c_kv.shape == (B, T, r) and entry.k_pe.shape == (B, T,
                                                                  d_rope)
    assert cache.nbytes == B * T * (r + d_rope) * 8


@pytest.mark.parametrize("overrides", CONFIGS.values(), ids=CONFIGS)
def test_absorbed_decode_equals_expanded(overrides, monkeypatch):
    module, config, _ = _reference(overrides, monkeypatch)
    layer, _ = _layers(module, config)
    x = np.random.default_rng(3).standard_normal((B, T + 1, D))
    outs = {}
    for absorb in (False, True):
        cache = px.kv_cache.DynamicCache(layer.config)
        decode(layer, x[:, :T], cache, absorb=absorb)  # the prompt
        outs[absorb] = decode(layer, x[:, T:], cache, absorb=absorb)
    diff = np.abs(outs[True] - outs[False]).max()
    assert diff < 1e-12 * max(1, np.abs(outs[False]).max())


def test_cache_holds_the_latent_transformers_caches(monkeypatch):
    module, config, rotary = _reference({}, monkeypatch)
    from transformers import DynamicCache
    x = np.random.default_rng(4).standard_normal((B, T, D))
    positions = np.broadcast_to(np.arange(T), (B, T)).copy()
    ref_cache = DynamicCache(config=config)
    xt = torch.from_numpy(x)
    with torch.no_grad():
        module(hidden_states=xt, attention_mask=None,
               position_embeddings=rotary(xt, torch.from_numpy(positions)),
               cache=ref_cache)
    layer, _ = _layers(module, config)
    cache = px.kv_cache.DynamicCache(layer.config)
    decode(layer, x, cache)
    c_kv, k_pe = (t[:, 0].numpy() for t in (ref_cache.layers[0].keys,
                                            ref_cache.layers[0].values))
    np.testing.assert_allclose(cache.layers[0].c_kv, c_kv, rtol=0, atol=1e-12)
    np.testing.assert_allclose(cache.layers[0].k_pe, k_pe, rtol=0, atol=1e-12)


# ----------------------------------------- DeepSeek-V3.2: sparse attention
#: 8 indexer heads, so that no two keys tie at a score of 0 (relu) where a
#: query's top 12 end; T = 40 keys, so every query past the 12th is cut
V32 = dict(index_n_heads=8, index_head_dim=6, index_topk=12)


@pytest.mark.parametrize("start", [0, 3000])
def test_sparse_mla_equals_transformers(start, monkeypatch):
    """DeepseekV32Attention: the indexer's top-12 keys a query, then MLA
    over them, equal to transformers' module (weights included), and the
    choice really cuts: later queries see 12 keys, not all before them."""
    module, config, rotary = _reference(V32, monkeypatch, "deepseek_v32")
    x = np.random.default_rng(3).standard_normal((B, T, D))
    positions = np.broadcast_to(start + np.arange(T), (B, T)).copy()
    ref, ref_weights = _reference_call(module, rotary, x, positions)
    cls = px.variants.DeepseekV32Attention
    flex = cls.from_state_dict(module.state_dict(), config, 0)
    eager = cls.from_state_dict(module.state_dict(), config.to_dict(), 0,
                                attn_implementation="eager")
    out = flex(x, position_ids=positions)
    out_eager, weights = eager(x, position_ids=positions,
                               output_attentions=True)
    scale = max(1, np.abs(ref).max())
    assert np.abs(out - ref).max() < 1e-6 * scale
    assert np.abs(out_eager - ref).max() < 1e-6 * scale
    np.testing.assert_allclose(weights, ref_weights, rtol=0, atol=1e-6)
    seen = (weights[0, 0] > 0).sum(-1)  # keys each query attends to
    np.testing.assert_array_equal(seen, np.minimum(np.arange(T) + 1, 12))
