"""The stored chapters fit the website's column (read, never executed).

At 1280 px the site shows 79 columns of code without a sideways scroll bar,
so every line of chapter code and every line of printed text output fits in
79 characters; code cells stay short (figure plumbing lives in
``pyxis_nb/plotting.py``); and every figure carries a one-sentence alt text.
(No MyST directive in markdown: tests/test_portable.py.)
"""

from __future__ import annotations

import ast
import re
import statistics
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))
WIDTH = 79
MEDIAN_LINES = 8
MAX_LINES = 20
EXERCISE_TAG = "hide-cell"
WIDGET = "application/vnd.jupyter.widget-view+json"
# a result that has one of these is shown by the site in that form, not as
# its text/plain repr
RICH = (WIDGET, "text/markdown", "text/html", "image/png", "image/svg+xml",
        "image/jpeg")
FILE_NAME = re.compile(r"^\S+\.(png|jpe?g|svg|gif)$", re.IGNORECASE)


def _read(path):
    return nbformat.read(path, as_version=4)


def _code_cells(nb):
    return [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]


def _text_lines(output):
    """The lines the site prints as plain text for one output."""
    if output.output_type == "stream":
        return output.text.splitlines()
    if output.output_type in ("execute_result", "display_data"):
        data = output.get("data", {})
        if "text/plain" in data and not any(k in data for k in RICH):
            return data["text/plain"].splitlines()
    return []


def _long(lines):
    return [(n, line) for n, line in enumerate(lines, 1) if len(line) > WIDTH]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_code_lines_fit(path):
    bad = [f"{path.name} cell {i} line {n} ({len(line)} chars): {line}"
           for i, c in _code_cells(_read(path))
           for n, line in _long(c.source.splitlines())]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_printed_lines_fit(path):
    bad = [f"{path.name} cell {i} output line {n} ({len(line)} chars): {line}"
           for i, c in _code_cells(_read(path))
           for out in c.outputs
           for n, line in _long(_text_lines(out))]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_code_cells_are_short(path):
    cells = _code_cells(_read(path))
    sizes = [len(c.source.splitlines()) for _, c in cells]
    median = statistics.median(sizes)
    assert median <= MEDIAN_LINES, f"{path.name}: median {median} lines"
    bad = [f"{path.name} cell {i}: {len(c.source.splitlines())} lines, "
           f"first line: {c.source.splitlines()[0]}"
           for i, c in cells
           if len(c.source.splitlines()) > MAX_LINES
           and EXERCISE_TAG not in c.metadata.get("tags", [])]
    assert not bad, "\n".join(bad)


def _has_figure(cell):
    """A matplotlib figure; not a widget's stored picture, whose frames carry
    their own alt text (its view is kept in the output's metadata)."""
    return any("image/png" in out.get("data", {})
               and WIDGET not in out.get("data", {})
               and "pyxis_widget_view" not in out.get("metadata", {})
               for out in cell.outputs)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_own_figures_read_on_a_phone(path):
    """A figure a chapter draws itself goes through px.plotting.show or
    px.plotting.legible, as the package's own figures do: no wider than the
    column, no text under 9 px on a 390-px phone (issue #41, item 2;
    tests/test_plotting.py measures that for every figure of the package)."""
    bad = [f"{path.name} cell {i}: {c.source.splitlines()[0]}"
           for i, c in _code_cells(_read(path))
           if "plt.subplots(" in c.source
           and not re.search(r"px\.plotting\.(show|legible)\(", c.source)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_figures_have_alt_text(path):
    bad = []
    for i, c in _code_cells(_read(path)):
        if not _has_figure(c):
            continue
        alt = c.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
        alt = alt.strip() if isinstance(alt, str) else ""
        first = c.source.splitlines()[0] if c.source else ""
        if not alt or FILE_NAME.match(alt) or len(alt.split()) < 4:
            bad.append(f"{path.name} cell {i}: alt text {alt!r} "
                       f"(cell begins: {first})")
    assert not bad, "\n".join(bad)


def _title(path):
    """A chapter's first heading: the title the website's sidebar shows."""
    first = _read(path).cells[0].source.splitlines()[0]
    assert first.startswith("# "), f"{path.name} starts with {first!r}"
    return first[2:].strip()


def test_intro_table_names_each_chapter_by_its_title():
    """The introduction's table of chapters links every chapter once, under
    the title the sidebar gives it."""
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[([^\]]+)\]\((\w+)\.ipynb\) \|", intro, re.M)
    listed = {name: text for text, name in rows}
    assert sorted(listed) == sorted(p.stem for p in CHAPTERS)
    wrong = [f"{name}: intro says {text!r}, the chapter is titled "
             f"{_title(ROOT / 'book' / f'{name}.ipynb')!r}"
             for name, text in listed.items()
             if text != _title(ROOT / "book" / f"{name}.ipynb")]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_unchecked_outputs_assert_their_bound(path):
    """nbval does not compare the output of a cell tagged
    nbval-ignore-output, so the cell must check its claim itself (the
    introduction promises this): it holds an ``assert`` statement."""
    bad = []
    for i, c in _code_cells(_read(path)):
        if "nbval-ignore-output" not in c.metadata.get("tags", []):
            continue
        lines = [l for l in c.source.splitlines() if not l.startswith("%")]
        tree = ast.parse("\n".join(lines))
        if not any(isinstance(node, ast.Assert) for node in ast.walk(tree)):
            bad.append(f"{path.name} cell {i}: no assert")
    assert not bad, "\n".join(bad)


def _ignored_cells():
    """Every code cell tagged nbval-ignore-output: (chapter, index, cell)."""
    return [(path.name, i, c) for path in CHAPTERS
            for i, c in _code_cells(_read(path))
            if "nbval-ignore-output" in c.metadata.get("tags", [])]


# A cell whose output nbval does not compare says why (rounding noise, an
# optional library) and what it asserts instead, in its metadata:
# ``"pyxis": {"ignore_output_because": "..."}``. Not in a comment: the
# reader's code stays the code (issue 49; it was a first-line comment).
def _reason(cell) -> str:
    return cell.metadata.get("pyxis", {}).get("ignore_output_because", "")


IGNORED = [pytest.param(c, id=f"{name}-cell-{i}")
           for name, i, c in _ignored_cells()]


def test_ignored_cells_are_listed():
    """The list the next test walks: every ignored cell of every chapter
    (21 when issue 29 was filed)."""
    listed = [f"{name} cell {i}" for name, i, _ in _ignored_cells()]
    assert 0 < len(listed) <= 25, listed


@pytest.mark.parametrize("cell", IGNORED)
def test_ignored_cell_says_why(cell):
    """nbval-ignore-output hides a cell's printed numbers from the check, so
    the cell's metadata says why its output may change from one machine to
    another, and what it asserts instead, in at least five words."""
    assert len(_reason(cell).split()) >= 5, cell.source.splitlines()[0]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_code_cell_carries_the_test_tag_as_a_comment(path):
    """nbval reads the cell's tag; a comment saying it again is test
    machinery in the reader's code."""
    bad = [f"{path.name} cell {i}" for i, c in _code_cells(_read(path))
           if "nbval-ignore-output" in c.source]
    assert not bad, "\n".join(bad)


# a TeX command or a dollar sign left in plain text: maths MyST did not parse
RAW_TEX = re.compile(r"\\[a-zA-Z]+|\$")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_markdown_maths_parses_as_maths(path):
    """Every ``$..$`` and ``$$..$$`` of a chapter is maths to the website's
    MyST parser, not text: a line break inside inline maths that starts a
    line with "- " turns it into a list item and leaves raw TeX on the page
    (issue #21), though JupyterLab renders the same cell right."""
    mdit = pytest.importorskip("myst_parser.parsers.mdit")
    from myst_parser.config.main import MdParserConfig
    from myst_parser.mdit_to_docutils.base import DocutilsRenderer

    parser = mdit.create_md_parser(
        MdParserConfig(enable_extensions={"dollarmath", "amsmath"}),
        DocutilsRenderer)
    cells = enumerate(_read(path).cells)
    bad = [f"{path.name} cell {i}: {child.content!r}"
           for i, c in cells if c.cell_type == "markdown"
           for token in parser.parse(c.source)
           for child in token.children or []
           if child.type == "text" and RAW_TEX.search(child.content)]
    assert not bad, "\n".join(bad)


# ---- exercises: the reader's own check, the solution hidden (issue 49) -----
# An exercise is a markdown line "**N.**" (or "**N. Title.**") after the
# chapter's "## Exercises" heading. The reader gets a visible cell that calls
# px.exercises.check("<chapter>", N, answer); the solution (after a
# "**Solution**" label the site removes) is folded until opened, and asserts
# the same check on its own answer, so the check and the solution agree.
EXERCISE_LINE = re.compile(r"^\*\*(\d+)\.", re.M)
HIDDEN = {"hide-cell", "remove-cell"}
# chapters whose exercises have no reader's check yet; each leaves the set
# when its chapter gets them (strict: an xpass fails)
CHECKS_PENDING: set[str] = set()


def _exercises(path):
    """{N: the cells from exercise N's text to the next exercise}."""
    cells = _read(path).cells
    start = next((i for i, c in enumerate(cells) if c.cell_type == "markdown"
                  and re.search(r"^## Exercises", c.source, re.M)), None)
    if start is None:
        return {}
    marks = [(int(m), i) for i, c in enumerate(cells[start:], start)
             if c.cell_type == "markdown"
             for m in EXERCISE_LINE.findall(c.source)]
    ends = [i for _, i in marks[1:]] + [len(cells)]
    return {n: cells[i:end] for (n, i), end in zip(marks, ends)}


def _tags(cell):
    return set(cell.metadata.get("tags", []))


def _solution(cells):
    """The code cells after the exercise's "**Solution**" label."""
    label = next((i for i, c in enumerate(cells) if c.cell_type == "markdown"
                  and c.source.startswith("**Solution**")), None)
    return [] if label is None else [c for c in cells[label + 1:]
                                     if c.cell_type == "code"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_solution_is_hidden_until_opened(path):
    bad = []
    for n, cells in _exercises(path).items():
        labels = [c for c in cells if c.cell_type == "markdown"
                  and c.source.startswith("**Solution**")]
        if not labels:
            bad.append(f"exercise {n}: no **Solution** label")
        bad += [f"exercise {n}: the Solution label is shown" for c in labels
                if "remove-cell" not in _tags(c)]
        bad += [f"exercise {n}: a solution cell is shown, first line: "
                f"{c.source.splitlines()[0]}" for c in _solution(cells)
                if not _tags(c) & HIDDEN]
    assert not bad, f"{path.name}: " + "\n".join(bad)


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=[pytest.mark.xfail(
        strict=True, reason="the reader's checks are not written yet")]
        if p.stem in CHECKS_PENDING else []) for p in CHAPTERS],
    ids=lambda p: p.name)
def test_every_exercise_has_a_reader_check(path):
    exercises = _exercises(path)
    assert exercises, f"{path.name}: no exercises found"
    bad = []
    for n, cells in exercises.items():
        call = re.compile(
            rf"px\.exercises\.check\(\s*[\"']{path.stem}[\"'],\s*{n}\b")
        solution = _solution(cells)
        readers = [c for c in cells if c.cell_type == "code"
                   and c not in solution and not _tags(c) & HIDDEN
                   and call.search(c.source)]
        if not readers:
            bad.append(f"exercise {n}: no visible cell calls "
                       f"px.exercises.check({path.stem!r}, {n}, ...)")
        if not any(re.search(r"assert\s+" + call.pattern, c.source)
                   for c in solution):
            bad.append(f"exercise {n}: the solution does not assert "
                       "its own answer with the check")
    assert not bad, f"{path.name}: " + "\n".join(bad)
