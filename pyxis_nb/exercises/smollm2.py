"""Checks for the exercises of "SmolLM2: a model trained at scale"
(book/smollm2.ipynb).

Exercises 1 and 2 take a function the reader writes; the check runs it on
blocks or attention weights it makes and compares with ``gguf``'s decoding
or the package's ``sink_score``. Exercise 3 takes a number measured on the
chapter's model (its Q4_1 file, whose sha256 ``fetch_smollm2`` checks): the
check compares it with the value the chapter's solution measures.
"""

from __future__ import annotations

import numpy as np

from ..circuits import sink_score
from ..masks import causal_mask
from ..stable_softmax import softmax


def _q8_0_blocks():
    """(raw blocks (n, 34) uint8, their weights (n, 32) float32)."""
    from gguf import GGMLQuantizationType  # as gguf_file does: on use
    from gguf.quants import dequantize, quantize
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    x[1] *= 0.01                             # a small scale
    x[2, :16] = np.abs(x[2, :16])            # codes of both signs, and
    x[3] = -np.abs(x[3])                     # a block of negative codes
    kind = GGMLQuantizationType.Q8_0
    raw = quantize(x, kind)                  # (4, 34)
    return raw, np.stack([dequantize(b, kind).ravel() for b in raw])


def decode_q8_0(answer) -> str | None:
    """1. decode_q8_0(block): 34 bytes -> 32 float32 weights."""
    raw, want = _q8_0_blocks()
    for block, w in zip(raw, want):
        got = answer(block.copy())
        if got is None:
            return "your function returned None: return the 32 weights"
        got = np.asarray(got, dtype=np.float64).ravel()
        if got.shape != (32,):
            return (f"a block holds 32 weights, your function returned "
                    f"{got.size} numbers")
        if np.array_equal(got, w):
            continue
        d = float(block[:2].view(np.float16)[0])
        if np.allclose(got, d * block[2:].astype(np.float64)):
            return ("your weights are right where the code is small and "
                    "far off where it is large: are the codes read with "
                    "their sign?")
        if np.allclose(got, block[2:].view(np.int8)):
            return "you return the codes: each is multiplied by the scale"
        return ("your weights differ from gguf's decoding: the block is a "
                "float16 scale in its first 2 bytes, then 32 codes of one "
                "byte")
    return None


def sink_scores(answer) -> str | None:
    """2. sink_scores(weights): (B, H, T, T) -> (H,) weight on key 0."""
    rng = np.random.default_rng(13)
    for B, H, T in [(2, 3, 6), (1, 4, 9), (3, 2, 5)]:
        z = rng.standard_normal((B, H, T, T)) * 2
        w = softmax(np.where(causal_mask(T), z, -np.inf))  # causal weights
        want = sink_score(w)
        got = answer(w.copy())
        if got is None:
            return "your function returned None: return one score a head"
        got = np.asarray(got, dtype=float)
        if got.shape != want.shape:
            return (f"for weights of shape {w.shape} the scores should have "
                    f"shape {want.shape}, one a head (averaged over the "
                    f"batch), got {got.shape}")
        if np.allclose(got, want, rtol=1e-10, atol=1e-12):
            continue
        if np.allclose(got, w[:, :, :, 0].mean(axis=(0, 2))):
            return ("your scores count query 0, which the causal mask lets "
                    "see nothing but the first key: leave it out")
        if np.allclose(got, w[:, :, 1:, 0].sum(axis=2).mean(axis=0)):
            return "you sum over the queries: take their mean"
        return ("your scores differ from the mean weight on the first key: "
                "the first key is the last axis's index 0, seen from "
                "queries 1 to T-1")
    return None


# Measured by the chapter on SmolLM2's Q4_1 file: the second-copy loss with
# no head off, with L18H6 off, with the top 6 induction heads off (nats).
_SECOND_COPY = 3.170
_BEST_OFF = 5.042
_TOP6_OFF = 11.684


def best_head_alone(answer) -> str | None:
    """3. What switching off the best induction head alone adds to the
    second copy's loss, in nats."""
    if isinstance(answer, (bool, np.bool_)) or not isinstance(
            answer, (int, float, np.integer, np.floating)):
        return "give a number: the change in the second copy's loss, nats"
    x = float(answer)
    if abs(x - (_BEST_OFF - _SECOND_COPY)) < 0.01:
        return None
    if abs(x - _BEST_OFF) < 0.01:
        return ("that is the second copy's loss with the head off; the "
                "exercise asks what switching it off adds to it")
    if abs(x - (_TOP6_OFF - _SECOND_COPY)) < 0.01:
        return "that is what the top 6 together add: switch off one head"
    if x < 0:
        return "switching a head off should not make copying cheaper: sign?"
    return (f"you get {x:.3f} nats: switch off only the best induction head "
            "(the first of top) and subtract the second-copy loss with "
            "every head on")


CHECKS = {1: decode_q8_0, 2: sink_scores, 3: best_head_alone}
