"""Speculative decoding: drafters, one-forward verification, the cache
rolled back, the accept/reject rule's distribution, and the references
(transformers' prompt lookup, early exit and ``_speculative_sampling``)."""

import numpy as np
import pytest

import pyxis_nb as px
from pyxis_nb import speculative as sp
from pyxis_nb.paged import PagedCache

from checkpoints import tiny_model

SMOL = px.loading.cache_folder() / "smollm2" / px.SMOLLM2_GGUF
DRAFTERS = [dict(prompt_lookup_num_tokens=5),
            dict(prompt_lookup_num_tokens=3, max_matching_ngram_size=3),
            dict(assistant_early_exit=1, num_assistant_tokens=4)]


def _torch():
    torch = pytest.importorskip("torch", reason="the reference needs torch")
    transformers = pytest.importorskip(
        "transformers", reason="the reference needs transformers")
    return torch, transformers


# ------------------------------------------------------------ prompt lookup
@pytest.mark.parametrize("ids, k, n, want", [
    # the last 2 tokens (3, 4) were seen at 2..3: what followed them
    ([1, 2, 3, 4, 5, 6, 9, 3, 4], 3, 2, [5, 6, 9]),
    # a bigram match beats a nearer unigram one
    ([3, 4, 7, 4, 8, 3, 4], 2, 2, [7, 4]),
    # no bigram copy: the first unigram copy, left to right
    ([5, 1, 4, 2, 4, 3, 4], 2, 2, [2, 4]),
    # the draft stops at the sequence's end
    ([1, 2, 1], 4, 2, [2, 1]),
    ([1, 2, 3], 4, 2, []),  # nothing recurs
])
def test_prompt_lookup_finds_the_first_earlier_copy(ids, k, n, want):
    got = sp.prompt_lookup_candidates(np.array(ids), k, n)
    assert got.tolist() == want


def test_prompt_lookup_stops_before_eos():
    ids = np.array([1, 2, 0, 5, 1, 2])
    assert sp.prompt_lookup_candidates(ids, 4, 2, [0]).tolist() == []
    assert sp.prompt_lookup_candidates(ids, 4, 2, [5]).tolist() == [0]


def test_prompt_lookup_equals_transformers_generator():
    torch, _ = _torch()
    from transformers.generation.candidate_generator import (
        PromptLookupCandidateGenerator)
    rng = np.random.default_rng(0)
    for _ in range(150):
        ids = rng.integers(0, 4, rng.integers(2, 20))
        k, n = int(rng.integers(1, 6)), int(rng.integers(1, 4))
        theirs = PromptLookupCandidateGenerator(
            eos_token_id=torch.tensor([3]), num_output_tokens=k,
            max_matching_ngram_size=n, max_length=100)
        candidates, _ = theirs.get_candidates(torch.tensor(ids[None]))
        ours = sp.prompt_lookup_candidates(ids, k, n, [3])
        assert ours.tolist() == candidates[0, len(ids):].tolist(), (ids, k, n)


# ------------------------------------------------------- the accept rules
def test_accept_prefix_keeps_the_agreeing_prefix_and_one_more():
    assert sp.accept_prefix([4, 5, 6], [4, 5, 7, 9]).tolist() == [4, 5, 7]
    assert sp.accept_prefix([4, 5, 6], [4, 5, 6, 9]).tolist() == [4, 5, 6, 9]
    assert sp.accept_prefix([4, 5, 6], [1, 5, 6, 9]).tolist() == [1]
    assert sp.accept_prefix([], [8]).tolist() == [8]


def chi_square(counts, probs) -> float:
    expected = probs * counts.sum()
    keep = expected > 0
    assert counts[~keep].sum() == 0, "a token of probability 0 was drawn"
    return float(((counts[keep] - expected[keep]) ** 2
                  / expected[keep]).sum())


# chi-square 99.9 % points for 1..5 degrees of freedom
CHI2_999 = {1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52}
P = np.array([[.10, .40, .05, .30, .15],
              [.25, .05, .50, .00, .20],
              [.30, .30, .10, .10, .20]])  # the model's (k + 1, V)
Q = np.array([[.40, .10, .20, .20, .10],
              [.05, .05, .10, .60, .20]])  # the draft's (k, V)


def draw_sampled(rng, q):
    draft = np.array([sp.sample(row, rng.random()) for row in q])
    new, _ = sp.speculative_sampling(draft, q, P, rng.random(len(q)),
                                     rng.random())
    return new


def draw_lookup(rng, draft):
    """A deterministic draft, checked as transformers checks one."""
    return sp.accept_prefix(draft, [sp.sample(p, rng.random()) for p in P])


@pytest.mark.parametrize("draw", [
    lambda rng: draw_sampled(rng, Q),
    lambda rng: draw_sampled(rng, np.eye(5)[[1, 2]]),  # q one-hot
    lambda rng: draw_lookup(rng, np.array([1, 2])),
    lambda rng: draw_lookup(rng, np.array([2, 3])),  # p(3) = 0 at place 1
], ids=["q", "one-hot q", "lookup", "lookup, impossible second"])
def test_the_accept_reject_rule_keeps_the_model_distribution(draw):
    """Each emitted token is distributed as the model's p at its place
    (p does not depend on the tokens before it here)."""
    counts = first_two_tokens(draw)
    for place in range(2):
        dof = int((P[place] > 0).sum()) - 1
        assert chi_square(counts[place], P[place]) < CHI2_999[dof], place


def first_two_tokens(draw, n=5000) -> np.ndarray:
    """How often each token came first and second in ``n`` draws: (2, V)."""
    rng = np.random.default_rng(0)
    counts = np.zeros((2, 5))
    for _ in range(n):
        for place, token in enumerate(draw(rng)[:2]):
            counts[place, token] += 1
    return counts


def test_the_distribution_test_catches_a_wrong_residual(monkeypatch):
    """Drawing from p, not max(0, p - q), after a rejection fails it."""
    def wrong(draft, q, p, r, u):
        k = len(draft)
        ratio = p[np.arange(k), draft] / q[np.arange(k), draft]
        n = int(np.cumprod(r <= ratio).sum())
        return np.append(draft[:n], sp.sample(p[n], u)), n

    monkeypatch.setattr(sp, "speculative_sampling", wrong)
    counts = first_two_tokens(lambda rng: draw_sampled(rng, Q))
    assert chi_square(counts[0], P[0]) > 10 * CHI2_999[4]


def test_speculative_sampling_equals_transformers_given_the_same_draws(
        monkeypatch):
    torch, _ = _torch()
    from transformers.generation.utils import _speculative_sampling
    rng = np.random.default_rng(1)
    for _ in range(100):
        k, V = int(rng.integers(1, 5)), 6
        q = rng.dirichlet(np.ones(V), k)
        p = rng.dirichlet(np.ones(V), k + 1)
        draft = np.array([sp.sample(row, rng.random()) for row in q])
        r, u = rng.random(k), rng.random()
        residuals = []

        def multinomial(probs, num_samples):
            residuals.append(probs.numpy()[0])
            return torch.tensor([[sp.sample(probs.numpy()[0], u)]])

        monkeypatch.setattr(torch, "rand_like",
                            lambda x: torch.tensor(r, dtype=x.dtype))
        monkeypatch.setattr(torch, "multinomial", multinomial)
        prompt = rng.integers(0, V, 3)
        theirs, n_theirs = _speculative_sampling(
            torch.tensor(np.concatenate([prompt, draft])[None]),
            torch.tensor(np.log(q)[None]), k, torch.tensor(np.log(p)[None]))
        ours, n_ours = sp.speculative_sampling(draft, q, p, r, u)
        assert n_ours == int(n_theirs)
        assert ours.tolist() == theirs[0].tolist()
        residual = np.maximum(p[n_ours] - q[n_ours], 0) if n_ours < k \
            else p[n_ours]
        np.testing.assert_allclose(residuals[0], residual / residual.sum(),
                                   rtol=1e-12)


# --------------------------------------------------------- the whole loop
def tiny_prompts():
    rng = np.random.default_rng(3)
    once = rng.integers(1, 64, 8)
    return {"repeats": np.concatenate([once, once[:4]]),
            "does not": rng.integers(1, 64, 12)}


@pytest.mark.parametrize("drafter", DRAFTERS, ids=str)
@pytest.mark.parametrize("text", ["repeats", "does not"])
def test_greedy_equals_plain_greedy_on_a_tiny_model(drafter, text):
    model, ids = tiny_model(), tiny_prompts()[text]
    want = model.generate(ids, 16, eos_token_id=[])
    got, stats = sp.speculative_generate(model, ids, 16, eos_token_id=[],
                                         **drafter)
    np.testing.assert_array_equal(got, want)
    assert stats.forwards == 16 - stats.accepted
    assert 0 <= stats.accepted <= stats.drafted


@pytest.mark.parametrize("paged", [False, True], ids=["dense", "paged"])
def test_the_cache_after_a_rejection_is_the_cache_without_it(paged):
    """Verify a draft whose third token is wrong; crop; the cache holds
    what one forward over the accepted tokens alone leaves."""
    model, ids = tiny_model(), tiny_prompts()["does not"]
    greedy = model.generate(ids, 3, eos_token_id=[])[len(ids):]
    wrong = (greedy[2] + 1) % 64
    draft = np.array([greedy[0], greedy[1], wrong, 7])

    def new_cache():
        if paged:
            return PagedCache.from_config(model.config, num_blocks=8,
                                          block_size=4, dtype=model.dtype)
        return px.kv_cache.DynamicCache(model.config)

    cache = new_cache()
    logits = sp.verify(model, cache, ids, draft)
    kept = sp.accept_prefix(draft, np.argmax(logits, axis=-1))
    assert kept.tolist() == greedy.tolist()  # two drafts, then the model's
    cache.crop(len(ids) + 2)
    alone = new_cache()
    model(np.concatenate([ids, greedy[:2]])[None], cache=alone)
    assert cache.get_seq_length() == alone.get_seq_length() == len(ids) + 2
    def held(layer):  # (keys, values), each (1, H_kv, S, d_head)
        if paged:
            return layer.read(range(1), layer.seen)  # through its blocks
        return layer.keys, layer.values

    for got, want in zip(cache.layers, alone.layers):
        # equal to float32 rounding: the two forwards had different T
        np.testing.assert_allclose(held(got), held(want), rtol=1e-6,
                                   atol=1e-6)
    if paged:  # the rejected tokens' last block went back to the pool
        assert cache.num_free_blocks == alone.num_free_blocks


def test_a_paged_cache_gives_the_same_tokens():
    model, ids = tiny_model(), tiny_prompts()["repeats"]
    cache = PagedCache.from_config(model.config, num_blocks=16,
                                   block_size=4, dtype=model.dtype)
    want = model.generate(ids, 16, eos_token_id=[])
    got, _ = sp.speculative_generate(model, ids, 16, eos_token_id=[],
                                     prompt_lookup_num_tokens=4, cache=cache)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("drafter", DRAFTERS, ids=str)
def test_sampling_is_seeded_and_stops_at_eos(drafter):
    model, ids = tiny_model(), tiny_prompts()["repeats"]
    runs = [sp.speculative_generate(model, ids, 20, do_sample=True, seed=5,
                                    temperature=0.7, eos_token_id=[9],
                                    **drafter)[0] for _ in range(2)]
    np.testing.assert_array_equal(*runs)
    new = runs[0][len(ids):]
    assert 1 <= len(new) <= 20 and 9 not in new[:-1]


@pytest.mark.slow
def test_speculative_sampling_from_a_model_matches_its_next_token():
    """The first sampled token of speculative decoding is distributed as
    the model's softmax at the prompt's end."""
    model, ids = tiny_model(), tiny_prompts()["does not"]
    p = px.softmax(model(ids[None]).logits[0, -1].astype(np.float64))
    counts = np.zeros(64)
    for seed in range(400):
        out, _ = sp.speculative_generate(
            model, ids, 2, assistant_early_exit=1, do_sample=True,
            seed=seed, eos_token_id=[])
        counts[out[len(ids)]] += 1
    top = np.argsort(p)[::-1][:4]  # pool the rest into one cell
    cells = np.append(counts[top], counts.sum() - counts[top].sum())
    probs = np.append(p[top], 1 - p[top].sum())
    assert chi_square(cells, probs) < CHI2_999[4]


@pytest.mark.parametrize("kwargs, match", [
    (dict(), "needs one drafter"),
    (dict(prompt_lookup_num_tokens=3, assistant_early_exit=1),
     "needs one drafter"),
    (dict(prompt_lookup_num_tokens=0), "prompt_lookup_num_tokens"),
    (dict(prompt_lookup_num_tokens=2, max_matching_ngram_size=0),
     "max_matching_ngram_size"),
    (dict(assistant_early_exit=2), "assistant_early_exit"),  # L = 2
    (dict(assistant_early_exit=0), "assistant_early_exit"),
    (dict(assistant_early_exit=1, num_assistant_tokens=0),
     "num_assistant_tokens"),
    (dict(prompt_lookup_num_tokens=2, temperature=0), "temperature"),
    (dict(prompt_lookup_num_tokens=2, do_sample=True, seed=-1), "seed"),
    (dict(prompt_lookup_num_tokens=2, eos_token_id=[64]), "eos_token_id"),
])
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sp.speculative_generate(tiny_model(), [1, 2, 3], 4, **kwargs)


def test_bad_inputs_are_refused():
    model = tiny_model()
    with pytest.raises(ValueError, match="max_new_tokens"):
        sp.speculative_generate(model, [1, 2], 0, prompt_lookup_num_tokens=2)
    with pytest.raises(ValueError, match="one sequence"):
        sp.speculative_generate(model, [[1, 2], [3, 4]], 2,
                                prompt_lookup_num_tokens=2)
    with pytest.raises(ValueError, match="input_ids"):
        sp.speculative_generate(model, [1, 64], 2, prompt_lookup_num_tokens=2)
    full = px.kv_cache.DynamicCache(model.config)
    model([1, 2], cache=full)
    with pytest.raises(ValueError, match="empty cache"):
        sp.speculative_generate(model, [1, 2], 2, prompt_lookup_num_tokens=2,
                                cache=full)
    with pytest.raises(TypeError, match="cache must be a Cache"):
        sp.speculative_generate(model, [1, 2], 2, prompt_lookup_num_tokens=2,
                                cache={})


# ---------------------------------------------------------- real models
def shakespeare_texts():
    model = px.Qwen3ForCausalLM.from_pretrained(px.SHAKESPEARE_CHECKPOINT)
    tok = px.load_tokenizer(px.SHAKESPEARE_CHECKPOINT)
    text = (px.SHAKESPEARE_CHECKPOINT / "heldout.txt").read_text()
    return model, {"repeats": tok.encode(text[:300] + "\n" + text[:150]).ids,
                   "does not": tok.encode(text[:400]).ids}


@pytest.mark.slow
@pytest.mark.parametrize("text", ["repeats", "does not"])
def test_greedy_equals_plain_greedy_on_the_shakespeare_model(text):
    model, texts = shakespeare_texts()
    ids = np.array(texts[text])
    want = model.generate(ids, 40)
    for drafter in (dict(prompt_lookup_num_tokens=5),
                    dict(assistant_early_exit=2)):
        got, stats = sp.speculative_generate(model, ids, 40, **drafter)
        np.testing.assert_array_equal(got, want)
        assert stats.forwards < 40


@pytest.mark.slow
@pytest.mark.skipif(not SMOL.is_file(),
                    reason=f"SmolLM2's GGUF is not fetched ({SMOL})")
def test_greedy_equals_plain_greedy_on_smollm2():
    folder = SMOL.parent
    model = px.LlamaForCausalLM.from_pretrained(folder, gguf_file=SMOL.name)
    tok = px.load_tokenizer(folder, gguf_file=SMOL.name)
    code = "def mean(xs):\n    total = 0\n    for x in xs:\n" \
           "        total += x\n    return total / len(xs)\n"
    for text in ("Copy this function exactly.\n\n" + code + "\nThe copy:\n\n",
                 "The history of the city begins in the twelfth century,"):
        ids = np.array(tok.encode(text).ids)
        want = model.generate(ids, 8)
        for drafter in (dict(prompt_lookup_num_tokens=10),
                        dict(assistant_early_exit=24, num_assistant_tokens=3)):
            got, _ = sp.speculative_generate(model, ids, 8, **drafter)
            np.testing.assert_array_equal(got, want)


@pytest.mark.slow
@pytest.mark.parametrize("drafter", ["prompt_lookup_num_tokens",
                                     "assistant_early_exit"])
def test_greedy_equals_transformers_assisted_generate(drafter):
    """The same tokens as transformers' ``generate`` with the same drafter,
    and the same number of the model's forwards (and drafted tokens)."""
    torch, transformers = _torch()
    ours, texts = shakespeare_texts()
    theirs = transformers.Qwen3ForCausalLM.from_pretrained(
        px.SHAKESPEARE_CHECKPOINT, dtype=torch.float32).eval()
    # a constant draft length: no confidence cut-off, no schedule
    theirs.generation_config.update(
        num_assistant_tokens=5, num_assistant_tokens_schedule="constant",
        assistant_confidence_threshold=0.0)
    from transformers.generation import candidate_generator
    kind = {"prompt_lookup_num_tokens":
            candidate_generator.PromptLookupCandidateGenerator,
            "assistant_early_exit":
            candidate_generator.EarlyExitCandidateGenerator}[drafter]
    drafted, original = [], kind.get_candidates

    def counted(self, input_ids, **kwargs):
        candidates, logits = original(self, input_ids, **kwargs)
        drafted.append(candidates.shape[1] - input_ids.shape[1])
        return candidates, logits

    value = {"prompt_lookup_num_tokens": 5, "assistant_early_exit": 2}
    for text in ("repeats", "does not"):
        ids = np.array(texts[text])
        drafted.clear()
        with pytest.MonkeyPatch.context() as patch, torch.no_grad():
            patch.setattr(kind, "get_candidates", counted)
            want = theirs.generate(torch.tensor(ids[None]), do_sample=False,
                                   max_new_tokens=20,
                                   **{drafter: value[drafter]})[0].numpy()
        got, stats = sp.speculative_generate(ours, ids, 20,
                                             **{drafter: value[drafter]})
        np.testing.assert_array_equal(got, want)
        assert stats.forwards == len(drafted)
        # transformers' prompt lookup drafts past the last token wanted
        assert stats.drafted == sum(drafted) if drafter != \
            "prompt_lookup_num_tokens" else stats.drafted <= sum(drafted)
