"""Run every benchmark in this folder: ``make bench`` (or ``make bench BENCH=bench_tiled``).

Each ``bench_*.py`` has a ``main()`` that measures in one run and prints its
ratios; it returns False when a target is missed. Each runs in its own Python
process, so one benchmark's thread settings (BLAS, torch) never leak into the
next. Targets live here, never in timed unit tests.

What each prints (it begins with the machine it ran on) goes to two files:
``_build/bench/results.txt``, the whole run as the terminal showed it (out
of git), and ``benchmarks/results.md`` (committed), one section a
benchmark, which the website shows on its Benchmarks page
(book/benchmarks.md includes it). A run of some benchmarks rewrites their
sections alone. The machine lines say where the figures come from; no
date is written.

Each runs on the BLAS kernel a reader's machine picks: this process and
each benchmark's drop OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE before numpy
loads, and each prints the CPU, its BLAS libraries, their kernels and
thread counts before its figures (benchmarks/machine.py).
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).parent
LOG = HERE.parent / "_build" / "bench" / "results.txt"
RESULTS = HERE / "results.md"
# the website shows 79 columns of code without a sideways scroll bar
# (tests/test_website.py); a longer line is wrapped, its rest indented
WIDTH = 79
HEADER = (
    "<!-- What the benchmarks printed in the last `make bench`, written by\n"
    "benchmarks/run.py: one section a benchmark, the machine it ran on first;\n"
    f"lines over {WIDTH} columns wrapped, their rest indented. "
    "`make bench BENCH=bench_x`\n"
    "rewrites that benchmark's section alone. The website shows this file\n"
    "on its Benchmarks page (book/benchmarks.md). -->\n")
# a progress bar (transformers' "Loading weights"): in the terminal only
PROGRESS = re.compile(r"^.*\d+%\|.*\| *\d+/\d+ \[.*\]$")
# a section: its heading, the benchmark's name in code
SECTION = re.compile(r"^### `(bench_\w+)`$", re.M)


def verdict(output: str, returncode: int) -> str:
    """The last line of a benchmark's section: were its targets met? (Each
    target's line starts PASS or FAIL.)"""
    passed = len(re.findall(r"^PASS\b", output, re.M))
    failed = len(re.findall(r"^FAIL\b", output, re.M))
    if returncode != 0 and not failed:
        return f"result: stopped with exit status {returncode}"
    if failed:
        return f"result: {failed} of {passed + failed} targets missed"
    if passed:
        return f"result: every target met ({passed} of {passed})"
    return "result: no target measured"


def wrap(line: str) -> list[str]:
    """``line`` in lines of at most WIDTH columns, broken at spaces (a
    longer word inside); the rest of a long line indented 4 more than the
    line itself."""
    if len(line) <= WIDTH:
        return [line]
    indent = " " * (len(line) - len(line.lstrip(" ")) + 4)
    return textwrap.wrap(line, WIDTH, subsequent_indent=indent,
                         break_on_hyphens=False)


def section(name: str, output: str, returncode: int) -> str:
    """One benchmark's section of results.md: its name, then what it
    printed (less progress bars) and its verdict as a text block."""
    lines = [w for line in output.strip("\n").splitlines()
             if not PROGRESS.match(line) for w in wrap(line.rstrip())]
    body = "\n".join(lines + ["", verdict(output, returncode)])
    return f"### `{name}`\n\n```text\n{body}\n```\n"


def sections(text: str) -> dict[str, str]:
    """results.md's sections by benchmark name, in the file's order."""
    starts = [(m.start(), m.group(1)) for m in SECTION.finditer(text)]
    ends = [s for s, _ in starts[1:]] + [len(text)]
    return {name: text[start:end].strip("\n") + "\n"
            for (start, name), end in zip(starts, ends)}


def merge(old: str, new: dict[str, str], names: list[str]) -> str:
    """results.md with the sections in ``new`` replacing their old ones;
    ``names``: every benchmark there is, in order (others' sections go)."""
    kept = sections(old)
    body = [new.get(name) or kept.get(name) for name in names]
    return HEADER + "".join(f"\n{s}" for s in body if s)


def run(path: Path, say) -> tuple[str, int]:
    """Run one benchmark in a Python process of its own; what it printed
    (also passed to ``say`` line by line) and its exit status."""
    code = (
        "import importlib.util, sys\n"
        f"sys.path.insert(0, {str(HERE)!r})  # benchmarks/timing.py\n"
        f"spec = importlib.util.spec_from_file_location({path.stem!r}, {str(path)!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "sys.exit(1 if module.main() is False else 0)\n"
    )
    printed = []
    with subprocess.Popen([sys.executable, "-c", code], text=True,
                          stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT) as bench:
        for line in bench.stdout:
            say(line)
            printed.append(line)
    return "".join(printed), bench.returncode


def main(only: list[str]) -> int:
    from machine import use_own_blas  # benchmarks/machine.py

    # without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (this process starts
    # again if either is set); each benchmark's process inherits the
    # environment
    use_own_blas()
    LOG.parent.mkdir(parents=True, exist_ok=True)
    log = LOG.open("w")

    def say(line: str) -> None:
        print(line, end="", flush=True)
        log.write(line)
        log.flush()

    names = [p.stem for p in sorted(HERE.glob("bench_*.py"))]
    unknown = sorted(set(only) - set(names))
    if unknown:
        raise ValueError(f"BENCH: got {', '.join(unknown)}; the benchmarks "
                         f"are {', '.join(names)}")
    failed, new = [], {}
    for name in names:
        if only and name not in only:
            continue
        say(f"\n=== {name} ===\n")
        output, returncode = run(HERE / f"{name}.py", say)
        new[name] = section(name, output, returncode)
        if returncode != 0:
            failed.append(name)
        # after each benchmark: an interrupted run keeps what it measured
        old = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
        RESULTS.write_text(merge(old, new, names), encoding="utf-8")
    say(f"\ntargets missed: {', '.join(failed)}\n" if failed
        else "\nall benchmark targets met\n")
    print(f"(written to {LOG} and {RESULTS})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main(sys.argv[1:]))
