"""Exact attention in tiles with an online softmax: the idea behind FlashAttention.

Ordinary attention builds the whole (L, S) score matrix, whose memory grows
with the square of the sequence length. Here the keys arrive in blocks of
``block_k`` and the queries are processed in blocks of ``block_q``; for each
query block a running maximum ``m``, a running sum ``l`` and a partial output
``acc`` are kept, and rescaled whenever the maximum grows. The result is the
same attention (to rounding), but at most one (block_q, block_k) tile of scores
per head exists at a time. Compute stays quadratic; memory does not.

Shape legend (as in :mod:`pyxis_nb.attention`):
    ... leading batch/head dims, broadcast between the three inputs
    L   query positions          E   query/key feature size
    S   key/value positions      Ev  value feature size
    R   rows of one query block (<= block_q)
    C   columns of one key block (<= block_k)
    Hq, Hkv  query and key/value heads (axis -3), only with ``enable_gqa``
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._checks import as_float_array, broadcast_shapes, check_positive_int
from .attention import _check_qkv, _mask_to_bias

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
    """What the online softmax remembers about the key blocks seen so far.

    Attributes
    ----------
    row_max : ndarray, shape (..., R, 1)
        ``m``: the largest score of each row so far (``-inf`` before any key).
    row_sum : ndarray, shape (..., R, 1)
        ``l``: the sum of ``exp(score - m)`` over the keys seen so far.
    acc : ndarray, shape (..., R, Ev), or None
        The unnormalised output ``sum exp(score - m) * value``; None when only
        the softmax itself is wanted.
    """

    row_max: np.ndarray
    row_sum: np.ndarray
    acc: np.ndarray | None = None

    @classmethod
    def empty(cls, rows_shape: tuple, dtype, value_dim: int | None = None) -> "OnlineSoftmaxState":
        """The state before any key: ``m = -inf``, ``l = 0``, ``acc = 0``.

        ``rows_shape`` is ``(..., R)``; ``value_dim`` is ``Ev`` (None: no ``acc``).
        """
        m = np.full(rows_shape + (1,), -np.inf, dtype=dtype)  # (..., R, 1)
        l = np.zeros(rows_shape + (1,), dtype=dtype)  # (..., R, 1)
        acc = None if value_dim is None else np.zeros(rows_shape + (value_dim,), dtype=dtype)
        return cls(m, l, acc)


def online_softmax_update(state: OnlineSoftmaxState, scores, value=None) -> OnlineSoftmaxState:
    r"""Fold one block of scores (and its values) into the running softmax, in place.

    With the old maximum :math:`m`, the block's scores :math:`s_j` and
    :math:`m' = \max(m, \max_j s_j)`:
    :math:`l \leftarrow e^{m - m'} l + \sum_j e^{s_j - m'}` and
    :math:`acc \leftarrow e^{m - m'} acc + \sum_j e^{s_j - m'} v_j`.

    Parameters
    ----------
    state : OnlineSoftmaxState
        Running ``row_max`` (..., R, 1), ``row_sum`` (..., R, 1) and ``acc``
        (..., R, Ev) or None. Updated in place and returned.
    scores : ndarray, shape (..., R, C)
        The block's scores, ``-inf`` where masked. Overwritten with
        ``exp(scores - m')`` (the block's unnormalised weights) to save memory.
    value : ndarray, shape (..., C, Ev), optional
        The block's values; needed when ``state.acc`` is not None.

    Returns
    -------
    OnlineSoftmaxState
        The same object, now covering this block too. A row that has seen only
        ``-inf`` keeps ``m = -inf``, ``l = 0``, ``acc = 0`` (no NaN).

    See Also
    --------
    online_softmax : the softmax of a whole row, one block at a time.
    """
    m = state.row_max
    m_new = np.maximum(m, scores.max(axis=-1, keepdims=True))  # (..., R, 1)
    # a row with only -inf so far: shift by 0, so that exp gives exact zeros, not NaN
    shift = np.where(np.isneginf(m_new), np.zeros_like(m_new), m_new)  # (..., R, 1)
    alpha = np.exp(m - shift)  # (..., R, 1): how much the old partial sums shrink
    np.subtract(scores, shift, out=scores)
    p = np.exp(scores, out=scores)  # (..., R, C), every entry in [0, 1]
    state.row_sum *= alpha
    state.row_sum += p.sum(axis=-1, keepdims=True)
    if state.acc is not None and np.isneginf(m).all():
        # nothing seen yet, so acc is all zeros: overwrite it instead of rescaling it
        np.matmul(p, value, out=state.acc)  # (..., R, C) x (..., C, Ev) -> (..., R, Ev)
    elif state.acc is not None:
        state.acc *= alpha
        state.acc += p @ value  # (..., R, C) x (..., C, Ev) -> (..., R, Ev)
    m[...] = m_new
    return state


def _online_softmax_states(x: np.ndarray, block_size: int):
    """Yield ``(stop, state)`` after each block of the last axis of ``x``."""
    state = OnlineSoftmaxState.empty(x.shape[:-1], x.dtype)
    for start in range(0, x.shape[-1], block_size):
        stop = min(start + block_size, x.shape[-1])
        online_softmax_update(state, x[..., start:stop].copy())  # copy: the update overwrites it
        yield stop, state


def online_softmax(x, block_size: int) -> np.ndarray:
    """Softmax over the last axis, reading it in blocks with a running max and sum.

    A first pass over the blocks finds each row's maximum ``m`` and the sum
    ``l = sum exp(x - m)`` without ever holding more than one block of
    exponentials; a second pass writes ``exp(x - m) / l``. Equal to
    :func:`pyxis_nb.softmax.softmax` up to rounding, fully masked rows included.

    Parameters
    ----------
    x : ndarray, shape (..., N), floating
        Scores; ``-inf`` marks an entry that gets zero weight.
    block_size : int
        How many entries of a row are read at a time (>= 1).

    Returns
    -------
    ndarray, same shape and dtype as ``x``
        Rows sum to 1; rows of only ``-inf`` are all zeros.

    Raises
    ------
    ValueError
        If ``x`` is not a floating array of at least 1 dimension, has a 0-length
        last axis, or ``block_size`` is not an integer >= 1.

    See Also
    --------
    pyxis_nb.softmax.softmax : the two-pass softmax it equals.
    torch.softmax : the torch counterpart.
    """
    x = as_float_array("x", x)
    block_size = check_positive_int("block_size", block_size)
    if x.shape[-1] == 0:
        raise ValueError(f"x has a 0-length last axis: got shape {x.shape}, expected N >= 1")
    for _, state in _online_softmax_states(x, block_size):
        pass
    shift = np.where(np.isneginf(state.row_max), 0, state.row_max).astype(x.dtype)  # (..., 1)
    total = np.where(state.row_sum == 0, 1, state.row_sum).astype(x.dtype)  # (..., 1)
    return np.exp(x - shift) / total


@dataclass
class TileStep:
    """One visited tile of :func:`tiled_attention` (recorded with ``return_stats``).

    Attributes
    ----------
    q_block, k_block : int
        Tile coordinates: rows ``q_block * block_q ...``, columns ``k_block * block_k ...``.
    computed : bool
        False when the tile was skipped (entirely above the causal diagonal, or
        entirely hidden by ``attn_mask``).
    row_max, row_sum : ndarray, shape (..., R)
        The query block's running maximum and sum after this tile.
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
        The tile size used.
    computed : ndarray of bool, shape (ceil(L / block_q), ceil(S / block_k))
        True for a tile whose scores were computed, False for a skipped one.
    flops : int
        Floating-point operations of the two matmuls, ``2 * R * C * (E + Ev)``
        per computed tile and per batch/head element.
    steps : list of TileStep
        Every tile in the order visited, with the running max and sum after it.
    """

    block_q: int
    block_k: int
    computed: np.ndarray
    flops: int = 0
    steps: list = field(default_factory=list)

    @property
    def n_computed(self) -> int:
        """Number of computed tiles."""
        return int(self.computed.sum())

    @property
    def n_skipped(self) -> int:
        """Number of skipped tiles."""
        return int(self.computed.size - self.computed.sum())


def _group_heads(arr: np.ndarray, hq: int, n_rep: int, *, kv: bool) -> np.ndarray:
    """View (..., H, X, Y) as (..., Hkv, n_rep | 1, X, Y) for grouped-query attention.

    Query heads (and a mask with Hq heads) split into (Hkv, n_rep); key/value heads
    get a length-1 group axis that broadcasts, so they are never copied.
    """
    if kv or arr.shape[-3] == 1:
        return np.expand_dims(arr, -3)  # (..., H, X, Y) -> (..., H, 1, X, Y)
    return arr.reshape(arr.shape[:-3] + (hq // n_rep, n_rep) + arr.shape[-2:])  # (..., Hkv, n_rep, X, Y)


def _tile(bias: np.ndarray, i0: int, i1: int, j0: int, j1: int) -> np.ndarray:
    """Rows i0:i1 and columns j0:j1 of a (..., L | 1, S | 1) bias; length-1 axes broadcast."""
    rows = slice(None) if bias.shape[-2] == 1 else slice(i0, i1)
    cols = slice(None) if bias.shape[-1] == 1 else slice(j0, j1)
    return bias[..., rows, cols]


def tiled_attention(
    query,
    key,
    value,
    *,
    attn_mask=None,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    block_q: int = 256,
    block_k: int = 512,
    return_stats: bool = False,
):
    """Exact attention computed tile by tile; never stores the (L, S) score matrix.

    Same arguments and result as :func:`pyxis_nb.attention.scaled_dot_product_attention`
    (torch semantics), plus the tile size. All heads and batch elements of a tile
    go through one matmul; Python loops only over tiles.

    Parameters
    ----------
    query : ndarray, shape (..., L, E)
    key : ndarray, shape (..., S, E)
    value : ndarray, shape (..., S, Ev)
        Floating arrays of one dtype; float32 stays float32.
    attn_mask : ndarray, shape broadcastable to (..., L, S), optional
        Boolean (True = may attend) or floating (added to the scores).
    is_causal : bool, default False
        Torch's top-left causal mask (query ``i`` sees keys ``0..i``). Tiles
        entirely above the diagonal are skipped, not computed.
    scale : float, optional
        Multiplies the scores; defaults to ``1 / sqrt(E)``.
    enable_gqa : bool, default False
        Grouped-query attention as in torch: ``Hq // Hkv`` consecutive query heads
        share one key/value head (the key/value heads are broadcast, not copied).
    block_q, block_k : int, default 256 and 512
        Query rows and key columns per tile (>= 1; need not divide L or S). The
        defaults were tuned on a busy 2-core CPU (``benchmarks/bench_tiled.py``):
        large tiles mean few BLAS calls; a float32 tile of 16 heads is 8 MiB.
    return_stats : bool, default False
        Also return a :class:`TileStats` (which tiles were computed, the FLOPs,
        and the running max/sum after each tile: meant for small examples).

    Returns
    -------
    output : ndarray, shape (..., L, Ev)
        Equal to ``scaled_dot_product_attention`` to rounding (about 1e-15
        relative in float64, 1e-7 in float32). Fully masked rows are zeros.
    stats : TileStats
        Only with ``return_stats=True``.

    Raises
    ------
    ValueError
        The errors of ``scaled_dot_product_attention`` (dtype, shapes, mask,
        ``is_causal`` with ``attn_mask``, GQA head counts), and ``block_q`` or
        ``block_k`` not an integer >= 1.

    See Also
    --------
    pyxis_nb.attention.scaled_dot_product_attention : the untiled reference.
    torch.nn.functional.scaled_dot_product_attention : whose CPU kernel also
        works in tiles with an online softmax (FlashAttention, Dao et al., 2022).
    """
    q, k, v, n_rep = _check_qkv(query, key, value, enable_gqa)
    if is_causal and attn_mask is not None:
        raise ValueError("pass either attn_mask or is_causal=True, not both (as torch)")
    block_q = check_positive_int("block_q", block_q)
    block_k = check_positive_int("block_k", block_k)
    L, E, S, Ev = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    # leading dims as SDPA sees them, after repeating key/value heads for GQA
    def heads(x):
        return x.shape[:-3] + (x.shape[-3] * n_rep,) if n_rep > 1 else x.shape[:-2]
    batch = broadcast_shapes({"query": q.shape[:-2], "key": heads(k), "value": heads(v)})
    bias = None if attn_mask is None else _mask_to_bias(attn_mask, batch, L, S, q.dtype)
    if scale is None:
        scale = 1.0 / np.sqrt(E)
    q = q * q.dtype.type(scale)  # scale once here instead of on every tile of scores
    if n_rep > 1:
        # (..., Hq, L, E) -> (..., Hkv, n_rep, L, E); key/value (..., Hkv, 1, S, E)
        hq = q.shape[-3]
        q = _group_heads(q, hq, n_rep, kv=False)
        k, v = _group_heads(k, hq, n_rep, kv=True), _group_heads(v, hq, n_rep, kv=True)
        if bias is not None:
            bias = bias.reshape((1,) * (len(batch) + 2 - bias.ndim) + bias.shape)
            bias = _group_heads(bias, hq, n_rep, kv=False)
    work = broadcast_shapes({"query": q.shape[:-2], "key": k.shape[:-2], "value": v.shape[:-2]})
    q = np.broadcast_to(q, work + (L, E))  # views: every tile then has the full batch
    # K transposed as a view: BLAS reads it as is (a transposed copy would cost more)
    k_t = np.broadcast_to(np.swapaxes(k, -1, -2), work + (E, S))  # (..., E, S)
    v = np.broadcast_to(v, work + (S, Ev))
    if bias is not None:
        bias = bias.reshape((1,) * (len(work) + 2 - bias.ndim) + bias.shape)

    n_qb, n_kb = -(-L // block_q), -(-S // block_k)
    stats = TileStats(block_q, block_k, np.zeros((n_qb, n_kb), dtype=bool)) if return_stats else None
    out = np.empty(work + (L, Ev), dtype=q.dtype)
    scratch = np.empty(work + (block_q * min(block_k, S),), dtype=q.dtype)  # one tile, reused
    for qi, i0 in enumerate(range(0, L, block_q)):
        i1 = min(i0 + block_q, L)
        state = OnlineSoftmaxState.empty(work + (i1 - i0,), q.dtype, Ev)
        for ki, j0 in enumerate(range(0, S, block_k)):
            # causal: no query of this block sees a key at or after i1, so stop there
            j1 = min(j0 + block_k, S, i1) if is_causal else min(j0 + block_k, S)
            b = None if bias is None else _tile(bias, i0, i1, j0, j1)
            skip = j0 >= j1 or (b is not None and np.isneginf(b).all())
            if not skip:
                s = scratch[..., :(i1 - i0) * (j1 - j0)].reshape(work + (i1 - i0, j1 - j0))  # (..., R, C)
                np.matmul(q[..., i0:i1, :], k_t[..., j0:j1], out=s)  # (..., R, E) x (..., E, C) -> (..., R, C)
                if is_causal and j1 - 1 > i0:  # a diagonal tile: mask the keys after each query
                    above = np.arange(j0, j1)[None, :] > np.arange(i0, i1)[:, None]  # (R, C)
                    np.copyto(s, s.dtype.type(-np.inf), where=above)
                elif b is not None:
                    s += b
                online_softmax_update(state, s, v[..., j0:j1, :])
            if stats is not None:
                stats.computed[qi, ki] = not skip
                stats.flops += 0 if skip else 2 * (i1 - i0) * (j1 - j0) * (E + Ev) * int(np.prod(work))
                stats.steps.append(TileStep(qi, ki, not skip, state.row_max[..., 0].copy(),
                                            state.row_sum[..., 0].copy()))
        # rows that saw no allowed key have l = 0 and acc = 0: divide by 1, output 0
        total = state.row_sum
        np.divide(state.acc, np.where(total == 0, np.ones_like(total), total), out=out[..., i0:i1, :])
    if n_rep > 1:
        out = out.reshape(batch + (L, Ev))  # (..., Hkv, n_rep, L, Ev) -> (..., Hq, L, Ev)
    return (out, stats) if return_stats else out
