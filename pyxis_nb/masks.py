"""Boolean attention masks. Convention everywhere: True = may attend.

Shape legend:
    B   batch
    T   query positions
    S   key positions

With ``T < S`` (a KV cache) the queries are the last ``T`` of ``S``
positions: the causal triangle sits bottom-right by default, as in
FlashAttention; torch's ``is_causal=True`` is ``align="top_left"``.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_choice, check_int_array, check_positive_int

__all__ = ["causal_mask", "sliding_window_mask", "padding_mask",
           "causal_mask_mod", "sliding_window_mask_mod"]

ALIGNMENTS = ("bottom_right", "top_left")


def _check_sizes(T, S=None) -> tuple[int, int]:
    """Query and key position counts ``(T, S)``, ``S`` defaulting to ``T``."""
    T = check_positive_int("T", T)
    return T, check_positive_int("S", T if S is None else S)


def causal_mask(T: int, S: int | None = None, *,
                align: str = "bottom_right") -> np.ndarray:
    """Lower-triangular mask: query ``i`` sees the keys up to its position.

    Parameters
    ----------
    T, S : int, query and key positions, >= 1 (``S`` defaults to ``T``)
    align : "bottom_right": query ``i`` at ``S - T + i``; "top_left": at ``i``

    See Also
    --------
    torch.nn.attention.bias.causal_lower_right : the bottom-right mask.
    """
    T, S = _check_sizes(T, S)
    check_choice("align", align, ALIGNMENTS)
    offset = S - T if align == "bottom_right" else 0  # query i at i + offset
    return causal_mask_mod(0, 0, np.arange(T)[:, None] + offset,
                           np.arange(S))  # (T, 1) vs (S,) -> (T, S)


def causal_mask_mod(b, h, q_idx, kv_idx):
    """FlexAttention's causal ``mask_mod``: a query sees keys up to itself.

    Parameters
    ----------
    b, h, q_idx, kv_idx : batch and head (unused), query and key positions
    """
    return kv_idx <= q_idx


def sliding_window_mask_mod(window: int):
    """A causal sliding window as FlexAttention's ``mask_mod``.

    As transformers' ``sliding_window_causal_mask_function`` (Mistral).

    Parameters
    ----------
    window : int, keys a query sees, itself included, >= 1
    """
    window = check_positive_int("window", window)

    def mask_mod(b, h, q_idx, kv_idx):
        return causal_mask_mod(b, h, q_idx, kv_idx) & (q_idx - kv_idx < window)

    return mask_mod


def sliding_window_mask(T: int, S: int | None = None, *, window: int,
                        align: str = "bottom_right") -> np.ndarray:
    """Band mask: query and key are less than ``window`` positions apart.

    Two-sided (Longformer's); ``& causal_mask(T, S)``: Mistral's window.

    Parameters
    ----------
    T, S : int, query and key positions, >= 1 (``S`` defaults to ``T``)
    window : int, width of the window, >= 1
    align : where the queries sit among the keys, as in :func:`causal_mask`
    """
    T, S = _check_sizes(T, S)
    window = check_positive_int("window", window)
    check_choice("align", align, ALIGNMENTS)
    offset = S - T if align == "bottom_right" else 0
    q_pos = np.arange(T)[:, None] + offset  # (T, 1) query positions
    k_pos = np.arange(S)[None, :]  # (1, S) key positions
    return np.abs(q_pos - k_pos) < window  # (T, S)


def padding_mask(lengths, S: int, *, side: str = "right") -> np.ndarray:
    """Mask that hides PAD keys: True on real tokens, False on padding.

    Parameters
    ----------
    lengths : array_like of int (B,), real tokens per sequence, in 1 .. S
    S : int, the padded length
    side : "right" or "left" (batched generation): where the padding sits

    See Also
    --------
    transformers.PreTrainedTokenizerBase.pad : its ``attention_mask``.
    """
    S = check_positive_int("S", S)
    lengths = check_int_array("lengths", lengths, ndim=1, low=1, high=S,
                              want="(B,)")
    check_choice("side", side, ("right", "left"))
    return real_tokens(lengths, S, side)[:, None, None, :]  # (B, 1, 1, S)


def real_tokens(lengths: np.ndarray, S: int, side: str) -> np.ndarray:
    """Unchecked core of :func:`padding_mask`: (B, S), True on real tokens."""
    pos = np.arange(S)  # (S,)
    if side == "right":
        return pos < lengths[:, None]  # (B, 1) -> (B, S)
    return pos >= S - lengths[:, None]  # (B, 1) -> (B, S)


def mask_to_bias(attn_mask: np.ndarray, dtype) -> np.ndarray:
    """Unchecked core: a boolean mask as an additive bias (0 or -inf)."""
    if attn_mask.dtype == bool:
        return np.where(attn_mask, 0, -np.inf).astype(dtype)
    return attn_mask.astype(dtype, copy=False)
