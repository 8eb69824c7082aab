"""The website check's loads on a phone of their own (390 x 844, a touch
screen, as Chromium emulates a phone).

Every page's phone checks run in test_website.py, on its one visit of the
page switched to phone emulation (website_phone.py). Here:

* a page loaded on the phone shows what that switched page shows, measured
  the same way: the ground the phone checks stand on;
* "Back to top", in dark mode on the phone, never covers a widget;
* every page read on a phone and from the keyboard (issue #41): printed
  outputs within their box, tables within their column at 1280 and 390 px,
  slider readouts that are text, slider handles of 24 px, no invisible Tab
  stops, and "Full size" in a widget readable in dark mode (one more visit
  of each page, ``reading_visit``).

Its own file so that pytest-xdist runs it beside test_website.py. Shared
parts: website.py, website_phone.py.
"""

from __future__ import annotations

import functools

import pytest

from website import (  # noqa: F401 (fixtures)
    MODEL_VIEW_PAGES, PAGES, PHONE, SHOWCASE, TEXT_CONTRAST, TWO_FRAMES, WAIT_FOR_MATHS,
    PageWatch, base_url, browser)
from website_phone import (
    MIN_TARGET_PX, OUTPUT_MAX_WIDE_SHARE, PHONE_CONTEXT, phone_measures, reading_visit,
    switched_to_phone)

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


def test_back_to_top_never_covers_a_widget(browser, base_url):
    """In dark mode on a phone, scrolling up through the explorer: "Back to
    top" is never drawn over a figure or widget (issue #30, item 13)."""
    watch = PageWatch(browser, base_url, **PHONE_CONTEXT,
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


def test_a_page_loaded_on_the_phone_reads_as_the_switched_page(browser, base_url):
    """The phone checks read each page loaded at 1280 px and then switched
    to phone emulation. On the first model-view page (figures, widgets, a
    model view, equations): the same measurements as a load on the phone."""
    path = MODEL_VIEW_PAGES[0]
    loaded = PageWatch(browser, base_url, **PHONE_CONTEXT)
    try:
        loaded.open(base_url + path)
        on_phone = phone_measures(loaded.page, path)
    finally:
        loaded.close()
    switched = PageWatch(browser, base_url)  # 1280 px
    try:
        switched.open(base_url + path)
        with switched_to_phone(switched) as page:
            seen = phone_measures(page, path)
    finally:
        switched.close()
    differ = {k: (on_phone[k], seen[k]) for k in on_phone if on_phone[k] != seen[k]}
    assert differ == {}, f"{path}: loaded on the phone vs switched to it: {differ}"


# ---- every page, read on a phone and from the keyboard (issue #41) ---------

@pytest.fixture(scope="module")
def reading(browser, base_url):
    """``reading(path)``: what one visit of ``path`` recorded (reading_visit)."""
    return functools.cache(functools.partial(reading_visit, browser, base_url))


def test_printed_outputs_fit_a_phone(reading):
    """At 390 px at most 10 % of the printed outputs are wider than their
    box: on a touch screen such a line is cut with no scrollbar, often just
    before the number the text quotes (issue #41, item 1; 85 % before
    outputs wrapped on a phone)."""
    shown, wide = 0, {}
    for path in PAGES:
        seen = reading(path)
        assert seen["errors"] == [], f"console errors on {path}: {seen['errors']}"
        shown += seen["outputs"]
        if seen["wide_outputs"]:
            wide[path] = seen["wide_outputs"]
    n_wide = sum(map(len, wide.values()))
    assert shown > 100, f"only {shown} printed outputs found on the site"
    assert n_wide <= OUTPUT_MAX_WIDE_SHARE * shown, (
        f"{n_wide} of {shown} printed outputs ({n_wide / shown:.0%}) are wider than "
        f"their box at 390 px [scroll px, box px, first line]: "
        + "; ".join(f"{p}: {w[:2]}" for p, w in wide.items()))


@pytest.mark.parametrize("path", PAGES)
def test_tables_fit_their_column(reading, path):
    """At 1280 and at 390 px every table fits its column: no column hidden
    behind a sideways scroll (issue #41, item 3: kv_cache's step table was
    850 px in a 688 px column; on a phone, long tables stack)."""
    seen = reading(path)
    assert seen["tables"] == [], f"{path} at 1280 px: tables cut [px, column px, first cell]: {seen['tables']}"
    cut = seen["phone_tables"]
    assert cut == [], f"{path} at 390 px: tables cut [px, column px, first cell]: {cut}"


@pytest.mark.parametrize("path", PAGES)
def test_slider_readouts_are_text(reading, path):
    """A slider's readout ("d = 8", "step 1") is text, not an edit field,
    as loaded and after the slider moves (issue #41, item 5)."""
    seen = reading(path)
    assert seen["editable"] == [], f"{path}: editable elements: {seen['editable']}"
    assert seen["editable_after"] == [], (
        f"{path}: editable after a slider moved: {seen['editable_after']}")


@pytest.mark.parametrize("path", PAGES)
def test_slider_handles_are_big_enough(reading, path):
    """Every slider handle is at least 24 x 24 px (WCAG 2.5.8; issue #41,
    item 14: they were 16 x 16)."""
    small = [h for h in reading(path)["handles"] if min(h) < MIN_TARGET_PX]
    assert small == [], f"{path}: slider handles under {MIN_TARGET_PX} px [w, h]: {small}"


@pytest.mark.parametrize("path", PAGES)
def test_no_invisible_tab_stops(reading, path):
    """No invisible copy button is a Tab stop (issue #41, item 14: 22 to 84
    a page, 81 Tab presses from the top to real_model's model view)."""
    n = reading(path)["hidden_tab_stops"]
    assert n == 0, f"{path}: {n} invisible copy buttons in the Tab order"


def test_full_size_in_a_widget_reads_in_dark_mode(browser, base_url):
    """On a phone in dark mode, the "Full size" button under a widget's
    picture reads at 4.5:1 or more against what it is drawn on (issue #41,
    item 7: 2.2:1)."""
    watch = PageWatch(browser, base_url, **PHONE_CONTEXT, color_scheme="dark")
    try:
        watch.open(base_url + SHOWCASE)
        watch.page.wait_for_function(WAIT_FOR_MATHS, timeout=30_000)
        watch.page.wait_for_function(TWO_FRAMES)
        buttons = watch.page.locator(".widget-subarea button.pyxis-full-size:visible")
        assert buttons.count(), f"{SHOWCASE}: no Full size button in a widget on the phone"
        ratios = [round(buttons.nth(k).evaluate(TEXT_CONTRAST), 2)
                  for k in range(buttons.count())]
        assert min(ratios) >= 4.5, f"{SHOWCASE}: Full size in a widget at {ratios}:1"
    finally:
        watch.close()
