"""Input checks shared by every public function: check at the door, once.

Each helper raises ``ValueError`` (``TypeError`` for a flag that is not a
bool) whose message names the argument, what it got and what it wanted.
Public functions call one or two of these at the top; internal calls between
modules use the unchecked cores, so no array is checked twice.
"""

from __future__ import annotations

import numpy as np


def as_float_array(name: str, x, *, min_ndim: int = 1, ndim: int | None = None
                   ) -> np.ndarray:
    """``x`` as a floating ndarray of ``ndim`` (or >= ``min_ndim``) axes."""
    arr = np.asarray(x)
    if not np.issubdtype(arr.dtype, np.floating):
        raise ValueError(
            f"{name} must be a floating-point array (float32 or float64), "
            f"got dtype {arr.dtype} with shape {arr.shape}"
        )
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(
            f"{name} must have {ndim} dimensions, got shape {arr.shape}"
        )
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimensions, "
            f"got shape {arr.shape}"
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


def check_int(name: str, value, *, low: int | None = None,
              high: int | None = None) -> int:
    """``value`` as an int in ``low .. high`` (inclusive); bools refused."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        lo = "" if low is None else f"{low} <= "
        hi = "" if high is None else f" <= {high}"
        raise ValueError(f"{name} must be an integer {lo}{name}{hi}, got {value}")
    return int(value)


def check_positive_int(name: str, value) -> int:
    """``value`` as an int >= 1."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value}")
    return int(value)


def check_bool(name: str, value) -> bool:
    """A flag must be a real bool: ``"False"`` or ``0`` would read as a choice."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be True or False, got {type(value).__name__} {value!r}"
        )
    return bool(value)


def check_choice(name: str, value, choices: tuple) -> str:
    """``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_theta(name: str, value) -> float:
    """RoPE's base: a finite real number > 1 (Qwen3: 1_000_000.0)."""
    if (isinstance(value, bool) or not np.isscalar(value)
            or not np.isreal(value) or not np.isfinite(value) or value <= 1):
        raise ValueError(
            f"{name} must be a finite number > 1 (Qwen3: 1_000_000.0), "
            f"got {value!r}"
        )
    return float(value)


def check_even(name: str, value) -> int:
    """An even integer >= 2 (RoPE rotates pairs of coordinates)."""
    value = check_positive_int(name, value)
    if value % 2:
        raise ValueError(
            f"{name} must be even, got {value} "
            "(RoPE rotates pairs of coordinates)"
        )
    return value


def check_same_dtype(**arrays: np.ndarray) -> np.dtype:
    """The common float dtype of ``arrays``; raise naming both if they differ.

    torch raises on mixed dtypes rather than casting; so does this.
    """
    (first, a), *rest = arrays.items()
    for name, b in rest:
        if b.dtype != a.dtype:
            raise ValueError(
                f"{name} has dtype {b.dtype} but {first} has dtype {a.dtype}: "
                "cast one of them (mixed dtypes are not cast silently)"
            )
    return a.dtype


def broadcast_shapes(names_and_shapes: dict[str, tuple]) -> tuple:
    """``np.broadcast_shapes`` with an error message naming every argument."""
    try:
        return np.broadcast_shapes(*names_and_shapes.values())
    except ValueError:
        listed = ", ".join(f"{n} {s}" for n, s in names_and_shapes.items())
        raise ValueError(
            f"leading (batch/head) dimensions do not broadcast: {listed}"
        ) from None


# --- layer checks
def check_heads(num_attention_heads, num_key_value_heads) -> tuple[int, int]:
    """``(H, H_kv)`` as ints >= 1 with ``H_kv`` dividing ``H``."""
    H = check_positive_int("num_attention_heads", num_attention_heads)
    H_kv = check_positive_int("num_key_value_heads", num_key_value_heads)
    if H % H_kv:
        raise ValueError(
            f"num_attention_heads = {H} is not a multiple of "
            f"num_key_value_heads = {H_kv}: each key/value head must serve "
            "the same number of query heads"
        )
    return H, H_kv


def check_01_mask(name: str, mask) -> np.ndarray:
    """A mask as a bool array: booleans, or numbers that are all 0 or 1."""
    m = np.asarray(mask)
    if m.dtype == bool:
        return m
    numeric = (np.issubdtype(m.dtype, np.integer)
               or np.issubdtype(m.dtype, np.floating))
    if not numeric or not np.isin(m, (0, 1)).all():
        seen = np.unique(m)[:6].tolist() if numeric else m.dtype
        raise ValueError(
            f"{name} must be boolean or hold only 0 and 1 (1 = real token), "
            f"got dtype {m.dtype} with values {seen}"
        )
    return m.astype(bool)


def check_nonnegative(name: str, value) -> float:
    """A real number >= 0 (an epsilon), as a float."""
    if (isinstance(value, bool) or not np.isscalar(value)
            or not np.isreal(value) or not value >= 0):
        raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    return float(value)
