"""What the heads of a trained model do, measured: maps, scores, ablations.

Shape legend:
    L, B     decoder layers, batch
    H, H_kv  query heads, key/value heads (n_rep = H // H_kv)
    T, V     positions (queries and keys alike: no cache), vocabulary size
    d_model, d_head  widths of the residual stream and of one head

The maps: ``model(ids, output_attentions=True).attentions``, (L, B, H, T, T).
"""

from __future__ import annotations

import numpy as np

from ._checks import (as_float_array, check_choice, check_shape,
                      check_token_ids)

__all__ = [
    "offset_score",
    "previous_token_score",
    "duplicate_token_score",
    "induction_score",
    "next_token_loss",
    "sink_score",
    "ov_copying_score",
    "head_pair_distance",
]


def next_token_loss(logits, input_ids, reduction: str = "mean"):
    """Cross-entropy, in nats, of token ``t + 1`` given logits at ``t``.

    HF's loss with ``labels=input_ids`` (torch's ``cross_entropy``).

    Parameters
    ----------
    logits : ndarray, shape (B, T, V)
    input_ids : ndarray of int, shape (B, T)
    reduction : {"mean", "none"}, as torch's; "none": the (B, T - 1) losses
    """
    z = as_float_array("logits", logits, ndim=3)
    ids = check_token_ids("input_ids", input_ids, z.shape[-1], batch=True)
    check_shape("input_ids", ids, ids.shape == z.shape[:2],
                f"(B, T) = {z.shape[:2]}, as logits")
    check_choice("reduction", reduction, ("mean", "none"))
    z = z[:, :-1]  # (B, T-1, V): position t predicts token t + 1
    picked = np.take_along_axis(z, ids[:, 1:, None], axis=-1)[..., 0]
    nll = _logsumexp(z) - picked  # -log softmax(z)[next token], (B, T-1)
    return nll if reduction == "none" else float(nll.mean())


def _logsumexp(z: np.ndarray, rows: int = 16) -> np.ndarray:
    """Unchecked: ``log sum_v exp(z[..., v])``, (B, T, V) -> (B, T) float64.

    A few rows at a time: a temporary as large as the logits cost 4-7x.
    """
    B, T, V = z.shape
    lse = np.empty((B, T))
    buf = np.empty((rows, V), z.dtype)
    for b in range(B):
        for t in range(0, T, rows):
            block = z[b, t:t + rows]  # (rows, V)
            e = buf[:len(block)]
            top = block.max(axis=-1)
            np.exp(np.subtract(block, top[:, None], out=e), out=e)
            lse[b, t:t + rows] = top + np.log(e.sum(axis=-1, dtype=np.float64))
    return lse


def sink_score(weights) -> np.ndarray:
    """Mean weight each head puts on the first key, from queries 1 .. T-1.

    Parameters
    ----------
    weights : ndarray, shape (B, H, T, T), one layer's attention weights"""
    w = as_float_array("weights", weights, ndim=4)
    return w[:, :, 1:, 0].mean(axis=(0, 2))


def ov_copying_score(model) -> np.ndarray:
    """Olsson et al.'s copying score of every head's OV circuit, (L, H).

    ``sum(lam) / sum(|lam|)`` over the eigenvalues of ``W_U W_O^h W_V^h W_E``
    (norm gains included): near 1 the head raises the logit of the token it
    reads (copying), near -1 it suppresses it. Found from the (d_head, d_head)
    matrix with the same eigenvalues.

    Parameters
    ----------
    model : Qwen3ForCausalLM
    """
    c = model.config
    H, H_kv, d_head = c.num_attention_heads, c.num_key_value_heads, c.head_dim
    n_rep = H // H_kv
    # W_E^T W_U once, (d_model, d_model): the one product over the
    # vocabulary, in float32 at least (3e-7 from float64 on SmolLM2's
    # 49,152 tokens, a third of the time); the rest in float64
    work = np.promote_types(model.dtype, np.float32)
    unembed = (model.lm_head * model.norm.weight).astype(work, copy=False)
    shared = (model.embed_tokens.T.astype(work, copy=False)
              @ unembed).astype(np.float64)  # (V, d_model) each side
    scores = np.zeros((c.num_hidden_layers, H))
    for i, layer in enumerate(model.layers):
        inner = layer.input_layernorm.weight[:, None] * shared  # (d, d)
        w_v = layer.self_attn.v_proj.reshape(H_kv, d_head, -1)
        read = w_v @ inner  # (H_kv, d_head, d): W_V^g through W_E^T W_U
        for h in range(H):
            w_o = layer.self_attn.o_proj[:, h * d_head:(h + 1) * d_head]
            lam = np.linalg.eigvals(read[h // n_rep] @ w_o)  # (d_head,)
            scores[i, h] = lam.sum().real / np.abs(lam).sum()
    return scores


def head_pair_distance(weights) -> np.ndarray:
    """Mean total-variation distance between the rows of every two heads.

    (H, H), over the batch and queries 1 .. T-1: 0 the same rows, 1 no overlap.

    Parameters
    ----------
    weights : ndarray, shape (B, H, T, T), one layer's attention weights"""
    w = as_float_array("weights", weights, ndim=4)[:, :, 1:]  # (B, H, T-1, T)
    i, j = np.triu_indices(w.shape[1], k=1)  # every pair once, i < j
    gap = np.abs(w[:, i] - w[:, j]).sum(axis=-1)  # (B, pairs, T-1)
    out = np.zeros((w.shape[1],) * 2)
    out[i, j] = out[j, i] = 0.5 * gap.mean(axis=(0, 2))
    return out


def offset_score(weights: np.ndarray, offset: int) -> np.ndarray:
    """Mean weight each head puts on the key ``offset`` places back.

    Parameters
    ----------
    weights : ndarray, shape (B, H, T, T), one layer's attention weights
    offset : int, ``0 .. T-1``; every query ``t >= offset`` is averaged"""
    t = np.arange(offset, weights.shape[-1])
    return weights[:, :, t, t - offset].mean(axis=(0, 2))


def previous_token_score(weights: np.ndarray) -> np.ndarray:
    """Mean weight each head puts on the key just before the query.

    Parameters
    ----------
    weights : ndarray, shape (B, H, T, T), one layer's attention weights"""
    return offset_score(weights, 1)


def _second_copy_score(weights, half, key_shift: int) -> np.ndarray:
    """Mean weight, over every query ``half + j`` of the second copies,
    on the key ``j + key_shift``; ``half`` an int or one per row (B,)."""
    halves = np.broadcast_to(half, weights.shape[:1])  # (B,)
    rows = np.repeat(np.arange(len(halves)), halves - key_shift)  # (N,)
    j = np.concatenate([np.arange(h - key_shift) for h in halves])  # (N,)
    return weights[rows, :, halves[rows] + j, j + key_shift].mean(axis=0)


def duplicate_token_score(weights: np.ndarray, half) -> np.ndarray:
    """Weight on the first copy of the current token, from the second copy.

    Parameters
    ----------
    weights : ndarray, shape (B, H, T, T), one layer's, on ``repeated_tokens``
    half : int or (B,) ints, block length: query ``half + j`` reads ``j``"""
    return _second_copy_score(weights, half, 0)


def induction_score(weights: np.ndarray, half) -> np.ndarray:
    """Weight on the token after the current token's first copy: induction.

    Parameters
    ----------
    weights : ndarray, shape (B, H, T, T), one layer's, on ``repeated_tokens``
    half : int or (B,) ints, block length: query ``half + j`` reads ``j+1``"""
    return _second_copy_score(weights, half, 1)
