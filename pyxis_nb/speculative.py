"""Speculative decoding: draft k tokens cheaply, check them in one forward.

Decoding one token reads every weight once; so does checking k tokens in
one forward, since the matrix products take k rows as easily as one. A
cheap *drafter* guesses the next k tokens, the model runs once over them,
and every guess the model agrees with is a token gained (Leviathan et al.
2023, Chen et al. 2023). Two drafters, as transformers names them:

- *prompt lookup* (``prompt_lookup_num_tokens``, Saxena 2023): find the
  last n tokens earlier in the text and propose what followed them. This
  is an induction head written as an algorithm: the head attends from the
  current token to the one after its earlier copy and copies it.
- *early exit* (``assistant_early_exit``, LayerSkip, Elhoushi et al.
  2024): the model's first layers, then its final norm and ``lm_head``.

Greedy, the output is plain greedy decoding's, token for token; sampled,
the accept/reject rule keeps the model's distribution exactly.

Shape legend:
    T       tokens of the sequence so far
    V       vocabulary size
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ._checks import (check_bool, check_int, check_needs, check_number,
                      check_positive_int, check_shape,
                      check_token_ids)
from .kv_cache import Cache, DynamicCache
from .stable_softmax import softmax_core

__all__ = ["prompt_lookup_candidates", "EarlyExitDrafter", "verify",
           "accept_prefix", "speculative_sampling", "SpeculativeStats",
           "speculative_generate"]


# ----------------------------------------------------------------- drafters
def prompt_lookup_candidates(input_ids, num_output_tokens: int,
                             max_matching_ngram_size: int = 2,
                             eos_token_id=()) -> np.ndarray:
    """Prompt lookup's draft: what followed the last n tokens' first
    earlier copy, n from ``max_matching_ngram_size`` down to 1.

    ``input_ids`` (T,); at most ``num_output_tokens`` tokens, cut before
    the first of ``eos_token_id``; none if no n-gram recurs.

    See Also
    --------
    transformers.generation.candidate_generator.PromptLookupCandidateGenerator
    """
    ids = np.asarray(input_ids)
    for n in range(min(max_matching_ngram_size, len(ids) - 1), 0, -1):
        windows = np.lib.stride_tricks.sliding_window_view(ids, n)
        copies = np.flatnonzero((windows == ids[-n:]).all(axis=1))
        for start in copies + n:  # left to right, as transformers
            draft = ids[start:start + num_output_tokens]
            if len(draft):  # (the last n-gram is a copy with nothing after)
                return draft[:_first(draft, eos_token_id)]
    return ids[:0]


def _first(tokens, eos_token_id) -> int:
    """Index of the first of ``eos_token_id`` in ``tokens``, else len."""
    hits = np.flatnonzero(np.isin(tokens, eos_token_id))
    return int(hits[0]) if len(hits) else len(tokens)


class EarlyExitDrafter:
    """LayerSkip's draft: ``model``'s first ``assistant_early_exit``
    layers, then its final norm and ``lm_head`` (the same arrays).

    The draft keeps its own cache of those layers (as transformers'
    assistant does), cropped to what still agrees with the sequence.

    See Also
    --------
    transformers.generation.candidate_generator.EarlyExitCandidateGenerator
    """

    def __init__(self, model, assistant_early_exit: int):
        L = model.config.num_hidden_layers
        n = check_int("assistant_early_exit", assistant_early_exit, low=1,
                      high=L - 1)
        config = replace(model.config, num_hidden_layers=n)
        if getattr(config, "layer_types", None):
            config = replace(config, layer_types=config.layer_types[:n])
        self.model = type(model)(
            config, model.embed_tokens, model.layers[:n], model.norm,
            model.lm_head, generation_config=model.generation_config)
        self.cache = DynamicCache(config)
        self.cached = np.zeros(0, np.int64)  # the tokens the cache holds
        self.forwards = 0

    def __call__(self, input_ids, num_tokens: int, pick):
        """``num_tokens`` drafted after ``input_ids`` (T,), each chosen by
        ``pick(logits) -> (token, probs or None)``; returns the tokens
        (k,) and their distributions (k, V) (None when greedy)."""
        ids = np.asarray(input_ids)
        agree = np.cumprod(self.cached[:len(ids)] == ids[:len(self.cached)])
        self.cache.crop(min(int(agree.sum()), len(ids) - 1))
        feed, tokens, probs = ids[self.cache.get_seq_length():], [], []
        for _ in range(num_tokens):
            logits = self.model(feed[None], cache=self.cache,
                                logits_to_keep=1).logits[0, -1]  # (V,)
            token, q = pick(logits)
            tokens.append(token)
            probs.append(q)
            feed = np.array([token])
        self.forwards += num_tokens
        self.cached = np.concatenate([ids, tokens[:-1]]).astype(np.int64)
        return (np.array(tokens, np.int64),
                None if not probs or probs[0] is None else np.stack(probs))


# ------------------------------------------------------------- verification
def verify(model, cache: Cache, input_ids, draft) -> np.ndarray:
    """The model's next-token logits after the sequence and after each
    drafted token, from ONE forward: (k + 1, V).

    ``model``'s ``cache`` holds all of ``input_ids`` (T,) but its newest
    tokens; they and ``draft`` (k,) are fed together, and the cache grows
    by them."""
    feed = np.concatenate([input_ids[cache.get_seq_length():], draft])
    return model(feed[None].astype(np.int64), cache=cache,
                 logits_to_keep=len(draft) + 1).logits[0]


def accept_prefix(draft, chosen) -> np.ndarray:
    """The draft's longest prefix that the model's own choices agree with,
    then the model's choice after it: greedy verification.

    ``draft`` (k,), ``chosen`` (k + 1,): the model's token at each place
    (its argmax; sampled, a draw, as transformers checks a draft with no
    probabilities of its own)."""
    n = int(np.cumprod(np.asarray(draft) == chosen[:-1]).sum())
    return np.asarray(chosen[:n + 1], np.int64)


def sample(probs, u: float) -> int:
    """The token at which ``probs``' (V,) running sum first reaches ``u``
    (uniform in [0, 1)) times their total: inverse-CDF sampling."""
    cdf = np.cumsum(probs)
    return int(min(np.searchsorted(cdf, u * cdf[-1]), len(cdf) - 1))


def speculative_sampling(draft, q, p, r, u: float):
    """Leviathan et al.'s accept/reject rule: keep drafted token ``x_i``
    with probability min(1, p_i(x) / q_i(x)); at the first rejection
    draw from normalise(max(0, p_i - q_i)); if none, draw from p_k.

    ``draft`` (k,) was drawn from ``q`` (k, V); ``p`` (k + 1, V) is the
    model's; ``r`` (k,) and ``u`` are uniform draws in [0, 1). Returns
    the new tokens (accepted ones and one drawn) and how many were
    accepted.

    See Also
    --------
    transformers.generation.utils._speculative_sampling
    """
    draft = np.asarray(draft, np.int64)
    k = len(draft)
    ratio = p[np.arange(k), draft] / q[np.arange(k), draft]
    n = int(np.cumprod(np.asarray(r) <= ratio).sum())
    residual = np.maximum(p[n] - q[n], 0) if n < k else p[n]
    return np.append(draft[:n], sample(residual, u)), n


# -------------------------------------------------------------- the loop
@dataclass
class SpeculativeStats:
    """What a run drafted and kept: ``drafted`` and ``accepted`` draft
    tokens, the model's ``forwards`` and the drafter's
    ``draft_forwards``."""

    drafted: int = 0
    accepted: int = 0
    forwards: int = 0
    draft_forwards: int = 0

    @property
    def acceptance_rate(self) -> float:
        """Accepted draft tokens per drafted one (nan: none drafted)."""
        return self.accepted / self.drafted if self.drafted else np.nan


def speculative_generate(model, input_ids, max_new_tokens: int, *,
                         prompt_lookup_num_tokens=None,
                         max_matching_ngram_size: int = 2,
                         assistant_early_exit=None,
                         num_assistant_tokens: int = 5,
                         do_sample: bool = False, seed=None,
                         temperature: float = 1.0, eos_token_id=None,
                         cache=None):
    """Generate with drafts checked in one forward each; greedy, equal to
    ``model.generate``'s tokens.

    Parameters
    ----------
    model : Qwen3ForCausalLM or a subclass
    input_ids : array_like of int, shape (T,) or (1, T)
    max_new_tokens : int
    prompt_lookup_num_tokens : int, optional, k drafted by prompt lookup
    max_matching_ngram_size : int, default 2, its longest n-gram
    assistant_early_exit : int, optional, the early-exit draft's layers
    num_assistant_tokens : int, default 5, k that draft drafts
    do_sample, seed, temperature : bool, int, float
        Sample (Leviathan et al.'s rule) rather than take the argmax.
    eos_token_id : int or list of int, optional
        Stop after one; default the model's ``generation_config``.
    cache : Cache, optional
        Empty; default a ``DynamicCache`` (a ``PagedCache`` works too).

    Returns
    -------
    ids : (T + N,) shaped as ``input_ids``, N <= max_new_tokens
    stats : SpeculativeStats

    See Also
    --------
    transformers.GenerationMixin.generate : ``prompt_lookup_num_tokens``,
        ``assistant_early_exit``.
    """
    ids, N, drafter, k, eos, rng, cache = _speculative_args(
        model, input_ids, max_new_tokens, prompt_lookup_num_tokens,
        max_matching_ngram_size, assistant_early_exit, num_assistant_tokens,
        do_sample, seed, temperature, eos_token_id, cache)
    stats, P = SpeculativeStats(), len(ids)
    pick = _picker(rng, temperature)
    while len(ids) - P < N and not np.isin(ids[P:], eos).any():
        budget = N - (len(ids) - P)
        draft, q = drafter(ids, min(k, budget - 1), pick)
        logits = verify(model, cache, ids, draft)  # (k + 1, V)
        new = _accept(draft, q, logits, rng, temperature)
        new = new[:min(budget, _first(new, eos) + 1)]
        stats.drafted += len(draft)
        stats.accepted += len(new) - 1
        stats.forwards += 1
        ids = np.concatenate([ids, new])
        cache.crop(len(ids) - 1)  # drop the keys of rejected drafts
    stats.draft_forwards = getattr(drafter, "forwards", 0)
    return (ids if np.ndim(input_ids) == 1 else ids[None]), stats


def _picker(rng, temperature):
    """A draft's choice for one position's logits (V,): (argmax, None)
    greedy (``rng`` None), else (a draw, the distribution drawn from)."""
    def pick(logits):
        if rng is None:
            return int(np.argmax(logits)), None
        q = softmax_core(logits.astype(np.float64) / temperature)
        return sample(q, rng.random()), q
    return pick


def _accept(draft, q, logits, rng, temperature) -> np.ndarray:
    """The tokens a verification keeps: greedy, sampled against a draft's
    distributions ``q``, or sampled against a deterministic draft."""
    if rng is None:
        return accept_prefix(draft, np.argmax(logits, axis=-1))
    p = softmax_core(logits.astype(np.float64) / temperature)  # (k + 1, V)
    if q is None:  # q one-hot: keep x with probability p(x), as transformers
        return accept_prefix(draft, [sample(row, rng.random()) for row in p])
    new, _ = speculative_sampling(draft, q, p, rng.random(len(draft)),
                                  rng.random())
    return new


def _speculative_args(model, input_ids, max_new_tokens, lookup, ngram,
                      early_exit, num_assistant_tokens, do_sample, seed,
                      temperature, eos_token_id, cache):
    """speculative_generate's door: ids (T,), N, the drafter, its k, eos
    ids, the generator (None: greedy), the empty cache."""
    ids = check_token_ids("input_ids", input_ids, model.vocab_size,
                          batch=True)
    check_shape("input_ids", input_ids, ids.shape[0] == 1,
                "(T,) or (1, T): speculative decoding takes one sequence")
    N = check_positive_int("max_new_tokens", max_new_tokens)
    if (lookup is None) == (early_exit is None):
        raise ValueError(
            "speculative_generate needs one drafter: prompt_lookup_num_tokens"
            f" or assistant_early_exit, got {lookup!r} and {early_exit!r}")
    if eos_token_id is None:
        eos_token_id = model.generation_config.get("eos_token_id")
    eos = np.array([check_int("eos_token_id", t, low=0,
                              high=model.vocab_size - 1)
                    for t in np.atleast_1d(eos_token_id or []).tolist()],
                   np.int64)
    if lookup is not None:
        k = check_positive_int("prompt_lookup_num_tokens", lookup)
        n = check_positive_int("max_matching_ngram_size", ngram)

        def drafter(ids, k, pick):
            return prompt_lookup_candidates(ids, k, n, eos), None
    else:
        k = check_positive_int("num_assistant_tokens", num_assistant_tokens)
        drafter = EarlyExitDrafter(model, early_exit)
    check_number("temperature", temperature, above=0)
    rng = np.random.default_rng(None if seed is None else check_int(
        "seed", seed, low=0)) if check_bool("do_sample", do_sample) else None
    if cache is None:
        cache = DynamicCache(model.config)
    if not isinstance(cache, Cache):
        raise TypeError(f"cache must be a Cache, got {type(cache).__name__}")
    check_needs(cache.get_seq_length() == 0, "cache", "an empty cache",
                f"it holds {cache.get_seq_length()} tokens already")
    return ids[0], N, drafter, k, eos, rng, cache

