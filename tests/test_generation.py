"""Tests of generation: TinyDecoder (the model without MLPs) with and without a
cache, with left padding, MHA, GQA and MQA; the model's own tests are in test_model.py."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyxis_nb as px
from conftest import generate_with_logits, left_pad

heads_st = st.sampled_from([(2, 2), (4, 2), (4, 1), (6, 3)])  # (H, Hkv): MHA, GQA, MQA


@given(heads=heads_st, layers=st.integers(1, 2), prompt=st.lists(st.integers(0, 31), min_size=1, max_size=7),
       n_new=st.integers(1, 6), data=st.data(), seed=st.integers(0, 30))
def test_generate_with_cache_equals_without(heads, layers, prompt, n_new, data, seed):
    model = px.TinyDecoder(vocab_size=32, hidden_size=12, num_hidden_layers=layers,
                           num_attention_heads=heads[0], num_key_value_heads=heads[1], head_dim=4,
                           seed=seed)
    chunk = data.draw(st.none() | st.integers(1, len(prompt) + 1), label="prefill_chunk_size")
    ids_full, logits_full = generate_with_logits(model, prompt, n_new, use_cache=False)
    ids_cached, logits_cached = generate_with_logits(model, prompt, n_new, prefill_chunk_size=chunk)
    np.testing.assert_array_equal(ids_cached, ids_full)
    np.testing.assert_allclose(logits_cached, logits_full, atol=1e-12)
    assert ids_full.shape == (len(prompt) + n_new,) and logits_full.shape == (n_new, 32)
    assert ids_full[:len(prompt)].tolist() == prompt
    assert np.all(ids_full[len(prompt):] == np.argmax(logits_full, axis=-1))


@given(T=st.integers(2, 10), cuts=st.sets(st.integers(1, 9), max_size=4), seed=st.integers(0, 30))
def test_forward_in_chunks_through_the_cache_equals_one_pass(T, cuts, seed):
    model = px.TinyDecoder(seed=seed)
    ids = np.random.default_rng(seed).integers(0, 64, (2, T))
    full = model(ids).logits  # (2, T, V)
    cache = model.new_cache(max_cache_len=T, batch_size=2)
    bounds = [0, *sorted(c for c in cuts if c < T), T]
    for a, b in zip(bounds, bounds[1:]):
        np.testing.assert_allclose(model(ids[:, a:b], cache=cache).logits, full[:, a:b], atol=1e-12)
    assert all(cache.get_seq_length(i) == T for i in range(2))


def test_float32_and_logits_to_keep():
    model = px.TinyDecoder(dtype=np.float32, seed=2)
    ids, logits = generate_with_logits(model, [3, 1, 4, 1, 5], 8)
    ids2, logits2 = generate_with_logits(model, [3, 1, 4, 1, 5], 8, use_cache=False)
    assert logits.dtype == np.float32
    np.testing.assert_array_equal(ids, ids2)
    np.testing.assert_allclose(logits, logits2, atol=1e-5)
    all_logits = model(np.array([[3, 1, 4]])).logits
    assert all_logits.shape == (1, 3, 64)
    np.testing.assert_allclose(model(np.array([3, 1, 4]), logits_to_keep=1).logits, all_logits[:, -1:], atol=1e-6)
    assert "TinyDecoder(vocab_size=64" in repr(model)
    assert model.config.intermediate_size == 0 and model.config.num_hidden_layers == 2


def test_generate_is_deterministic_and_seeded():
    a = px.TinyDecoder(seed=0).generate([1, 2, 3], 10)
    b = px.TinyDecoder(seed=0).generate([1, 2, 3], 10)
    c = px.TinyDecoder(seed=1).generate([1, 2, 3], 10)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_runs_past_max_position_embeddings_as_transformers_does():
    """RoPE has no length limit: the config records what training used, and
    transformers runs past it; so does the model, cached or not."""
    model = px.TinyDecoder(max_position_embeddings=10)
    ids = model.generate([1, 2, 3, 4], 7)  # 11 positions > 10
    assert ids.shape == (11,)
    np.testing.assert_array_equal(ids, model.generate([1, 2, 3, 4], 7,
                                                      use_cache=False))
    out = model(np.arange(1, 13)[None], use_cache=True)  # 12 positions
    assert out.cache.get_seq_length() == 12


def test_bad_input():
    model = px.TinyDecoder(max_position_embeddings=10)
    with pytest.raises(ValueError, match=r"input_ids .*got shape \(0,\)"):
        model.generate([], 3)
    with pytest.raises(ValueError, match=r"input_ids has shape \(1, 1, 2\)"):
        model.generate([[[1, 2]]], 3)
    with pytest.raises(ValueError, match="max_new_tokens must be an integer >= 1, got 0"):
        model.generate([1], 0)
    with pytest.raises(ValueError, match="prefill_chunk_size needs use_cache=True"):
        model.generate([1, 2], 3, use_cache=False, prefill_chunk_size=1)
    with pytest.raises(ValueError, match="prefill_chunk_size must be an integer >= 1, got 0"):
        model.generate([1, 2], 3, prefill_chunk_size=0)
    with pytest.raises(ValueError, match=r"input_ids must lie in 0 \.\. 63, got 0 \.\. 64"):
        model(np.array([0, 64])).logits
    with pytest.raises(ValueError, match=r"input_ids .*\(B, T\) or \(T,\)"):
        model(np.array([0.0, 1.0])).logits
    with pytest.raises(ValueError, match="logits_to_keep must be an integer 0 <= logits_to_keep, got -1"):
        model(np.array([1]), logits_to_keep=-1).logits
    with pytest.raises(ValueError, match="context_len must be an integer >= 1, got 0"):
        px.memory.decode_step_flops(model.config, 0)
    cache = model.new_cache(max_cache_len=2)
    with pytest.raises(ValueError, match="cannot append 3 positions: the layer holds 0 and max_cache_len is 2"):
        model(np.array([1, 2, 3]), cache=cache).logits


# ---------------------------------------------------------------- left padding, eos



@given(prompts=st.lists(st.lists(st.integers(0, 31), min_size=1, max_size=6), min_size=1, max_size=3),
       n_new=st.integers(1, 5), use_cache=st.booleans(), seed=st.integers(0, 20))
def test_left_padded_batch_generates_what_each_row_does_alone(prompts, n_new, use_cache, seed):
    model = px.TinyDecoder(vocab_size=32, hidden_size=12, num_attention_heads=4,
                           num_key_value_heads=2, head_dim=4, seed=seed)
    ids, mask = left_pad(prompts, pad=7)
    out, logits = generate_with_logits(model, ids, n_new, attention_mask=mask, use_cache=use_cache)
    assert out.shape == (len(prompts), ids.shape[1] + n_new) and logits.shape == (len(prompts), n_new, 32)
    for b, p in enumerate(prompts):
        alone, alone_logits = generate_with_logits(model, p, n_new)
        np.testing.assert_array_equal(out[b, ids.shape[1]:], alone[len(p):])
        np.testing.assert_allclose(logits[b], alone_logits, atol=1e-10)
        assert np.all(np.isfinite(logits[b]))


def test_eos_stops_each_row_and_finished_rows_repeat_it():
    model = px.TinyDecoder(seed=3)
    prompts = [[5, 9, 2], [11]]
    free = [model.generate(p, 6)[len(p):] for p in prompts]
    eos = int(free[0][1])  # row 0 stops after its second token
    ids, mask = left_pad(prompts)
    out = model.generate(ids, 6, attention_mask=mask, eos_token_id=eos)
    new = out[:, ids.shape[1]:]
    for b, p in enumerate(prompts):
        alone = model.generate(p, 6, eos_token_id=eos)[len(p):]
        np.testing.assert_array_equal(new[b, :len(alone)], alone)
        hit = np.flatnonzero(new[b] == eos)
        if hit.size:  # after its end-of-sequence a row only repeats it
            assert np.all(new[b, hit[0]:] == eos)
    assert new[0, 1] == eos


def test_decoder_forward_with_mask_and_cache_equals_one_pass():
    model = px.TinyDecoder(seed=4)
    ids, mask = left_pad([[1, 2, 3, 4, 5], [6, 7]])
    full = model(ids, attention_mask=mask).logits
    cache = model.new_cache(5, batch_size=2)
    first = model(ids[:, :3], attention_mask=mask[:, :3], cache=cache).logits
    rest = model(ids[:, 3:], attention_mask=mask, cache=cache).logits
    real = mask.astype(bool)
    np.testing.assert_allclose(np.concatenate([first, rest], 1)[real], full[real], atol=1e-12)


def test_tiny_decoder_is_the_real_model_without_mlps():
    model = px.TinyDecoder(seed=4)
    assert isinstance(model, px.Qwen3ForCausalLM)
    assert px.TinyDecoder.forward is px.Qwen3ForCausalLM.forward
    assert px.TinyDecoder.generate is px.Qwen3ForCausalLM.generate
    same = px.Qwen3ForCausalLM.from_config(model.config, seed=4)
    ids = np.array([[3, 1, 4, 1, 5]])
    np.testing.assert_array_equal(model(ids).logits, same(ids).logits)
    assert all(layer.mlp is None for layer in model.layers)
    assert not model.tie_word_embeddings
