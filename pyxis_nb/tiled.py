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

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ._checks import (_broadcasts_to, as_float_array, check_attention,
                      check_nonempty, check_positive_int, check_positive_ints)
from .masks import mask_to_bias

__all__ = [
    "OnlineSoftmaxState",
    "TileStats",
    "TileStep",
    "online_softmax",
    "online_softmax_update",
    "Tiles",
    "tiled_attention",
    "tiled_attention_loop",
]


@dataclass
class OnlineSoftmaxState:
    """What the online softmax remembers about the keys seen so far.

    Parameters
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

        Parameters
        ----------
        rows_shape : tuple of int
            (..., block_q): the rows the state follows.
        dtype : numpy float dtype
        value_dim : int, optional
            ``d_head`` of the values; None: no ``acc`` (the softmax alone).

        Returns
        -------
        OnlineSoftmaxState
        """
        m = np.full(rows_shape + (1,), -np.inf, dtype=dtype)
        l = np.zeros(rows_shape + (1,), dtype=dtype)  # noqa: E741
        acc = (None if value_dim is None
               else np.zeros(rows_shape + (value_dim,), dtype=dtype))
        return cls(m, l, acc)

    def output(self, out: np.ndarray | None = None) -> np.ndarray:
        """``acc / l``; rows that saw no allowed key give 0 (0 / 1).

        Parameters
        ----------
        out : ndarray, shape (..., block_q, d_head), optional
            Written in place and returned, if given.

        Returns
        -------
        ndarray, shape (..., block_q, d_head)
        """
        return np.divide(self.acc, np.where(self.row_sum == 0, 1,
                                            self.row_sum), out=out)


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
    ones = np.ones(p.shape[-1:] + (1,), dtype=p.dtype)  # p @ 1: row sums
    state.row_sum = alpha * state.row_sum + p @ ones  # (BLAS, one pass)
    if state.acc is not None:  # in place: acc is as large as a tile of q
        state.acc *= alpha
        state.acc += p @ value  # (..., block_q, block_k) @ (..., block_k, d)
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

    Parameters
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

    Parameters
    ----------
    block_q, block_k : int
        The tile size: query rows and key columns.
    computed : ndarray of bool, shape (ceil(T / block_q), ceil(S / block_k))
        True for each computed tile.
    flops : int, default 0
        Of the two matmuls: ``2 * block_q * block_k * (d_head + d_head)``
        per computed tile and per batch/head element.
    steps : list of TileStep
        Every tile in the order visited.
    record : bool, default True
        False: :meth:`add` records nothing.
    """

    block_q: int
    block_k: int
    computed: np.ndarray
    flops: int = 0
    steps: list = field(default_factory=list)

    @classmethod
    def empty(cls, T: int, S: int, block_q: int,
              block_k: int) -> "TileStats":
        """No tile visited yet, for (T, S) scores cut into these tiles.

        Parameters
        ----------
        T, S : int
            Query and key positions.
        block_q, block_k : int
            The tile size.

        Returns
        -------
        TileStats
        """
        shape = (-(-T // block_q), -(-S // block_k))  # ceil divisions
        return cls(block_q, block_k, np.zeros(shape, dtype=bool))

    def add(self, i0: int, j0: int, state: OnlineSoftmaxState, macs: int):
        """Record the tile at row ``i0``, column ``j0`` (skipped: 0 macs).

        Parameters
        ----------
        i0, j0 : int
            The tile's first query row and first key column.
        state : OnlineSoftmaxState
            The query tile's state after this tile (its ``row_max`` and
            ``row_sum`` are copied).
        macs : int
            Multiply-adds of the tile's two matmuls (``2 * macs`` FLOPs); 0 for
            a skipped tile.
        """
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


@dataclass
class Tiles:
    """How :func:`tiled_attention_loop` cuts the work, and its tile memory.

    Parameters
    ----------
    block_q, block_k : int
        Query rows and key columns of one tile.
    scale : numpy float
        Multiplies the queries (``1 / sqrt(d_head)`` by default).
    is_causal : bool
        A query tile needs no key after its last query.
    mask : callable
        ``mask(i0, i1, j0, j1) -> (skip, bias)`` for the tile of queries
        ``i0:i1`` and keys ``j0:j1``: skip it (every score hidden), and
        what its scores get added (``-inf`` where hidden; None: nothing).
    buffer : callable
        ``buffer(rows, cols)``: a (..., rows, cols) array for one tile of
        scores, the same memory for every tile.
    """

    block_q: int
    block_k: int
    scale: np.floating
    is_causal: bool
    mask: Callable
    buffer: Callable


def tiled_attention_loop(q, k, v, out, tiles: Tiles, stats=None):
    """FlashAttention-2's loop: each query tile reads the keys tile by tile.

    Parameters
    ----------
    q : ndarray, shape (..., T, d_head)
    k, v : ndarray, shape (..., S, d_head)
        Of ``q``'s dtype and leading shape.
    out : ndarray, shape (..., T, d_head)
        Written tile by tile, and returned.
    tiles : Tiles
    stats : TileStats, optional
        Records every tile visited.

    Returns
    -------
    ndarray, ``out``

    See Also
    --------
    tiled_attention : the checked, parallel entry point that runs it.
    """
    (T, d_head), (S, d_v) = q.shape[-2:], v.shape[-2:]
    for i0, i1 in _spans(T, tiles.block_q):  # one tile of queries, Q_i
        q_i = q[..., i0:i1, :] * tiles.scale  # scaled once, for all its keys
        state = OnlineSoftmaxState.empty(q_i.shape[:-1], q.dtype, d_v)
        for j0, j1 in _spans(S, tiles.block_k, i1 if tiles.is_causal else S):
            skip, bias = tiles.mask(i0, i1, j0, j1)  # -inf: hidden
            if not skip:  # S_ij = Q_i K_j^T, (.., block_q, block_k)
                k_j = np.swapaxes(k[..., j0:j1, :], -1, -2)  # a view
                s = np.matmul(q_i, k_j, out=tiles.buffer(i1 - i0, j1 - j0))
                s = s if bias is None else np.add(s, bias, out=s)
                online_softmax_update(state, s, v[..., j0:j1, :])  # m, l, acc
            if stats is not None:
                stats.add(i0, j0, state,
                          0 if skip else s.size * (d_head + d_v))
        state.output(out=out[..., i0:i1, :])  # O_i = acc / l
    return out


def tiled_attention(query, key, value, *, attn_mask=None, mask_mod=None,
                    is_causal=False, scale=None, enable_gqa=False,
                    block_q=256, block_k=512, return_stats=False):
    """Exact attention tile by tile; the (T, S) scores never exist at once.

    Checks the inputs, lays the heads out for the tiles (GQA by broadcast,
    no copy), and runs :func:`tiled_attention_loop` on every core, each on
    its own part of the batch and heads (torch's CPU kernel and
    FlashAttention split the work the same way).

    Parameters
    ----------
    query : ndarray, shape (..., T, d_head)
    key, value : ndarray, shape (..., S, d_head)
        Floats of one dtype; the leading dims broadcast.
    attn_mask : ndarray, broadcastable to (..., T, S), optional
        Boolean (True = may attend) or floating (added to the scores), as
        in :func:`scaled_dot_product_attention`; it costs (T, S) memory.
    mask_mod : callable, optional
        ``mask_mod(b, h, q_idx, kv_idx) -> bool`` (True = may attend) on
        broadcast index arrays, called per tile; hidden tiles are skipped.
        Not together with ``attn_mask`` or ``is_causal``.
    is_causal : bool, default False
        Torch's top-left causal mask; tiles above the diagonal are skipped.
    scale : float, optional
        Defaults to ``1 / sqrt(d_head)``.
    enable_gqa : bool, default False
        Query heads ``H`` on axis -3 share ``H_kv`` key/value heads.
    block_q : int, default 256
        Query rows of one tile.
    block_k : int, default 512
        Key columns of one tile.
    return_stats : bool, default False
        Also return which tiles were computed (then on one thread).

    Returns
    -------
    output : ndarray, shape (..., T, d_head)
    stats : TileStats, only with ``return_stats``

    See Also
    --------
    torch.nn.attention.flex_attention.flex_attention : with ``mask_mod``.
    """
    q, k, v, attn_mask, n_rep = check_attention(
        query, key, value, attn_mask, is_causal, enable_gqa, mask_mod)
    block_q, block_k = check_positive_ints(block_q=block_q, block_k=block_k)
    q, k, v, lead = _tile_layout(q, k, v, n_rep)
    mask_tile = _tile_masks(attn_mask, mask_mod, is_causal, lead, n_rep, q)
    (T, d_head), (S, d_v) = q.shape[-2:], v.shape[-2:]
    scale = q.dtype.type(1 / np.sqrt(d_head) if scale is None else scale)
    stats = TileStats.empty(T, S, block_q, block_k) if return_stats else None
    out = np.empty(q.shape[:-1] + (d_v,), dtype=q.dtype)

    def attend(heads):  # every tile of some of the heads: one core's work
        tiles = Tiles(block_q, block_k, scale, is_causal,
                      functools.partial(mask_tile, heads=heads),
                      _tile_buffer(q[heads], min(block_q, T), min(block_k, S)))
        tiled_attention_loop(q[heads], k[heads], v[heads], out[heads], tiles,
                             stats)

    # mask_mod is called once per tile for every head: one thread then
    _across_cores(attend, q.shape[:-2],
                  parallel=not return_stats and mask_mod is None)
    out = out.reshape(lead + (T, d_v))  # GQA: (H_kv, n_rep) -> H
    return (out, stats) if return_stats else out


def _spans(n: int, block: int, cut: int | None = None):
    """``(start, stop)`` of each block of ``range(n)``, stops cut at ``cut``
    (causal: a query tile ending at ``cut`` needs no key from ``cut`` on)."""
    cut = n if cut is None else cut
    return ((i, min(i + block, n, cut)) for i in range(0, n, block))


def _across_cores(attend, work: tuple, parallel: bool = True) -> None:
    """``attend(heads)`` over slices of the batch and head axes ``work``,
    one thread per core, BLAS on one thread in each.

    Heads are independent, so FlashAttention runs them in parallel, as does
    torch's CPU kernel, each core on its own tiles. numpy's element-wise
    steps run on one core; split by heads, every step uses them all. There
    are two slices per core, each thread taking the next one left, so that
    a core the machine slows down does less of the work. Run once
    (``heads = ()``) when not ``parallel``, with one head, or when no BLAS
    library whose threads can be limited is loaded.
    """
    blas = _blas()
    cores = 1 if blas is None else max(
        (c.num_threads for c in blas.lib_controllers), default=1)
    axis = next((a for a, n in enumerate(work) if n > 1), None)
    if not parallel or axis is None or cores < 2:
        return attend(())
    n_parts = min(2 * cores, work[axis])
    cuts = np.linspace(0, work[axis], n_parts + 1).astype(int)
    parts = [(slice(None),) * axis + (slice(a, b),)
             for a, b in zip(cuts[:-1], cuts[1:])]
    with blas.limit(limits=1), ThreadPoolExecutor(cores) as pool:
        list(pool.map(attend, parts))  # list(): re-raises a thread's error


@functools.cache
def _blas():
    """The loaded BLAS libraries (threadpoolctl), found once; None without
    threadpoolctl (then every tile runs on one thread)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController().select(user_api="blas")


def _tile_buffer(q: np.ndarray, block_q: int, block_k: int):
    """``tile(rows, cols)``: a (..., rows, cols) view of one buffer as
    large as a tile, so that every tile of scores reuses the same memory
    (a fresh array per tile costs page faults and cold caches)."""
    buf = np.empty(q.shape[:-2] + (block_q * block_k,), dtype=q.dtype)
    return lambda rows, cols: buf[..., :rows * cols].reshape(
        q.shape[:-2] + (rows, cols))


def _tile_layout(q, k, v, n_rep: int):
    """q, k and v as broadcast views (no copy), and the output's lead shape.

    With GQA, query heads (..., H, T, d_head) are viewed as
    (..., H_kv, n_rep, T, d_head) and key/value heads get a length-1 group
    axis, so they are broadcast, never copied.
    """
    def heads(x):
        return x.shape[:-2] if n_rep == 1 else (
            x.shape[:-3] + (x.shape[-3] * n_rep,))
    lead = np.broadcast_shapes(q.shape[:-2], heads(k), heads(v))
    if n_rep > 1:
        q = _group(q, n_rep)
        k, v = np.expand_dims(k, -3), np.expand_dims(v, -3)
    work = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    # every tile then covers the full batch and all heads
    q, k, v = (np.broadcast_to(x, work + x.shape[-2:]) for x in (q, k, v))
    return q, k, v, lead


def _group(x: np.ndarray, n_rep: int) -> np.ndarray:
    """(..., H, T, S) -> (..., H_kv, n_rep, T, S), or a 1-head axis kept."""
    if x.shape[-3] == 1:
        return np.expand_dims(x, -3)
    return x.reshape(x.shape[:-3] + (-1, n_rep) + x.shape[-2:])


def _fit(x: np.ndarray, lead: tuple, n_rep: int, ndim: int) -> np.ndarray:
    """A (..., T | 1, S | 1) mask or bias in the layout of the tiles.

    Padded to the output's ``len(lead) + 2`` axes, heads grouped as
    (H_kv, n_rep) with GQA, then cut to ``ndim`` axes (only 1s dropped).
    """
    x = x.reshape((1,) * (len(lead) + 2 - x.ndim) + x.shape)
    if n_rep > 1:
        x = _group(x, n_rep)
    x = x.reshape((1,) * (ndim - x.ndim) + x.shape)
    return x.reshape(x.shape[x.ndim - ndim:])


def check_mask_mod_tile(keep, want: tuple) -> np.ndarray:
    """What ``mask_mod`` returned for one tile: bool, broadcasting to
    ``want`` = (B, H, block_q, block_k) without enlarging it."""
    keep = np.asarray(keep)
    if keep.dtype != bool:
        raise ValueError(
            "mask_mod must return a boolean array (True = may attend), got "
            f"dtype {keep.dtype} with shape {keep.shape}"
        )
    if not _broadcasts_to(keep.shape, want):
        raise ValueError(
            f"mask_mod returned shape {keep.shape} for a tile of (B, H, "
            f"block_q, block_k) = {want}, expected a shape that broadcasts "
            "to it without enlarging it"
        )
    return keep


def _tile_masks(attn_mask, mask_mod, is_causal: bool, lead: tuple,
                n_rep: int, q: np.ndarray):
    """``mask_tile(i0, i1, j0, j1, heads) -> (skip, bias)`` for one tile
    of the batch and head slice ``heads`` (an index into the work axes).

    ``skip``: every score of the tile is hidden (or it has no key).
    ``bias``: what the tile's scores get added, 0 where a key may be seen
    and ``-inf`` where it is hidden (a float ``attn_mask`` adds its own
    values); None when nothing is hidden.
    """
    dtype, ndim = q.dtype, q.ndim
    if is_causal:  # top-left: key j hidden from query i when j > i
        @functools.lru_cache(maxsize=8)  # tiles on the diagonal repeat
        def causal_bias(offset, rows, cols):  # offset = i0 - j0
            # column c, row r of the tile: key j0 + c after query i0 + r
            future = np.arange(cols) > np.arange(rows)[:, None] + offset
            bias = np.where(future, dtype.type(-np.inf), dtype.type(0))
            bias.flags.writeable = False  # shared by tiles and threads
            return bias

        def mask_tile(i0, i1, j0, j1, heads):
            if j0 >= j1 or j1 - 1 <= i0:  # no key, or none after a query
                return j0 >= j1, None
            return False, causal_bias(i0 - j0, i1 - i0, j1 - j0)
    elif mask_mod is not None:
        b_idx, h_idx = _batch_head_indices(lead)

        def mask_tile(i0, i1, j0, j1, heads):  # heads = (): one thread
            keep = check_mask_mod_tile(mask_mod(
                b_idx, h_idx, np.arange(i0, i1)[:, None], np.arange(j0, j1)),
                (len(b_idx), len(h_idx), i1 - i0, j1 - j0))
            if keep.all():
                return False, None
            return not keep.any(), mask_to_bias(
                _fit(keep, lead, n_rep, ndim), dtype)
    elif attn_mask is not None:
        mask = _fit(attn_mask, lead, n_rep, ndim)

        def mask_tile(i0, i1, j0, j1, heads):
            rows = slice(None) if mask.shape[-2] == 1 else slice(i0, i1)
            cols = slice(None) if mask.shape[-1] == 1 else slice(j0, j1)
            tile = _heads_of(mask, heads)[..., rows, cols]
            if tile.dtype == bool:
                return not tile.any(), None if tile.all() else (
                    mask_to_bias(tile, dtype))
            bias = mask_to_bias(tile, dtype)
            return bool(np.isneginf(bias).all()), bias
    else:
        def mask_tile(i0, i1, j0, j1, heads):
            return False, None
    return mask_tile


def _heads_of(x: np.ndarray, heads: tuple) -> np.ndarray:
    """The part of a mask laid out as the tiles (:func:`_fit`) that covers
    the work slice ``heads``; its length-1 (broadcast) axes stay whole."""
    return x[tuple(h if n > 1 else slice(None)
                   for h, n in zip(heads, x.shape))]


def _batch_head_indices(lead: tuple) -> tuple:
    """``b`` (B, 1, 1, 1) and ``h`` (H, 1, 1) over the output's axes -4 and
    -3 (length 1 where there is none), as FlexAttention's ``mask_mod``
    sees them."""
    B, H = ((1, 1) + lead)[-2:]
    return np.arange(B)[:, None, None, None], np.arange(H)[:, None, None]
