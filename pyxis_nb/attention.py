"""Scaled dot-product attention with the semantics of PyTorch's SDPA.

Shape legend:
    ...      leading batch/head dimensions, broadcast between the inputs
    T        query positions
    S        key/value positions
    d_head   size of one head's query, key and value vectors
    H        query heads (axis -3), only with ``enable_gqa``
    H_kv     key/value heads (axis -3), only with ``enable_gqa``
    n_rep    query heads per key/value head, ``H // H_kv``
    B        batch (axis 0), in :func:`sdpa_tiled_core`
    block_q  query positions of one tile, in :func:`sdpa_tiled_core`
    block_k  key positions of one tile, in :func:`sdpa_tiled_core`
"""

from __future__ import annotations

import numpy as np

from ._checks import check_attention
from .masks import mask_to_bias
from .stable_softmax import softmax_core

__all__ = ["scaled_dot_product_attention", "sdpa_core", "sdpa_tiled_core"]


def scaled_dot_product_attention(query, key, value, *, attn_mask=None,
                                 is_causal: bool = False,
                                 scale: float | None = None,
                                 enable_gqa: bool = False,
                                 output_attentions: bool = False):
    """``softmax(Q K^T * scale + mask) V``, as torch's SDPA computes it.

    Parameters
    ----------
    query : ndarray, shape (..., T, d_head)
    key : ndarray, shape (..., S, d_head)
    value : ndarray, shape (..., S, d_head)
        Floats of one dtype; the leading dims broadcast.
    attn_mask : ndarray, shape broadcastable to (..., T, S), optional
        Boolean, True = may attend; or floating, added to the scores.
    is_causal : bool, default False
        Torch's top-left causal mask (query ``i`` sees keys ``0..i``).
    scale : float, optional
        Defaults to ``1 / sqrt(d_head)``.
    enable_gqa : bool, default False
        Query heads ``H`` on axis -3 share ``H_kv`` key/value heads.
    output_attentions : bool, default False
        Also return the weights.

    Returns
    -------
    output : ndarray, shape (..., T, d_head)
    weights : ndarray, shape (..., T, S), only with ``output_attentions``
        A row with no allowed key is all zeros (as torch >= 2.5), never NaN.

    See Also
    --------
    torch.nn.functional.scaled_dot_product_attention
    """
    q, k, v, attn_mask, _ = check_attention(query, key, value, attn_mask,
                                            is_causal, enable_gqa)
    out, weights = sdpa_core(q, k, v, attn_mask=attn_mask,
                             is_causal=is_causal, scale=scale,
                             enable_gqa=enable_gqa)
    return (out, weights) if output_attentions else out


def sdpa_core(query, key, value, attn_mask=None, is_causal=False,
              scale=None, enable_gqa=False, head_mask=None):
    """Unchecked core of :func:`scaled_dot_product_attention`: out, weights.

    For callers that checked their inputs already (a layer, a model).

    Parameters
    ----------
    query : ndarray, shape (..., T, d_head)
    key, value : ndarray, shape (..., S, d_head)
        Of the dtype of ``query``; with ``enable_gqa``, (..., H_kv, S,
        d_head).
    attn_mask : ndarray, broadcastable to (..., T, S), optional
        Boolean (True = may attend) or floating (added to the scores).
    is_causal : bool, default False
        Torch's top-left triangle, used instead of ``attn_mask``.
    scale : float, optional
        Defaults to ``1 / sqrt(d_head)``.
    enable_gqa : bool, default False
        Query head ``h`` (axis -3) reads key/value head ``h // n_rep``.
    head_mask : ndarray, shape (H,), optional
        Multiplies each head's weights before they mix the values (0
        switches a head off), as the ``head_mask`` of older transformers
        models did; the weights returned are the multiplied ones.

    Returns
    -------
    output : ndarray, shape (..., T, d_head)
    weights : ndarray, shape (..., T, S)
    """
    T, S, d_head = query.shape[-2], key.shape[-2], query.shape[-1]
    if enable_gqa:  # query head h reads key/value head h // n_rep
        n_rep = query.shape[-3] // key.shape[-3]
        key, value = (np.repeat(x, n_rep, axis=-3) for x in (key, value))
    scale = query.dtype.type(1 / np.sqrt(d_head) if scale is None else scale)
    # (..., T, d_head) @ (..., d_head, S) -> (..., T, S)
    scores = query @ np.swapaxes(key, -1, -2) * scale
    if is_causal:  # torch's top-left triangle: query i sees keys 0..i
        attn_mask = np.tril(np.ones((T, S), dtype=bool))
    if attn_mask is not None:
        scores = scores + mask_to_bias(attn_mask, scores.dtype)
    weights = softmax_core(scores)  # (..., T, S); masked rows are zeros
    if head_mask is not None:  # (H,) -> (H, 1, 1): one factor per head
        weights = weights * head_mask[:, None, None]
    batch = np.broadcast_shapes(weights.shape[:-2], value.shape[:-2])
    if weights.shape[:-2] != batch:  # value alone had extra leading dims
        weights = np.broadcast_to(weights, batch + (T, S)).copy()
    out = weights @ value  # (..., T, S) @ (..., S, d_head) -> (..., T, d_head)
    return out, weights


#: below this many query positions :func:`sdpa_tiled_core` runs
#: :func:`sdpa_core`: a (T, S) array that small costs less than tiles.
TILED_MIN_T = 64


def sdpa_tiled_core(query, key, value, attn_mask=None, block_q=64,
                    block_k=1024):
    """Unchecked: :func:`sdpa_core`'s output, tile by tile, no weights.

    FlashAttention's loop (``px.tiled.tiled_attention_loop``) laid out for
    speed: the ``n_rep`` query heads that share a key/value head are the
    rows of one tile, and a tile's scores are stored keys by queries, so
    the maximum and the sum over the keys run down columns, vectorised.
    Keys no query of a tile may see are never computed (under the causal
    mask, those after its last query); the mask is added only to the
    columns it hides something in. With one key tile (S <= ``block_k``)
    the online softmax is the ordinary one. Equal to :func:`sdpa_core` to
    rounding (the queries are scaled before the product, not the scores);
    a row with no allowed key gives zeros, as there. Short ``T``, a float
    or per-head mask, and inputs not shaped as below run :func:`sdpa_core`.

    Parameters
    ----------
    query : ndarray, shape (B, H, T, d_head)
    key, value : ndarray, shape (B, H_kv, S, d_head)
        Of the dtype of ``query``; query head ``h`` reads key/value head
        ``h // n_rep``.
    attn_mask : ndarray of bool, broadcastable to (B, 1, T, S), optional
        True = may attend.
    block_q : int, default 64
        Query positions of one tile (measured best at Qwen3's and SmolLM2's
        shapes, ``bench_generate``).
    block_k : int, default 1024
        Key positions of one tile.

    Returns
    -------
    ndarray, shape (B, H, T, d_head)
        A view of an array laid out (B, T, H, d_head), so that merging the
        heads costs no copy.

    See Also
    --------
    torch.nn.functional.scaled_dot_product_attention : the fused kernels.
    """
    mask = _tile_mask(attn_mask, query, key, value)
    if mask is False:  # short T, or a case the tiles do not take
        return sdpa_core(query, key, value, attn_mask=attn_mask,
                         enable_gqa=True)[0]
    (B, H, T, d_head), (H_kv, S, d_v) = query.shape, value.shape[1:]
    n_rep = H // H_kv
    block_k = min(block_k, S)
    scale = query.dtype.type(1 / np.sqrt(d_head))
    # (B, H_kv, n_rep, T, d_head) -> rows (T, n_rep) of each key/value head
    rows = np.empty((B, H_kv, T, n_rep, d_head), query.dtype)
    np.multiply(query.reshape(B, H_kv, n_rep, T, d_head).transpose(
        0, 1, 3, 2, 4), scale, out=rows)  # scaled once
    rows_t = rows.reshape(B, H_kv, T * n_rep, d_head).swapaxes(-1, -2)
    out = np.empty((B, T, H_kv, n_rep, d_v), query.dtype)
    tile = _Tile(B, H_kv, n_rep, min(block_q, T), block_k, query.dtype)
    for i0 in range(0, T, block_q):
        i1 = min(i0 + block_q, T)
        acc = tile.attend(rows_t[..., i0 * n_rep:i1 * n_rep], key, value,
                          None if mask is None else mask[:, i0:i1])
        # (B, H_kv, (i1 - i0) * n_rep, d_head) -> (B, i1 - i0, H_kv, n_rep, .)
        out[:, i0:i1] = acc.reshape(B, H_kv, i1 - i0, n_rep, d_v).transpose(
            0, 2, 1, 3, 4)
    return out.reshape(B, T, H, d_v).transpose(0, 2, 1, 3)  # (B, H, T, .)


def _tile_mask(attn_mask, query, key, value):
    """The mask as (B or 1, T, S) (a view), None for none, or False when
    :func:`sdpa_tiled_core` leaves the inputs to :func:`sdpa_core`: T
    below ``TILED_MIN_T``, inputs not 4-D of one batch with ``H_kv``
    dividing ``H``, a floating mask or one per head."""
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        return False
    (B, H, T, _), (B_kv, H_kv, S, _) = query.shape, key.shape
    if (T < TILED_MIN_T or B_kv != B or value.shape[:3] != key.shape[:3]
            or H % H_kv):
        return False
    if attn_mask is None:
        return None
    if attn_mask.dtype != bool or attn_mask.ndim > 4:
        return False
    m = attn_mask.reshape((1,) * (4 - attn_mask.ndim) + attn_mask.shape)
    if (m.shape[0] not in (1, B) or m.shape[1] != 1
            or m.shape[2] not in (1, T) or m.shape[3] not in (1, S)):
        return False
    return np.broadcast_to(m[:, 0], (m.shape[0], T, S))


class _Tile:
    """One query tile's online softmax over its key tiles, with the score
    buffer every tile of a call shares."""

    def __init__(self, B, H_kv, n_rep, block_q, block_k, dtype):
        self.n_rep, self.dtype = n_rep, np.dtype(dtype)
        self.buffer = np.empty(B * H_kv * block_q * n_rep * block_k, dtype)
        self.ones = np.ones((1, block_k), dtype)  # ones @ p: column sums
        self.biases = {}  # the causal diagonal repeats from tile to tile

    def attend(self, rows_t, key, value, mask):
        """The tile's block_q * n_rep query rows, transposed (B, H_kv,
        d_head, rows), against the keys they may see: their output (B,
        H_kv, rows, d_head). ``mask``: (B or 1, block_q, S), or None."""
        S, block_k = key.shape[-2], self.ones.shape[-1]
        lo, hi = 0, S
        if mask is not None:  # the keys some row of the tile may see
            seen = mask.any(axis=(0, 1))  # (S,); none: no tile runs, zeros
            lo, hi = int(seen.argmax()), S - int(seen[::-1].argmax())
        m = l = acc = None  # running max and sum (.., 1, rows), output
        for j0 in range(lo, hi, block_k):
            j1 = min(j0 + block_k, hi)
            tile = None if mask is None else mask[..., j0:j1]
            if tile is not None and not tile.any():
                continue  # every score of the tile hidden
            # (B, H_kv, cols, d_head) @ (.., d_head, rows) -> (.., cols, rows)
            s = np.matmul(key[..., j0:j1, :], rows_t, out=self.buffer[
                :key.shape[0] * key.shape[1] * (j1 - j0) * rows_t.shape[-1]
            ].reshape(key.shape[:-2] + (j1 - j0, rows_t.shape[-1])))
            if tile is not None and not tile.all():
                self.hide(s, tile)
            m, l, acc = self.update(s, value[..., j0:j1, :], m, l, acc)
        if acc is None:  # no query of the tile may see any key
            return np.zeros(rows_t.shape[:-2] + (rows_t.shape[-1],
                                                 value.shape[-1]), self.dtype)
        # acc / l; a row that saw no allowed key: 0 / 1 = 0
        acc /= np.where(l == 0, 1, l).swapaxes(-1, -2)
        return acc

    def hide(self, s, tile):
        """Add -inf where ``tile`` (B or 1, block_q, cols) is False, from
        the first column not every query may see (the causal diagonal) on.
        """
        c0 = int(tile.all(axis=(0, 1)).argmin())  # first partly hidden key
        part = tile[..., c0:]  # (B or 1, rows, cols - c0)
        key = (part.shape, np.packbits(part).tobytes())
        if key not in self.biases:
            bias = np.where(part, self.dtype.type(0), self.dtype.type(-np.inf))
            # -> (B or 1, 1, cols - c0, rows * n_rep): keys by (t, rep) rows
            self.biases[key] = np.repeat(bias.transpose(0, 2, 1), self.n_rep,
                                         axis=-1)[:, None]
        s[..., c0:, :] += self.biases[key]

    def update(self, s, v, m, l, acc):
        """Fold one tile of scores (B, H_kv, cols, rows), overwritten, into
        the running max ``m``, sum ``l`` and output ``acc`` (None before
        the first tile)."""
        top = s.max(axis=-2, keepdims=True)  # (B, H_kv, 1, rows)
        top = top if m is None else np.maximum(m, top)
        shift = np.where(np.isneginf(top), 0, top)  # only -inf: exp -> 0
        p = np.exp(np.subtract(s, shift, out=s), out=s)
        total = np.matmul(self.ones[:, :s.shape[-2]], p)  # (.., 1, rows)
        # (.., rows, cols) @ (B, H_kv, cols, d_head) -> (.., rows, d_head)
        pv = np.matmul(p.swapaxes(-1, -2), v)
        if acc is None:
            return top, total, pv
        alpha = np.exp(m - shift)  # how much the old sums shrink
        acc *= alpha.swapaxes(-1, -2)
        acc += pv
        return top, alpha * l + total, acc
