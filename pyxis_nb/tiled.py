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
    block_q  queries of one tile (the last tile may have fewer)
    block_k  keys of one tile (the last tile may have fewer)
    B        batch (axis -4 of the 4-D core)
    rows     a tile's rows: its queries times ``n_rep`` (GQA)
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ._checks import (_broadcasts_to, as_float_array, check_attention,
                      check_callable, check_nonempty, check_positive_int,
                      check_positive_ints, check_same_dtype, check_shape)
from .masks import causal_mask_mod

__all__ = [
    "OnlineSoftmaxState",
    "TileStats",
    "TileStep",
    "online_softmax",
    "online_softmax_update",
    "Tiles",
    "tiled_attention",
    "tiled_attention_core",
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
        rows_shape : tuple of int, (..., block_q): the rows the state follows
        dtype : numpy float dtype
        value_dim : int, optional; None: no ``acc`` (the softmax alone)
        """
        m = np.empty(rows_shape + (1,), dtype=dtype)
        m.fill(-np.inf)  # as np.full does, in half its time
        l = np.zeros(rows_shape + (1,), dtype=dtype)  # noqa: E741
        acc = (None if value_dim is None
               else np.zeros(rows_shape + (value_dim,), dtype=dtype))
        return cls(m, l, acc)

    def output(self, out: np.ndarray | None = None) -> np.ndarray:
        """``acc / l``; rows that saw no allowed key give 0 (0 / 1).

        Parameters
        ----------
        out : ndarray, shape (..., block_q, d_head), optional; written in place
        """
        # l >= 1 once a key is seen (its largest term is exp(0)), else 0
        return np.divide(self.acc, np.maximum(self.row_sum, 1), out=out)


def online_softmax_update(state: OnlineSoftmaxState, scores,
                          value=None) -> OnlineSoftmaxState:
    """Fold one block of scores (and its values) into the running softmax.

    Parameters
    ----------
    state : OnlineSoftmaxState
        Updated in place and returned.
    scores : ndarray, shape (..., block_q, block_k)
        ``-inf`` where masked; overwritten with its exponentials.
    value : ndarray, shape (..., block_k, d_head), needed if ``state.acc``
    """
    m_new = np.maximum(state.row_max, scores.max(axis=-1, keepdims=True))
    shift = np.where(m_new == -np.inf, 0, m_new)  # only -inf: exp -> 0
    alpha = np.exp(state.row_max - shift)  # how much the old sums shrink
    p = np.exp(np.subtract(scores, shift, out=scores), out=scores)
    ones = _ones(p.shape[-1], p.dtype)  # p @ 1: row sums
    state.row_sum = alpha * state.row_sum + p @ ones  # (BLAS, one pass)
    if state.acc is not None:  # in place: acc is as large as a tile of q
        state.acc *= alpha
        state.acc += p @ value  # (..., block_q, block_k) @ (..., block_k, d)
    state.row_max = m_new
    return state


@functools.lru_cache(maxsize=16)
def _ones(n: int, dtype) -> np.ndarray:
    """A read-only (n, 1) column of ones of ``dtype``, made once for each
    ``n``: ``p @ _ones(...)`` sums the rows of ``p``."""
    ones = np.ones((n, 1), dtype)
    ones.flags.writeable = False
    return ones


def online_softmax(x, block_size: int) -> np.ndarray:
    """Softmax over the last axis, read ``block_size`` entries at a time.

    One pass finds each row's ``m`` and ``l`` holding one block of
    exponentials at a time; a second writes ``exp(x - m) / l`` (zeros for a
    fully masked row).

    Parameters
    ----------
    x : ndarray, shape (..., S), floating
    block_size : int

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
        T, S, block_q, block_k : int
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
            After this tile; its ``row_max`` and ``row_sum`` are copied.
        macs : int
            Multiply-adds of the tile's two matmuls (``2 * macs`` FLOPs).
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
    """How :func:`tiled_attention_loop` cuts the work, and what it adds.

    Parameters
    ----------
    block_q, block_k : int
        Queries and keys of one tile.
    scale : numpy float
        Multiplies the queries (``1 / sqrt(d_head)`` by default).
    n_rep : int
        Rows per query: with GQA the ``n_rep`` query heads that share a
        key/value head are rows of one tile (query ``i``, head ``r``: row
        ``i * n_rep + r``); 1 without.
    keep : callable
        ``keep(i0, i1, j0, j1)``: which scores of the tile of queries
        ``i0:i1`` and keys ``j0:j1`` are kept, a bool array (..., rows,
        cols), True = may attend; None when all are.
    score_mod : callable, optional
        ``score_mod(s, i0, i1, j0, j1)``: the tile's scores, changed
        (FlexAttention's ``score_mod``, bound to the tile's indices).
    keys : callable
        ``keys(i0, i1) -> (lo, hi)``: the queries ``i0:i1`` see no key
        before ``lo`` or from ``hi`` on (causal: ``hi = i1``), so the key
        tiles run from there to there.
    start : callable
        ``start(rows_shape, d_v)``: the online softmax before any key
        (``m = -inf``; with sinks, the sink's logit).
    buffer : callable
        ``buffer(rows, cols)``: a (..., rows, cols) array for one tile of
        scores, the same memory for every tile.
    """

    block_q: int
    block_k: int
    scale: np.floating
    n_rep: int
    keep: Callable
    score_mod: Callable | None
    keys: Callable
    start: Callable
    buffer: Callable


def tiled_attention_loop(q, k, v, out, tiles: Tiles, stats=None):
    """FlashAttention-2's loop: each query tile reads the keys tile by tile.

    Parameters
    ----------
    q : ndarray, shape (..., T * n_rep, d_head)
        With GQA the ``n_rep`` heads of a query are neighbouring rows.
    k, v : ndarray, shape (..., S, d_head)
        Of ``q``'s dtype and leading shape.
    out : ndarray, shape (..., T * n_rep, d_head)
        Written tile by tile, and returned.
    tiles : Tiles
    stats : TileStats, optional
        Records every tile visited.
    """
    n, (S, d_v) = tiles.n_rep, v.shape[-2:]
    for i0, i1 in _spans(q.shape[-2] // n, tiles.block_q):  # queries, Q_i
        q_i = q[..., i0 * n:i1 * n, :] * tiles.scale  # scaled once, its rows
        state = tiles.start(q_i.shape[:-1], d_v)  # m = -inf (or the sink)
        for j0, j1 in _spans(S, tiles.block_k, *tiles.keys(i0, i1)):
            keep = tiles.keep(i0, i1, j0, j1)  # (.., rows, cols), None: all
            computed = keep is None or keep.any()  # else every score hidden
            if computed:  # S_ij = Q_i K_j^T, (.., rows, block_k)
                k_j = np.swapaxes(k[..., j0:j1, :], -1, -2)  # a view
                s = np.matmul(q_i, k_j, out=tiles.buffer(q_i.shape[-2],
                                                         j1 - j0))
                if tiles.score_mod is not None:  # soft-cap, ALiBi, ...
                    s = tiles.score_mod(s, i0, i1, j0, j1)
                if keep is not None:  # -inf: hidden
                    np.copyto(s, -np.inf, where=~keep)
                online_softmax_update(state, s, v[..., j0:j1, :])  # m, l, acc
            if stats is not None:
                stats.add(i0, j0, state,
                          s.size * (k.shape[-1] + d_v) if computed else 0)
        state.output(out=out[..., i0 * n:i1 * n, :])  # O_i = acc / l
    return out


def tiled_attention(query, key, value, *, attn_mask=None, mask_mod=None,
                    score_mod=None, is_causal=False, scale=None,
                    enable_gqa=False, sinks=None, block_q=256, block_k=512,
                    return_stats=False):
    """Exact attention tile by tile; the (T, S) scores never exist at once.

    Checks the inputs, lays the heads out for the tiles (with GQA the
    query heads that share a key/value head become rows of one tile), and
    runs :func:`tiled_attention_loop` on every core, each on its own part
    of the batch and heads (torch's CPU kernel and FlashAttention split the
    work the same way). With ``score_mod`` and ``mask_mod`` it is
    FlexAttention: hidden tiles are skipped.

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
    score_mod : callable, optional
        ``score_mod(score, b, h, q_idx, kv_idx) -> score`` on the scaled
        scores, before the mask, on broadcast index arrays (torch's
        ``flex_attention``): a soft-cap, an ALiBi bias.
    is_causal : bool, default False
        Torch's top-left causal mask; tiles above the diagonal are skipped.
    scale : float, optional; default ``1 / sqrt(d_head)``
    enable_gqa : bool, default False
        Query heads ``H`` on axis -3 share ``H_kv`` key/value heads.
    sinks : ndarray, shape (H,), optional
        One logit per query head in every row's softmax, with no value
        (gpt-oss's learned sinks).
    block_q, block_k : int, default 256 and 512
        Queries and keys of one tile.
    return_stats : bool, default False
        Return ``(output, TileStats)``: which tiles were computed (then on
        one thread).

    See Also
    --------
    torch.nn.attention.flex_attention.flex_attention : ``score_mod`` and
        ``mask_mod`` (there through ``create_block_mask``).
    """
    q, k, v, attn_mask, n_rep = check_attention(
        query, key, value, attn_mask, is_causal, enable_gqa, mask_mod)
    block_q, block_k = check_positive_ints(block_q=block_q, block_k=block_k)
    check_callable("score_mod", score_mod,
                   "score_mod(score, b, h, q_idx, kv_idx) -> score array")
    lead = _lead(q, k, v, n_rep)
    sinks = _check_sinks(sinks, lead, q.dtype)
    q4, k4, v4 = _as_4d(q, k, v, lead, n_rep)  # (B, H, T, d), (B, H_kv, ..)
    if attn_mask is not None:
        attn_mask = _mask_4d(attn_mask, lead)
    stats = (TileStats.empty(q.shape[-2], k.shape[-2], block_q, block_k)
             if return_stats else None)
    out = tiled_attention_core(
        q4, k4, v4, attn_mask=attn_mask, mask_mod=mask_mod,
        score_mod=score_mod, is_causal=is_causal, scale=scale, sinks=sinks,
        block_q=block_q, block_k=block_k, stats=stats)
    out = out.reshape(lead + out.shape[-2:])
    if return_stats and n_rep == 1:  # the state per query, as the output
        for step in stats.steps:
            step.row_max, step.row_sum = (x.reshape(lead + x.shape[-1:])
                                          for x in (step.row_max,
                                                    step.row_sum))
    return (out, stats) if return_stats else out


def tiled_attention_core(query, key, value, *, attn_mask=None, mask_mod=None,
                         score_mod=None, is_causal=False, scale=None,
                         sinks=None, block_q=64, block_k=1024, stats=None,
                         causal_offset=0):
    """Unchecked core of :func:`tiled_attention` on 4-D heads.

    Parameters
    ----------
    query : ndarray, shape (B, H, T, d_head)
    key, value : ndarray, shape (B, H_kv, S, d_head)
        Of the dtype of ``query``; query head ``h`` reads key/value head
        ``h // n_rep``.
    attn_mask : ndarray, shape (B or 1, H or 1, T or 1, S or 1), optional
        Boolean, True = may attend, or floating, added to the scores.
    mask_mod, score_mod : callable, optional
        As in :func:`tiled_attention`.
    is_causal : bool, default False
        Query ``i`` sees keys ``0 .. i + causal_offset``.
    causal_offset : int, default 0
        0: torch's top-left triangle; ``S - T``: the queries are the last
        T positions (bottom-right, after a cache).
    scale : float, optional
        Defaults to ``1 / sqrt(d_head)``.
    sinks : ndarray, shape (H,), optional
        One logit per head in every row's softmax, with no value.
    block_q : int, default 64
        Queries of one tile (measured best at Qwen3's and SmolLM2's
        shapes, ``bench_generate``).
    block_k : int, default 1024
        Keys of one tile.
    stats : TileStats, optional
        Records every tile (then on one thread).

    Returns
    -------
    ndarray, shape (B, H, T, d_head)
        A view of an array laid out (B, H_kv, T, n_rep, d_head).
    """
    (B, H, T, d_head), (H_kv, S, d_v) = query.shape, value.shape[1:]
    n_rep = H // H_kv
    scale = query.dtype.type(1 / np.sqrt(d_head) if scale is None else scale)
    if is_causal and causal_offset >= S - 1:  # every query sees every key
        is_causal = False
    # (B, H_kv, n_rep, T, d) -> (B, H_kv, T * n_rep, d): a query's heads
    # are neighbouring rows of its key/value head (a copy with GQA)
    rows = query if n_rep == 1 else query.reshape(
        B, H_kv, n_rep, T, d_head).transpose(0, 1, 3, 2, 4).reshape(
        B, H_kv, T * n_rep, d_head)
    out = np.empty((B, H_kv, T * n_rep, d_v), query.dtype)
    masks = _TileMasks(attn_mask, mask_mod, score_mod, is_causal, sinks,
                       (B, H_kv, n_rep, T, S), query.dtype, causal_offset)
    bq, bk = min(block_q, T), min(block_k, S)

    def attend(heads):  # every tile of some of the heads: one core's work
        tiles = masks.tiles(heads, block_q, block_k, scale,
                            _tile_buffer(rows[heads], bq * n_rep, bk))
        tiled_attention_loop(rows[heads], key[heads], value[heads],
                             out[heads], tiles, stats)

    big = B * H * T * S * d_head >= PARALLEL_MIN_MACS  # threads pay off
    _across_cores(attend, (B, H_kv), parallel=big and stats is None
                  and mask_mod is None and score_mod is None)
    if n_rep == 1 or T == 1:  # (B, H, T, d) already, or one reshape away
        return out.reshape(B, H, T, d_v)
    # (B, H_kv, T, n_rep, d) -> laid out (B, T, H, d), so that merging the
    # heads costs no further copy; returned as the (B, H, T, d) view
    merged = np.empty((B, T, H_kv, n_rep, d_v), query.dtype)
    merged[...] = out.reshape(B, H_kv, T, n_rep, d_v).transpose(0, 2, 1, 3, 4)
    return merged.reshape(B, T, H, d_v).transpose(0, 2, 1, 3)


#: Multiply-adds of one of the two products (B * H * T * S * d_head) below
#: which the heads stay on one thread, BLAS on all of its own. Starting a
#: thread pool costs about a millisecond a call, which a decode step would
#: pay in every layer, and small products split across cores lose to one
#: core; from about 16 heads of 128 at T = 512 (2^29) the split wins
#: (``make bench BENCH=bench_tiled`` runs above it, the decode steps of
#: ``bench_generate`` below).
PARALLEL_MIN_MACS = 1 << 29


def _spans(n: int, block: int, lo: int = 0, hi: int | None = None):
    """``(start, stop)`` of each block of ``range(lo, n)``, stops cut at
    ``hi`` (causal: a query tile ending at ``hi`` needs no key from there
    on; a block past it is empty, and skipped)."""
    hi = n if hi is None else hi
    return ((i, min(i + block, n, hi)) for i in range(lo, n, block))


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
    axis = None if not parallel else next(
        (a for a, n in enumerate(work) if n > 1), None)
    if axis is None:  # small work, or one head: no pool
        return attend(())  # and no BLAS query (it loads threadpoolctl)
    blas = _blas()
    cores = 1 if blas is None else max(
        (c.num_threads for c in blas.lib_controllers), default=1)
    if cores < 2:
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


def _lead(q, k, v, n_rep: int) -> tuple:
    """The output's leading shape: the inputs' broadcast, key/value heads
    counted ``n_rep`` times each."""
    def heads(x):
        return x.shape[:-2] if n_rep == 1 else (
            x.shape[:-3] + (x.shape[-3] * n_rep,))
    return np.broadcast_shapes(q.shape[:-2], heads(k), heads(v))


def _as_4d(q, k, v, lead: tuple, n_rep: int):
    """q as (B, H, T, d_head), k and v as (B, H_kv, S, d_head): the last
    leading axis is the heads, all the others the batch (FlexAttention's
    b and h)."""
    lead2 = (1,) * (2 - len(lead)) + lead
    B, H = int(np.prod(lead2[:-1])), lead2[-1]
    kv_lead = lead if n_rep == 1 else lead[:-1] + (H // n_rep,)
    q4 = np.broadcast_to(q, lead + q.shape[-2:]).reshape(B, H, *q.shape[-2:])
    k4, v4 = (np.broadcast_to(x, kv_lead + x.shape[-2:]).reshape(
        B, H // n_rep, *x.shape[-2:]) for x in (k, v))
    return q4, k4, v4


def _mask_4d(mask: np.ndarray, lead: tuple) -> np.ndarray:
    """A mask broadcastable to (lead, T, S) as (B or 1, H or 1, T or 1,
    S or 1), the batch axes merged as :func:`_as_4d` merges them."""
    lead2 = (1,) * (2 - len(lead)) + lead
    m = mask.reshape((1,) * (len(lead2) + 2 - mask.ndim) + mask.shape)
    if len(lead2) > 2:  # several batch axes: merged into one
        m = np.broadcast_to(m, lead2[:-1] + m.shape[-3:]).reshape(
            (-1,) + m.shape[-3:])
    return m


def _check_sinks(sinks, lead: tuple, dtype) -> np.ndarray | None:
    """``sinks`` as one logit per query head, (H,), of the inputs' dtype."""
    if sinks is None:
        return None
    s = as_float_array("sinks", sinks, ndim=1, finite=True)
    H = lead[-1] if lead else 1
    check_shape("sinks", s, s.shape == (H,), f"one logit per query head, "
                f"(H,) = ({H},)")
    check_same_dtype(query=np.empty(0, dtype), sinks=s)
    return s


def check_mask_mod_tile(keep, want: tuple) -> np.ndarray:
    """What ``mask_mod`` returned for one tile: bool, broadcasting to
    ``want`` = (B, H_kv, rows, cols) without enlarging it."""
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


def check_score_mod_tile(score, want: tuple, dtype) -> np.ndarray:
    """What ``score_mod`` returned for one tile: floats of the scores'
    dtype, broadcasting to ``want`` without enlarging it."""
    score = np.asarray(score)
    if score.dtype != dtype or not _broadcasts_to(score.shape, want):
        raise ValueError(
            f"score_mod returned dtype {score.dtype} and shape {score.shape} "
            f"for a tile of scores of dtype {dtype} and shape {want}, "
            "expected the scores' dtype and shape"
        )
    if score.shape == tuple(want) and score.flags.writeable:
        return score
    # a smaller or read-only answer: a writable copy, as the mask writes
    # -inf into the tile next
    return np.array(np.broadcast_to(score, want))


class _TileMasks:
    """What each tile keeps and adds, in :func:`tiled_attention_core`'s
    layout: batch ``b``, key/value head ``g``, and rows ``i * n_rep + r``
    for query ``i`` and query head ``h = g * n_rep + r``."""

    def __init__(self, attn_mask, mask_mod, score_mod, is_causal, sinks,
                 shape: tuple, dtype, causal_offset: int = 0):
        B, H_kv, n_rep, T, S = shape
        self.n_rep, self.dtype = n_rep, np.dtype(dtype)
        self.mask_mod, self.user_score_mod = mask_mod, score_mod
        self.is_causal, self.S = is_causal, S
        self.offset = causal_offset  # query i sits at key i + offset
        self.B, self.H_kv = B, H_kv
        self.sinks = None if sinks is None else sinks.reshape(H_kv, n_rep)
        self.mask = self.bias = None
        if attn_mask is not None:  # (B|1, H|1, T|1, S|1) -> grouped heads
            m = attn_mask.reshape((1,) * (4 - attn_mask.ndim)
                                  + attn_mask.shape)
            m = (m[:, :, None] if m.shape[1] == 1 else m.reshape(
                m.shape[0], H_kv, n_rep, *m.shape[2:]))  # (.., H_kv, n, ..)
            if m.dtype == bool:
                self.mask = m
            else:
                self.bias = m.astype(self.dtype, copy=False)

    def tiles(self, heads: tuple, block_q: int, block_k: int, scale,
              buffer) -> Tiles:
        """The :class:`Tiles` of the batch and head slice ``heads``."""
        part = _TilePart(self, heads, block_k)
        score_mod = (None if self.user_score_mod is None
                     and self.bias is None else part.score_mod)
        return Tiles(block_q, block_k, scale, self.n_rep, part.keep, score_mod,
                     part.keys, part.start, buffer)


class _TilePart:
    """:class:`_TileMasks` for one core's slice ``heads`` of (B, H_kv)."""

    def __init__(self, masks: _TileMasks, heads: tuple, block_k: int):
        self.m, self.block_k = masks, block_k
        self.heads = heads = heads + (slice(None),) * (2 - len(heads))
        self.sinks = None if masks.sinks is None else masks.sinks[heads[1]]
        self.mask = None if masks.mask is None else _part(masks.mask, heads)
        self.bias = None if masks.bias is None else _part(masks.bias, heads)

    def indices(self, i0, i1, j0, j1):
        """b, h, q_idx, kv_idx of a tile, broadcasting to (B, H_kv, rows,
        cols)."""
        m, (bs, gs) = self.m, self.heads
        b = np.arange(m.B)[bs, None, None, None]  # (B, 1, 1, 1)
        g = np.arange(m.H_kv)[None, gs, None, None]  # (1, H_kv, 1, 1)
        r = np.arange(i0 * m.n_rep, i1 * m.n_rep)[:, None]  # (rows, 1)
        h = g if m.n_rep == 1 else g * m.n_rep + r % m.n_rep  # (1, H_kv, ..)
        return b, h, r // m.n_rep, np.arange(j0, j1)

    def keep(self, i0, i1, j0, j1):
        """The tile's kept scores (.., rows, cols), or None for all."""
        m, keep = self.m, None
        if j0 >= j1:  # past the last key a query may see: skipped
            return np.zeros((1, 1), bool)
        if m.is_causal:  # query i sees keys 0 .. i + offset
            if j0 >= i1 + m.offset:  # every key after the last query's
                return np.zeros((1, 1), bool)
            if j1 - 1 > i0 + m.offset:  # some key after the first query's
                rows = np.arange(i0 * m.n_rep, i1 * m.n_rep) // m.n_rep
                keep = causal_mask_mod(0, 0, rows[:, None] + m.offset,
                                       np.arange(j0, j1))
        if m.mask_mod is not None:
            b, h, q_idx, kv_idx = self.indices(i0, i1, j0, j1)
            want = (len(b), h.shape[1], len(q_idx), j1 - j0)
            tile = check_mask_mod_tile(m.mask_mod(b, h, q_idx, kv_idx), want)
            keep = tile if keep is None else keep & tile
        if self.mask is not None:
            tile = _rows(self.mask, i0, i1, j0, j1, m.n_rep)
            keep = tile if keep is None else keep & tile
        return None if keep is None or keep.all() else keep

    def keys(self, i0: int, i1: int) -> tuple[int, int]:
        """The keys the queries ``i0:i1`` may see lie in ``lo:hi``; ``lo``
        on a tile's border (tiles stay where the stats draw them)."""
        m = self.m
        hi = min(m.S, i1 + m.offset) if m.is_causal else m.S
        if self.mask is None or self.mask.shape[-1] == 1:
            return 0, hi
        rows = self.mask[..., slice(None) if self.mask.shape[-2] == 1
                         else slice(i0, i1), :hi]
        seen = rows.any(axis=tuple(range(rows.ndim - 1)))  # (hi,)
        if not seen.any():
            return 0, 0
        lo, hi = int(seen.argmax()), hi - int(seen[::-1].argmax())
        return lo - lo % self.block_k, hi

    def score_mod(self, s, i0, i1, j0, j1):
        """The tile's scores after ``score_mod`` and a float mask."""
        if self.m.user_score_mod is not None:
            s = check_score_mod_tile(self.m.user_score_mod(
                s, *self.indices(i0, i1, j0, j1)), s.shape, s.dtype)
        if self.bias is not None:
            s = s + _rows(self.bias, i0, i1, j0, j1, self.m.n_rep)
        return s

    def start(self, rows_shape: tuple, d_v: int) -> OnlineSoftmaxState:
        """Before any key; with sinks, each row has seen its head's sink:
        ``m = sink``, ``l = exp(sink - m) = 1``, no value."""
        state = OnlineSoftmaxState.empty(rows_shape, self.m.dtype, d_v)
        if self.sinks is not None:  # (H_kv, n) -> rows (i, r) of each g
            q = rows_shape[-1] // self.m.n_rep
            state.row_max[...] = np.tile(self.sinks, (1, q))[..., None]
            state.row_sum[...] = 1
        return state


def _part(x: np.ndarray, heads: tuple) -> np.ndarray:
    """The slice ``heads`` of (B, H_kv) of a grouped mask (B|1, H_kv|1,
    n|1, T|1, S|1); its length-1 (broadcast) axes stay whole."""
    return x[tuple(h if n > 1 else slice(None)
                   for h, n in zip(heads, x.shape))]


def _rows(x: np.ndarray, i0, i1, j0, j1, n_rep: int) -> np.ndarray:
    """A grouped mask's tile (B|1, H_kv|1, n|1, T|1, S|1) as the tile's
    rows: (B|1, H_kv|1, rows, cols), a query's ``n_rep`` heads in turn."""
    t = x[..., slice(None) if x.shape[-2] == 1 else slice(i0, i1),
          slice(None) if x.shape[-1] == 1 else slice(j0, j1)]
    t = np.broadcast_to(t, t.shape[:2] + (n_rep, i1 - i0, t.shape[-1]))
    # (.., n, q, cols) -> (.., q, n, cols) -> (.., q * n, cols)
    return t.transpose(0, 1, 3, 2, 4).reshape(
        t.shape[:2] + ((i1 - i0) * n_rep, t.shape[-1]))
