"""Run every benchmark in this folder: ``make bench`` (or ``make bench BENCH=bench_tiled``).

Each ``bench_*.py`` has a ``main()`` that measures in one run and prints its
ratios; it returns False when a target is missed. Each runs in its own Python
process, so one benchmark's thread settings (BLAS, torch) never leak into the
next. Targets live here, never in timed unit tests.

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
for path in sorted(here.glob("bench_*.py")):
    if only and path.stem not in only:
        continue
    print(f"\n=== {path.stem} ===", flush=True)
    code = (
        "import importlib.util, sys\n"
        f"sys.path.insert(0, {str(here)!r})  # benchmarks/timing.py\n"
        f"spec = importlib.util.spec_from_file_location({path.stem!r}, {str(path)!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "sys.exit(1 if module.main() is False else 0)\n"
    )
    if subprocess.run([sys.executable, "-c", code]).returncode != 0:
        failed.append(path.stem)
if failed:
    sys.exit(f"targets missed: {', '.join(failed)}")
print("\nall benchmark targets met")
