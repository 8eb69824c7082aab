"""The website check on a phone (390 x 844): no page scrolls sideways, and no
heatmap's numbers fall below 9 px. Its own file so that pytest-xdist can run it
beside the widget checks. Shared parts: website.py.
"""

from __future__ import annotations

import pytest

from website import (  # noqa: F401 (fixtures)
    DEFAULT_ANNOTATION_PX, MIN_CELL_NUMBER_PX, PAGES, PHONE, SHOTS, SHOWCASE,
    PageWatch, base_url, browser, no_sideways_scroll)


@pytest.mark.parametrize("path", PAGES)
def test_phone(browser, base_url, path):
    """390 x 844: the page does not scroll sideways, and heatmap numbers stay >= 9 px."""
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
        small = watch.page.evaluate(
            """px => Array.from(document.querySelectorAll('.pyxis-view img, div.cell_output img'))
                  .filter(i => i.getClientRects().length && i.naturalWidth)
                  .map(i => {
                     const f = i.closest('[data-annotation-px]');
                     const a = f ? parseFloat(f.getAttribute('data-annotation-px')) : px;
                     return [i.getBoundingClientRect().width / i.naturalWidth * a, i.alt.slice(0, 50)];
                  })""", DEFAULT_ANNOTATION_PX)
        tiny = [(round(p, 1), alt) for p, alt in small if 0 < p < MIN_CELL_NUMBER_PX]
        assert tiny == [], f"{path}: heatmap numbers below {MIN_CELL_NUMBER_PX} px: {tiny[:5]}"
        if path == SHOWCASE:
            SHOTS.mkdir(parents=True, exist_ok=True)
            watch.page.screenshot(path=str(SHOTS / "phone_causal_mask.png"), full_page=True)
    finally:
        watch.close()


