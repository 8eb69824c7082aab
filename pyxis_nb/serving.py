"""Continuous batching: many requests in one forward, on a paged cache.

A server does not wait for a batch to finish before starting the next
(Yu et al. 2022, Orca): each step it takes a token budget,
``max_batch_tokens``, and fills it with the next token of every running
request (decode) and a chunk of each new prompt (prefill). The step's
tokens of all requests are laid end to end in one row, (1, T), and run
through the model in ONE forward; each token carries its position in its
own request (``position_ids``), and a document mask keeps it to its own
request's keys (FlexAttention's document mask, a ``mask_mod`` of request
ids and positions). :class:`FlatBatchCache` writes each request's keys
and values into its own blocks of a :class:`~.paged.PagedCache` and hands
the attention every held key of the step's requests, end to end. A
request that ends (``eos_token_id`` or ``max_new_tokens``) returns its
blocks, and a waiting one takes them. :func:`generate_batch` runs it all,
shaped like ``transformers``' ``generate_batch``, greedy or sampled. With
``enable_prefix_caching`` a request whose prompt starts like an earlier
one's (a shared system prompt) shares its full blocks and prefills only
the rest; :class:`PrefixStats` counts what that saved.

Shape legend:
    T       tokens of one step, all requests together (<= max_batch_tokens)
    S       keys of one step: every held token of the step's requests
    H_kv    key/value heads
    d_head  head size
    V       vocabulary size
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._checks import (check_int, check_int_array, check_needs,
                      check_positive_int, check_shape, check_token_ids)
from .kv_cache import Cache
from .masks import causal_mask_mod
from .model import check_sampling, choose_next
from .paged import PagedCache, blocks_for

__all__ = ["document_mask_mod", "FlatBatchCache", "GenerationOutput",
           "PrefixStats", "Scheduler", "generate_batch"]


def document_mask_mod(query_requests, query_positions, key_requests,
                      key_positions):
    """FlexAttention's document ``mask_mod`` for a flat batch: query ``i``
    sees key ``j`` of its own request at a position up to its own.

    Parameters
    ----------
    query_requests, query_positions : (T,) ints, each query's request, position
    key_requests, key_positions : (S,) ints, each key's request, position

    See Also
    --------
    torch.nn.attention.flex_attention : its documents' ``mask_mod``.
    """
    q_req, q_pos, k_req, k_pos = (np.asarray(a) for a in (
        query_requests, query_positions, key_requests, key_positions))

    def mask_mod(b, h, q_idx, kv_idx):
        same_request = q_req[q_idx] == k_req[kv_idx]
        return same_request & causal_mask_mod(b, h, q_pos[q_idx],
                                              k_pos[kv_idx])

    return mask_mod


class FlatBatchCache(Cache):
    """The step's tokens of several requests in one row, over ``paged``'s
    blocks (a :class:`~.paged.PagedCache`; its layers are this cache's).

    :meth:`begin_step` names the step's requests and their new tokens;
    ``update`` then takes them laid end to end, (1, H_kv, T, d_head),
    writes each request's into its own blocks and returns every held key
    and value of those requests, end to end: (1, H_kv, S, d_head). The
    held lengths it reports are those requests' tokens before the step,
    so the model's 4-D mask is (1, 1, T, S).

    See Also
    --------
    transformers.generation.continuous_batching.PagedAttentionCache
    """

    def __init__(self, paged: PagedCache):
        if not isinstance(paged, PagedCache):
            raise TypeError(f"paged must be a PagedCache, got "
                            f"{type(paged).__name__}")
        super().__init__(paged.layers)
        self.pool = paged.pool
        self.lengths = {}  # request id -> tokens written in every layer
        self.chunks = []  # this step's (request id, new tokens)
        self.slots = None  # where they lie: step_slots

    def begin_step(self, chunks):
        """Take blocks for this step's ``chunks``, ``[(request id, new
        tokens), ...]``; return the ``position_ids`` (1, T) and the
        document mask (1, 1, T, S) of its forward."""
        chunks = [(r, check_positive_int(f"chunks[{i}] tokens", t))
                  for i, (r, t) in enumerate(chunks)]
        check_needs(len(chunks) > 0, "chunks", "at least one request",
                    "a step runs the tokens of some request")
        needed = sum(self.pool.blocks_needed(r, self.lengths.get(r, 0) + t)
                     for r, t in chunks)
        check_needs(needed <= self.pool.num_free_blocks, "chunks",
                    f"{needed} free blocks", f"the pool has "
                    f"{self.pool.num_free_blocks}")
        for r, t in chunks:  # a shared block is never written
            held = self.lengths.get(r, 0)
            self.pool.check_writable([r], held, held + t)
        for r, t in chunks:
            self.pool.allocate([r], self.lengths.get(r, 0) + t)
        self.chunks = chunks
        self.slots = self.step_slots()
        return self.step_inputs()

    def step_slots(self):
        """Where the step's tokens lie in the blocks, the same in every
        layer: the new tokens' block ids and offsets, (T,) each, and every
        held and new token's, (S,) each, in the order of ``chunks``."""
        size, new, every = self.pool.block_size, [], []
        for r, t in self.chunks:
            held = self.lengths.get(r, 0)
            table = np.asarray(self.pool.block_tables[r], dtype=np.intp)
            pos = np.arange(held + t)
            every.append((table[pos // size], pos % size))
            new.append((every[-1][0][held:], every[-1][1][held:]))
        return (*(np.concatenate(x) for x in zip(*new)),
                *(np.concatenate(x) for x in zip(*every)))

    def step_inputs(self):
        """``position_ids`` (1, T) and the mask (1, 1, T, S) of the step:
        :func:`document_mask_mod` over every query and key."""
        held = np.array([self.lengths.get(r, 0) for r, _ in self.chunks])
        new = np.array([t for _, t in self.chunks])
        rows = np.arange(len(new))  # each request's place in the step
        q_pos = np.concatenate([np.arange(h, h + t)
                                for h, t in zip(held, new)])
        k_pos = np.concatenate([np.arange(h + t) for h, t in zip(held, new)])
        mask_mod = document_mask_mod(np.repeat(rows, new), q_pos,
                                     np.repeat(rows, held + new), k_pos)
        mask = mask_mod(0, 0, np.arange(len(q_pos))[:, None],
                        np.arange(len(k_pos)))  # (T, S)
        return q_pos[None], mask[None, None]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Tokens the step's requests held before it, all together (the
        same in every layer ``layer_idx``)."""
        return sum(self.lengths.get(r, 0) for r, _ in self.chunks)

    def get_held_length(self, layer_idx: int = 0) -> int:
        """As :meth:`get_seq_length`: every held token is attended, in
        every layer ``layer_idx``."""
        return self.get_seq_length(layer_idx)

    def update(self, key_states, value_states, layer_idx: int):
        """Write each request's new tokens into its blocks; return every
        held key and value of the step's requests, end to end.

        ``key_states``, ``value_states`` (1, H_kv, T, d_head) of layer
        ``layer_idx`` -> keys, values (1, H_kv, S, d_head). The last
        layer's update moves the lengths on."""
        layer = self.entry(layer_idx)
        T = sum(t for _, t in self.chunks)
        check_shape("key_states", key_states, key_states.shape[0] == 1
                    and key_states.shape[2] == T, f"(1, H_kv, T = {T}, "
                    "d_head): the tokens of begin_step's chunks")
        new_blocks, new_offsets, blocks, offsets = self.slots
        heads = np.arange(layer.key_cache.shape[1])[:, None]  # (H_kv, 1)
        out = []  # one gather a layer, not one read a request
        for storage, states in ((layer.key_cache, key_states),
                                (layer.value_cache, value_states)):
            # the new (T, H_kv, d_head) into their slots, then all S
            storage[new_blocks, :, new_offsets] = states[0].transpose(1, 0,
                                                                      2)
            out.append(storage[blocks, heads, offsets][None])
        if layer_idx == len(self.layers) - 1:
            for r, t in self.chunks:
                self.lengths[r] = self.lengths.get(r, 0) + t
        return out[0], out[1]  # (1, H_kv, S, d_head) each

    def reuse_prefix(self, request_id, token_ids) -> int:
        """Share with request ``request_id``, new, the keyed blocks that
        hold the start of ``token_ids`` but its last token (whose logits
        the step needs); returns the tokens they hold."""
        blocks = self.pool.match_prefix(token_ids[:-1])
        self.pool.share(request_id, blocks)
        self.lengths[request_id] = len(blocks) * self.pool.block_size
        return self.lengths[request_id]

    def cache_blocks(self, request_id, token_ids) -> None:
        """Key the full blocks of request ``request_id``'s written
        ``token_ids`` for later requests (with prefix caching)."""
        self.pool.cache_blocks(request_id, token_ids)

    def free(self, request_id) -> None:
        """Return request ``request_id``'s blocks: it ended."""
        self.pool.free(request_id)
        self.lengths.pop(request_id, None)

    def reset(self) -> None:
        """Forget every request; return every block."""
        self.pool.reset()
        self.lengths, self.chunks, self.slots = {}, [], None

    def __repr__(self) -> str:
        used = self.pool.num_blocks - self.pool.num_free_blocks
        return (f"FlatBatchCache(layers={len(self.layers)}, requests="
                f"{self.lengths}, blocks={used}/{self.pool.num_blocks} of "
                f"{self.pool.block_size} tokens)")


@dataclass
class GenerationOutput:
    """One request's result, as transformers' ``GenerationOutput``:
    ``request_id`` ("req_0", ...), ``prompt_ids``, ``generated_tokens``."""

    request_id: str
    prompt_ids: list
    generated_tokens: list = field(default_factory=list)


@dataclass
class PrefixStats:
    """What prefix caching saved in a run: ``prompt_tokens`` (every
    prompt's), ``prefill_tokens`` (those the forwards computed),
    ``reused_blocks`` (blocks shared instead of computed), ``new_blocks``
    (blocks taken from the free list)."""

    prompt_tokens: int = 0
    prefill_tokens: int = 0
    reused_blocks: int = 0
    new_blocks: int = 0


class BatchOutputs(dict):
    """``{request id: GenerationOutput}`` with the run's ``stats``, a
    :class:`PrefixStats`."""

    stats: PrefixStats


@dataclass
class Request:
    """A request in the scheduler: its tokens, what its cache holds."""

    request_id: str
    prompt_ids: list
    arrival: int  # the first step it may join
    generated_tokens: list = field(default_factory=list)
    cached: int = 0  # tokens written into its blocks, or shared
    started: bool = False  # its prefix looked up, its table begun
    rng: object = None  # its own generator when sampling, else None

    @property
    def tokens(self) -> list:
        return self.prompt_ids + self.generated_tokens

    @property
    def wants(self) -> int:
        """Tokens it would run next: the rest of its prompt, or 1."""
        return len(self.tokens) - self.cached


class Scheduler:
    """Which tokens of which requests each step runs.

    ``cache``: a :class:`FlatBatchCache`; ``max_batch_tokens``: tokens a
    step, all requests together; ``max_new_tokens``: tokens a request
    generates at most; ``eos_token_id``: ids that end a request (a list);
    ``sampling``: :func:`~.model.check_sampling`'s warpers, None: greedy.

    A request joins, first come first served, once it has arrived and the
    pool can hold its longest length (prompt + ``max_new_tokens``) beside
    what the running requests may reach: a running request never waits
    for blocks (vLLM preempts one instead). A step gives each running
    request, oldest first, what it wants (a decode token, or the rest of
    its prompt) while the budget lasts: decodes and prefill chunks mixed.
    A request's first step looks up its prompt's cached prefix (when the
    cache's pool keys blocks) and starts after it.
    """

    def __init__(self, cache: FlatBatchCache, max_batch_tokens: int,
                 max_new_tokens: int, eos_token_id=(), sampling=None):
        self.cache = cache
        self.sampling = sampling  # generate's warpers (None: greedy)
        self.max_batch_tokens = max_batch_tokens
        self.max_new_tokens = max_new_tokens
        self.eos = set(eos_token_id)
        self.waiting, self.running, self.finished = [], [], []
        self.prompt_tokens = self.reused_blocks = 0  # for stats

    def reserve(self, request: Request) -> int:
        """Blocks ``request`` may reach: prompt and new tokens."""
        return blocks_for(len(request.prompt_ids) + self.max_new_tokens,
                          self.cache.pool.block_size)

    def admit(self, step: int) -> None:
        """Move the requests that have arrived by step ``step`` and fit
        the pool from waiting to running, in order."""
        reserved = sum(self.reserve(r) for r in self.running)
        while self.waiting and self.waiting[0].arrival <= step and \
                reserved + self.reserve(self.waiting[0]) <= \
                self.cache.pool.num_blocks:
            reserved += self.reserve(self.waiting[0])
            self.running.append(self.waiting.pop(0))

    def schedule(self) -> list:
        """This step's ``[(request, tokens), ...]`` within the budget."""
        chunks, left = [], self.max_batch_tokens
        for request in self.running:
            if left and not request.started:
                self.start(request)
            n = min(request.wants, left)
            if n:
                chunks.append((request, n))
                left -= n
        return chunks

    def start(self, request: Request) -> None:
        """Begin ``request``'s table with its prompt's cached prefix."""
        request.cached = self.cache.reuse_prefix(request.request_id,
                                                 request.prompt_ids)
        request.started = True
        self.prompt_tokens += len(request.prompt_ids)
        self.reused_blocks += request.cached // self.cache.pool.block_size

    @property
    def stats(self) -> PrefixStats:
        """The prompts started so far: their tokens, those computed or to
        compute, the blocks shared; the blocks taken."""
        reused = self.reused_blocks * self.cache.pool.block_size
        return PrefixStats(self.prompt_tokens, self.prompt_tokens - reused,
                           self.reused_blocks, self.cache.pool.blocks_taken)

    def finish_step(self, chunks, next_ids) -> None:
        """Append each request of ``chunks`` its next token (``next_ids``,
        one a chunk) once its prompt is in; key its full blocks; free the
        requests that ended."""
        for (request, n), token in zip(chunks, next_ids):
            request.cached += n
            self.cache.cache_blocks(request.request_id,
                                    request.tokens[:request.cached])
            if request.wants:  # a prompt chunk that is not the last
                continue
            request.generated_tokens.append(int(token))
            if (int(token) in self.eos or len(request.generated_tokens)
                    == self.max_new_tokens):
                self.running.remove(request)
                self.cache.free(request.request_id)
                self.finished.append(request)


def run_step(model, scheduler: Scheduler) -> list:
    """One step: schedule, one forward of (1, T), each request's next token
    (greedy, or drawn); returns the step's ``[(request, tokens), ...]``
    (empty: none ran)."""
    chunks = scheduler.schedule()
    if not chunks:
        return chunks
    position_ids, mask = scheduler.cache.begin_step(
        [(r.request_id, n) for r, n in chunks])
    ids = np.concatenate([r.tokens[r.cached:r.cached + n]
                          for r, n in chunks])[None]  # (1, T)
    last = np.cumsum([n for _, n in chunks]) - 1  # each chunk's last token
    logits = model.forward(ids, attention_mask=mask,
                           position_ids=position_ids, cache=scheduler.cache,
                           logits_to_keep=last).logits[0]  # (chunks, V)
    if scheduler.sampling is None:
        next_ids = np.argmax(logits, axis=-1)
    else:  # each request draws from its own generator, as generate would,
        # once its prompt is in (a prompt's earlier chunks draw nothing)
        next_ids = [choose_next(row[None], r.rng, scheduler.sampling)[1][0]
                    if r.cached + n == len(r.tokens) else -1
                    for row, (r, n) in zip(logits, chunks)]
    scheduler.finish_step(chunks, next_ids)
    return chunks


def generate_batch(model, inputs, *, max_new_tokens: int,
                   do_sample: bool = False, block_size: int = 16,
                   num_blocks: int | None = None,
                   max_batch_tokens: int = 256, eos_token_id=None,
                   arrivals=None, enable_prefix_caching: bool = False,
                   temperature: float = 1.0, top_k=None, top_p=None,
                   seed=None) -> BatchOutputs:
    """Greedy continuous batching: every request of ``inputs``, as it
    arrives, in steps of at most ``max_batch_tokens`` tokens.

    Sampled (``do_sample=True``), request ``i`` draws from its own
    generator, seeded ``seed + i``: its tokens are those of
    ``model.generate(prompt, do_sample=True, seed=seed + i)``, whatever
    the schedule.

    Parameters
    ----------
    model : a ``Qwen3ForCausalLM`` or ``LlamaForCausalLM``
    inputs : list of prompts, each a list of token ids
    max_new_tokens : int, tokens a request generates at most
    do_sample : bool, default False: greedy; True: sample
    block_size : int, tokens a block of the paged cache (16)
    num_blocks : int, blocks in the pool; default: every request at once
    max_batch_tokens : int, tokens a step runs, all requests together
    eos_token_id : int or list of int; default: the model's
    arrivals : list of int, the step each request arrives at (default 0)
    enable_prefix_caching : bool, share the full blocks of equal prefixes
    temperature, top_k, top_p, seed : generate's sampling arguments

    Returns ``{"req_0": GenerationOutput, ...}`` in the order of
    ``inputs``, and its ``.stats`` (:class:`PrefixStats`).

    See Also
    --------
    transformers.GenerationMixin.generate_batch
    """
    scheduler, requests = _new_scheduler(
        model, inputs, max_new_tokens, block_size, num_blocks,
        max_batch_tokens, eos_token_id, arrivals, enable_prefix_caching,
        check_sampling(do_sample, temperature, top_k, top_p, seed))
    step = 0
    while scheduler.waiting or scheduler.running:
        if not scheduler.running:  # idle: jump to the next arrival
            step = max(step, scheduler.waiting[0].arrival)
        scheduler.admit(step)
        run_step(model, scheduler)
        step += 1
    out = BatchOutputs({r.request_id: GenerationOutput(
        r.request_id, r.prompt_ids, r.generated_tokens) for r in requests})
    out.stats = scheduler.stats
    return out


def _new_scheduler(model, inputs, max_new_tokens, block_size, num_blocks,
                   max_batch_tokens, eos_token_id, arrivals,
                   enable_prefix_caching, sampling):
    """generate_batch's door: the arguments checked; a scheduler over a
    new cache, the requests waiting in order of arrival; the requests in
    order of ``inputs``."""
    do_sample, seed = sampling.pop("do_sample"), sampling.pop("seed")
    prompts = _check_prompts(inputs, model.vocab_size)
    n = check_positive_int("max_new_tokens", max_new_tokens)
    size = check_positive_int("block_size", block_size)
    budget = check_positive_int("max_batch_tokens", max_batch_tokens)
    arrivals = [0] * len(prompts) if arrivals is None else list(
        check_int_array("arrivals", arrivals, ndim=1, low=0, want="(R,)"))
    check_shape("arrivals", np.asarray(arrivals), len(arrivals) ==
                len(prompts), f"one step per request ({len(prompts)},)")
    longest = max(blocks_for(len(p) + n, size) for p in prompts)
    everyone = sum(blocks_for(len(p) + n, size) for p in prompts)
    blocks = everyone if num_blocks is None else check_int(
        "num_blocks", num_blocks, low=longest)
    paged = PagedCache.from_config(
        model.config, num_blocks=blocks, block_size=size, dtype=model.dtype,
        enable_prefix_caching=enable_prefix_caching)
    scheduler = Scheduler(FlatBatchCache(paged), budget, n,
                          _eos_ids(model, eos_token_id),
                          sampling if do_sample else None)
    requests = [Request(f"req_{i}", p, int(a), rng=np.random.default_rng(
        None if seed is None else seed + i) if do_sample else None)
                for i, (p, a) in enumerate(zip(prompts, arrivals))]
    scheduler.waiting = sorted(requests, key=lambda r: r.arrival)
    return scheduler, requests


def _check_prompts(inputs, vocab_size: int) -> list:
    """``inputs`` as a non-empty list of non-empty lists of token ids."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError(f"inputs must be a non-empty list of prompts "
                         f"(lists of token ids), got {inputs!r:.60}")
    return [check_token_ids(f"inputs[{i}]", p, vocab_size, ndim=1,
                            want="(P,) with P >= 1").tolist()
            for i, p in enumerate(inputs)]


def _eos_ids(model, eos_token_id) -> list:
    """The ids that end a request: ``eos_token_id`` or the model's."""
    if eos_token_id is None:
        eos_token_id = model.generation_config.get("eos_token_id")
    ids = [] if eos_token_id is None else np.ravel(eos_token_id).tolist()
    for token in ids:
        check_int("eos_token_id", token, low=0, high=model.vocab_size - 1)
    return ids
