"""The Japanese edition's search: every word finds every page that holds it
(issue #54, item 3). Loaded by _config_ja.yml alone.

Sphinx's Japanese search splits the text into words (TinySegmenter, or
Janome or MeCab with ``html_search_options``) when it builds the index, but
the browser splits a query only at spaces and punctuation, so a query is
one "word" that the index must hold as it is. A compound that the segmenter
cut (線形アテンション as 線形 + アテンション) was never found, and one that it
kept whole on some pages (KVキャッシュ) found only those: the browser looks a
word up inside longer ones only when no page holds it alone.

Here both sides split the same way, by characters: each run of Japanese
(kana, kanji) becomes its overlapping pairs of characters (線形アテンション:
線形 形ア アテ テン ンシ ショ ョン), and the index also holds every single
character, for one-character words (層, 行, 列, 章); a run of anything else
(Latin letters, digits) stays one word, as in the English edition. A query's
pairs must all be on a page, so a page that holds the words is always
found, whatever the segmenter would have made of them. Janome (a dictionary
segmenter, with or without the book's glossary as a user dictionary) found
fewer: tests/test_website_search.py says how many.
"""

from __future__ import annotations

import re

from sphinx.search.ja import SearchJapanese

# kana (with ー and the iteration marks), kanji (with 々 〆 ヶ), half-width
# katakana: the characters that Japanese writes without spaces
JAPANESE = ("\u3041-\u309f\u30a0-\u30ff\u3005\u3006\u3400-\u4dbf"
            "\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f")
RUNS = re.compile(f"[{JAPANESE}]+|[^{JAPANESE}]+")
IS_JAPANESE = re.compile(f"[{JAPANESE}]")
# the browser's words (searchtools.js: its splitQuery) are runs of letters,
# digits and _; Python's \w is the same set
WORDS = re.compile(r"\w+")


def split(text: str, query: bool = False) -> list[str]:
    """The index's terms of ``text`` (or, ``query``, a query's): each run of
    Japanese as its pairs of characters (and, in the index, its single
    characters too; a query of one character is that character), any other
    run of letters and digits as it is."""
    terms = []
    for word in WORDS.findall(text):
        for run in RUNS.findall(word):
            if not IS_JAPANESE.match(run):
                terms.append(run)
                continue
            pairs = [run[i:i + 2] for i in range(len(run) - 1)]
            if query:
                terms.extend(pairs or [run])
            else:
                terms.extend(pairs + list(run))
    return terms


# the same, in the browser (language_data.js, which searchtools.js reads)
JS_SPLITTER = r"""
// The Japanese edition's query splitter (_ext/pyxis_search_ja.py): each run
// of Japanese as its pairs of characters, as the index holds them.
const pyxisJapanese = /[%(japanese)s]+|[^%(japanese)s]+/gu;
function splitQuery(query) {
  return query
    .split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)
    .filter((word) => word)
    .flatMap((word) => word.match(pyxisJapanese))
    .flatMap((run) => {
      if (!/^[%(japanese)s]/u.test(run) || run.length < 2) return [run];
      const pairs = [];
      for (let i = 0; i + 1 < run.length; i++) pairs.push(run.slice(i, i + 2));
      return pairs;
    });
}
""" % {"japanese": JAPANESE.encode("ascii", "backslashreplace").decode()}


class SearchJapanesePairs(SearchJapanese):
    """Sphinx's Japanese search language, split into pairs of characters."""

    js_splitter_code = JS_SPLITTER

    def init(self, options: dict[str, str]) -> None:
        pass  # no segmenter

    def split(self, input: str) -> list[str]:
        return split(input)

    def word_filter(self, stemmed_word: str) -> bool:
        # one character only if it is Japanese: Sphinx keeps longer words
        return len(stemmed_word) > 1 or bool(IS_JAPANESE.match(stemmed_word))


def setup(app):
    app.add_search_language(SearchJapanesePairs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
