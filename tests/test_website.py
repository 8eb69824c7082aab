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
* the site works opened as a file (file://) too.

A full-page screenshot of each page goes to _build/screenshots/.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
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

    def __init__(self, browser, allowed_prefixes: tuple[str, ...]):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
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
