"""The website check, model view (px.model_view): with no kernel, each
thumbnail opens its head, the toggle switches the causal mask, and the query
dropdown outlines its row and shows its sentence. Shared parts: website.py.
"""

from __future__ import annotations

import json

import pytest

from website import (  # noqa: F401 (fixtures)
    PAGES, SITE, PageWatch, base_url, browser, choose, option_count)

MODEL_VIEW_PAGES = [p for p in PAGES if "pyxis-mv-grid" in
                    (SITE / p).read_text(errors="ignore")] \
    if SITE.exists() else []

SHOWN = """el => Array.from(el.querySelectorAll('.pyxis-view'))
    .filter(v => v.getClientRects().length > 0)
    .map(v => [v.getAttribute('data-head'), v.getAttribute('data-view'),
               v.getAttribute('data-weights')])"""
SENTENCES = """el => Array.from(el.querySelectorAll('.pyxis-mv-describe p'))
    .filter(p => p.getClientRects().length > 0).map(p => p.textContent)"""
OUTLINED = """el => Array.from(el.querySelectorAll('.pyxis-view tbody tr'))
    .map((tr, i) => [i, getComputedStyle(tr.cells[0]).boxShadow])
    .filter(([i, s]) => s !== 'none').map(([i, s]) => i)"""


def test_there_is_a_model_view_page():
    assert MODEL_VIEW_PAGES, "no page of the site has a model view"


@pytest.mark.parametrize("path", MODEL_VIEW_PAGES)
def test_model_view_works_without_a_kernel(browser, base_url, path):
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"))
    try:
        watch.open(base_url + path)
        root = watch.page.locator(".pyxis-mv").first
        grid = root.locator(".pyxis-mv-grid").first
        toggle = root.locator(".pyxis-view-control").first
        query = root.locator(".pyxis-mv-query").first
        n = option_count(grid)
        assert n >= 2
        for k in [n - 1, 1, 0]:                 # a thumbnail opens its head
            label = choose(grid, k)
            for v in range(option_count(toggle)):
                view = choose(toggle, v)
                (shown,) = root.evaluate(SHOWN)
                assert shown[:2] == [label, f"{view} / {label}"], shown[:2]
                w = json.loads(shown[2])
                above = [w[i][j] for i in range(len(w))
                         for j in range(i + 1, len(w))]
                if view == "causal mask":
                    assert all(x == 0 for x in above) and w[0][0] == 1.0
                else:
                    assert any(x > 0 for x in above)
        for i in range(option_count(query)):   # the row and the sentence
            token = choose(query, i).split(": ", 1)[1]
            assert root.evaluate(OUTLINED) == [i]
            (said,) = root.evaluate(SENTENCES)
            assert said.startswith(f"'{token}' attends"), said
        backgrounds = grid.evaluate(
            """el => Array.from(el.querySelectorAll('button'))
                  .map(b => getComputedStyle(b).backgroundImage)""")
        assert all(b.startswith('url("data:image/png') for b in backgrounds)
        assert watch.errors == [], watch.errors
    finally:
        watch.close()
