"""What the benchmarks share: timing a call the way every bench does."""

import time


def best_of(fn, repeats: int) -> float:
    """The fastest of ``repeats`` runs, in seconds (the least disturbed by the machine)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
