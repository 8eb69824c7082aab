"""Bad input to the layer, the cache and the decoder: each row is a call, the
exception it must raise, and a regex naming the argument and its numbers.
After every refused call the cache must be exactly as it was."""

import numpy as np
import pytest

import pyxis_nb as px

B, T, PAST, C = 2, 3, 2, 6


def setup():
    """A layer, a float64 input, and a cache holding PAST positions."""
    layer = px.random_attention(C, 4, 2, 4, seed=0, qk_norm=True, theta=100.0)
    x = np.random.default_rng(1).standard_normal((B, T, C))
    cache = px.KVCache(1, B, 2, 4, max_seq_len=8)
    layer(x[:, :PAST], past_key_value=cache)
    return layer, x, cache


def mask(S, pad=0):
    m = np.ones((B, S), int)
    m[1, :pad] = 0  # row 1 left-padded
    return m


def good_sd():
    return px.random_attention(C, 4, 2, 4, bias=True).state_dict("attn.")


SIZES = dict(hidden_size=C, num_attention_heads=4, num_key_value_heads=2, head_dim=4)

# (id, call(layer, x, cache), exception, regex)
CASES = [
    ("mask too short", lambda l, x, c: l(x, attention_mask=mask(PAST + T - 1), past_key_value=c),
     ValueError, r"attention_mask has shape \(2, 4\), expected \(B, S\) = \(2, 5\): 2 cached positions plus 3 new"),
    ("mask without the cached part", lambda l, x, c: l(x, attention_mask=mask(T), past_key_value=c),
     ValueError, r"attention_mask has shape \(2, 3\), expected \(B, S\) = \(2, 5\)"),
    ("mask 4-D of the wrong size", lambda l, x, c: l(x, attention_mask=np.ones((B, 1, T, 4), bool), past_key_value=c),
     ValueError, r"attention_mask has shape \(2, 1, 3, 4\), expected \(B, 1, T, S\) = \(2, 1, 3, 5\)"),
    ("mask of 2s", lambda l, x, c: l(x, attention_mask=2 * mask(PAST + T), past_key_value=c),
     ValueError, r"attention_mask must be boolean or hold only 0 and 1 .* values \[2\]"),
    ("mask of floats", lambda l, x, c: l(x, attention_mask=0.5 * mask(PAST + T), past_key_value=c),
     ValueError, r"attention_mask must be boolean or hold only 0 and 1 .*float64 with values \[0.5\]"),
    ("positions restart under a cache", lambda l, x, c: l(x, position_ids=np.arange(T), past_key_value=c),
     ValueError, r"position_ids of row 0 are \[0, 1, 2\] .* the cache holds 2 real tokens of that row: expected \[2, 3, 4\]"),
    ("positions ignore the padding", lambda l, x, c: l(x, attention_mask=mask(PAST + T, pad=1),
                                                       position_ids=np.arange(PAST, PAST + T), past_key_value=c),
     ValueError, r"position_ids of row 1 are \[2, 3, 4\] .* holds 1 real tokens of that row: expected \[1, 2, 3\]"),
    ("positions not consecutive", lambda l, x, c: l(x, position_ids=np.array([2, 3, 5]), past_key_value=c),
     ValueError, r"position_ids of row 0 are \[2, 3, 5\] .* expected \[2, 3, 4\]"),
    ("float positions", lambda l, x, c: l(x, position_ids=np.arange(2.0, 5.0), past_key_value=c),
     ValueError, r"position_ids has shape \(3,\) and dtype float64, expected integers >= 0"),
    ("is_causal as a string", lambda l, x, c: l(x, is_causal="False", past_key_value=c),
     TypeError, r"is_causal must be True or False, got str 'False'"),
    ("return_weights as 1", lambda l, x, c: l(x, return_weights=1, past_key_value=c),
     TypeError, r"return_weights must be True or False, got int 1"),
    ("flag passed positionally", lambda l, x, c: l(x, False),
     TypeError, r"positional argument"),
    ("float32 input, float64 weights", lambda l, x, c: l(x.astype(np.float32), past_key_value=c),
     ValueError, r"hidden_states has dtype float32 but q_proj.weight has dtype float64"),
    ("float32 rms_norm weight", lambda l, x, c: px.rms_norm(x, np.ones(C, np.float32)),
     ValueError, r"weight has dtype float32 but x has dtype float64"),
    ("mixed-dtype weights", lambda l, x, c: px.MultiHeadAttention(
        C, 4, 2, 4, q_proj=l.q_proj, k_proj=l.k_proj, v_proj=l.v_proj, o_proj=l.o_proj.astype(np.float32)),
     ValueError, r"o_proj has dtype float32 but q_proj has dtype float64"),
    ("unknown state-dict key", lambda l, x, c: px.MultiHeadAttention.from_state_dict(
        good_sd() | {"attn.o_proj.bias": np.zeros(C), "attn.rotary.inv_freq": np.ones(2)}, prefix="attn.", **SIZES),
     ValueError, r"unknown keys \['attn.o_proj.bias', 'attn.rotary.inv_freq'\], missing keys \[\]"),
    ("missing bias", lambda l, x, c: px.MultiHeadAttention.from_state_dict(
        {k: v for k, v in good_sd().items() if k != "attn.v_proj.bias"}, prefix="attn.", **SIZES),
     ValueError, r"give all of \('q_proj_bias', 'k_proj_bias', 'v_proj_bias'\) or none, got only \['q_proj_bias', 'k_proj_bias'\]"),
    ("bias of the wrong size", lambda l, x, c: px.MultiHeadAttention.from_state_dict(
        good_sd() | {"attn.k_proj.bias": np.zeros(16)}, prefix="attn.", **SIZES),
     ValueError, r"k_proj.bias has shape \(16,\), expected \(8,\)"),
    ("q_norm without theta", lambda l, x, c: px.MultiHeadAttention.from_state_dict(l.state_dict(), **SIZES),
     ValueError, r"q_norm/k_norm .* no theta was given: pass theta=config.rope_theta, or theta=None"),
    ("cache overflow", lambda l, x, c: l(np.concatenate([x, x, x], 1), past_key_value=c),
     ValueError, r"cannot append 9 positions to layer 0: it holds 2 and max_seq_len is 8 \(2 \+ 9 = 11 > 8\)"),
    ("decoder mask of the wrong length", lambda l, x, c: px.TinyDecoder(seed=0)(
        np.ones((B, 3), int), attention_mask=np.ones((B, 2), int)),
     ValueError, r"attention_mask has shape \(2, 2\), expected \(B, S\) = \(2, 3\)"),
    ("generate with an all-padding row", lambda l, x, c: px.TinyDecoder(seed=0).generate(
        np.ones((B, 3), int), 2, attention_mask=np.array([[1, 1, 1], [0, 0, 0]])),
     ValueError, r"attention_mask has shape \(2, 3\), expected \(B, P\) = \(2, 3\) with a real token"),
    ("generate with use_cache='yes'", lambda l, x, c: px.TinyDecoder(seed=0).generate([1, 2], 2, use_cache="yes"),
     TypeError, r"use_cache must be True or False, got str 'yes'"),
    ("eos out of the vocabulary", lambda l, x, c: px.TinyDecoder(seed=0).generate([1, 2], 2, eos_token_id=64),
     ValueError, r"eos_token_id must be an integer 0 <= eos_token_id <= 63, got 64"),
]


@pytest.mark.parametrize("call, error, pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_and_nothing_changed(call, error, pattern):
    layer, x, cache = setup()
    keys = cache.key_cache[0].copy()
    values = cache.value_cache[0].copy()
    with pytest.raises(error, match=pattern):
        call(layer, x, cache)
    assert cache.get_seq_length() == PAST
    np.testing.assert_array_equal(cache.key_cache[0], keys)
    np.testing.assert_array_equal(cache.value_cache[0], values)
