"""Tests of pyxis_nb.model without torch: loading, the cache, padding, sampling.

The comparisons with transformers itself are in test_model_hf_reference.py.
"""

import json
import pathlib

import numpy as np
import pytest

import pyxis_nb as px
from conftest import generate_with_logits, left_pad
from checkpoints import (SIZES, config_json, tiny_model, write_checkpoint,
                         write_safetensors)

SMALL = px.ModelConfig(**SIZES)




# ------------------------------------------------------------- the pieces

def test_decoder_layer_is_pre_norm_attention_then_swiglu():
    model = px.Qwen3ForCausalLM.from_config(SMALL, seed=3,
                                            attn_implementation="eager")
    layer = model.layers[1]
    x = np.random.default_rng(0).standard_normal((2, 5, SMALL.hidden_size))
    h = x + layer.self_attn(px.rms_norm(x, layer.input_layernorm.weight))
    n = px.rms_norm(h, layer.post_attention_layernorm.weight)
    gate, up = n @ layer.mlp.gate_proj.T, n @ layer.mlp.up_proj.T
    silu = gate * (1 / (1 + np.exp(-gate)))
    want = h + (silu * up) @ layer.mlp.down_proj.T
    mask = px.causal_mask(5)
    cos_sin = px.rotary_cos_sin(np.arange(5), SMALL.head_dim,
                                rope_theta=SMALL.rope_theta, dtype=np.float64)
    out, weights = layer(x, mask, cos_sin)
    np.testing.assert_allclose(out, want, atol=1e-12)
    assert weights.shape == (2, SMALL.num_attention_heads, 5, 5)
    assert layer.layer_idx == 1 and layer.self_attn.rope_theta == SMALL.rope_theta


def test_silu_has_no_overflow_warning():
    mlp = px.Qwen3MLP(np.ones((2, 1)), np.ones((2, 1)), np.ones((1, 2)))
    with np.errstate(all="raise"):
        out = mlp(np.array([[[-1e4], [0.0], [3.0]]]))
    np.testing.assert_allclose(out[0, :, 0], [0.0, 0.0,
                                              2 * 9 / (1 + np.exp(-3))])


def test_silu_mul_writes_silu_gate_times_up_into_up():
    rng = np.random.default_rng(0)
    gate, up = rng.standard_normal((2, 2, 3, 5)).astype(np.float32)
    want = gate / (1 + np.exp(-gate.astype(np.float64))) * up
    out = px.model.silu_mul(gate, up)
    assert out is up and out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_forward_returns_logits_and_the_cache_on_request():
    model = px.Qwen3ForCausalLM.from_config(SMALL, seed=1)
    ids = np.array([[1, 2, 3, 4]])
    logits = model(ids).logits
    assert logits.shape == (1, 4, SMALL.vocab_size)
    out = model(ids[:, :3], use_cache=True)
    logits3, cache = out.logits, out.cache
    assert cache.get_seq_length() == 3
    assert isinstance(cache, px.kv_cache.DynamicCache)  # grows: any length
    np.testing.assert_allclose(logits3, logits[:, :3], atol=1e-12)
    step = model(ids[:, 3:], cache=cache).logits
    np.testing.assert_allclose(step, logits[:, 3:], atol=1e-12)


def test_tied_model_uses_the_embedding_as_lm_head():
    model = px.Qwen3ForCausalLM.from_config(SMALL, tie_word_embeddings=True)
    assert model.tie_word_embeddings and model.lm_head is model.embed_tokens
    assert "lm_head.weight" not in model.state_dict()
    untied = px.Qwen3ForCausalLM.from_config(SMALL)
    assert untied.num_parameters() - model.num_parameters() == 64 * 16


def test_state_dict_round_trip_and_names():
    model = px.Qwen3ForCausalLM.from_config(SMALL, seed=4)
    state = model.state_dict()
    assert "model.layers.1.mlp.down_proj.weight" in state
    assert state["model.layers.0.self_attn.q_norm.weight"].shape == (4,)
    again = px.Qwen3ForCausalLM.from_state_dict(state, model.config)
    ids = np.array([5, 6, 7])
    np.testing.assert_array_equal(again(ids).logits, model(ids).logits)
    assert not again.tie_word_embeddings


def test_a_model_without_mlp_is_attention_only():
    cfg = px.ModelConfig(**SIZES | {"intermediate_size": 0})
    model = px.Qwen3ForCausalLM.from_config(cfg, seed=2)
    assert all(layer.mlp is None for layer in model.layers)
    assert not any("mlp" in k for k in model.state_dict())
    ids = np.array([[3, 1, 4, 1, 5]])
    h = model.embed_tokens[ids]
    for i, layer in enumerate(model.layers):  # residual + attention only
        h = h + layer.self_attn(px.rms_norm(h, layer.input_layernorm.weight))
    want = px.rms_norm(h, model.norm.weight) @ model.lm_head.T
    np.testing.assert_allclose(model(ids).logits, want, atol=1e-12)


def test_output_attentions_are_each_layers_causal_softmax():
    model = px.Qwen3ForCausalLM.from_config(SMALL, seed=12,
                                            attn_implementation="eager")
    ids, mask = left_pad([[5, 6, 7, 8], [9, 10]])
    w = model(ids, attention_mask=mask, output_attentions=True).attentions
    assert w.shape == (2, 2, 4, 4, 4)  # (L, B, H, T, T)
    np.testing.assert_allclose(w[:, 0].sum(-1), 1.0, atol=1e-12)
    assert np.all(np.triu(w, k=1) == 0)  # causal: no key after the query
    assert np.all(w[:, 1, :, :, :2] == 0)  # row 1's padding keys
    # layer 1 attends over what layer 0 wrote: the same as its own call
    h = model.embed_tokens[ids[:1]]
    cos_sin = px.rotary_cos_sin(np.arange(4), 4, rope_theta=1e4, dtype=np.float64)
    h, _ = model.layers[0](h, px.causal_mask(4), cos_sin)
    _, w1 = model.layers[1].self_attn(
        model.layers[1].input_layernorm(h), output_attentions=True)
    np.testing.assert_allclose(w[1, 0], w1[0], atol=1e-12)


def test_each_kernel_is_chosen_by_name(monkeypatch):
    """attn_implementation picks the kernel of every layer: the default
    "flex_attention" runs the tiles and keeps no weights; "eager" returns
    them; the logits agree (left padding and a cache, head_mask on both),
    and set_attn_implementation switches a loaded model."""
    import pyxis_nb.attention as attention
    calls = []
    for name, kernel in list(attention.ATTENTION_FUNCTIONS.items()):
        monkeypatch.setitem(
            attention.ATTENTION_FUNCTIONS, name,
            lambda *a, _n=name, _k=kernel, **kw: calls.append(_n) or _k(
                *a, **kw))
    config = px.ModelConfig(**SIZES | dict(max_position_embeddings=160))
    model = px.Qwen3ForCausalLM.from_config(config, seed=4)
    assert model.config._attn_implementation == "flex_attention"
    rng = np.random.default_rng(0)
    ids, mask = left_pad([list(rng.integers(1, 64, n)) for n in (90, 71)])
    heads = rng.random((2, 4))
    fast = model(ids, attention_mask=mask, cache=model.new_cache(100, 2),
                 head_mask=heads)
    assert calls == ["flex_attention"] * 2 and fast.attentions is None
    with pytest.raises(ValueError, match="output_attentions=True needs "
                       "attn_implementation='eager'"):
        model(ids, output_attentions=True)
    model.set_attn_implementation("eager")
    slow = model(ids, attention_mask=mask, output_attentions=True,
                 head_mask=heads)
    assert calls[2:] == ["eager"] * 2
    assert slow.attentions.shape == (2, 2, 4, 90, 90)
    assert model.config._attn_implementation == "eager"
    np.testing.assert_allclose(fast.logits, slow.logits, rtol=0, atol=1e-12)
    assert "_attn_implementation" not in model.config.to_dict()


# ---------------------------------------------------------------- loading

@pytest.mark.parametrize("shards", [1, 3])
@pytest.mark.parametrize("tied", [True, False])
def test_from_pretrained_reads_what_was_written(tmp_path, shards, tied):
    model = tiny_model(tied=tied, seed=5)
    write_checkpoint(tmp_path, model, shards=shards)
    assert len(list(tmp_path.glob("*.safetensors"))) == shards
    loaded = px.Qwen3ForCausalLM.from_pretrained(tmp_path)
    assert loaded.dtype == np.float32 and loaded.config == model.config
    assert loaded.tie_word_embeddings == tied
    assert loaded.generation_config["eos_token_id"] == 0
    for key, x in model.state_dict().items():  # bf16 widened exactly
        np.testing.assert_array_equal(loaded.state_dict()[key], x)
    as64 = px.Qwen3ForCausalLM.from_pretrained(tmp_path, dtype=np.float64)
    assert as64.dtype == np.float64
    ids = np.array([[1, 9, 3, 7]])
    np.testing.assert_allclose(as64(ids).logits, loaded(ids).logits, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["BF16", "F32"])
def test_checkpoint_matrices_are_read_column_major(tmp_path, dtype):
    # px.qwen3.weight_order: x @ w.T then multiplies a row-major (in, out)
    # array, the matrix-vector product that streams faster when decoding
    # (bench_generate); vectors stay row-major. gate_proj and up_proj are
    # views of the halves of gate_up_proj: their columns are, too
    write_checkpoint(tmp_path, tiny_model(seed=5), dtype=dtype)
    loaded = px.Qwen3ForCausalLM.from_pretrained(tmp_path)
    for key, x in loaded.state_dict().items():
        assert x.strides[0] == x.itemsize if x.ndim == 2 else x.flags.c_contiguous, key
    assert loaded.layers[0].mlp.gate_up_proj.flags.f_contiguous


@pytest.mark.parametrize("dtype", ["F32", "F64"])
def test_float_checkpoints_load_as_well(tmp_path, dtype):
    model = tiny_model(seed=6)
    write_checkpoint(tmp_path, model, dtype=dtype)
    loaded = px.Qwen3ForCausalLM.from_pretrained(tmp_path)
    np.testing.assert_array_equal(loaded([2, 3]).logits, model([2, 3]).logits)


def test_bf16_bits_widen_to_the_float32_they_are():
    arrays = {"x": np.array([1.0, -2.0, 0.15625, np.inf, 2.0 ** -133],
                            np.float32)}
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        file = pathlib.Path(d) / "x.safetensors"
        write_safetensors(file, arrays)
        assert px.safetensors_header(file) == {"x": ("BF16", (5,))}
        out = px.loading._read_tensors(file, np.float32)["x"]
    np.testing.assert_array_equal(out, arrays["x"])  # all exact in bf16


def test_qwen3_style_config_with_top_level_rope_theta(tmp_path):
    model = tiny_model(seed=7)
    config = config_json()
    config.pop("rope_parameters")
    config |= {"rope_theta": 10_000.0, "rope_scaling": None,
               "torch_dtype": "bfloat16", "max_window_layers": 28,
               "layer_types": ["full_attention"] * 2}
    write_checkpoint(tmp_path, model, config=config)
    loaded = px.Qwen3ForCausalLM.from_pretrained(tmp_path)
    np.testing.assert_array_equal(loaded([4, 5, 6]).logits, model([4, 5, 6]).logits)


def test_nothing_is_read_when_the_header_does_not_fit(tmp_path, monkeypatch):
    model = tiny_model()
    state = model.state_dict()
    state["model.norm.weight"] = np.ones(17, np.float32)
    write_checkpoint(tmp_path, model, state=state)
    read = []
    monkeypatch.setattr(px.loading, "_read_tensors",
                        lambda *a: read.append(a) or {})
    with pytest.raises(ValueError, match=r"model.norm.weight .*\(17,\)"):
        px.Qwen3ForCausalLM.from_pretrained(tmp_path)
    assert not read  # refused from the header alone: no weight was read


# ------------------------------------------------------------ generation

def test_eos_default_comes_from_the_generation_config():
    model = px.Qwen3ForCausalLM.from_config(SMALL, seed=9)
    free = model.generate([5, 9], 6)[2:]
    model.generation_config["eos_token_id"] = [99 % 64, int(free[1])]
    ids, logits = generate_with_logits(model, [5, 9], 6)
    assert ids.tolist() == [5, 9, *free[:2]] and len(logits) == 2
    ids = model.generate([5, 9], 6, eos_token_id=63 if free[1] != 63
                            else 62)
    assert len(ids) == 8 or 63 in ids  # an explicit eos replaces it


def batch(prompt, B):
    return np.tile(np.asarray(prompt), (B, 1))


def test_sampling_is_seeded_and_follows_softmax():
    model = px.Qwen3ForCausalLM.from_config(SMALL, seed=10)
    prompt, B = [4, 8, 15], 4000
    p = px.softmax(model(prompt).logits[0, -1] / 0.7)  # (V,)
    ids = model.generate(batch(prompt, B), 1, do_sample=True,
                            temperature=0.7, seed=0)
    again = model.generate(batch(prompt, B), 1, do_sample=True,
                              temperature=0.7, seed=0)
    np.testing.assert_array_equal(ids, again)
    counts = np.bincount(ids[:, -1], minlength=64) / B
    assert np.abs(counts - p).max() < 4 * np.sqrt(p.max() / B)
    other = model.generate(batch(prompt, B), 1, do_sample=True, seed=1)
    assert not np.array_equal(other, ids)


def test_top_k_and_top_p_keep_only_the_likely_tokens():
    model = px.Qwen3ForCausalLM.from_config(SMALL, seed=11)
    prompt, B = [1, 2, 3], 500
    logits = model(prompt).logits[0, -1]
    order = np.argsort(-logits)
    ids = model.generate(batch(prompt, B), 1, do_sample=True, top_k=3,
                            seed=0)
    assert set(ids[:, -1]) <= set(order[:3])
    p = px.softmax(logits)[order]
    n = int(np.searchsorted(np.cumsum(p), 0.5)) + 1  # the nucleus of 0.5
    ids = model.generate(batch(prompt, B), 1, do_sample=True, top_p=0.5,
                            seed=0)
    assert set(ids[:, -1]) == set(order[:n])
    greedy = model.generate(prompt, 5)
    for kw in ({"top_k": 1}, {"top_p": 1e-9}, {"temperature": 1e-6}):
        np.testing.assert_array_equal(
            model.generate(prompt, 5, do_sample=True, seed=3, **kw),
            greedy)


# ------------------------------------------------------ the shipped model

ship = pytest.mark.skipif(
    not (px.SHAKESPEARE_CHECKPOINT / "model.safetensors").is_file(),
    reason="the shipped checkpoint is not built (make real-model)")


@ship
def test_the_shipped_checkpoint_loads_and_speaks():
    model = px.Qwen3ForCausalLM.from_pretrained(px.SHAKESPEARE_CHECKPOINT)
    c = model.config
    assert (c.num_hidden_layers >= 4 and model.tie_word_embeddings
            and c.num_key_value_heads < c.num_attention_heads)
    assert model.num_parameters() <= 10_000_000
    tok = px.load_tokenizer(px.SHAKESPEARE_CHECKPOINT)
    text = "KING HENRY:\nOnce more unto the breach"
    ids = tok.encode(text).ids
    assert tok.decode(ids) == text and max(ids) < c.vocab_size
    out = model.generate(ids, 30)
    assert tok.decode(out.tolist()).startswith(text)
    held = (px.SHAKESPEARE_CHECKPOINT / "heldout.txt").read_text()
    val = np.array(tok.encode(held[:4000]).ids[:256])
    loss = px.attention_only.cross_entropy(model(val[:-1]).logits, val[None, 1:])[0].mean()
    report = json.loads((px.SHAKESPEARE_CHECKPOINT
                         / "training.json").read_text())
    assert loss < report["bigram_loss"]  # it learned more than bigrams


def test_checkpoint_path_helper_points_into_the_package():
    package = pathlib.Path(px.__file__).parent
    assert px.SHAKESPEARE_CHECKPOINT == package / "data" / "qwen3_shakespeare"


def test_the_shipped_model_loads_with_either_kernel():
    """from_pretrained(attn_implementation=...) on the shipped Qwen3: both
    names give the same logits to float32 rounding; only eager returns
    weights."""
    ckpt = px.SHAKESPEARE_CHECKPOINT
    tiled = px.Qwen3ForCausalLM.from_pretrained(ckpt)
    eager = px.Qwen3ForCausalLM.from_pretrained(
        ckpt, attn_implementation="eager")
    assert eager.config._attn_implementation == "eager"
    assert all(layer.self_attn.attn_implementation == "eager"
               for layer in eager.layers)
    ids = np.random.default_rng(0).integers(1, 2048, (2, 300))
    a, b = tiled(ids).logits, eager(ids, output_attentions=True)
    assert b.attentions.shape == (4, 2, 8, 300, 300)
    assert np.abs(a - b.logits).max() / np.abs(b.logits).max() < 1e-5
    with pytest.raises(ValueError, match="attn_implementation must be one "
                       "of"):
        px.Qwen3ForCausalLM.from_pretrained(ckpt, attn_implementation="sdpa")


def test_logits_to_keep_takes_positions_as_transformers_does():
    """A 1-D array keeps those positions' logits (continuous batching keeps
    each request's last token), equal to the whole run's at them."""
    model = px.Qwen3ForCausalLM.from_pretrained(px.SHAKESPEARE_CHECKPOINT)
    ids = np.arange(1, 21)[None]
    full = model(ids).logits  # (1, 20, V)
    kept = model(ids, logits_to_keep=np.array([3, 7, 19])).logits
    np.testing.assert_allclose(kept, full[:, [3, 7, 19]], rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_array_equal(
        model(ids, logits_to_keep=4).logits,
        model(ids, logits_to_keep=np.arange(16, 20)).logits)
    with pytest.raises(ValueError, match=r"logits_to_keep must lie in 0 \.\. 19"):
        model(ids, logits_to_keep=np.array([20]))
