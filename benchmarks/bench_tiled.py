"""Tiled attention: its time against the machine's matrix-multiply bound, its memory.

    make bench BENCH=bench_tiled

Time: causal, B=1, H=16, D=128, float32, T = 512, 1024, 2048; best of a few
repeats, torch's SDPA, the tiled kernel and the naive one interleaved so
that a busy machine slows them alike (benchmarks/timing.py). The bound is
what numpy's BLAS needs for the attention's two products alone: every
head's QK^T and PV, timed whole on this machine in the same run, times the
causal share of their work, (T + 1) / 2T. Target: the tiled kernel at T =
2048 at least 70 % of that bound (bound time / tiled time). Its ratio to
torch is printed beside: mostly the ratio of the two BLAS libraries.

Memory: peak bytes allocated (tracemalloc; numpy reports its buffers to it)
during one causal call at T = 8192, D = 128, with ONE head: the naive version
would need 16 * 8192 * 8192 * 4 bytes = 4.3 GB for the scores of 16 heads alone.
The ratio does not depend on the head count, since both grow linearly in it.
Target: tiled peak at most 5 % of the naive peak.

Wall-clock time lives here and not in the book: the long_context chapter draws the
FLOP counts and tracemalloc peaks, which are the same on every run and every machine.
"""

from __future__ import annotations

import tracemalloc

from machine import describe, use_own_blas  # benchmarks/machine.py

use_own_blas()  # before numpy: OpenBLAS on its own kernel, as a reader's

import numpy as np  # noqa: E402

import pyxis_nb as px  # noqa: E402
from timing import SETTLE_S, best_of, interleaved  # noqa: E402 (benchmarks/timing.py)

REPEATS = 7
TIME_T = (512, 1024, 2048)
HEADS, HEAD_DIM = 16, 128
MEMORY_T = 8192
TIME_TARGET = 0.70  # of the matrix-multiply bound, at T = 2048
MEMORY_TARGET = 0.05  # tiled peak / naive peak at T = 8192


def _qkv(T: int, heads: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((1, heads, T, HEAD_DIM), dtype=np.float32) for _ in range(3))


def _peak_bytes(fn) -> int:
    """Peak bytes newly allocated while ``fn`` runs (its inputs already exist)."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def products_bound(q, k, v) -> float:
    """Seconds numpy needs for causal attention's two products alone: each
    head's QK^T and PV timed whole, times the causal share (T + 1) / 2T."""
    T = q.shape[2]
    p = np.ones((T, T), np.float32)

    def products():
        for h in range(q.shape[1]):
            q[0, h] @ k[0, h].T  # (T, D) x (D, T)
            p @ v[0, h]          # (T, T) x (T, D)
    products()  # warm
    return best_of(products, 3) * (T + 1) / (2 * T)


def time_section() -> bool | None:
    try:
        import torch
    except ImportError:
        print("torch is not installed: the time target is not measured")
        return None
    sdpa = torch.nn.functional.scaled_dot_product_attention
    print(f"time, causal, B=1, H={HEADS}, D={HEAD_DIM}, float32; best of {REPEATS}; "
          f"torch {torch.__version__} with {torch.get_num_threads()} threads; "
          f"{SETTLE_S} s rest before each call")
    print(f"{'T':>6} {'torch ms':>9} {'tiled ms':>9} {'naive ms':>9} {'tiled/torch':>12} "
          f"{'naive/torch':>12}")
    ratio = None
    for T in TIME_T:
        q, k, v = _qkv(T, HEADS)
        tq, tk, tv = map(torch.from_numpy, (q, k, v))
        ref = sdpa(tq, tk, tv, is_causal=True).numpy()
        out = px.tiled_attention(q, k, v, is_causal=True)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-5)
        rounds = interleaved({
            "torch": lambda: sdpa(tq, tk, tv, is_causal=True),
            "tiled": lambda: px.tiled_attention(q, k, v, is_causal=True),
            "naive": lambda: px.scaled_dot_product_attention(q, k, v, is_causal=True),
        }, REPEATS)
        t = {name: min(times) for name, times in rounds.items()}
        ratio = t["tiled"] / t["torch"]
        print(f"{T:>6} {1e3 * t['torch']:>9.1f} {1e3 * t['tiled']:>9.1f} {1e3 * t['naive']:>9.1f} "
              f"{ratio:>12.2f} {t['naive'] / t['torch']:>12.2f}")
    # how noisy the machine was: tiled/torch within each round (calls side by side)
    per_round = np.divide(rounds["tiled"], rounds["torch"])
    print(f"tiled/torch at T={TIME_T[-1]} round by round: lowest {per_round.min():.2f}, "
          f"median {np.median(per_round):.2f}, highest {per_round.max():.2f}; "
          f"torch's own times {1e3 * min(rounds['torch']):.0f}-{1e3 * max(rounds['torch']):.0f} ms")
    share = products_bound(q, k, v) / t["tiled"]
    ok = share >= TIME_TARGET
    print(f"{'PASS' if ok else 'FAIL'}: tiled at T={TIME_T[-1]} runs at {share:.0%} "
          f"of the matrix-multiply bound (target >= {TIME_TARGET:.0%}); "
          f"tiled / torch {ratio:.2f}")
    return ok


def memory_section() -> bool:
    q, k, v = _qkv(MEMORY_T, 1)
    print(f"\npeak memory, causal, T={MEMORY_T}, ONE head (B=1, H=1), D={HEAD_DIM}, float32 "
          "(tracemalloc)")
    tiled = _peak_bytes(lambda: px.tiled_attention(q, k, v, is_causal=True))
    naive = _peak_bytes(lambda: px.scaled_dot_product_attention(q, k, v, is_causal=True))
    scores = MEMORY_T * MEMORY_T * 4
    print(f"naive {naive / 1e6:8.1f} MB  (one (T, T) float32 score matrix is {scores / 1e6:.1f} MB)")
    print(f"tiled {tiled / 1e6:8.1f} MB  (q, k, v themselves are {3 * q.nbytes / 1e6:.1f} MB, "
          "allocated before and not counted)")
    ratio = tiled / naive
    ok = ratio <= MEMORY_TARGET
    print(f"{'PASS' if ok else 'FAIL'}: tiled/naive peak is {100 * ratio:.2f} % "
          f"(target <= {100 * MEMORY_TARGET:.0f} %)")
    return ok


def main() -> bool:
    try:
        import torch
    except ImportError:
        torch = None
    describe(torch)
    results = [time_section(), memory_section()]
    return all(r is not False for r in results)


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
