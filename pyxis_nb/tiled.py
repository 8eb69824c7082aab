"""Exact attention in tiles with an online softmax: FlashAttention's idea.

Ordinary attention builds the whole (T, S) score matrix, whose memory grows
with the square of the sequence length. Here each tile of ``block_q``
queries reads the keys ``block_k`` at a time, keeping a running maximum
``m``, a running sum ``l`` and a partial output ``acc``, rescaled whenever
the maximum grows. The result is the same attention (to rounding) with at
most one tile of scores per head in memory. Compute stays quadratic;
memory does not.

Shape legend:
    ...      leading batch/head dimensions, broadcast between the inputs
    T        query positions
    S        key/value positions
    d_head   size of one head's query, key and value vectors
    H        query heads (axis -3), only with ``enable_gqa``
    H_kv     key/value heads (axis -3), only with ``enable_gqa``
    n_rep    query heads per key/value head, ``H // H_kv``
    block_q  query rows of one tile (the last tile may have fewer)
    block_k  key columns of one tile (the last tile may have fewer)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._checks import as_float_array, check_attention, check_nonempty
from ._checks import check_positive_int, check_positive_ints
from .masks import mask_to_bias

__all__ = [
    "OnlineSoftmaxState",
    "TileStats",
    "TileStep",
    "online_softmax",
    "online_softmax_update",
    "tiled_attention",
]


@dataclass
class OnlineSoftmaxState:
    """What the online softmax remembers about the keys seen so far.

    Attributes
    ----------
    row_max : ndarray, shape (..., block_q, 1)
        ``m``: the largest score of each row so far (``-inf`` before any).
    row_sum : ndarray, shape (..., block_q, 1)
        ``l``: the sum of ``exp(score - m)`` so far.
    acc : ndarray, shape (..., block_q, d_head), or None
        ``sum exp(score - m) * value``; None for the softmax alone.
    """

    row_max: np.ndarray
    row_sum: np.ndarray
    acc: np.ndarray | None = None

    @classmethod
    def empty(cls, rows_shape: tuple, dtype,
              value_dim: int | None = None) -> "OnlineSoftmaxState":
        """Before any key: ``m = -inf``, ``l = 0``, ``acc = 0``.

        ``rows_shape`` is (..., block_q); ``value_dim`` the value size.
        """
        m = np.full(rows_shape + (1,), -np.inf, dtype=dtype)
        l = np.zeros(rows_shape + (1,), dtype=dtype)  # noqa: E741
        acc = (None if value_dim is None
               else np.zeros(rows_shape + (value_dim,), dtype=dtype))
        return cls(m, l, acc)

    def output(self) -> np.ndarray:
        """``acc / l``; rows that saw no allowed key give 0 (0 / 1)."""
        return self.acc / np.where(self.row_sum == 0, 1, self.row_sum)


def online_softmax_update(state: OnlineSoftmaxState, scores,
                          value=None) -> OnlineSoftmaxState:
    """Fold one block of scores (and its values) into the running softmax.

    With ``m' = max(m, max_j s_j)`` and ``alpha = exp(m - m')``:
    ``l <- alpha l + sum_j exp(s_j - m')`` and
    ``acc <- alpha acc + sum_j exp(s_j - m') v_j``.

    Parameters
    ----------
    state : OnlineSoftmaxState
        Updated in place and returned.
    scores : ndarray, shape (..., block_q, block_k)
        ``-inf`` where masked; overwritten with ``exp(scores - m')``.
    value : ndarray, shape (..., block_k, d_head), needed if ``state.acc``

    Returns
    -------
    OnlineSoftmaxState
    """
    m_new = np.maximum(state.row_max, scores.max(axis=-1, keepdims=True))
    shift = np.where(np.isneginf(m_new), 0, m_new)  # only -inf: exp -> 0
    alpha = np.exp(state.row_max - shift)  # how much the old sums shrink
    p = np.exp(np.subtract(scores, shift, out=scores), out=scores)
    state.row_sum = alpha * state.row_sum + p.sum(axis=-1, keepdims=True)
    if state.acc is not None:
        # (..., block_q, block_k) @ (..., block_k, d_head)
        state.acc = alpha * state.acc + p @ value
    state.row_max = m_new
    return state


def online_softmax(x, block_size: int) -> np.ndarray:
    """Softmax over the last axis, read ``block_size`` entries at a time.

    One pass finds each row's ``m`` and ``l`` holding one block of
    exponentials at a time; a second writes ``exp(x - m) / l``.

    Parameters
    ----------
    x : ndarray, shape (..., S), floating
    block_size : int

    Returns
    -------
    ndarray, shape and dtype of ``x``; fully masked rows are zeros

    See Also
    --------
    torch.softmax : the two-pass softmax it equals.
    """
    x = as_float_array("x", x)
    check_nonempty("x", x, {-1: "softmax"})
    block_size = check_positive_int("block_size", block_size)
    state = OnlineSoftmaxState.empty(x.shape[:-1], x.dtype)
    for j0 in range(0, x.shape[-1], block_size):  # copy: the update writes
        online_softmax_update(state, x[..., j0:j0 + block_size].copy())
    shift = np.where(np.isneginf(state.row_max), 0, state.row_max)
    return np.exp(x - shift) / np.where(state.row_sum == 0, 1, state.row_sum)


@dataclass
class TileStep:
    """One visited tile of :func:`tiled_attention` (with ``return_stats``).

    Attributes
    ----------
    q_block, k_block : int
        Tile coordinates, in tiles.
    computed : bool
        False for a skipped tile (above the causal diagonal, or masked).
    row_max, row_sum : ndarray, shape (..., block_q)
        The query tile's running maximum and sum after this tile.
    """

    q_block: int
    k_block: int
    computed: bool
    row_max: np.ndarray
    row_sum: np.ndarray


@dataclass
class TileStats:
    """Which tiles :func:`tiled_attention` computed, and what it cost.

    Attributes
    ----------
    block_q, block_k : int
    computed : ndarray of bool, shape (ceil(T / block_q), ceil(S / block_k))
    flops : int
        Of the two matmuls: ``2 * block_q * block_k * (d_head + d_head)``
        per computed tile and per batch/head element.
    steps : list of TileStep
        Every tile in the order visited.
    """

    block_q: int
    block_k: int
    computed: np.ndarray
    flops: int = 0
    steps: list = field(default_factory=list)

    record: bool = True

    @classmethod
    def empty(cls, T: int, S: int, block_q: int, block_k: int,
              record: bool = True) -> "TileStats":
        """No tile visited yet; with ``record=False`` :meth:`add` does
        nothing (large inputs would keep too many steps)."""
        shape = (-(-T // block_q), -(-S // block_k))  # ceil divisions
        return cls(block_q, block_k, np.zeros(shape, dtype=bool),
                   record=record)

    def add(self, i0: int, j0: int, state: OnlineSoftmaxState, macs: int):
        """Record the tile at row ``i0``, column ``j0`` (skipped: 0 macs).

        ``macs`` multiply-adds of the two matmuls are ``2 * macs`` FLOPs.
        """
        if not self.record:
            return
        qi, ki = i0 // self.block_q, j0 // self.block_k
        self.computed[qi, ki] = macs > 0
        self.flops += 2 * macs
        self.steps.append(TileStep(qi, ki, macs > 0,
                                   state.row_max[..., 0].copy(),
                                   state.row_sum[..., 0].copy()))

    @property
    def n_computed(self) -> int:
        """Number of computed tiles."""
        return int(self.computed.sum())

    @property
    def n_skipped(self) -> int:
        """Number of skipped tiles."""
        return int(self.computed.size - self.computed.sum())


def tiled_attention(query, key, value, *, attn_mask=None,
                    is_causal: bool = False, scale: float | None = None,
                    enable_gqa: bool = False, block_q: int = 256,
                    block_k: int = 512, return_stats: bool = False):
    """Exact attention tile by tile; the (T, S) scores never exist at once.

    Parameters
    ----------
    query, key, value, attn_mask, is_causal, scale, enable_gqa
        As in :func:`scaled_dot_product_attention`.
    block_q, block_k : int, default 256 and 512
        Query rows and key columns per tile (``benchmarks/bench_tiled.py``).
    return_stats : bool, default False

    Returns
    -------
    output : ndarray, shape (..., T, d_head)
    stats : TileStats, only with ``return_stats``

    See Also
    --------
    torch.nn.functional.scaled_dot_product_attention : also tiles on CPU.
    """
    q, k, v, attn_mask, n_rep = check_attention(
        query, key, value, attn_mask, is_causal, enable_gqa)
    block_q, block_k = check_positive_ints(block_q=block_q, block_k=block_k)
    q, k_t, v, bias, lead = _tile_layout(q, k, v, attn_mask, scale, n_rep)
    (T, d_head), (S, d_v) = q.shape[-2:], v.shape[-2:]
    stats = TileStats.empty(T, S, block_q, block_k, record=return_stats)
    out = np.empty(q.shape[:-1] + (d_v,), dtype=q.dtype)
    for i0, i1 in _spans(T, block_q):  # one tile of queries at a time
        state = OnlineSoftmaxState.empty(q[..., i0:i1, 0].shape, q.dtype, d_v)
        for j0 in range(0, S, block_k):  # causal: keys >= i1 are skipped
            j1 = min(j0 + block_k, S, i1 if is_causal else S)
            b = 0 if bias is None else _tile(bias, i0, i1, j0, j1)
            skip = j0 >= j1 or np.isneginf(b).all()  # all hidden: skip it
            if not skip:  # (..., block_q, d_head) @ (..., d_head, block_k)
                s = q[..., i0:i1, :] @ k_t[..., j0:j1] + b
                if is_causal and j1 - 1 > i0:  # diagonal: hide the future
                    s[..., _future(i0, i1, j0, j1)] = -np.inf
                online_softmax_update(state, s, v[..., j0:j1, :])
            stats.add(i0, j0, state, 0 if skip else s.size * (d_head + d_v))
        out[..., i0:i1, :] = state.output()
    out = out.reshape(lead + (T, d_v))  # GQA: (H_kv, n_rep) -> H
    return (out, stats) if return_stats else out


def _future(i0: int, i1: int, j0: int, j1: int) -> np.ndarray:
    """(block_q, block_k) bool: key ``j0 + c`` is after query ``i0 + r``."""
    return np.arange(j0, j1) > np.arange(i0, i1)[:, None]


def _spans(n: int, block: int):
    """``(start, stop)`` of each block of ``range(n)``."""
    return ((i, min(i + block, n)) for i in range(0, n, block))


def _tile_layout(q, k, v, attn_mask, scale, n_rep: int):
    """Scaled q, K^T, v and the mask's bias as broadcast views.

    With GQA, query heads (..., H, T, d_head) are viewed as
    (..., H_kv, n_rep, T, d_head) and key/value heads get a length-1 group
    axis, so they are broadcast, never copied. Also returns the leading
    shape of the output.
    """
    def heads(x):
        return x.shape[:-2] if n_rep == 1 else (
            x.shape[:-3] + (x.shape[-3] * n_rep,))
    lead = np.broadcast_shapes(q.shape[:-2], heads(k), heads(v))
    d_head = q.shape[-1]
    q = q * q.dtype.type(1 / np.sqrt(d_head) if scale is None else scale)
    bias = None if attn_mask is None else mask_to_bias(attn_mask, q.dtype)
    if bias is not None:  # one leading axis per output axis
        bias = bias.reshape((1,) * (len(lead) + 2 - bias.ndim) + bias.shape)
    if n_rep > 1:
        q = _group(q, n_rep)
        k, v = np.expand_dims(k, -3), np.expand_dims(v, -3)
        bias = None if bias is None else _group(bias, n_rep)
    work = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q = np.broadcast_to(q, work + q.shape[-2:])  # every tile: the full batch
    # K transposed as a view: BLAS reads it as is, a copy would cost more
    k_t = np.broadcast_to(np.swapaxes(k, -1, -2), work + (d_head, k.shape[-2]))
    v = np.broadcast_to(v, work + v.shape[-2:])
    if bias is not None:
        bias = bias.reshape((1,) * (len(work) + 2 - bias.ndim) + bias.shape)
    return q, k_t, v, bias, lead


def _group(x: np.ndarray, n_rep: int) -> np.ndarray:
    """(..., H, T, S) -> (..., H_kv, n_rep, T, S), or a 1-head axis kept."""
    if x.shape[-3] == 1:
        return np.expand_dims(x, -3)
    return x.reshape(x.shape[:-3] + (-1, n_rep) + x.shape[-2:])


def _tile(bias: np.ndarray, i0: int, i1: int, j0: int, j1: int) -> np.ndarray:
    """Rows i0:i1, columns j0:j1 of a (..., T | 1, S | 1) bias."""
    rows = slice(None) if bias.shape[-2] == 1 else slice(i0, i1)
    cols = slice(None) if bias.shape[-1] == 1 else slice(j0, j1)
    return bias[..., rows, cols]
