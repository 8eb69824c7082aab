"""RMSNorm: Qwen3 normalises every query and key head with it before RoPE.

Shape legend:
    ...       any leading dimensions (batch, heads, positions)
    d_head    the normalised axis of ``q_norm`` / ``k_norm``
    d_model   the normalised axis of the norms around attention and MLP
"""

from __future__ import annotations

import numpy as np

from ._checks import (as_float_array, check_last_axis, check_number,
                      check_same_dtype)

__all__ = ["rms_norm", "rms_norm_core"]


def rms_norm(x, weight, eps: float = 1e-6):
    r"""``weight * x / sqrt(mean(x**2) + eps)`` over the last axis.

    Parameters
    ----------
    x : ndarray (..., d_head) or (..., d_model); float16 computed in float32
    weight : ndarray (x.shape[-1],), the learned gain, of ``x``'s dtype
    eps : float, Qwen3's ``rms_norm_eps``, >= 0

    See Also
    --------
    transformers.models.qwen3.modeling_qwen3.Qwen3RMSNorm
    """
    x, w = as_float_array("x", x), as_float_array("weight", weight, ndim=1)
    check_last_axis("weight", w, x.shape[-1], "(x.shape[-1],)", "x.shape[-1]")
    check_same_dtype(x=x, weight=w)  # torch raises on mixed dtypes too
    return rms_norm_core(x, w, check_number("eps", eps, at_least=0))


def rms_norm_core(x: np.ndarray, weight: np.ndarray, eps: float = 1e-6):
    """Unchecked core of :func:`rms_norm`.

    Parameters
    ----------
    x, weight, eps : as :func:`rms_norm` takes them, checked
    """
    h = x if x.dtype.itemsize >= 4 else x.astype(np.float32)  # float16: 32
    squares = h * h
    # the mean over the last axis (np.mean's arithmetic, without its wrapper)
    ms = np.add.reduce(squares, axis=-1, keepdims=True) / h.shape[-1]
    # h / rms, written over the squares: one temporary array, not three
    h = np.divide(h, np.sqrt(ms + h.dtype.type(eps)), out=squares)
    if h.dtype != x.dtype:
        h = h.astype(x.dtype)
    if getattr(weight, "dtype", None) != h.dtype or weight.ndim > 1:
        return weight * h  # a weight that would widen or broadcast h
    return np.multiply(h, weight, out=h)  # weight * h, in place
