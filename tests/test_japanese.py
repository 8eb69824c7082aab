"""The Japanese edition's message catalogs (issue #39), which cannot go stale.

The Japanese pages are the English notebooks with every message of their
text translated through Sphinx's gettext: one catalog per page,
``locale/ja/LC_MESSAGES/book/<page>.po`` (`make gettext` updates them from
the English text; CONTRIBUTING.md says how to translate). Checked here:

* every message of every catalog is translated, none is fuzzy, and GNU
  ``msgfmt --check`` passes on each;
* the catalogs are the English book's: its messages, extracted afresh into
  a temporary folder, are exactly the catalogs' messages, page by page, so
  an English paragraph changed without its translation fails here;
* the catalogs name no path of the machine that made them;
* every number of a message is in its translation, as written ("26%",
  "1,000", "-0.5") or, with its scale, in Japanese units ("1.8 million"
  as 180万, "1.7 billion" as 17億), and its maths, inline code, link targets and MyST roles
  are kept;
* the glossary (``locale/ja/GLOSSARY.md``) holds: wherever a message uses a
  glossary term, its translation uses the term's one rendering, except in
  the messages listed, each with its reason, in
  ``locale/ja/glossary_exceptions.yml`` (the English word in another sense:
  a dict's key, a number's value); no listed exception is out of date; and
  no translation uses a rendering the glossary rules out;
* the Japanese build reads the catalogs with the setting they were
  extracted with (``gettext_compact``), or nothing would be translated.

The website check opens the Japanese pages: tests/test_website_ja.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

polib = pytest.importorskip("polib")

ROOT = Path(__file__).resolve().parents[1]
LOCALE = ROOT / "locale" / "ja"
CATALOG_DIR = LOCALE / "LC_MESSAGES"
CATALOGS = sorted(CATALOG_DIR.glob("book/*.po"))
GLOSSARY = LOCALE / "GLOSSARY.md"
EXCEPTIONS = LOCALE / "glossary_exceptions.yml"
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"

sys.path.insert(0, str(ROOT / "tools"))
from edition_config import edition_config  # noqa: E402


def page(catalog: Path) -> str:
    """locale/ja/LC_MESSAGES/book/qkv.po -> book/qkv"""
    return catalog.relative_to(CATALOG_DIR).with_suffix("").as_posix()


def entries(catalog: Path) -> list:
    """The catalog's messages (not its obsolete ones)."""
    return [e for e in polib.pofile(str(catalog)) if not e.obsolete]


IDS = [page(c) for c in CATALOGS]


def test_there_are_catalogs():
    assert CATALOGS, f"no catalogs in {CATALOG_DIR}: run `make gettext`"


# ---- translated, all of it ---------------------------------------------------

@pytest.mark.parametrize("catalog", CATALOGS, ids=IDS)
def test_every_message_is_translated(catalog):
    """No message without its translation, none fuzzy (a fuzzy one is
    the old translation of a message the English text has since changed:
    `make gettext` keeps it for the translator to update)."""
    todo = [e for e in entries(catalog) if not e.msgstr or "fuzzy" in e.flags]
    assert todo == [], (
        f"{page(catalog)}: {len(todo)} messages untranslated or fuzzy "
        f"(CONTRIBUTING.md, 'The Japanese edition'): "
        + "; ".join(repr(e.msgid[:70]) for e in todo[:5]))


@pytest.mark.parametrize("catalog", CATALOGS, ids=IDS)
def test_msgfmt_check_passes(catalog):
    """GNU gettext's own check of the catalog: its format, its header, and
    that it says only how many messages it translates."""
    msgfmt = shutil.which("msgfmt")
    if msgfmt is None:
        pytest.fail("msgfmt is missing: install GNU gettext (apt-get install gettext)")
    run = subprocess.run([msgfmt, "--check", "--statistics", "-o", "/dev/null",
                          str(catalog)], capture_output=True, text=True)
    assert run.returncode == 0, f"{page(catalog)}: {run.stderr.strip()}"
    assert re.fullmatch(r"\d+ translated messages?\.", run.stderr.strip()), (
        f"{page(catalog)}: {run.stderr.strip()}")


# ---- the English book's messages, no more, no fewer --------------------------

@pytest.fixture(scope="module")
def extracted(tmp_path_factory) -> dict[str, set[str]]:
    """The messages of the English book now, page by page, extracted as
    `make gettext` does, into a temporary folder."""
    out = tmp_path_factory.mktemp("gettext")
    run = subprocess.run(
        [str(JUPYTER_BOOK), "build", str(ROOT), "--builder", "custom",
         "--custom-builder", "gettext", "--path-output", str(out)],
        capture_output=True, text=True, cwd=ROOT)
    pot = out / "_build" / "gettext"
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return {p.relative_to(pot).with_suffix("").as_posix():
            {e.msgid for e in polib.pofile(str(p)) if e.msgid}
            for p in sorted(pot.rglob("*.pot"))}


def test_every_page_has_its_catalog(extracted):
    assert sorted(extracted) == IDS, (
        "the book's pages and the catalogs differ: run `make gettext`")


@pytest.mark.parametrize("catalog", CATALOGS, ids=IDS)
def test_catalog_holds_the_english_text_of_today(extracted, catalog):
    """A message of the English page that the catalog lacks is a paragraph
    written or changed since the catalog was updated: `make gettext`, then
    translate it (in the same commit as the English change)."""
    have = {e.msgid for e in entries(catalog)}
    want = extracted.get(page(catalog), set())
    new, gone = sorted(want - have), sorted(have - want)
    assert not new and not gone, (
        f"{page(catalog)}: {len(new)} messages of the English text are not in "
        f"the catalog, {len(gone)} of the catalog are no longer in the text; "
        f"run `make gettext` and translate. New: {[m[:60] for m in new[:3]]}; "
        f"gone: {[m[:60] for m in gone[:3]]}")


@pytest.mark.parametrize("catalog", CATALOGS, ids=IDS)
def test_catalog_names_no_machine_path(catalog):
    """Source locations, if any, are relative to the checkout and inside
    it: the catalogs are the same whoever runs `make gettext`, wherever."""
    bad = sorted({path for e in entries(catalog) for path, _ in e.occurrences
                  if Path(path).is_absolute()
                  or not (CATALOG_DIR / path).resolve().is_relative_to(ROOT)})
    assert bad == [], f"{page(catalog)}: locations outside the checkout: {bad[:3]}"


def test_the_japanese_build_reads_the_catalogs_as_extracted():
    """Sphinx finds a page's catalog by ``gettext_compact``; a build whose
    setting differs from the extraction's translates nothing and says
    nothing. One catalog per page (false) in both, and the Japanese build
    reads locale/ in Japanese."""
    english = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    japanese = edition_config(ROOT / "_config.yml", ROOT / "_config_ja.yml")
    en, ja = english["sphinx"]["config"], japanese["sphinx"]["config"]
    assert en["gettext_compact"] is False and ja["gettext_compact"] is False
    assert ja["language"] == "ja" and ja["locale_dirs"] == ["locale"]
    assert en.get("gettext_location") is False


# ---- what a translation keeps -----------------------------------------------

# a number, not the digit of a name ("Qwen3", "L0"); after Japanese text
# too ("まず12"), so the letter before it is an ASCII one
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])[-−]?\d[\d,]*(?:\.\d+)?")

# a number with its scale, in words ("1.8 million", "2 trillion") or in
# Japanese units ("180万", "17億", "2兆"): the same number, written
# differently in each language
SCALE = {"million": 10**6, "billion": 10**9, "trillion": 10**12,
         "万": 10**4, "億": 10**8, "兆": 10**12}
SCALED = re.compile(rf"{NUMBER.pattern}\s?(?:million|billion|trillion)(?![A-Za-z])"
                    rf"|(?:{NUMBER.pattern}[兆億万])+")  # 2億6,800万 too


def value(written: str) -> Decimal:
    """The number a written one stands for: "1,800,000", "1.8 million",
    "180万" and "1億8,000万" / "2億6,800万" as their sums of parts."""
    total = Decimal(0)
    for digits, unit in re.findall(rf"({NUMBER.pattern})\s?(million|billion|trillion|[兆億万])?",
                                   written):
        total += Decimal(digits.replace("−", "-").replace(",", "")) * SCALE.get(unit, 1)
    return total


def numbers(text: str) -> Counter:
    """The numbers written in ``text`` as digits, as written ("1,000",
    "0.5", "-3"); a minus sign counts as a hyphen. A number with its
    scale ("1.8 million", "180万") is kept whole, with its scale."""
    scaled = [m.group() for m in SCALED.finditer(text)]
    rest = SCALED.sub(" ", text)
    return Counter([n.replace("−", "-").rstrip(",") for n in NUMBER.findall(rest)]
                   + [re.sub(r"\s", "", n.replace("−", "-")) for n in scaled])


def lost_numbers(english: str, japanese: str) -> Counter:
    """The numbers of ``english`` that ``japanese`` does not write. A
    number is kept if written the same, or if one side writes it with a
    scale and the other has the same value ("1.8 million" as "180万" or
    "1,800,000", "1,800,000" as "180万"): Japanese counts in 万, 億, 兆."""
    en, ja = numbers(english), numbers(japanese)
    lost, spare = en - ja, ja - en
    for number in list(lost.elements()):
        same = next((other for other in spare
                     if (SCALED.fullmatch(number) or SCALED.fullmatch(other))
                     and value(other) == value(number)), None)
        if same is not None:
            lost[number] -= 1
            spare[same] -= 1
            spare += Counter()  # drop what is used up
    return +lost


@pytest.mark.parametrize("catalog", CATALOGS, ids=IDS)
def test_every_number_is_in_the_translation(catalog):
    """Every number the English quotes is in the Japanese, as written or,
    with a scale, as Japanese writes it (1.8 million as 180万, 1.7 billion
    as 17億); a number spelled out in English words is free."""
    missing = []
    for e in entries(catalog):
        lost = lost_numbers(e.msgid, e.msgstr)
        if e.msgstr and lost:
            missing.append(f"{e.msgid[:50]!r}: {dict(lost)}")
    assert missing == [], f"{page(catalog)}: numbers missing: {missing[:5]}"


@pytest.mark.parametrize(("english", "japanese"), [
    ("learned from 1.8 million tokens", "180万トークンから学習"),
    ("1.7 billion parameters", "17億個のパラメータ"),
    ("trained on 2 trillion tokens", "2兆トークンで学習"),
    ("1,800,000 tokens", "180万トークン"),
    ("1.8 million tokens", "1,800,000トークン"),
    ("3.7 million and 26%", "370万と26%"),
    ("268 million parameters", "2億6,800万個のパラメータ"),
])
def test_a_number_may_be_written_in_japanese_units(english, japanese):
    assert lost_numbers(english, japanese) == Counter()


@pytest.mark.parametrize(("english", "japanese"), [
    ("1.8 million tokens", "18万トークン"),
    ("1.7 billion parameters", "1.7個のパラメータ"),
    ("0.50 of the weight", "0.5の重み"),
    ("1,000 steps", "1000ステップ"),
])
def test_a_number_written_otherwise_is_lost(english, japanese):
    assert lost_numbers(english, japanese) != Counter()


# the markup a translation keeps as it is: maths, inline code, link targets,
# MyST roles
MARKUP = {
    "maths ($)": re.compile(r"\$"),
    "inline code (`)": re.compile(r"`"),
    "link target": re.compile(r"\]\(([^)]*)\)"),
    "MyST role": re.compile(r"\{[a-z:-]+\}`[^`]*`"),
}


@pytest.mark.parametrize("catalog", CATALOGS, ids=IDS)
def test_markup_is_kept(catalog):
    changed = []
    for e in entries(catalog):
        for name, pattern in MARKUP.items():
            a, b = Counter(pattern.findall(e.msgid)), Counter(pattern.findall(e.msgstr))
            if e.msgstr and a != b:
                changed.append(f"{e.msgid[:50]!r}: {name} {dict(a)} vs {dict(b)}")
    assert changed == [], f"{page(catalog)}: {changed[:5]}"


# ---- the glossary -------------------------------------------------------------

def glossary() -> list[dict]:
    """GLOSSARY.md's table: each term's English, its Japanese rendering,
    and the renderings it rules out (its "not" column)."""
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or cells[0] == "English" \
                or set(cells[0]) <= set("-: "):
            continue
        never = cells[3] if len(cells) > 3 else ""
        rows.append(dict(en=cells[0], ja=cells[1],
                         never=[n.strip() for n in never.split(",") if n.strip()]))
    return rows


TERMS = glossary()

# what a term found there is not the prose's own use of it: inline code,
# maths (a LaTeX environment too), link targets, MyST roles, HTML tags,
# URLs, and quoted text (a printed output, a widget caption or a paper's
# title, which stay English on the Japanese page)
NOT_PROSE = re.compile(
    r"`[^`]*`|\$\$.*?\$\$|\$[^$]*\$"
    r"|\\begin\{(?P<env>[a-z]+\*?)\}.*?\\end\{(?P=env)\}"
    r"|\]\([^)]*\)|\{[a-z:-]+\}|<[^>]*>|https?://\S+|\"[^\"]*\"|“[^”]*”", re.S)


def prose(text: str) -> str:
    return NOT_PROSE.sub(" ", text)


def term_pattern(term: str) -> re.Pattern:
    """The English term, its last word in the singular or plural, as a
    whole word (a hyphen joins words: "self-attention" is not "attention")."""
    *head, last = term.split(" ")
    plural = last[:-1] + "ies" if last.endswith("y") and last[-2:-1] not in "aeiou" \
        else last + ("es" if last.endswith(("s", "x", "ch", "sh")) else "s")
    words = " ".join(map(re.escape, head))
    forms = f"(?:{re.escape(last)}|{re.escape(plural)})"
    return re.compile(rf"(?<![\w-]){words + ' ' if head else ''}{forms}(?![\w-])", re.I)


PATTERNS = {row["en"]: term_pattern(row["en"]) for row in TERMS}

# the longer terms that hold a term ("permutation" in "permutation
# equivariance"): where one of them is used, the message is asked for its
# rendering, not the shorter term's
HOLDERS = {row["en"]: [PATTERNS[other["en"]] for other in TERMS
                       if other["en"] != row["en"] and PATTERNS[row["en"]].search(other["en"])]
           for row in TERMS}


def uses(english: str, term: str) -> bool:
    """Whether the English prose uses the term, not only inside a longer
    glossary term that holds it."""
    for holder in HOLDERS[term]:
        english = holder.sub(" ", english)
    return bool(PATTERNS[term].search(english))


def exceptions() -> dict[str, list[dict]]:
    """glossary_exceptions.yml: ``terms`` not asked for anywhere, and
    ``messages``, one (page, term, message start) each, each with its reason."""
    listed = yaml.safe_load(EXCEPTIONS.read_text(encoding="utf-8")) or {}
    return {"terms": listed.get("terms") or [], "messages": listed.get("messages") or []}


def glossary_misses() -> list[tuple[str, str, str]]:
    """(page, term, message) for every translated message whose English
    uses a glossary term in prose while its translation lacks the term's
    rendering (the terms that glossary_exceptions.yml exempts aside)."""
    exempt = {x["term"] for x in exceptions()["terms"]}
    misses = []
    for catalog in CATALOGS:
        for e in entries(catalog):
            if not e.msgstr:
                continue
            english, japanese = prose(e.msgid), prose(e.msgstr)
            for row in TERMS:
                if row["ja"] == row["en"] or row["en"] in exempt:
                    continue  # kept in Latin letters, or exempt
                if uses(english, row["en"]) and row["ja"] not in japanese:
                    misses.append((page(catalog), row["en"], e.msgid))
    return misses


def excepted(miss: tuple[str, str, str], exception: dict) -> bool:
    where, term, msgid = miss
    return (exception["page"] == where and exception["term"] == term
            and msgid.startswith(exception["message"]))


def test_glossary_has_one_rendering_per_term():
    seen = Counter(row["en"].lower() for row in TERMS)
    assert TERMS and [t for t, n in seen.items() if n > 1] == []
    assert all(row["ja"] for row in TERMS), "a glossary row without its rendering"


def test_every_glossary_term_is_rendered_the_glossary_way():
    """Where a message's English uses a glossary term, its translation uses
    the term's rendering (GLOSSARY.md), or the message is a listed
    exception with its reason (glossary_exceptions.yml): the English word
    in another sense there."""
    listed = exceptions()["messages"]
    unexplained = [m for m in glossary_misses()
                   if not any(excepted(m, x) for x in listed)]
    rendering = {row["en"]: row["ja"] for row in TERMS}
    assert unexplained == [], (
        f"{len(unexplained)} translations lack a glossary term's rendering "
        "(use it, or list the message in locale/ja/glossary_exceptions.yml "
        "with the reason): " + "; ".join(
            f"{p}: {t!r} -> {rendering[t]!r} in {m[:60]!r}" for p, t, m in unexplained[:8]))


def test_no_glossary_exception_is_out_of_date():
    """Each listed exception still excuses a message that needs it: its
    page, term and message start match a message whose translation lacks
    the rendering (a fixed or rewritten message leaves its exception
    behind, and this says so)."""
    misses = glossary_misses()
    terms = {row["en"] for row in TERMS}
    listed = exceptions()
    stale = [x for x in listed["messages"]
             if x.get("term") not in terms or not x.get("reason")
             or sum(excepted(m, x) for m in misses) != 1]
    assert stale == [], f"exceptions that excuse no message, or several: {stale[:5]}"
    bad = [x for x in listed["terms"] if x.get("term") not in terms or not x.get("reason")]
    assert bad == [], f"exempt terms that are not in the glossary, or have no reason: {bad}"


def test_no_translation_uses_a_rendering_the_glossary_rules_out():
    """A term is never translated two ways: none of the renderings that
    GLOSSARY.md's "not" column rules out appears in any translation."""
    found = []
    for catalog in CATALOGS:
        for e in entries(catalog):
            japanese = prose(e.msgstr)
            for row in TERMS:
                for wrong in row["never"]:
                    if wrong in japanese:
                        found.append(f"{page(catalog)}: {wrong!r} (the glossary "
                                     f"says {row['ja']!r}) in {e.msgstr[:50]!r}")
    assert found == [], found[:8]


# ---- the words inside the shared outputs (issue 54, item 2) ----------------

OUTPUTS = LOCALE / "outputs.po"
sys.path.insert(0, str(ROOT / "_ext"))
from pyxis_outputs import OutputCatalog, is_words, translate_notebook  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))


@pytest.fixture(scope="module")
def outputs_catalog() -> OutputCatalog:
    return OutputCatalog.read(OUTPUTS)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_output_word_has_its_message(outputs_catalog, chapter):
    """Each alt text, widget label and view sentence of the chapter's stored
    outputs matches a message of locale/ja/outputs.po, or the Japanese
    build would fail on it (`python tools/output_messages.py` lists them)."""
    import json

    nb = json.loads(chapter.read_text(encoding="utf-8"))
    missing = translate_notebook(nb, outputs_catalog)
    assert missing == [], f"{chapter.name}: {len(missing)} without a message: {missing[:3]}"


def test_every_output_message_is_used():
    """A message that no chapter's output matches any more is left over
    from an output since changed: remove it, or the catalog grows stale."""
    import json

    catalog = OutputCatalog.read(OUTPUTS)
    for chapter in CHAPTERS:
        translate_notebook(json.loads(chapter.read_text(encoding="utf-8")), catalog)
    unused = (set(catalog.exact) | {m.msgid for m in catalog.templates}) - catalog.used
    assert not unused, f"{len(unused)} messages of outputs.po match nothing: {sorted(unused)[:4]}"


def test_outputs_catalog_passes_msgfmt_check():
    msgfmt = shutil.which("msgfmt")
    if msgfmt is None:
        pytest.fail("msgfmt is missing: install GNU gettext (apt-get install gettext)")
    run = subprocess.run([msgfmt, "--check", "-o", "/dev/null", str(OUTPUTS)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_output_templates_fill_their_slots():
    catalog = OutputCatalog()
    catalog.add("causal mask", "因果マスク")
    catalog.add("step {i:n}", "ステップ{i}")
    catalog.add("{view}: row {q:n}", "{view}：{q}行目")
    assert catalog.translate("step 12") == "ステップ12"
    assert catalog.translate("step twelve") is None  # {i:n} takes a number only
    # a slot's text is translated in turn when it is a message
    assert catalog.translate("causal mask: row 3") == "因果マスク：3行目"
    assert catalog.translate("window: row 3") == "window：3行目"
    with pytest.raises(ValueError, match="slots"):
        catalog.add("head {h:n}", "ヘッド")
    assert is_words("Heatmap of attention weights")
    assert not is_words("'cat'") and not is_words("L17 H4") and not is_words("d = 8")
