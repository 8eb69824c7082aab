"""A numerically stable softmax that is defined for fully masked rows.

Shape legend:
    ...   any leading dimensions
    S     the axis that sums to one (key positions, for attention scores)
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_nonempty

__all__ = ["softmax", "softmax_core"]


def softmax(x, axis: int = -1) -> np.ndarray:
    """Softmax along ``axis``; a row of only ``-inf`` gives zeros, not NaN.

    Parameters
    ----------
    x, axis : float ndarray (..., S), ``-inf`` = zero weight; int, default -1

    See Also
    --------
    torch.softmax : the same, but NaN for a fully masked row."""
    x = as_float_array("x", x)
    check_nonempty("x", x, {axis: "softmax"})
    return softmax_core(x, axis)


def softmax_core(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """:func:`softmax` without the input checks (for internal callers).

    The package's one softmax: the eager kernel's and every other caller's.

    Parameters
    ----------
    x, axis : as :func:`softmax` takes them, checked
    """
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isneginf(m), 0, m)  # all -inf row: shift by 0, not NaN
    e = np.exp(x - m)  # every exponent <= 0: no overflow
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total == 0, 1, total)  # masked row: 0 / 1 = 0
