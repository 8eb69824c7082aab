"""A paged KV cache: keys and values in fixed-size blocks from one pool.

A dense cache reserves every request's longest length up front; a paged
one (vLLM's PagedAttention, Kwon et al. 2023) cuts the cache into blocks
of ``block_size`` tokens (16 by default) and hands them out as a request
grows. :class:`BlockPool` keeps the free list and one block table per
request (its block ids, in order); :class:`PagedLayer` keeps a layer's
storage, ``num_blocks`` blocks of keys and values, and reads a request's
tokens through its table; :class:`PagedCache` is a :class:`~.Cache` of
those entries sharing one pool, so a block id means the same tokens in
every layer (as vLLM's and transformers' ``PagedAttentionCache``).
``update`` returns the held keys and values as a dense cache does, so the
package's one attention kernel runs unchanged, and the results are equal
bit for bit. :func:`fragmentation` measures what each kind of cache holds.

With ``enable_prefix_caching`` (vLLM's automatic prefix caching) the pool
keys every full block by its tokens and the key of the block before it,
counts the tables that hold each block, and hands a new request whose
tokens start alike the blocks already computed; freed keyed blocks stay
shareable until the pool needs them, least recently freed first.

Shape legend:
    B       batch (a row is a request; its block table is its own)
    H_kv    key/value heads
    T       positions appended by one ``update``
    S       positions a row holds after it
    d_head  head size
    L       layers
"""

from __future__ import annotations

import hashlib
from collections import deque

import numpy as np

from ._checks import (as_config_dict, as_float_array, check_float_dtype,
                      check_int, check_needs, check_positive_int,
                      check_same_dtype, check_shape)
from .kv_cache import Cache, CacheLayer

__all__ = ["BlockPool", "PagedLayer", "PagedCache", "fragmentation"]


def blocks_for(num_tokens: int, block_size: int) -> int:
    """Blocks that hold ``num_tokens`` tokens: ceil(num_tokens /
    block_size)."""
    return -(-num_tokens // block_size)


def block_hash(parent: bytes, token_ids) -> bytes:
    """The key of a full block: sha256 of the key of the block before it
    (``b""`` for the first) and its tokens, so equal keys mean equal
    prefixes (vLLM's block hash, with its sha256 option)."""
    tokens = np.asarray(token_ids, dtype=np.int64).tobytes()
    return hashlib.sha256(parent + tokens).digest()


class BlockPool:
    """Block ids ``0 .. num_blocks - 1``: a free list and the block table
    of each request (any hashable id: a batch row, a request's name).

    ``num_blocks``: blocks in the pool; ``block_size``: tokens a block;
    ``enable_prefix_caching`` (vLLM's name): key full blocks by
    :func:`block_hash` so a later request whose tokens start alike shares
    them (:meth:`match_prefix`, :meth:`share`).

    Each block counts the tables that hold it (``ref_counts``); at 0 it
    is free, but keeps its key and can still be shared until
    :meth:`allocate` takes it, least recently freed first. Only full
    blocks get keys, and a request writes only past its held tokens, so
    a shared block is never written (:meth:`check_writable` refuses).
    """

    def __init__(self, num_blocks: int, block_size: int = 16,
                 enable_prefix_caching: bool = False):
        self.num_blocks = check_positive_int("num_blocks", num_blocks)
        self.block_size = check_positive_int("block_size", block_size)
        self.enable_prefix_caching = bool(enable_prefix_caching)
        self.free_blocks = deque(range(self.num_blocks))  # oldest first
        self.block_tables = {}  # request id -> its block ids, in order
        self.ref_counts = [0] * self.num_blocks  # tables holding a block
        self.block_hashes = {}  # block id -> its key, once it is full
        self.cached_blocks = {}  # key -> the block that holds its tokens
        self.blocks_taken = 0  # blocks allocate handed out, all told

    @property
    def num_free_blocks(self) -> int:
        """Blocks no request holds (keyed ones among them)."""
        return len(self.free_blocks)

    def blocks_needed(self, request_id, num_tokens: int) -> int:
        """New blocks that request ``request_id`` needs to hold
        ``num_tokens`` tokens."""
        held = len(self.block_tables.get(request_id, ()))
        return max(blocks_for(num_tokens, self.block_size) - held, 0)

    def allocate(self, request_ids, num_tokens: int) -> None:
        """Grow each of ``request_ids``' tables to hold ``num_tokens``
        tokens; all or nothing: a ValueError takes no block."""
        num_tokens = check_int("num_tokens", num_tokens, low=0)
        needed = [self.blocks_needed(r, num_tokens) for r in request_ids]
        if sum(needed) > self.num_free_blocks:
            raise ValueError(
                f"num_blocks: the pool of {self.num_blocks} blocks of "
                f"{self.block_size} tokens has {self.num_free_blocks} free, "
                f"{sum(needed)} needed to hold {num_tokens} tokens in "
                f"{len(needed)} rows; build the cache with more num_blocks")
        for r, n in zip(request_ids, needed):
            table = self.block_tables.setdefault(r, [])
            table += [self.take() for _ in range(n)]

    def take(self) -> int:
        """The least recently freed block, its key forgotten (evicted
        from the prefix cache), held once."""
        block = self.free_blocks.popleft()
        self.forget(block)
        self.ref_counts[block] = 1
        self.blocks_taken += 1
        return block

    def forget(self, block: int) -> None:
        """Drop ``block``'s key: its tokens are about to change."""
        key = self.block_hashes.pop(block, None)
        if self.cached_blocks.get(key) == block:
            del self.cached_blocks[key]

    def release(self, blocks) -> None:
        """One table fewer holds each of ``blocks``; those no table holds
        go to the end of the free list, the last block first (a prefix's
        tail is evicted before its head)."""
        for block in reversed(blocks):
            self.ref_counts[block] -= 1
            if self.ref_counts[block] == 0:
                self.free_blocks.append(block)

    def crop(self, request_id, num_tokens: int) -> None:
        """Keep the blocks of request ``request_id``'s first ``num_tokens``
        tokens; release the rest. A last block cut inside will be written
        again: it must be the request's alone, and loses its key."""
        table = self.block_tables.get(request_id, [])
        keep = blocks_for(check_int("num_tokens", num_tokens, low=0),
                          self.block_size)
        if num_tokens % self.block_size and keep <= len(table):
            last = table[keep - 1]
            check_needs(self.ref_counts[last] == 1, "num_tokens", f"a cut "
                        f"in a block of request {request_id!r} alone",
                        f"block {last} is shared by "
                        f"{self.ref_counts[last]} requests")
            self.forget(last)
        self.release(table[keep:])
        del table[keep:]

    def free(self, request_id) -> None:
        """Release every block of request ``request_id`` (none: nothing);
        keyed ones stay shareable until taken."""
        self.release(self.block_tables.pop(request_id, []))

    def reset(self) -> None:
        """Return every block; forget every key."""
        for request_id in list(self.block_tables):
            self.free(request_id)
        self.block_hashes, self.cached_blocks = {}, {}

    def match_prefix(self, token_ids) -> list:
        """The keyed blocks that hold the longest run of ``token_ids``'
        first full blocks (vLLM's computed blocks); [] without prefix
        caching."""
        blocks, key, size = [], b"", self.block_size
        for i in range(len(token_ids) // size
                       if self.enable_prefix_caching else 0):
            key = block_hash(key, token_ids[i * size:(i + 1) * size])
            if key not in self.cached_blocks:
                break
            blocks.append(self.cached_blocks[key])
        return blocks

    def share(self, request_id, blocks) -> None:
        """Start request ``request_id``'s table with ``blocks`` (from
        :meth:`match_prefix`), one more table holding each."""
        check_needs(not self.block_tables.get(request_id), "request_id",
                    "a request that holds no block", f"{request_id!r} "
                    f"holds {self.block_tables.get(request_id)}")
        for block in blocks:
            if self.ref_counts[block] == 0:
                self.free_blocks.remove(block)
            self.ref_counts[block] += 1
        self.block_tables[request_id] = list(blocks)

    def cache_blocks(self, request_id, token_ids) -> None:
        """Key each full block of request ``request_id`` that holds
        ``token_ids`` (its first tokens, written) and has no key yet; a
        key another block holds already is not cached twice."""
        if not self.enable_prefix_caching:
            return
        table, key, size = self.block_tables[request_id], b"", \
            self.block_size
        for i in range(len(token_ids) // size):
            if table[i] not in self.block_hashes:
                self.block_hashes[table[i]] = block_hash(
                    key, token_ids[i * size:(i + 1) * size])
                self.cached_blocks.setdefault(self.block_hashes[table[i]],
                                              table[i])
            key = self.block_hashes[table[i]]

    def check_writable(self, request_ids, start: int, stop: int) -> None:
        """Refuse a write of positions ``start`` up to ``stop`` (not
        included) of any of ``request_ids`` into a held block that is
        shared or keyed."""
        first, size = start // self.block_size, self.block_size
        for r in request_ids:
            for b in self.block_tables.get(r, [])[first:blocks_for(stop,
                                                                   size)]:
                check_needs(self.ref_counts[b] == 1 and b not in
                            self.block_hashes, "key_states", f"block {b} "
                            f"of request {r!r} to be its own and unkeyed",
                            f"{self.ref_counts[b]} requests hold it, and "
                            f"it is {'' if b in self.block_hashes else 'un'}"
                            "keyed: a shared block is never written")

    def table(self, request_ids, num_tokens: int) -> np.ndarray:
        """The blocks that hold the first ``num_tokens`` tokens of each of
        ``request_ids``: (len(request_ids), ceil(num_tokens / block_size))
        ids."""
        n = blocks_for(num_tokens, self.block_size)
        return np.array([self.block_tables[r][:n] for r in request_ids],
                        dtype=np.intp).reshape(len(request_ids), n)

    def __repr__(self) -> str:
        cached = (f", cached={len(self.cached_blocks)}"
                  if self.enable_prefix_caching else "")
        return (f"BlockPool(num_blocks={self.num_blocks}, block_size="
                f"{self.block_size}, free={self.num_free_blocks}{cached}, "
                f"tables={self.block_tables})")


def read_blocks(storage, blocks, num_tokens: int) -> np.ndarray:
    """Each row's blocks laid end to end, its first ``num_tokens`` kept.

    ``storage`` (num_blocks, H_kv, block_size, d_head), ``blocks`` (B, n)
    block ids -> (B, H_kv, S = num_tokens, d_head)."""
    pages = storage[blocks]  # (B, n, H_kv, block_size, d_head)
    B, n, H_kv, size, d = pages.shape
    pages = pages.transpose(0, 2, 1, 3, 4)  # (B, H_kv, n, block_size, d)
    return pages.reshape(B, H_kv, n * size, d)[:, :, :num_tokens]


class PagedLayer(CacheLayer):
    """A full layer's keys and values in the blocks of ``pool``.

    ``key_cache`` and ``value_cache``: (num_blocks, H_kv, block_size,
    d_head), allocated once; row ``b`` of the batch is request ``b`` of
    the pool, and its tokens are read through its block table.
    ``num_key_value_heads``, ``head_dim``: H_kv, d_head; ``dtype``
    (float64): the one every ``update`` must pass.

    See Also
    --------
    transformers.generation.continuous_batching.PagedAttentionCache
    """

    kind = "p"

    def __init__(self, pool: BlockPool, num_key_value_heads: int,
                 head_dim: int, dtype=np.float64):
        super().__init__()
        if not isinstance(pool, BlockPool):
            raise TypeError(f"pool must be a BlockPool, got "
                            f"{type(pool).__name__}")
        self.pool = pool
        shape = (pool.num_blocks, check_positive_int(
            "num_key_value_heads", num_key_value_heads), pool.block_size,
            check_positive_int("head_dim", head_dim))
        dtype = check_float_dtype("dtype", dtype)
        self.key_cache = np.zeros(shape, dtype)  # the storage
        self.value_cache = np.zeros(shape, dtype)
        self.batch_size = None  # set by the first update

    @property
    def held(self) -> int:
        return self.seen

    @property
    def block_tables(self) -> list:
        """Each row's block ids, in order."""
        return [self.pool.block_tables.get(b, [])
                for b in range(self.batch_size or 0)]

    @property
    def nbytes(self) -> int:
        """Bytes of the storage, whatever the blocks in use."""
        return self.key_cache.nbytes + self.value_cache.nbytes

    def check(self, key_states, value_states):
        """``key_states`` and ``value_states`` (B, H_kv, T, d_head) of the
        storage's heads, size and dtype, for the rows held."""
        k = as_float_array("key_states", key_states, ndim=4)
        v = as_float_array("value_states", value_states, ndim=4)
        _, H_kv, _, d = self.key_cache.shape
        B = self.batch_size or k.shape[0]
        for name, x in (("key_states", k), ("value_states", v)):
            check_shape(name, x, x.shape == (B, H_kv, k.shape[2], d)
                        and x.shape[2] >= 1, f"(B, H_kv, T, d_head) = "
                        f"({B}, {H_kv}, T, {d}) with T >= 1")
        check_same_dtype(key_cache=self.key_cache, key_states=k,
                         value_states=v)
        for b, table in enumerate(self.block_tables):
            check_needs(len(table) * self.pool.block_size >= self.seen,
                        "key_states", f"the blocks of row {b}'s "
                        f"{self.seen} tokens", "the row was freed; reset() "
                        "the cache or build a new one")
        return k, v

    def update(self, key_states, value_states):
        """Write the T new tokens into each row's blocks (taking blocks
        from the pool as needed); return all S held, read through the
        block tables.

        ``key_states``, ``value_states``: (B, H_kv, T, d_head) -> keys,
        values (B, H_kv, S, d_head)."""
        B, S = key_states.shape[0], self.seen + key_states.shape[2]
        self.write(range(B), self.seen, key_states, value_states)
        self.batch_size, self.seen = B, S
        return self.read(range(B), S)

    def write(self, request_ids, start: int, key_states, value_states):
        """Write each of ``request_ids``' new tokens at positions ``start``
        .. ``start + T - 1``, taking blocks as needed (unchecked).

        ``key_states``, ``value_states``: (len(request_ids), H_kv, T,
        d_head)."""
        S = start + key_states.shape[2]
        self.pool.check_writable(request_ids, start, S)
        self.pool.allocate(request_ids, S)  # raises before any write
        blocks = self.pool.table(request_ids, S)  # (B, ceil(S / size))
        pos = np.arange(start, S)  # the new tokens' positions
        size = self.pool.block_size
        block, offset = blocks[:, pos // size], pos % size  # (B, T), (T,)
        self.key_cache[block, :, offset] = key_states.transpose(0, 2, 1, 3)
        self.value_cache[block, :, offset] = value_states.transpose(
            0, 2, 1, 3)  # (B, T, H_kv, d_head) each

    def read(self, request_ids, num_tokens: int):
        """Keys and values of each of ``request_ids``' first
        ``num_tokens`` tokens: (len(request_ids), H_kv, S, d_head) each."""
        blocks = self.pool.table(request_ids, num_tokens)
        return (read_blocks(self.key_cache, blocks, num_tokens),
                read_blocks(self.value_cache, blocks, num_tokens))

    def reset(self) -> None:
        """Forget every token; return each row's blocks to the pool."""
        for b in range(self.batch_size or 0):
            self.pool.free(b)
        self.batch_size, self.seen = None, 0

    def crop(self, max_length: int) -> None:
        """Keep the first ``max_length`` tokens (negative: drop that many
        from the end); blocks past them return to the pool."""
        super().crop(max_length)
        for b in range(self.batch_size or 0):
            self.pool.crop(b, self.seen)


class PagedCache(Cache):
    """``L`` :class:`PagedLayer` entries sharing one :class:`BlockPool`.

    ``num_hidden_layers``, ``num_key_value_heads``, ``head_dim``: L, H_kv,
    d_head; ``num_blocks``: blocks in the pool (each layer stores them
    all); ``block_size``: tokens a block (16); ``dtype`` (float64): the
    model's; ``enable_prefix_caching``: the pool's (:class:`BlockPool`).
    Row ``b`` of a batch holds ``ceil(S / block_size)`` blocks;
    :meth:`free` returns them when its request ends.

    See Also
    --------
    transformers.generation.continuous_batching.PagedAttentionCache
    """

    def __init__(self, num_hidden_layers: int, num_key_value_heads: int,
                 head_dim: int, *, num_blocks: int, block_size: int = 16,
                 dtype=np.float64, enable_prefix_caching: bool = False):
        L = check_positive_int("num_hidden_layers", num_hidden_layers)
        self.pool = BlockPool(num_blocks, block_size, enable_prefix_caching)
        super().__init__([PagedLayer(self.pool, num_key_value_heads,
                                     head_dim, dtype) for _ in range(L)])
        self.dtype = self.layers[0].key_cache.dtype

    @classmethod
    def from_config(cls, config, *, num_blocks: int, block_size: int = 16,
                    dtype=np.float64, enable_prefix_caching: bool = False):
        """A cache that fits ``config`` (a ``ModelConfig``, a transformers
        config or a dict) of full-attention layers; ``num_blocks``,
        ``block_size``, ``dtype``, ``enable_prefix_caching``: as
        :class:`PagedCache`."""
        c = as_config_dict(config, ("num_hidden_layers",
                                    "num_key_value_heads"))
        full = {"full_attention"}
        check_needs(set(c.get("layer_types") or full) == full
                    and not c.get("kv_lora_rank"), "config",
                    "full-attention layers only", "sliding, latent and "
                    "linear-attention layers have their own entries")
        head_dim = c.get("head_dim") or \
            c["hidden_size"] // c["num_attention_heads"]
        return cls(c["num_hidden_layers"], c["num_key_value_heads"],
                   head_dim, num_blocks=num_blocks, block_size=block_size,
                   dtype=dtype, enable_prefix_caching=enable_prefix_caching)

    @property
    def num_blocks(self) -> int:
        """Blocks in the pool."""
        return self.pool.num_blocks

    @property
    def block_size(self) -> int:
        """Tokens a block."""
        return self.pool.block_size

    @property
    def num_free_blocks(self) -> int:
        """Blocks no row holds."""
        return self.pool.num_free_blocks

    @property
    def token_nbytes(self) -> int:
        """Bytes of one token's keys and values in every layer."""
        _, H_kv, _, d = self.layers[0].key_cache.shape
        return 2 * len(self.layers) * H_kv * d * self.dtype.itemsize

    @property
    def used_nbytes(self) -> int:
        """Bytes of the blocks in use, in every layer."""
        used = self.num_blocks - self.num_free_blocks
        return used * self.block_size * self.token_nbytes

    def free(self, row: int) -> None:
        """Return row ``row``'s blocks to the pool: its request ended
        (the batch's later updates refuse then: ``reset`` starts anew)."""
        B = self.layers[0].batch_size
        self.pool.free(check_int("row", row, low=0,
                                 high=None if B is None else B - 1))

    def __repr__(self) -> str:
        used = self.num_blocks - self.num_free_blocks
        return (f"{super().__repr__()[:-1]}, blocks={used}/"
                f"{self.num_blocks} of {self.block_size} tokens)")


def fragmentation(lengths, max_length: int, block_size: int = 16,
                  token_nbytes: int = 1) -> dict:
    """Bytes held for requests of ``lengths`` tokens: by the tokens, by
    paged blocks, by a dense cache reserving ``max_length`` a request.

    ``block_size``: tokens a block; ``token_nbytes``: one token's keys and
    values in every layer (:attr:`PagedCache.token_nbytes`; 1 counts
    tokens). Returns a dict of ``"tokens"``, ``"paged"``, ``"dense"``
    (bytes) and ``"paged_waste"``, ``"dense_waste"``: the share of each
    cache's bytes that holds no token.
    """
    n = np.asarray(lengths)
    check_shape("lengths", n, n.ndim == 1 and np.issubdtype(
        n.dtype, np.integer) and (n >= 0).all(), "(number of requests,) "
        "token counts >= 0")
    most = check_int("max_length", max_length, low=int(n.max(initial=0)))
    size = check_positive_int("block_size", block_size)
    per = check_positive_int("token_nbytes", token_nbytes)
    tokens = int(n.sum()) * per
    paged = int(blocks_for(n, size).sum()) * size * per
    dense = len(n) * most * per
    return {"tokens": tokens, "paged": paged, "dense": dense,
            "paged_waste": 1 - tokens / paged if paged else 0.0,
            "dense_waste": 1 - tokens / dense if dense else 0.0}
