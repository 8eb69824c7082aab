"""The phone's half of the website check: what a page shows at 390 x 844
on a touch screen, as Chromium emulates a phone.

The desktop visit of each page (test_website.py) loads it at 1280 px, records
what it shows there, then switches the same page to phone emulation
(``switched_to_phone``: CDP's device metrics with ``mobile``, the page's meta
viewport honoured, and touch), records what it shows there (``phone_view``), and
switches back before its widget checks. When this was chosen, the switched
page gave, on every page, the very measurements of a page loaded on the
phone; test_website_phone.py keeps checking that on a page with every kind of
output, against a load of its own.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from website import (
    DESKTOP, MODEL_VIEW_PAGES, MV_BELOW, PHONE, PICTURES, SCREENSHOTS, TWO_FRAMES, WAIT_FOR_MATHS,
    PageWatch, no_sideways_scroll, playwright_api, screenshot, shot_name)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "_ext"))
from pyxis_book import COLUMNS_ON_A_PHONE  # noqa: E402  (the site's own limit)

# the phone as Chromium emulates it (a touch screen, the page's meta viewport)
PHONE_CONTEXT = dict(viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True)

# code blocks (a cell's, a listing's) that still run past their box on the
# phone, where a touch screen gives no scrollbar: [scroll px, box px,
# the longest line], and how many code blocks are shown
CUT_CODE = """() => {
  const shown = Array.from(document.querySelectorAll(
      'article div[class^="highlight-"]:not(.output) pre'))
    .filter(p => p.getClientRects().length);
  return [shown.length, shown.filter(p => p.scrollWidth > p.clientWidth + 1)
    .map(p => [p.scrollWidth, p.clientWidth, p.textContent.split('\\n')
      .reduce((a, b) => a.length >= b.length ? a : b).slice(0, 50)])];
}"""

# each inline code name in a table cell that the browser laid out on more
# than one line; names with a space or a hyphen may wrap there
SPLIT_NAMES = """() => [...document.querySelectorAll('article td code')]
  .filter(c => !/[\\s-]/.test(c.textContent.trim()))
  .filter(c => new Set([...c.getClientRects()].map(r => Math.round(r.top))).size > 1)
  .map(c => c.textContent.trim())"""

# the first few elements of the article that reach past the screen's edge
TOO_WIDE = """() => Array.from(document.querySelectorAll('article *'))
  .filter(e => e.getBoundingClientRect().right > 391 && !e.closest('pre, .katex-display')
           && !e.classList.contains('skip-link'))
  .slice(0, 5).map(e => e.tagName + '.' + e.className + ': ' + e.textContent.slice(0, 40))"""

# display equations wider than their box on the phone: [maths px, box px, text]
PHONE_WIDE_EQUATIONS = r"""() => Array.from(document.querySelectorAll('article .katex-display'))
  .filter(m => m.getClientRects().length)
  .map(m => [m.scrollWidth, m.clientWidth,
             (m.querySelector('annotation') || m).textContent.slice(0, 50)])
  .filter(([math, box]) => math > box + 1)"""

# tables that reach past the screen or scroll inside their box:
# [right edge px, scroll width, client width, first cell's text]
WIDE_TABLES = """() => Array.from(document.querySelectorAll('article table'))
  .filter(t => t.getClientRects().length && !t.closest('.pyxis-view'))
  .map(t => [Math.round(t.getBoundingClientRect().right), t.scrollWidth, t.clientWidth,
             (t.querySelector('td') || t).textContent.trim().slice(0, 30)])
  .filter(([right, scroll, client]) => right > 390 || scroll > client + 1)"""

# printed tables (two or more lines of columns, the widest line at most
# COLUMNS_ON_A_PHONE characters) that a phone shows with a row broken over
# lines or cut, or in text under 9.5 px: [lines, lines shown, font px, first line]
BROKEN_TABLES = """(most) => Array.from(document.querySelectorAll('article .cell_output pre'))
  .filter(p => p.getClientRects().length)
  .map(p => [p, p.textContent.replace(/\\n$/, '').split('\\n')])
  .filter(([p, lines]) => lines.filter(l => /\\S {2,}\\S/.test(l)).length >= 2
                          && Math.max(...lines.map(l => l.length)) <= most)
  .map(([p, lines]) => {
    const cs = getComputedStyle(p), font = parseFloat(cs.fontSize);
    const inner = p.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
    const shown = Math.round(inner / (parseFloat(cs.lineHeight) || 1.2 * font));
    const cut = p.scrollWidth > p.clientWidth + 1;
    return [lines.length, cut ? -1 : shown, font, lines[0].slice(0, 30)];
  })
  .filter(([n, shown, font]) => shown !== n || font < 9.5)"""

# model-view thumbnails cut off by the view's right edge, or whose label
# ("L17 H0") is cut short: their labels
MV_THUMBS_CUT = """() => Array.from(document.querySelectorAll('.pyxis-mv-grid .widget-toggle-button'))
  .filter(b => b.getClientRects().length)
  .filter(b => b.getBoundingClientRect().right > b.closest('.pyxis-mv').getBoundingClientRect().right + 1
               || b.scrollWidth > b.clientWidth + 1)
  .map(b => b.textContent.trim())"""

# the smallest font of the shown model-view thumbnails' labels, px (None:
# no model view)
MV_THUMB_LABEL_PX = """() => { const px = Array.from(
    document.querySelectorAll('.pyxis-mv-grid .widget-toggle-button'))
  .filter(b => b.getClientRects().length)
  .map(b => parseFloat(getComputedStyle(b).fontSize));
  return px.length ? Math.min(...px) : null; }"""

# the full-size dialog: open or not, and its picture's natural and shown width
ZOOM = """() => { const d = document.querySelector('dialog.pyxis-zoom');
                  const i = d && d.querySelector('img');
                  return d && i ? {open: d.open,
                                   natural: parseFloat(i.style.width) || i.naturalWidth,
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


@contextlib.contextmanager
def switched_to_phone(watch):
    """``watch``'s page, as it is, shown as on the phone: 390 x 844, a
    mobile viewport (the page's meta viewport honoured) and touch; back to
    DESKTOP, the size PageWatch opens a page at, when the block ends."""
    cdp = watch.context.new_cdp_session(watch.page)
    metrics = dict(deviceScaleFactor=1)
    cdp.send("Emulation.setDeviceMetricsOverride", metrics | PHONE | {"mobile": True})
    cdp.send("Emulation.setTouchEmulationEnabled", {"enabled": True})
    watch.page.wait_for_function(TWO_FRAMES)
    try:
        yield watch.page
    finally:
        cdp.send("Emulation.setTouchEmulationEnabled", {"enabled": False})
        cdp.send("Emulation.setDeviceMetricsOverride", metrics | DESKTOP | {"mobile": False})
        cdp.detach()
        watch.page.wait_for_function(TWO_FRAMES)
        width = watch.page.evaluate("() => window.innerWidth")
        assert width == DESKTOP["width"], f"back at {width} px, not {DESKTOP['width']}"


def phone_measures(page, path: str) -> dict:
    """What the phone checks read on ``page``, shown as a phone shows it."""
    page.wait_for_function(WAIT_FOR_MATHS, timeout=30_000)
    # the Full size buttons come from a ResizeObserver, a frame after layout
    page.wait_for_function(TWO_FRAMES, timeout=30_000)
    over = no_sideways_scroll(page)
    seen = dict(over=over, wide=page.evaluate(TOO_WIDE) if over > 0 else [],
                split=page.evaluate(SPLIT_NAMES), pictures=page.evaluate(PICTURES),
                equations=page.evaluate(PHONE_WIDE_EQUATIONS),
                tables=page.evaluate(WIDE_TABLES), thumbs=page.evaluate(MV_THUMBS_CUT),
                cut_tables=page.evaluate(CUT_TABLES),
                thumb_label_px=page.evaluate(MV_THUMB_LABEL_PX),
                broken_tables=page.evaluate(BROKEN_TABLES, COLUMNS_ON_A_PHONE))
    seen["outputs"], seen["wide_outputs"] = page.evaluate(WIDE_OUTPUTS)
    seen["code_blocks"], seen["cut_code"] = page.evaluate(CUT_CODE)
    if path in MODEL_VIEW_PAGES:  # as drawn, before the dialog opens
        seen["mv_below"] = page.evaluate(MV_BELOW)
    return seen


def phone_view(watch, path: str, full_size: bool = True) -> dict:
    """The page switched to the phone: ``phone_measures``, then (with
    ``full_size``) the full-size dialog of its first scaled picture, and the
    console errors meanwhile; then back to the desktop."""
    with switched_to_phone(watch) as page:
        seen = phone_measures(page, path)
        seen["zoom"] = _open_full_size(page) if full_size else None
        seen["errors"] = list(watch.errors)
    return seen


def phone_screenshot(browser, base_url: str, path: str) -> None:
    """With PYXIS_SCREENSHOTS=1 (`make screenshots`), the page's full-page
    screenshot on the phone, from a load of its own: a full-page capture
    does not keep the switched page's emulation (it came out 1280 px wide
    in the layout, cut to 390)."""
    if not SCREENSHOTS:
        return
    watch = PageWatch(browser, base_url, **PHONE_CONTEXT)
    try:
        watch.open(base_url + path)
        watch.page.wait_for_function(WAIT_FOR_MATHS, timeout=30_000)
        screenshot(watch.page, "phone/" + shot_name(path))
    finally:
        watch.close()


# ---- reading on a phone, and what a reader can Tab to (issue #41) ----------

OUTPUT_MAX_WIDE_SHARE = 0.10  # printed outputs wider than their box at 390 px
MIN_TARGET_PX = 24            # a slider handle (WCAG 2.5.8)

# printed outputs (a cell's text, stream or result): how many are shown, and
# those wider than their box, which a touch screen gives no scrollbar:
# [scroll width, box width, first line]
WIDE_OUTPUTS = """() => {
  const shown = Array.from(document.querySelectorAll('article .cell_output pre'))
    .filter(p => p.getClientRects().length);
  return [shown.length, shown.filter(p => p.scrollWidth > p.clientWidth + 1)
    .map(p => [p.scrollWidth, p.clientWidth, p.textContent.split('\\n')[0].slice(0, 40)])];
}"""

# tables cut by their column: wider than the box that holds them (the theme
# wraps each in a box that scrolls), or scrolling inside themselves:
# [table px, box px, first cell's text]
CUT_TABLES = """() => Array.from(document.querySelectorAll('article table'))
  .filter(t => t.getClientRects().length && !t.closest('.pyxis-view'))
  .map(t => [Math.round(Math.max(t.getBoundingClientRect().width, t.scrollWidth)),
             Math.round(Math.min(t.parentElement.clientWidth,
                                 t.closest('article').clientWidth)),
             (t.querySelector('td') || t).textContent.trim().slice(0, 30)])
  .filter(([table, box]) => table > box + 1)"""

# what a reader could type into: elements of the article that are editable
# (a slider's readout made contenteditable by the widget manager)
EDITABLE = """() => Array.from(document.querySelectorAll('article *'))
  .filter(e => e.isContentEditable)
  .map(e => e.className + ': ' + e.textContent.trim().slice(0, 20)).slice(0, 5)"""

# every shown slider handle: [width, height] in px
HANDLES = """() => Array.from(document.querySelectorAll('article .noUi-handle'))
  .filter(h => h.getClientRects().length)
  .map(h => { const r = h.getBoundingClientRect();
              return [Math.round(r.width), Math.round(r.height)]; })"""

# Tab stops that cannot be seen: copy buttons (sphinx-copybutton) shown only
# under the pointer, yet in the Tab order
HIDDEN_TAB_STOPS = """() => Array.from(document.querySelectorAll('button.copybtn'))
  .filter(b => b.tabIndex >= 0 && !b.disabled
               && parseFloat(getComputedStyle(b).opacity) < 0.1).length"""


def reading_measures(page) -> dict:
    """At 1280 px, as loaded: tables cut by their column, editable
    elements, slider handles and hidden Tab stops (the page's phone
    measures add its printed outputs and tables at 390 px)."""
    page.wait_for_function(TWO_FRAMES)
    return dict(tables=page.evaluate(CUT_TABLES), handles=page.evaluate(HANDLES),
                hidden_tab_stops=page.evaluate(HIDDEN_TAB_STOPS),
                editable=page.evaluate(EDITABLE))


def editable_after_sliders(page) -> list:
    """Each shown slider moved one step from the keyboard: what is then
    editable (the widget manager sets a readout editable on each update)."""
    handles = page.locator("article .noUi-handle")
    for k in range(handles.count()):
        if handles.nth(k).is_visible():
            handles.nth(k).focus()
            page.keyboard.press("ArrowRight")
    page.wait_for_function(TWO_FRAMES)
    return page.evaluate(EDITABLE)
