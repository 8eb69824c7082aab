"""The website check: the built site in headless Chromium, as a reader sees it.

Needs the site built first (`make site`; `make test` does it). Serves
_build/html on 127.0.0.1 and opens every page of the table of contents in
Debian's Chromium through Playwright, then asserts that

* the page logs no console error and throws no exception,
* no request leaves the site (every such request is blocked and recorded),
* no request fails (no 404 for fonts or scripts),
* every widget output renders (the widget manager is vendored, not a CDN),
* every view control switches its views in the browser, with no kernel, and
  the attention explorer's causal view has zeros above the diagonal,
* the site works opened as a file (file://) too, and its search page says
  what search needs there;
* weight: the site is at most 20 MB on disk, and no page loads more than
  1.5 MB gzipped (the page and everything it requests);
* every figure has alt text (a sentence, not a file name);
* widgets work with the keyboard alone and tell a screen reader their state:
  toggle buttons say aria-pressed, a selected one differs from an unselected
  one by contrast >= 3:1, the focus ring is >= 2 px, sliders have a name and
  a value text, the explorer's sentence is a polite live region;
* on a phone (390 x 844) no page scrolls sideways and no heatmap's numbers
  fall below 9 px; at 1280 px no code block scrolls sideways.

A full-page screenshot of each page goes to _build/screenshots/, and of one
chapter on a phone and in dark mode.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import json
import re
import threading
from urllib.parse import unquote, urlparse
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
WIDGET_VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]'
SITE_MAX_BYTES = 20 * 10**6        # the whole site on disk
PAGE_MAX_GZIP_BYTES = 1_500_000    # one page and everything it loads, gzipped
MIN_CELL_NUMBER_PX = 9             # heatmap numbers on a phone
PHONE = {"width": 390, "height": 844}
SHOWCASE = "book/causal_mask.html"  # the chapter shot on a phone and in dark mode
# heatmap numbers drawn at 8 pt and 100 dpi, unless a figure says (data-annotation-px)
DEFAULT_ANNOTATION_PX = 8 * 100 / 72

playwright_api = pytest.importorskip("playwright.sync_api")


def toc_pages() -> list[str]:
    """Every document of _toc.yml, as a path relative to the site root."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return [f"{f}.html" for f in files]


PAGES = toc_pages()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def base_url():
    if not (SITE / "index.html").exists():
        pytest.fail("the site is not built: run `make site` (or `make test`) first")
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class PageWatch:
    """Opens one page and records its console errors and off-site or failed requests."""

    def __init__(self, browser, allowed_prefixes: tuple[str, ...], viewport=None, **options):
        self.context = browser.new_context(viewport=viewport or {"width": 1280, "height": 900},
                                           **options)
        self.page = self.context.new_page()
        self.requested: list[str] = []
        self.page.on("request", lambda r: self.requested.append(r.url))
        self.errors: list[str] = []
        self.offsite: list[str] = []
        self.failed: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: r.url not in self.offsite and self.failed.append(r.url))
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.status} {r.url}"))

        def route(r):
            if r.request.url.startswith(allowed_prefixes):
                r.continue_()
            else:
                self.offsite.append(r.request.url)
                r.abort()

        self.page.route("**/*", route)

    def open(self, url: str):
        self.page.goto(url, wait_until="load")
        n = self.page.locator(WIDGET_VIEW).count()
        if n:
            # the manager replaces each view script with the rendered widget
            self.page.wait_for_function(
                "n => document.querySelectorAll('.widget-subarea > .jupyter-widgets').length >= n",
                arg=n, timeout=30_000,
            )
        self.page.wait_for_timeout(300)
        return n

    def close(self):
        self.context.close()

    def gzip_weight(self, base_url: str) -> tuple[int, list[tuple[int, str]]]:
        """Bytes, gzipped, of every site file this page requested; and the files."""
        sizes = []
        for url in dict.fromkeys(self.requested):
            if url.startswith(base_url):
                data = (SITE / unquote(urlparse(url).path).lstrip("/")).read_bytes()
                sizes.append((len(gzip.compress(data, 6)), url.removeprefix(base_url)))
        return sum(n for n, _ in sizes), sorted(sizes, reverse=True)


# a file name or path ("_images/abc.png", "fig 1.png"), or a bare hash: not a
# sentence. A sentence may still contain a slash ("1/sqrt(d_head)").
PATH_LIKE = re.compile(
    r"\.(png|jpe?g|gif|svg|webp)$|^[0-9a-f]{16,}$|^\S*/\S*$", re.I)


def bad_alt_texts(page) -> list[str]:
    """The images of the page's content whose alt text is missing, empty or a file path."""
    alts = page.evaluate(
        """() => Array.from(document.querySelectorAll('article img, main img'))
              .map(i => i.getAttribute('alt'))""")
    return [repr(a) for a in alts if a is None or not a.strip() or PATH_LIKE.search(a.strip())]


def option_count(control) -> int:
    """Number of options of a toggle-buttons, dropdown or selection-slider widget."""
    buttons = control.locator("button.widget-toggle-button")
    if buttons.count():
        return buttons.count()
    if control.locator("select").count():
        return control.locator("select option").count()
    return int(float(control.locator(".noUi-handle").get_attribute("aria-valuemax"))) + 1


def choose(control, k: int) -> str:
    """Select option k of a toggle-buttons, dropdown or selection-slider widget;
    return the label the control now shows."""
    buttons = control.locator("button.widget-toggle-button")
    if buttons.count():
        buttons.nth(k).click()
        label = buttons.nth(k).inner_text()
    elif control.locator("select").count():
        control.locator("select").select_option(index=k)
        label = control.locator("select option").nth(k).inner_text()
    else:
        handle = control.locator(".noUi-handle")
        handle.focus()
        handle.press("Home")
        for _ in range(k):
            handle.press("ArrowRight")
        label = None
    control.page.wait_for_timeout(150)
    if label is None:
        label = control.locator(".widget-readout").inner_text()
    return label.replace("\xa0", " ").strip()


def shown_view(stack) -> tuple[str | None, str]:
    """The view a Stack shows now: the data-view name of its own visible view (not one
    of a switcher nested inside it), if any, and the stack's HTML."""
    names = stack.evaluate(
        """el => Array.from(el.querySelectorAll('.pyxis-view'))
              .filter(v => v.closest('.pyxis-view-stack') === el && v.getClientRects().length > 0)
              .map(v => v.getAttribute('data-view'))"""
    )
    assert len(names) <= 1, f"a stack must show at most one view at a time, got {names}"
    return (names[0] if names else None), stack.inner_html()


@pytest.mark.parametrize("path", PAGES)
def test_page_renders_offline(browser, base_url, path):
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"))
    try:
        n_widgets = watch.open(base_url + path)
        rendered = watch.page.locator(".widget-subarea > .jupyter-widgets")
        assert rendered.count() == n_widgets
        for i in range(n_widgets):
            box = rendered.nth(i).bounding_box()
            assert box and box["height"] > 20, f"widget {i} on {path} has no height: {box}"
        SHOTS.mkdir(parents=True, exist_ok=True)
        watch.page.screenshot(path=str(SHOTS / (path.replace("/", "_").removesuffix(".html") + ".png")),
                              full_page=True)
        assert watch.errors == [], f"console errors on {path}: {watch.errors}"
        assert watch.offsite == [], f"requests leaving the site from {path}: {watch.offsite}"
        assert watch.failed == [], f"failed requests on {path}: {watch.failed}"
        weight, files = watch.gzip_weight(base_url)
        assert weight <= PAGE_MAX_GZIP_BYTES, (
            f"{path} loads {weight / 1e6:.2f} MB gzipped (at most {PAGE_MAX_GZIP_BYTES / 1e6} MB); "
            f"largest: {files[:5]}")
    finally:
        watch.close()


def test_site_size():
    total = sum(f.stat().st_size for f in SITE.rglob("*") if f.is_file())
    largest = sorted(((f.stat().st_size, str(f.relative_to(SITE))) for f in SITE.rglob("*")
                      if f.is_file()), reverse=True)[:5]
    assert total <= SITE_MAX_BYTES, (
        f"the site is {total / 1e6:.1f} MB on disk (at most {SITE_MAX_BYTES / 1e6:.0f} MB); "
        f"largest files: {largest}")


@pytest.mark.parametrize("path", PAGES)
def test_figures_have_alt_text(browser, base_url, path):
    """Every image says what it shows in a sentence (myst-nb cell metadata
    "mystnb": {"image": {"alt": ...}}, see CONTRIBUTING.md), not its file name."""
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"))
    try:
        watch.open(base_url + path)
        bad = bad_alt_texts(watch.page)
        assert bad == [], f"{path}: {len(bad)} images with no real alt text: {bad[:5]}"
    finally:
        watch.close()


def no_sideways_scroll(page) -> int:
    """How far the page is wider than the window, in px (0: no sideways scroll)."""
    # against the device's width: a phone browser widens its layout viewport to
    # fit content that overflows, so innerWidth alone would hide the overflow
    return page.evaluate("w => document.documentElement.scrollWidth - w", PHONE["width"])


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


@pytest.mark.parametrize("path", PAGES)
def test_code_blocks_fit_at_desktop_width(browser, base_url, path):
    """At 1280 px no code block (input or output) scrolls sideways: lines <= 79 columns."""
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"))
    try:
        watch.open(base_url + path)
        wide = watch.page.evaluate(
            """() => Array.from(document.querySelectorAll('article pre'))
                  .filter(p => p.getClientRects().length && p.scrollWidth > p.clientWidth + 1)
                  .map(p => p.textContent.split('\\n')
                             .reduce((a, b) => a.length >= b.length ? a : b).slice(0, 90))""")
        assert wide == [], f"{path}: {len(wide)} code blocks scroll sideways; longest lines: {wide[:5]}"
    finally:
        watch.close()


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


WIDGET_PAGES = [p for p in PAGES if '"application/vnd.jupyter.widget-state+json"' in
                (SITE / p).read_text(errors="ignore")] if SITE.exists() else []


def test_there_are_widget_pages():
    assert WIDGET_PAGES, "no page of the site carries widget state: were the notebooks executed?"


@pytest.mark.parametrize("path", WIDGET_PAGES)
def test_view_controls_switch_views(browser, base_url, path):
    """Every control drives its views in the browser: option k shows view k."""
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"))
    try:
        watch.open(base_url + path)
        roots = watch.page.locator(".pyxis-switcher, .pyxis-explorer")
        assert roots.count() > 0, f"{path} has widget state but no pyxis view"
        for r in range(roots.count()):
            root = roots.nth(r)
            control = root.locator(".pyxis-view-control").first
            stack = root.locator(".pyxis-view-stack").first
            n = option_count(control)
            shown = {}
            for k in list(range(1, n)) + [0]:
                label = choose(control, k)
                name, html = shown_view(stack)
                if name is not None:  # a view_grid names its views "outer / inner"
                    assert name == label or name.startswith(f"{label} / "), (
                        f"{path}, control {r}: option {label!r} shows {name!r}")
                shown[k] = html
            assert len(set(shown.values())) == n, f"{path}, control {r}: views do not change"
            inner = root.locator(".pyxis-inner-control")
            if inner.count():  # a view_grid: the second control picks within the first
                m = option_count(inner.first)
                inner_shown = {}
                for k in range(m):
                    label = choose(inner.first, k)
                    name, inner_shown[k] = shown_view(stack)
                    if name is not None:
                        assert name.endswith(f" / {label}"), f"{path}, grid {r}: {label!r} shows {name!r}"
                assert len(set(inner_shown.values())) == m, f"{path}, grid {r}: inner views"
        assert watch.errors == [], watch.errors
    finally:
        watch.close()


@pytest.mark.parametrize("path", WIDGET_PAGES)
def test_explorer_mask_toggle(browser, base_url, path):
    """The causal view has zeros above the diagonal and the no-mask view does not;
    the query-token choice changes the sentence."""
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"))
    try:
        watch.open(base_url + path)
        explorers = watch.page.locator(".pyxis-explorer")
        for e in range(explorers.count()):
            root = explorers.nth(e)
            toggle = root.locator(".pyxis-view-control").first
            stack = root.locator(".pyxis-view-stack").first
            for k in range(option_count(toggle)):
                label = choose(toggle, k)
                name, _ = shown_view(stack)
                assert name == label
                view = stack.locator(".pyxis-view").first
                w = json.loads(view.get_attribute("data-weights"))
                above = [w[i][j] for i in range(len(w)) for j in range(len(w[i])) if j > i]
                if "causal" in label:
                    assert all(x == 0 for x in above), f"{label}: nonzero weight above the diagonal"
                    assert w[0][0] == 1.0, "under the causal mask the first token attends only to itself"
                elif label == "no mask":
                    assert any(x > 0 for x in above), "no mask: expected weight above the diagonal"
            query = root.locator(".pyxis-query-control")
            sentences = root.locator(".pyxis-describe-stack")
            texts = set()
            for i in range(option_count(query)):
                token = choose(query, i).split(": ", 1)[1]
                text = sentences.inner_text().strip()
                assert text.startswith(f"'{token}' attends"), text
                texts.add(text)
                # the heatmap shown is the one with this query's row outlined
                shown = stack.evaluate(
                    """el => Array.from(el.querySelectorAll('.pyxis-view'))
                          .filter(v => v.getClientRects().length > 0)
                          .map(v => v.getAttribute('data-query'))""")
                assert shown == [str(i)], f"query {i} shows heatmap frames {shown}"
            assert len(texts) == option_count(query), "each query token must get its own sentence"
        assert watch.errors == [], watch.errors
    finally:
        watch.close()


def test_site_works_from_file(browser):
    """_build/html/index.html opened as a file: it reaches the intro, widgets render."""
    watch = PageWatch(browser, ("file://", "data:", "blob:", "about:"))
    try:
        watch.page.goto((SITE / "index.html").as_uri(), wait_until="load")
        watch.page.wait_for_url("**/book/intro.html", timeout=10_000)
        for path in WIDGET_PAGES:
            n = watch.open((SITE / path).as_uri())
            assert watch.page.locator(".widget-subarea > .jupyter-widgets").count() == n
        assert watch.errors == [], watch.errors
        assert watch.offsite == [], watch.offsite
    finally:
        watch.close()


CONTRAST_JS = """([a, b]) => {
  const lum = el => {
    const [r, g, b] = getComputedStyle(el).backgroundColor.match(/[\\d.]+/g).slice(0, 3)
      .map(v => { v = v / 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}"""


def keyboard_focus(page, locator) -> float:
    """Focus an element as a keyboard user does (Tab from the element before it);
    return the width in px of its focus outline."""
    locator.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    assert locator.evaluate("el => el === document.activeElement"), "not reachable with Tab"
    return locator.evaluate("el => parseFloat(getComputedStyle(el).outlineWidth) || 0")


@pytest.mark.parametrize("path", WIDGET_PAGES)
def test_widgets_keyboard_and_screen_reader(browser, base_url, path):
    """Each control works from the keyboard alone, and says its state (ARIA)."""
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"))
    try:
        watch.open(base_url + path)
        page = watch.page
        groups = page.locator(".widget-toggle-buttons")
        for g in range(groups.count()):
            buttons = groups.nth(g).locator("button.widget-toggle-button")
            n = buttons.count()
            for k in list(range(1, n)) + [0]:
                outline = keyboard_focus(page, buttons.nth(k))
                assert outline >= 2, f"{path}: toggle focus ring is {outline} px"
                page.keyboard.press("Enter")
                page.wait_for_timeout(100)
                pressed = [buttons.nth(i).get_attribute("aria-pressed") for i in range(n)]
                assert pressed == ["true" if i == k else "false" for i in range(n)], (
                    f"{path}, toggle {g}: after Enter on button {k}, aria-pressed is {pressed}")
                if n > 1:
                    other = buttons.nth((k + 1) % n)
                    ratio = page.evaluate(CONTRAST_JS, [buttons.nth(k).element_handle(),
                                                        other.element_handle()])
                    assert ratio >= 3, f"{path}: selected vs unselected button contrast {ratio:.2f}:1"
        sliders = page.locator(".noUi-handle")
        for s in range(sliders.count()):
            handle = sliders.nth(s)
            assert keyboard_focus(page, handle) >= 2, f"{path}: slider focus ring under 2 px"
            handle.press("Home")
            page.keyboard.press("ArrowRight")
            page.wait_for_timeout(100)
            name = handle.get_attribute("aria-label")
            text = handle.get_attribute("aria-valuetext") or ""
            control = handle.locator("xpath=ancestor::div[contains(@class, 'widget-inline-hbox')][1]")
            readout = control.locator(".widget-readout").inner_text().replace("\xa0", " ").strip()
            assert name, f"{path}: slider {s} has no accessible name"
            assert text == f"{name} {readout}", f"{path}: slider {s} reads {text!r}, shows {readout!r}"
        selects = page.locator(".jupyter-widgets select")
        for s in range(selects.count()):
            select = selects.nth(s)
            assert select.get_attribute("aria-label") or select.evaluate(
                "el => el.labels && el.labels.length > 0"), f"{path}: dropdown {s} has no name"
            assert keyboard_focus(page, select) >= 2, f"{path}: dropdown focus ring under 2 px"
            before = select.input_value()
            page.keyboard.press("ArrowDown" if select.evaluate("el => el.selectedIndex + 1 < el.length")
                                else "ArrowUp")
            page.wait_for_timeout(100)
            assert select.input_value() != before, f"{path}: dropdown {s} ignores the arrow keys"
        for d in range(page.locator(".pyxis-describe-stack").count()):
            stack = page.locator(".pyxis-describe-stack").nth(d)
            assert stack.get_attribute("aria-live") == "polite", f"{path}: the sentence is not announced"
        assert watch.errors == [], watch.errors
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
