"""A numerically stable softmax that is defined for fully masked rows."""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array


__all__ = ["softmax"]

def softmax(x, axis: int = -1) -> np.ndarray:
    """Softmax along ``axis``, stable for large scores and safe for all ``-inf`` rows.

    Parameters
    ----------
    x : ndarray, shape (..., N), floating
        Scores. ``-inf`` marks an entry that must get zero weight.
    axis : int, default -1
        The axis that sums to one.

    Returns
    -------
    ndarray, same shape and dtype as ``x``
        Non-negative weights. Along ``axis`` they sum to 1, except where every
        entry of ``x`` is ``-inf``: there the result is all zeros (no NaN, no
        warning), which is what torch's SDPA does for a fully masked row.

    Raises
    ------
    ValueError
        If ``x`` is not a floating-point array, or has no elements along ``axis``.

    Notes
    -----
    Subtracting the row maximum before ``exp`` leaves the result unchanged
    (the factor ``exp(-max)`` cancels) but keeps every exponent <= 0, so scores
    of magnitude 1e4 neither overflow nor underflow to 0/0.

    See Also
    --------
    torch.softmax : the same function without the fully-masked-row rule.
    """
    x = as_float_array("x", x)
    if x.shape[axis] == 0:
        raise ValueError(f"x has a 0-length softmax axis {axis}: got shape {x.shape}")
    m = np.max(x, axis=axis, keepdims=True)
    # a row of only -inf has max -inf; shift by 0 instead so exp gives exact zeros
    m = np.where(np.isneginf(m), np.zeros_like(m), m)
    e = np.exp(x - m)
    total = np.sum(e, axis=axis, keepdims=True)
    # total is 0 only for fully masked rows, whose e is all zeros: 0 / 1 = 0
    return e / np.where(total == 0, np.ones_like(total), total)
