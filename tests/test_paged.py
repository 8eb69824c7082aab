"""Tests of pyxis_nb.paged: the block pool, the paged cache equal to the
dense one bit for bit (on the Shakespeare model too), crop, memory, and
every refusal."""

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyxis_nb as px
from pyxis_nb.kv_cache import DynamicCache
from pyxis_nb.paged import BlockPool, PagedCache, PagedLayer, fragmentation


def kv(B=2, Hkv=3, t=1, D=4, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((B, Hkv, t, D)).astype(dtype),
            rng.standard_normal((B, Hkv, t, D)).astype(dtype))


# ------------------------------------------------------------ the pool
def test_blocks_are_handed_out_and_returned():
    pool = BlockPool(num_blocks=6, block_size=4)
    pool.allocate([0, 1], 5)  # 5 tokens: 2 blocks a row
    assert pool.block_tables == {0: [0, 1], 1: [2, 3]}
    assert pool.num_free_blocks == 2
    pool.allocate([0, 1], 8)  # still 2 blocks: nothing new
    assert pool.num_free_blocks == 2
    pool.crop(0, 4)  # 1 block holds 4 tokens
    assert pool.block_tables[0] == [0] and pool.num_free_blocks == 3
    pool.free(1)
    assert 1 not in pool.block_tables and pool.num_free_blocks == 5
    pool.allocate(["chat"], 9)  # any id; the oldest free blocks first
    assert pool.block_tables["chat"] == [4, 5, 1]
    pool.reset()
    assert pool.num_free_blocks == 6 and pool.block_tables == {}


def test_a_pool_that_runs_out_says_so_and_takes_nothing():
    pool = BlockPool(num_blocks=4, block_size=16)
    pool.allocate([0], 17)
    with pytest.raises(ValueError, match=r"num_blocks: the pool of 4 blocks "
                       r"of 16 tokens has 2 free, 4 needed to hold 33 tokens "
                       r"in 2 rows"):
        pool.allocate([0, 1], 33)
    assert pool.block_tables == {0: [0, 1]} and pool.num_free_blocks == 2


OPS = st.lists(st.tuples(st.sampled_from(["grow", "crop", "free"]),
                         st.integers(0, 3), st.integers(0, 30)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(ops=OPS, block_size=st.integers(1, 6), num_blocks=st.integers(1, 12))
def test_the_pool_never_hands_out_a_block_twice(ops, block_size, num_blocks):
    pool = BlockPool(num_blocks, block_size)
    tokens = collections.Counter()  # what each request holds, by hand
    for op, row, n in ops:
        if op == "grow":
            need = pool.blocks_needed(row, n)
            if need > pool.num_free_blocks:
                before = ({r: list(t) for r, t in pool.block_tables.items()},
                          list(pool.free_blocks))
                with pytest.raises(ValueError, match="num_blocks"):
                    pool.allocate([row], n)
                assert ({r: list(t) for r, t in pool.block_tables.items()},
                        list(pool.free_blocks)) == before
                continue
            pool.allocate([row], n)
            tokens[row] = max(tokens[row], n)
        elif op == "crop":
            pool.crop(row, n)
            tokens[row] = min(tokens[row], n)
        else:
            pool.free(row)
            tokens[row] = 0
        held = [b for table in pool.block_tables.values() for b in table]
        everything = held + list(pool.free_blocks)
        assert sorted(everything) == list(range(num_blocks))  # each once
        for r, t in pool.block_tables.items():
            assert len(t) == -(-tokens[r] // block_size)
        assert pool.num_free_blocks == num_blocks - len(held)
    pool.reset()  # freed blocks return
    assert sorted(pool.free_blocks) == list(range(num_blocks))


# ------------------------------------------------------ prefix caching
def test_full_blocks_are_keyed_shared_counted_and_evicted_last():
    pool = BlockPool(num_blocks=6, block_size=4, enable_prefix_caching=True)
    system = [7, 7, 1, 2, 3, 4, 5, 6, 9]  # 2 full blocks and 1 token
    pool.allocate(["a"], 9)
    pool.cache_blocks("a", system)  # only the full blocks get keys
    assert pool.block_tables["a"] == [0, 1, 2]
    assert set(pool.block_hashes) == {0, 1} and len(pool.cached_blocks) == 2
    assert pool.match_prefix(system + [8]) == [0, 1]
    assert pool.match_prefix([7, 7, 1, 2, 0, 0, 0, 0]) == [0]  # a chain
    assert pool.match_prefix([0, 0, 0, 0, 3, 4, 5, 6]) == []
    pool.share("b", [0, 1])
    assert pool.ref_counts[:3] == [2, 2, 1]
    with pytest.raises(ValueError, match="key_states needs block 1 of "
                       "request 'b' to be its own and unkeyed: 2 requests"):
        pool.check_writable(["b"], 7, 9)  # into the shared block 1
    pool.check_writable(["b"], 8, 9)  # past it: its own new block
    with pytest.raises(ValueError, match="num_tokens needs a cut in a "
                       "block of request 'b' alone: block 1 is shared"):
        pool.crop("b", 6)
    with pytest.raises(ValueError, match="request_id needs a request that "
                       "holds no block"):
        pool.share("b", [2])
    pool.free("a")  # 0 and 1 still held by b; 2 returns, keyless
    assert pool.ref_counts[:3] == [1, 1, 0]
    assert list(pool.free_blocks) == [3, 4, 5, 2]
    pool.free("b")  # the tail first: 1 is evicted before 0
    assert list(pool.free_blocks) == [3, 4, 5, 2, 1, 0]
    assert pool.match_prefix(system) == [0, 1]  # free, still shareable
    pool.share("c", [0])  # taken back out of the free list
    assert list(pool.free_blocks) == [3, 4, 5, 2, 1]
    pool.allocate(["d"], 20)  # every free block: 1 is evicted
    assert pool.match_prefix(system) == [0] and pool.blocks_taken == 3 + 5
    assert "cached=1" in repr(pool)
    pool.reset()
    assert pool.cached_blocks == {} and pool.num_free_blocks == 6


def test_without_prefix_caching_nothing_is_keyed():
    pool = BlockPool(num_blocks=4, block_size=2)
    pool.allocate(["a"], 4)
    pool.cache_blocks("a", [1, 2, 3, 4])
    assert pool.block_hashes == {} and pool.match_prefix([1, 2, 3]) == []


COMMON = [0, 1, 1, 0, 1, 0, 0, 1, 1, 0]  # a system prompt, cut anywhere
STARTS = st.builds(lambda k, tail: COMMON[:k] + tail, st.integers(0, 10),
                   st.lists(st.integers(0, 1), max_size=5))
PREFIX_OPS = st.lists(st.tuples(
    st.sampled_from(["start", "grow", "crop", "free"]), st.integers(0, 3),
    STARTS, st.integers(0, 14)), max_size=30)


def write(pool, storage, held, r, tokens):
    """Request ``r`` writes ``tokens`` after its held ones, as a paged
    layer does, into ``storage`` (block -> {offset: token}); False when
    the pool is out of blocks."""
    start, stop = len(held[r]), len(held[r]) + len(tokens)
    pool.check_writable([r], start, stop)
    try:
        pool.allocate([r], stop)
    except ValueError:
        return False
    size, table = pool.block_size, pool.block_tables[r]
    for pos, token in zip(range(start, stop), tokens):
        block = table[pos // size]
        assert pool.ref_counts[block] == 1 and block not in pool.block_hashes
        storage[block][pos % size] = token
    held[r] = held[r] + tokens
    pool.cache_blocks(r, held[r])
    return True


def read(pool, storage, r, n):
    size, table = pool.block_size, pool.block_tables[r]
    return [storage[table[p // size]][p % size] for p in range(n)]


@settings(max_examples=200, deadline=None)
@given(ops=PREFIX_OPS, block_size=st.integers(1, 3),
       num_blocks=st.integers(1, 14))
def test_shared_blocks_are_counted_and_never_written(ops, block_size,
                                                     num_blocks):
    pool = BlockPool(num_blocks, block_size, enable_prefix_caching=True)
    storage = collections.defaultdict(dict)  # what each block holds
    held = {}  # each request's written tokens, by hand
    for op, r, tokens, n in ops:
        if op == "start" and r not in held:
            shared = pool.match_prefix(tokens[:-1])
            assert read_blocks_of(storage, shared, block_size) == \
                tokens[:len(shared) * block_size]
            pool.share(r, shared)
            held[r] = tokens[:len(shared) * block_size]
            if not write(pool, storage, held, r, tokens[len(held[r]):]):
                pool.free(r), held.pop(r)
        elif op == "grow" and r in held:
            write(pool, storage, held, r, tokens)
        elif op == "crop" and r in held:
            try:
                pool.crop(r, n)
            except ValueError as error:
                assert "shared" in str(error)
                continue
            held[r] = held[r][:n]
        elif op == "free":
            pool.free(r), held.pop(r, None)
        tables = [b for table in pool.block_tables.values() for b in table]
        counts = collections.Counter(tables)
        assert pool.ref_counts == [counts[b] for b in range(num_blocks)]
        assert sorted(pool.free_blocks) == [b for b in range(num_blocks)
                                            if counts[b] == 0]  # each once
        for r, tokens in held.items():  # nobody wrote over anyone's
            assert read(pool, storage, r, len(tokens)) == tokens
            shared = pool.match_prefix(tokens)
            assert read_blocks_of(storage, shared, block_size) == \
                tokens[:len(shared) * block_size]


def read_blocks_of(storage, blocks, size):
    return [storage[b][i] for b in blocks for i in range(size)]


# ------------------------------------------ the cache against the dense
@settings(deadline=None)
@given(chunks=st.lists(st.integers(1, 9), min_size=1, max_size=6),
       block_size=st.integers(1, 8), crop=st.integers(-12, 40))
def test_paged_equals_dense_through_updates_and_crop(chunks, block_size,
                                                     crop):
    need = 2 * -(-(sum(chunks) + 3) // block_size)
    paged = PagedCache(2, 3, 4, num_blocks=need, block_size=block_size)
    dense = DynamicCache()
    for i, t in enumerate(chunks + ["crop", 3]):
        if t == "crop":
            paged.crop(crop)
            dense.crop(crop)
            continue
        for layer in range(2):
            got = paged.update(*kv(t=t, seed=10 * i + layer), layer)
            want = dense.update(*kv(t=t, seed=10 * i + layer), layer)
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)
        assert paged.get_seq_length(1) == dense.get_seq_length(1)
    S = paged.get_seq_length()
    assert paged.num_free_blocks == need - 2 * -(-S // block_size)
    assert [len(t) for t in paged.layers[0].block_tables] == \
        [-(-S // block_size)] * 2


def test_requests_of_different_lengths_write_and_read_their_own_blocks():
    layer = PagedLayer(BlockPool(num_blocks=5, block_size=4), 3, 4)
    k_a, v_a = kv(B=1, t=5, seed=1)  # request "a": 5 tokens, 2 blocks
    k_b, v_b = kv(B=1, t=9, seed=2)  # request "b": 9 tokens, 3 blocks
    layer.write(["a"], 0, k_a[:, :, :3], v_a[:, :, :3])
    layer.write(["b"], 0, k_b, v_b)
    layer.write(["a"], 3, k_a[:, :, 3:], v_a[:, :, 3:])  # interleaved
    assert layer.pool.block_tables == {"a": [0, 4], "b": [1, 2, 3]}
    for name, k, v in (("a", k_a, v_a), ("b", k_b, v_b)):
        keys, values = layer.read([name], k.shape[2])
        np.testing.assert_array_equal(keys, k)
        np.testing.assert_array_equal(values, v)


def test_free_reset_and_repr():
    cache = PagedCache(3, 2, 8, num_blocks=10, block_size=4,
                       dtype=np.float32)
    for layer in range(3):
        cache.update(*kv(B=2, Hkv=2, t=6, D=8, dtype=np.float32), layer)
    assert cache.num_free_blocks == 10 - 2 * 2  # 6 tokens: 2 blocks a row
    assert "'ppp', seen=6, held=6" in repr(cache)
    assert "blocks=4/10 of 4 tokens" in repr(cache)
    cache.free(1)
    assert cache.num_free_blocks == 8
    assert cache.layers[2].block_tables == [[0, 1], []]
    with pytest.raises(ValueError, match="row 1's 6 tokens: the row was "
                       "freed"):
        cache.update(*kv(B=2, Hkv=2, t=1, D=8, dtype=np.float32), 0)
    cache.reset()
    assert cache.num_free_blocks == 10 and cache.get_seq_length() == 0
    keys, _ = cache.update(*kv(B=3, Hkv=2, t=1, D=8, dtype=np.float32), 0)
    assert keys.shape == (3, 2, 1, 8)  # a new batch after reset


def test_memory_accounting():
    cache = PagedCache(2, 2, 8, num_blocks=16, block_size=16,
                       dtype=np.float32)
    # one token: K and V, 2 layers x 2 heads x 8 numbers of 4 bytes
    assert cache.token_nbytes == 2 * 2 * 2 * 8 * 4 == 256
    assert cache.nbytes == 16 * 16 * cache.token_nbytes  # the whole pool
    assert cache.used_nbytes == 0
    for layer in range(2):
        cache.update(*kv(B=3, Hkv=2, t=21, D=8, dtype=np.float32), layer)
    report = fragmentation([21] * 3, max_length=100, block_size=16,
                           token_nbytes=cache.token_nbytes)
    assert cache.used_nbytes == report["paged"] == 3 * 32 * 256
    assert report == {"tokens": 63 * 256, "paged": 96 * 256,
                      "dense": 300 * 256, "paged_waste": 1 - 63 / 96,
                      "dense_waste": 1 - 63 / 300}
    # by tokens: a paged cache wastes less than a block a request
    counted = fragmentation([5, 16, 17, 0], max_length=64, block_size=16)
    assert (counted["tokens"], counted["paged"], counted["dense"]) == \
        (38, 64, 256)


# ------------------------------------------------- the Shakespeare model
@pytest.fixture(scope="module", params=["eager", "flex_attention"])
def model(request):
    return px.Qwen3ForCausalLM.from_pretrained(
        px.SHAKESPEARE_CHECKPOINT, attn_implementation=request.param)


def paged_for(model, num_blocks=24, block_size=16):
    return PagedCache.from_config(model.config, num_blocks=num_blocks,
                                  block_size=block_size, dtype=model.dtype)


def run(model, cache, prompts, steps, chunk=None, mask=None, draft=None):
    """Prefill (in chunks), an optional draft of tokens checked in one
    forward and rolled back by ``draft[1]``, then greedy decode steps:
    every step's logits and the tokens."""
    P = prompts.shape[1]
    chunk = chunk or P
    for a in range(0, P, chunk):
        out = model.forward(prompts[:, a:a + chunk], cache=cache,
                            attention_mask=None if mask is None
                            else mask[:, :a + chunk])
    logits, tokens = [out.logits], [out.logits[:, -1].argmax(-1)]
    if draft is not None:  # k tokens in one forward, the last few dropped
        drafted, rejected = draft
        out = model.forward(drafted, cache=cache, attention_mask=None if
                            mask is None else np.pad(mask, ((0, 0), (0, len(
                                drafted[0]))), constant_values=1))
        logits.append(out.logits)
        cache.crop(-rejected)
    for _ in range(steps):
        held = cache.get_seq_length()
        out = model.forward(tokens[-1][:, None], cache=cache,
                            attention_mask=None if mask is None else np.pad(
                                mask, ((0, 0), (0, held + 1 - P)),
                                constant_values=1))
        logits.append(out.logits)
        tokens.append(out.logits[:, -1].argmax(-1))
    return logits, np.stack(tokens, axis=1)


def assert_same(model, prompts, steps=12, **kwargs):
    dense = run(model, DynamicCache(model.config), prompts, steps, **kwargs)
    cache = paged_for(model)
    paged = run(model, cache, prompts, steps, **kwargs)
    assert len(dense[0]) == len(paged[0])
    for a, b in zip(dense[0], paged[0]):
        np.testing.assert_array_equal(a, b)  # bit for bit
    np.testing.assert_array_equal(dense[1], paged[1])
    return paged, cache


@pytest.mark.parametrize("length", [5, 21, 37])
def test_the_model_with_a_paged_cache_equals_the_dense_one(model, length):
    prompt = np.random.default_rng(length).integers(0, 2048, (1, length))
    (_, tokens), cache = assert_same(model, prompt)
    assert cache.num_free_blocks == 24 - -(-(length + 12) // 16)
    # the same greedy tokens as generate, which uses a preallocated cache
    np.testing.assert_array_equal(
        model.generate(prompt, 13)[:, length:], tokens)


def test_batch_rows_chunked_prefill_and_padding(model):
    prompts = np.random.default_rng(1).integers(0, 2048, (3, 19))
    _, cache = assert_same(model, prompts, steps=6, chunk=7)
    assert cache.num_free_blocks == 24 - 3 * 2  # 25 tokens: 2 blocks a row
    mask = np.ones((3, 19), bool)
    mask[1, :4] = mask[2, :11] = False  # left padding
    assert_same(model, prompts, steps=6, mask=mask)


@pytest.mark.parametrize("rejected", [2, 5])
def test_a_rejected_draft_is_cropped_as_the_dense_cache_crops(model,
                                                              rejected):
    prompts = np.random.default_rng(2).integers(0, 2048, (2, 12))
    drafted = np.random.default_rng(3).integers(0, 2048, (2, 6))
    # 12 + 6 = 18 tokens hold 2 blocks a row; back to 16 or 13: 1 block
    _, cache = assert_same(model, prompts, steps=0, draft=(drafted,
                                                           rejected))
    assert cache.num_free_blocks == 24 - 2
    assert_same(model, prompts, steps=6, draft=(drafted, rejected))


def test_a_model_forward_that_runs_out_writes_nothing(model):
    cache = paged_for(model, num_blocks=3)
    prompts = np.zeros((2, 17), np.int64)  # 2 rows x 2 blocks > 3
    with pytest.raises(ValueError, match=r"has 3 free, 4 needed"):
        model.forward(prompts, cache=cache)
    assert cache.num_free_blocks == 3 and cache.get_seq_length(3) == 0


# ------------------------------------------------------------ refusals
@pytest.mark.parametrize("build, error, match", [
    (lambda: BlockPool(0), ValueError, "num_blocks must be an integer >= 1, "
     "got 0"),
    (lambda: BlockPool(4, block_size="16"), ValueError,
     "block_size must be an integer >= 1, got '16'"),
    (lambda: PagedLayer("pool", 2, 4), TypeError,
     "pool must be a BlockPool, got str"),
    (lambda: PagedCache(0, 2, 4, num_blocks=4), ValueError,
     "num_hidden_layers must be an integer >= 1, got 0"),
    (lambda: PagedCache(2, 2, 4, num_blocks=4, dtype=np.int32), ValueError,
     "dtype must be a floating dtype"),
    (lambda: PagedCache.from_config(
        {"num_hidden_layers": 2, "num_key_value_heads": 1, "head_dim": 4,
         "layer_types": ["sliding_attention", "full_attention"]},
        num_blocks=4), ValueError, "config needs full-attention layers "
     "only"),
    (lambda: BlockPool(4).allocate([0], -1), ValueError,
     "num_tokens must be an integer 0 <= num_tokens, got -1"),
    (lambda: fragmentation([5, 40], max_length=32), ValueError,
     "max_length must be an integer 40 <= max_length, got 32"),
    (lambda: fragmentation([[5]], max_length=32), ValueError,
     r"lengths has shape \(1, 1\), expected \(number of requests,\)"),
])
def test_bad_arguments_are_refused(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_bad_updates_are_refused_and_write_nothing():
    cache = PagedCache(1, 3, 4, num_blocks=4, block_size=2)
    cache.update(*kv(B=2, t=3), 0)
    for k, v, match in [
            (*kv(B=2, Hkv=2, t=1), r"expected \(B, H_kv, T, d_head\) = "
             r"\(2, 3, T, 4\)"),
            (*kv(B=1, t=1), r"\(2, 3, T, 4\)"),  # another batch
            (*kv(B=2, t=1, dtype=np.float32), "key_states has dtype "
             "float32 but key_cache has dtype float64"),
            (*kv(B=2, t=4), "has 0 free, 4 needed")]:
        with pytest.raises(ValueError, match=match):
            cache.update(k, v, 0)
    assert cache.get_seq_length() == 3 and cache.num_free_blocks == 0
    with pytest.raises(ValueError, match="row must be an integer 0 <= row "
                       "<= 1, got 2"):
        cache.free(2)
    with pytest.raises(ValueError, match="layer_idx"):
        cache.update(*kv(B=2, t=1), 1)
