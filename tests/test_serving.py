"""Tests of pyxis_nb.serving: the document mask, the flat-batch cache,
and continuous batching equal, greedy, to each request generated alone
(Shakespeare, SmolLM2) and to transformers' ``generate_batch``; one
(1, N) forward a step within the token budget; every block returned;
prefix caching: the same tokens, and what it saves on 16 chats; every
refusal."""

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb.paged import PagedCache
from pyxis_nb.serving import FlatBatchCache, PrefixStats, \
    document_mask_mod, generate_batch

CKPT = px.SHAKESPEARE_CHECKPOINT
SMOL = px.loading.cache_folder() / "smollm2" / px.SMOLLM2_GGUF
needs_shakespeare = pytest.mark.skipif(
    not (CKPT / "model.safetensors").is_file(),
    reason="the shipped checkpoint is not built (make real-model)")
needs_smollm2 = pytest.mark.skipif(
    not SMOL.is_file(), reason=f"{SMOL} is not in the cache (make smollm2)")

LENGTHS = [3, 40, 11, 27, 5, 64, 18, 33, 9, 50]  # ten prompts
ARRIVALS = [0, 0, 1, 1, 2, 4, 6, 6, 9, 12]  # the step each arrives at


@pytest.fixture(scope="module")
def shakespeare():
    return px.Qwen3ForCausalLM.from_pretrained(CKPT)


@pytest.fixture(scope="module")
def smollm2():
    """SmolLM2's model and tokenizer, loaded once for the file's tests."""
    return (px.LlamaForCausalLM.from_pretrained(SMOL.parent,
                                                gguf_file=SMOL.name),
            px.load_tokenizer(SMOL.parent, gguf_file=SMOL.name))


@pytest.fixture(scope="module")
def prompts():
    """Windows of the held-out plays, of LENGTHS tokens."""
    ids = px.load_tokenizer(CKPT).encode(
        (CKPT / "heldout.txt").read_text()).ids
    return [ids[1000 * i:1000 * i + n] for i, n in enumerate(LENGTHS)]


def alone(model, prompt, max_new_tokens, eos):
    """``model.generate`` on one prompt: its new tokens, to the first eos."""
    new = model.generate(np.array(prompt), max_new_tokens,
                         eos_token_id=eos)[len(prompt):].tolist()
    ends = [i for i, t in enumerate(new) if t in eos]
    return new[:ends[0] + 1] if ends else new


class Spy:
    """Records each forward's input shape and each step's chunks and
    cache."""

    def __init__(self, monkeypatch, model):
        self.shapes, self.chunks, self.caches = [], [], []
        forward, begin = model.forward, FlatBatchCache.begin_step

        def spy_forward(input_ids, **kwargs):
            self.shapes.append(np.shape(input_ids))
            return forward(input_ids, **kwargs)

        def spy_begin(cache, chunks):
            self.chunks.append(list(chunks))
            self.caches.append(cache)
            return begin(cache, chunks)

        monkeypatch.setattr(model, "forward", spy_forward)
        monkeypatch.setattr(FlatBatchCache, "begin_step", spy_begin)


# ------------------------------------------------------- the pieces
def test_the_document_mask_keeps_each_query_to_its_request():
    # request 0 holds 2 tokens and adds 1; request 1 holds 0 and adds 2
    mask_mod = document_mask_mod([0, 1, 1], [2, 0, 1],
                                 [0, 0, 0, 1, 1], [0, 1, 2, 0, 1])
    mask = mask_mod(0, 0, np.arange(3)[:, None], np.arange(5))
    np.testing.assert_array_equal(mask, [[1, 1, 1, 0, 0],
                                         [0, 0, 0, 1, 0],
                                         [0, 0, 0, 1, 1]])


def test_the_flat_cache_writes_and_returns_each_requests_own_tokens():
    rng = np.random.default_rng(0)
    cache = FlatBatchCache(PagedCache(2, 3, 4, num_blocks=8, block_size=4))
    kv = {r: rng.standard_normal((2, 1, 3, 9, 4)) for r in "ab"}  # k, v
    for chunks, starts in ([("a", 5)], [0]), ([("b", 4), ("a", 2)], [0, 5]):
        pos, mask = cache.begin_step(chunks)
        assert cache.get_held_length() == sum(starts)
        N = sum(t for _, t in chunks)
        S = cache.get_held_length() + N
        assert pos.shape == (1, N) and mask.shape == (1, 1, N, S)
        new = [kv[r][:, :, :, s:s + t] for (r, t), s in zip(chunks, starts)]
        k, v = (np.concatenate([x[i] for x in new], axis=2) for i in (0, 1))
        for layer in range(2):
            keys, values = cache.update(k, v, layer)
        want = [kv[r][:, :, :, :s + t] for (r, t), s in zip(chunks, starts)]
        np.testing.assert_array_equal(
            keys, np.concatenate([x[0] for x in want], axis=2))
        np.testing.assert_array_equal(
            values, np.concatenate([x[1] for x in want], axis=2))
    np.testing.assert_array_equal(pos, [[0, 1, 2, 3, 5, 6]])
    assert cache.lengths == {"a": 7, "b": 4}
    cache.free("a")
    assert cache.pool.num_free_blocks == 8 - 1  # b's one block of 4
    with pytest.raises(ValueError, match=r"key_states .*T = 6"):
        cache.update(k[:, :, :5], v[:, :, :5], 0)


def test_the_flat_cache_refuses_what_the_pool_cannot_hold():
    cache = FlatBatchCache(PagedCache(1, 1, 2, num_blocks=2, block_size=4))
    with pytest.raises(ValueError, match="chunks needs 3 free blocks: the "
                       "pool has 2"):
        cache.begin_step([("a", 5), ("b", 1)])
    assert cache.pool.num_free_blocks == 2  # nothing taken
    with pytest.raises(ValueError, match="chunks needs at least one"):
        cache.begin_step([])
    with pytest.raises(ValueError, match=r"chunks\[0\] tokens must be an "
                       "integer >= 1"):
        cache.begin_step([("a", 0)])
    with pytest.raises(TypeError, match="paged must be a PagedCache"):
        FlatBatchCache(object())


def test_a_step_reads_shared_blocks_and_never_writes_them():
    rng = np.random.default_rng(1)
    cache = FlatBatchCache(PagedCache(1, 2, 3, num_blocks=6, block_size=4,
                                      enable_prefix_caching=True))
    ids = list(range(9))
    k, v = rng.standard_normal((2, 1, 2, 9, 3))
    cache.begin_step([("a", 9)])
    cache.update(k, v, 0)
    cache.cache_blocks("a", ids)  # a's two full blocks keyed
    assert cache.reuse_prefix("b", ids + [7]) == 8  # b shares them
    k1, v1 = rng.standard_normal((2, 1, 2, 3, 3))
    cache.begin_step([("b", 2), ("a", 1)])  # b's 9th and 10th, a's 10th
    keys, values = cache.update(k1, v1, 0)
    for got, old, new in ((keys, k, k1), (values, v, v1)):
        np.testing.assert_array_equal(got, np.concatenate(  # b's, then a's
            [old[:, :, :8], new[:, :, :2], old, new[:, :, 2:]], axis=2))
    assert cache.lengths == {"a": 10, "b": 10}
    free = cache.pool.num_free_blocks
    cache.lengths["b"] = 7  # as if b held 7: its next token is in block 1
    with pytest.raises(ValueError, match="key_states needs block 1 of "
                       "request 'b' to be its own and unkeyed"):
        cache.begin_step([("b", 1)])
    assert cache.pool.num_free_blocks == free  # refused before any block


# ------------------------------------------- continuous batching, greedy
@needs_shakespeare
@pytest.mark.slow
def test_continuous_batching_equals_each_request_alone(
        shakespeare, prompts, monkeypatch):
    spy = Spy(monkeypatch, shakespeare)
    budget, blocks = 24, 20  # 20 blocks of 8: not every request at once
    out = generate_batch(shakespeare, prompts, max_new_tokens=10,
                         block_size=8, num_blocks=blocks,
                         max_batch_tokens=budget, arrivals=ARRIVALS)
    assert list(out) == [f"req_{i}" for i in range(len(prompts))]
    monkeypatch.undo()  # the references run unwatched
    eos = [shakespeare.generation_config["eos_token_id"]]
    for i, prompt in enumerate(prompts):
        assert out[f"req_{i}"].prompt_ids == prompt
        assert out[f"req_{i}"].generated_tokens == alone(
            shakespeare, prompt, 10, eos), i
    # each step is one forward of (1, N), N <= the budget
    assert len(spy.shapes) == len(spy.chunks)
    for shape, chunks in zip(spy.shapes, spy.chunks):
        assert shape == (1, sum(t for _, t in chunks)) and shape[1] <= budget
    assert any(len(c) > 1 and 1 in {t for _, t in c} and max(
        t for _, t in c) > 1 for c in spy.chunks)  # decode beside prefill
    assert max(len(c) for c in spy.chunks) < len(prompts)  # some waited
    cache = spy.caches[0]  # one cache for the whole run
    assert all(c is cache for c in spy.caches)
    assert cache.pool.num_free_blocks == blocks
    assert cache.pool.block_tables == {} and cache.lengths == {}


@needs_shakespeare
@pytest.mark.slow
def test_a_request_ends_at_eos_and_frees_its_blocks_early(shakespeare,
                                                          prompts):
    eos = [199]  # "\n": most requests meet it within 12 tokens
    out = generate_batch(shakespeare, prompts[:8], max_new_tokens=12,
                         eos_token_id=eos, max_batch_tokens=48,
                         arrivals=ARRIVALS[:8])
    got = [out[f"req_{i}"].generated_tokens for i in range(8)]
    assert got == [alone(shakespeare, p, 12, eos) for p in prompts[:8]]
    assert sum(len(g) < 12 for g in got) >= 4  # ended at eos


@needs_smollm2
@pytest.mark.slow
def test_continuous_batching_equals_each_request_alone_on_smollm2(smollm2):
    model, tokenizer = smollm2
    texts = ["The capital of France is", "def square(x):\n    return",
             "Once upon a time, in a small village by the sea, there",
             "1, 2, 3, 4,", "The three primary colours are red,",
             "Water boils at a temperature of", "Hello! My name is",
             "A list of the planets of the solar system: Mercury, Venus,"]
    prompts = [tokenizer.encode(t).ids for t in texts]
    assert len({len(p) for p in prompts}) >= 5  # different lengths
    out = generate_batch(model, prompts, max_new_tokens=4, block_size=4,
                         max_batch_tokens=20, arrivals=[0, 0, 1, 1, 2, 3,
                                                        5, 5])
    eos = np.ravel(model.generation_config["eos_token_id"]).tolist()
    for i, prompt in enumerate(prompts):
        assert out[f"req_{i}"].generated_tokens == alone(
            model, prompt, 4, eos), texts[i]


# ---------------------------------------------------------- refusals
@pytest.mark.parametrize("kwargs, message", [
    (dict(do_sample=True, temperature=0), "temperature must be"),
    (dict(do_sample=True, top_k=0), "top_k must be an integer >= 1"),
    (dict(do_sample=True, seed=-1), "seed must be an integer 0 <= seed"),
    (dict(max_new_tokens=0), "max_new_tokens must be an integer >= 1"),
    (dict(block_size=0), "block_size must be an integer >= 1"),
    (dict(max_batch_tokens=0), "max_batch_tokens must be an integer >= 1"),
    (dict(num_blocks=3), r"num_blocks must be an integer 4 <= num_blocks"),
    (dict(arrivals=[0]), r"arrivals .*one step per request \(2,\)"),
    (dict(arrivals=[0, -1]), "arrivals must lie in 0 .."),
    (dict(eos_token_id=64), r"eos_token_id must be an integer .* <= 63"),
    (dict(inputs=[]), "inputs must be a non-empty list of prompts"),
    (dict(inputs=[[1, 2], []]), r"inputs\[1\] must be a non-empty"),
    (dict(inputs=[[1, 64]]), r"inputs\[0\] must lie in 0 .. 63"),
])
def test_bad_arguments_say_what_they_want(kwargs, message):
    model = px.TinyDecoder()  # vocabulary of 64
    args = dict(inputs=[[1, 2, 3], [4] * 9], max_new_tokens=4,
                block_size=4) | kwargs  # the longest: 13 tokens, 4 blocks
    with pytest.raises(ValueError, match=message):
        generate_batch(model, args.pop("inputs"), **args)


def test_a_tiny_model_batches_as_it_generates_alone():
    model = px.TinyDecoder(seed=3)
    rng = np.random.default_rng(1)
    prompts = [rng.integers(0, 64, n).tolist() for n in (1, 7, 3, 12, 5)]
    out = generate_batch(model, prompts, max_new_tokens=5, block_size=2,
                         num_blocks=12, max_batch_tokens=4,
                         eos_token_id=[], arrivals=[3, 0, 0, 1, 9])
    for i, prompt in enumerate(prompts):
        assert out[f"req_{i}"].generated_tokens == alone(model, prompt, 5,
                                                         [])


# -------------------------------------------------------- prefix caching
# 40 blocks: req_1 starts when req_0 has 4 blocks in, later ones share 5
# (the 21-token prompt too: its last token is computed for its logits);
# 12: req_1 waits for blocks until req_0 has 5, and blocks are evicted
@pytest.mark.parametrize("num_blocks, reused, new", [(40, 4 + 5 * 4, 23),
                                                     (12, 5 * 5, 22)])
def test_prefix_caching_gives_the_same_tokens_and_computes_less(
        num_blocks, reused, new, monkeypatch):
    model = px.TinyDecoder(seed=3)
    rng = np.random.default_rng(0)
    system = rng.integers(0, 64, 21).tolist()  # 5 full blocks of 4 and 1
    prompts = [system + rng.integers(0, 64, n).tolist()
               for n in (1, 7, 3, 12, 5, 0)]
    kwargs = dict(max_new_tokens=5, block_size=4, num_blocks=num_blocks,
                  max_batch_tokens=8, eos_token_id=[],
                  arrivals=[0, 0, 2, 3, 9, 9])
    plain = generate_batch(model, prompts, **kwargs)
    spy = Spy(monkeypatch, model)
    shared = generate_batch(model, prompts, enable_prefix_caching=True,
                            **kwargs)
    for i, prompt in enumerate(prompts):
        want = alone(model, prompt, 5, [])
        assert plain[f"req_{i}"].generated_tokens == want
        assert shared[f"req_{i}"].generated_tokens == want
    assert plain.stats == PrefixStats(154, 154, 0, 47)
    assert shared.stats == PrefixStats(154, 154 - 4 * reused, reused, new)
    ran = sum(t for step in spy.chunks for _, t in step)  # forwards' T
    decoded = sum(len(o.generated_tokens) - 1 for o in shared.values())
    assert ran == shared.stats.prefill_tokens + decoded  # only the rest
    cache = spy.caches[0]
    assert cache.pool.num_free_blocks == num_blocks
    assert cache.pool.block_tables == {} and cache.lengths == {}
    assert sum(cache.pool.ref_counts) == 0


SYSTEM = ("You are a patient tutor for a reading group on Shakespeare. "
          "Answer in one or two plain sentences, quote the play when it "
          "helps, name the act and scene, and say so when you are not sure.")
QUESTIONS = [
    "Who is Hamlet?", "Where is Elsinore?", "Who kills Polonius?",
    "What is a soliloquy?", "Who is Ophelia's brother?",
    "Why does Macbeth kill Duncan?", "Who are the three witches?",
    "What is Birnam Wood?", "Who is Lady Macbeth?", "Who is Prospero?",
    "What is the tempest?", "Who is Caliban?", "Who is Puck?",
    "Who loves Hermia?", "What is a sonnet?", "Who is Falstaff?"]


@needs_shakespeare
@pytest.mark.slow
def test_prefix_caching_on_a_long_shared_opening(shakespeare, prompts):
    opening = prompts[5][:45]  # 5 full blocks of 8 and 5 tokens
    requests = [opening + p[:n] for p, n in zip(prompts, LENGTHS)]
    kwargs = dict(max_new_tokens=6, block_size=8, num_blocks=24,
                  max_batch_tokens=32, arrivals=ARRIVALS)
    plain = generate_batch(shakespeare, requests, **kwargs)
    shared = generate_batch(shakespeare, requests, **kwargs,
                            enable_prefix_caching=True)
    for request_id, output in plain.items():
        assert shared[request_id].generated_tokens == \
            output.generated_tokens, request_id
    assert shared.stats.reused_blocks >= 8 * 5  # all but the first two
    assert shared.stats.prefill_tokens <= plain.stats.prefill_tokens - 320
    assert shared.stats.new_blocks < plain.stats.new_blocks


@needs_smollm2
@pytest.mark.slow
def test_sixteen_chats_with_one_system_prompt_on_smollm2(smollm2):
    model, tokenizer = smollm2
    template = px.gguf_file.gguf_metadata(SMOL)["tokenizer.chat_template"]
    prompts = [tokenizer.encode(px.loading.apply_chat_template(
        [{"role": "system", "content": SYSTEM},
         {"role": "user", "content": q}], chat_template=template,
        add_generation_prompt=True)).ids for q in QUESTIONS]
    common = min(next(i for i, (a, b) in enumerate(zip(prompts[0], p))
                      if a != b) for p in prompts[1:])
    assert common == 50  # the template's opening and the system prompt
    # the first chat warms the cache; the 15 others arrive a step later
    kwargs = dict(max_new_tokens=2, max_batch_tokens=256,
                  arrivals=[0] + [1] * 15)
    plain = generate_batch(model, prompts, **kwargs)
    shared = generate_batch(model, prompts, enable_prefix_caching=True,
                            **kwargs)
    for request_id, output in plain.items():
        assert shared[request_id].generated_tokens == \
            output.generated_tokens, request_id
    # 15 chats x 3 blocks of 16 (48 of the 50 common tokens) reused:
    # prefill computes 267 of 987 prompt tokens (27 %), 21 blocks of 66
    assert plain.stats == PrefixStats(987, 987, 0, 66)
    assert shared.stats == PrefixStats(987, 987 - 15 * 48, 15 * 3, 21)


# ---------------------------------------- transformers' generate_batch
@needs_shakespeare
@pytest.mark.slow
def test_generate_batch_matches_transformers_reference(shakespeare,
                                                       prompts):
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: HF reference skipped")
    transformers = pytest.importorskip(
        "transformers",
        reason="transformers is not installed: HF reference skipped")
    theirs = transformers.Qwen3ForCausalLM.from_pretrained(
        CKPT, dtype=torch.float32, attn_implementation="sdpa").eval()
    config = transformers.ContinuousBatchingConfig(
        page_size=16, num_blocks=64, max_batch_tokens=32,
        allow_block_sharing=False)
    generation = transformers.GenerationConfig(
        max_new_tokens=10, do_sample=False, eos_token_id=0, pad_token_id=0)
    want = theirs.generate_batch(prompts, generation_config=generation,
                                 continuous_batching_config=config)
    got = generate_batch(shakespeare, prompts, max_new_tokens=10,
                         max_batch_tokens=32, arrivals=ARRIVALS)
    assert list(want) == list(got)
    for request_id, output in want.items():
        assert output.generated_tokens == got[request_id].generated_tokens
        assert output.prompt_ids == got[request_id].prompt_ids


# ---------------------------------------------------------- sampling
@needs_shakespeare
@pytest.mark.slow
@pytest.mark.parametrize("kwargs", [
    dict(max_batch_tokens=20, arrivals=ARRIVALS),
    dict(max_batch_tokens=7, block_size=4, enable_prefix_caching=True),
], ids=["arriving", "small steps, shared"])
def test_sampled_request_i_is_generate_with_seed_plus_i(shakespeare, prompts,
                                                        kwargs):
    """Each request draws from its own generator, seeded seed + i: its
    tokens are generate's with that seed, whatever the schedule."""
    sampling = dict(do_sample=True, temperature=0.9, top_k=40, seed=7)
    out = generate_batch(shakespeare, prompts, max_new_tokens=6,
                         eos_token_id=0, **sampling, **kwargs)
    for i, prompt in enumerate(prompts):
        seeded = dict(sampling, seed=7 + i)
        want = shakespeare.generate(np.array(prompt), 6, eos_token_id=0,
                                    **seeded)[len(prompt):].tolist()
        assert out[f"req_{i}"].generated_tokens == want, i
    greedy = generate_batch(shakespeare, prompts, max_new_tokens=6,
                            eos_token_id=0, **kwargs)
    assert any(out[r].generated_tokens != greedy[r].generated_tokens
               for r in out)  # it did sample


@needs_shakespeare
def test_sampling_with_top_k_1_is_greedy(shakespeare, prompts):
    kwargs = dict(max_new_tokens=4, max_batch_tokens=32, eos_token_id=0)
    sampled = generate_batch(shakespeare, prompts[:3], do_sample=True,
                             top_k=1, **kwargs)
    greedy = generate_batch(shakespeare, prompts[:3], **kwargs)
    assert {r: o.generated_tokens for r, o in sampled.items()} == \
        {r: o.generated_tokens for r, o in greedy.items()}
