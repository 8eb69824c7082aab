"""What the heads of a trained model do, measured: maps, scores, ablations.

Shape legend:
    L        decoder layers
    B        batch
    H, H_kv  query heads, key/value heads (n_rep = H // H_kv)
    T        positions (queries and keys are the same tokens: no cache)
    V        vocabulary size
    d_model  width of the residual stream; d_head, size of one head

The functions take a ``Qwen3ForCausalLM`` (or any model with its
attributes: ``embed_tokens``, ``layers`` of ``self_attn`` /
``input_layernorm`` / ``mlp`` / ``post_attention_layernorm``, ``norm``,
``lm_head``) and run it the way an engine does, keeping what the model's
own ``forward`` throws away: every layer's scores and attention weights.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import (as_float_array, check_choice, check_input_ids,
                      check_shape)
from .rope import rope_frequencies, rotate_pairs
from .softmax import softmax_core

__all__ = [
    "AttentionRecord",
    "run_with_attention",
    "next_token_loss",
    "sink_score",
    "ov_copying_score",
    "head_pair_distance",
]

ROPE_LAYOUTS = ("half", "interleaved")


class AttentionRecord(NamedTuple):
    """``run_with_attention``'s result: logits and every layer's maps."""

    logits: np.ndarray  # (B, T, V)
    scores: np.ndarray  # (L, B, H, T, T), scaled, before the mask
    weights: np.ndarray  # (L, B, H, T, T), causal softmax of the scores


def _rotate(x, cos, sin, layout):
    """RoPE on (..., T, d_head) with (T, d_head/2) angles, either pairing."""
    if layout == "half":  # pairs (i, i + d_head/2), as Hugging Face
        x1, x2 = np.split(x, 2, axis=-1)
        return np.concatenate(rotate_pairs(x1, x2, cos, sin), axis=-1)
    out = np.empty_like(x)  # pairs (2i, 2i + 1), as RoFormer and Meta
    out[..., 0::2], out[..., 1::2] = rotate_pairs(x[..., 0::2], x[..., 1::2],
                                                  cos, sin)
    return out


def _layer(h, layer, head_mask, cos_sin, layout, causal):
    """One decoder layer by hand: (B, T, d_model) -> same, scores, weights."""
    attn = layer.self_attn
    q, k, v = attn.project(layer.input_layernorm(h))  # (B, H|H_kv, T, d)
    q, k = (_rotate(x, *cos_sin, layout) for x in (q, k))
    B, H, T, d_head = q.shape
    H_kv = k.shape[1]  # query head g * n_rep + r reads key/value head g
    q = q.reshape(B, H_kv, H // H_kv, T, d_head)
    # (B, H_kv, n_rep, T, d) @ (B, H_kv, 1, d, T) -> (B, H_kv, n_rep, T, T)
    scores = q @ k[:, :, None].swapaxes(-1, -2) * attn.scaling
    weights = softmax_core(np.where(causal, scores, -np.inf))
    mixed = weights * head_mask.reshape(H_kv, -1, 1, 1)  # (H,) per layer
    out = mixed @ v[:, :, None]  # (B, H_kv, n_rep, T, d_head)
    out = out.reshape(B, H, T, d_head).transpose(0, 2, 1, 3)  # (B, T, H, d)
    h = h + out.reshape(B, T, H * d_head) @ attn.o_proj.T  # (B, T, d_model)
    if layer.mlp is not None:
        h = h + layer.mlp(layer.post_attention_layernorm(h))
    return h, scores.reshape(B, H, T, T), weights.reshape(B, H, T, T)


def run_with_attention(model, input_ids, *, rope_layout: str = "half",
                       head_mask=None) -> AttentionRecord:
    """The model's forward pass, keeping every layer's scores and weights.

    Parameters
    ----------
    model : Qwen3ForCausalLM
    input_ids : ndarray of int, shape (B, T) or (T,)
    rope_layout : {"half", "interleaved"}, default "half"
        The pairing RoPE rotates: "half" is the one Qwen3 was trained with;
        "interleaved" is an engine that pairs neighbours (the layout bug).
    head_mask : ndarray, shape (L, H), optional
        Multiplies each head's weights (0 switches a head off), as the
        ``head_mask`` argument of older transformers models did.

    Returns
    -------
    AttentionRecord
        ``logits`` (B, T, V); ``scores`` and ``weights`` (L, B, H, T, T).
    """
    ids = check_input_ids("input_ids", input_ids, model.vocab_size)
    layout = check_choice("rope_layout", rope_layout, ROPE_LAYOUTS)
    c = model.config
    shape = (c.num_hidden_layers, c.num_attention_heads)
    mask = np.ones(shape) if head_mask is None else as_float_array(
        "head_mask", head_mask, ndim=2)
    check_shape("head_mask", mask, mask.shape == shape, f"(L, H) = {shape}")
    T = ids.shape[1]
    angles = np.arange(T)[:, None] * rope_frequencies(c.head_dim,
                                                      c.rope_theta)
    cos_sin = (np.cos(angles).astype(model.dtype),
               np.sin(angles).astype(model.dtype))  # (T, d_head/2) each
    causal = np.tril(np.ones((T, T), dtype=bool))  # True = may attend
    h, scores, weights = model.embed_tokens[ids], [], []  # (B, T, d_model)
    for i, layer in enumerate(model.layers):
        h, s, w = _layer(h, layer, mask[i].astype(model.dtype), cos_sin,
                         layout, causal)
        scores.append(s)
        weights.append(w)
    logits = model.norm(h) @ model.lm_head.T  # (B, T, d_model) @ (., V)
    return AttentionRecord(logits, np.stack(scores), np.stack(weights))


def next_token_loss(logits, input_ids) -> float:
    """Mean cross-entropy, in nats, of token ``t + 1`` given logits at ``t``.

    Parameters
    ----------
    logits : ndarray, shape (B, T, V)
    input_ids : ndarray of int, shape (B, T)

    Returns
    -------
    float
        torch: ``cross_entropy(logits[:, :-1].flatten(0, 1),
        input_ids[:, 1:].flatten())``, what HF's ``labels=input_ids`` gives.
    """
    z = as_float_array("logits", logits, ndim=3)
    ids = check_input_ids("input_ids", input_ids, z.shape[-1])
    check_shape("input_ids", ids, ids.shape == z.shape[:2],
                f"(B, T) = {z.shape[:2]}, as logits")
    z = z[:, :-1].astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)  # (B, T-1, V), stable log-softmax
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(logp, ids[:, 1:, None], axis=-1)
    return float(-picked.mean())


def sink_score(weights) -> np.ndarray:
    """Mean weight each head puts on the first key, from queries 1 .. T-1.

    weights : (B, H, T, T) -> ndarray, shape (H,). Query 0 is left out: the
    causal mask gives it nothing else to attend to. 1/t is what a uniform
    row at query t would give (Xiao et al. 2023, "attention sinks").
    """
    w = as_float_array("weights", weights, ndim=4)
    return w[:, :, 1:, 0].mean(axis=(0, 2))


def ov_copying_score(model) -> np.ndarray:
    """Olsson et al.'s copying score of every head's OV circuit, (L, H).

    The OV circuit ``W_U W_O^h W_V^h W_E`` (V, V), norm gains included,
    maps a token attended to onto the logits it raises. Its eigenvalues
    ``lam`` give ``sum(lam) / sum(|lam|)``: near 1, the head raises the
    logit of the token it reads (copying); near -1, it suppresses it.
    Computed on the (d_head, d_head) matrix with the same eigenvalues.
    """
    c = model.config
    H, d_head = c.num_attention_heads, c.head_dim
    n_rep = H // c.num_key_value_heads
    unembed = model.lm_head * model.norm.weight  # (V, d_model)
    scores = np.zeros((c.num_hidden_layers, H))
    for i, layer in enumerate(model.layers):
        embed = model.embed_tokens * layer.input_layernorm.weight  # (V, d)
        inner = embed.T.astype(np.float64) @ unembed  # (d_model, d_model)
        for h in range(H):
            g = h // n_rep  # the key/value head query head h reads
            w_v = layer.self_attn.v_proj[g * d_head:(g + 1) * d_head]
            w_o = layer.self_attn.o_proj[:, h * d_head:(h + 1) * d_head]
            lam = np.linalg.eigvals(w_v @ inner @ w_o)  # (d_head,)
            scores[i, h] = lam.sum().real / np.abs(lam).sum()
    return scores


def head_pair_distance(weights) -> np.ndarray:
    """Mean total-variation distance between the rows of every two heads.

    weights : (B, H, T, T) -> ndarray, shape (H, H): entry (i, j) is
    ``0.5 * sum |w_i - w_j|`` over the keys, averaged over the batch and
    the queries 1 .. T-1 (0: the same distribution; 1: no overlap).
    """
    w = as_float_array("weights", weights, ndim=4)[:, :, 1:]  # (B, H, T-1, T)
    i, j = np.triu_indices(w.shape[1], k=1)  # every pair once, i < j
    gap = np.abs(w[:, i] - w[:, j]).sum(axis=-1)  # (B, pairs, T-1)
    out = np.zeros((w.shape[1],) * 2)
    out[i, j] = out[j, i] = 0.5 * gap.mean(axis=(0, 2))
    return out
