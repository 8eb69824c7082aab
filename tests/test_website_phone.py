"""The website check's loads on a phone of their own (390 x 844, a touch
screen, as Chromium emulates a phone).

Every page's phone checks run in test_website.py, on its one visit of the
page switched to phone emulation (website_phone.py). Here:

* a page loaded on the phone shows what that switched page shows, measured
  the same way: the ground the phone checks stand on;
* "Back to top", in dark mode on the phone, never covers a widget;
* "Full size" in a widget readable in dark mode.

Every page read on a phone and from the keyboard (issue #41: printed
outputs, tables, slider readouts and handles, hidden Tab stops) is checked
in test_website.py, on its one visit of the page.

Its own file so that pytest-xdist runs it beside test_website.py. Shared
parts: website.py, website_phone.py.
"""

from __future__ import annotations


from website import (  # noqa: F401 (fixtures)
    MODEL_VIEW_PAGES, PAGES, PHONE, SHOWCASE, TEXT_CONTRAST, TWO_FRAMES, WAIT_FOR_MATHS,
    PageWatch, base_url, browser)
from website_phone import PHONE_CONTEXT, phone_measures, switched_to_phone

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
