"""Checks for the exercises of "Serving many requests" (book/serving.ipynb).

1. ``read_table(pool, table, n)``: a request's first ``n`` tokens read
   through its block table, from a pool (num_blocks, block_size, ...).
2. ``document_mask(q_req, q_pos, k_req, k_pos)``: the (T, S) mask of a
   flat batch, each query seeing its own request's keys up to its position.

The checks run the answers on pools and batches they make.
"""

from __future__ import annotations

import numpy as np


def _pools():
    """(pool, table, n): pools of three shapes, tables out of order, a
    last block cut inside (or not)."""
    rng = np.random.default_rng(52)
    for shape, table, n in [((6, 4), [4, 1, 3], 10),
                            ((8, 3, 2), [7, 0, 2, 5], 12),
                            ((5, 2, 3, 4), [3, 4], 3)]:
        yield rng.standard_normal(shape), table, n


def read_table(answer) -> str | None:
    """1. read_table(pool, table, n) -> the request's (n, ...) tokens."""
    for pool, table, n in _pools():
        want = pool[table].reshape(-1, *pool.shape[2:])[:n]
        got = answer(pool.copy(), list(table), n)
        if got is None:
            return "your function returned None: return the request's tokens"
        got = np.asarray(got)
        if got.shape != want.shape:
            return (f"for {n} tokens of shape {pool.shape[2:]} return shape "
                    f"{want.shape}, got {got.shape}: one row a token, in "
                    "order, cut to n")
        if np.array_equal(got, want):
            continue
        ordered = pool[sorted(table)].reshape(-1, *pool.shape[2:])[:n]
        if np.array_equal(got, ordered):
            return ("you read the blocks in the order of their ids: read "
                    "them in the table's order (the request's first block "
                    "is table[0])")
        return ("token t lives in block table[t // block_size] at slot "
                "t % block_size: gather the table's blocks, in order, then "
                "lay their slots end to end")
    return None


def _batches():
    """(q_req, q_pos, k_req, k_pos): flat batches of two to four requests,
    some decoding one token, some prefilling several."""
    yield (list("abbbbc"), [3, 0, 1, 2, 3, 2], list("aaaabbbbccc"),
           [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2])
    yield ([0, 0, 1, 2, 2, 2], [5, 6, 0, 2, 3, 4], [0] * 7 + [1] + [2] * 5,
           list(range(7)) + [0] + list(range(5)))
    yield ([7, 9], [1, 4], [7, 7, 9, 9, 9, 9, 9], [0, 1, 0, 1, 2, 3, 4])


def _mask(q_req, q_pos, k_req, k_pos):
    same = np.asarray(q_req)[:, None] == np.asarray(k_req)
    return same & (np.asarray(k_pos) <= np.asarray(q_pos)[:, None])


def document_mask(answer) -> str | None:
    """2. document_mask(q_req, q_pos, k_req, k_pos) -> (T, S) bool."""
    for q_req, q_pos, k_req, k_pos in _batches():
        args = [np.array(a) for a in (q_req, q_pos, k_req, k_pos)]
        want = _mask(*args)
        got = answer(*args)
        if got is None:
            return "your function returned None: return a (T, S) mask"
        got = np.asarray(got)
        if got.shape != want.shape:
            return (f"return one row a query and one column a key: shape "
                    f"{want.shape}, got {got.shape}")
        if got.dtype != bool:
            return f"return a boolean mask (True: may attend), got {got.dtype}"
        if np.array_equal(got, want):
            continue
        same = args[0][:, None] == args[2]
        causal = args[3] <= args[1][:, None]
        if np.array_equal(got, causal):
            return ("a query also sees the keys of other requests: keep it "
                    "to its own request's keys")
        if np.array_equal(got, same):
            return ("a query sees its request's later keys too: only keys "
                    "at a position up to its own")
        if np.array_equal(got, same & (args[3] < args[1][:, None])):
            return "a query may attend to its own position too (<=, not <)"
        return ("key j is allowed for query i when both belong to the same "
                "request and key j's position is at most query i's")
    return None


CHECKS = {1: read_table, 2: document_mask}
