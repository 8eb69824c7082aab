"""Shared parts of the website check (tests/test_website*.py): the built
site served on 127.0.0.1, Debian's Chromium through Playwright, and the
helpers that read widgets, images and code blocks off a page.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import os
import re
import subprocess
import sys
import threading
import time
from urllib.parse import unquote, urlparse
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
# full-page screenshots are for people to look at, not checks: taken only when
# asked (`make screenshots` sets it), as they cost a second a page
SCREENSHOTS = os.environ.get("PYXIS_SCREENSHOTS") == "1"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
WIDGET_VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]'
SITE_MAX_BYTES = 29 * 10**6  # on disk; 6 MB of it the wheel, which carries the model
# (26 MB until the Gemma 3 chapter, about 0.3 MB with its search entries, and
# the serving modules in the wheel took it to 26.02; the figures drawn at
# twice their size in pixels, issue 55, item 5, to 28.2: _images 0.67 ->
# 1.90 MB)
PAGE_MAX_GZIP_BYTES = 1_500_000    # one page and everything it loads, gzipped
MIN_CELL_NUMBER_PX = 9             # heatmap numbers on a phone
PHONE = {"width": 390, "height": 844}
# Layout shifts of a page as it loads (the Layout Instability API), each
# with when it came and what moved, in window.pyxisShifts; shifts right
# after an input do not count. Their sum is the cumulative layout shift,
# "good" at CLS_BUDGET or less.
OBSERVE_SHIFTS = """
window.pyxisShifts = [];
new PerformanceObserver(list => {
  for (const e of list.getEntries()) {
    if (!e.hadRecentInput) window.pyxisShifts.push({value: e.value, at: Math.round(e.startTime),
      moved: (e.sources || []).map(s => s.node ? (s.node.id || s.node.className || s.node.nodeName) : '')});
  }
}).observe({type: 'layout-shift', buffered: true});
"""
CLS_BUDGET = 0.1
DESKTOP = {"width": 1280, "height": 900}
SHOWCASE = "book/causal_mask.html"  # the chapter shot on a phone and in dark mode
# heatmap numbers drawn at 8 pt and 100 dpi, unless a figure says (data-annotation-px)
DEFAULT_ANNOTATION_PX = 8 * 100 / 72

playwright_api = pytest.importorskip("playwright.sync_api")

# resolves once the page's maths is typeset: at once, since KaTeX wrote it
# into the HTML at build time (kept for a typesetting script, should the
# site ever load one again)
WAIT_FOR_MATHS = """() => !window.MathJax || !MathJax.startup
                    || MathJax.startup.promise.then(() => true)"""
# resolves after the page has drawn two more frames: what its observers
# (the Full size buttons' ResizeObserver) do on a layout has been done
TWO_FRAMES = """() => new Promise(done => requestAnimationFrame(
                    () => requestAnimationFrame(() => done(true))))"""


# each drawn outline of an explorer's row (pyxis_nb.widgets: a CSS rule a
# query places it) and its picture, [top, bottom, left, right] in px; also
# tests/test_lab.py's, in JupyterLab
OUTLINE_BOXES = """el => Array.from(el.querySelectorAll('.pyxis-row'))
    .filter(o => getComputedStyle(o).display !== 'none')
    .map(o => [o, o.closest('.pyxis-over').querySelector('img')]
        .map(e => e.getBoundingClientRect())
        .map(r => [r.top, r.bottom, r.left, r.right]))"""


# Every shown picture: natural px (its own width in CSS px: a figure drawn at
# twice its size in pixels carries it as its style's width), shown px, right
# edge, alt, data-annotation-px, a widget's or not, scaled and given a "Full
# size" button or not (after the picture, or after the box that holds the
# picture and its overlay, span.pyxis-over: the explorer's outlined row)
PICTURES = r"""() => Array.from(document.querySelectorAll(
      'article div.cell_output img, article .pyxis-view img'))
  .filter(i => i.getClientRects().length && i.naturalWidth)
  .map(i => {
    const r = i.getBoundingClientRect(), f = i.closest('[data-annotation-px]');
    const b = (i.closest('.pyxis-over') || i).nextElementSibling;  // after its box
    return {natural: parseFloat(i.style.width) || i.naturalWidth, shown: r.width, right: r.right,
            alt: (i.alt || '').slice(0, 60), widget: !!i.closest('.pyxis-view'),
            numbers: f ? parseFloat(f.getAttribute('data-annotation-px')) : null,
            button: !!(b && b.classList.contains('pyxis-full-size') && !b.hidden
                       && b.getClientRects().length)};
  })"""


def screenshot(page, name: str) -> None:
    """A full-page screenshot to _build/screenshots/``name`` (a path under it),
    only when PYXIS_SCREENSHOTS=1 (`make screenshots`)."""
    if SCREENSHOTS:
        path = SHOTS / name
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path), full_page=True)


def shot_name(path: str) -> str:
    """The screenshot file of a page: book/qkv.html -> book_qkv.png."""
    return path.replace("/", "_").removesuffix(".html") + ".png"


def record(check, *args) -> BaseException | None:
    """Run one check of a shared page visit now, while the page is open, and
    keep how it failed (its AssertionError, or Playwright's error), or None.
    The test function replays it (``replay``), so it fails with the check's
    own message and traceback, as if it had run the check itself."""
    try:
        check(*args)
    except Exception as failure:  # noqa: BLE001 (replayed by the test)
        return failure
    return None


def replay(failure: BaseException | None) -> None:
    """Raise what a recorded check raised (see ``record``); nothing if it passed."""
    if failure is not None:
        raise failure


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


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # a page closed before its last file arrived (the first-paint check
        # stops at the paint) is no error of the site's
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class SlowLink:
    """One link of ``rate`` bytes a second that every response shares, as
    a phone's connection is shared by the files of a page."""

    def __init__(self, rate: float):
        self.rate, self.free_at, self.lock = rate, 0.0, threading.Lock()

    def send(self, n: int) -> None:
        """Wait until ``n`` more bytes have crossed the link."""
        with self.lock:  # the link is busy until free_at
            self.free_at = max(time.monotonic(), self.free_at) + n / self.rate
            done = self.free_at
        time.sleep(max(0.0, done - time.monotonic()))


class _SlowHandler(_QuietHandler):
    """The site as a slow network serves it: ``latency`` seconds before each
    response, its bytes through the shared ``link`` in chunks of 16 KiB."""

    link: SlowLink
    latency: float

    def send_head(self):
        time.sleep(self.latency)
        return super().send_head()

    def copyfile(self, source, outputfile):
        while chunk := source.read(16 * 1024):
            self.link.send(len(chunk))
            outputfile.write(chunk)


def slow_handler(rate: float, latency: float) -> type:
    """A handler for ``serve_site`` that serves through one link of ``rate``
    bytes a second, ``latency`` seconds before each response. The network
    of the throttled checks is the server's, not Chromium's emulation (CDP's
    Network.emulateNetworkConditions), under which Chromium now and then
    stopped delivering a page's bytes or never fired its load event
    (microsoft/playwright#22676): a minute lost, and a load made again."""
    return type("SlowHandler", (_SlowHandler,), {"link": SlowLink(rate), "latency": latency})


def serve_site(handler=_QuietHandler):
    """Serve the built site on 127.0.0.1 with ``handler`` while the
    generator is open; yields its base URL (a fixture's body)."""
    if not (SITE / "index.html").exists():
        pytest.fail("the site is not built: run `make site` (or `make test`) first")
    server = _QuietServer(("127.0.0.1", 0), functools.partial(handler, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()


@pytest.fixture(scope="module")
def base_url():
    yield from serve_site()


def has_japanese_font() -> bool:
    """Whether fontconfig offers Chromium a font for Japanese text (without
    one every kana and kanji is drawn as an empty box, and the Japanese
    edition's layout measured on boxes, not on the glyphs a reader sees)."""
    try:
        out = subprocess.run(["fc-list", ":lang=ja"], capture_output=True,
                             text=True, check=False).stdout
    except FileNotFoundError:  # no fc-list (Debian's fontconfig): none can be listed
        return False
    return bool(out.strip())


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
    if not has_japanese_font():
        pytest.fail("no font for Japanese text (fc-list :lang=ja lists none): install Debian's "
                    "fonts-noto-cjk (apt-get install fontconfig fonts-noto-cjk)")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


# what a page may load besides the site itself: what it makes in the page
IN_PAGE = ("data:", "blob:", "about:")


class PageWatch:
    """Opens one page and records its console errors and off-site or failed
    requests: off-site is anything not under ``site`` (the served site's
    base URL, or "file://") nor made in the page (IN_PAGE)."""

    def __init__(self, browser, site: str, viewport=None, **options):
        self.context = browser.new_context(viewport=viewport or DESKTOP,
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

        def block(r):
            self.offsite.append(r.request.url)
            r.abort()

        # every request that does not start with an allowed prefix is blocked
        # and recorded; Playwright matches the pattern itself, so the site's
        # own requests go on without a round trip to this process each
        offsite = "^(?!" + "|".join(re.escape(a) for a in (site, *IN_PAGE)) + ")"
        self.page.route(re.compile(offsite), block)

    def open(self, url: str, timeout: float = 30_000):
        """Load ``url`` and wait until its views are drawn, its images
        decoded and its fonts loaded (each wait at most ``timeout`` ms);
        the number of views."""
        self.page.goto(url, wait_until="load", timeout=timeout)
        n = self.page.locator(WIDGET_VIEW).count()
        if n:
            # the manager replaces each view script with the rendered widget
            self.page.wait_for_function(
                "n => document.querySelectorAll('.widget-subarea > .jupyter-widgets').length >= n",
                arg=n, timeout=timeout,
            )
        # wait on the shown state, not a fixed pause: every image decoded
        # (a phone check reads their natural sizes) and the fonts loaded
        # (they set the code blocks' widths)
        self.page.wait_for_function(
            """() => document.fonts.status === 'loaded' && Array.from(
                   document.images).every(i => i.complete || i.loading === 'lazy')""",
            timeout=timeout)
        return n

    def close(self):
        self.context.close()

    def gzip_weight(self, base_url: str) -> tuple[int, list[tuple[int, str]]]:
        """Bytes, gzipped, of every site file this page requested; and the files."""
        sizes = []
        for url in dict.fromkeys(self.requested):
            if url.startswith(base_url):
                n = _gzip_size(SITE / unquote(urlparse(url).path).lstrip("/"))
                sizes.append((n, url.removeprefix(base_url)))
        return sum(n for n, _ in sizes), sorted(sizes, reverse=True)


@functools.lru_cache(maxsize=None)
def _gzip_size(file: Path) -> int:
    """A site file's size gzipped (once per file: every page loads the same scripts)."""
    return len(gzip.compress(file.read_bytes(), 6))


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


def until(ready, timeout: float = 5.0) -> bool:
    """Wait on the shown state instead of a fixed pause: poll ``ready()``
    until it is true (True) or ``timeout`` seconds pass (False). The caller
    then asserts what it waited for, so a state that never comes still fails
    with the check's own message."""
    end = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > end:
            return False
        time.sleep(0.005)
    return True


def choose(control, k: int) -> str:
    """Select option k of a toggle-buttons, dropdown or selection-slider widget;
    return the label the control now shows (once it shows option k)."""
    buttons = control.locator("button.widget-toggle-button")
    if buttons.count():
        buttons.nth(k).click()
        until(lambda: "mod-active" in (buttons.nth(k).get_attribute("class") or ""))
        label = buttons.nth(k).inner_text()
    elif control.locator("select").count():
        control.locator("select").select_option(index=k)
        label = control.locator("select option").nth(k).inner_text()
    else:
        # from where the handle is: one arrow key a step (Home for option 0),
        # so stepping through n options costs n key presses, not n * n / 2
        handle = control.locator(".noUi-handle")
        handle.focus()
        now = int(float(handle.get_attribute("aria-valuenow") or 0))
        if k == 0:
            handle.press("Home")
        for _ in range(abs(k - now) if k else 0):
            handle.press("ArrowRight" if k > now else "ArrowLeft")
        until(lambda: float(handle.get_attribute("aria-valuenow") or -1) == k)
        label = control.locator(".widget-readout").inner_text()
    return label.replace("\xa0", " ").strip()


def no_sideways_scroll(page) -> int:
    """How far the page is wider than the window, in px (0: no sideways scroll)."""
    # against the device's width: a phone browser widens its layout viewport to
    # fit content that overflows, so innerWidth alone would hide the overflow
    return page.evaluate("w => document.documentElement.scrollWidth - w", PHONE["width"])


WIDGET_PAGES = [p for p in PAGES if '"application/vnd.jupyter.widget-state+json"' in
                (SITE / p).read_text(errors="ignore")] if SITE.exists() else []

MODEL_VIEW_PAGES = [p for p in PAGES if "pyxis-mv-grid" in
                    (SITE / p).read_text(errors="ignore")] \
    if SITE.exists() else []


# the model view's output, before the widget manager draws it and after:
# the top of what follows it, and the output's height
MV_BELOW = """() => { const out = document.querySelector('.cell_output.pyxis-reserve');
  if (!out) return null;
  let cell = out.closest('.cell');  // the view may end its section
  while (!cell.nextElementSibling) cell = cell.parentElement;
  const next = cell.nextElementSibling;
  const view = out.querySelector('.widget-subarea');
  return {below: Math.round(next.getBoundingClientRect().top + window.scrollY),
          reserved: Math.round(out.getBoundingClientRect().height),
          drawn: view ? Math.round(view.getBoundingClientRect().height) : null}; }"""
MV_RESERVE_SLACK = 64  # px the reserved box may be taller than the view


def held_model_view_below(browser, base_url: str, path: str) -> dict:
    """MV_BELOW on ``path`` loaded at 1280 px with the widget manager held
    back (its script blocked), so the model view is never drawn, and on the
    same page switched to a phone (website_phone.switched_to_phone's
    emulation: a phone load measures the same, test_website_phone.py):
    ``{"desktop": ..., "phone": ...}``."""
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        page.route("**/widgets/embed.js", lambda route: route.abort())
        page.goto(base_url + path, wait_until="load")
        page.wait_for_function(WAIT_FOR_MATHS, timeout=30_000)
        seen = {"desktop": page.evaluate(MV_BELOW)}
        cdp = context.new_cdp_session(page)
        cdp.send("Emulation.setDeviceMetricsOverride",
                 {"deviceScaleFactor": 1, "mobile": True} | PHONE)
        cdp.send("Emulation.setTouchEmulationEnabled", {"enabled": True})
        page.wait_for_function(TWO_FRAMES)
        seen["phone"] = page.evaluate(MV_BELOW)
        return seen
    finally:
        context.close()


def check_model_view_reserve(path: str, width: int, before: dict | None,
                             after: dict | None) -> None:
    """The text below the model view stays put when it is drawn, and the
    box reserved for it is at most MV_RESERVE_SLACK px taller than it."""
    assert before and after, f"{path}: no reserved model view output"
    assert abs(after["below"] - before["below"]) <= 2, (
        f"{path} at {width} px: the text below the view moves from {before['below']} "
        f"to {after['below']} px when it is drawn")
    assert after["drawn"] is not None, f"{path} at {width} px: the model view was not drawn"
    assert after["reserved"] - after["drawn"] <= MV_RESERVE_SLACK, (
        f"{path} at {width} px: {after['reserved']} px reserved for a "
        f"{after['drawn']} px view")


CONTRAST_JS = """([a, b]) => {
  const lum = el => {
    const [r, g, b] = getComputedStyle(el).backgroundColor.match(/[\\d.]+/g).slice(0, 3)
      .map(v => { v = v / 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}"""


# the contrast of an element's text against the background it is drawn on
# (its own, else the nearest ancestor's that is not transparent)
TEXT_CONTRAST = """el => {
  const rgb = c => c.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(v => { v = v / 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((s, v, k) => s + [0.2126, 0.7152, 0.0722][k] * v, 0);
  let back = el, bg = null;
  while (back) {
    const c = rgb(getComputedStyle(back).backgroundColor);
    if (c.length < 4 || c[3] > 0) { bg = c; break; }
    back = back.parentElement;
  }
  bg = bg || [255, 255, 255];
  const [x, y] = [lum(rgb(getComputedStyle(el).color)), lum(bg)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}"""


def keyboard_focus(page, locator) -> float:
    """Focus an element as a keyboard user does (Tab from the element before it);
    return the width in px of its focus outline."""
    locator.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    focused, outline = locator.evaluate(
        """el => [el === document.activeElement,
                  parseFloat(getComputedStyle(el).outlineWidth) || 0]""")
    assert focused, "not reachable with Tab"
    return outline


