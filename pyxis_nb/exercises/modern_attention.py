"""Checks for the exercises of "Attention in 2024-26 models"
(book/modern_attention.ipynb).

Exercise 1's answer is a function the reader writes (gpt-oss-120b's cache,
layer by layer); the others are numbers. Each check compares with the
package's own count and, when the answer is off, says what to look at.
"""

from __future__ import annotations

import math

import numpy as np

from ..memory import attention_configs, cache_bytes, mla_decode_cost

# gpt-oss-120b: 36 layers, 18 sliding (window 128) and 18 full, 8 key/value
# heads of 64, bf16
_OSS_LENGTHS = (0, 1, 2, 127, 128, 129, 640, 641, 4_096, 131_072)
_OSS_PER_LAYER = 2 * 8 * 64 * 2  # bytes a token in one layer: K and V


def _oss():
    return attention_configs()["gpt-oss-120b"]


def oss_cache(answer) -> str | None:
    """1. oss_cache(T): gpt-oss-120b's cache bytes after T tokens."""
    config = _oss()
    for T in _OSS_LENGTHS:
        got, want = answer(T), cache_bytes(config, T)
        if got is None:
            return "your function returned None: return the bytes, a number"
        if got == want:
            continue
        a = _OSS_PER_LAYER
        if got == 36 * a * T:
            return (f"at T = {T:,} you count every layer as full: a "
                    "sliding layer holds at most its window of tokens")
        if got == 18 * a * T + 18 * a * min(T, 127):
            return (f"at T = {T:,} a sliding layer holds one token too few: "
                    "count what a step reads, the window's last key "
                    "included (layer_cache_bytes)")
        if want and np.isclose(got / want, 0.5):
            return (f"at T = {T:,} you get half the bytes: each token "
                    "leaves a key and a value in each layer")
        if want and got / want in (0.25, 0.125, 2.0, 4.0):
            return (f"at T = {T:,} you are off by a factor of "
                    f"{got / want:g}: count the key/value heads, the head "
                    "size and the bytes of one bf16 number")
        return (f"at T = {T:,} you get {got:,} bytes; count each layer of "
                "config['layer_types'] on its own: a full layer holds "
                "every token, a sliding one at most config['sliding_window']")
    return None


def sink_half(answer) -> str | None:
    """2. The sink logit that leaves half the weight on ten keys of 0."""
    x = float(answer)
    if not np.isfinite(x):
        return f"{x} is not a logit: give a finite number"
    kept = 10 / (math.exp(x) + 10)
    if np.isclose(kept, 0.5):
        return None
    if np.isclose(x, 10):
        return ("that number is what e^sink must equal; the sink is a "
                "logit, the exponent itself")
    more = "more" if kept > 0.5 else "less"
    return (f"with a sink of {x:.4g} the ten real keys keep {kept:.3f} of "
            f"the weight, {more} than half: the sink's e^sink must equal "
            "the sum of the ten keys' e^0")


def forgetting(answer) -> str | None:
    """3. The fraction of ``new`` that the read returns, decay 0.5."""
    x = float(answer)
    if np.isclose(x, 0.25):
        return None
    if np.isclose(x, 1.0):
        return ("that is the read without decay: g_t multiplies the whole "
                "state at every token, the read's own token included")
    if np.isclose(x, 0.5):
        return ("count the tokens whose decay reaches new: it is written "
                "at t = 4 and read at t = 6, and the read's own step "
                "decays the state before reading it")
    if np.isclose(x, 0.125) or np.isclose(x, 0.0625):
        return ("too many halvings: new is written at t = 4, so the "
                "decays before or at that step do not touch it (the delta "
                "rule writes new - what is there)")
    return (f"{x:.4g} is not what the read returns: halve new once for each "
            "token after the one that wrote it; compare out @ new / "
            "(new @ new)")


def _latent_bytes(S: int, absorb: bool, weight_scale: float = 1.0) -> float:
    cost = mla_decode_cost(attention_configs()["DeepSeek-V3"], S,
                           absorb=absorb)
    return (cost["bytes"] - cost["weight_bytes"]
            + weight_scale * cost["weight_bytes"])


def _first_twice(weight_scale: float = 1.0) -> int:
    lo, hi = 1, 131_072
    while lo < hi:
        mid = (lo + hi) // 2
        if (_latent_bytes(mid, False, weight_scale)
                < 2 * _latent_bytes(mid, True, weight_scale)):
            lo = mid + 1
        else:
            hi = mid
    return lo


def latent_pays(answer) -> str | None:
    """4. The shortest context at which expanded reads twice absorbed."""
    S = int(answer)
    if S != answer or S < 1:
        return f"{answer} is not a context length: give a whole number >= 1"
    right = _first_twice()
    if S == right:
        return None
    if S == _first_twice(0.5):
        return ("that counts the weights at 1 byte a number (FP8); the "
                "exercise counts every number in bf16, 2 bytes")
    ratio = _latent_bytes(S, False) / _latent_bytes(S, True)
    if S < right:
        return (f"at {S:,} tokens the expanded step reads {ratio:.4f} "
                "times the absorbed one: not yet twice")
    ratio_before = (_latent_bytes(S - 1, False)
                    / _latent_bytes(S - 1, True))
    return (f"at {S:,} tokens it reads {ratio:.4f} times, but one token "
            f"earlier already {ratio_before:.4f}: look for the shortest")


CHECKS = {1: oss_cache, 2: sink_half, 3: forgetting, 4: latent_pays}
