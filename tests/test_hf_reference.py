"""The layer against Hugging Face's own Qwen3Attention and Qwen2Attention.

Both are built from small random configs (nothing is downloaded), with our
weights copied in. A left-padded batch is run with HF's own mask
(``masking_utils.create_causal_mask``) and rotary embedding, with and
without a cache. Padding query rows are not compared: HF's eager path gives
them an average of the values, ours gives zeros (never NaN).
"""

import numpy as np
import pytest

import pyxis_nb as px

torch = pytest.importorskip("torch", reason="torch is not installed: HF reference skipped")
transformers = pytest.importorskip("transformers", reason="transformers is not installed: HF reference skipped")
from transformers import DynamicCache, Qwen2Config, Qwen3Config  # noqa: E402
from transformers.masking_utils import create_causal_mask  # noqa: E402
from transformers.models.qwen2.modeling_qwen2 import Qwen2Attention, Qwen2RotaryEmbedding  # noqa: E402
from transformers.models.qwen3.modeling_qwen3 import Qwen3Attention, Qwen3RotaryEmbedding  # noqa: E402

SIZES = dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8)
THETA = 10_000.0


def config(cls, **extra):
    cfg = cls(**SIZES, num_hidden_layers=1, intermediate_size=64, vocab_size=16,
              max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=THETA, **extra)
    cfg._attn_implementation = "eager"
    return cfg


def hf_layer(cls, cfg, ours):
    layer = cls(cfg, layer_idx=0).eval()
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in ours.state_dict().items()}
    layer.load_state_dict(state, strict=True)  # the same keys, both ways
    return layer


def left_padded(lengths, T, seed=0):
    x = np.random.default_rng(seed).standard_normal((len(lengths), T, SIZES["hidden_size"]))
    mask = np.array([[0] * (T - n) + [1] * n for n in lengths])
    return x.astype(np.float32), mask


def hf_forward(layer, rotary, cfg, x, mask, past=0, cache=None):
    """One call of HF's layer on new tokens x, with a (B, past + T) padding mask."""
    tx, tmask = torch.from_numpy(x), torch.from_numpy(mask)
    pos = (tmask.long().cumsum(-1) - 1).masked_fill(tmask == 0, 0)[:, past:]  # generate's rule
    full = create_causal_mask(config=cfg, inputs_embeds=tx, attention_mask=tmask,
                              cache=cache, position_ids=pos)
    with torch.no_grad():
        out, _ = layer(tx, position_embeddings=rotary(tx, pos), attention_mask=full, cache=cache)
    return out.numpy()


@pytest.mark.parametrize("family", ["qwen3", "qwen2"])
def test_left_padded_batch_matches_hugging_face(family):
    if family == "qwen3":
        ours = px.random_attention(**SIZES, seed=1, dtype=np.float32, qk_norm=True, rope_theta=THETA)
        cfg = config(Qwen3Config)
        hf, rotary = hf_layer(Qwen3Attention, cfg, ours), Qwen3RotaryEmbedding(cfg)
    else:  # Qwen2: q/k/v biases, no q/k norms
        ours = px.random_attention(**SIZES, seed=2, dtype=np.float32, bias=True, rope_theta=THETA)
        cfg = config(Qwen2Config)
        hf, rotary = hf_layer(Qwen2Attention, cfg, ours), Qwen2RotaryEmbedding(cfg)
        assert hf.q_proj.bias is not None and hf.o_proj.bias is None
    x, mask = left_padded([6, 3, 1], T=6)
    real = mask.astype(bool)
    ref = hf_forward(hf, rotary, cfg, x, mask)
    np.testing.assert_allclose(ours(x, attention_mask=mask)[real], ref[real], rtol=1e-4, atol=2e-5)

    # prefill 4, then decode 2 tokens one at a time, both through caches
    cache, hf_cache = px.KVCache(1, 3, 2, 8, max_cache_len=8, dtype=np.float32), DynamicCache(config=cfg)
    for a, b in [(0, 4), (4, 5), (5, 6)]:
        ref = hf_forward(hf, rotary, cfg, x[:, a:b], mask[:, :b], past=a, cache=hf_cache)
        out = ours(x[:, a:b], attention_mask=mask[:, :b], cache=cache)
        np.testing.assert_allclose(out[real[:, a:b]], ref[real[:, a:b]], rtol=1e-4, atol=2e-5)
        assert np.all(np.isfinite(out))
    assert cache.get_seq_length() == hf_cache.get_seq_length() == 6


def test_from_state_dict_loads_what_hugging_face_saves():
    """A Qwen2 layer's own state_dict loads completely; an extra key is refused."""
    cfg = config(Qwen2Config)
    torch.manual_seed(0)
    hf = Qwen2Attention(cfg, layer_idx=0).eval()
    sd = {f"model.layers.0.self_attn.{k}": v.numpy() for k, v in hf.state_dict().items()}
    ours = px.MultiHeadAttention.from_state_dict(sd, **SIZES, prefix="model.layers.0.self_attn.", rope_theta=THETA)
    assert ours.q_proj_bias is not None
    np.testing.assert_array_equal(ours.state_dict("model.layers.0.self_attn.")["model.layers.0.self_attn.k_proj.bias"],
                                  hf.k_proj.bias.detach().numpy())
    x, mask = left_padded([5, 2], T=5, seed=3)
    ref = hf_forward(hf, Qwen2RotaryEmbedding(cfg), cfg, x, mask)
    real = mask.astype(bool)
    np.testing.assert_allclose(ours(x, attention_mask=mask)[real], ref[real], rtol=1e-4, atol=2e-5)
    with pytest.raises(ValueError, match="unknown keys"):
        px.MultiHeadAttention.from_state_dict(sd | {"model.layers.0.self_attn.o_proj.bias": np.zeros(32)},
                                              **SIZES, prefix="model.layers.0.self_attn.", rope_theta=THETA)


def test_qwen3_attention_names_its_cache_argument_cache():
    """The docstrings say HF 5.x calls the cache ``cache``; keep them honest."""
    import inspect
    params = inspect.signature(Qwen3Attention.forward).parameters
    assert "cache" in params and "past_key_value" not in params
    assert list(inspect.signature(DynamicCache.update).parameters)[1:4] == ["key_states", "value_states", "layer_idx"]


def hf_mask_and_out(layer, rotary, cfg, x, mask, pos, cache=None):
    """HF's own 4-D mask for (mask, pos), as booleans, and its layer's output."""
    tx, tpos = torch.from_numpy(x), torch.from_numpy(pos)
    full = create_causal_mask(config=cfg, inputs_embeds=tx, cache=cache, position_ids=tpos,
                              attention_mask=None if mask is None else torch.from_numpy(mask))
    with torch.no_grad():
        out, _ = layer(tx, position_embeddings=rotary(tx, tpos), attention_mask=full, cache=cache)
    return (full == 0).numpy(), out.numpy()  # eager: 0 = may attend, dtype min = masked


def qwen3_pair(seed):
    ours = px.random_attention(**SIZES, seed=seed, dtype=np.float32, qk_norm=True, rope_theta=THETA)
    cfg = config(Qwen3Config)
    return ours, hf_layer(Qwen3Attention, cfg, ours), Qwen3RotaryEmbedding(cfg), cfg


@pytest.mark.parametrize("cached", [False, True], ids=["no cache", "cache"])
def test_packed_positions_and_hf_4d_masks(cached):
    """Two rows of packed sequences: positions restart inside a row, and HF's
    mask is block-diagonal. Both go through the layer as HF passes them."""
    ours, hf, rotary, cfg = qwen3_pair(seed=4)
    pos = np.array([[0, 1, 2, 0, 1, 0, 1, 2], [0, 1, 2, 3, 0, 1, 2, 3]])
    x = np.random.default_rng(5).standard_normal((2, 8, 32)).astype(np.float32)
    if not cached:
        full, ref = hf_mask_and_out(hf, rotary, cfg, x, None, pos)
        assert not full[0, 0, 3, :3].any()  # HF's mask starts a new sequence
        np.testing.assert_allclose(ours(x, attention_mask=full, position_ids=pos), ref, rtol=1e-4, atol=2e-5)
        return
    cache, hf_cache = px.KVCache(1, 2, 2, 8, max_cache_len=8, dtype=np.float32), DynamicCache(config=cfg)
    for a, b in [(0, 5), (5, 6), (6, 8)]:
        full, ref = hf_mask_and_out(hf, rotary, cfg, x[:, a:b], None, pos[:, a:b], hf_cache)
        out = ours(x[:, a:b], attention_mask=full, position_ids=pos[:, a:b], cache=cache)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=2e-5)
    assert cache.get_seq_length() == hf_cache.get_seq_length() == 8


@pytest.mark.parametrize("mask_form", ["2-D", "HF 4-D"])
def test_explicit_positions_while_decoding_a_left_padded_batch(mask_form):
    """generate's positions passed explicitly, prefill then decode, both masks."""
    ours, hf, rotary, cfg = qwen3_pair(seed=6)
    x, mask = left_padded([6, 3, 1], T=6, seed=7)
    pos = np.where(mask == 1, mask.cumsum(-1) - 1, 0)  # generate's rule, (B, 6)
    real = mask.astype(bool)
    cache, hf_cache = px.KVCache(1, 3, 2, 8, max_cache_len=6, dtype=np.float32), DynamicCache(config=cfg)
    for a, b in [(0, 4), (4, 5), (5, 6)]:
        full, ref = hf_mask_and_out(hf, rotary, cfg, x[:, a:b], mask[:, :b], pos[:, a:b], hf_cache)
        given = mask[:, :b] if mask_form == "2-D" else full
        out = ours(x[:, a:b], attention_mask=given, position_ids=pos[:, a:b], cache=cache)
        np.testing.assert_allclose(out[real[:, a:b]], ref[real[:, a:b]], rtol=1e-4, atol=2e-5)
    assert cache.get_seq_length() == hf_cache.get_seq_length() == 6
