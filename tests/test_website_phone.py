"""The website check on a phone (390 x 844, a touch screen, as Chromium
emulates a phone): one visit of every page (the ``phone`` fixture) records
that

* no page scrolls sideways;
* a name set in code inside a table cell (the first page's module column,
  say) wraps between names, never inside one ("attentio|n", issue #21);
* no figure or widget picture is wider than the screen, and each one scaled
  down to its column has a "Full size" button that opens it at its own size
  in a dialog that Escape closes (test_website.py checks that at 1280 px the
  widget pictures show at their size and heatmap numbers are >= 9 px).

Its own file so that pytest-xdist runs it beside the checks at 1280 px
(test_website.py). With PYXIS_SCREENSHOTS=1 (`make screenshots`) a
full-page screenshot of each page goes to _build/screenshots/phone/.
Shared parts: website.py.
"""

from __future__ import annotations

import functools

import pytest

from website import (  # noqa: F401 (fixtures)
    MODEL_VIEW_PAGES, MV_BELOW, PAGES, PHONE, PICTURES, SHOWCASE, TWO_FRAMES, WAIT_FOR_MATHS,
    PageWatch, base_url, browser, check_model_view_reserve, held_model_view_below,
    no_sideways_scroll, playwright_api, screenshot, shot_name)

# the phone as Chromium emulates it (a touch screen, the page's meta viewport)
PHONE_CONTEXT = dict(viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True)

# each inline code name in a table cell that the browser laid out on more
# than one line; names with a space or a hyphen may wrap there
SPLIT_NAMES = """() => [...document.querySelectorAll('article td code')]
  .filter(c => !/[\\s-]/.test(c.textContent.trim()))
  .filter(c => new Set([...c.getClientRects()].map(r => Math.round(r.top))).size > 1)
  .map(c => c.textContent.trim())"""

# the first few elements of the article that reach past the screen's edge
TOO_WIDE = """() => Array.from(document.querySelectorAll('article *'))
  .filter(e => e.getBoundingClientRect().right > 391 && !e.closest('pre, mjx-container')
           && !e.classList.contains('skip-link'))
  .slice(0, 5).map(e => e.tagName + '.' + e.className + ': ' + e.textContent.slice(0, 40))"""

# display equations wider than their box on the phone: [maths px, box px, text]
WIDE_EQUATIONS = r"""() => Array.from(document.querySelectorAll('article mjx-container[display="true"]'))
  .filter(m => m.getClientRects().length)
  .map(m => [Math.round(m.querySelector('mjx-math').getBoundingClientRect().width),
             Math.round(m.getBoundingClientRect().width),
             (m.querySelector('mjx-assistive-mml') || m).textContent.slice(0, 50)])
  .filter(([math, box]) => math > box + 1)"""

# tables that reach past the screen or scroll inside their box:
# [right edge px, scroll width, client width, first cell's text]
WIDE_TABLES = """() => Array.from(document.querySelectorAll('article table'))
  .filter(t => t.getClientRects().length && !t.closest('.pyxis-view'))
  .map(t => [Math.round(t.getBoundingClientRect().right), t.scrollWidth, t.clientWidth,
             (t.querySelector('td') || t).textContent.trim().slice(0, 30)])
  .filter(([right, scroll, client]) => right > 390 || scroll > client + 1)"""

# model-view thumbnails cut off by the view's right edge, or whose label
# ("L17 H0") is cut short: their labels
MV_THUMBS_CUT = """() => Array.from(document.querySelectorAll('.pyxis-mv-grid .widget-toggle-button'))
  .filter(b => b.getClientRects().length)
  .filter(b => b.getBoundingClientRect().right > b.closest('.pyxis-mv').getBoundingClientRect().right + 1
               || b.scrollWidth > b.clientWidth + 1)
  .map(b => b.textContent.trim())"""

# "Back to top", shown while the reader scrolls up: whether it covers a
# figure or a widget, at each of the page's widgets
BACK_TO_TOP = """() => { const pill = document.getElementById('pst-back-to-top');
  const style = pill && getComputedStyle(pill);
  if (!pill || style.display === 'none' || style.visibility === 'hidden') return null;
  const p = pill.getBoundingClientRect();
  return Array.from(document.querySelectorAll(
      'article .cell_output img, article .widget-subarea'))
    .map(e => e.getBoundingClientRect())
    .some(r => p.left < r.right && r.left < p.right && p.top < r.bottom && r.top < p.bottom); }"""

# the full-size dialog: open or not, and its picture's natural and shown width
ZOOM = """() => { const d = document.querySelector('dialog.pyxis-zoom');
                  const i = d && d.querySelector('img');
                  return d && i ? {open: d.open, natural: i.naturalWidth,
                                   shown: i.getBoundingClientRect().width} : null; }"""
ZOOM_SHOWN = """() => { const d = document.querySelector('dialog.pyxis-zoom');
                        const i = d && d.querySelector('img');
                        return !!(d && d.open && i && i.complete && i.naturalWidth); }"""
ZOOM_CLOSED = "() => !document.querySelector('dialog.pyxis-zoom').open"


def _wait(page, condition: str) -> None:
    """Wait until ``condition`` holds on the page, at most 5 s; the check
    that follows reads the page and says what it found if it never did."""
    try:
        page.wait_for_function(condition, timeout=5_000)
    except playwright_api.TimeoutError:
        pass


def _open_full_size(page) -> dict | None:
    """Press the first "Full size" button: what the dialog shows, then Escape."""
    button = page.locator("button.pyxis-full-size:visible")
    if not button.count():
        return None
    button.first.scroll_into_view_if_needed()
    button.first.click()
    _wait(page, ZOOM_SHOWN)
    opened = page.evaluate(ZOOM)
    if opened is None:
        return None
    page.keyboard.press("Escape")
    _wait(page, ZOOM_CLOSED)
    opened["closed"] = page.evaluate(ZOOM_CLOSED)
    return opened


def _phone_visit(browser, base_url: str, path: str) -> dict:
    """Open ``path`` once on the phone: what it shows as loaded, then the
    full-size dialog of its first scaled picture."""
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"), **PHONE_CONTEXT)
    try:
        watch.open(base_url + path)
        watch.page.wait_for_function(WAIT_FOR_MATHS, timeout=30_000)
        # the Full size buttons come from a ResizeObserver, a frame after layout
        watch.page.wait_for_function(TWO_FRAMES, timeout=30_000)
        over = no_sideways_scroll(watch.page)
        seen = dict(over=over, wide=watch.page.evaluate(TOO_WIDE) if over > 0 else [],
                    split=watch.page.evaluate(SPLIT_NAMES),
                    pictures=watch.page.evaluate(PICTURES),
                    equations=watch.page.evaluate(WIDE_EQUATIONS),
                    tables=watch.page.evaluate(WIDE_TABLES),
                    thumbs=watch.page.evaluate(MV_THUMBS_CUT))
        if path in MODEL_VIEW_PAGES:  # as drawn, before the dialog opens
            seen["mv_below"] = watch.page.evaluate(MV_BELOW)
        seen["zoom"] = _open_full_size(watch.page)
        screenshot(watch.page, "phone/" + shot_name(path))
        seen["errors"] = list(watch.errors)
        return seen
    finally:
        watch.close()


@pytest.fixture(scope="module")
def phone(browser, base_url):
    """``phone(path)``: what one visit of ``path`` on the phone recorded."""
    return functools.cache(functools.partial(_phone_visit, browser, base_url))


@pytest.mark.parametrize("path", PAGES)
def test_phone(phone, path):
    """390 x 844: the page does not scroll sideways; table names stay whole."""
    seen = phone(path)
    over = seen["over"]
    assert over <= 0, f"{path} scrolls {over} px sideways at 390 px; too wide: {seen['wide']}"
    split = seen["split"]
    assert split == [], f"{path}: names broken across lines at 390 px: {split[:8]}"


@pytest.mark.parametrize("path", MODEL_VIEW_PAGES)
def test_model_view_height_is_reserved_on_a_phone(browser, base_url, phone, path):
    """On the phone too, the text below the model view stays put when the
    view is drawn (test_website.py: at 1280 px)."""
    check_model_view_reserve(path, PHONE["width"],
                             held_model_view_below(browser, base_url, path, **PHONE_CONTEXT),
                             phone(path)["mv_below"])


@pytest.mark.parametrize("path", PAGES)
def test_model_view_thumbnails_fit_a_phone(phone, path):
    """At 390 px every thumbnail of a model view shows whole, its label
    too: SmolLM2's 9 heads a layer are narrower than the Shakespeare
    model's 8, not cut off at the ninth."""
    cut = phone(path)["thumbs"]
    assert cut == [], f"{path}: model-view thumbnails cut at 390 px: {cut[:9]}"


@pytest.mark.parametrize("path", PAGES)
def test_display_equations_fit_a_phone(phone, path):
    """At 390 px every display equation fits its box: a long one is split
    over lines (aligned, gathered), not cut off with no sign that it
    scrolls (issue #30, item 9)."""
    wide = phone(path)["equations"]
    assert wide == [], f"{path}: display equations wider than the screen [px, box px, text]: {wide}"


def test_first_page_tables_fit_a_phone(phone):
    """At 390 px the first page's two tables (the chapters, the notation)
    neither reach past the screen nor hide columns behind a sideways scroll:
    their rows stack (issue #30, item 10). A chapter's numeric table still
    scrolls inside its own box (test_phone: the page itself never does)."""
    wide = phone(PAGES[0])["tables"]
    assert wide == [], f"{PAGES[0]}: tables too wide [right, scroll, client, first cell]: {wide}"


def test_back_to_top_never_covers_a_widget(browser, base_url):
    """In dark mode on a phone, scrolling up through the explorer: "Back to
    top" is never drawn over a figure or widget (issue #30, item 13)."""
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"), viewport=PHONE,
                      device_scale_factor=1, is_mobile=True, has_touch=True,
                      color_scheme="dark")
    try:
        watch.open(base_url + SHOWCASE)
        page = watch.page
        tops = page.evaluate("""() => Array.from(document.querySelectorAll(
            'article .widget-subarea, article .cell_output img'))
            .map(e => Math.round(e.getBoundingClientRect().top + window.scrollY))""")
        covered, shown = [], 0
        for top in tops[:6]:
            for offset in (200, 500):  # the element near the pill, then above it
                page.evaluate(f"() => window.scrollTo(0, {top - offset + 300})")
                page.wait_for_function(TWO_FRAMES)
                page.evaluate(f"() => window.scrollTo(0, {top - offset})")  # up
                page.wait_for_function(TWO_FRAMES)
                page.wait_for_function(TWO_FRAMES)
                state = page.evaluate(BACK_TO_TOP)
                shown += state is not None
                if state:
                    covered.append(top)
        assert covered == [], f"Back to top covers a widget or figure at {covered}"
        assert shown > 0, "Back to top never showed while scrolling up"
        assert watch.errors == [], watch.errors
    finally:
        watch.close()


@pytest.mark.parametrize("path", PAGES)
def test_figures_fit_a_phone(phone, path):
    """At 390 px every figure and widget picture fits the screen; each one
    scaled down has a "Full size" button, and the button opens it at its
    own size in a dialog that Escape closes."""
    seen = phone(path)
    assert seen["errors"] == [], f"console errors on {path}: {seen['errors']}"
    pictures = seen["pictures"]
    wide = [(round(p["right"]), p["alt"]) for p in pictures if p["right"] > PHONE["width"]]
    assert wide == [], f"{path}: pictures wider than the {PHONE['width']} px screen: {wide}"
    unmarked = [p["alt"] for p in pictures if p["shown"] < p["natural"] - 1 and not p["button"]]
    assert unmarked == [], f"{path}: scaled pictures with no Full size button: {unmarked}"
    if any(p["button"] for p in pictures):
        zoom = seen["zoom"]
        assert zoom and zoom["open"], f"{path}: the Full size button opened no dialog"
        assert abs(zoom["shown"] - zoom["natural"]) <= 1, f"{path}: dialog shows {zoom}"
        assert zoom["closed"], f"{path}: Escape did not close the full-size dialog"
