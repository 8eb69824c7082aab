"""Boolean attention masks. Convention everywhere: True = may attend.

Shape legend: ``L`` query positions, ``S`` key positions, ``B`` batch.
A mask of shape (L, S) broadcasts against scores of shape (..., L, S).

Alignment when L != S
---------------------
With a KV cache the L queries are the *last* L of the S positions: query row
``i`` sits at absolute position ``S - L + i``. :func:`causal_mask` therefore
aligns the triangle to the bottom-right corner by default, which is what the
KV-cache chapter needs and what FlashAttention and
``torch.nn.attention.bias.causal_lower_right`` do. PyTorch's
``scaled_dot_product_attention(..., is_causal=True)`` instead aligns it to the
top-left (query ``i`` sees keys ``0..i``); ask for that with
``align="top_left"``. For L == S the two are the same matrix.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_positive_int

__all__ = ["causal_mask", "sliding_window_mask", "padding_mask"]

_ALIGNMENTS = ("bottom_right", "top_left")


def _diagonal_offset(L: int, S: int, align: str) -> int:
    """How far right of the main diagonal query row 0's last allowed key is."""
    if align not in _ALIGNMENTS:
        raise ValueError(f"align must be one of {_ALIGNMENTS}, got {align!r}")
    return S - L if align == "bottom_right" else 0


def causal_mask(L: int, S: int | None = None, *, align: str = "bottom_right") -> np.ndarray:
    """Lower-triangular boolean mask: query ``i`` may attend to keys up to its position.

    Parameters
    ----------
    L : int
        Number of query positions (>= 1).
    S : int, optional
        Number of key positions (>= 1); defaults to ``L``.
    align : {"bottom_right", "top_left"}
        Where the triangle sits when ``L != S`` (see the module docstring).
        ``"bottom_right"``: query ``i`` is at position ``S - L + i`` and sees keys
        ``0 .. S - L + i``. ``"top_left"``: query ``i`` sees keys ``0 .. i``, as
        torch's ``is_causal=True`` does.

    Returns
    -------
    ndarray of bool, shape (L, S)
        True = may attend.

    Raises
    ------
    ValueError
        If ``L`` or ``S`` is not an integer >= 1, or ``align`` is unknown.

    See Also
    --------
    torch.nn.attention.bias.causal_lower_right : the bottom-right form in torch.
    """
    L = check_positive_int("L", L)
    S = L if S is None else check_positive_int("S", S)
    return np.tril(np.ones((L, S), dtype=bool), k=_diagonal_offset(L, S, align))


def sliding_window_mask(
    L: int, S: int | None = None, *, window: int, align: str = "bottom_right"
) -> np.ndarray:
    """Band mask: query ``i`` may attend to keys less than ``window`` positions away.

    On its own the band is two-sided (``|pos_q - pos_k| < window``), as in the
    local attention of Longformer. Combine it with :func:`causal_mask` using
    ``&`` for the one-sided window of Mistral: each query then sees itself and
    the ``window - 1`` keys before it.

    Parameters
    ----------
    L, S : int
        Query and key positions, as in :func:`causal_mask`.
    window : int
        Width of the window, >= 1 (``window=1``: each query sees only itself).
    align : {"bottom_right", "top_left"}
        Position of query row 0 when ``L != S``, as in :func:`causal_mask`.

    Returns
    -------
    ndarray of bool, shape (L, S)
        True = may attend.

    Raises
    ------
    ValueError
        If ``L``, ``S`` or ``window`` is not an integer >= 1, or ``align`` is unknown.

    See Also
    --------
    causal_mask : combine with ``&`` for a causal sliding window.
    torch.nn.functional.scaled_dot_product_attention : takes the result as ``attn_mask``.
    """
    L = check_positive_int("L", L)
    S = L if S is None else check_positive_int("S", S)
    window = check_positive_int("window", window)
    offset = _diagonal_offset(L, S, align)
    q_pos = np.arange(L)[:, None] + offset  # (L, 1) absolute query positions
    k_pos = np.arange(S)[None, :]  # (1, S)
    return np.abs(q_pos - k_pos) < window  # (L, S)


def padding_mask(lengths, S: int, *, side: str = "right") -> np.ndarray:
    """Mask that hides PAD keys: True on real tokens, False on padding.

    Parameters
    ----------
    lengths : array_like of int, shape (B,)
        Number of real tokens in each sequence, each in ``1 .. S``.
    S : int
        Padded sequence length.
    side : {"right", "left"}
        Where the padding sits. Right padding (real tokens first) is usual for
        training; left padding (real tokens last) for batched generation.

    Returns
    -------
    ndarray of bool, shape (B, 1, 1, S)
        Broadcasts against scores of shape (B, H, L, S). It hides PAD *keys*
        only: the outputs at PAD *query* positions are still computed.

    Raises
    ------
    ValueError
        If ``lengths`` is not 1-D integers in ``1 .. S``, or ``side`` is unknown.
    """
    S = check_positive_int("S", S)
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.shape[0] == 0 or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(
            f"lengths must be a non-empty 1-D integer array of shape (B,), "
            f"got shape {lengths.shape} and dtype {lengths.dtype}"
        )
    if np.any(lengths < 1) or np.any(lengths > S):
        raise ValueError(f"lengths must lie in 1 .. S={S}, got {lengths.tolist()}")
    if side not in ("right", "left"):
        raise ValueError(f"side must be 'right' or 'left', got {side!r}")
    pos = np.arange(S)[None, :]  # (1, S)
    if side == "right":
        real = pos < lengths[:, None]  # (B, S)
    else:
        real = pos >= S - lengths[:, None]  # (B, S)
    return real[:, None, None, :]  # (B, 1, 1, S)
