"""The website on a phone: a name set in code inside a table cell (the first
page's module column, say) wraps between names, never inside one
("attentio|n", issue #21). Shared parts: website.py.
"""

from __future__ import annotations

import pytest

from website import PAGES, PHONE, PageWatch, base_url, browser  # noqa: F401

# each inline code name in a table cell that the browser laid out on more
# than one line; names with a space or a hyphen may wrap there
SPLIT_NAMES = """() => [...document.querySelectorAll('article td code')]
  .filter(c => !/[\\s-]/.test(c.textContent.trim()))
  .filter(c => new Set([...c.getClientRects()].map(r => Math.round(r.top))).size > 1)
  .map(c => c.textContent.trim())"""


@pytest.mark.parametrize("path", PAGES)
def test_table_names_stay_whole_on_a_phone(browser, base_url, path):
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"), viewport=PHONE,
                      device_scale_factor=1, is_mobile=True, has_touch=True)
    try:
        watch.open(base_url + path)
        split = watch.page.evaluate(SPLIT_NAMES)
        assert split == [], f"{path}: names broken across lines at 390 px: {split[:8]}"
    finally:
        watch.close()
