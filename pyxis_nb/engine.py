"""Causal attention as an inference engine computes it: one query at a time.

A teaching form, the causal-mask chapter's: the query at position ``pos``
scores only keys ``0 .. pos``, so the weights of the future stay 0 with no
(T, S) matrix and no mask; the chapter measures that both give the same
numbers. The models run the package's two kernels, ``attention.sdpa_core``
and ``tiled.tiled_attention_loop``.

Shape legend:
    ...      leading batch/head dimensions, broadcast between the inputs
    T        query positions: the last T of the S positions, as with a KV
             cache, so query ``i`` sits at position ``S - T + i``
    S        key/value positions
    d_head   size of one head's query, key and value vectors
"""

from __future__ import annotations

import numpy as np

from ._checks import _lead_shape, check_qkv
from .stable_softmax import softmax_core

__all__ = ["engine_causal_attention"]


def _check_causal_qkv(query, key, value):
    """:func:`check_qkv` and ``T <= S``; also returns the leading shape."""
    q, k, v, _ = check_qkv(query, key, value)
    T, S = q.shape[-2], k.shape[-2]
    if T > S:
        raise ValueError(
            f"query has T = {T} positions (shape {q.shape}) but key only "
            f"S = {S} (shape {k.shape}): expected T <= S, the queries being "
            "the last T positions"
        )
    return q, k, v, _lead_shape(q, k, v, 1)


def engine_causal_attention(query, key, value, *, scale: float | None = None,
                            output_attentions: bool = False):
    """Causal attention computed one query row at a time.

    The causal-mask chapter's teaching form; the models run
    ``attention.sdpa_core`` or ``tiled.tiled_attention_loop``.

    Parameters
    ----------
    query : ndarray of float, shape (..., T, d_head): the last T <= S positions
    key, value : ndarray, shape (..., S, d_head), of ``query``'s dtype
    scale : float, optional; default ``1 / sqrt(d_head)``
    output_attentions : bool, default False
        Also return the weights (..., T, S), zero on every future key.

    See Also
    --------
    transformers.cache_utils.DynamicCache : the past keys an engine keeps.
    """
    q, k, v, lead = _check_causal_qkv(query, key, value)  # lead: the "..."
    T, S = q.shape[-2], k.shape[-2]
    scale = q.dtype.type(q.shape[-1] ** -0.5 if scale is None else scale)
    out, weights = (np.zeros(lead + (T, n), q.dtype) for n in (v.shape[-1], S))
    for i, pos in enumerate(range(S - T, S)):  # query i sits at pos
        # (..., pos+1, d_head) @ (..., d_head, 1) -> (..., pos+1): keys 0..pos
        scores = (k[..., :pos + 1, :] @ q[..., i, :, None])[..., 0] * scale
        w = weights[..., i, :pos + 1] = softmax_core(scores)  # future: 0
        # (..., 1, pos+1) @ (..., pos+1, d_head) -> (..., 1, d_head)
        out[..., i, :] = (w[..., None, :] @ v[..., :pos + 1, :])[..., 0, :]
    return (out, weights) if output_attentions else out
