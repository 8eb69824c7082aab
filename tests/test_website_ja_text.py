"""Every translation reaches the Japanese page (issue 54, item 1).

tests/test_japanese.py holds the catalogs: complete, numbers and markup
kept. A complete catalog can still fail its reader: Sphinx drops a
translation it cannot parse in its place, without a warning. A message
whose translation begins "1. " is read as a list and replaced by the
English text (the KV-cache chapter's six step names showed in English on
the Japanese page, though the catalog had them). Here each translated
message's longest run of Japanese is looked for in the built page: its
text, or an attribute (alt, title, aria-label). Reads the files of
``make site``; no browser.
"""

from __future__ import annotations

import html
import json
import re
import sys

import pytest
from babel.messages import pofile

from website import SITE

LOCALE = SITE.parent.parent / "locale" / "ja" / "LC_MESSAGES"
CATALOGS = sorted(LOCALE.rglob("*.po"))
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\u3005\u30fc]+")
TAG = re.compile(r"<[^>]+>")
ATTRIBUTE = re.compile(r'(?:alt|title|aria-label|placeholder)="([^"]*)"')


def _page_text(path) -> str:
    """The page's visible text and its attributes' text, one string with
    no white space (a translation's run may be broken over lines)."""
    page = path.read_text(encoding="utf-8")
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    text = html.unescape(TAG.sub("", page) + " ".join(ATTRIBUTE.findall(page)))
    return re.sub(r"\s+", "", text)


def _longest_run(text: str) -> str:
    runs = JAPANESE.findall(text)
    return max(runs, key=len) if runs else ""


def _sought(translation: str) -> str:
    """What of a translation the page must show: a short one whole, as
    text (a table cell's "1．射影" where "射影" alone is found elsewhere on
    the page), less its markup; otherwise its longest run of Japanese."""
    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", translation)  # links
    plain = re.sub(r"\s+", "", re.sub(r"[`*]", "", plain))
    if len(plain) <= 30 and "$" not in plain and "<" not in plain:
        return plain
    return _longest_run(translation)


@pytest.mark.parametrize("catalog", CATALOGS, ids=lambda p: p.stem)
def test_every_translation_reaches_its_page(catalog):
    page = SITE / "ja" / catalog.relative_to(LOCALE).with_suffix(".html")
    if not page.is_file():
        pytest.skip(f"{page} is not built (make site)")
    text = _page_text(page)
    with catalog.open("rb") as f:
        messages = [m for m in pofile.read_po(f) if m.id and m.string]
    missing = [m.id[:60] for m in messages
               if JAPANESE.search(m.string) and _sought(m.string) not in text]
    assert len(messages) > 5, f"{catalog.name}: only {len(messages)} messages"
    assert not missing, (
        f"{catalog.name}: {len(missing)} translations are not on {page.name} "
        f"(English shown instead?): {missing[:6]}")


# labels the build writes in English, which a Japanese page shows in
# Japanese (_ext/pyxis_editions.py; issue 54, item 2)
ENGLISH_BODY_LABELS = ("Show source", "Hide source", "Toggle hidden content",
                       "Link to this heading", "Toggle primary sidebar",
                       "Toggle secondary sidebar", "Search this book",
                       "Color mode", "Source repositories", "System Settings",
                       "Link to this image", "Binder logo", "Colab logo")


@pytest.mark.parametrize("catalog", CATALOGS, ids=lambda p: p.stem)
def test_no_english_label_on_a_japanese_page(catalog):
    page = SITE / "ja" / catalog.relative_to(LOCALE).with_suffix(".html")
    if not page.is_file():
        pytest.skip(f"{page} is not built (make site)")
    body = page.read_text(encoding="utf-8")
    found = [label for label in ENGLISH_BODY_LABELS if label in body]
    assert not found, f"{page.name} shows {found} in English"


# ---- the words inside the shared outputs (issue 54, item 2) ----------------

sys.path.insert(0, str(SITE.parent.parent / "_ext"))
from pyxis_outputs import STATE, is_words  # noqa: E402

WIDGET_STATE = re.compile(
    rf'<script type="{re.escape(STATE)}">(.*?)</script>', re.S)
READER_ATTRIBUTE = re.compile(r'\b(?:alt|aria-label|title)="([^"]*)"')


def _reader_words(page: str) -> list[str]:
    """What a reader of the page meets in the outputs' words: every alt
    text, aria-label and title in the page and in its widgets, the
    widgets' labels and the sentences under their views."""
    found = [html.unescape(a) for a in READER_ATTRIBUTE.findall(page)]
    for state in WIDGET_STATE.findall(page):
        for model in json.loads(state)["state"].values():
            s = model["state"]
            found += [s[k] for k in ("description", "tooltip") if s.get(k)]
            found += list(s.get("_options_labels") or []) + list(s.get("tooltips") or [])
            value = s.get("value")
            if model["model_name"] == "HTMLModel" and isinstance(value, str):
                value = re.sub(r"<style\b.*?</style>", "", value, flags=re.S)
                found += [html.unescape(a) for a in READER_ATTRIBUTE.findall(value)]
                found += [html.unescape(t) for t in re.findall(r">([^<>]+)<", value)]
    return [t.strip() for t in found if t.strip()]


@pytest.mark.parametrize("catalog", CATALOGS, ids=lambda p: p.stem)
def test_no_english_alt_text_or_widget_label_on_a_japanese_page(catalog):
    """Outputs stay English (code, printouts, numbers), but their alt texts,
    the widgets' labels and the sentences under views are the reader's:
    none is English prose on a Japanese page (locale/ja/outputs.po). The
    English page has them, so the check cannot pass by finding nothing."""
    page = SITE / "ja" / catalog.relative_to(LOCALE).with_suffix(".html")
    if not page.is_file():
        pytest.skip(f"{page} is not built (make site)")
    words = _reader_words(page.read_text(encoding="utf-8"))
    # the language switch's title is in the language it leads to
    english = [w for w in words if is_words(w) and not JAPANESE.search(w)
               and w != "This page in English"]
    assert not english, (f"{page.name}: {len(english)} English alt texts or "
                         f"labels: {english[:4]}")
    original = _reader_words((SITE / page.relative_to(SITE / "ja")).read_text(
        encoding="utf-8"))
    assert sum(map(is_words, original)) >= sum(map(is_words, words)), page.name


def test_each_chapter_says_once_that_its_outputs_stay_english():
    """Under each chapter's first output, once (issue 54, item 2)."""
    from pyxis_outputs import OUTPUTS_NOTE

    note = _longest_run(OUTPUTS_NOTE["ja"])
    chapters = sorted((SITE.parent.parent / "book").glob("*.ipynb"))
    pages = [SITE / "ja" / "book" / f"{c.stem}.html" for c in chapters]
    if not all(p.is_file() for p in pages):
        pytest.skip("the Japanese edition is not built (make site)")
    counts = {p.stem: _page_text(p).count(note) for p in pages}
    assert set(counts.values()) == {1}, counts
