"""Checks for the exercises of "Padding and batches" (book/padding.ipynb)."""

from __future__ import annotations

import numpy as np

from ..batching import TinyLM

NO_BODY = "no answer yet: write the function's body, then run the cell"


def _slots(lengths, batch_size) -> tuple[int, int]:
    """(all padded slots, PAD slots), batches taken in order."""
    slots = pads = 0
    for i in range(0, len(lengths), batch_size):
        group = lengths[i:i + batch_size]
        slots += len(group) * max(group)
        pads += len(group) * max(group) - sum(group)
    return slots, pads


def _fraction(lengths, batch_size) -> float:
    slots, pads = _slots(lengths, batch_size)
    return pads / slots


# the mistakes a reader makes, as the number each would give, and the hint
_MISTAKES = [
    (lambda lengths, size: _fraction(lengths, len(lengths)),
     "each batch is padded to its own longest sentence, not to the longest "
     "of all"),
    (lambda lengths, size: _fraction(
        lengths[:len(lengths) - len(lengths) % size] or lengths, size),
     "the last batch may hold fewer sentences than batch_size; count its "
     "slots too"),
    (lambda lengths, size: _slots(lengths, size)[1] / sum(lengths),
     "that is PAD slots per real token; the fraction is of all padded "
     "slots, real and PAD"),
]


def pad_fraction(answer) -> str | None:
    """1. ``pad_fraction(lengths, batch_size)``: the share of padded slots
    that hold PAD, batches taken in order."""
    rng = np.random.default_rng(0)
    cases = [([3, 5, 1, 7, 2, 6], 2), ([4, 4, 4], 3), ([2, 9, 3, 1, 5], 2),
             ([1, 8, 2, 6, 3], 3)]
    cases += [(rng.integers(1, 20, 7).tolist(), 3) for _ in range(3)]
    got = []
    for lengths, size in cases:
        g = answer(list(lengths), size)
        if g is None:
            return NO_BODY
        got.append(float(g))
    if np.allclose(got, [_fraction(*c) for c in cases]):
        return None
    for mistake, hint in _MISTAKES:  # a mistake made in every case
        if np.allclose(got, [mistake(*c) for c in cases]):
            return hint
    (lengths, size), g = next(
        (c, g) for c, g in zip(cases, got)
        if not np.isclose(g, _fraction(*c)))
    return (f"for lengths {lengths} in batches of {size} it gives "
            f"{g:.4g}; count, batch by batch, the slots (sentences times "
            "the longest length) and the PAD slots among them")


def unpad(answer) -> str | None:
    """2. ``unpad(rows, lengths, side)``: each sentence's real rows out of a
    padded batch."""
    rng = np.random.default_rng(0)
    lengths = np.array([3, 5, 1, 4])
    T = 5
    rows = rng.standard_normal((len(lengths), T, 2))  # (B, T, 2)
    for side in ("right", "left"):
        got = answer(rows.copy(), lengths.copy(), side)
        if got is None:
            return NO_BODY
        got = list(got)
        if len(got) != len(lengths):
            return (f"for a batch of {len(lengths)} sentences it returned "
                    f"{len(got)} items: one array per sentence")
        for b, n in enumerate(lengths):
            want = rows[b, :n] if side == "right" else rows[b, T - n:]
            part = np.asarray(got[b])
            if part.shape == want.shape and np.allclose(part, want):
                continue
            if part.shape != want.shape:
                return (f"side={side!r}: sentence {b} has {n} real tokens, "
                        f"and its array has shape {part.shape}, not "
                        f"{want.shape}")
            if side == "left":
                return ("with left padding the real tokens sit at the end "
                        "of the row, after the PAD slots")
            return (f"side={side!r}: sentence {b}'s rows are not its real "
                    "tokens")
    return None


class _Counted:
    """A model that counts how often it is run."""

    def __init__(self, model):
        self.model, self.calls = model, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.model(*args, **kwargs)

    forward = __call__

    def __getattr__(self, name):
        return getattr(self.model, name)


def batch_logits(answer) -> str | None:
    """3. ``batch_logits(model, token_lists)``: one run of the model on the
    right-padded batch, each sentence's logits at its real positions."""
    model = TinyLM(12, hidden_size=16, head_dim=8, seed=3)
    token_lists = [[1, 2, 3, 10, 1, 11], [4, 5, 6], [9]]
    counted = _Counted(model)
    got = answer(counted, [list(s) for s in token_lists])
    if got is None:
        return NO_BODY
    if counted.calls != 1:
        return (f"it ran the model {counted.calls} times: run it once, on "
                "the whole padded batch")
    got = list(got)
    if len(got) != len(token_lists):
        return (f"for {len(token_lists)} sentences it returned {len(got)} "
                "items: one (n, V) array per sentence")
    for b, tokens in enumerate(token_lists):
        want = model(np.array(tokens))  # (n, V): the sentence alone
        part = np.asarray(got[b])
        if part.shape != want.shape:
            return (f"sentence {b} has {len(tokens)} tokens and a "
                    f"vocabulary of {model.vocab_size}: its logits should "
                    f"have shape {want.shape}, not {part.shape}")
        if not np.allclose(part, want, rtol=1e-10, atol=1e-12):
            return (f"sentence {b}'s logits differ from the sentence run "
                    "alone; is the padding on the right, and are these "
                    "its real positions?")
    return None


CHECKS = {1: pad_fraction, 2: unpad, 3: batch_logits}
