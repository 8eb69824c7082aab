"""Causal attention the way an inference engine computes it: one query at a time.

A library such as PyTorch builds the whole (L, S) score matrix and then hides
the future with a mask. An inference engine that decodes one token at a time
never builds that matrix. For the query at position ``pos`` it starts a score
row filled with ``-inf`` and computes only the first ``pos + 1`` entries, the
keys at positions ``0 .. pos``; the rest stay ``-inf`` and get weight 0 from
the softmax. Nothing is computed and then thrown away. Both ways give the
same numbers (the causal chapter measures it).

Shape legend:
    ... leading batch/head dims, broadcast between the three inputs
    L   query positions (the *last* L of the S positions, as with a KV cache)
    S   key/value positions
    d_head  query/key size (one head's vectors)      d_v  value size (d_head in the book)
"""

from __future__ import annotations

import numpy as np

from .attention import _check_qkv
from ._checks import broadcast_shapes
from .softmax import softmax

__all__ = ["engine_causal_attention"]


def engine_causal_attention(query, key, value, *, scale: float | None = None,
                            return_weights: bool = False):
    """Causal attention computed row by row, as an inference engine does.

    Query row ``i`` sits at absolute position ``pos = S - L + i`` (the queries
    are the newest ``L`` tokens; with ``L == S`` simply ``pos = i``). Its score
    row starts as ``S`` values of ``-inf``; only the ``pos + 1`` dot products
    with keys ``0 .. pos`` are computed and written in.

    Parameters
    ----------
    query : ndarray, shape (..., L, d_head)
    key : ndarray, shape (..., S, d_head)
    value : ndarray, shape (..., S, d_v)
        Floating arrays of one dtype, with ``L <= S``; float32 stays float32.
    scale : float, optional
        Multiplies the scores; defaults to ``1 / sqrt(d_head)``.
    return_weights : bool, default False
        Also return the (..., L, S) weights (zeros right of each query's position).

    Returns
    -------
    output : ndarray, shape (..., L, d_v)
    weights : ndarray, shape (..., L, S), only with ``return_weights=True``

    Raises
    ------
    ValueError
        The input errors of :func:`pyxis_nb.scaled_dot_product_attention`, or
        more queries than keys (``L > S``: a query would have no key at all).

    See Also
    --------
    pyxis_nb.scaled_dot_product_attention : the matrix way, with
        ``attn_mask=px.causal_mask(L, S)``; ``is_causal=True`` is the same when L == S.
    transformers.cache_utils.DynamicCache : how Hugging Face keeps the keys of past positions.
    """
    q, k, v, _ = _check_qkv(query, key, value, enable_gqa=False)
    L, d_head, S = q.shape[-2], q.shape[-1], k.shape[-2]
    if L > S:
        raise ValueError(
            f"query has L = {L} positions (shape {q.shape}) but key only S = {S} "
            f"(shape {k.shape}): expected L <= S, the queries being the last L positions"
        )
    batch = broadcast_shapes({"query": q.shape[:-2], "key": k.shape[:-2],
                              "value": v.shape[:-2]})
    scale = q.dtype.type(1.0 / np.sqrt(d_head) if scale is None else scale)

    out = np.zeros(batch + (L, v.shape[-1]), dtype=q.dtype)
    weights = np.zeros(batch + (L, S), dtype=q.dtype)
    for i in range(L):
        pos = S - L + i  # absolute position of this query
        row = np.full(batch + (S,), -np.inf, dtype=q.dtype)  # (..., S): the future stays -inf
        # (..., pos+1, d_head) x (..., d_head, 1) -> (..., pos+1, 1): only keys 0..pos are scored
        row[..., : pos + 1] = (k[..., : pos + 1, :] @ q[..., i, :, None])[..., 0] * scale
        w = softmax(row, axis=-1)  # (..., S), exact zeros right of pos
        # (..., 1, pos+1) x (..., pos+1, d_v) -> (..., 1, d_v): only the values that can count
        out[..., i, :] = (w[..., None, : pos + 1] @ v[..., : pos + 1, :])[..., 0, :]
        weights[..., i, :] = w
    return (out, weights) if return_weights else out
