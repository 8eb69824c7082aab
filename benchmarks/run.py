"""Run every benchmark in this folder: ``make bench`` (or ``make bench BENCH=bench_tiled``).

Each ``bench_*.py`` has a ``main()`` that measures in one run and prints its
ratios; it returns False when a target is missed. Each runs in its own Python
process, so one benchmark's thread settings (BLAS, torch) never leak into the
next. Targets live here, never in timed unit tests.

Everything they print (each begins with the machine it ran on) is also
written to ``_build/bench/results.txt``: the numbers of the last run, kept
out of git and out of every document, which carry no dated measurements.

Each runs on the BLAS kernel a reader's machine picks: this process and
each benchmark's drop OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE before numpy
loads, and each prints the CPU, its BLAS libraries, their kernels and
thread counts before its figures (benchmarks/machine.py).
"""

import subprocess
import sys
from pathlib import Path

from machine import use_own_blas  # benchmarks/machine.py

# without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (this process starts again
# if either is set); each benchmark's process inherits the environment
use_own_blas()

here = Path(__file__).parent
only = sys.argv[1:]
failed = []
results = here.parent / "_build" / "bench" / "results.txt"
results.parent.mkdir(parents=True, exist_ok=True)
log = results.open("w")


def say(line: str) -> None:
    print(line, end="", flush=True)
    log.write(line)
    log.flush()

for path in sorted(here.glob("bench_*.py")):
    if only and path.stem not in only:
        continue
    say(f"\n=== {path.stem} ===\n")
    code = (
        "import importlib.util, sys\n"
        f"sys.path.insert(0, {str(here)!r})  # benchmarks/timing.py\n"
        f"spec = importlib.util.spec_from_file_location({path.stem!r}, {str(path)!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "sys.exit(1 if module.main() is False else 0)\n"
    )
    with subprocess.Popen([sys.executable, "-c", code], text=True,
                          stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT) as bench:
        for line in bench.stdout:
            say(line)
    if bench.returncode != 0:
        failed.append(path.stem)
say(f"\ntargets missed: {', '.join(failed)}\n" if failed
    else "\nall benchmark targets met\n")
print(f"(written to {results})")
sys.exit(1 if failed else 0)
