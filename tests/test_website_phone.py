"""The website check on a phone (390 x 844): no page scrolls sideways. Its own
file so that pytest-xdist can run it beside the widget checks. Figures scale to
the column on a phone, with a "Full size" button (test_website_reads.py checks
them, and heatmap numbers >= 9 px at 1280 px). Shared parts: website.py.
"""

from __future__ import annotations

import pytest

from website import (  # noqa: F401 (fixtures)
    PAGES, PHONE, SHOTS, SHOWCASE, PageWatch, base_url, browser,
    no_sideways_scroll)


@pytest.mark.parametrize("path", PAGES)
def test_phone(browser, base_url, path):
    """390 x 844: the page does not scroll sideways."""
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
        if path == SHOWCASE:
            SHOTS.mkdir(parents=True, exist_ok=True)
            watch.page.screenshot(path=str(SHOTS / "phone_causal_mask.png"), full_page=True)
    finally:
        watch.close()


