"""The papers one click away (issue 55, item 4), read from the notebooks' JSON
and the Japanese catalogs, no browser.

A chapter that cites a work ("Xiao et al. (2023)", "Michel, Levy and Neubig
(2019)", "(Shazeer, 2019)") ends with a "## References" section: one list
item per work, each opening with its anchor, ``<a id="ref-KEY"></a>``, and
giving the authors, the year, the title and a link (an arXiv abstract page,
a DOI, or the project's own page), or saying why there is none ("no link:
..."). Every such citation in the text is a link to its entry,
``<a href="#ref-KEY">Xiao et al. (2023)</a>``. (Raw HTML, not a Markdown
link ``[...](#ref-KEY)``: MyST resolves a ``#`` link only to a heading or a
Sphinx label and warns of any other, while the HTML anchor reaches the page
as written, in both editions.)
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))
LOCALE = ROOT / "locale" / "ja" / "LC_MESSAGES" / "book"

# chapters whose citations are not linked yet; each leaves the set when its
# references are written (strict: an xpass fails)
PENDING: set[str] = set()

ANCHOR = re.compile(r'<a id="ref-([a-z0-9]+)"></a>')
LINK = re.compile(r'<a href="#ref-([a-z0-9]+)">(.*?)</a>', re.S)
URL = re.compile(r"\]\((https?://[^)\s]+)\)|<(https?://[^>\s]+)>")
YEAR = r"(?:19|20)\d\d"
# the ways the book cites a work by its authors
CITATION = re.compile(
    r"\b[A-Z][\w-]+ et al\."                                   # Xiao et al.
    rf"|\b[A-Z][\w-]+(?:, [A-Z][\w-]+)* and\s+[A-Z][\w-]+(?: \(|,\s+){YEAR}\b"  # Kingma and Ba, 2015
    rf"|\(\s*(?:[A-Z][A-Za-z]+, )?[A-Z][a-z]+,\s+{YEAR}\)")    # (MQA, Shazeer, 2019)
# where a link may go: an arXiv abstract page, a DOI, or a named project's
# own page
ALLOWED = [
    re.compile(r"https://arxiv\.org/abs/\d{4}\.\d{4,5}"),
    re.compile(r"https://doi\.org/10\.\d{4,9}/\S+"),
    re.compile(r"https://transformer-circuits\.pub/\d{4}/[\w/.-]+"),
    re.compile(r"https://huggingface\.co/(?:blog/[\w.-]+|[\w.-]+/[\w.-]+)"),
    re.compile(r"https://pypi\.org/project/[\w.-]+/"),
    # a paper with no arXiv copy and no DOI (Orca, OSDI 2022): its page at
    # the conference; a method published as a repository (prompt lookup)
    re.compile(r"https://www\.usenix\.org/conference/\w+/presentation/[\w-]+"),
    re.compile(r"https://github\.com/[\w.-]+/[\w.-]+"),
]


def markdown_cells(path: Path) -> list[dict]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [c for c in nb["cells"] if c["cell_type"] == "markdown"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def split(path: Path) -> tuple[str, list[str]]:
    """(the chapter's text outside its references, its reference items)."""
    text, items = [], []
    cells = markdown_cells(path)
    for cell in cells:
        s = source(cell)
        if re.match(r"## References\s*$", s.split("\n", 1)[0]):
            assert cell is cells[-1], \
                f"{path.name}: References is not the last markdown cell"
            items = re.findall(r"^- (.*?)(?=\n- |\Z)", s, re.M | re.S)
        else:
            text.append(s)
    return "\n\n".join(text), items


def citations(text: str) -> list[tuple[int, int, str]]:
    """(start, end, citation) of every citation in a chapter's text."""
    return [(m.start(), m.end(), m.group(0)) for m in CITATION.finditer(text)]


def linked_spans(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(2), m.end(2), m.group(1)) for m in LINK.finditer(text)]


def entries(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        m = ANCHOR.match(item)
        assert m, f"a reference without its anchor: {item[:60]!r}"
        assert m.group(1) not in out, f"ref-{m.group(1)} twice"
        out[m.group(1)] = item
    return out


def _param(p: Path):
    marks = [pytest.mark.xfail(strict=True, reason="references not written yet")] \
        if p.stem in PENDING else []
    return pytest.param(p, marks=marks, id=p.stem)


PENDING_PARAMS = [_param(p) for p in CHAPTERS]
PARAMS = [pytest.param(p, id=p.stem) for p in CHAPTERS]


@pytest.mark.parametrize("path", PENDING_PARAMS)
def test_a_chapter_that_cites_has_its_references(path):
    text, items = split(path)
    cited = citations(text)
    if cited or LINK.search(text):
        assert items, (f"{path.name} cites {cited[0][2]!r} and has no "
                       "'## References' section")


@pytest.mark.parametrize("path", PENDING_PARAMS)
def test_every_citation_links_to_its_entry(path):
    text, items = split(path)
    spans = linked_spans(text)
    bare = [c for a, b, c in citations(text)
            if not any(s <= a and b <= e for s, e, _ in spans)]
    assert bare == [], f"{path.name}: citations without a link to their entry: {bare}"
    keys = set(entries(items))
    linked = {k for _, _, k in spans}
    assert linked <= keys, f"{path.name}: links to no entry: {sorted(linked - keys)}"
    assert keys <= linked, f"{path.name}: entries the text never cites: {sorted(keys - linked)}"


@pytest.mark.parametrize("path", PARAMS)
def test_every_entry_has_a_year_a_title_and_a_link(path):
    _, items = split(path)
    bad = []
    for key, item in entries(items).items():
        if not re.search(rf"\({YEAR}\)\.", item):
            bad.append(f"{key}: no '(year).'")
        urls = [a or b for a, b in URL.findall(item)]
        if not urls and "no link:" not in item:
            bad.append(f"{key}: no link, and no 'no link: <why>'")
        for url in urls:
            if not any(p.fullmatch(url) for p in ALLOWED):
                bad.append(f"{key}: {url} is not an arXiv abstract page, a DOI "
                           "or a named project page")
        if len(urls) != len(set(urls)):
            bad.append(f"{key}: a link twice")
    assert bad == [], f"{path.name}: " + "; ".join(bad)


def test_a_work_is_the_same_entry_in_every_chapter():
    seen: dict[str, tuple[str, str]] = {}
    bad = []
    for path in CHAPTERS:
        for key, item in entries(split(path)[1]).items():
            if key in seen and seen[key][1] != item:
                bad.append(f"ref-{key}: {seen[key][0]} and {path.stem} differ")
            seen.setdefault(key, (path.stem, item))
    assert bad == [], bad


def test_an_arxiv_number_names_one_work():
    owner: dict[str, str] = {}
    bad = []
    for path in CHAPTERS:
        for key, item in entries(split(path)[1]).items():
            for number in re.findall(r"arxiv\.org/abs/([\d.]+)", item):
                if owner.setdefault(number, key) != key:
                    bad.append(f"arXiv {number}: ref-{owner[number]} and ref-{key}")
    assert bad == [], bad


def test_the_citation_pattern_finds_the_book_s_forms():
    found = [c for _, _, c in citations(
        "as Xiao et al. (2023) and Michel, Levy and Neubig (2019) say; Adam "
        "(Kingma and Ba,\n2015); MQA (MQA, Shazeer, 2019); queries and keys (2 of them)")]
    assert found == ["Xiao et al.", "Michel, Levy and Neubig (2019",
                     "Kingma and Ba,\n2015", "(MQA, Shazeer, 2019)"]


# ---- the Japanese edition ----------------------------------------------------

def _catalog(path: Path):
    polib = pytest.importorskip("polib")
    po = LOCALE / f"{path.stem}.po"
    return polib.pofile(str(po)) if po.exists() else []


@pytest.mark.parametrize("path", PARAMS)
def test_the_japanese_text_links_the_same_entries(path):
    """Each translated message links the entries its English links (a
    Japanese sentence may name a work twice where the English names it
    once), and each entry keeps its anchor and its links."""
    bad = []
    for e in _catalog(path):
        if not e.msgstr or "fuzzy" in e.flags:
            continue
        want = Counter(k for k, _ in LINK.findall(e.msgid))
        got = Counter(k for k, _ in LINK.findall(e.msgstr))
        if set(want) != set(got) or any(got[k] < n for k, n in want.items()):
            bad.append(f"{e.msgid[:50]!r}: {dict(want)} vs {dict(got)}")
        if ANCHOR.match(e.msgid):
            if ANCHOR.findall(e.msgid) != ANCHOR.findall(e.msgstr):
                bad.append(f"{e.msgid[:40]!r}: the anchor is lost")
            if URL.findall(e.msgid) != URL.findall(e.msgstr):
                bad.append(f"{e.msgid[:40]!r}: the links differ")
        if e.msgid == "References" and e.msgstr != "参考文献":
            bad.append(f"'References' is {e.msgstr!r}")
    assert bad == [], f"{path.name}: " + "; ".join(bad)
