"""The website check on a phone (390 x 844): no page scrolls sideways, and a
name set in code inside a table cell (the first page's module column, say)
wraps between names, never inside one ("attentio|n", issue #21). Its own
file so that pytest-xdist can run it beside the widget checks. Figures scale to
the column on a phone, with a "Full size" button (test_website_reads.py checks
them, and heatmap numbers >= 9 px at 1280 px). Shared parts: website.py.
"""

from __future__ import annotations

import pytest

from website import (  # noqa: F401 (fixtures)
    PAGES, PHONE, SHOTS, SHOWCASE, PageWatch, base_url, browser,
    no_sideways_scroll)

# each inline code name in a table cell that the browser laid out on more
# than one line; names with a space or a hyphen may wrap there
SPLIT_NAMES = """() => [...document.querySelectorAll('article td code')]
  .filter(c => !/[\\s-]/.test(c.textContent.trim()))
  .filter(c => new Set([...c.getClientRects()].map(r => Math.round(r.top))).size > 1)
  .map(c => c.textContent.trim())"""


@pytest.mark.parametrize("path", PAGES)
def test_phone(browser, base_url, path):
    """390 x 844: the page does not scroll sideways; table names stay whole."""
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"), viewport=PHONE,
                      device_scale_factor=1, is_mobile=True, has_touch=True)
    try:
        watch.open(base_url + path)
        over = no_sideways_scroll(watch.page)
        wide = watch.page.evaluate(
            """() => Array.from(document.querySelectorAll('article *'))
                  .filter(e => e.getBoundingClientRect().right > 391 && !e.closest('pre, mjx-container')
                           && !e.classList.contains('skip-link'))
                  .slice(0, 5).map(e => e.tagName + '.' + e.className + ': '
                                   + e.textContent.slice(0, 40))""")
        assert over <= 0, f"{path} scrolls {over} px sideways at 390 px; too wide: {wide}"
        split = watch.page.evaluate(SPLIT_NAMES)
        assert split == [], f"{path}: names broken across lines at 390 px: {split[:8]}"
        if path == SHOWCASE:
            SHOTS.mkdir(parents=True, exist_ok=True)
            watch.page.screenshot(path=str(SHOTS / "phone_causal_mask.png"), full_page=True)
    finally:
        watch.close()


