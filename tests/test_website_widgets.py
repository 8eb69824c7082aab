"""The website check, widgets: every view control switches its views in the
browser with no kernel, the explorer's causal view has zeros above the
diagonal, and every control works from the keyboard and tells a screen reader
its state. Shared parts: website.py.

Each widget page is opened once (the ``widget_page`` fixture) and the three
checks below read that visit, one after the other; none depends on the state
in which another leaves the controls, and each waits on the shown state (the
view a control selects, the attribute it sets), not on a fixed pause.
"""

from __future__ import annotations

import json

import pytest

from website import (  # noqa: F401 (fixtures)
    CONTRAST_JS, WIDGET_PAGES, PageWatch, base_url, browser, choose,
    keyboard_focus, option_count, shown_view, until, visible_views)


@pytest.fixture(scope="module", params=WIDGET_PAGES)
def widget_page(request, browser, base_url):
    """``(path, watch)``: one visit of a widget page at 1280 px, shared by the
    checks below (pytest runs them page by page, as the fixture is scoped to
    the module and parametrized by page)."""
    watch = PageWatch(browser, (base_url, "data:", "blob:", "about:"))
    try:
        watch.open(base_url + request.param)
        yield request.param, watch
    finally:
        watch.close()


def _shows(stack, label: str, before: str) -> bool:
    """Whether the stack shows option ``label``'s view: named ``label`` (or
    ``"label / inner"`` in a view_grid), or, if its views are unnamed, other
    HTML than ``before``."""
    names = visible_views(stack)
    if len(names) != 1 or names[0] is None:
        return len(names) > 1 or stack.inner_html() != before
    return names[0] == label or names[0].startswith(f"{label} / ")


def test_view_controls_switch_views(widget_page):
    """Every control drives its views in the browser: option k shows view k."""
    path, watch = widget_page
    roots = watch.page.locator(".pyxis-switcher, .pyxis-explorer")
    assert roots.count() > 0, f"{path} has widget state but no pyxis view"
    for r in range(roots.count()):
        root = roots.nth(r)
        control = root.locator(".pyxis-view-control").first
        stack = root.locator(".pyxis-view-stack").first
        n = option_count(control)
        shown, html = {}, stack.inner_html()
        for k in list(range(1, n)) + [0]:
            label = choose(control, k)
            until(lambda: _shows(stack, label, html))
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
                until(lambda: (visible_views(stack) + [None])[0] is None
                      or visible_views(stack)[0].endswith(f" / {label}"))
                name, inner_shown[k] = shown_view(stack)
                if name is not None:
                    assert name.endswith(f" / {label}"), f"{path}, grid {r}: {label!r} shows {name!r}"
            assert len(set(inner_shown.values())) == m, f"{path}, grid {r}: inner views"
    assert watch.errors == [], watch.errors


def test_explorer_mask_toggle(widget_page):
    """The causal view has zeros above the diagonal and the no-mask view does not;
    the query-token choice changes the sentence."""
    path, watch = widget_page
    explorers = watch.page.locator(".pyxis-explorer")
    for e in range(explorers.count()):
        root = explorers.nth(e)
        toggle = root.locator(".pyxis-view-control").first
        stack = root.locator(".pyxis-view-stack").first
        for k in range(option_count(toggle)):
            label = choose(toggle, k)
            until(lambda: visible_views(stack) == [label])
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

        def frames():  # the heatmap frames shown, by their query's row
            return stack.evaluate(
                """el => Array.from(el.querySelectorAll('.pyxis-view'))
                      .filter(v => v.getClientRects().length > 0)
                      .map(v => v.getAttribute('data-query'))""")
        texts, tokens = set(), set()
        for i in range(option_count(query)):
            token = choose(query, i).split(": ", 1)[1]
            tokens.add(token)
            until(lambda: frames() == [str(i)] and sentences.inner_text().strip()
                  .startswith(f"'{token}' attends"))
            text = sentences.inner_text().strip()
            assert text.startswith(f"'{token}' attends"), text
            texts.add(text)
            # the heatmap shown is the one with this query's row outlined
            shown = frames()
            assert shown == [str(i)], f"query {i} shows heatmap frames {shown}"
        # a token said twice (the trained-heads chapter) may read the same
        assert len(texts) >= len(tokens), "each query token must get its own sentence"
    assert watch.errors == [], watch.errors


def test_widgets_keyboard_and_screen_reader(widget_page):
    """Each control works from the keyboard alone, and says its state (ARIA)."""
    path, watch = widget_page
    page = watch.page
    groups = page.locator(".widget-toggle-buttons")
    for g in range(groups.count()):
        buttons = groups.nth(g).locator("button.widget-toggle-button")
        n = buttons.count()

        def pressed():
            return [buttons.nth(i).get_attribute("aria-pressed") for i in range(n)]
        for k in list(range(1, n)) + [0]:
            outline = keyboard_focus(page, buttons.nth(k))
            assert outline >= 2, f"{path}: toggle focus ring is {outline} px"
            page.keyboard.press("Enter")
            want = ["true" if i == k else "false" for i in range(n)]
            until(lambda: pressed() == want)
            now = pressed()
            assert now == want, (
                f"{path}, toggle {g}: after Enter on button {k}, aria-pressed is {now}")
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
        control = handle.locator("xpath=ancestor::div[contains(@class, 'widget-inline-hbox')][1]")
        shown = control.locator(".widget-readout")

        def readout():
            return shown.inner_text().replace("\xa0", " ").strip()
        until(lambda: float(handle.get_attribute("aria-valuenow") or -1) == 1
              and (handle.get_attribute("aria-valuetext") or "").endswith(readout()))
        name = handle.get_attribute("aria-label")
        text = handle.get_attribute("aria-valuetext") or ""
        assert name, f"{path}: slider {s} has no accessible name"
        assert text == f"{name} {readout()}", f"{path}: slider {s} reads {text!r}, shows {readout()!r}"
    selects = page.locator(".jupyter-widgets select")
    for s in range(selects.count()):
        select = selects.nth(s)
        assert select.get_attribute("aria-label") or select.evaluate(
            "el => el.labels && el.labels.length > 0"), f"{path}: dropdown {s} has no name"
        assert keyboard_focus(page, select) >= 2, f"{path}: dropdown focus ring under 2 px"
        before = select.input_value()
        page.keyboard.press("ArrowDown" if select.evaluate("el => el.selectedIndex + 1 < el.length")
                            else "ArrowUp")
        until(lambda: select.input_value() != before)
        assert select.input_value() != before, f"{path}: dropdown {s} ignores the arrow keys"
    for d in range(page.locator(".pyxis-describe-stack").count()):
        stack = page.locator(".pyxis-describe-stack").nth(d)
        assert stack.get_attribute("aria-live") == "polite", f"{path}: the sentence is not announced"
    assert watch.errors == [], watch.errors
