"""The website check, page by page: the built site in headless Chromium, as a reader sees it.

Needs the site built first (`make site`; `make test` does it). Serves
_build/html on 127.0.0.1 and opens every page of the table of contents in
Debian's Chromium through Playwright, then asserts that

* the page logs no console error and throws no exception,
* no request leaves the site (every such request is blocked and recorded),
* no request fails (no 404 for fonts or scripts),
* every widget output renders (the widget manager is vendored, not a CDN),
* every view control switches its views in the browser, with no kernel, and
  the attention explorer's causal view has zeros above the diagonal,
* the site works opened as a file (file://) too (the index and one widget
  page), and its search page says what search needs there;
* weight: the site is at most 26 MB on disk, and no page loads more than
  1.5 MB gzipped (the page and everything it requests);
* every figure has alt text (a sentence, not a file name);
* widgets work with the keyboard alone and tell a screen reader their state:
  toggle buttons say aria-pressed, a selected one differs from an unselected
  one by contrast >= 3:1, the focus ring is >= 2 px, sliders have a name and
  a value text, the explorer's sentence is a polite live region;
* on a phone (390 x 844) no page scrolls sideways; at 1280 px no code block
  scrolls sideways (figures, equations, raw TeX, first paint:
  test_website_reads.py).

A full-page screenshot of each page goes to _build/screenshots/, and of one
chapter on a phone and in dark mode.

Widgets (clicks, keyboard, ARIA) and the phone width: test_website_widgets.py.
Shared parts: website.py.
"""

from __future__ import annotations

import pytest

from website import (  # noqa: F401 (fixtures)
    PAGE_MAX_GZIP_BYTES, PAGES, SHOTS, SHOWCASE, SITE, SITE_MAX_BYTES,
    WIDGET_PAGES, PageWatch, bad_alt_texts, base_url, browser)


def _desktop_visit(browser, base_url: str, path: str) -> dict:
    """Open ``path`` once at 1280 px; record all that the page checks assert."""
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"))
    try:
        n_widgets = watch.open(base_url + path)
        rendered = watch.page.locator(".widget-subarea > .jupyter-widgets")
        heights = [(rendered.nth(i).bounding_box() or {}).get("height", 0)
                   for i in range(rendered.count())]
        SHOTS.mkdir(parents=True, exist_ok=True)
        watch.page.screenshot(path=str(SHOTS / (path.replace("/", "_").removesuffix(".html") + ".png")),
                              full_page=True)
        wide = watch.page.evaluate(
            """() => Array.from(document.querySelectorAll('article pre'))
                  .filter(p => p.getClientRects().length && p.scrollWidth > p.clientWidth + 1)
                  .map(p => p.textContent.split('\\n')
                             .reduce((a, b) => a.length >= b.length ? a : b).slice(0, 90))""")
        weight, files = watch.gzip_weight(base_url)
        return dict(n_widgets=n_widgets, heights=heights, errors=watch.errors,
                    offsite=watch.offsite, failed=watch.failed, weight=weight,
                    files=files, bad_alt=bad_alt_texts(watch.page), wide=wide)
    finally:
        watch.close()


@pytest.fixture(scope="module")
def desktop(browser, base_url):
    """``desktop(path)``: what one visit of ``path`` at 1280 px recorded. Each
    page is opened once and every page check below reads the same visit."""
    visits: dict[str, dict] = {}

    def visit(path: str) -> dict:
        if path not in visits:
            visits[path] = _desktop_visit(browser, base_url, path)
        return visits[path]
    return visit


@pytest.mark.parametrize("path", PAGES)
def test_page_renders_offline(desktop, path):
    seen = desktop(path)
    assert len(seen["heights"]) == seen["n_widgets"]
    for i, height in enumerate(seen["heights"]):
        assert height > 20, f"widget {i} on {path} has no height: {height}"
    assert seen["errors"] == [], f"console errors on {path}: {seen['errors']}"
    assert seen["offsite"] == [], f"requests leaving the site from {path}: {seen['offsite']}"
    assert seen["failed"] == [], f"failed requests on {path}: {seen['failed']}"


@pytest.mark.parametrize("path", PAGES)
def test_page_weight(desktop, path):
    """The page and everything it loads, gzipped, stay under the target."""
    seen = desktop(path)
    assert seen["weight"] <= PAGE_MAX_GZIP_BYTES, (
        f"{path} loads {seen['weight'] / 1e6:.2f} MB gzipped (at most "
        f"{PAGE_MAX_GZIP_BYTES / 1e6} MB); largest: {seen['files'][:5]}")


@pytest.mark.parametrize("path", PAGES)
def test_figures_have_alt_text(desktop, path):
    """Every image says what it shows in a sentence (myst-nb cell metadata
    "mystnb": {"image": {"alt": ...}}, see CONTRIBUTING.md), not its file name."""
    bad = desktop(path)["bad_alt"]
    assert bad == [], f"{path}: {len(bad)} images with no real alt text: {bad[:5]}"


@pytest.mark.parametrize("path", PAGES)
def test_code_blocks_fit_at_desktop_width(desktop, path):
    """At 1280 px no code block (input or output) scrolls sideways: lines <= 79 columns."""
    wide = desktop(path)["wide"]
    assert wide == [], f"{path}: {len(wide)} code blocks scroll sideways; longest lines: {wide[:5]}"


def test_site_size():
    total = sum(f.stat().st_size for f in SITE.rglob("*") if f.is_file())
    largest = sorted(((f.stat().st_size, str(f.relative_to(SITE))) for f in SITE.rglob("*")
                      if f.is_file()), reverse=True)[:5]
    assert total <= SITE_MAX_BYTES, (
        f"the site is {total / 1e6:.1f} MB on disk (at most {SITE_MAX_BYTES / 1e6:.0f} MB); "
        f"largest files: {largest}")


def test_dark_mode_screenshot(browser, base_url):
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"), color_scheme="dark")
    try:
        watch.open(base_url + SHOWCASE)
        assert watch.page.evaluate("() => document.documentElement.dataset.theme") == "dark"
        SHOTS.mkdir(parents=True, exist_ok=True)
        watch.page.screenshot(path=str(SHOTS / "dark_causal_mask.png"), full_page=True)
        assert watch.errors == [], watch.errors
    finally:
        watch.close()


def test_there_are_widget_pages():
    assert WIDGET_PAGES, "no page of the site carries widget state: were the notebooks executed?"


def test_site_works_from_file(browser):
    """_build/html/index.html opened as a file: it reaches the intro, and a
    widget page's widgets render. One widget page stands for all: every
    chapter loads the same widget manager and styles by the same relative
    paths, and each renders its widgets over http in test_page_renders_offline."""
    assert SHOWCASE in WIDGET_PAGES
    assert len({(SITE / p).parent for p in WIDGET_PAGES}) == 1, "chapters in one folder"
    watch = PageWatch(browser, ("file://", "data:", "blob:", "about:"))
    try:
        watch.page.goto((SITE / "index.html").as_uri(), wait_until="load")
        watch.page.wait_for_url("**/book/intro.html", timeout=10_000)
        n = watch.open((SITE / SHOWCASE).as_uri())
        assert n > 0
        assert watch.page.locator(".widget-subarea > .jupyter-widgets").count() == n
        assert watch.errors == [], watch.errors
        assert watch.offsite == [], watch.offsite
    finally:
        watch.close()


def test_search_from_file_says_what_it_needs(browser):
    watch = PageWatch(browser, ("file://", "data:", "blob:", "about:"))
    try:
        watch.page.goto((SITE / "search.html").as_uri() + "?q=causal", wait_until="load")
        watch.page.wait_for_selector("#search-results li", timeout=10_000)
        note = watch.page.locator(".pyxis-search-note")
        assert note.count() == 1 and "http.server" in note.inner_text()
        assert watch.errors == [], watch.errors
    finally:
        watch.close()
