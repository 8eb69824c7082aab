"""Scaled dot-product attention with the semantics of PyTorch's SDPA.

Shape legend (as in torch's documentation):
    ... leading batch/head dims, broadcast between the three inputs
    L   query positions          E   query/key feature size
    S   key/value positions      Ev  value feature size
    Hq, Hkv  query and key/value heads (axis -3), only with ``enable_gqa``
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, broadcast_shapes, check_nonempty
from .masks import causal_mask
from .softmax import softmax


__all__ = ["scaled_dot_product_attention"]

def _check_qkv(query, key, value, enable_gqa: bool):
    """Validate the three inputs; return them as arrays and the GQA group size."""
    q = as_float_array("query", query, min_ndim=2)
    k = as_float_array("key", key, min_ndim=2)
    v = as_float_array("value", value, min_ndim=2)
    for name, arr, want in (("query", q, "(..., L, E)"), ("key", k, "(..., S, E)"),
                            ("value", v, "(..., S, Ev)")):
        check_nonempty(name, arr, {-2: "sequence", -1: "feature"})
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(
            f"query, key and value must share one dtype, got query {q.dtype}, "
            f"key {k.dtype}, value {v.dtype}"
        )
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(
            f"key has shape {k.shape}, expected (..., S, E) with E = {q.shape[-1]} "
            f"to match query {q.shape}"
        )
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(
            f"value has shape {v.shape}, expected (..., S, Ev) with S = {k.shape[-2]} "
            f"to match key {k.shape}"
        )
    n_rep = 1
    if enable_gqa:
        if q.ndim < 3 or k.ndim < 3 or v.ndim < 3:
            raise ValueError(
                "enable_gqa needs a head axis: query (..., Hq, L, E), key "
                f"(..., Hkv, S, E), value (..., Hkv, S, Ev); got query {q.shape}, "
                f"key {k.shape}, value {v.shape}"
            )
        hq, hkv = q.shape[-3], k.shape[-3]
        if v.shape[-3] != hkv:
            raise ValueError(
                f"value has {v.shape[-3]} heads (shape {v.shape}), expected Hkv = {hkv} "
                f"heads to match key {k.shape}"
            )
        if hq % hkv != 0:
            raise ValueError(
                f"with enable_gqa, query heads must be a multiple of key/value heads: "
                f"query has Hq = {hq} (shape {q.shape}), key has Hkv = {hkv} "
                f"(shape {k.shape})"
            )
        n_rep = hq // hkv
    return q, k, v, n_rep


def _mask_to_bias(attn_mask, batch: tuple, L: int, S: int, dtype) -> np.ndarray:
    """Turn a boolean or float mask into an additive bias of shape (..., L, S)."""
    m = np.asarray(attn_mask)
    want = batch + (L, S)
    if m.dtype == bool:
        bias = np.where(m, 0.0, -np.inf).astype(dtype)
    elif np.issubdtype(m.dtype, np.floating):
        bias = m.astype(dtype, copy=False)
    else:
        raise ValueError(
            f"attn_mask must be boolean (True = may attend) or floating (added to the "
            f"scores), got dtype {m.dtype} with shape {m.shape}"
        )
    try:
        fits = np.broadcast_shapes(m.shape, want) == want
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"attn_mask has shape {m.shape}, expected a shape that broadcasts to "
            f"(..., L, S) = {want} without enlarging it"
        )
    return bias


def scaled_dot_product_attention(
    query,
    key,
    value,
    *,
    attn_mask=None,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    return_weights: bool = False,
):
    r"""Attention ``softmax(Q K^T * scale + mask) V``, as torch's SDPA computes it.

    Parameters
    ----------
    query : ndarray, shape (..., L, E)
    key : ndarray, shape (..., S, E)
    value : ndarray, shape (..., S, Ev)
        Floating arrays of one dtype; float32 stays float32. The leading ``...``
        dims broadcast against each other (with ``enable_gqa`` the head axis -3
        follows the rule below instead).
    attn_mask : ndarray, shape broadcastable to (..., L, S), optional
        Boolean: True = may attend (torch's convention; some libraries flip it).
        Floating: added to the scores before the softmax (0 keeps, ``-inf`` hides).
    is_causal : bool, default False
        Apply torch's causal mask: query ``i`` sees keys ``0..i`` (top-left
        aligned, also when ``L != S``). Cannot be combined with ``attn_mask``.
    scale : float, optional
        Multiplies the scores; defaults to ``1 / sqrt(E)``.
    enable_gqa : bool, default False
        Grouped-query attention: query has ``Hq`` heads on axis -3, key and value
        ``Hkv`` heads with ``Hq % Hkv == 0``; each run of ``Hq // Hkv`` consecutive
        query heads shares one key/value head (like ``repeat_kv``).
    return_weights : bool, default False
        Also return the attention weights.

    Returns
    -------
    output : ndarray, shape (..., L, Ev)
    weights : ndarray, shape (..., L, S)
        Only with ``return_weights=True``. Rows sum to 1, except a query row with
        no allowed key, whose weights and output are all zeros (torch >= 2.5
        does the same; never NaN).

    Raises
    ------
    ValueError
        Non-float or mixed-dtype input, a 0-length axis, E of key != E of query,
        S of value != S of key, leading dims that do not broadcast, a mask that
        does not broadcast to (..., L, S), ``is_causal`` with ``attn_mask``, or
        with ``enable_gqa`` query heads that are not a multiple of key heads.

    See Also
    --------
    torch.nn.functional.scaled_dot_product_attention : the reference semantics.
    pyxis_nb.masks.causal_mask : the bottom-right causal mask needed with a KV cache.

    Examples
    --------
    >>> import numpy as np, pyxis_nb as px
    >>> q = np.array([[1.0]]); k = np.log(np.array([[1.0], [2.0], [3.0]]))
    >>> v = np.array([[2.0], [4.0], [8.0]])
    >>> out = px.scaled_dot_product_attention(q, k, v, scale=1.0)
    >>> round(float(out[0, 0]), 4)
    5.6667
    """
    q, k, v, n_rep = _check_qkv(query, key, value, enable_gqa)
    L, E, S = q.shape[-2], q.shape[-1], k.shape[-2]
    if is_causal and attn_mask is not None:
        raise ValueError(
            f"pass either attn_mask or is_causal=True, not both (as torch): got "
            f"attn_mask of shape {np.shape(attn_mask)} with is_causal=True"
        )
    if n_rep > 1:
        # (..., Hkv, S, E) -> (..., Hkv * n_rep, S, E): query head h uses kv head h // n_rep
        k = np.repeat(k, n_rep, axis=-3)
        v = np.repeat(v, n_rep, axis=-3)
    batch = broadcast_shapes({"query": q.shape[:-2], "key": k.shape[:-2],
                              "value": v.shape[:-2]})
    if scale is None:
        scale = 1.0 / np.sqrt(E)

    scores = (q @ np.swapaxes(k, -1, -2)) * q.dtype.type(scale)  # (..., L, E) x (..., E, S) -> (..., L, S)
    if is_causal:
        scores = np.where(causal_mask(L, S, align="top_left"), scores, q.dtype.type(-np.inf))
    elif attn_mask is not None:
        scores = scores + _mask_to_bias(attn_mask, batch, L, S, q.dtype)
    weights = softmax(scores, axis=-1)  # (..., L, S); fully masked rows are zeros
    if weights.shape[:-2] != batch:
        # value alone had extra leading dims: give the weights the full (..., L, S) shape
        weights = np.broadcast_to(weights, batch + (L, S)).copy()
    out = weights @ v  # (..., L, S) x (..., S, Ev) -> (..., L, Ev)
    return (out, weights) if return_weights else out
