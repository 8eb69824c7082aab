"""The chapters as a reader meets them, for tests that read the book's text.

Read, never executed: the stored notebooks (and ``book/intro.md``) in the
order of ``_toc.yml``; the inline code spans of their markdown, parsed as
the website's MyST parser parses them (CommonMark, tables, dollar maths, so a
backtick inside ``$...$`` is maths and a fenced block is not prose); what a
code cell shows (its source, or for ``px.show_source`` the stored listing);
and which cells the website shows, folds or removes.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"

# cell tags that take a listing off the page (folded ones stay readable)
OUTPUT_REMOVED = {"remove-cell", "remove-output"}

SOURCE_LABEL = re.compile(r"\*\*Source:\*\*\s*`([^`]+)`")
SHOW_SOURCE = re.compile(r"\bpx\.show_source\(\s*([\w.]+)")


def book_order() -> list[Path]:
    """intro.md, then every chapter, in the order of ``_toc.yml``."""
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    root = re.search(r"^root:\s*(\S+)", toc, re.M).group(1)
    files = re.findall(r"^\s*-\s*file:\s*(\S+)", toc, re.M)
    out = []
    for name in [root] + files:
        for ext in (".md", ".ipynb"):
            if (ROOT / (name + ext)).exists():
                out.append(ROOT / (name + ext))
                break
    return out


def chapters() -> list[Path]:
    """The notebooks, in book order."""
    return [p for p in book_order() if p.suffix == ".ipynb"]


@functools.cache
def cells(path: Path) -> list:
    """A notebook's cells; a markdown page is one markdown cell."""
    if path.suffix == ".md":
        return [nbformat.v4.new_markdown_cell(path.read_text("utf-8"))]
    # the stored JSON as it is (nbformat's schema check is another test's
    # business, and takes most of the time)
    nb = nbformat.from_dict(json.loads(path.read_text("utf-8")))
    for cell in nb.cells:  # nbformat stores a source as a list of lines
        if not isinstance(cell.source, str):
            cell.source = "".join(cell.source)
        for out in cell.get("outputs", []):
            for key, value in out.get("data", {}).items():
                if isinstance(value, list):
                    out["data"][key] = "".join(value)
            if isinstance(out.get("text"), list):
                out["text"] = "".join(out["text"])
    return nb.cells


def tags(cell) -> set[str]:
    return set(cell.metadata.get("tags", []))


# ------------------------------------------------------------ markdown
@functools.cache
def _parser():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    return MarkdownIt("commonmark").enable("table").use(dollarmath_plugin)


@dataclass(frozen=True)
class Span:
    """One inline code span of a markdown cell.

    ``before`` and ``after`` are the text of its sentence on either side
    (other spans written with their backticks, maths as ``$..$``);
    ``block`` is the whole paragraph, list item or table cell;
    ``column`` the header of a table cell's column ("" outside tables);
    ``heading`` the last heading above it in the same source ("" if none).
    """
    code: str
    before: str
    after: str
    block: str
    column: str = ""
    heading: str = ""


def _inline_text(children) -> list[tuple[str, str]]:
    """(kind, text) pieces of an inline token: "code" or "text"."""
    out = []
    for t in children:
        if t.type == "code_inline":
            out.append(("code", t.content))
        elif t.type in ("text", "html_inline"):
            out.append(("text", t.content))
        elif t.type in ("softbreak", "hardbreak"):
            out.append(("text", " "))
        elif t.type in ("math_inline", "math_inline_double"):
            out.append(("text", f"${t.content}$"))
        elif t.type == "image":
            out.append(("text", t.content))
    return out


# a sentence ends at . ! ? followed by a space (never inside a span)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def _sentence(text_before: str, text_after: str) -> tuple[str, str]:
    parts = _SENTENCE_END.split(text_before)
    before = parts[-1] if parts else ""
    m = _SENTENCE_END.search(text_after)
    after = text_after[:m.start()] if m else text_after
    return before, after


@functools.cache
def _tokens(source: str) -> list:
    return _parser().parse(source)


@functools.cache
def headings(source: str) -> list[str]:
    """The headings of a markdown source, in order."""
    tokens = _tokens(source)
    return [tokens[n + 1].content for n, t in enumerate(tokens)
            if t.type == "heading_open"]


@functools.cache
def spans(source: str) -> list[Span]:
    """Every inline code span of a markdown source, with its sentence."""
    out = []
    headers, column, in_head, heading = [], "", False, ""
    tokens = _tokens(source)
    for n, token in enumerate(tokens):
        if token.type == "heading_open":
            heading = tokens[n + 1].content
        if token.type == "thead_open":
            headers, in_head = [], True
        elif token.type == "thead_close":
            in_head = False
        elif token.type == "tr_open":
            cell_no = -1
        elif token.type in ("th_open", "td_open"):
            cell_no += 1
            column = (headers[cell_no] if token.type == "td_open"
                      and cell_no < len(headers) else "")
        elif token.type in ("th_close", "td_close", "table_close"):
            column = ""
        if token.type != "inline" or not token.children:
            continue
        if in_head:
            headers.append(token.content)
        pieces = _inline_text(token.children)
        # the text of the block, with code spans in backticks; positions
        # of each span in it
        text, where = "", []
        for kind, s in pieces:
            if kind == "code":
                where.append((len(text), s))
                text += f"`{s}`"
            else:
                text += s
        for start, code in where:
            end = start + len(code) + 2
            before, after = _sentence(text[:start], text[end:])
            out.append(Span(code, before, after, text, column, heading))
    return out


def source_label(cell) -> str | None:
    """The object a "**Source:** `X`" label names, if the cell has one."""
    if cell.cell_type != "markdown":
        return None
    m = SOURCE_LABEL.search(cell.source)
    return m.group(1) if m else None


def is_label_only(cell) -> bool:
    """A markdown cell that is a Source label and nothing else before it."""
    return (cell.cell_type == "markdown"
            and cell.source.lstrip().startswith("**Source:**"))


# ---------------------------------------------------------- code cells
def shown_object(cell) -> str | None:
    """``X`` of the cell's ``px.show_source(X, ...)`` call, if it has one."""
    if cell.cell_type != "code":
        return None
    m = SHOW_SOURCE.search(cell.source)
    return m.group(1) if m else None


def listing_text(cell) -> str:
    """The listing a ``px.show_source`` cell stored: its plain text."""
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if data.get("text/plain"):
            return data["text/plain"]
        if data.get("text/markdown"):  # a fenced python block
            return re.sub(r"^```\w*\n|\n?```\s*$", "", data["text/markdown"])
    return ""


def displayed(cell) -> str:
    """The code a reader can read in a code cell, folded or not: its source
    (unless removed), and a show_source listing (unless removed)."""
    parts = []
    if not tags(cell) & {"remove-cell", "remove-input"}:
        parts.append(cell.source)
    if shown_object(cell) and not tags(cell) & OUTPUT_REMOVED:
        parts.append(listing_text(cell))
    return "\n".join(parts)


def listing_group(cell_list, i: int) -> list[int]:
    """The cells that markdown cell ``i`` introduces: the code cells and
    Source-label cells that follow it, up to the next cell of prose."""
    group = []
    for j in range(i + 1, len(cell_list)):
        c = cell_list[j]
        if c.cell_type == "code" or is_label_only(c):
            group.append(j)
        else:
            break
    return [j for j in group if cell_list[j].cell_type == "code"]
