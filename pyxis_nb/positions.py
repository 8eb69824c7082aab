"""Absolute positional encodings: tell attention *where* each token sits.

Attention by itself treats its input as a set: permute the tokens and the
outputs are permuted the same way (see the permutation chapter). The oldest
fix, from "Attention Is All You Need" (Vaswani et al., 2017), adds to each
token vector a fixed vector that depends only on its position.

Shape legend: ``T`` positions, ``d_model`` embedding size (even),
``i`` indexes the ``d_model / 2`` frequency pairs.

    PE[pos, 2i]     = sin(pos / base ** (2i / d_model))
    PE[pos, 2i + 1] = cos(pos / base ** (2i / d_model))

Pairs are interleaved (sin in even columns, cos in odd ones), as in the paper.
Low ``i`` turns fast with ``pos``, high ``i`` slowly, so every position gets a
distinct vector. RoPE (``rope`` chapter) uses the same frequencies but
*rotates* Q and K instead of adding to the input.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_positive_int

__all__ = ["sinusoidal_positions", "add_positions"]


def sinusoidal_positions(T: int, d_model: int, *, base: float = 10000.0, offset: int = 0,
                         dtype=np.float64) -> np.ndarray:
    """The fixed sinusoidal position encodings of Vaswani et al. (2017).

    Parameters
    ----------
    T : int
        Number of positions (>= 1).
    d_model : int
        Size of each encoding, even and >= 2 (it is added to token vectors of
        this size).
    base : float, default 10000.0
        The wavelength base; pair ``i`` has angular frequency
        ``base ** (-2i / d_model)``. Must be > 0.
    offset : int, default 0
        Position of the first row (>= 0), e.g. the number of tokens already
        in a KV cache.
    dtype : numpy float dtype, default float64

    Returns
    -------
    ndarray, shape (T, d_model)
        Row ``t`` encodes position ``offset + t``; even columns hold sines, odd
        columns cosines. Every entry lies in [-1, 1]; row 0 at offset 0 is
        ``[0, 1, 0, 1, ...]``.

    Raises
    ------
    ValueError
        If ``T`` is not an integer >= 1, ``d_model`` is not an even integer
        >= 2, ``base`` is not > 0, or ``offset`` is negative.

    See Also
    --------
    transformers.models.distilbert.modeling_distilbert.create_sinusoidal_embeddings :
        the same table, as Hugging Face builds it.
    pyxis_nb.add_positions : add the table to a batch of token vectors.
    """
    T = check_positive_int("T", T)
    d_model = check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be even (sin/cos pairs), got {d_model}")
    if not base > 0:
        raise ValueError(f"base must be > 0, got {base!r}")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
        raise ValueError(f"offset must be an integer >= 0, got {offset!r}")
    pos = np.arange(offset, offset + T, dtype=np.float64)[:, None]  # (T, 1)
    inv_freq = float(base) ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model)  # (d_model/2,)
    angles = pos * inv_freq[None, :]  # (T, 1) * (1, d_model/2) -> (T, d_model/2)
    pe = np.empty((T, d_model), dtype=np.float64)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe.astype(dtype, copy=False)


def add_positions(x, *, base: float = 10000.0, offset: int = 0) -> np.ndarray:
    """Add sinusoidal position encodings to token vectors: ``x + PE``.

    Parameters
    ----------
    x : ndarray, shape (..., T, d_model), floating
        Token vectors; ``d_model`` must be even.
    base, offset
        As in :func:`sinusoidal_positions`.

    Returns
    -------
    ndarray, shape (..., T, d_model), same dtype as ``x``
        The same tokens, now carrying their position (``offset + t`` for row ``t``).

    Raises
    ------
    ValueError
        If ``x`` is not a floating array of shape (..., T, d_model) with an even
        ``d_model``, or an argument of :func:`sinusoidal_positions` is invalid.

    See Also
    --------
    sinusoidal_positions : the table that is added.
    """
    x = as_float_array("x", x, min_ndim=2)
    T, d_model = x.shape[-2], x.shape[-1]
    if T == 0 or d_model == 0 or d_model % 2:
        raise ValueError(
            f"x has shape {x.shape}, expected (..., T, d_model) with T >= 1 and an even "
            f"d_model >= 2"
        )
    # (..., T, d_model) + (T, d_model) broadcasts over the leading dims
    return x + sinusoidal_positions(T, d_model, base=base, offset=offset, dtype=x.dtype)
