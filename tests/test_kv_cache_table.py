"""The KV-cache chapter's table of Hugging Face equivalents runs as written.

book/kv_cache.ipynb sets `Qwen3Attention.forward`'s lines beside the
`pyxis_nb` lines that do the same (issue 49, items 1 and 7): the table a
reader copies from. These tests read the table out of the notebook, so it
fails as soon as the table goes stale:

- every `pyxis_nb` line, run in order after the chapter's cell that built
  the small layer, runs (names resolve, keywords are accepted) and together
  they compute what the layer's own forward computes;
- every Hugging Face line of the table, and every line of the torch-idioms
  notes quoted from transformers, occurs in the installed transformers'
  source (skipped where transformers is not installed);
- the cache argument the prose names is the one both layers take.
"""

import ast
import importlib.util
import inspect
import json
import pathlib
import re

import numpy as np
import pytest

import pyxis_nb as px

BOOK = pathlib.Path(__file__).resolve().parent.parent / "book"
CHAPTER = BOOK / "kv_cache.ipynb"
SETUP_CELL = "kv-walk-setup"  # builds attn, new, cache, cache_fwd, d_head
TABLE_HEAD = re.compile(r"^\| *step *\| *Hugging Face", re.M)
IDIOMS_HEAD = "### The torch idioms of `modeling_qwen3.py`"
SPAN = re.compile(r"`([^`]+)`")


def _cells():
    return json.loads(CHAPTER.read_text("utf-8"))["cells"]


def _source(cell):
    return "".join(cell["source"])


def _markdown(find):
    found = [_source(c) for c in _cells() if c["cell_type"] == "markdown"
             and find(_source(c))]
    assert len(found) == 1, f"{CHAPTER.name}: {len(found)} such cells"
    return found[0]


def _split_row(line):
    """A table row's cells; a | inside a code span does not split."""
    cells, cell, in_code = [], "", False
    for ch in line.strip().strip("|"):
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += ch
    return cells + [cell.strip()]


def table_rows():
    """[(step, Hugging Face cell, pyxis_nb cell)] of the chapter's table."""
    text = _markdown(lambda s: TABLE_HEAD.search(s))
    lines = text[TABLE_HEAD.search(text).start():].splitlines()
    rows = []
    for line in lines[2:]:  # after the heading row and the |---| row
        if not line.startswith("|"):
            break
        rows.append(tuple(_split_row(line)))
    assert rows and all(len(r) == 3 for r in rows), rows
    return rows


def test_the_table_has_the_six_steps():
    steps = [r[0] for r in table_rows()]
    assert [s.split(".")[0] for s in steps] == list("123456"), steps


def _namespace():
    setup = [c for c in _cells() if c.get("id") == SETUP_CELL]
    assert setup, (f"{CHAPTER.name}: no cell {SETUP_CELL!r}, the one the "
                   "table says its lines run after")
    ns = {"np": np, "px": px}
    exec(_source(setup[0]), ns)
    return ns


def test_every_pyxis_line_runs_as_written_and_equals_forward():
    ns = _namespace()
    ran = []
    for step, _, ours in table_rows():
        for span in SPAN.findall(ours):
            try:
                exec(compile(span, f"<table, step {step}>", "exec"), ns)
            except Exception as error:  # the table went stale
                pytest.fail(f"step {step!r}: `{span}` raised "
                            f"{type(error).__name__}: {error}")
            ran.append(span)
    assert any(s.startswith("out = px.merge_heads") for s in ran), ran
    expected = ns["attn"](ns["new"], cache=ns["cache_fwd"])
    assert ns["out"].shape == expected.shape
    np.testing.assert_allclose(ns["out"], expected, rtol=0, atol=1e-12)


def _transformers_sources(*names):
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed: the Hugging Face lines "
                    "are checked where it is")
    root = pathlib.Path(importlib.util.find_spec("transformers").origin).parent
    return {name: (root / name).read_text("utf-8") for name in names}


def _squeeze(text):
    return re.sub(r"\s+", "", text)


def _occurs(span, source):
    """``span`` is in ``source``, whitespace aside; ``...`` stands for any
    arguments."""
    at = 0
    for piece in _squeeze(span).split("..."):
        at = source.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return True


def _is_code_line(span):
    return "(" in span or " = " in span


def test_every_hugging_face_line_is_in_modeling_qwen3():
    source = _squeeze(_transformers_sources(
        "models/qwen3/modeling_qwen3.py")["models/qwen3/modeling_qwen3.py"])
    missing = [(step, span) for step, theirs, _ in table_rows()
               for span in SPAN.findall(theirs)
               if _is_code_line(span) and not _occurs(span, source)]
    assert not missing, f"not in transformers' modeling_qwen3.py: {missing}"


def test_the_idioms_quote_transformers_as_it_is():
    """Spans of the torch-idioms notes that use torch, the layer (`self.`)
    or the kernel's `module.` are lines of these four files."""
    files = _transformers_sources(
        "models/qwen3/modeling_qwen3.py", "cache_utils.py",
        "modeling_utils.py", "integrations/flex_attention.py")
    source = "".join(_squeeze(s) for s in files.values())
    notes = _markdown(lambda s: s.startswith(IDIOMS_HEAD))
    quoted = [s for s in SPAN.findall(notes)
              if re.search(r"\b(self|torch|module)\.", s)]
    assert len(quoted) >= 10, quoted
    missing = [s for s in quoted if not _occurs(s, source)]
    assert not missing, f"not in transformers: {missing}"


def test_both_layers_take_the_cache_as_cache():
    """The prose says both layers call their cache argument `cache`."""
    text = _markdown(lambda s: TABLE_HEAD.search(s))
    assert "argument `cache`" in text
    assert "cache" in inspect.signature(px.MultiHeadAttention.forward).parameters
    name = "models/qwen3/modeling_qwen3.py"
    tree = ast.parse(_transformers_sources(name)[name])  # not imported: torch
    layer = next(n for n in tree.body if isinstance(n, ast.ClassDef)
                 and n.name == "Qwen3Attention")
    forward = next(n for n in layer.body if isinstance(n, ast.FunctionDef)
                   and n.name == "forward")
    assert "cache" in [a.arg for a in forward.args.args]
