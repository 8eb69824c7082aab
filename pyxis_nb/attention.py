"""Scaled dot-product attention with the semantics of PyTorch's SDPA.

Shape legend:
    ...      leading batch/head dimensions, broadcast between the inputs
    T        query positions
    S        key/value positions
    d_head   size of one head's query, key and value vectors
    H        query heads (axis -3), only with ``enable_gqa``
    H_kv     key/value heads (axis -3), only with ``enable_gqa``
    n_rep    query heads per key/value head, ``H // H_kv``
"""

from __future__ import annotations

import numpy as np

from ._checks import check_attention
from .masks import mask_to_bias
from .stable_softmax import softmax_core

__all__ = ["scaled_dot_product_attention", "sdpa_core"]


def scaled_dot_product_attention(query, key, value, *, attn_mask=None,
                                 is_causal: bool = False,
                                 scale: float | None = None,
                                 enable_gqa: bool = False,
                                 output_attentions: bool = False):
    """``softmax(Q K^T * scale + mask) V``, as torch's SDPA computes it.

    Parameters
    ----------
    query : ndarray, shape (..., T, d_head)
    key : ndarray, shape (..., S, d_head)
    value : ndarray, shape (..., S, d_head)
        Floats of one dtype; the leading dims broadcast.
    attn_mask : ndarray, shape broadcastable to (..., T, S), optional
        Boolean, True = may attend; or floating, added to the scores.
    is_causal : bool, default False
        Torch's top-left causal mask (query ``i`` sees keys ``0..i``).
    scale : float, optional
        Defaults to ``1 / sqrt(d_head)``.
    enable_gqa : bool, default False
        Query heads ``H`` on axis -3 share ``H_kv`` key/value heads.
    output_attentions : bool, default False
        Also return the weights.

    Returns
    -------
    output : ndarray, shape (..., T, d_head)
    weights : ndarray, shape (..., T, S), only with ``output_attentions``
        A row with no allowed key is all zeros (as torch >= 2.5), never NaN.

    See Also
    --------
    torch.nn.functional.scaled_dot_product_attention
    """
    q, k, v, attn_mask, _ = check_attention(query, key, value, attn_mask,
                                            is_causal, enable_gqa)
    out, weights = sdpa_core(q, k, v, attn_mask=attn_mask,
                             is_causal=is_causal, scale=scale,
                             enable_gqa=enable_gqa)
    return (out, weights) if output_attentions else out


def sdpa_core(query, key, value, attn_mask=None, is_causal=False,
              scale=None, enable_gqa=False, head_mask=None):
    """Unchecked core of :func:`scaled_dot_product_attention`: out, weights.

    For callers that checked their inputs already (a layer, a model).

    Parameters
    ----------
    query : ndarray, shape (..., T, d_head)
    key, value : ndarray, shape (..., S, d_head)
        Of the dtype of ``query``; with ``enable_gqa``, (..., H_kv, S,
        d_head).
    attn_mask : ndarray, broadcastable to (..., T, S), optional
        Boolean (True = may attend) or floating (added to the scores).
    is_causal : bool, default False
        Torch's top-left triangle, used instead of ``attn_mask``.
    scale : float, optional
        Defaults to ``1 / sqrt(d_head)``.
    enable_gqa : bool, default False
        Query head ``h`` (axis -3) reads key/value head ``h // n_rep``.
    head_mask : ndarray, shape (H,), optional
        Multiplies each head's weights before they mix the values (0
        switches a head off), as the ``head_mask`` of older transformers
        models did; the weights returned are the multiplied ones.

    Returns
    -------
    output : ndarray, shape (..., T, d_head)
    weights : ndarray, shape (..., T, S)
    """
    T, S, d_head = query.shape[-2], key.shape[-2], query.shape[-1]
    if enable_gqa:  # query head h reads key/value head h // n_rep
        n_rep = query.shape[-3] // key.shape[-3]
        key, value = (np.repeat(x, n_rep, axis=-3) for x in (key, value))
    scale = query.dtype.type(1 / np.sqrt(d_head) if scale is None else scale)
    # (..., T, d_head) @ (..., d_head, S) -> (..., T, S)
    scores = query @ np.swapaxes(key, -1, -2) * scale
    if is_causal:  # torch's top-left triangle: query i sees keys 0..i
        attn_mask = np.tril(np.ones((T, S), dtype=bool))
    if attn_mask is not None:
        scores = scores + mask_to_bias(attn_mask, scores.dtype)
    weights = softmax_core(scores)  # (..., T, S); masked rows are zeros
    if head_mask is not None:  # (H,) -> (H, 1, 1): one factor per head
        weights = weights * head_mask[:, None, None]
    batch = np.broadcast_shapes(weights.shape[:-2], value.shape[:-2])
    if weights.shape[:-2] != batch:  # value alone had extra leading dims
        weights = np.broadcast_to(weights, batch + (T, S)).copy()
    out = weights @ value  # (..., T, S) @ (..., S, d_head) -> (..., T, d_head)
    return out, weights
