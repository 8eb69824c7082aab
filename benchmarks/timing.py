"""What the benchmarks share: timing a call the way every bench does."""

import time

# OpenBLAS's threads (numpy's) busy-wait for about 0.1 s after a call before
# they sleep, and so do torch's, a little. A call timed right after another
# library's call shares the cores with those spinning threads: measured here,
# torch's causal attention at T = 2048 took 175 ms straight after a numpy
# matmul and 120 ms after a 0.1 s pause. Interleaved calls wait this long
# first, so that each is timed on cores no other library is still spinning on.
SETTLE_S = 0.2


def best_of(fn, repeats: int) -> float:
    """The fastest of ``repeats`` runs, in seconds (the least disturbed by the machine)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def interleaved(fns: dict, repeats: int, settle: float = SETTLE_S) -> dict:
    """Wall time of each function in each of ``repeats`` rounds, in seconds:
    ``{name: [round 1, round 2, ...]}``. A round calls every function once,
    in turn (a busy machine slows them alike), each after ``settle`` seconds
    of rest (another library's threads no longer spinning)."""
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            time.sleep(settle)
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times

