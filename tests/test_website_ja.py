"""The website check on the Japanese edition (issue #39): _build/html/ja.

`make site` builds the Japanese pages from the same notebooks as the
English ones, their text from the catalogs in locale/ja, and puts them at
_build/html/ja (tests/test_japanese.py checks the catalogs). Each Japanese
page is opened once at 1280 px, as test_website.py opens each English one,
then switched to a phone (390 x 844, touch) and back; checked:

* it logs no console error, no request leaves the site and none fails (the
  vendored widget manager and KaTeX's stylesheet and fonts, the figures: the English site's
  copies, tools/edition_assets.py), its widgets render, and it loads at
  most 1.5 MB gzipped;
* it is Japanese: ``<html lang="ja">``, its title translated, the theme's
  own labels in Japanese (検索, 目次, 前へ, 次へ);
* its language switch leads to the same page in English;
* on the phone it does not scroll sideways, and its figures and equations
  fit the screen.

And once: the chapter with every kind of widget has its controls switch
their views; every page of both editions links to its counterpart, and
every relative link and source of every page finds its file; the switch
works both ways on the site opened as files; the Japanese search finds
Japanese words; the Japanese edition stays small.

The widgets' clicks and keys, alt texts, code widths, maths and the
contrast checks are the English pages' (test_website.py): the same
outputs, drawn by the same scripts.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from urllib.parse import urlparse

import pytest

from website import (  # noqa: F401 (fixtures)
    PAGE_MAX_GZIP_BYTES, PAGES, PHONE, SHOWCASE, SITE, WAIT_FOR_MATHS,
    PageWatch, base_url, browser, record, replay, screenshot, shot_name)
from website_phone import phone_view
from test_website import HEIGHTS, check_view_controls

JA = "ja/"
JA_PAGES = [JA + p for p in PAGES]
# on disk: its pages (each embeds its views' pictures, drawn at 2x since
# issue 55: about 0.9 MB more than at 1x) and their search index (character
# pairs since issue 54: 354 kB), about 10.7 MB; the figures, wheel and scripts
# are the English site's, and a copy of them would add some 7 MB, which this
# still catches
JA_MAX_BYTES = 11 * 10**6

# the link to the other edition (_ext/pyxis_editions.py), as the browser
# resolves it
SWITCH = """() => { const a = document.querySelector('a.pyxis-edition-switch');
  return a && {href: a.href, lang: a.getAttribute('hreflang'), text: a.textContent.trim(),
               shown: a.getClientRects().length > 0}; }"""
# the theme's labels: its header, sidebars and the previous/next links
THEME_TEXT = """() => Array.from(document.querySelectorAll(
    '.bd-header-article, .bd-sidebar-primary, .bd-sidebar-secondary, .prev-next-area'))
  .map(e => e.innerText).join('\\n')"""
# the table of contents in the sidebar: its parts' captions and its pages
NAVIGATION = """() => Array.from(document.querySelectorAll(
    '.bd-sidebar-primary .caption-text, .bd-sidebar-primary nav a'))
  .map(e => e.textContent.trim())"""
CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
ENGLISH_LABELS = ("Search", "Contents", "previous", "next", "Skip to main content")


def _visit(browser, base_url: str, path: str) -> dict:
    """Open the Japanese page ``path`` once at 1280 px, record what it
    shows, then switch it to a phone and back."""
    watch = PageWatch(browser, base_url)
    try:
        n = watch.open(base_url + path)
        page = watch.page
        page.wait_for_function(WAIT_FOR_MATHS, timeout=30_000)
        seen = dict(n_widgets=n, heights=page.evaluate(HEIGHTS),
                    lang=page.evaluate("() => document.documentElement.lang"),
                    title=page.evaluate("() => document.querySelector('article h1').innerText"),
                    theme=page.evaluate(THEME_TEXT), switch=page.evaluate(SWITCH),
                    navigation=page.evaluate(NAVIGATION))
        seen["weight"], seen["files"] = watch.gzip_weight(base_url)
        screenshot(page, shot_name(path))
        seen.update(errors=list(watch.errors), offsite=list(watch.offsite),
                    failed=list(watch.failed))
        # the full-size dialog is the English pages' check: the same
        # script on the same pictures
        seen["phone"] = phone_view(watch, path, full_size=False)
        if path == JA + SHOWCASE:
            seen["view_controls"] = record(check_view_controls, path, watch)
        return seen
    finally:
        watch.close()


@pytest.fixture(scope="module")
def japanese(browser, base_url):
    """``japanese(path)``: what one visit of the Japanese page ``path``
    recorded; each page is opened once."""
    if not (SITE / JA / "index.html").exists():
        pytest.fail("the Japanese edition is not built: run `make site`")
    return functools.cache(functools.partial(_visit, browser, base_url))


@pytest.mark.parametrize("path", JA_PAGES)
def test_japanese_page_renders_offline(japanese, path):
    seen = japanese(path)
    assert len(seen["heights"]) == seen["n_widgets"]
    assert all(h > 20 for h in seen["heights"]), f"{path}: widgets with no height"
    assert seen["errors"] == [], f"console errors on {path}: {seen['errors']}"
    assert seen["offsite"] == [], f"requests leaving the site from {path}: {seen['offsite']}"
    assert seen["failed"] == [], f"failed requests on {path}: {seen['failed']}"
    assert seen["weight"] <= PAGE_MAX_GZIP_BYTES, (
        f"{path} loads {seen['weight'] / 1e6:.2f} MB gzipped; largest: {seen['files'][:5]}")


@pytest.mark.parametrize("path", JA_PAGES)
def test_japanese_page_is_in_japanese(japanese, path):
    """lang="ja", the page's title translated, the table of contents in
    the sidebar too (its parts' captions: _ext/pyxis_editions.py), and the
    theme's labels (search, contents, previous and next) in Japanese."""
    seen = japanese(path)
    assert seen["lang"] == "ja"
    assert CJK.search(seen["title"]), f"{path}: the title is not translated: {seen['title']!r}"
    english = [t for t in seen["navigation"] if not CJK.search(t)]
    assert len(seen["navigation"]) > len(PAGES) and english == [], (
        f"{path}: the sidebar's table of contents in English: {english}")
    assert "検索" in seen["theme"], f"{path}: no Japanese search label"
    english = [w for w in ENGLISH_LABELS if re.search(rf"\b{w}\b", seen["theme"])]
    assert english == [], f"{path}: the theme's labels in English: {english}"


@pytest.mark.parametrize("path", JA_PAGES)
def test_japanese_page_links_to_its_english_page(japanese, base_url, path):
    switch = japanese(path)["switch"]
    assert switch and switch["shown"], f"{path}: no language switch shown"
    assert (switch["href"], switch["lang"], switch["text"]) == (
        base_url + path.removeprefix(JA), "en", "English"), switch


@pytest.mark.parametrize("path", JA_PAGES)
def test_japanese_page_on_a_phone(japanese, path):
    """390 x 844: no sideways scroll; figures, display equations and code
    fit."""
    seen = japanese(path)["phone"]
    assert seen["over"] <= 0, f"{path} scrolls {seen['over']} px sideways: {seen['wide']}"
    wide = [(round(p["right"]), p["alt"]) for p in seen["pictures"] if p["right"] > PHONE["width"]]
    assert wide == [], f"{path}: pictures wider than the screen: {wide}"
    assert seen["equations"] == [], f"{path}: equations wider than the screen: {seen['equations']}"
    assert seen["cut_code"] == [], f"{path}: code cut at 390 px: {seen['cut_code'][:4]}"
    assert seen["errors"] == [], f"console errors on {path} on the phone: {seen['errors']}"


def test_japanese_widgets_switch_their_views(japanese):
    """The chapter with a switcher and an explorer: every control drives
    its views (test_website.py's check, on the Japanese page)."""
    replay(japanese(JA + SHOWCASE)["view_controls"])


# ---- the built files ---------------------------------------------------------

def _switch_target(page: Path) -> Path:
    html = page.read_text(encoding="utf-8")
    found = re.search(r'<a class="[^"]*pyxis-edition-switch[^"]*" href="([^"]+)"', html)
    assert found, f"{page.relative_to(SITE)}: no language switch"
    return (page.parent / found.group(1)).resolve()


@pytest.mark.parametrize("path", PAGES)
def test_every_page_links_to_its_counterpart_and_back(path):
    """Every English page has its Japanese page, each links to the other."""
    english, japanese = SITE / path, SITE / JA / path
    assert japanese.is_file(), f"no Japanese page for {path}"
    assert _switch_target(english) == japanese.resolve()
    assert _switch_target(japanese) == english.resolve()


LINK = re.compile(r'\b(?:href|src)="([^"#?]*)[^"]*"')


def test_every_relative_link_finds_its_file():
    """Every relative href and src of every page of both editions leads to
    a file of the site: the Japanese pages' links to the English site's
    figures, wheel and scripts (tools/edition_assets.py) too."""
    broken = []
    for page in sorted(SITE.rglob("*.html")):
        if "_static" in page.relative_to(SITE).parts:
            continue  # the theme's template macros, not pages
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if not target or urlparse(target).scheme or target.startswith("//"):
                continue
            file = (page.parent / target).resolve()
            if file.is_dir():
                file = file / "index.html"
            if not file.is_file():
                broken.append(f"{page.relative_to(SITE)}: {target}")
    assert broken == [], f"{len(broken)} links to no file: {broken[:8]}"


def test_japanese_edition_size():
    total = sum(f.stat().st_size for f in (SITE / JA).rglob("*") if f.is_file())
    assert total <= JA_MAX_BYTES, (
        f"the Japanese edition is {total / 1e6:.1f} MB on disk (at most "
        f"{JA_MAX_BYTES / 1e6:.0f} MB): are its figures and wheel shared?")


# ---- once ----------------------------------------------------------------------

def test_switch_works_both_ways_from_file(browser):
    """The site opened as files: a Japanese widget page renders its
    widgets, its switch opens the English page, and that page's switch
    brings the Japanese one back."""
    watch = PageWatch(browser, "file://")
    try:
        n = watch.open((SITE / JA / SHOWCASE).as_uri())
        assert n > 0 and watch.page.locator(".widget-subarea > .jupyter-widgets").count() == n
        watch.page.click("a.pyxis-edition-switch")
        watch.page.wait_for_url((SITE / SHOWCASE).as_uri(), timeout=10_000)
        assert watch.page.evaluate("() => document.documentElement.lang") == "en"
        watch.page.click("a.pyxis-edition-switch")
        watch.page.wait_for_url((SITE / JA / SHOWCASE).as_uri(), timeout=10_000)
        assert watch.page.evaluate("() => document.documentElement.lang") == "ja"
        assert watch.errors == [], watch.errors
        assert watch.offsite == [], watch.offsite
    finally:
        watch.close()


def test_switch_keeps_the_section_and_the_query(browser, base_url):
    """The language switch opens the other edition where the reader is
    (issue 54, item 6): at the section scrolled to (both editions give it
    the same id), and on the search page with the query."""
    watch = PageWatch(browser, base_url)
    try:
        page = watch.page
        watch.open(base_url + SHOWCASE)  # widgets drawn: the layout is final
        # a section halfway down whose text runs 200 px before the next one
        # starts: scrolled to 20 px from the top, with no fragment in the URL
        deep = page.evaluate("""() => {
          const s = [...document.querySelectorAll('article section section[id]')];
          const top = e => e.getBoundingClientRect().top + window.scrollY;
          const long = s.filter((e, i) => i + 1 < s.length && top(s[i + 1]) - top(e) > 200);
          return long[Math.floor(long.length / 2)].id; }""")
        page.evaluate(f"() => window.scrollTo(0, document.getElementById({deep!r})"
                      ".getBoundingClientRect().top + window.scrollY - 20)")
        # clicked where it is: Playwright's click would first scroll the
        # header's link into its own idea of view, and move the page
        page.evaluate("() => document.querySelector('a.pyxis-edition-switch').click()")
        page.wait_for_url(base_url + JA + SHOWCASE + "#" + deep, timeout=10_000)
        assert page.evaluate("() => document.documentElement.lang") == "ja"
        top = page.evaluate(f"() => document.getElementById({deep!r}).getBoundingClientRect().top")
        assert -5 <= top <= 200, f"section {deep} is at {top} px after the switch"
        page.goto(base_url + "search.html?q=mask", wait_until="load")
        page.click("a.pyxis-edition-switch")
        page.wait_for_url(base_url + JA + "search.html?q=mask", timeout=10_000)
        assert watch.errors == [], watch.errors
    finally:
        watch.close()


def test_japanese_search_finds_japanese_words(browser, base_url):
    """The Japanese search index (character pairs, _ext/pyxis_search_ja.py):
    a Japanese term finds the chapter about it, among Japanese pages."""
    watch = PageWatch(browser, base_url)
    try:
        watch.page.goto(base_url + JA + "search.html?q=因果マスク", wait_until="load")
        watch.page.wait_for_selector("#search-results li", timeout=10_000)
        hits = watch.page.eval_on_selector_all(
            "#search-results li a", "links => links.map(a => a.href)")
        assert base_url + JA + SHOWCASE in hits, hits[:5]
        assert all(h.startswith(base_url + JA) for h in hits), hits[:5]
        # the summary line says how many, in Japanese (Sphinx's catalog has
        # it empty: _ext/pyxis_editions.py)
        watch.page.wait_for_function(
            "() => /\\d+件/.test(document.querySelector('.search-summary')"
            "?.textContent || '')", timeout=10_000)
        assert watch.errors == [], watch.errors
    finally:
        watch.close()
