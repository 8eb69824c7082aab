"""Code at the chapter's level: what chapters 1-8 ask a reader to read.

Issue 49, item 2. A learner reading in order lost the thread where a
listing was the package's production function, carrying every later
chapter's options (chapter 1 promised four lines of attention and showed
30). The Annotated Transformer's ``attention()`` is 10 lines; Raschka
grows each class in 10-25 lines the reader types. So in the first eight
chapters of ``_toc.yml`` (qkv to kv_cache), two rules hold for the code a
reader is asked to read, read from the stored notebooks:

What a reader is asked to read: a code cell whose source the page shows
(not tagged remove-cell, remove-input, hide-input or hide-cell; exercise
solutions are hide-cell, folded until opened), and the listing of a
``px.show_source`` cell whose output the page shows open (not hide-output,
hide-cell, remove-output or remove-cell: a folded listing is there for
the reader who wants it, not asked of every reader).

1. Short: at most 15 lines (the stored text, trailing blank lines aside).
   A reader follows a cell of that size line by line beside the maths
   above it; a longer one is a function to fold, or to split.
2. Nothing new in it: every package name it uses, and every keyword
   option it passes to a package function, has been introduced by then.
   Introduced means named in an inline code span of a markdown cell at or
   before that point (``px.memory.kv_cache_bytes`` introduces
   ``kv_cache_bytes``), or written in an earlier code cell or listing that
   a reader reads, in book order (the introduction, then the chapters;
   earlier chapters count). A cell's own first use is not an introduction:
   the sentence before it says what is new. What counts as used:

   * in a code cell: each ``px.`` path, by the name of the package object
     it reaches (``px.memory.kv_cache_bytes``: ``kv_cache_bytes``; modules
     are the way there, not names to introduce), and each keyword of a call
     of a ``px.`` path (``px.scaled_dot_product_attention(...,
     enable_gqa=True)``: ``enable_gqa``), except numpy's own keywords
     (``seed``, ``dtype``, ``axis``, ``keepdims``, ``out``: the book's
     reader knows numpy) and a keyword passed a variable of its own name
     (``seeds=seeds``: the cell shows what it is). Not the display layer
     (``px.plotting``, ``px.widgets``, ``px.show_source`` and the top-level
     names from them, ``px.plot_attention``, ``px.view_grid``, and their
     options): they draw what the cell computed and compute nothing, and a
     chapter keeps figure plumbing out of its cells (test_chapters.py); a
     reader follows ``px.plotting.plot_max_weight(ds, ...)`` without an
     introduction. Nor a name the cell itself defines (the reader's version
     ``def rms_norm`` beside ``px.rms_norm`` introduces the name), nor one
     used only in the cell's ``assert`` (``assert np.array_equal(inv_freq,
     px.rope_frequencies(d_head, rope_theta))``: the assert says what it
     is, the package's version of the code above it; also through a short
     name that only the assert uses), nor one an assert
     holds equal to a function the chapter's reader wrote (``assert
     np.allclose(rope(x, p), px.apply_rope(x, p))``: the issue's "reader's
     version first", asserted equal to the package; the cell may print the
     gap too);
   * in a listing: the package functions and classes it calls (looked up
     in its module: ``causal_mask_mod`` in ``causal_mask``), the methods
     it calls on ``self``, and the options of its own signature (the
     parameters with defaults: ``sdpa_core``'s ``score_mod`` and
     ``sinks``); and a name it reads that nothing in the listing, its
     module or Python defines (``KVCache.update`` shown with
     ``checks=False`` reads ``i``, ``k``, ``v``, which only the folded
     checks define): no reader can introduce those. The door checks
     (helpers of ``pyxis_nb._checks`` and a module's own ``_check...``,
     ``check_positive_int("x", x)``) are not counted: they read as what
     they do, and ``show_source(..., checks=False)`` folds them.

Each test is parametrized by chapter; a failure names the cell.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import re

import pytest

import pyxis_nb as px
from chapter_text import (book_order, cells, chapters, listing_text,
                          shown_object, spans, tags)

FIRST_EIGHT = chapters()[:8]
MAX_LINES = 15
SOURCE_HIDDEN = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
LISTING_FOLDED = {"hide-output", "hide-cell", "remove-output", "remove-cell"}
IDENT = re.compile(r"[A-Za-z_]\w*")
# keywords a reader who knows numpy reads as numpy's own
NUMPY_KEYWORDS = {"seed", "dtype", "axis", "keepdims", "out"}


def read_parts(cell) -> list[tuple[str, str]]:
    """("code", source) and ("listing", text) that a reader reads."""
    if cell.cell_type != "code":
        return []
    parts = []
    if not tags(cell) & SOURCE_HIDDEN:
        parts.append(("code", cell.source))
    if shown_object(cell) and not tags(cell) & LISTING_FOLDED:
        parts.append(("listing", listing_text(cell)))
    return parts


def lines(text: str) -> int:
    return len(text.rstrip().splitlines())


def too_long(path) -> list[str]:
    return [f"{path.name} cell {i}: {kind} of {lines(text)} lines > "
            f"{MAX_LINES}: {text.strip().splitlines()[0][:60]}"
            for i, c in enumerate(cells(path))
            for kind, text in read_parts(c)
            if lines(text) > MAX_LINES]


@pytest.mark.parametrize("path", FIRST_EIGHT, ids=lambda p: p.stem)
def test_code_a_reader_reads_is_short(path):
    bad = too_long(path)
    assert not bad, "\n".join(bad)


# ------------------------------------------------------- introduced names
@functools.cache
def _parse(source: str):
    source = "\n".join(line for line in source.splitlines()
                       if not line.lstrip().startswith(("%", "!")))
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _chain(node) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return None


# the display layer: they draw what the cell computed, they compute nothing
DISPLAY_MODULES = ("pyxis_nb.plotting", "pyxis_nb.widgets",
                   "pyxis_nb.source")


def _package_name(parts: list[str]) -> str | None:
    """The package object a ``px.`` path reaches: the first name after
    the modules (``px.memory.kv_cache_bytes``: ``kv_cache_bytes``); None
    for a module, and for the display layer (``px.plotting.heatmap``,
    ``px.view_grid``)."""
    obj = px
    for part in parts[1:]:
        if inspect.ismodule(obj) and obj.__name__ in DISPLAY_MODULES:
            return None
        obj = getattr(obj, part, None)
        if not inspect.ismodule(obj):
            module = getattr(obj, "__module__", "") or ""
            return None if module in DISPLAY_MODULES else part
    return None  # a module


def used_in_code(source: str, readers: frozenset = frozenset()
                 ) -> list[tuple[str, str]]:
    """(kind, name) of the package names and options a code cell uses;
    ``readers``: the functions the chapter's earlier cells define."""
    tree = _parse(source)
    if tree is None:
        return []
    nodes = list(ast.walk(tree))
    inner = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
    # a name the cell defines is the reader's own: ``def rms_norm`` beside
    # ``px.rms_norm``, the reader's version beside the package's
    own = {n.name for n in nodes
           if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    # the package's counterpart named only in the cell's assert: the assert
    # says what it is (the reader's version, asserted equal to it)
    asserts = [list(ast.walk(a)) for a in nodes if isinstance(a, ast.Assert)]
    checked = {id(n) for a in asserts for n in a}
    # ... or through a short name used only there (``weights_of = px.
    # experiments.random_attention_weights``, to fit the assert on a line)
    loads: dict[str, list] = {}
    for n in nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            loads.setdefault(n.id, []).append(n)
    for a in nodes:
        if isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(
                a.targets[0], ast.Name) and isinstance(a.value, ast.Attribute):
            alias = loads.get(a.targets[0].id, [])
            if alias and all(id(n) in checked for n in alias):
                checked |= {id(n) for n in ast.walk(a.value)}
    used = []
    for node in nodes:
        if id(node) in checked:
            continue
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            parts = _chain(node)
            if parts and parts[0] == "px" and (name := _package_name(parts)):
                used.append(("name", name))
        if isinstance(node, ast.Call):
            parts = _chain(node.func)
            if parts and parts[0] == "px" and _package_name(parts):
                used += [("option", k.arg) for k in node.keywords
                         if k.arg and k.arg not in NUMPY_KEYWORDS
                         and not (isinstance(k.value, ast.Name)
                                  and k.value.id == k.arg)]
    # the package function an assert holds equal to the reader's own
    # function names itself in the whole cell (``gap = rope(x, p) -
    # px.apply_rope(x, p)`` beside ``assert np.allclose(rope(x, p),
    # px.apply_rope(x, p))``)
    mine = own | set(readers)
    paired = {name for a in asserts
              if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                     and n.func.id in mine for n in a)
              for n in a if isinstance(n, ast.Attribute)
              and (parts := _chain(n)) and parts[0] == "px"
              and (name := _package_name(parts))}
    return [u for u in dict.fromkeys(used)
            if u[1] not in own and not (u[0] == "name" and u[1] in paired)]


@functools.cache
def _door_checks() -> frozenset[str]:
    from pyxis_nb import _checks
    return frozenset(n for n in dir(_checks) if not n.startswith("__"))


def _is_package(obj) -> bool:
    return (inspect.isfunction(obj) or inspect.isclass(obj)) and getattr(
        obj, "__module__", "").startswith("pyxis_nb")


def used_in_listing(expr: str, text: str) -> list[tuple[str, str]]:
    """(kind, name) of the helpers, methods and options a listing uses."""
    obj = px
    for part in expr.removeprefix("px.").split("."):
        obj = getattr(obj, part, None)
    tree = _parse(text)
    if obj is None or tree is None:
        return []
    function = obj.__init__ if inspect.isclass(obj) else obj
    namespace = getattr(inspect.unwrap(function), "__globals__", {})
    used = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name):
            target = namespace.get(f.id)
            if _is_package(target) and f.id not in _door_checks() \
                    and not f.id.startswith("_check"):
                used.append(("helper", f.id))
        elif (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
              and f.value.id == "self" and not f.attr.startswith("_check")):
            used.append(("method", f.attr))
    top = tree.body[0] if tree.body else None
    if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = top.args
        with_defaults = a.args[len(a.args) - len(a.defaults):] + [
            k for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
        used += [("option", p.arg) for p in with_defaults
                 if p.arg not in NUMPY_KEYWORDS]
        own = top.name
        used = [(k, n) for k, n in used if n != own]
        used += [("undefined", n) for n in _undefined(top, namespace)]
    return list(dict.fromkeys(used))


def _undefined(function: ast.FunctionDef, namespace: dict) -> list[str]:
    """Names a listing reads that nothing in it, its module or Python
    defines: what only folded lines define (``kv_head_for`` with its
    checks folded reads ``H``, ``H_kv``)."""
    bound = set(namespace) | set(dir(builtins))
    for node in ast.walk(function):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(
                node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                               ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return [n.id for n in ast.walk(function) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load) and n.id not in bound]


def introductions(pages: tuple | None = None) -> dict:
    """For every chapter cell a reader reads: (chapter, index) -> (the
    names introduced before it, the names it uses); ``pages``: the book's,
    in order, unless given."""
    return _introductions(pages or tuple(book_order()))


@functools.cache
def _introductions(pages: tuple) -> dict:
    introduced: set[str] = set()
    out = {}
    for path in pages:
        readers: set[str] = set()  # the reader's versions defined so far
        for i, c in enumerate(cells(path)):
            if c.cell_type == "markdown":
                if "remove-cell" not in tags(c):
                    introduced |= {t for s in spans(c.source)
                                   for t in IDENT.findall(s.code)}
                continue
            parts = read_parts(c)
            uses = []
            for kind, text in parts:
                if kind == "code":
                    uses += used_in_code(text, frozenset(readers))
                    tree = _parse(text)
                    readers |= {n.name for n in ast.walk(tree or ast.Module(
                        body=[], type_ignores=[]))
                        if isinstance(n, ast.FunctionDef)}
                else:
                    uses += used_in_listing(shown_object(c), text)
            out[path.name, i] = (frozenset(introduced), uses)
            for _, text in parts:
                introduced |= set(IDENT.findall(text))
    return out


def _named_later(path, i: int, name: str) -> str:
    """" (the prose first names it in cell N)", where it does."""
    for j, c in enumerate(cells(path)):
        if j > i and c.cell_type == "markdown" and any(
                name in IDENT.findall(s.code) for s in spans(c.source)):
            return f" (the prose first names it in cell {j})"
    return ""


def not_introduced(path, pages: tuple | None = None) -> list[str]:
    bad = []
    for (name, i), (introduced, uses) in introductions(pages).items():
        if name != path.name:
            continue
        new = [f"{kind} {n}{_named_later(path, i, n)}"
               for kind, n in uses if n not in introduced]
        if new:
            first = cells(path)[i].source.strip().splitlines()[0][:50]
            bad.append(f"{name} cell {i} ({first}): not introduced "
                       f"before: {', '.join(new)}")
    return bad


@pytest.mark.slow
@pytest.mark.parametrize("path", FIRST_EIGHT, ids=lambda p: p.stem)
def test_code_a_reader_reads_uses_only_introduced_names(path):
    bad = not_introduced(path)
    assert not bad, "\n".join(bad)


def test_the_walk_sees_the_chapters_code():
    """The parser finds the code of the first eight chapters and the
    package names it uses (a guard against a rule that checks nothing)."""
    seen = [u for (name, _), (_, uses) in introductions().items()
            if name in {p.name for p in FIRST_EIGHT} for u in uses]
    assert len(FIRST_EIGHT) == 8
    assert len(seen) > 100, len(seen)


def test_the_rules_catch_what_they_say(tmp_path):
    """A long visible cell, a name and an option used before the prose
    names them, and a listing that reads what only folded checks define,
    fail; the same cells after a sentence that names them pass."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    long_cell = "\n".join(f"x{k} = {k}" for k in range(16))
    hidden = nbformat.v4.new_code_cell(long_cell)
    hidden.metadata["tags"] = ["hide-input"]
    update = nbformat.v4.new_code_cell(
        "px.show_source(px.multihead.kv_head_for, checks=False)")
    update.outputs = [nbformat.v4.new_output("execute_result", {
        "text/plain": px.show_source(px.multihead.kv_head_for,
                                     checks=False).source},
        execution_count=1)]
    nb.cells = [
        nbformat.v4.new_code_cell(long_cell),              # 0: 16 lines
        hidden,                                            # 1: folded
        nbformat.v4.new_code_cell(
            "m = px.causal_mask(2, 5, align='top_left')"),  # 2: both new
        nbformat.v4.new_markdown_cell(
            "`px.causal_mask` takes `align`; "
            "`px.multihead.kv_head_for`:"),
        nbformat.v4.new_code_cell(
            "m = px.causal_mask(2, 5, align='top_left')"),  # 4: introduced
        update,                                            # 5: H, H_kv
    ]
    path = tmp_path / "chapter.ipynb"
    nbformat.write(nb, path)
    assert [b.split(":")[0] for b in too_long(path)] == [
        "chapter.ipynb cell 0"]
    bad = not_introduced(path, (path,))
    assert len(bad) == 2, bad
    assert bad[0].startswith("chapter.ipynb cell 2") and \
        "name causal_mask" in bad[0] and "option align" in bad[0]
    assert bad[1].startswith("chapter.ipynb cell 5") and all(
        f"undefined {v}" in bad[1] for v in ("H", "H_kv"))
