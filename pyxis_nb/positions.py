"""Absolute positional encodings: tell attention *where* each token sits.

Shape legend:
    ...       leading batch dimensions
    T         positions
    d_model   size of one token's vector (even: sin/cos pairs)
"""

from __future__ import annotations

import numpy as np

from ._checks import check_frequencies, check_int, check_pairs
from ._checks import check_positive_int

__all__ = ["sinusoidal_positions", "add_positions"]


def sinusoidal_positions(T: int, hidden_size: int, *, theta: float = 10000.0,
                         offset: int = 0, dtype=np.float64) -> np.ndarray:
    """The fixed sinusoidal position encodings of Vaswani et al. (2017).

    Parameters
    ----------
    T : int, positions (the rows), >= 1
    hidden_size : int, ``d_model``, even (sin/cos pairs)
    theta : float, the frequency base (as RoPE's), > 1
    offset : int, position of row 0 (the tokens already in a KV cache)
    dtype : numpy float dtype of the table

    See Also
    --------
    create_sinusoidal_embeddings : Hugging Face's (DistilBERT) same table.
    """
    T, offset = check_positive_int("T", T), check_int("offset", offset, low=0)
    d_model, theta = check_frequencies("hidden_size", hidden_size, theta,
                                        "theta", "sin/cos")
    inv_freq = theta ** (-np.arange(0, d_model, 2) / d_model)  # (d_model/2,)
    # (T, 1) * (d_model/2,) -> (T, d_model/2): position times frequency
    angles = np.arange(offset, offset + T)[:, None] * inv_freq
    pe = np.stack([np.sin(angles), np.cos(angles)], -1)  # (T, d_model/2, 2)
    return pe.reshape(T, d_model).astype(dtype, copy=False)  # sin, cos, ...


def add_positions(x, *, theta: float = 10000.0, offset: int = 0) -> np.ndarray:
    """Add the sinusoidal encodings to token vectors: ``x + PE``.

    Parameters
    ----------
    x : ndarray of float, shape (..., T, d_model), d_model even
    theta, offset : as :func:`sinusoidal_positions` takes them
    """
    x = check_pairs("x", x, "d_model", "sin/cos pairs")
    T, d_model = x.shape[-2:]
    pe = sinusoidal_positions(T, d_model, theta=theta, offset=offset,
                              dtype=x.dtype)  # (T, d_model)
    return x + pe  # (..., T, d_model) + (T, d_model)
