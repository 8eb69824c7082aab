"""The website's search (issue #54, item 3), in the browser, on the built
site (`make site`): the Japanese edition's search finds every page that
holds a glossary term, and the results' snippets give maths once.

* Every term of the glossary (locale/ja/GLOSSARY.md, its 日本語 column),
  searched in the Japanese edition, finds every page whose text holds it:
  Sphinx's own search (searchtools.js: the query split as the browser splits
  it, looked up in searchindex.js), run in the page for each term, against
  each page's main text as the browser reads it (a Latin term, "RoPE", as a
  word, in any case). The index and the query split Japanese into pairs of
  characters (_ext/pyxis_search_ja.py). Measured when the pairs were chosen: of the
  86 terms, Sphinx's default segmenter (TinySegmenter) found all the pages of 55,
  Janome 50 (76 with the glossary as its user dictionary), the pairs 86;
  線形アテンション none of its 4 pages but with the pairs, KVキャッシュ 4 of
  its 11.
* A snippet under a result gives each formula once, in plain letters: it
  quoted KaTeX's three renderings of it ("トークンt+1t + 1t+1"), in both
  editions (_static/pyxis-search.js).

The sites checked are _build/html and _build/html/ja, or the folders that
PYXIS_SEARCH_SITE and PYXIS_SEARCH_SITE_JA name (a build of one's own).
"""

from __future__ import annotations

import functools
import os
import re
import threading
from pathlib import Path

import pytest

from website import (  # noqa: F401 (fixtures)
    ROOT, SITE, PageWatch, _QuietHandler, _QuietServer, browser)

SITE_EN = Path(os.environ.get("PYXIS_SEARCH_SITE", SITE))
SITE_JA = Path(os.environ.get("PYXIS_SEARCH_SITE_JA", SITE / "ja"))
GLOSSARY = ROOT / "locale" / "ja" / "GLOSSARY.md"


def glossary_terms() -> list[str]:
    """GLOSSARY.md's Japanese column (as tests/test_japanese.py reads it)."""
    terms = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or cells[0] == "English" \
                or set(cells[0]) <= set("-: "):
            continue
        terms.append(cells[1])
    return list(dict.fromkeys(terms))


@functools.cache
def served(site: Path):
    """``site`` served over HTTP (snippets are fetched: not from file://)."""
    if not (site / "search.html").exists():
        pytest.fail(f"{site} is not built: run `make site` (or `make test`) first")
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = _QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}/"


# Every page's own text, as the browser reads it: its [role=main] element
# (where Sphinx's snippets come from), less what the theme adds to it: the
# links to the previous and next pages (their titles), the contents lists
# and the solutions' "解答を表示" buttons.
CHROME = "script, style, .headerlink, nav, .toctree-wrapper, .prev-next-area, details.hide > summary"
PAGE_TEXTS = """async (chrome) => {
  const index = Search._index, texts = {};
  for (let i = 0; i < index.docnames.length; i++) {
    const html = await (await fetch(index.docnames[i] + ".html")).text();
    const doc = new DOMParser().parseFromString(html, "text/html");
    doc.querySelectorAll(chrome).forEach((e) => e.remove());
    const main = doc.querySelector('[role="main"]');
    texts[index.docnames[i]] = main ? main.textContent : "";
  }
  return texts;
}"""
# Sphinx's search, as the search page runs it for a query: the pages found
SEARCH = """(terms) => Object.fromEntries(terms.map((term) => [term,
  [...new Set(Search._performSearch(...Search._parseQuery(term)).map((r) => r[0]))]]))"""
LATIN = re.compile(r"[A-Za-z0-9_ ]+")


def holds(text: str, term: str) -> bool:
    """Whether ``text`` holds ``term``: a Latin one as a word, in any case."""
    if LATIN.fullmatch(term):
        return re.search(rf"(?<![A-Za-z0-9_]){re.escape(term)}(?![A-Za-z0-9_])",
                         text, re.IGNORECASE) is not None
    return term.lower() in text.lower()


def search_misses(browser, site: Path, terms: list[str]) -> dict[str, list[str]]:
    """Each term that the search of ``site`` misses a page of: those pages."""
    watch = PageWatch(browser, served(site))
    try:
        watch.page.goto(served(site) + "search.html", wait_until="load")
        watch.page.wait_for_function("() => Search.hasIndex()", timeout=10_000)
        texts = watch.page.evaluate(PAGE_TEXTS, CHROME)
        found = watch.page.evaluate(SEARCH, terms)
    finally:
        watch.close()
    misses = {}
    for term in terms:
        missed = [page for page, text in texts.items()
                  if holds(text, term) and page not in found[term]]
        if missed:
            misses[term] = missed
    return misses


def test_japanese_search_finds_every_glossary_term(browser):
    terms = glossary_terms()
    assert len(terms) > 50, f"{GLOSSARY}: {len(terms)} terms read"
    misses = search_misses(browser, SITE_JA, terms)
    assert not misses, (
        f"{len(misses)} of {len(terms)} glossary terms miss pages that hold them "
        "in the Japanese search: " + "; ".join(
            f"{term}: {', '.join(pages)}" for term, pages in misses.items()))


def test_japanese_search_finds_compounds(browser):
    """The issue's two: a compound the old index had cut in two, and one it
    held whole on some pages only."""
    misses = search_misses(browser, SITE_JA, ["線形アテンション", "KVキャッシュ"])
    assert not misses, misses


# A snippet's text (Search.htmlToText, as this site changes it) of every
# page, and the formulas in it whose KaTeX renderings all came along: their
# MathML, their TeX source and their HTML, one after the other.
SNIPPETS = """async () => {
  const out = [];
  for (const name of Search._index.docnames) {
    const html = await (await fetch(name + ".html")).text();
    const doc = new DOMParser().parseFromString(html, "text/html");
    const text = Search.htmlToText(html);
    const tripled = [...doc.querySelectorAll(".math .katex")]
      .map((k) => k.textContent).filter((t) => t.trim().length > 1 && text.includes(t));
    out.push({name, text, tripled});
  }
  return out;
}"""


@pytest.mark.parametrize("edition", ["en", "ja"])
def test_search_snippets_give_maths_once(browser, edition):
    site = SITE_JA if edition == "ja" else SITE_EN
    watch = PageWatch(browser, served(site))
    try:
        watch.page.goto(served(site) + "search.html", wait_until="load")
        watch.page.wait_for_function("() => Search.hasIndex()", timeout=10_000)
        pages = watch.page.evaluate(SNIPPETS)
    finally:
        watch.close()
    tripled = {p["name"]: p["tripled"][:3] for p in pages if p["tripled"]}
    assert not tripled, f"snippets give a formula three times: {tripled}"
    kv_cache = next(p["text"] for p in pages if p["name"] == "book/kv_cache")
    # the chapter's first inline formula, in its TeX spacing
    assert "t + 1" in kv_cache and "t+1t" not in kv_cache, kv_cache[:400]


def test_japanese_search_puts_the_titled_section_first(browser):
    """線形アテンション finds the 2024-26 chapter's section of that name
    first, as "linear attention" does in English (_static/pyxis-search.js)."""
    base = served(SITE_EN)  # the Japanese pages use the English site's files
    watch = PageWatch(browser, base)
    try:
        watch.page.goto(base + "ja/search.html?q=線形アテンション", wait_until="load")
        watch.page.wait_for_selector("#search-results li", timeout=15_000)
        first = watch.page.eval_on_selector("#search-results li a",
                                            "a => a.getAttribute('href')")
        assert first.endswith("modern_attention.html#linear-attention-and-gated-deltanet"), first
        assert watch.errors == [], watch.errors
    finally:
        watch.close()
