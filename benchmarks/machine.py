"""Where a benchmark runs: on the BLAS kernel a reader's machine would pick,
said before any figure.

The project's machines set ``OPENBLAS_CORETYPE=Haswell`` (and
``OPENBLAS_L2_SIZE``) on some processors, for the tests. On an AMD EPYC
with AVX-512 that makes numpy's OpenBLAS run its AVX2 kernels: a 256 x 576
x 1536 float32 product took 3.89 ms forced to Haswell against 2.06 ms on
OpenBLAS's own choice (SkylakeX), and 4.36 ms in torch (issue #37). A
reader's machine sets neither, so a benchmark removes both from its own
process before numpy loads (``use_own_blas``: the process starts again
without them), and prints the machine, the BLAS libraries, their kernels
and thread counts (``describe``). Only benchmarks do this: the tests and CI
keep the variables.
"""

from __future__ import annotations

import os
import platform
import sys

FORCED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
#: the variables that set a BLAS library's threads (VECLIB: Apple's)
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                    "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
#: what the first process removed, for ``describe`` (its children's too)
REMOVED = "PYXIS_BENCH_REMOVED"


def one_blas_thread() -> None:
    """One BLAS thread unless a thread variable says otherwise; only before
    numpy loads (BLAS reads them once, then)."""
    if "numpy" not in sys.modules:
        for var in THREAD_VARIABLES:
            os.environ.setdefault(var, "1")


def use_own_blas() -> None:
    """Start this process again without OPENBLAS_CORETYPE and
    OPENBLAS_L2_SIZE, if either is set (call it before numpy is imported).

    OpenBLAS reads them once, when numpy loads it; re-executing the script
    with an environment that lacks them makes sure nothing of the forced
    kernel is left. A process started with ``python -c`` (benchmarks/run.py's
    children, whose environment run.py has cleaned already) only drops them.
    """
    forced = {name: os.environ[name] for name in FORCED if name in os.environ}
    if not forced:
        return
    env = {k: v for k, v in os.environ.items() if k not in FORCED}
    env[REMOVED] = " ".join(f"{k}={v}" for k, v in forced.items())
    script = sys.argv[0] if sys.argv else ""
    if script and script != "-c" and os.path.isfile(script):
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    if "numpy" in sys.modules:
        raise RuntimeError(f"{', '.join(forced)} set and numpy already loaded: "
                           "call use_own_blas() before importing numpy")
    os.environ.clear()
    os.environ.update(env)


def cpu_model() -> str:
    """The processor's name, as /proc/cpuinfo gives it (else platform's)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(torch=None) -> None:
    """Print the machine and the BLAS this process runs on: the CPU model,
    its logical CPUs, what use_own_blas removed, each BLAS or OpenMP
    library loaded (threadpoolctl: library, version, kernel, threads) and,
    if given, torch's threads and BLAS."""
    from threadpoolctl import threadpool_info

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count()
    print(f"machine: {cpu_model()}; {os.cpu_count()} logical CPUs, {usable} "
          f"usable; load average {os.getloadavg()[0]:.1f}")
    removed = os.environ.get(REMOVED)
    print("environment: " + (f"removed {removed} (OpenBLAS picks its own "
                             "kernel)" if removed else
                             "no OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE"))
    threads = ", ".join(f"{v}={os.environ[v]}" for v in THREAD_VARIABLES[:3]
                        if v in os.environ)
    print(f"thread variables: {threads or 'none set'}")
    for lib in threadpool_info():
        kernel = lib.get("architecture") or "-"
        print(f"  {lib['internal_api']} {lib.get('version') or ''} "
              f"({os.path.basename(lib['filepath'])}): kernel {kernel}, "
              f"{lib['num_threads']} threads"
              + (f", {lib['threading_layer']}" if "threading_layer" in lib
                 else ""))
    if torch is not None:
        blas = "MKL" if torch.backends.mkl.is_available() else "not MKL"
        print(f"  torch {torch.__version__}: {blas}, "
              f"{torch.get_num_threads()} threads "
              f"({torch.get_num_interop_threads()} inter-op)")
    sys.stdout.flush()
