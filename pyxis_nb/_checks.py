"""Input checks shared by every public function.

Every check raises ``ValueError`` whose message names the argument, the shape
(or dtype) it received and what was expected, so that a reader who passes the
wrong thing learns what to fix instead of getting a silent broadcast or a NaN.
"""

from __future__ import annotations

import numpy as np


def as_float_array(name: str, x, *, min_ndim: int = 1) -> np.ndarray:
    """Return ``x`` as a floating ndarray, or raise a ValueError naming ``name``."""
    arr = np.asarray(x)
    if not np.issubdtype(arr.dtype, np.floating):
        raise ValueError(
            f"{name} must be a floating-point array (float32 or float64), "
            f"got dtype {arr.dtype} with shape {arr.shape}"
        )
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimensions, got shape {arr.shape}"
        )
    return arr


def check_nonempty(name: str, arr: np.ndarray, axes: dict[int, str]) -> None:
    """Raise if any of the named axes of ``arr`` has length 0."""
    for axis, label in axes.items():
        if arr.shape[axis] == 0:
            raise ValueError(
                f"{name} has a 0-length {label} axis: got shape {arr.shape}, "
                f"expected {label} >= 1"
            )


def check_positive_int(name: str, value) -> int:
    """Return ``value`` as an int, or raise if it is not an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value}")
    return int(value)


def broadcast_shapes(names_and_shapes: dict[str, tuple]) -> tuple:
    """``np.broadcast_shapes`` with an error message that names every argument."""
    try:
        return np.broadcast_shapes(*names_and_shapes.values())
    except ValueError:
        listed = ", ".join(f"{n} {s}" for n, s in names_and_shapes.items())
        raise ValueError(
            f"leading (batch/head) dimensions do not broadcast: {listed}"
        ) from None
