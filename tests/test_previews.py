"""The stored chapters read right in static previews (issue #21, item 6).

GitHub's viewer, nbviewer and ``jupyter nbconvert --to html`` draw a stored
notebook without its widget JavaScript. One chapter that holds every kind of
output these checks read (a listing, a widget picture, the model view) is
converted with nbconvert's HTML exporter (the one ``jupyter nbconvert --to
html`` runs): each widget must show its default picture there, each listing
a ``<pre>`` block of its source. nbconvert draws an output by its MIME types
alone, the same code for every chapter, so the other chapters are held to
the same stored outputs: every widget bundle holds nothing but the picture
and its text (any viewer that knows PNG shows the picture), every listing
the same MIME types, its HTML a ``<pre>`` of its source. The Markdown lines
before the install cell and the solutions go through nbconvert in every
chapter (those cells alone: seconds fewer than whole chapters).

The round trip of the website is checked too: the stored picture plus the
reference kept aside (tools/execute_notebooks.py) give back, for myst-nb
(_ext/pyxis_widget_views.py), the bundle a live kernel makes.
"""

from __future__ import annotations

import base64
import copy
import functools
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "_ext"))
import execute_notebooks as ex  # noqa: E402
import pyxis_widget_views as views  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"
WIDGET_SCRIPT = 'script[type="application/vnd.jupyter.widget-view+json"]'


def _is_widget(out) -> bool:
    return WIDGET in out.get("data", {}) or ex.VIEW_KEY in out.get("metadata", {})


def _is_listing(cell) -> bool:
    return cell.cell_type == "code" and "px.show_source(" in cell.source


# The chapter converted whole by nbconvert: it holds a listing and a widget
# picture, and its widget is the model view (test_converted_chapter_holds_
# every_kind_of_output). nbconvert took 1-4 s a chapter, 26 s for the 13.
CONVERTED = ROOT / "book" / "real_model.ipynb"


@pytest.fixture(scope="module")
def converted():
    """``converted(path, keep=None)``: the chapter (or its cells ``keep``,
    a tuple) as ``jupyter nbconvert --to html`` writes it, converted once
    for the checks below that read it."""
    nbconvert = pytest.importorskip(
        "nbconvert", reason="nbconvert is not installed (requirements.txt pins it)")
    return functools.cache(functools.partial(_converted, nbconvert.HTMLExporter()))


def _converted(exporter, path, keep=None):
    """The chapter as ``jupyter nbconvert --to html`` writes it, parsed, and
    its cells as nbconvert lays them out, one per notebook cell. With
    ``keep`` (cell indices), only those cells are converted, and ``cells``
    holds ``None`` for the others."""
    from bs4 import BeautifulSoup

    nb = nbformat.read(path, as_version=4)
    some = nb if keep is None else nbformat.from_dict(
        {**nb, "cells": [nb.cells[i] for i in keep]})
    body, _ = exporter.from_notebook_node(
        some, resources={"metadata": {"name": path.stem, "path": str(path.parent)}})
    page = BeautifulSoup(body, "html.parser")
    drawn = page.select("div.jp-Cell")
    assert len(drawn) == len(some.cells), "nbconvert drew a cell per notebook cell"
    if keep is None:
        return nb, page, drawn
    cells = [None] * len(nb.cells)
    for i, cell in zip(keep, drawn):
        cells[i] = cell
    return nb, page, cells


def _listings(nb):
    """(index, output) of every listing of the chapter: one output each."""
    found = []
    for i, cell in enumerate(nb.cells):
        if _is_listing(cell):
            (out,) = cell.outputs
            found.append((i, out))
    return found


def test_converted_chapter_holds_every_kind_of_output():
    """The chapter nbconvert converts has a listing and a widget picture,
    and its widget is the model view; the other chapters hold no kind of
    stored output it lacks that a check here reads."""
    nb = nbformat.read(CONVERTED, as_version=4)
    assert _listings(nb)
    widgets = [c for c in nb.cells if any(map(_is_widget, c.get("outputs", [])))]
    assert [c.source.startswith("px.model_view(") for c in widgets] == [True]
    assert CONVERTED in MODEL_VIEW_CHAPTERS


def test_every_widget_shows_its_picture_in_nbconvert(converted):
    nb, page, cells = converted(CONVERTED)
    seen = 0
    for i, (cell, drawn) in enumerate(zip(nb.cells, cells)):
        outs = cell.get("outputs", [])
        areas = drawn.select("div.jp-OutputArea-child")
        for out, area in zip(outs, areas) if len(outs) == len(areas) else ():
            if not _is_widget(out):
                continue
            seen += 1
            img = area.select_one('img[src^="data:image/png;base64,"]')
            assert img is not None, (
                f"cell {i}: the widget output shows no picture in nbconvert: "
                f"{area.get_text(' ', strip=True)[:120]!r}")
            shown = img["src"].split(",", 1)[1]
            assert base64.b64decode(shown) == base64.b64decode(out.data["image/png"])
            assert not area.select(WIDGET_SCRIPT), f"cell {i}: an empty widget view"
        widget_outs = [o for o in outs if _is_widget(o)]
        assert len(outs) == len(areas) or not widget_outs, (
            f"cell {i}: {len(outs)} outputs, nbconvert drew {len(areas)}")
    assert seen
    assert not page.select(WIDGET_SCRIPT), "nbconvert drew an empty widget view"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_widget_bundles_hold_only_the_picture_and_its_text(path):
    """What every viewer chooses from: nothing it cannot draw comes first.
    nbconvert draws such a bundle as its picture (the test above, on the
    chapter it converts)."""
    nb = nbformat.read(path, as_version=4)
    seen = 0
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if _is_widget(out):
                seen += 1
                assert set(out.data) == {"image/png", "text/plain"}, (
                    f"cell {i} stores {sorted(out.data)}: run make execute")
                view = out.metadata[ex.VIEW_KEY]
                assert view["model_id"] in (
                    nb.metadata["widgets"][ex.WIDGET_STATE]["state"])
    # a chapter with a widget stores its state; a widget output was found
    has_state = bool(nb.metadata.get("widgets"))
    assert seen or not has_state, "widget state stored, but no widget output found"


# what a listing stores; nbconvert draws it from its text/html (below)
LISTING_TYPES = {"text/html", "text/markdown", "text/plain"}


def test_every_listing_is_a_code_block_in_nbconvert(converted):
    nb, _, cells = converted(CONVERTED)
    listings = _listings(nb)
    assert listings, "a chapter shows at least one listing"
    for i, out in listings:
        assert set(out.data) == LISTING_TYPES
        area = cells[i].select_one("div.jp-OutputArea-output")
        assert area is not None and area.get("data-mime-type") == "text/html", (
            f"cell {i}: the listing is drawn from {area and area.get('data-mime-type')}")
        pre = area.select_one("pre")
        assert pre is not None, f"cell {i}: no <pre> in the listing"
        assert pre.get_text().strip() == out.data["text/plain"].strip()


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_listing_stores_a_code_block(path):
    """Every chapter's listings store what the converted chapter's do: the
    same MIME types, so nbconvert draws them from their HTML, which it
    writes as it is (unsanitized), a ``<pre>`` of the listing's source."""
    from bs4 import BeautifulSoup

    listings = _listings(nbformat.read(path, as_version=4))
    assert listings, "a chapter shows at least one listing"
    for i, out in listings:
        assert set(out.data) == LISTING_TYPES, f"cell {i}: {sorted(out.data)}"
        pre = BeautifulSoup(out.data["text/html"], "html.parser").select_one("pre")
        assert pre is not None, f"cell {i}: no <pre> in the listing"
        assert pre.get_text().strip() == out.data["text/plain"].strip()


def test_the_website_gets_the_live_bundle_back():
    """Store, then restore: the bundle a live kernel made, bit for bit."""
    import numpy as np
    import pyxis_nb as px

    explorer = px.attention_explorer(["a", "b"], {"causal": np.eye(2)})
    data, metadata = explorer._repr_mimebundle_()
    assert metadata["image/png"]["alt"]  # the first frame's, for the picture
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("px.attention_explorer(...)")]
    nb.cells[0].outputs = [nbformat.v4.new_output(
        "display_data", data=copy.deepcopy(data), metadata={})]
    stored = ex.store_widget_pictures(copy.deepcopy(nb))
    (out,) = stored.cells[0].outputs
    assert set(out.data) == {"image/png", "text/plain"}
    assert out.metadata[ex.VIEW_KEY] == data[WIDGET]
    back = nbformat.from_dict(nbformat.reads(nbformat.writes(stored), as_version=4))
    assert views.restore_widget_views(back) == 1
    assert back.cells[0].outputs[0].data == data
    assert back.cells[0].outputs[0].metadata == {}
    assert views.VIEW_KEY == ex.VIEW_KEY and views.WIDGET_VIEW == WIDGET


def test_a_listing_has_html_markdown_and_text():
    import pyxis_nb as px

    listing = px.show_source(px.causal_mask)
    html = listing._repr_html_()
    assert "<pre>" in html and "<code>" in html and "causal_mask" in html
    assert listing._repr_markdown_().startswith("```python\n")
    assert repr(listing).startswith("def causal_mask(")


def test_the_website_ranks_a_listings_markdown_above_its_html():
    """myst-nb renders the Markdown, so the site's listings stay highlighted
    by Sphinx like every other code block."""
    import yaml
    from myst_nb.core.render import get_mime_priority

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    overrides = config["sphinx"]["config"]["nb_mime_priority_overrides"]
    order = get_mime_priority("html", [tuple(o) for o in overrides])
    assert order.index("text/markdown") < order.index("text/html")
    assert order.index(WIDGET) < order.index("text/markdown")  # as before
    assert "pyxis_widget_views" in config["sphinx"]["local_extensions"]


SOLUTION_TAG = "hide-cell"  # an exercise's solution (CONTRIBUTING.md)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_setup_and_solutions_say_what_they_are_in_nbconvert(converted, path):
    """Outside the site (nbconvert, GitHub, Colab) the setup cells come
    first: the install cell has a Markdown line before it that says what it
    is, and every exercise's solution has a "Solution" line before it, so a
    reader sees what follows before reading it (issue #30, item 14)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import portable_cells as pc

    nb = nbformat.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.metadata.get(pc.INSTALL_KEY))
    solutions = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
                 and SOLUTION_TAG in c.metadata.get("tags", [])]
    # the Markdown cells before them, alone, through nbconvert
    _, _, cells = converted(path, (at - 1, *[i - 1 for i in solutions]))
    said = cells[at - 1].get_text(" ", strip=True)
    assert said.startswith("Setup: installs the book's package if it is missing"), said
    assert solutions, "a chapter ends with exercises and their solutions"
    for i in solutions:
        before = cells[i - 1].get_text(" ", strip=True)
        assert nb.cells[i - 1].cell_type == "markdown" and before.startswith("Solution"), (
            f"cell {i}: the solution follows {before[:60]!r}")
    # the website removes both lines: it hides solutions behind a toggle
    # and removes the install cell
    for i in [at - 1] + [i - 1 for i in solutions]:
        assert "remove-cell" in nb.cells[i].metadata.get("tags", [])


MODEL_VIEW_CHAPTERS = [p for p in CHAPTERS
                       if "px.model_view(" in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("path", MODEL_VIEW_CHAPTERS, ids=lambda p: p.stem)
def test_the_model_view_picture_shows_its_default_view(path):
    """Outside the site the model view is a picture of how it opens (the
    labelled grid and the first head with its numbers, not a bare 272 x 136
    grid of thumbnails), its alt text stored with it (the output's metadata,
    which nbconvert's classic template writes; the lab template writes none),
    and the Markdown before it says what the picture is (issue #30, item 7).
    The picture is the stored one: nbconvert shows a widget's stored PNG
    (test_every_widget_shows_its_picture_in_nbconvert, on a model view)."""
    from PIL import Image

    nb = nbformat.read(path, as_version=4)
    (i,) = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
            and c.source.startswith("px.model_view(")]
    png = base64.b64decode(nb.cells[i].outputs[0].data["image/png"])
    width, height = Image.open(__import__("io").BytesIO(png)).size
    assert width >= 600 and height >= 250, (width, height)
    (out,) = nb.cells[i].outputs
    assert out.metadata["image/png"]["alt"].startswith("The model view as it opens")
    before = " ".join(c.source for c in nb.cells[i - 3:i] if c.cell_type == "markdown")
    assert "is a picture" in before and "of how it opens" in before, before[-300:]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_stored_figure_carries_its_alt_text(path):
    """Issue #41, item 13: a picture's alt text is stored with the picture
    (the output's ``image/png`` metadata, tools/execute_notebooks.py), not
    only in the cell metadata the website reads. nbconvert's classic
    template and nbviewer read it there; its default template and JupyterLab
    read no alt text anywhere, so nothing in the notebook reaches them."""
    nb = nbformat.read(path, as_version=4)
    bare = [i for i, cell in enumerate(nb.cells) for out in cell.get("outputs", [])
            if "image/png" in out.get("data", {})
            and not out.get("metadata", {}).get("image/png", {}).get("alt")]
    assert bare == [], f"{path.name}: pictures with no alt text, cells {bare}"


def test_classic_nbconvert_writes_the_alt_text():
    """nbconvert's classic HTML template writes the stored alt text: no
    "No description has been provided" placeholder on any picture."""
    nbconvert = pytest.importorskip("nbconvert")
    from bs4 import BeautifulSoup

    nb = nbformat.read(ROOT / "book" / "scaling.ipynb", as_version=4)
    body, _ = nbconvert.HTMLExporter(template_name="classic").from_notebook_node(nb)
    alts = [img.get("alt", "") for img in BeautifulSoup(body, "html.parser")("img")]
    assert alts and all(alt and "No description" not in alt for alt in alts), alts
