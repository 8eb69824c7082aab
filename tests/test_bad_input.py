"""Bad input, for every public function of the package, in one table per part.

Each row: the call, its arguments, the exception it must raise and a regex
that names the argument and the numbers it got (not a whole sentence).
The checks themselves live in ``pyxis_nb/_checks.py``.
"""

import numpy as np
import pytest

import pyxis_nb as px


def z(*shape, dtype=float):
    """A zero array of this shape (float64 unless told)."""
    return np.zeros(shape, dtype=dtype)


QKV = dict(query=z(3, 4), key=z(5, 4), value=z(5, 2))
GQA = dict(query=z(1, 6, 3, 4), key=z(1, 4, 5, 4), value=z(1, 4, 5, 2),
           enable_gqa=True)


def qkv(**kw):
    """Query (3, 4), key (5, 4), value (5, 2) with some replaced."""
    return {**QKV, **kw}


# (call, kwargs, exception, regex naming the argument and the numbers)
ATTENTION = [
    (qkv(key=z(5, 6)), r"key has shape \(5, 6\).*d_head = 4.*\(3, 4\)"),
    (qkv(value=z(6, 2)), r"value has shape \(6, 2\).*S = 5.*\(5, 4\)"),
    (qkv(attn_mask=z(4, 5, dtype=bool)),
     r"attn_mask has shape \(4, 5\).*\(3, 5\)"),
    (qkv(attn_mask=z(2, 3, 5, dtype=bool)),
     r"attn_mask has shape \(2, 3, 5\).*\(3, 5\)"),
    (qkv(attn_mask=z(3, 5, dtype=int)), r"attn_mask .*int64.*\(3, 5\)"),
    (qkv(attn_mask=z(3, 5, dtype=bool), is_causal=True),
     r"attn_mask .*is_causal.*\(3, 5\)"),
    (qkv(query=z(3, 3, 4), key=z(2, 5, 4), value=z(2, 5, 2)),
     r"query \(3,\), key \(2,\), value \(2,\)"),
    (qkv(query=z(0, 4)), r"query .*0-length .*\(0, 4\)"),
    (qkv(key=z(0, 4), value=z(0, 2)), r"key .*0-length .*\(0, 4\)"),
    (qkv(query=z(3, 0), key=z(5, 0)), r"query .*0-length .*\(3, 0\)"),
    (qkv(value=z(5, 0)), r"value .*0-length .*\(5, 0\)"),
    (qkv(query=z(3, 4, dtype=int)), r"query .*int64.*\(3, 4\)"),
    (qkv(key=z(5, 4, dtype=bool)), r"key .*bool.*\(5, 4\)"),
    (qkv(query=z(4)), r"query .*2 dimensions.*\(4,\)"),
    (qkv(query=z(3, 4, dtype=np.float32)),
     r"query float32, key float64, value float64"),
    (GQA, r"H = 6 \(shape \(1, 6, 3, 4\)\).*H_kv = 4"),
    ({**GQA, "key": z(1, 3, 5, 4), "value": z(1, 2, 5, 2)},
     r"value has 2 heads.*H_kv = 3"),
    ({**QKV, "enable_gqa": True}, r"enable_gqa .*query \(3, 4\)"),
]

ROWS = [(px.scaled_dot_product_attention, kw, ValueError, m)
        for kw, m in ATTENTION]
ROWS += [(px.tiled_attention, kw, ValueError, m) for kw, m in ATTENTION]
ROWS += [
    (px.tiled_attention, qkv(block_q=0), ValueError, r"block_q .*got 0"),
    (px.tiled_attention, qkv(block_k=2.5), ValueError, r"block_k .*got 2.5"),
    (px.tiled_attention, qkv(block_k=True), ValueError, r"block_k .*True"),
    (px.tiled_attention, qkv(mask_mod=3), ValueError, r"mask_mod .*int 3"),
    (px.tiled_attention, qkv(mask_mod=lambda b, h, q, kv: q - kv),
     ValueError, r"mask_mod .*bool.*int64 with shape \(3, 5\)"),
    (px.tiled_attention, qkv(mask_mod=lambda b, h, q, kv: z(3, 5)),
     ValueError, r"mask_mod .*bool.*float64 with shape \(3, 5\)"),
    (px.tiled_attention,
     qkv(mask_mod=lambda b, h, q, kv: np.ones(7, dtype=bool)),
     ValueError, r"mask_mod returned shape \(7,\).*\(1, 1, 3, 5\)"),
    (px.tiled_attention,
     qkv(mask_mod=lambda b, h, q, kv: np.ones((2, 1, 3, 5), bool)),
     ValueError, r"mask_mod returned shape \(2, 1, 3, 5\).*\(1, 1, 3, 5\)"),
    (px.tiled_attention, qkv(mask_mod=np.greater_equal, is_causal=True),
     ValueError, r"mask_mod .*is_causal=True"),
    (px.tiled_attention,
     qkv(mask_mod=np.greater_equal, attn_mask=z(3, 5, dtype=bool)),
     ValueError, r"mask_mod .*attn_mask of shape \(3, 5\)"),
    (px.engine_causal_attention,
     dict(query=z(5, 4), key=z(3, 4), value=z(3, 4)), ValueError,
     r"query has T = 5 .*\(5, 4\).*S = 3"),
    (px.engine_causal_attention, qkv(key=z(5, 6)), ValueError,
     r"key has shape \(5, 6\).*d_head = 4"),
    (px.engine_causal_attention, qkv(query=z(3, 4, dtype=int)), ValueError,
     r"query .*int64"),
    # softmax
    (px.softmax, dict(x=np.array([1, 2, 3])), ValueError, r"x .*int64"),
    (px.softmax, dict(x=np.array([True])), ValueError, r"x .*bool"),
    (px.softmax, dict(x=[1, 2]), ValueError, r"x .*int64"),
    (px.softmax, dict(x=z(2, 0)), ValueError, r"x .*0-length .*\(2, 0\)"),
    (px.online_softmax, dict(x=np.ones(3, dtype=int), block_size=2),
     ValueError, r"x .*int64"),
    (px.online_softmax, dict(x=z(2, 0), block_size=2), ValueError,
     r"x .*0-length .*\(2, 0\)"),
    (px.online_softmax, dict(x=z(3), block_size=0), ValueError,
     r"block_size .*got 0"),
    # masks
    (px.causal_mask, dict(T=0), ValueError, r"T .*>= 1, got 0"),
    (px.causal_mask, dict(T=-1, S=3), ValueError, r"T .*got -1"),
    (px.causal_mask, dict(T=2.0), ValueError, r"T .*got 2\.0"),
    (px.causal_mask, dict(T=True), ValueError, r"T .*got True"),
    (px.causal_mask, dict(T=3, S=0), ValueError, r"S .*>= 1, got 0"),
    (px.causal_mask, dict(T=3, S="4"), ValueError, r"S .*got '4'"),
    (px.causal_mask, dict(T=2, S=3, align="top-left"), ValueError,
     r"align .*'top-left'"),
    (px.sliding_window_mask, dict(T=4, window=0), ValueError,
     r"window .*got 0"),
    (px.sliding_window_mask, dict(T=4, window=2.5), ValueError,
     r"window .*got 2\.5"),
    (px.sliding_window_mask, dict(T=4, window=2, align="left"), ValueError,
     r"align .*'left'"),
    (px.padding_mask, dict(lengths=[[1, 2]], S=3), ValueError,
     r"lengths .*\(B,\).*\(1, 2\)"),
    (px.padding_mask, dict(lengths=[], S=3), ValueError,
     r"lengths .*\(0,\)"),
    (px.padding_mask, dict(lengths=[1.0, 2.0], S=3), ValueError,
     r"lengths .*float64"),
    (px.padding_mask, dict(lengths=[0, 2], S=3), ValueError,
     r"lengths .*1 \.\. 3, got 0 \.\. 2"),
    (px.padding_mask, dict(lengths=[4, 2], S=3), ValueError,
     r"lengths .*1 \.\. 3, got 2 \.\. 4"),
    (px.padding_mask, dict(lengths=[1, 2], S=0), ValueError, r"S .*got 0"),
    (px.padding_mask, dict(lengths=[1, 2], S=3, side="top"), ValueError,
     r"side .*'top'"),
    # head
    (px.Head, dict(d_model=0, d_head=4), ValueError, r"d_model .*got 0"),
    (px.Head, dict(d_model=4, d_head=0), ValueError, r"d_head .*got 0"),
    (px.Head, dict(d_model=4.0, d_head=2), ValueError, r"d_model .*4\.0"),
]

HEAD_X = [
    (z(3, 5), r"x has shape \(3, 5\).*d_model = 4"),
    (z(4), r"x .*2 dimensions.*\(4,\)"),
    (z(0, 4), r"x .*0-length .*\(0, 4\)"),
    (z(3, 4, dtype=int), r"x .*int64"),
]
for method in ("qkv", "scores", "weights", "forward"):
    ROWS += [(lambda x, m=method: getattr(px.Head(4, 2), m)(x), dict(x=x),
              ValueError, match) for x, match in HEAD_X]

ROWS += [
    # experiments
    (px.random_attention_weights, dict(d_head=0), ValueError,
     r"d_head .*got 0"),
    (px.random_attention_weights, dict(d_head=2.5), ValueError,
     r"d_head .*got 2\.5"),
    (px.random_attention_weights, dict(d_head=4, T=0), ValueError,
     r"T .*got 0"),
    (px.random_attention_weights, dict(d_head=4, weight_std=0.0),
     ValueError, r"weight_std .*> 0, got 0\.0"),
    (px.random_attention_weights, dict(d_head=4, weight_std=-1.0),
     ValueError, r"weight_std .*got -1\.0"),
    (px.max_attention_weight, dict(d_head=8, seeds=[]), ValueError,
     r"seeds.*got 0"),
    (px.dot_product_std, dict(d_head=0), ValueError, r"d_head .*got 0"),
    (px.dot_product_std, dict(d_head=4, n=1), ValueError, r"n .*2.*got 1"),
    (px.dot_product_std, dict(d_head=4, n=0), ValueError, r"n .*got 0"),
    (px.softmax_jacobian, dict(x=z(2, 3)), ValueError, r"x .*\(2, 3\)"),
    (px.softmax_jacobian, dict(x=z(0)), ValueError, r"x .*\(0,\)"),
    (px.softmax_jacobian, dict(x=np.array([0.0, np.inf])), ValueError,
     r"x must be finite.*inf"),
    (px.softmax_jacobian, dict(x=np.array([1, 2])), ValueError,
     r"x .*int64.*\(2,\)"),
    # positions
    (px.sinusoidal_positions, dict(T=0, d_model=4), ValueError,
     r"T .*got 0"),
    (px.sinusoidal_positions, dict(T=3, d_model=5), ValueError,
     r"d_model must be even, got 5"),
    (px.sinusoidal_positions, dict(T=3, d_model=4, theta=0.0), ValueError,
     r"theta .*> 1.*0\.0"),
    (px.sinusoidal_positions, dict(T=3, d_model=4, offset=-1), ValueError,
     r"offset .*0.*got -1"),
    (px.sinusoidal_positions, dict(T=3, d_model=4, offset=1.5), ValueError,
     r"offset .*got 1\.5"),
    (px.add_positions, dict(x=z(3, 5)), ValueError,
     r"x has shape \(3, 5\).*d_model"),
    (px.add_positions, dict(x=z(3, 4, dtype=int)), ValueError, r"x .*int64"),
    (px.add_positions, dict(x=z(4)), ValueError, r"x .*2 dimensions"),
    # norms
    (px.rms_norm, dict(x=z(3, 8), weight=np.ones(4)), ValueError,
     r"weight has shape \(4,\).*= 8"),
    (px.rms_norm, dict(x=z(3, 8, dtype=int), weight=np.ones(8)), ValueError,
     r"x .*int64"),
    (px.rms_norm, dict(x=z(3, 8), weight=np.ones(8), eps=-1.0), ValueError,
     r"eps .*>= 0, got -1\.0"),
    # rope
    (px.rope_frequencies, dict(d_head=7), ValueError,
     r"d_head must be even, got 7"),
    (px.rope_frequencies, dict(d_head=0), ValueError, r"d_head .*got 0"),
    (px.rope_frequencies, dict(d_head=8, theta=1.0), ValueError,
     r"theta .*> 1.*1\.0"),
    (px.rotary_cos_sin, dict(position_ids=np.arange(3), d_head=7),
     ValueError, r"d_head must be even, got 7"),
    (px.rotary_cos_sin, dict(position_ids=z(1, 2, 3, dtype=int), d_head=8),
     ValueError, r"position_ids has shape \(1, 2, 3\)"),
    (px.rotary_cos_sin, dict(position_ids=np.arange(3), d_head=8,
                             dtype=np.int32), ValueError, r"dtype .*int32"),
    (px.apply_rope, dict(x=z(3, 5), positions=np.arange(3)), ValueError,
     r"x has shape \(3, 5\).*even"),
    (px.apply_rope, dict(x=z(3, 4, dtype=int), positions=np.arange(3)),
     ValueError, r"x .*int64"),
    (px.apply_rope, dict(x=z(4, 8), positions=np.arange(5)), ValueError,
     r"positions has shape \(5,\).*\(4,\)"),
    (px.apply_rope, dict(x=z(4, 8), positions=np.int64(3)), ValueError,
     r"positions has shape \(\)"),
    (px.apply_rope, dict(x=z(2, 4, 8), positions=z(3, 4, dtype=int)),
     ValueError, r"positions has shape \(3, 4\).*\(2, 4\)"),
    (px.apply_rope, dict(x=z(4, 8), positions=np.ones(4, dtype=bool)),
     ValueError, r"positions .*bool"),
    (px.apply_rope, dict(x=z(4, 8), positions=np.arange(4), layout="halves"),
     ValueError, r"layout .*'halves'"),
    (px.rotate_half, dict(x=z(3, 5)), ValueError,
     r"x has shape \(3, 5\).*d_head even"),
    (px.apply_rotary_pos_emb,
     dict(q=z(1, 2, 4, 8, dtype=int), k=z(1, 2, 4, 8), cos=z(1, 4, 8),
          sin=z(1, 4, 8)), ValueError, r"q .*int64"),
    (px.apply_rotary_pos_emb,
     dict(q=z(1, 2, 4, 8), k=z(1, 2, 4, 8), cos=z(1, 5, 8), sin=z(1, 5, 8)),
     ValueError, r"cos .*\(1, 1, 5, 8\).*q .*\(1, 2, 4, 8\)"),
    (px.apply_rotary_pos_emb,
     dict(q=z(1, 2, 4, 8), k=z(1, 2, 4, 8), cos=z(1, 4, 8), sin=z(1, 4, 6)),
     ValueError, r"cos \(1, 1, 4, 8\), sin \(1, 1, 4, 6\)"),
    (px.apply_rotary_pos_emb,
     dict(q=z(1, 2, 4, 8), k=z(1, 2, 4, 8), cos=z(1, 4, 8), sin=z(1, 4, 8),
          unsqueeze_dim=5), ValueError, r"unsqueeze_dim = 5 .*\(1, 4, 8\)"),
    (px.interleaved_to_half_permutation, dict(d_head=7), ValueError,
     r"d_head must be even, got 7"),
    (px.permute_qk_proj, dict(weight=z(10, 4), num_heads=4), ValueError,
     r"weight has shape \(10, 4\).*10 rows.*num_heads = 4"),
    (px.permute_qk_proj, dict(weight=z(2, 4, 4), num_heads=1), ValueError,
     r"weight has shape \(2, 4, 4\)"),
    (px.permute_qk_proj, dict(weight=z(6, 4), num_heads=2), ValueError,
     r"d_head \(weight rows / num_heads\) must be even, got 3"),
    (px.permute_qk_proj, dict(weight=z(8, 4, dtype=int), num_heads=2),
     ValueError, r"weight .*int64"),
    # batching
    (px.pad_sequences, dict(sequences=[]), ValueError, r"sequences is empty"),
    (px.pad_sequences, dict(sequences=[[1], []]), ValueError,
     r"sequences\[1\] .*\(0,\)"),
    (px.pad_sequences, dict(sequences=[[1.5]]), ValueError,
     r"sequences\[0\] .*float64"),
    (px.pad_sequences, dict(sequences=[[1, 2, 3]], length=2), ValueError,
     r"length .*3.*got 2"),
    (px.pad_sequences, dict(sequences=[[1]], side="middle"), ValueError,
     r"side .*'middle'"),
    (px.TinyLM, dict(vocab_size=5, d_model=7), ValueError,
     r"d_model must be even, got 7"),
    (px.TinyLM(5), dict(ids=np.array([[0, 5]])), ValueError,
     r"ids must lie in 0 \.\. 4, got 0 \.\. 5"),
    (px.TinyLM(5), dict(ids=np.array([0.5])), ValueError,
     r"ids .*\(\.\.\., T\).*float64"),
    (px.greedy_generate, dict(model=px.TinyLM(5), prompt=[],
                              max_new_tokens=1), ValueError,
     r"prompt .*\(0,\)"),
    (px.greedy_generate, dict(model=px.TinyLM(5), prompt=[1],
                              max_new_tokens=0), ValueError,
     r"max_new_tokens .*got 0"),
]

PLOT_ROWS = [
    ("plot_attention", dict(weights=z(3)), r"weights .*\(3,\)"),
    ("plot_attention", dict(weights=z(2, 3, 3)),
     r"weights .*\(2, 3, 3\)"),
    ("plot_attention", dict(weights=z(3, 3, dtype=int)), r"weights .*int64"),
    ("plot_attention", dict(weights=z(3, 3), tokens=["a", "b"]),
     r"tokens has 2 labels, expected 3"),
    ("plot_attention", dict(weights=z(3, 3), tokens="abc", key_tokens="a"),
     r"key_tokens has 1 labels, expected 3"),
    ("plot_attention", dict(weights=z(2, 3), tokens=["a", "b"]),
     r"weights has shape \(2, 3\).*key_tokens \(length 3\)"),
    ("plot_attention", dict(weights=z(3, 3), mask=z(2, 3, dtype=bool)),
     r"mask has shape \(2, 3\).*\(3, 3\)"),
    ("plot_attention", dict(weights=z(3, 3), mask=z(3, 3)),
     r"mask .*float64"),
    ("plot_attention_grid", dict(weights=z(3, 3)),
     r"weights .*\(3, 3\)"),
    ("plot_attention_grid", dict(weights=z(2, 3, 3), titles=["one"]),
     r"titles has 1 labels, expected 2"),
    ("plot_attention_grid", dict(weights=z(2, 3, 3), tokens=["a"]),
     r"tokens has 1 labels, expected 3"),
    ("plot_gqa_mapping", dict(num_attention_heads=16, num_key_value_heads=3),
     r"num_attention_heads = 16 .*num_key_value_heads = 3"),
    ("plot_gqa_mapping", dict(num_attention_heads=0, num_key_value_heads=1),
     r"num_attention_heads .*got 0"),
    ("plot_gqa_mapping", dict(num_attention_heads=8, num_key_value_heads=2.5),
     r"num_key_value_heads .*got 2\.5"),
]


def _id(row):
    call = row[0]
    return getattr(call, "__qualname__", type(call).__name__)


@pytest.mark.parametrize("call, kwargs, exc, match", ROWS,
                         ids=[f"{_id(r)}-{i}" for i, r in enumerate(ROWS)])
def test_bad_input_raises(call, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        call(**kwargs)


@pytest.mark.parametrize("name, kwargs, match", PLOT_ROWS,
                         ids=[f"{r[0]}-{i}" for i, r in enumerate(PLOT_ROWS)])
def test_plotting_bad_input_raises(name, kwargs, match):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    try:
        with pytest.raises(ValueError, match=match):
            getattr(px, name)(**kwargs)
    finally:
        plt.close("all")


# ------------------------------------ the layer, the cache and the decoder
# Each row: an id, a call(layer, x, cache), the exception, a regex naming
# the argument and its numbers. After every refused call the cache must be
# exactly as it was.

B, T, PAST, D_MODEL = 2, 3, 2, 6
SIZES = dict(hidden_size=D_MODEL, num_attention_heads=4, num_key_value_heads=2,
             head_dim=4)


def layer_setup():
    """A layer, a float64 input, and a cache holding PAST positions."""
    layer = px.random_attention(D_MODEL, 4, 2, 4, seed=0, qk_norm=True,
                                theta=100.0)
    x = np.random.default_rng(1).standard_normal((B, T, D_MODEL))
    cache = px.KVCache(1, B, 2, 4, max_seq_len=8)
    layer(x[:, :PAST], past_key_value=cache)
    return layer, x, cache


def mask(S, pad=0):
    m = np.ones((B, S), int)
    m[1, :pad] = 0  # row 1 left-padded
    return m


def good_sd():
    return px.random_attention(D_MODEL, 4, 2, 4, bias=True).state_dict("attn.")


def from_sd(state_dict, **kw):
    return px.MultiHeadAttention.from_state_dict(state_dict, **SIZES, **kw)


def decoder():
    return px.TinyDecoder(seed=0)


LAYER_ROWS = [
    ("mask too short",
     lambda l, x, c: l(x, attention_mask=mask(PAST + T - 1),
                       past_key_value=c),
     ValueError, r"attention_mask .*\(2, 4\).*\(2, 5\)"),
    ("mask without the cached part",
     lambda l, x, c: l(x, attention_mask=mask(T), past_key_value=c),
     ValueError, r"attention_mask .*\(2, 3\).*\(2, 5\)"),
    ("mask 4-D of the wrong size",
     lambda l, x, c: l(x, attention_mask=np.ones((B, 1, T, 4), bool),
                       past_key_value=c),
     ValueError, r"attention_mask .*\(2, 1, 3, 4\).*\(2, 1, 3, 5\)"),
    ("mask of 2s",
     lambda l, x, c: l(x, attention_mask=2 * mask(PAST + T),
                       past_key_value=c),
     ValueError, r"attention_mask .*\[2\]"),
    ("mask of floats",
     lambda l, x, c: l(x, attention_mask=0.5 * mask(PAST + T),
                       past_key_value=c),
     ValueError, r"attention_mask .*float64.*\[0.5\]"),
    ("positions restart under a cache",
     lambda l, x, c: l(x, position_ids=np.arange(T), past_key_value=c),
     ValueError, r"position_ids .*row 0.*\[0, 1, 2\].*\[2, 3, 4\]"),
    ("positions ignore the padding",
     lambda l, x, c: l(x, attention_mask=mask(PAST + T, pad=1),
                       position_ids=np.arange(PAST, PAST + T),
                       past_key_value=c),
     ValueError, r"position_ids .*row 1.*\[2, 3, 4\].*\[1, 2, 3\]"),
    ("positions not consecutive",
     lambda l, x, c: l(x, position_ids=np.array([2, 3, 5]),
                       past_key_value=c),
     ValueError, r"position_ids .*\[2, 3, 5\].*\[2, 3, 4\]"),
    ("float positions",
     lambda l, x, c: l(x, position_ids=np.arange(2.0, 5.0),
                       past_key_value=c),
     ValueError, r"position_ids .*\(3,\).*float64"),
    ("is_causal as a string",
     lambda l, x, c: l(x, is_causal="False", past_key_value=c),
     TypeError, r"is_causal .*'False'"),
    ("return_weights as 1",
     lambda l, x, c: l(x, return_weights=1, past_key_value=c),
     TypeError, r"return_weights .*int 1"),
    ("flag passed positionally", lambda l, x, c: l(x, False),
     TypeError, r"positional argument"),
    ("float32 input, float64 weights",
     lambda l, x, c: l(x.astype(np.float32), past_key_value=c),
     ValueError, r"hidden_states .*float32.*q_proj.weight .*float64"),
    ("float32 rms_norm weight",
     lambda l, x, c: px.rms_norm(x, np.ones(D_MODEL, np.float32)),
     ValueError, r"weight .*float32.*x .*float64"),
    ("mixed-dtype weights",
     lambda l, x, c: px.MultiHeadAttention(
         D_MODEL, 4, 2, 4, q_proj=l.q_proj, k_proj=l.k_proj, v_proj=l.v_proj,
         o_proj=l.o_proj.astype(np.float32)),
     ValueError, r"o_proj .*float32.*q_proj .*float64"),
    ("unknown state-dict key",
     lambda l, x, c: from_sd(good_sd() | {
         "attn.o_proj.bias": np.zeros(D_MODEL),
         "attn.rotary.inv_freq": np.ones(2)}, prefix="attn."),
     ValueError, r"\['attn.o_proj.bias', 'attn.rotary.inv_freq'\]"),
    ("missing bias",
     lambda l, x, c: from_sd({k: v for k, v in good_sd().items()
                              if k != "attn.v_proj.bias"}, prefix="attn."),
     ValueError, r"v_proj_bias.*\['q_proj_bias', 'k_proj_bias'\]"),
    ("bias of the wrong size",
     lambda l, x, c: from_sd(good_sd() | {"attn.k_proj.bias": np.zeros(16)},
                             prefix="attn."),
     ValueError, r"k_proj.bias .*\(16,\).*\(8,\)"),
    ("q_norm without theta", lambda l, x, c: from_sd(l.state_dict()),
     ValueError, r"q_norm.*theta"),
    ("cache overflow",
     lambda l, x, c: l(np.concatenate([x, x, x], 1), past_key_value=c),
     ValueError, r"\b9\b.*layer 0.*max_seq_len.*2 \+ 9 = 11 > 8"),
    ("decoder mask of the wrong length",
     lambda l, x, c: decoder()(np.ones((B, 3), int),
                               attention_mask=np.ones((B, 2), int)),
     ValueError, r"attention_mask .*\(2, 2\).*\(2, 3\)"),
    ("generate with an all-padding row",
     lambda l, x, c: decoder().generate(
         np.ones((B, 3), int), 2,
         attention_mask=np.array([[1, 1, 1], [0, 0, 0]])),
     ValueError, r"attention_mask .*\(2, 3\).*\(2, 3\)"),
    ("generate with use_cache='yes'",
     lambda l, x, c: decoder().generate([1, 2], 2, use_cache="yes"),
     TypeError, r"use_cache .*'yes'"),
    ("eos out of the vocabulary",
     lambda l, x, c: decoder().generate([1, 2], 2, eos_token_id=64),
     ValueError, r"eos_token_id .*63.*64"),
]


@pytest.mark.parametrize("call, error, pattern",
                         [r[1:] for r in LAYER_ROWS],
                         ids=[r[0] for r in LAYER_ROWS])
def test_layer_refuses_and_nothing_changed(call, error, pattern):
    layer, x, cache = layer_setup()
    keys = cache.key_cache[0].copy()
    values = cache.value_cache[0].copy()
    with pytest.raises(error, match=pattern):
        call(layer, x, cache)
    assert cache.get_seq_length() == PAST
    np.testing.assert_array_equal(cache.key_cache[0], keys)
    np.testing.assert_array_equal(cache.value_cache[0], values)
