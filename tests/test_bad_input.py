"""Bad input, for every public function of the package, in one table per part.

Each row: the call, its arguments, the exception it must raise and a regex
that names the argument and the numbers it got (not a whole sentence).
The checks themselves live in ``pyxis_nb/_checks.py``.
"""

import re

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb import _checks


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
    (px.engine.engine_causal_attention,
     dict(query=z(5, 4), key=z(3, 4), value=z(3, 4)), ValueError,
     r"query has T = 5 .*\(5, 4\).*S = 3"),
    (px.engine.engine_causal_attention, qkv(key=z(5, 6)), ValueError,
     r"key has shape \(5, 6\).*d_head = 4"),
    (px.engine.engine_causal_attention, qkv(query=z(3, 4, dtype=int)), ValueError,
     r"query .*int64"),
    # softmax
    (px.softmax, dict(x=np.array([1, 2, 3])), ValueError, r"x .*int64"),
    (px.softmax, dict(x=np.array([True])), ValueError, r"x .*bool"),
    (px.softmax, dict(x=[1, 2]), ValueError, r"x .*int64"),
    (px.softmax, dict(x=z(2, 0)), ValueError, r"x .*0-length .*\(2, 0\)"),
    (px.tiled.online_softmax, dict(x=np.ones(3, dtype=int), block_size=2),
     ValueError, r"x .*int64"),
    (px.tiled.online_softmax, dict(x=z(2, 0), block_size=2), ValueError,
     r"x .*0-length .*\(2, 0\)"),
    (px.tiled.online_softmax, dict(x=z(3), block_size=0), ValueError,
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
    (px.Head, dict(hidden_size=0, head_dim=4), ValueError,
     r"hidden_size .*got 0"),
    (px.Head, dict(hidden_size=4, head_dim=0), ValueError,
     r"head_dim .*got 0"),
    (px.Head, dict(hidden_size=4.0, head_dim=2), ValueError,
     r"hidden_size .*4\.0"),
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
    (px.experiments.random_attention_weights, dict(head_dim=0), ValueError,
     r"head_dim .*got 0"),
    (px.experiments.random_attention_weights, dict(head_dim=2.5), ValueError,
     r"head_dim .*got 2\.5"),
    (px.experiments.random_attention_weights, dict(head_dim=4, T=0), ValueError,
     r"T .*got 0"),
    (px.experiments.random_attention_weights, dict(head_dim=4, weight_std=0.0),
     ValueError, r"weight_std .*> 0, got 0\.0"),
    (px.experiments.random_attention_weights, dict(head_dim=4, weight_std=-1.0),
     ValueError, r"weight_std .*got -1\.0"),
    (px.experiments.max_attention_weight, dict(head_dim=8, seeds=[]), ValueError,
     r"seeds.*got 0"),
    (px.experiments.dot_product_std, dict(head_dim=0), ValueError, r"head_dim .*got 0"),
    (px.experiments.dot_product_std, dict(head_dim=4, n=1), ValueError, r"n .*2.*got 1"),
    (px.experiments.dot_product_std, dict(head_dim=4, n=0), ValueError, r"n .*got 0"),
    (px.experiments.softmax_jacobian, dict(x=z(2, 3)), ValueError, r"x .*\(2, 3\)"),
    (px.experiments.softmax_jacobian, dict(x=z(0)), ValueError, r"x .*\(0,\)"),
    (px.experiments.softmax_jacobian, dict(x=np.array([0.0, np.inf])), ValueError,
     r"x must be finite.*inf"),
    (px.experiments.softmax_jacobian, dict(x=np.array([1, 2])), ValueError,
     r"x .*int64.*\(2,\)"),
    # positions
    (px.positions.sinusoidal_positions, dict(T=0, hidden_size=4), ValueError,
     r"T .*got 0"),
    (px.positions.sinusoidal_positions, dict(T=3, hidden_size=5), ValueError,
     r"hidden_size must be even, got 5"),
    (px.positions.sinusoidal_positions, dict(T=3, hidden_size=4, theta=0.0), ValueError,
     r"theta .*> 1.*0\.0"),
    (px.positions.sinusoidal_positions, dict(T=3, hidden_size=4, offset=-1), ValueError,
     r"offset .*0.*got -1"),
    (px.positions.sinusoidal_positions, dict(T=3, hidden_size=4, offset=1.5), ValueError,
     r"offset .*got 1\.5"),
    (px.positions.add_positions, dict(x=z(3, 5)), ValueError,
     r"x has shape \(3, 5\).*d_model"),
    (px.positions.add_positions, dict(x=z(3, 4, dtype=int)), ValueError, r"x .*int64"),
    (px.positions.add_positions, dict(x=z(4)), ValueError, r"x .*2 dimensions"),
    # norms
    (px.rms_norm, dict(x=z(3, 8), weight=np.ones(4)), ValueError,
     r"weight has shape \(4,\).*= 8"),
    (px.rms_norm, dict(x=z(3, 8, dtype=int), weight=np.ones(8)), ValueError,
     r"x .*int64"),
    (px.rms_norm, dict(x=z(3, 8), weight=np.ones(8), eps=-1.0), ValueError,
     r"eps .*>= 0, got -1\.0"),
    # rope
    (px.rope_frequencies, dict(head_dim=7), ValueError,
     r"head_dim must be even, got 7"),
    (px.rope_frequencies, dict(head_dim=0), ValueError, r"head_dim .*got 0"),
    (px.rope_frequencies, dict(head_dim=8, rope_theta=1.0), ValueError,
     r"theta .*> 1.*1\.0"),
    (px.rotary_cos_sin, dict(position_ids=np.arange(3), head_dim=7),
     ValueError, r"head_dim must be even, got 7"),
    (px.rotary_cos_sin, dict(position_ids=z(1, 2, 3, dtype=int), head_dim=8),
     ValueError, r"position_ids has shape \(1, 2, 3\)"),
    (px.rotary_cos_sin, dict(position_ids=np.arange(3), head_dim=8,
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
    (px.rope.interleaved_to_half_permutation, dict(head_dim=7), ValueError,
     r"head_dim must be even, got 7"),
    (px.permute_qk_proj, dict(weight=z(10, 4), head_dim=4), ValueError,
     r"weight has shape \(10, 4\).*head_dim = 4"),
    (px.permute_qk_proj, dict(weight=z(2, 4, 4), head_dim=2), ValueError,
     r"weight has shape \(2, 4, 4\)"),
    (px.permute_qk_proj, dict(weight=z(6, 4), head_dim=3), ValueError,
     r"head_dim must be even, got 3"),
    (px.permute_qk_proj, dict(weight=z(8, 4, dtype=int), head_dim=4),
     ValueError, r"weight .*int64"),
    # rope: scaling (compute_rope_parameters) and tables from inv_freq
    (px.rope.compute_rope_parameters, dict(rope_parameters="yarn",
                                           head_dim=64), ValueError,
     r"rope_parameters must be a dict .*str 'yarn'"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"full_attention": {"rope_type": "default"}},
        head_dim=64), ValueError,
     r"rope_parameters is nested by layer type .*'full_attention'"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "longrope", "rope_theta": 1e4},
        head_dim=64), ValueError,
     r"rope_parameters\['rope_type'\] must be one of .*'longrope'"),
    (px.rope.compute_yarn_parameters, dict(
        rope_parameters={"rope_type": "linear", "rope_theta": 1e4,
                         "factor": 2.0}, head_dim=64), ValueError,
     r"rope_parameters\['rope_type'\] is 'linear', expected 'yarn'"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "linear", "rope_theta": 1e4},
        head_dim=64), ValueError,
     r"rope_parameters has unknown keys \[\], missing keys \['factor'\]"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                         "factor": 2.0}, head_dim=64), ValueError,
     r"rope_parameters has unknown keys \['factor'\]"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "default"}, head_dim=64), ValueError,
     r"missing keys \['rope_theta'\]"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "default", "rope_theta": 1.0},
        head_dim=64), ValueError, r"rope_theta'\] must be .*> 1.*1\.0"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                         "partial_rotary_factor": 1.5}, head_dim=64),
     ValueError, r"partial_rotary_factor'\] .*\(0, 1\], got 1\.5"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "default", "rope_theta": 1e4},
        head_dim=0), ValueError, r"head_dim .*got 0"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                         "partial_rotary_factor": 0.5}, head_dim=14),
     ValueError, r"int\(head_dim \* partial_rotary_factor\) must be even, "
     r"got 7"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "linear", "rope_theta": 1e4,
                         "factor": 0.5}, head_dim=64), ValueError,
     r"factor'\] must be a number >= 1, got 0\.5"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "dynamic", "rope_theta": 1e4,
                         "factor": 2.0}, head_dim=64), ValueError,
     r"max_position_embeddings is None: dynamic"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "dynamic", "rope_theta": 1e4,
                         "factor": 2.0}, head_dim=2,
        max_position_embeddings=64), ValueError,
     r"must be >= 4 for dynamic RoPE .*got 2"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "dynamic", "rope_theta": 1e4,
                         "factor": 2.0}, head_dim=64,
        max_position_embeddings=64, seq_len=0), ValueError,
     r"seq_len .*>= 1, got 0"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "yarn", "rope_theta": 1e4,
                         "factor": None,
                         "original_max_position_embeddings": 4096},
        head_dim=64), ValueError,
     r"max_position_embeddings is None: YaRN with .*factor'\] None"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "yarn", "rope_theta": 1e4,
                         "factor": 4.0,
                         "original_max_position_embeddings": 4096.0},
        head_dim=64), ValueError,
     r"original_max_position_embeddings'\] must be an integer .*4096\.0"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "yarn", "rope_theta": 1e4,
                         "factor": 4.0, "beta_fast": 1.0, "beta_slow": 2.0,
                         "original_max_position_embeddings": 4096},
        head_dim=64), ValueError,
     r"beta_fast'\] = 1\.0 must be >= .*beta_slow'\] = 2\.0"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "yarn", "rope_theta": 1e4,
                         "factor": 4.0, "beta_slow": -1.0,
                         "original_max_position_embeddings": 4096},
        head_dim=64), ValueError, r"beta_slow'\] must be .*> 0, got -1\.0"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "yarn", "rope_theta": 1e4,
                         "factor": 4.0, "attention_factor": 0.0,
                         "original_max_position_embeddings": 4096},
        head_dim=64), ValueError,
     r"attention_factor'\] must be .*> 0, got 0\.0"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "yarn", "rope_theta": 1e4,
                         "factor": 4.0, "mscale": -1.0,
                         "original_max_position_embeddings": 4096},
        head_dim=64), ValueError, r"mscale'\] must be .*>= 0, got -1\.0"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "yarn", "rope_theta": 1e4,
                         "factor": 4.0, "truncate": "no",
                         "original_max_position_embeddings": 4096},
        head_dim=64), TypeError, r"truncate'\] must be True or False.*'no'"),
    (px.rope.compute_rope_parameters, dict(
        rope_parameters={"rope_type": "llama3", "rope_theta": 5e5,
                         "factor": 8.0, "low_freq_factor": 4.0,
                         "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192},
        head_dim=64), ValueError,
     r"high_freq_factor'\] = 4\.0 must be > .*low_freq_factor'\] = 4\.0"),
    (px.rope.yarn_get_mscale, dict(scale=0.0), ValueError,
     r"scale must be a number > 0, got 0\.0"),
    (px.rope.yarn_get_mscale, dict(scale=2.0, mscale=-1.0), ValueError,
     r"mscale must be a number >= 0, got -1\.0"),
    (px.rotary_cos_sin, dict(position_ids=np.arange(3), head_dim=8,
                             inv_freq=np.ones(3)), ValueError,
     r"inv_freq has shape \(3,\), expected \(head_dim/2,\) = \(4,\)"),
    (px.rotary_cos_sin, dict(position_ids=np.arange(3), head_dim=8,
                             inv_freq=np.ones(4, dtype=int)), ValueError,
     r"inv_freq .*int64"),
    (px.rotary_cos_sin, dict(position_ids=np.arange(3), head_dim=8,
                             inv_freq=np.ones(4), rope_theta=1e4),
     ValueError, r"rope_theta or inv_freq, not both: .*10000\.0 .*\(4,\)"),
    (px.rotary_cos_sin, dict(position_ids=np.arange(3), head_dim=8,
                             attention_scaling=0.0), ValueError,
     r"attention_scaling must be a number > 0, got 0\.0"),
    # linear attention
    (px.linear_attention.recurrent_gated_delta_rule,
     dict(query=z(1, 3, 8), key=z(1, 3, 8), value=z(1, 3, 1, 4)),
     ValueError, r"query must have 4 dimensions, got shape \(1, 3, 8\)"),
    (px.linear_attention.recurrent_gated_delta_rule,
     dict(query=z(1, 0, 1, 8), key=z(1, 0, 1, 8), value=z(1, 0, 1, 4)),
     ValueError, r"query has shape \(1, 0, 1, 8\), expected .*T, H_k, d_k "
     r">= 1"),
    (px.linear_attention.recurrent_gated_delta_rule,
     dict(query=z(1, 3, 2, 8), key=z(1, 3, 2, 4), value=z(1, 3, 2, 4)),
     ValueError, r"key has shape \(1, 3, 2, 4\), expected .*\(1, 3, 2, 8\)"),
    (px.linear_attention.chunk_gated_delta_rule,
     dict(query=z(1, 3, 2, 8), key=z(1, 3, 2, 8), value=z(1, 3, 3, 4)),
     ValueError, r"value has shape \(1, 3, 3, 4\), .*multiple of H_k = 2"),
    (px.linear_attention.chunk_gated_delta_rule,
     dict(query=z(1, 3, 2, 8), key=z(1, 3, 2, 8), value=z(1, 4, 2, 4)),
     ValueError, r"value has shape \(1, 4, 2, 4\), .*\(B, T\) = \(1, 3\)"),
    (px.linear_attention.recurrent_gated_delta_rule,
     dict(query=z(1, 3, 1, 8), key=z(1, 3, 1, 8), value=z(1, 3, 2, 4),
          g=z(1, 3, 1)), ValueError,
     r"g has shape \(1, 3, 1\), expected \(B, T, H\) = \(1, 3, 2\)"),
    (px.linear_attention.recurrent_gated_delta_rule,
     dict(query=z(1, 3, 1, 8), key=z(1, 3, 1, 8), value=z(1, 3, 2, 4),
          g=np.full((1, 3, 2), 0.5)), ValueError,
     r"g is the log of a decay and must be <= 0, got a maximum of 0\.5"),
    (px.linear_attention.recurrent_gated_delta_rule,
     dict(query=z(1, 3, 1, 8), key=z(1, 3, 1, 8), value=z(1, 3, 2, 4),
          beta=np.full((1, 3, 2), np.nan)), ValueError,
     r"beta must be finite"),
    (px.linear_attention.recurrent_gated_delta_rule,
     dict(query=z(1, 3, 1, 8), key=z(1, 3, 1, 8), value=z(1, 3, 2, 4),
          initial_state=z(1, 2, 4, 8)), ValueError,
     r"initial_state has shape \(1, 2, 4, 8\), expected .* = \(1, 2, 8, 4\)"),
    (px.linear_attention.recurrent_gated_delta_rule,
     dict(query=z(1, 3, 1, 8, dtype=np.float32), key=z(1, 3, 1, 8),
          value=z(1, 3, 2, 4)), ValueError,
     r"key has dtype float64 but query has dtype float32"),
    (px.linear_attention.recurrent_gated_delta_rule,
     dict(query=z(1, 3, 1, 8, dtype=int), key=z(1, 3, 1, 8),
          value=z(1, 3, 2, 4)), ValueError, r"query .*int64"),
    (px.linear_attention.recurrent_gated_delta_rule,
     dict(query=z(1, 3, 1, 8), key=z(1, 3, 1, 8), value=z(1, 3, 2, 4),
          output_final_state="yes"), TypeError,
     r"output_final_state must be True or False, got str 'yes'"),
    (px.linear_attention.chunk_gated_delta_rule,
     dict(query=z(1, 3, 1, 8), key=z(1, 3, 1, 8), value=z(1, 3, 2, 4),
          use_qk_l2norm_in_kernel=1), TypeError,
     r"use_qk_l2norm_in_kernel must be True or False, got int 1"),
    (px.linear_attention.chunk_gated_delta_rule,
     dict(query=z(1, 3, 1, 8), key=z(1, 3, 1, 8), value=z(1, 3, 2, 4),
          delta_rule=None), TypeError, r"delta_rule must be True or False"),
    (px.linear_attention.chunk_gated_delta_rule,
     dict(query=z(1, 3, 1, 8), key=z(1, 3, 1, 8), value=z(1, 3, 2, 4),
          scale=0.0), ValueError, r"scale must be a number > 0, got 0\.0"),
    (px.linear_attention.chunk_gated_delta_rule,
     dict(query=z(1, 3, 1, 8), key=z(1, 3, 1, 8), value=z(1, 3, 2, 4),
          chunk_size=0), ValueError, r"chunk_size .*>= 1, got 0"),
    (px.linear_attention.l2norm, dict(x=np.ones(3, dtype=int)), ValueError,
     r"x .*int64"),
    (px.linear_attention.l2norm, dict(x=z(3), eps=-1.0), ValueError,
     r"eps must be a number >= 0, got -1\.0"),
    (px.memory.linear_attention_state_bytes,
     dict(config={"linear_num_key_heads": 16}), ValueError,
     r"config has no \['linear_num_value_heads', .*"),
    (px.memory.linear_attention_state_bytes, dict(config=[1, 2]), ValueError,
     r"config must be a dict or a transformers config \(its to_dict\(\)\), got list"),
    (px.memory.linear_attention_state_bytes,
     dict(config=dict(linear_num_key_heads=16, linear_num_value_heads=32,
                      linear_key_head_dim=128, linear_value_head_dim=128,
                      linear_conv_kernel_dim=4), dtype_bytes=0),
     ValueError, r"dtype_bytes .*got 0"),
    # the attention table (memory)
    (px.memory.attention_recipe, dict(config="gpt-oss"), ValueError,
     r"config must be a dict or a transformers config \(its to_dict\(\)\), got str"),
    (px.memory.attention_recipe, dict(config={"num_attention_heads": 8}),
     ValueError, r"config has no \['num_hidden_layers'\]"),
    (px.memory.attention_recipe, dict(config={
        "num_hidden_layers": 2, "layer_types": ["full_attention"]}),
     ValueError, r"layer_types has 1 entries, expected num_hidden_layers "
     r"= 2"),
    (px.memory.attention_recipe, dict(config={
        "num_hidden_layers": 1, "layer_types": ["chunked_attention"]}),
     ValueError, r"an entry of config's layer_types must be one of .*"
     r"'chunked_attention'"),
    (px.memory.cache_bytes, dict(config={
        "num_hidden_layers": 1, "layer_types": ["sliding_attention"],
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4},
        seq_len=3), ValueError, r"config has no \['sliding_window'\]"),
    (px.memory.cache_bytes, dict(config={
        "num_hidden_layers": 1, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 0}, seq_len=3), ValueError,
     r"config\['head_dim'\] .*>= 1, got 0"),
    (px.memory.cache_bytes, dict(config={
        "num_hidden_layers": 1, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 4}, seq_len=-1), ValueError,
     r"seq_len .*got -1"),
    (px.memory.layer_cache_bytes, dict(config={
        "num_hidden_layers": 1, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 4}, layer_type="full",
        seq_len=3), ValueError, r"layer_type must be one of .*'full'"),
    (px.memory.attention_table, dict(configs=["gpt-oss"]), ValueError,
     r"configs must be a dict of model name -> config, got list"),
    # batching
    (px.batching.pad_sequences, dict(sequences=[]), ValueError, r"sequences is empty"),
    (px.batching.pad_sequences, dict(sequences=[[1], []]), ValueError,
     r"sequences\[1\] .*\(0,\)"),
    (px.batching.pad_sequences, dict(sequences=[[1.5]]), ValueError,
     r"sequences\[0\] .*float64"),
    (px.batching.pad_sequences, dict(sequences=[[1, 2, 3]], length=2), ValueError,
     r"length .*3.*got 2"),
    (px.batching.pad_sequences, dict(sequences=[[1]], side="middle"), ValueError,
     r"side .*'middle'"),
    (px.batching.TinyLM, dict(vocab_size=5, hidden_size=7), ValueError,
     r"hidden_size must be even, got 7"),
    (px.batching.TinyLM(5), dict(input_ids=np.array([[0, 5]])), ValueError,
     r"input_ids must lie in 0 \.\. 4, got 0 \.\. 5"),
    (px.batching.TinyLM(5), dict(input_ids=np.array([0.5])), ValueError,
     r"input_ids .*\(\.\.\., T\).*float64"),
]

# ------------------------------------ multihead, the cache: moved here from
# test_multihead.py and test_kv_cache.py (the overflow lives in LAYER_ROWS)

def mha(H=4, H_kv=2, head_dim=3, hidden_size=5, **kw):
    """The weights of a seeded layer, as constructor keywords."""
    layer = px.random_attention(hidden_size, H, H_kv, head_dim, seed=0)
    weights = {n: getattr(layer, n)
               for n in ("q_proj", "k_proj", "v_proj", "o_proj")}
    return px.MultiHeadAttention(hidden_size, H, H_kv, head_dim,
                                 **(weights | kw))


def mha_sd(drop=(), prefix="", **extra):
    """A layer's state dict (as saved), some keys dropped or replaced."""
    sd = px.random_attention(6, 4, 2, 4, seed=0).state_dict()
    return {k: v for k, v in sd.items() if k not in drop} | extra


def from_mha_sd(state_dict, **kw):
    return px.MultiHeadAttention.from_state_dict(
        state_dict, hidden_size=6, num_attention_heads=4,
        num_key_value_heads=2, head_dim=4, **kw)


def call_layer(x, **kw):
    return px.random_attention(5, 4, 2, 3, seed=0)(x, **kw)


def call_layer_1(x, **kw):
    """``call_layer``'s layer as layer 1 of a model: entry 1 of a cache."""
    layer = px.random_attention(5, 4, 2, 3, seed=0)
    layer.layer_idx = 1
    return layer(x, **kw)


def update(k=z(2, 3, 1, 4), v=z(2, 3, 1, 4), layer_idx=0, **cache):
    """``update`` of an empty cache (2 layers, B 2, H_kv 3, d_head 4)."""
    sizes = dict(num_hidden_layers=2, batch_size=2, num_key_value_heads=3,
                 head_dim=4, max_cache_len=8)
    return px.KVCache(**sizes | cache).update(k, v, layer_idx)


ROWS += [
    (px.random_attention, dict(hidden_size=8, num_attention_heads=6,
                               num_key_value_heads=4, head_dim=2),
     ValueError, r"num_attention_heads = 6 .*num_key_value_heads = 4"),
    (px.random_attention, dict(hidden_size=8, num_attention_heads=2,
                               num_key_value_heads=2, head_dim=0),
     ValueError, r"head_dim .*got 0"),
    (px.random_attention, dict(hidden_size=5, num_attention_heads=4,
                               num_key_value_heads=2, head_dim=3, rope_theta=1e4),
     ValueError, r"head_dim must be even, got 3"),
    (px.split_heads, dict(x=z(1, 2, 8), head_dim=3), ValueError,
     r"x has shape \(1, 2, 8\).*head_dim = 3"),
    (px.split_heads, dict(x=z(2, 8), head_dim=2), ValueError,
     r"x has shape \(2, 8\)"),
    (px.merge_heads, dict(x=z(1, 2, 8)), ValueError, r"x .*4 .*\(1, 2, 8\)"),
    (px.repeat_kv, dict(hidden_states=z(2, 3), n_rep=2), ValueError,
     r"hidden_states .*4 .*\(2, 3\)"),
    (px.repeat_kv, dict(hidden_states=z(1, 1, 1, 1), n_rep=0), ValueError,
     r"n_rep .*got 0"),
    (px.multihead.kv_head_for, dict(q_head=16, num_attention_heads=16,
                          num_key_value_heads=8), ValueError,
     r"q_head .*15, got 16"),
    (px.multihead.kv_head_for, dict(q_head=1.0, num_attention_heads=16,
                          num_key_value_heads=8), ValueError,
     r"q_head .*got 1\.0"),
    # weights and checkpoints
    (px.MultiHeadAttention.from_state_dict,
     dict(state_dict={"q_proj.weight": z(2048, 2048, dtype=np.float32),
                      "k_proj.weight": z(2048, 2048, dtype=np.float32),
                      "v_proj.weight": z(1024, 2048, dtype=np.float32),
                      "o_proj.weight": z(2048, 2048, dtype=np.float32)},
          **px.QWEN3_1_7B.attention_config()), ValueError,
     r"k_proj.weight has shape \(2048, 2048\).*\(1024, 2048\)"),
    (from_mha_sd, dict(state_dict=mha_sd(drop=["v_proj.weight"])), ValueError,
     r"missing keys \['v_proj.weight'\]"),
    (from_mha_sd, dict(state_dict=mha_sd(), prefix="model.layers.0."),
     ValueError, r"missing keys \['model.layers.0.q_proj.weight'"),
    (from_mha_sd, dict(state_dict=mha_sd(**{"k_norm.weight": np.ones(4)}),
                       rope_theta=None), ValueError,
     r"\('q_norm', 'k_norm'\) .*\['k_norm'\]"),
    (from_mha_sd, dict(state_dict=mha_sd(**{"k_norm.weight": np.ones(4),
                                            "q_norm.weight": np.ones(4)})),
     ValueError, r"theta needs .*q_norm/k_norm"),
    (mha, dict(o_proj=z(5, 12, dtype=np.int64)), ValueError,
     r"o_proj.weight .*int64"),
    (mha, dict(q_proj=z(12, 5, dtype=np.float32)), ValueError,
     r"k_proj .*float64.*q_proj .*float32"),
    (mha, dict(q_norm=np.ones(3)), ValueError,
     r"\('q_norm', 'k_norm'\) .*\['q_norm'\]"),
    (mha, dict(q_norm=np.ones(3), k_norm=np.ones(2)), ValueError,
     r"k_norm.weight has shape \(2,\).*\(3,\)"),
    (mha, dict(q_norm=np.ones(3, np.float32), k_norm=np.ones(3)), ValueError,
     r"q_norm .*float32.*q_proj .*float64"),
    (mha, dict(q_norm=np.ones(3, np.int64), k_norm=np.ones(3)), ValueError,
     r"q_norm.weight .*int64"),
    (mha, dict(rms_norm_eps=-1), ValueError, r"rms_norm_eps .*>= 0, got -1"),
    *[(lambda rope_theta: mha(H=4, head_dim=4, hidden_size=6,
                              rope_theta=rope_theta),
       dict(rope_theta=bad), ValueError,
       rf"rope_theta .*> 1.*got {re.escape(repr(bad))}")
      for bad in (1.0, 0.5, np.inf, "1e6", True)],
    # the layer's input
    (call_layer, dict(x=z(2, 4, 6)), ValueError,
     r"hidden_states has shape \(2, 4, 6\).*d_model = 5"),
    (call_layer, dict(x=z(4, 5)), ValueError, r"hidden_states .*\(4, 5\)"),
    (call_layer, dict(x=z(1, 4, 5, dtype=np.int64)), ValueError,
     r"hidden_states .*int64"),
    (call_layer, dict(x=z(1, 0, 5)), ValueError,
     r"hidden_states .*0-length .*\(1, 0, 5\)"),
    (call_layer, dict(x=z(2, 3, 5),
                      cache=px.KVCache(1, 2, 4, 3, max_cache_len=8)),
     ValueError, r"key_states has shape \(2, 2, 3, 3\).*\(2, 4, T, 3\)"),
    (call_layer_1, dict(x=z(2, 3, 5),
                        cache=px.KVCache(1, 2, 2, 3, max_cache_len=8)),
     ValueError, r"layer_idx .*0, got 1"),
    (call_layer, dict(x=z(2, 3, 5), cache={}), TypeError,
     r"cache must be a px.kv_cache.Cache .*got dict"),
    # the cache
    (update, dict(k=z(2, 2, 1, 4)), ValueError,
     r"key_states has shape \(2, 2, 1, 4\).*\(2, 3, T, 4\)"),
    (update, dict(v=z(2, 3, 1, 5)), ValueError,
     r"value_states has shape \(2, 3, 1, 5\).*\(2, 3, T, 4\)"),
    (update, dict(v=z(1, 3, 1, 4)), ValueError,
     r"value_states has shape \(1, 3, 1, 4\)"),
    (update, dict(k=z(2, 3, 4)), ValueError, r"key_states .*4 .*\(2, 3, 4\)"),
    (update, dict(k=z(2, 3, 0, 4), v=z(2, 3, 0, 4)), ValueError,
     r"key_states has shape \(2, 3, 0, 4\).*T >= 1"),
    (update, dict(k=z(2, 3, 2, 4)), ValueError,
     r"value_states has shape \(2, 3, 1, 4\).*\(2, 3, T, 4\)"),
    (update, dict(k=z(2, 3, 1, 4, dtype=np.float32)), ValueError,
     r"key_states .*float32.*key_cache .*float64"),
    (update, dict(v=z(2, 3, 1, 4, dtype=np.int32)), ValueError,
     r"value_states .*int32"),
    (update, dict(k=z(2, 3, 1, 4, dtype=np.float32),
                  v=z(2, 3, 1, 4), dtype=np.float32), ValueError,
     r"value_states .*float64.*key_cache .*float32"),
    (update, dict(v=z(2, 3, 1, 4, dtype=np.float32), dtype=np.float32),
     ValueError, r"key_states .*float64.*key_cache .*float32"),
    *[(update, dict(layer_idx=bad), ValueError, rf"layer_idx .*1, got {bad}")
      for bad in (2, -1)],
    *[(update, dict(layer_idx=bad), ValueError, rf"layer_idx .*got {bad}")
      for bad in (1.0, True)],
    (px.KVCache(2, 2, 3, 4, 8).get_seq_length, dict(layer_idx=5), ValueError,
     r"layer_idx .*1, got 5"),
    *[(px.KVCache(1, 1, 1, 1, 4).crop, dict(max_length=bad), ValueError,
       rf"max_length .*got {bad}") for bad in (1.5, True, None)],
    (px.KVCache, dict(num_hidden_layers=1, batch_size=1, num_key_value_heads=1,
                      head_dim=1, max_cache_len=0), ValueError,
     r"max_cache_len .*got 0"),
    (px.KVCache, dict(num_hidden_layers=1, batch_size=1, num_key_value_heads=1,
                      head_dim=1, max_cache_len=4, dtype=np.int32), ValueError,
     r"dtype .*int32"),
    *[(px.kv_cache.SlidingWindowCache, dict(num_hidden_layers=1) | bad,
       ValueError, pattern) for bad, pattern in [
        (dict(window=0), r"sliding_window .*got 0"),
        (dict(window=2, sink_tokens=-1), r"sink_tokens .*got -1"),
        (dict(num_hidden_layers=0, window=2), r"num_hidden_layers .*got 0"),
    ]],
]


ROWS += [
    # memory (moved from test_memory.py)
    (px.memory.kv_cache_bytes, dict(num_hidden_layers=28, num_key_value_heads=0,
                             head_dim=128, seq_len=1), ValueError,
     r"num_key_value_heads .*got 0"),
    (px.memory.kv_cache_bytes, dict(num_hidden_layers=28, num_key_value_heads=8,
                             head_dim=128.0, seq_len=1), ValueError,
     r"head_dim .*got 128\.0"),
    (px.memory.kv_cache_bytes, dict(num_hidden_layers=28, num_key_value_heads=8,
                             head_dim=128, seq_len=-1), ValueError,
     r"seq_len .*0 .*got -1"),
    (px.memory.attention_parameter_count,
     dict(hidden_size=2048, num_attention_heads=16, num_key_value_heads=None,
          head_dim=128), ValueError, r"num_key_value_heads .*got None"),
    (px.memory.score_matrix_bytes, dict(seq_len=10, num_attention_heads=0),
     ValueError, r"num_attention_heads .*got 0"),
    # the one non-empty check, for a collection (widgets' views)
    (_checks.check_nonempty, dict(name="views", x={}, what="view"),
     ValueError, r"views is empty"),
    # norms: mixed dtypes raise, as in torch (moved from test_norms.py)
    (px.rms_norm, dict(x=z(2, 8, dtype=np.float32), weight=np.ones(8)),
     ValueError, r"weight .*float64.*x .*float32"),
    # evaluation: bits per byte of the tokens scored
    (px.evaluation.bits_per_byte, dict(loss=-0.5, labels=[0, 1], token_bytes=[1, 2]),
     ValueError, r"loss must be a number >= 0, got -0\.5"),
    (px.evaluation.bits_per_byte, dict(loss=np.nan, labels=[0, 1], token_bytes=[1, 2]),
     ValueError, r"loss must be a number >= 0, got nan"),
    (px.evaluation.bits_per_byte, dict(loss=1.0, labels=[0.0, 1.0], token_bytes=[1, 2]),
     ValueError, r"labels must be a non-empty integer array of shape "
     r"\(B, T\) or \(T,\), got shape \(2,\) and dtype float64"),
    (px.evaluation.bits_per_byte, dict(loss=1.0, labels=[0, 3], token_bytes=[1, 2, 1]),
     ValueError, r"labels must lie in 0 \.\. 2, got 0 \.\. 3 "
     r"\(vocab_size = 3\)"),
    (px.evaluation.bits_per_byte, dict(loss=1.0, labels=[0], token_bytes=[[1, 2]]),
     ValueError, r"token_bytes .*shape \(V,\), got shape \(1, 2\)"),
    (px.evaluation.bits_per_byte, dict(loss=1.0, labels=[0], token_bytes=[1, -2]),
     ValueError, r"token_bytes needs counts >= 0: got -2 bytes"),
    (px.evaluation.bits_per_byte, dict(loss=1.0, labels=[[0, 0]], token_bytes=[0, 2]),
     ValueError, r"labels needs at least one byte of text: its 2 tokens "
     r"stand for 0 bytes"),
]


# attention_only: the trainable model's door (moved from test_attention_only)
def _aot(**kw):
    config = dict(vocab_size=5, hidden_size=8, num_hidden_layers=1,
                  num_attention_heads=2, max_position_embeddings=4)
    return px.attention_only.AttentionOnlyTransformer(**{**config, **kw})


def _aot_loss(ids, labels):
    return _aot().loss_and_grads(np.array(ids), np.array(labels))


def _aot_load(change):
    model = _aot(hidden_size=8)
    state = model.state_dict()
    change(state)
    model.load_state_dict(state)


ATTENTION_ONLY_ROWS = [
    (_aot, dict(hidden_size=10, num_attention_heads=4), ValueError,
     r"hidden_size = 10 .*num_attention_heads = 4"),
    (_aot, dict(scale=0.0), ValueError, r"scale .*got 0\.0"),
    *[(_aot, dict(scale=bad), ValueError, rf"scale .*got {bad}")
      for bad in (0, -1.0, np.inf, True)],
    (_aot, dict(num_hidden_layers=0), ValueError,
     r"num_hidden_layers .*got 0"),
    (_aot, dict(dtype=np.int64), ValueError, r"dtype .*int64"),
    (_aot_loss, dict(ids=[[0, 5]], labels=[[1, 1]]), ValueError,
     r"input_ids .*0 \.\. 4, got 0 \.\. 5"),
    (_aot_loss, dict(ids=[[0, -1]], labels=[[1, 1]]), ValueError,
     r"input_ids .*0 \.\. 4, got -1 \.\. 0"),
    (_aot_loss, dict(ids=[[0, 1, 2, 3, 4]], labels=[[1] * 5]), ValueError,
     r"input_ids has shape \(1, 5\).*max_position_embeddings = 4"),
    (_aot_loss, dict(ids=[[0.0, 1.0]], labels=[[1, 1]]), ValueError,
     r"input_ids .*float64"),
    (_aot_loss, dict(ids=[[0, 1]], labels=[[1, 1, 1]]), ValueError,
     r"labels has shape \(1, 3\), expected \(1, 2\)"),
    (_aot_loss, dict(ids=[[0, 1]], labels=[[1, 7]]), ValueError,
     r"labels .*0 \.\. 4 .*-100.*got 1 \.\. 7"),
    (_aot_loss, dict(ids=[[0, 1]], labels=[[-100, -100]]), ValueError,
     r"labels needs a position that is not -100"),
    (_aot_load, dict(change=lambda d: d.pop("lm_head.weight")), ValueError,
     r"missing keys \['lm_head.weight'\]"),
    (_aot_load, dict(change=lambda d: d.update(extra=np.zeros(1))),
     ValueError, r"unknown keys \['extra'\]"),
    (_aot_load, dict(change=lambda d: d.update(
        {"lm_head.weight": np.zeros((5, 4))})), ValueError,
     r"lm_head.weight'\] has shape \(5, 4\), expected \(5, 8\)"),
    (_aot_load, dict(change=lambda d: d.update(
        {"lm_head.weight": np.zeros((5, 8), int)})), ValueError,
     r"lm_head.weight.*int64"),
]


@pytest.mark.parametrize("call, kwargs, exc, match", ATTENTION_ONLY_ROWS)
def test_attention_only_bad_input_raises(call, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        call(**kwargs)


PLOT_ROWS = [
    ("plot_max_weight", dict(ds=[8, 32, 64], columns={"a": [0.3, 0.5]}),
     r"columns\['a'\] has shape \(2,\), expected \(3,\)"),
    ("plot_std_growth", dict(ds=[0, 4], raw=[1.0, 2.0], after=[1.0, 1.0]),
     r"ds .*got 0"),
    ("plot_attention", dict(weights=z(3)), r"weights .*\(3,\)"),
    ("plot_attention", dict(weights=z(2, 3, 3)),
     r"weights .*\(2, 3, 3\)"),
    ("plot_attention", dict(weights=z(3, 3, dtype=int)), r"weights .*int64"),
    ("plot_attention", dict(weights=z(3, 3), tokens=["a", "b"]),
     r"tokens needs 3 labels .*got 2"),
    ("plot_attention", dict(weights=z(3, 3), tokens="abc", key_tokens="a"),
     r"key_tokens needs 3 labels .*got 1"),
    ("plot_attention", dict(weights=z(2, 3), tokens=["a", "b"]),
     r"key_tokens needs \(length 3\).*weights has shape \(2, 3\)"),
    ("plot_attention", dict(weights=z(3, 3), mask=z(2, 3, dtype=bool)),
     r"mask has shape \(2, 3\).*\(3, 3\)"),
    ("plot_attention", dict(weights=z(3, 3), mask=z(3, 3)),
     r"mask .*float64"),
    ("plot_attention_grid", dict(weights=z(3, 3)),
     r"weights .*\(3, 3\)"),
    ("plot_attention_grid", dict(weights=z(2, 3, 3), titles=["one"]),
     r"titles needs 2 labels .*got 1"),
    ("plot_attention_grid", dict(weights=z(2, 3, 3), tokens=["a"]),
     r"tokens needs 3 labels .*got 1"),
    ("plot_gqa_mapping", dict(num_attention_heads=16, num_key_value_heads=3),
     r"num_attention_heads = 16 .*num_key_value_heads = 3"),
    ("plot_gqa_mapping", dict(num_attention_heads=0, num_key_value_heads=1),
     r"num_attention_heads .*got 0"),
    ("plot_gqa_mapping", dict(num_attention_heads=8, num_key_value_heads=2.5),
     r"num_key_value_heads .*got 2\.5"),
    ("rope_rotation_frames", dict(key_positions=[], query_positions=[0]),
     r"key_positions is empty"),
    ("rope_rotation_frames", dict(key_positions=[0], query_positions=()),
     r"query_positions is empty"),
]


def _id(row):
    call = row[0]
    return getattr(call, "__qualname__", type(call).__name__)


@pytest.mark.parametrize("call, kwargs, exc, match", ROWS,
                         ids=[f"{_id(r)}-{i}" for i, r in enumerate(ROWS)])
def test_bad_input_raises(call, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        call(**kwargs)


def _named(name):
    """A function by name: at the top level, or in the module that has it."""
    for where in (px, px.plotting, px.widgets, px.circuits):
        if hasattr(where, name):
            return getattr(where, name)
    raise AttributeError(name)


@pytest.mark.parametrize("name, kwargs, match", PLOT_ROWS,
                         ids=[f"{r[0]}-{i}" for i, r in enumerate(PLOT_ROWS)])
def test_plotting_bad_input_raises(name, kwargs, match):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    try:
        with pytest.raises(ValueError, match=match):
            _named(name)(**kwargs)
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
                                rope_theta=100.0)
    x = np.random.default_rng(1).standard_normal((B, T, D_MODEL))
    cache = px.KVCache(1, B, 2, 4, max_cache_len=8)
    layer(x[:, :PAST], cache=cache)
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
                       cache=c),
     ValueError, r"attention_mask .*\(2, 4\).*\(2, 5\)"),
    ("mask without the cached part",
     lambda l, x, c: l(x, attention_mask=mask(T), cache=c),
     ValueError, r"attention_mask .*\(2, 3\).*\(2, 5\)"),
    ("mask 4-D of the wrong size",
     lambda l, x, c: l(x, attention_mask=np.ones((B, 1, T, 4), bool),
                       cache=c),
     ValueError, r"attention_mask .*\(2, 1, 3, 4\).*\(2, 1, 3, 5\)"),
    ("mask of 2s",
     lambda l, x, c: l(x, attention_mask=2 * mask(PAST + T),
                       cache=c),
     ValueError, r"attention_mask .*\[2\]"),
    ("mask of floats",
     lambda l, x, c: l(x, attention_mask=0.5 * mask(PAST + T),
                       cache=c),
     ValueError, r"attention_mask .*float64.*\[0.5\]"),
    ("positions of the wrong length",
     lambda l, x, c: l(x, position_ids=np.arange(T + 1), cache=c),
     ValueError, r"position_ids .*\(4,\).*\(2, 3\)"),
    ("negative positions",
     lambda l, x, c: l(x, position_ids=np.array([-1, 0, 1]),
                       cache=c),
     ValueError, r"position_ids .*-1 \.\. 1.*>= 0"),
    ("float positions",
     lambda l, x, c: l(x, position_ids=np.arange(2.0, 5.0),
                       cache=c),
     ValueError, r"position_ids .*\(3,\).*float64"),
    ("is_causal as a string",
     lambda l, x, c: l(x, is_causal="False", cache=c),
     TypeError, r"is_causal .*'False'"),
    ("output_attentions as 1",
     lambda l, x, c: l(x, output_attentions=1, cache=c),
     TypeError, r"output_attentions .*int 1"),
    ("flag passed positionally", lambda l, x, c: l(x, False),
     TypeError, r"positional argument"),
    ("float32 input, float64 weights",
     lambda l, x, c: l(x.astype(np.float32), cache=c),
     ValueError, r"hidden_states .*float32.*o_proj.weight .*float64"),
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
     lambda l, x, c: l(np.concatenate([x, x, x], 1), cache=c),
     ValueError, r"\b9\b.*holds 2.*max_cache_len.*2 \+ 9 = 11 > 8"),
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


# ----------------------------------------- Qwen3ForCausalLM and checkpoints
# Each row: an id, a change to a good tiny checkpoint folder (bf16, two
# layers, tests/checkpoints.py) or a call on its model, the exception, a
# regex naming what is wrong. ``from_pretrained`` must refuse the folder.

def _edit_config(folder, **changes):
    import json
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | changes))


#: A RoPE scaling transformers 5 runs and this package does not: dynamic
#: NTK, whose frequencies follow the sequence length.
DYNAMIC = {"rope_type": "dynamic", "factor": 4.0}

#: A RoPE scaling both run (loaded, not refused: test_model_hf_reference).
YARN = {"rope_type": "yarn", "factor": 4.0,
        "original_max_position_embeddings": 64}


def _shipped_config(folder, **changes):
    """The shipped model's config.json, changed, in place of the tiny one."""
    import json
    config = json.loads((px.SHAKESPEARE_CHECKPOINT / "config.json")
                        .read_text())
    (folder / "config.json").write_text(json.dumps(config | changes))


def _rewrite_weights(folder, change):
    from checkpoints import tiny_model, write_safetensors
    state = tiny_model().state_dict()
    change(state)
    write_safetensors(folder / "model.safetensors", state)


def _cut(folder, n):
    file = folder / "model.safetensors"
    file.write_bytes(file.read_bytes()[:-n])


def _shard(folder):
    from checkpoints import tiny_model, write_checkpoint
    (folder / "model.safetensors").unlink()
    write_checkpoint(folder, tiny_model(), shards=2)
    (folder / "model-00002-of-00002.safetensors").unlink()


def _tiny():
    from checkpoints import tiny_model
    return tiny_model()


def _rope_config(model, rope=(), **rope_parameters):
    """The model's config with ``rope_parameters`` (theta: the config's);
    ``rope`` None: a list in their place."""
    import dataclasses
    if rope is None:
        return dataclasses.replace(model.config, rope_parameters=["yarn"])
    return dataclasses.replace(model.config, rope_parameters={
        "rope_theta": model.config.rope_theta, **rope_parameters})


def _written():
    import tempfile
    from checkpoints import write_checkpoint
    return write_checkpoint(tempfile.mkdtemp())


CHECKPOINT_ROWS = [
    ("no such folder", lambda f: f / "nowhere", FileNotFoundError,
     r"path '.*nowhere' is not a checkpoint folder"),
    ("no weights file",
     lambda f: (f / "model.safetensors").unlink() or f, FileNotFoundError,
     r"no weights in .*model.safetensors or model.safetensors.index.json, "
     r"found \['config.json', 'generation_config.json'\]"),
    ("a shard missing", lambda f: _shard(f) or f, FileNotFoundError,
     r"index.json lists model-00002-of-00002.safetensors"),
    ("config.json not JSON",
     lambda f: (f / "config.json").write_text("{model_type: qwen3") and f,
     ValueError, r"config.json is not a readable JSON file"),
    ("another model type", lambda f: _edit_config(f, model_type="llama") or f,
     ValueError, r"model_type is 'llama', expected 'qwen3'"),
    ("dynamic rope scaling (transformers 5 form)",
     lambda f: _edit_config(f, rope_parameters={
         "rope_type": "dynamic", "factor": 4.0, "rope_theta": 1e6}) or f,
     ValueError, r"rope_parameters rope type is 'dynamic', which is not "
     r"implemented: .*sequence length"),
    ("dynamic rope scaling (Qwen3's form)",
     lambda f: _edit_config(f, rope_parameters=None, rope_theta=1e6,
                            rope_scaling={"type": "dynamic",
                                          "factor": 2.0}) or f,
     ValueError, r"rope_scaling rope type is 'dynamic', which is not"),
    ("an unknown rope type",
     lambda f: _edit_config(f, rope_parameters={
         "rope_type": "longrope", "rope_theta": 1e4}) or f, ValueError,
     r"rope_parameters rope type is 'longrope', expected 'default' or "
     r"'linear' or 'yarn' or 'llama3'"),
    # transformers 5 merges a legacy rope_scaling over rope_parameters and
    # runs it: the shipped config with one key added must not load
    ("the shipped config plus a dynamic rope_scaling",
     lambda f: _shipped_config(f, rope_scaling=DYNAMIC) or f, ValueError,
     r"rope_scaling rope type is 'dynamic', which is not implemented"),
    ("a rope_scaling-only config (dynamic)",
     lambda f: _edit_config(f, rope_parameters=None, rope_theta=1e4,
                            rope_scaling=DYNAMIC) or f,
     ValueError, r"rope_scaling rope type is 'dynamic', which is not"),
    ("YaRN with a partial rotary factor",
     lambda f: _edit_config(f, rope_parameters={
         **YARN, "rope_theta": 1e4, "partial_rotary_factor": 0.5}) or f,
     ValueError, r"rope_parameters keys beyond those of yarn RoPE is "
     r"\['partial_rotary_factor'\]"),
    ("llama3 without its frequency factors",
     lambda f: _edit_config(f, rope_parameters={
         "rope_type": "llama3", "factor": 8.0, "rope_theta": 1e4,
         "original_max_position_embeddings": 16}) or f, ValueError,
     r"rope_parameters has unknown keys \[\], missing keys "
     r"\['low_freq_factor', 'high_freq_factor'\]"),
    ("YaRN with beta_fast below beta_slow",
     lambda f: _edit_config(f, rope_parameters={
         **YARN, "rope_theta": 1e4, "beta_fast": 1, "beta_slow": 32}) or f,
     ValueError, r"rope_parameters\['beta_fast'\] = 1 must be >= "),
    ("a default rope_scaling with a scaling factor",
     lambda f: _edit_config(f, rope_scaling={"rope_type": "default",
                                             "factor": 4.0}) or f,
     ValueError, r"rope_scaling keys beyond rope_theta is \['factor'\]"),
    ("partial rotary factor",
     lambda f: _edit_config(f, rope_parameters={
         "rope_type": "default", "rope_theta": 1e4,
         "partial_rotary_factor": 0.5}) or f,
     ValueError, r"rope_parameters keys beyond rope_theta is "
     r"\['partial_rotary_factor'\]"),
    ("dynamic nested by layer type",
     lambda f: _edit_config(f, rope_parameters={"full_attention": {
         **DYNAMIC, "rope_theta": 1e4}}) or f,
     ValueError, r"rope_parameters\['full_attention'\] rope type is "
     r"'dynamic', which is not implemented"),
    ("partial rotary factor at the top level",
     lambda f: _edit_config(f, partial_rotary_factor=0.5) or f, ValueError,
     r"rope_parameters keys beyond rope_theta is "
     r"\['partial_rotary_factor'\]"),
    ("sliding window", lambda f: _edit_config(
        f, use_sliding_window=True, sliding_window=8) or f,
     ValueError, r"use_sliding_window is True, expected False"),
    ("sliding layer types", lambda f: _edit_config(
        f, layer_types=["full_attention", "sliding_attention"]) or f,
     ValueError, r"layer_types is \['full_attention', 'sliding_attention'\]"),
    ("attention bias", lambda f: _edit_config(f, attention_bias=True) or f,
     ValueError, r"attention_bias is True, expected False"),
    ("another activation", lambda f: _edit_config(f, hidden_act="gelu") or f,
     ValueError, r"hidden_act is 'gelu', expected 'silu'"),
    ("truncated safetensors", lambda f: _cut(f, 10) or f, ValueError,
     r"model.safetensors is not a valid safetensors file.*incomplete"),
    ("corrupt safetensors",
     lambda f: (f / "model.safetensors").write_bytes(b"\x10" + b"x" * 99)
     and f, ValueError, r"model.safetensors is not a valid safetensors"),
    ("a tensor of the wrong shape",
     lambda f: _rewrite_weights(f, lambda s: s.update({
         "model.layers.1.mlp.up_proj.weight": np.zeros((25, 16))})) or f,
     ValueError, r"model.layers.1.mlp.up_proj.weight has shape \(25, 16\) "
     r"in model.safetensors, expected \(24, 16\)"),
    ("a missing key",
     lambda f: _rewrite_weights(f, lambda s: s.pop("model.norm.weight"))
     or f, ValueError,
     r"missing keys \['model.norm.weight'\], unexpected keys \[\]"),
    ("an unexpected key",
     lambda f: _rewrite_weights(f, lambda s: s.update({
         "model.layers.0.self_attn.o_proj.bias": np.zeros(16)})) or f,
     ValueError, r"missing keys \[\], unexpected keys "
     r"\['model.layers.0.self_attn.o_proj.bias'\]"),
    ("untied without lm_head",
     lambda f: _edit_config(f, tie_word_embeddings=False) or f, ValueError,
     r"missing keys \['lm_head.weight'\]"),
    ("more layers than the file has",
     lambda f: _edit_config(f, num_hidden_layers=3) or f, ValueError,
     r"missing keys \['model.layers.2.input_layernorm.weight', .*\] and 5 "
     r"more, unexpected keys \[\]"),
]


@pytest.mark.parametrize("edit, error, pattern",
                         [r[1:] for r in CHECKPOINT_ROWS],
                         ids=[r[0] for r in CHECKPOINT_ROWS])
def test_bad_checkpoint_is_refused(tmp_path, edit, error, pattern):
    from checkpoints import write_checkpoint
    folder = edit(write_checkpoint(tmp_path / "ckpt"))
    with pytest.raises(error, match=pattern):
        px.Qwen3ForCausalLM.from_pretrained(folder)


# The other side of the RoPE rows: configs with the default RoPE, written in
# each form transformers 5 reads, load with the base transformers reads.
ROPE_FORMS = [
    ("rope_parameters", {}),
    ("top-level rope_theta", dict(rope_parameters=None, rope_theta=1e6)),
    ("rope_scaling over rope_parameters",
     dict(rope_scaling={"rope_type": "default"}, rope_theta=2e4)),
    ("nested by layer type", dict(rope_parameters={"full_attention": {
        "rope_type": "default", "rope_theta": 5e4}})),
    ("legacy type key", dict(rope_parameters=None,
                             rope_scaling={"type": "default",
                                           "rope_theta": 3e4})),
]


@pytest.mark.parametrize("changes", [r[1] for r in ROPE_FORMS],
                         ids=[r[0] for r in ROPE_FORMS])
def test_rope_theta_is_read_as_transformers_reads_it(tmp_path, changes):
    transformers = pytest.importorskip("transformers")
    from checkpoints import write_checkpoint
    folder = write_checkpoint(tmp_path / "ckpt")
    _edit_config(folder, **changes)
    from pyxis_nb.loading import read_hf_config
    config, _ = read_hf_config(folder / "config.json")
    ref = transformers.AutoConfig.from_pretrained(folder).rope_parameters
    ref = ref.get("full_attention", ref)  # nested by layer type, or not
    assert ref["rope_type"] == "default"
    assert config.rope_theta == ref["rope_theta"]


# ... and the scalings the models run, in each form transformers 5 reads:
# read_hf_config keeps what transformers' config holds (less the legacy
# "type" key, which transformers leaves beside rope_type).
SCALED_ROPE_FORMS = [
    ("YaRN in rope_parameters", dict(rope_parameters={
        **YARN, "rope_theta": 1e6})),
    ("YaRN as a legacy rope_scaling over the top-level theta",
     dict(rope_parameters=None, rope_theta=2e4,
          rope_scaling={"type": "yarn", "factor": 2.0})),
    ("YaRN with the original context at the top level (ignored)",
     dict(rope_parameters={"rope_type": "yarn", "factor": 2.0,
                           "rope_theta": 1e4},
          original_max_position_embeddings=16)),
    ("llama3 nested by layer type", dict(rope_parameters={
        "full_attention": {"rope_type": "llama3", "factor": 8.0,
                           "rope_theta": 5e5, "low_freq_factor": 1.0,
                           "high_freq_factor": 4.0}})),
    ("linear", dict(rope_parameters={"rope_type": "linear", "factor": 2.0,
                                     "rope_theta": 1e4})),
]


@pytest.mark.parametrize("changes", [r[1] for r in SCALED_ROPE_FORMS],
                         ids=[r[0] for r in SCALED_ROPE_FORMS])
def test_rope_scaling_is_read_as_transformers_reads_it(tmp_path, changes):
    transformers = pytest.importorskip("transformers")
    from checkpoints import write_checkpoint
    folder = write_checkpoint(tmp_path / "ckpt")
    _edit_config(folder, **changes)
    model = px.Qwen3ForCausalLM.from_pretrained(folder)
    ref = transformers.AutoConfig.from_pretrained(folder).rope_parameters
    ref = dict(ref.get("full_attention", ref))  # nested by layer type
    ref.pop("type", None)
    assert model.config.rope_parameters == ref
    assert model.config.rope_theta == ref["rope_theta"]


MODEL_ROWS = [
    ("an id outside the vocabulary", lambda m: m(np.array([[1, 64]])),
     ValueError, r"input_ids must lie in 0 \.\. 63, got 1 \.\. 64"),
    ("a negative id", lambda m: m.generate([-1, 3], 2), ValueError,
     r"input_ids must lie in 0 \.\. 63, got -1 \.\. 3"),
    ("float ids", lambda m: m(np.array([1.0, 2.0])), ValueError,
     r"input_ids .*\(2,\).*float64"),
    ("no ids", lambda m: m.generate(np.zeros((1, 0), int), 2), ValueError,
     r"input_ids .*\(1, 0\)"),
    ("a head mask of the wrong shape",
     lambda m: m([1, 2], head_mask=np.ones((2, 3))), ValueError,
     r"head_mask has shape \(2, 3\), expected \(L, H\) = \(2, 4\)"),
    ("a head mask of ints", lambda m: m([1, 2], head_mask=np.ones((2, 4), int)),
     ValueError, r"head_mask .*int64"),
    ("interleaved_rope as a string",
     lambda m: m([1], interleaved_rope="yes"), TypeError,
     r"interleaved_rope must be True or False"),
    ("output_attentions as 1", lambda m: m([1], output_attentions=1),
     TypeError, r"output_attentions must be True or False"),
    ("use_cache as a string", lambda m: m([1], use_cache="yes"), TypeError,
     r"use_cache .*'yes'"),
    ("temperature 0",
     lambda m: m.generate([1], 2, do_sample=True, temperature=0),
     ValueError, r"temperature .*> 0, got 0"),
    ("top_k 0", lambda m: m.generate([1], 2, do_sample=True, top_k=0),
     ValueError, r"top_k .*>= 1, got 0"),
    ("top_p 1.5", lambda m: m.generate([1], 2, do_sample=True, top_p=1.5),
     ValueError, r"top_p .*\(0, 1\], got 1.5"),
    ("top_p 0", lambda m: m.generate([1], 2, do_sample=True, top_p=0.0),
     ValueError, r"top_p .*> 0, got 0.0"),
    ("a negative seed", lambda m: m.generate([1], 2, do_sample=True, seed=-1),
     ValueError, r"seed .*0 <= seed, got -1"),
    ("do_sample as 1", lambda m: m.generate([1], 2, do_sample=1), TypeError,
     r"do_sample .*int 1"),
    ("an eos list with one outside",
     lambda m: m.generate([1], 2, eos_token_id=[3, 70]), ValueError,
     r"eos_token_id .*63, got 70"),
    ("from_pretrained with dtype int32",
     lambda m: px.Qwen3ForCausalLM.from_pretrained(_written(), dtype=np.int32),
     ValueError, r"dtype .*int32"),
    ("from_config with dtype int",
     lambda m: px.Qwen3ForCausalLM.from_config(m.config, dtype=int),
     ValueError, r"dtype .*int64"),
    ("from_config with dynamic rope_parameters",
     lambda m: px.Qwen3ForCausalLM.from_config(_rope_config(
         m, rope_type="dynamic", factor=2.0)), ValueError,
     r"config.rope_parameters\['rope_type'\] is 'dynamic', which is not "
     r"implemented: .*sequence length"),
    ("from_config with YaRN of another rope_theta",
     lambda m: px.Qwen3ForCausalLM.from_config(_rope_config(
         m, **YARN, rope_theta=5e5)), ValueError,
     r"config.rope_parameters\['rope_theta'\] is 500000.0, expected "
     r"config.rope_theta = 10000.0"),
    ("from_config with a partial rotary factor",
     lambda m: px.Qwen3ForCausalLM.from_config(_rope_config(
         m, rope_type="linear", factor=2.0, partial_rotary_factor=0.5)),
     ValueError, r"partial_rotary_factor'\] is 0.5, expected 1.0"),
    ("from_config with rope_parameters a list",
     lambda m: px.Qwen3ForCausalLM.from_config(_rope_config(m, None)),
     ValueError, r"config.rope_parameters must be a dict or None, got "
     r"list"),
    ("state_dict with a wrong shape",
     lambda m: px.Qwen3ForCausalLM.from_state_dict(
         m.state_dict() | {"model.norm.weight": np.ones(3, np.float32)},
         m.config), ValueError,
     r"model.norm.weight has shape \(3,\) in state_dict, expected \(16,\)"),
    ("state_dict of two dtypes",
     lambda m: px.Qwen3ForCausalLM.from_state_dict(
         m.state_dict() | {"model.norm.weight": np.ones(16)}, m.config),
     ValueError, r"model.norm.weight has dtype float64 but "
     r"model.embed_tokens.weight has dtype float32"),
    ("tied but a different lm_head",
     lambda m: px.Qwen3ForCausalLM.from_state_dict(
         m.state_dict() | {"lm_head.weight": np.zeros((64, 16), np.float32)},
         m.config, tie_word_embeddings=True), ValueError,
     r"lm_head.weight needs to equal model.embed_tokens.weight"),
    ("no tokenizer.json", lambda m: px.load_tokenizer("/nowhere"),
     FileNotFoundError, r"path '/nowhere' has no tokenizer.json"),
    ("no such GGUF file", lambda m: px.LlamaForCausalLM.from_pretrained(
        "/nowhere", gguf_file="m.gguf"), FileNotFoundError,
     r"path '/nowhere/m.gguf' is not a file: expected a GGUF file"),
    ("SmolLM2 not fetched", lambda m: px.load_tokenizer(
        "/nowhere", gguf_file=px.SMOLLM2_GGUF), FileNotFoundError,
     r"SmolLM2-135M-Instruct.Q4_1.gguf' is not a file.*make smollm2"),

]


@pytest.mark.parametrize("call, error, pattern",
                         [r[1:] for r in MODEL_ROWS],
                         ids=[r[0] for r in MODEL_ROWS])
def test_model_refuses(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call(_tiny())


# ------------------------------------------ circuits and the model view
CIRCUIT_ROWS = [
    ("next_token_loss", dict(logits=z(2, 9, 50),
                             input_ids=np.zeros((2, 8), int)),
     r"input_ids has shape \(2, 8\), expected \(B, T\) = \(2, 9\)"),
    ("next_token_loss", dict(logits=z(2, 9, 50),
                             input_ids=np.zeros((2, 9), int),
                             reduction="sum"),
     r"reduction must be one of \('mean', 'none'\), got 'sum'"),
    ("sink_score", dict(weights=z(2, 4, 4)), r"weights must have 4 dim"),
    ("head_pair_distance", dict(weights=z(4, 4, dtype=int)),
     r"weights .*int64"),
    ("model_view", dict(tokens=["a", "b"], weights=z(1, 2, 3, 3)),
     r"weights has shape \(1, 2, 3, 3\).*T = len\(tokens\) = 2"),
    ("model_view", dict(tokens=["a", "b"], weights=z(1, 2, 2, 2),
                        open_weights=z(1, 1, 2, 2)),
     r"open_weights has shape \(1, 1, 2, 2\).*\(1, 2, 2, 2\)"),
]


@pytest.mark.parametrize("name, kwargs, match", CIRCUIT_ROWS,
                         ids=[f"{r[0]}-{i}" for i, r in
                              enumerate(CIRCUIT_ROWS)])
def test_circuits_bad_input_raises(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        _named(name)(**kwargs)


# Qwen3-Next's linear-attention layer: its loader and its call.
GDN_CONFIG = dict(hidden_size=8, linear_num_key_heads=1,
                  linear_num_value_heads=2, linear_key_head_dim=4,
                  linear_value_head_dim=2, linear_conv_kernel_dim=4,
                  rms_norm_eps=1e-6, hidden_act="silu",
                  layer_types=["linear_attention", "full_attention"])


def _gdn(**changes):
    """A small layer's state_dict and config, with changes to the config."""
    gdn = px.linear_attention.Qwen3NextGatedDeltaNet.from_config(GDN_CONFIG)
    return gdn.state_dict(), {**GDN_CONFIG, **changes}


def _load(state_dict, config, **kw):
    return px.linear_attention.Qwen3NextGatedDeltaNet.from_state_dict(
        state_dict, config, **kw)


GDN_ROWS = [
    ("a config that is a string", lambda g: _load(_gdn()[0], "qwen3_next"),
     ValueError,
     r"config must be a dict or a transformers config \(its to_dict\(\)\), got str"),
    ("a config without the linear sizes",
     lambda g: _load(_gdn()[0], {"hidden_size": 8}), ValueError,
     r"config has unknown keys \[\], missing keys \['linear_num_key_heads'"),
    ("value heads not a multiple of key heads",
     lambda g: _load(*_gdn(linear_num_key_heads=3, linear_num_value_heads=4)),
     ValueError, r"linear_num_value_heads = 4 .*linear_num_key_heads = 3"),
    ("a gelu convolution", lambda g: _load(*_gdn(hidden_act="gelu")),
     ValueError, r"hidden_act is 'gelu', expected 'silu'"),
    ("layer_idx of a full-attention layer",
     lambda g: _load(*_gdn(), layer_idx=1), ValueError,
     r"layer_idx must index a 'linear_attention' layer .*0 \.\. 1.*got 1"),
    ("layer_idx past the layers", lambda g: _load(*_gdn(), layer_idx=2),
     ValueError, r"layer_idx .*got 2"),
    ("a state_dict without A_log",
     lambda g: _load({k: v for k, v in _gdn()[0].items() if k != "A_log"},
                     GDN_CONFIG), ValueError,
     r"state_dict does not fit config: missing keys \['A_log'\]"),
    ("a state_dict of the wrong shape",
     lambda g: _load(_gdn()[0] | {"norm.weight": z(3)}, GDN_CONFIG),
     ValueError, r"norm.weight has shape \(3,\) in state_dict, expected "
     r"\(2,\) from config"),
    ("a state_dict of two dtypes",
     lambda g: _load(_gdn()[0] | {"norm.weight": np.ones(2, np.float32)},
                     GDN_CONFIG), ValueError,
     r"norm.weight has dtype float32 but .* has dtype float64"),
    ("a state_dict of ints",
     lambda g: _load(_gdn()[0] | {"A_log": np.ones(2, int)}, GDN_CONFIG),
     ValueError, r"A_log .*int64"),
    ("chunk_size 0", lambda g: _load(*_gdn(), chunk_size=0), ValueError,
     r"chunk_size .*got 0"),
    ("hidden_states of the wrong width", lambda g: g(z(1, 3, 6)),
     ValueError, r"hidden_states has shape \(1, 3, 6\), expected .*"
     r"d_model = 8"),
    ("hidden_states without tokens", lambda g: g(z(1, 0, 8)), ValueError,
     r"hidden_states has shape \(1, 0, 8\), expected .*T >= 1"),
    ("hidden_states in float32", lambda g: g(z(1, 3, 8, dtype=np.float32)),
     ValueError, r"hidden_states has dtype float32 but weights has dtype "
     r"float64"),
    ("a mask of the wrong shape",
     lambda g: g(z(2, 3, 8), attention_mask=np.ones((2, 4))), ValueError,
     r"attention_mask has shape \(2, 4\), expected \(B, T\) = \(2, 3\)"),
    ("a mask of 2s", lambda g: g(z(1, 3, 8), attention_mask=[[1, 2, 1]]),
     ValueError, r"attention_mask must be boolean or hold only 0 and 1"),
    ("a cache that is a dict", lambda g: g(z(1, 3, 8), cache={}),
     ValueError, r"cache must hold a LinearAttentionLayer .*got dict"),
    ("a cache of another batch",
     lambda g: g(z(1, 1, 8), cache=_filled(g, 2)), ValueError,
     r"cache holds a batch of 2 in float64, got hidden_states of shape "
     r"\(1, 1, 8\)"),
]


def _filled(layer, batch_size):
    cache = px.kv_cache.DynamicCache(GDN_CONFIG)
    layer(z(batch_size, 2, 8), cache=cache)
    return cache


@pytest.mark.parametrize("call, error, pattern",
                         [r[1:] for r in GDN_ROWS],
                         ids=[r[0] for r in GDN_ROWS])
def test_linear_attention_layer_refuses(call, error, pattern):
    layer = px.linear_attention.Qwen3NextGatedDeltaNet.from_config(GDN_CONFIG)
    with pytest.raises(error, match=pattern):
        call(layer)


# ------------------------------------------- attention variants (variants)
VAR_CONFIG = dict(hidden_size=8, num_attention_heads=2,
                  num_key_value_heads=2, head_dim=4, sliding_window=3,
                  layer_types=["sliding_attention", "full_attention"],
                  rope_parameters={"rope_type": "default",
                                   "rope_theta": 1e4},
                  query_pre_attn_scalar=4, attn_logit_softcapping=2.0)


def _variant(cls=px.variants.GptOssAttention, config=VAR_CONFIG,
             layer_idx=0, state=None, **kw):
    """A variant with ones for weights (or the given state_dict)."""
    if state is None:
        shapes = cls(config, layer_idx).state_shapes()
        state = {k: np.ones(s) for k, s in shapes.items()}
    return cls.from_state_dict(state, config, layer_idx, **kw)


def _oss_state(**changes):
    shapes = px.variants.GptOssAttention(VAR_CONFIG).state_shapes()
    return {k: np.ones(s) for k, s in shapes.items()} | changes


VARIANT_ROWS = [
    ("a config that is a list", lambda g: _variant(config=[1]), ValueError,
     r"config must be a dict or a transformers config \(its to_dict\(\)\), got list"),
    ("a config without num_key_value_heads",
     lambda g: _variant(config={k: v for k, v in VAR_CONFIG.items()
                                if k != "num_key_value_heads"}),
     ValueError, r"config has .*missing keys \['num_key_value_heads'\]"),
    ("layer_idx past the layers", lambda g: _variant(layer_idx=2),
     ValueError, r"layer_idx must index an attention layer .*0 \.\. 1.*"
     r"got 2"),
    ("layer_idx of a linear-attention layer",
     lambda g: _variant(px.variants.Qwen3NextAttention,
                        VAR_CONFIG | {"layer_types": ["linear_attention",
                                                      "full_attention"]}),
     ValueError, r"layer_idx must index an attention layer .*got 0"),
    ("a sliding layer with window 0",
     lambda g: _variant(config=VAR_CONFIG | {"sliding_window": 0}),
     ValueError, r"sliding_window .*got 0"),
    ("attn_implementation 'sdpa'",
     lambda g: _variant(attn_implementation="sdpa"), ValueError,
     r"attn_implementation .*'sdpa'"),
    ("a state_dict without sinks",
     lambda g: _variant(state={k: v for k, v in _oss_state().items()
                               if k != "sinks"}), ValueError,
     r"state_dict does not fit config: missing keys \['sinks'\]"),
    ("sinks of the wrong shape",
     lambda g: _variant(state=_oss_state(sinks=z(3))), ValueError,
     r"sinks has shape \(3,\) in state_dict, expected \(2,\) from config"),
    ("a state_dict of two dtypes",
     lambda g: _variant(state=_oss_state(sinks=np.ones(2, np.float32))),
     ValueError, r"sinks has dtype float32 but .* has dtype float64"),
    ("query_pre_attn_scalar 0",
     lambda g: _variant(px.variants.Gemma2Attention,
                        VAR_CONFIG | {"query_pre_attn_scalar": 0}),
     ValueError, r"query_pre_attn_scalar .*0"),
    ("DiffLlama with one key/value head",
     lambda g: _variant(px.variants.DiffLlamaAttention,
                        VAR_CONFIG | {"num_key_value_heads": 1}),
     ValueError, r"num_key_value_heads = 1 must be even"),
    ("a soft-cap of 0", lambda g: px.variants.soft_cap(0), ValueError,
     r"cap .*0"),
    ("SmolLM3 without no_rope_layers",
     lambda g: _variant(px.variants.SmolLM3Attention), ValueError,
     r"config has .*missing keys \['no_rope_layers'\]"),
    ("SmolLM3 with no entry of no_rope_layers for the layer",
     lambda g: _variant(px.variants.SmolLM3Attention,
                        VAR_CONFIG | {"no_rope_layers": [1]}, layer_idx=1),
     ValueError, r"no_rope_layers must be a list with an entry for "
     r"layer_idx = 1 \(1: RoPE, 0: NoPE\), got \[1\]"),
    ("SmolLM3 with a no_rope_layers entry of 2",
     lambda g: _variant(px.variants.SmolLM3Attention,
                        VAR_CONFIG | {"no_rope_layers": [2, 1]}),
     ValueError, r"no_rope_layers\[0\] must be one of \(0, 1\), got 2"),
    ("ALiBi slopes for 0 heads", lambda g: px.variants.alibi_slopes(0),
     ValueError, r"num_heads must be an integer >= 1, got 0"),
    ("an ALiBi slope below 0", lambda g: px.variants.alibi([0.5, -1.0]),
     ValueError, r"slopes must be one number > 0 a head, got \[0.5, -1.0\]"),
    ("no ALiBi slopes", lambda g: px.variants.alibi(np.zeros(0)),
     ValueError, r"slopes must be one number > 0 a head, got \[\]"),
    ("integer ALiBi slopes", lambda g: px.variants.alibi([1, 2]),
     ValueError, r"slopes must be a floating-point array .*got dtype int"),
    ("ALiBi slopes as a matrix", lambda g: px.variants.alibi(np.ones((2, 2))),
     ValueError, r"slopes must have 1 dimensions, got shape \(2, 2\)"),
    ("hidden_states of the wrong width", lambda g: g(z(1, 3, 6)),
     ValueError, r"hidden_states has shape \(1, 3, 6\), expected .*"
     r"d_model = 8"),
    ("hidden_states without tokens", lambda g: g(z(1, 0, 8)), ValueError,
     r"hidden_states has a 0-length sequence axis: got shape \(1, 0, 8\)"),
    ("hidden_states in float32", lambda g: g(z(1, 3, 8, dtype=np.float32)),
     ValueError, r"hidden_states has dtype float32 but o_proj.weight has "
     r"dtype float64"),
    ("position_ids of the wrong length",
     lambda g: g(z(1, 3, 8), position_ids=np.arange(4)), ValueError,
     r"position_ids has shape \(4,\).*\(1, 3\)"),
    ("negative position_ids",
     lambda g: g(z(1, 3, 8), position_ids=np.array([-1, 0, 1])),
     ValueError, r"position_ids has shape \(3,\).*-1 \.\. 1"),
    ("output_attentions on the tiled kernel",
     lambda g: g(z(1, 3, 8), output_attentions=True), ValueError,
     r"output_attentions=True needs attn_implementation='eager'"),
    ("output_attentions that is not a bool",
     lambda g: g(z(1, 3, 8), output_attentions="yes"), TypeError,
     r"output_attentions must be True or False, got str 'yes'"),
    ("a cache that is a tuple",
     lambda g: g(z(1, 3, 8), cache=()),
     TypeError, r"cache must be a px.kv_cache.Cache .*got tuple"),
    ("a cache with one layer for layer 1",
     lambda g: _variant(layer_idx=1)(z(1, 3, 8), cache=(
         px.kv_cache.DynamicCache({"layer_types": ["full_attention"]}))),
     ValueError, r"layer_idx must be an integer 0 <= layer_idx <= 0, "
     r"got 1"),
]

_DYN = px.kv_cache.DynamicCache


def _dyn_holding(shape=(1, 2, 3, 4), dtype=np.float64):
    """A DynamicCache whose layer 0 holds keys of this shape."""
    cache = _DYN()
    cache.update(np.zeros(shape, dtype), np.zeros(shape, dtype), 0)
    return cache


DYNAMIC_CACHE_ROWS = [
    (_DYN().update, dict(key_states=z(1, 2, 3), value_states=z(1, 2, 3),
                         layer_idx=0), ValueError,
     r"key_states must have 4 dimensions, got shape \(1, 2, 3\)"),
    (_DYN().update, dict(key_states=z(1, 2, 3, 4), value_states=z(1, 2, 2, 4),
                         layer_idx=0), ValueError,
     r"value_states has shape \(1, 2, 2, 4\), expected \(B, H_kv, T\) of "
     r"key_states"),
    (_DYN().update, dict(key_states=z(1, 2, 0, 4), value_states=z(1, 2, 0, 4),
                         layer_idx=0), ValueError,
     r"key_states has shape \(1, 2, 0, 4\), expected .*T >= 1"),
    (_DYN().update, dict(key_states=z(1, 2, 1, 4),
                         value_states=z(1, 2, 1, 4, dtype=np.float32),
                         layer_idx=0), ValueError,
     r"value_states has dtype float32 but key_states has dtype float64"),
    (_dyn_holding().update, dict(key_states=z(1, 3, 1, 4),
                                 value_states=z(1, 3, 1, 4), layer_idx=0),
     ValueError, r"key_states has shape \(1, 3, 1, 4\), expected "
     r"\(B, H_kv, T, d_head\) = \(1, 2, T, 4\) as the layer holds"),
    (_dyn_holding().update, dict(key_states=z(1, 2, 1, 4, dtype=np.float32),
                                 value_states=z(1, 2, 1, 4,
                                                dtype=np.float32),
                                 layer_idx=0), ValueError,
     r"key_states has dtype float32 but key_cache has dtype float64"),
    (_DYN().update, dict(key_states=z(1, 2, 1, 4), value_states=z(1, 2, 1, 4),
                         layer_idx=-1), ValueError, r"layer_idx .*got -1"),
    (_DYN({"layer_types": ["full_attention"]}).get_seq_length,
     dict(layer_idx=3), ValueError,
     r"layer_idx must be an integer 0 <= layer_idx <= 0, got 3"),
    (_DYN, dict(config={"layer_types": ["sliding_attention"],
                        "sliding_window": 0}), ValueError,
     r"sliding_window .*got 0"),
    (_DYN, dict(config=[1]), ValueError, r"config must be a dict"),
]


@pytest.mark.parametrize("call, kwargs, exc, match", DYNAMIC_CACHE_ROWS)
def test_dynamic_cache_refuses(call, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        call(**kwargs)


MLA_CONFIG = dict(hidden_size=8, num_attention_heads=2, q_lora_rank=4,
                  kv_lora_rank=4, qk_nope_head_dim=2, qk_rope_head_dim=2,
                  v_head_dim=3, rope_parameters={"rope_type": "default",
                                                 "rope_theta": 1e4})


V32_INDEX = dict(index_n_heads=2, index_head_dim=4, index_topk=3)


def _mla(config=MLA_CONFIG, cls=px.variants.DeepseekV3Attention):
    """A DeepseekV3Attention (or ``cls``) with ones for weights."""
    shapes = cls(config).state_shapes()
    return cls.from_state_dict({k: np.ones(s) for k, s in shapes.items()},
                               config)


def _mla_decode(x, cache=None, **kw):
    """One call of a fresh layer through a cache (a fresh one by
    default)."""
    layer = _mla()
    if cache is None:
        cache = px.kv_cache.DynamicCache(MLA_CONFIG)
    return layer(x, cache=cache, **kw)


def _mla_cache(B=1, dtype=np.float64, sizes=(4, 2)):
    """A cache whose one latent entry holds 3 tokens of a batch of B."""
    cache = px.kv_cache.Cache([px.kv_cache.LatentLayer(*sizes)])
    cache.update(np.zeros((B, 3, sizes[0]), dtype),
                 np.zeros((B, 3, sizes[1]), dtype), 0)
    return cache


MLA_ROWS = [
    ("MLA config without kv_lora_rank",
     lambda: _mla({k: v for k, v in MLA_CONFIG.items()
                   if k != "kv_lora_rank"}),
     ValueError, r"config has .*missing keys \['kv_lora_rank'\]"),
    ("an odd qk_rope_head_dim",
     lambda: _mla(MLA_CONFIG | {"qk_rope_head_dim": 3}), ValueError,
     r"qk_rope_head_dim must be even, got 3"),
    ("q_lora_rank 0", lambda: _mla(MLA_CONFIG | {"q_lora_rank": 0}),
     ValueError, r"q_lora_rank .*got 0"),
    ("a state_dict with q_proj beside q_a_proj",
     lambda: px.variants.DeepseekV3Attention.from_state_dict(
         {k: np.ones(s) for k, s in px.variants.DeepseekV3Attention(
             MLA_CONFIG).state_shapes().items()} | {"q_proj.weight":
                                                    np.ones((16, 8))},
         MLA_CONFIG), ValueError, r"state_dict does not fit config"),
    ("a LatentLayer of rank 0",
     lambda: px.kv_cache.LatentLayer(0, 2), ValueError,
     r"kv_lora_rank .*got 0"),
    ("a dict, not a cache",
     lambda: _mla_decode(z(1, 1, 8), cache={}), TypeError,
     r"cache must be a px.kv_cache.Cache .*got dict"),
    ("a cache of keys and values, not a latent",
     lambda: _mla_decode(z(1, 1, 8), cache=px.kv_cache.DynamicCache()),
     TypeError, r"cache must hold a LatentLayer of \(kv_lora_rank, "
     r"qk_rope_head_dim\) = \(4, 2\) .*DynamicLayer"),
    ("a latent cache of other sizes",
     lambda: _mla_decode(z(1, 1, 8), cache=_mla_cache(sizes=(5, 2))),
     TypeError, r"cache must hold a LatentLayer of \(kv_lora_rank, "
     r"qk_rope_head_dim\) = \(4, 2\)"),
    ("a batch the cache does not hold",
     lambda: _mla_decode(z(2, 1, 8), cache=_mla_cache(B=1)), ValueError,
     r"c_kv has shape \(2, 1, 4\), expected the cache's batch of 1"),
    ("decode float32 into a float64 layer",
     lambda: _mla_decode(z(1, 1, 8, dtype=np.float32)), ValueError,
     r"hidden_states has dtype float32 but o_proj.weight has dtype "
     r"float64"),
    ("a float32 cache",
     lambda: _mla_decode(z(1, 1, 8), cache=_mla_cache(dtype=np.float32)),
     ValueError, r"c_kv has dtype float64 but latent has dtype float32"),
    ("decode hidden_states of the wrong width",
     lambda: _mla_decode(z(1, 1, 6)), ValueError,
     r"hidden_states has shape \(1, 1, 6\), expected .*d_model = 8"),
    ("decode positions of the wrong length",
     lambda: _mla_decode(z(1, 2, 8), position_ids=np.arange(3)),
     ValueError, r"position_ids has shape \(3,\).*\(1, 2\)"),
    ("DeepSeek-V3.2 without q_lora_rank",
     lambda: px.variants.DeepseekV32Attention(MLA_CONFIG | V32_INDEX | {
         "q_lora_rank": None}), ValueError,
     r"q_lora_rank must be set for DeepSeek-V3.2 .*got None"),
    ("an indexer narrower than the turned slice",
     lambda: px.variants.DeepseekV32Attention(MLA_CONFIG | V32_INDEX | {
         "index_head_dim": 1}), ValueError,
     r"index_head_dim must be at least qk_rope_head_dim = 2 .*got 1"),
    ("index_topk 0",
     lambda: px.variants.DeepseekV32Attention(MLA_CONFIG | V32_INDEX | {
         "index_topk": 0}), ValueError, r"index_topk .*got 0"),
    ("a cache on DeepSeek-V3.2",
     lambda: _mla(MLA_CONFIG | V32_INDEX, px.variants.DeepseekV32Attention)(
         z(1, 1, 8), cache=px.kv_cache.DynamicCache(MLA_CONFIG)), TypeError,
     r"cache: DeepseekV32Attention runs without a cache here"),
    ("mla_decode_cost with context_len 0",
     lambda: px.memory.mla_decode_cost(MLA_CONFIG, 0, absorb=True),
     ValueError, r"context_len .*got 0"),
    ("mla_decode_cost with absorb 1",
     lambda: px.memory.mla_decode_cost(MLA_CONFIG, 4, absorb=1),
     TypeError, r"absorb must be True or False, got int 1"),
    ("mla_decode_cost of a config without v_head_dim",
     lambda: px.memory.mla_decode_cost(
         {k: v for k, v in MLA_CONFIG.items() if k != "v_head_dim"}, 4,
         absorb=True),
     ValueError, r"config has no \['v_head_dim'\]"),
    ("mla_decode_cost in 0 bytes a value",
     lambda: px.memory.mla_decode_cost(MLA_CONFIG, 4, absorb=True,
                                       dtype_bytes=0),
     ValueError, r"dtype_bytes .*got 0"),
]


@pytest.mark.parametrize("call, error, pattern",
                         [r[1:] for r in MLA_ROWS],
                         ids=[r[0] for r in MLA_ROWS])
def test_multi_head_latent_attention_refuses(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


@pytest.mark.parametrize("call, error, pattern",
                         [r[1:] for r in VARIANT_ROWS],
                         ids=[r[0] for r in VARIANT_ROWS])
def test_attention_variants_refuse(call, error, pattern):
    layer = _variant()
    with pytest.raises(error, match=pattern):
        call(layer)
