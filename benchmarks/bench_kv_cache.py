"""Decode-step time with the KV cache vs full recomputation, as the context grows.

``make bench BENCH=bench_kv_cache``. One decode step at context ``T`` is the
newest token attending over ``T`` positions: with the cache, one token's
projections and one query row against ``T`` cached keys; without it, a forward
pass over all ``T`` tokens (only the last position's logits). Every number is
measured in this run, best of several repeats, on whatever machine runs it.

Targets: the cache is at least 100x faster at T = 2048, and the cached step
grows at most about linearly: time(4096) / time(1024) <= 4.5.

It runs on OpenBLAS's own choice of kernel (OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE removed before numpy loads) and prints the machine first
(benchmarks/machine.py). BLAS runs on one thread unless the environment says
otherwise (set before numpy loads): on a shared machine, multi-threaded BLAS calls of a few milliseconds
spend more time waiting for worker threads than computing, which made the
recomputation timings jump by 10x from one context length to the next.
"""

from __future__ import annotations


from machine import describe, one_blas_thread, use_own_blas  # benchmarks/machine.py

use_own_blas()  # before numpy: OpenBLAS on its own kernel, as a reader's
one_blas_thread()

import numpy as np  # noqa: E402

import pyxis_nb as px  # noqa: E402
from timing import best_of  # noqa: E402  (benchmarks/timing.py)

CONTEXTS = (512, 1024, 2048, 4096)
# One layer of a small GQA model, float32: large enough that attention over the
# cache, not Python overhead, is what grows with T; small enough that the full
# recomputation at T = 4096 (a (4, 4096, 4096) score matrix) takes about a second.
MODEL = dict(vocab_size=512, hidden_size=256, num_hidden_layers=1, num_attention_heads=4,
             num_key_value_heads=2, head_dim=64, max_position_embeddings=max(CONTEXTS),
             seed=0, dtype=np.float32)
TARGET_RATIO_AT_2048 = 100.0
TARGET_GROWTH_4096_OVER_1024 = 4.5


def cached_step_time(model: px.TinyDecoder, ids: np.ndarray, T: int, repeats: int) -> float:
    """One decode step at context T: the cache holds T - 1 positions, 1 token goes in."""
    cache = model.new_cache(max_cache_len=T)
    model.forward(ids[None, :T - 1], cache=cache, logits_to_keep=1)  # prefill

    def step():
        cache.crop(T - 1)  # forget the previous repeat's token
        model.forward(ids[None, T - 1:T], cache=cache, logits_to_keep=1)

    step()  # warm up
    return best_of(step, repeats)


def uncached_step_time(model: px.TinyDecoder, ids: np.ndarray, T: int, repeats: int) -> float:
    """The same step without a cache: a forward pass over all T positions."""
    return best_of(lambda: model.forward(ids[None, :T], logits_to_keep=1), repeats)


def main() -> bool:
    model = px.TinyDecoder(**MODEL)
    ids = np.random.default_rng(0).integers(0, MODEL["vocab_size"], max(CONTEXTS))
    describe()
    print(f"model: {model}")
    print(f"{'T':>6} {'cached ms/token':>16} {'recompute ms/token':>19} {'ratio':>8} "
          f"{'FLOP ratio':>11}")
    cached, full = {}, {}
    for T in CONTEXTS:
        cached[T] = cached_step_time(model, ids, T, repeats=50)
        full[T] = uncached_step_time(model, ids, T, repeats=5 if T <= 2048 else 3)
        flops = (px.memory.decode_step_flops(model.config, T, use_cache=False)
                 / px.memory.decode_step_flops(model.config, T))
        print(f"{T:>6} {cached[T] * 1e3:>16.3f} {full[T] * 1e3:>19.1f} "
              f"{full[T] / cached[T]:>7.0f}x {flops:>10.0f}x", flush=True)

    ratio = full[2048] / cached[2048]
    growth = cached[4096] / cached[1024]
    ok_ratio = ratio >= TARGET_RATIO_AT_2048
    ok_growth = growth <= TARGET_GROWTH_4096_OVER_1024
    print(f"{'PASS' if ok_ratio else 'FAIL'}: recompute / cached at T = 2048 is {ratio:.0f}x "
          f"(target >= {TARGET_RATIO_AT_2048:.0f}x)")
    print(f"{'PASS' if ok_growth else 'FAIL'}: cached step time(4096) / time(1024) is "
          f"{growth:.2f} (target <= {TARGET_GROWTH_4096_OVER_1024}; linear growth gives 4, "
          f"quadratic 16)")
    return ok_ratio and ok_growth


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
