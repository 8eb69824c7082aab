"""The website's Benchmarks page shows the last `make bench` (issue 50, item 5).

``make bench`` (benchmarks/run.py) writes what each benchmark printed, the
machine it ran on first, to ``benchmarks/results.md``, one section a
benchmark; ``book/benchmarks.md``, the last page of the table of contents,
says what each measures and includes that file. Checked here, reading
files only: the page is in ``_toc.yml`` after the closing page and
includes the results; the results have a section for every benchmark,
each with its machine line, a PASS or FAIL line and its result, in lines
that fit the site's 79 columns; nothing in them is prose the Japanese
edition would have to translate but the sections' headings, which its
catalog holds; and run.py rewrites only the sections of the benchmarks it
ran.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import polib
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "book" / "benchmarks.md"
RESULTS = ROOT / "benchmarks" / "results.md"
CATALOG = ROOT / "locale" / "ja" / "LC_MESSAGES" / "book" / "benchmarks.po"
BENCHMARKS = sorted(p.stem for p in (ROOT / "benchmarks").glob("bench_*.py"))


def _run_module():
    """benchmarks/run.py as a module (importing it runs nothing)."""
    spec = importlib.util.spec_from_file_location(
        "bench_run", ROOT / "benchmarks" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run = _run_module()


def _toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [c["file"] for part in toc["parts"]
                            for c in part["chapters"]]


def _blocks(text: str) -> list[str]:
    """The text blocks (```text ... ```) of a Markdown file."""
    return re.findall(r"^```text\n(.*?)^```$", text, re.M | re.S)


def test_the_page_comes_after_the_closing_page():
    files = _toc_files()
    assert "book/benchmarks" in files, "book/benchmarks is not in _toc.yml"
    assert files.index("book/benchmarks") == files.index("book/closing") + 1
    assert PAGE.is_file()


def test_the_page_includes_the_results():
    page = PAGE.read_text(encoding="utf-8")
    assert re.search(r"^```\{include\} \.\./benchmarks/results\.md\n```$",
                     page, re.M), "book/benchmarks.md does not include the results"
    for name in BENCHMARKS:  # each one is explained
        assert f"(`{name}`)" in page, f"the page does not explain {name}"


def test_every_benchmark_has_its_section():
    found = run.sections(RESULTS.read_text(encoding="utf-8"))
    assert list(found) == BENCHMARKS, (
        f"benchmarks/results.md has {list(found)}, the benchmarks are "
        f"{BENCHMARKS}: run `make bench`")


@pytest.mark.parametrize("name", BENCHMARKS)
def test_each_section_says_where_it_ran_and_what_it_found(name):
    section = run.sections(RESULTS.read_text(encoding="utf-8"))[name]
    [block] = _blocks(section)
    lines = block.splitlines()
    head = " ".join(line.strip() for line in lines[:3])  # wrapped or not
    assert lines[0].startswith("machine: ") and "logical CPUs" in head \
        and "load average" in head, (
            f"{name}: the section does not start with the machine: {head!r}")
    assert re.search(r"^(PASS|FAIL): ", block, re.M), f"{name}: no target line"
    assert re.fullmatch(r"result: .+", lines[-1]), f"{name}: no result line"


def test_results_fit_the_page_and_need_no_translation():
    """Every line of a block fits the website's 79 columns
    (tests/test_website.py checks the built page); outside the blocks
    there is only the file's comment and each section's heading, which
    the Japanese catalog holds (so the catalog does not change with every
    run)."""
    text = RESULTS.read_text(encoding="utf-8")
    wide = [line for block in _blocks(text) for line in block.splitlines()
            if len(line) > run.WIDTH]
    assert wide == [], f"lines over {run.WIDTH} columns: {wide[:3]}"
    outside = re.sub(r"^```text\n.*?^```$", "", text, flags=re.M | re.S)
    outside = re.sub(r"<!--.*?-->", "", outside, flags=re.S)
    prose = [line for line in outside.splitlines()
             if line.strip() and not run.SECTION.fullmatch(line)]
    assert prose == [], f"prose in benchmarks/results.md: {prose[:3]}"
    translated = {e.msgid: e.msgstr for e in polib.pofile(str(CATALOG))}
    for name in BENCHMARKS:
        assert translated.get(f"`{name}`") == f"`{name}`", (
            f"{CATALOG.name} lacks the heading of {name}: `make gettext "
            "NB=book/benchmarks.md`, then translate")


def test_a_run_of_one_benchmark_rewrites_its_section_alone():
    old = run.merge("", {n: run.section(n, "machine: A\nPASS: x\n", 0)
                         for n in ("bench_a", "bench_b")}, ["bench_a", "bench_b"])
    new = run.merge(old, {"bench_b": run.section("bench_b", "machine: B\nFAIL: y\n", 1)},
                    ["bench_a", "bench_b", "bench_c"])
    found = run.sections(new)
    assert list(found) == ["bench_a", "bench_b"]
    assert "machine: A" in found["bench_a"] and "result: every target met" in found["bench_a"]
    assert "machine: B" in found["bench_b"] and "1 of 1 targets missed" in found["bench_b"]
    # a benchmark that is no longer there loses its section
    assert list(run.sections(run.merge(new, {}, ["bench_b"]))) == ["bench_b"]


def test_long_lines_are_wrapped_at_spaces():
    line = "  decode " + " ".join(["123.4 tok/s"] * 12)
    wrapped = run.wrap(line)
    assert len(wrapped) > 1 and all(len(w) <= run.WIDTH for w in wrapped)
    assert " ".join(w.strip() for w in wrapped) == line.strip()
    assert all(w.startswith(" " * 6) for w in wrapped[1:])  # its indent, and 4


def test_progress_bars_stay_in_the_terminal():
    bar = "Loading weights: 100%|██████████| 46/46 [00:00<00:00, 2818.71it/s]"
    section = run.section("bench_a", f"machine: A\n{bar}\nPASS: x\n", 0)
    assert "Loading weights" not in section and "PASS: x" in section
