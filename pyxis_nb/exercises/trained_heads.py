"""Checks for the exercises of "Heads that have learned something"
(book/trained_heads.ipynb).

Each answer is a loss, in nats per token, that the reader measured. Exercises
2 and 3 are measured here again, on the chapter's stored model and its
256-sequence batch; exercise 1 trains a model for 20 s, so its check compares
with the number that training gives (the chapter's solution asserts the
check on its own run, so nbval keeps the two together).
"""

from __future__ import annotations

import functools

import numpy as np

from ..attention_only import (AttentionOnlyTransformer, cross_entropy,
                              half_losses, load_trained_heads, path_patch,
                              repeated_tokens)

# the second-half loss of a one-layer model over the last 50 of the main
# run's 1500 steps (exercise 1's solution asserts the check on its run)
ONE_LAYER_SECOND_HALF = 1.8884
LN_5 = np.log(5)  # a guess among the 5 positional places


@functools.lru_cache(maxsize=1)
def _setting():
    """The trained model, its batch and its second-half loss."""
    trained, _ = load_trained_heads("main")
    ids, labels, halves = repeated_tokens(256, (4, 8), 64,
                                          np.random.default_rng(1))
    return trained, ids, labels, halves


def _halves(logits) -> tuple[float, float]:
    """(first half, second half) loss of the chapter's batch."""
    _, _, labels, halves = _setting()
    token_loss, _ = cross_entropy(logits, labels)
    return half_losses(token_loss, halves)


def _number(answer) -> float:
    x = np.asarray(answer, dtype=float)
    if x.shape != ():
        raise ValueError(f"give one number, not an array of shape {x.shape}")
    return float(x)


def one_layer(answer) -> str | None:
    """1. A one-layer model's second-half loss over its last 50 steps."""
    x = _number(answer)
    if np.isclose(x, ONE_LAYER_SECOND_HALF, atol=0.01):
        return None
    trained, ids, _, _ = _setting()
    two_layers = _halves(trained(ids))[1]
    if x < LN_5 and np.isclose(x, two_layers, atol=0.1):
        return ("that is about what the two-layer model reaches: train a "
                "new model with num_hidden_layers=1")
    if x > np.log(64) - 0.3:
        return ("that is near ln 64, no better than a uniform guess: take "
                "the second half's losses ('second_half' of the history), "
                "not the first half's")
    return ("not the loss of the main run's settings: num_hidden_layers=1, "
            "the other sizes and seed 0 as the main model, the main run's "
            "steps, batch size, block lengths, learning rate and seed, and "
            "the mean of the last 50 steps' second-half losses")


def query_paths(answer) -> str | None:
    """2. Second-half loss with each layer-0 head out of layer 1's queries."""
    got = np.asarray(answer, dtype=float)
    if got.shape != (4,):
        return (f"its shape is {got.shape}: give four losses, one for each "
                "head of layer 0, in order")
    trained, ids, _, _ = _setting()

    def patched(into):
        return np.array([_halves(path_patch(trained, ids, layer=0, head=h,
                                            into=into))[1]
                         for h in range(4)])

    if np.allclose(got, patched("query"), atol=1e-3):
        return None
    for into in ("key", "value"):
        if np.allclose(got, patched(into), atol=1e-3):
            return (f"these are the losses with the head removed from "
                    f"layer 1's {into}s: the exercise asks for the queries")
    firsts = [_halves(path_patch(trained, ids, layer=0, head=h,
                                 into="query"))[0] for h in range(4)]
    if np.allclose(got, firsts, atol=1e-3):
        return ("these are first-half losses: the copying shows in the "
                "second half")
    return ("not the losses of path patching into the queries: use "
            "px.attention_only.path_patch(trained, eval_ids, layer=0, "
            "head=h, into=...) for each head h, and the second-half loss "
            "of its logits")


def layer_1_off(answer) -> str | None:
    """3. Second-half loss with all of layer 1's o_proj set to zero."""
    x = _number(answer)
    trained, ids, _, _ = _setting()

    def zeroed(layer):
        state = {k: v.copy() for k, v in trained.state_dict().items()}
        state[f"layers.{layer}.self_attn.o_proj.weight"][...] = 0
        model = AttentionOnlyTransformer(64, 32, 2, 4, 16)
        model.load_state_dict(state)
        return _halves(model(ids))

    first, second = zeroed(1)
    if np.isclose(x, second, atol=1e-3):
        return None
    if np.isclose(x, _halves(trained(ids))[1], atol=1e-3):
        return ("that is the loss with every head on: set the whole "
                "o_proj weight of layer 1 to zero before you measure")
    if np.isclose(x, zeroed(0)[1], atol=1e-3):
        return ("that is layer 0 switched off: the exercise asks for "
                "layer 1 (layers.1.self_attn.o_proj.weight)")
    if np.isclose(x, first, atol=1e-3):
        return ("that is the first half's loss: take the second half's")
    return ("not the second-half loss of the model without layer 1: copy "
            "the state dict, zero layers.1.self_attn.o_proj.weight, load "
            "it into a new model and measure as second_half_loss does")


CHECKS = {1: one_layer, 2: query_paths, 3: layer_1_off}
