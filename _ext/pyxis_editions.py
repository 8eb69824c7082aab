"""The book's two editions, English and Japanese, linked page to page.

`make site` builds the English book into ``_build/html/`` and the Japanese
one, from the same notebooks and the message catalogs in ``locale/ja/``,
into ``_build/html/ja/`` (``_config_ja.yml``). This extension puts a link
to the same page in the other edition in every page's header (the
``pyxis-edition-switch.html`` template, before the theme's buttons), and
``<link rel="alternate" hreflang>`` tags for both editions in its head;
on the Japanese pages it gives the theme's header buttons the Japanese
labels that the theme's own catalog lacks, and translates the captions of
the table of contents (Foundations, ...), which sphinx-external-toc adds
after Sphinx has translated the page.

The link is relative (``../ja/book/qkv.html`` from ``book/qkv.html``,
``../../book/qkv.html`` back), so it works on the published site, on a
local server and on a copy opened as files, with nothing fetched. Which
edition a build is comes from its ``language`` (Sphinx's default, ``en``,
for the English build).
"""

from __future__ import annotations

import os
from pathlib import Path

from sphinx import addnodes
from sphinx.locale import init as init_locale
from sphinx.transforms import SphinxTransform
from sphinx.util.i18n import docname_to_domain

TEMPLATES = Path(__file__).parent / "templates"
SWITCH = "pyxis-edition-switch.html"

# language: (the edition's folder in the site, the link's text, its title);
# the text and the title are in the language the link leads to
EDITIONS = {
    "en": ("", "English", "This page in English"),
    "ja": ("ja/", "日本語", "このページの日本語版"),
}


# the labels of the theme's header buttons that its own Japanese catalog
# lacks (sphinx-book-theme 1.3.0), by language
BUTTON_LABELS = {
    "ja": {
        "Repository": "リポジトリ",
        "Open issue": "問題を報告",
        "Launch interactive content": "対話的に実行",
        "Launch on Binder": "Binderで起動",
        "Launch on Colab": "Colabで起動",
    },
}

# English the build writes into every page whatever its language: a folded
# listing's words, which each listing cell's own metadata sets in English
# (tools/portable_cells.py) over the edition's config, myst-nb's toggle, and
# the labels of Sphinx's and the theme's that their Japanese catalogs lack.
# Replaced in the written pages, as (English, translation) pairs, each with
# the quote or bracket around it so that only a label matches.
PAGE_LABELS = {
    "ja": [
        (">Show source<", ">ソースコードを表示<"),
        (">Hide source<", ">ソースコードを隠す<"),
        ('"Toggle hidden content"', '"隠れた内容の表示を切り替える"'),
        ('"Link to this heading"', '"この見出しへのリンク"'),
        ('"Toggle primary sidebar"', '"左のサイドバーを開閉"'),
        ('"Toggle secondary sidebar"', '"右のサイドバーを開閉"'),
        ('"Search this book..."', '"この本を検索..."'),
        ('"Color mode"', '"カラーモード"'),
        ('"Source repositories"', '"ソースのリポジトリ"'),
        ('"System Settings"', '"システムの設定"'),
        ('"Link to this image"', '"この画像へのリンク"'),
        ('alt="Binder logo"', 'alt="Binderのロゴ"'),
        ('alt="Colab logo"', 'alt="Colabのロゴ"'),
    ],
}

# the search page's messages that Sphinx's own catalog leaves empty, so the
# Japanese results page said nothing above its results: (message, translation)
SEARCH_MESSAGES = {
    "ja": [
        ("Search finished, found ${resultCount} page(s) matching the search "
         "query.",
         "検索が終わりました。検索語に一致するページが${resultCount}件見つかりました。"),
    ],
}


def _other(language: str) -> str:
    others = [code for code in EDITIONS if code != language]
    if language not in EDITIONS or len(others) != 1:
        raise ValueError(f"pyxis_editions: no edition for language "
                         f"{language!r}; editions are {sorted(EDITIONS)}")
    return others[0]


def edition_link(language: str, pagename: str) -> tuple[str, str]:
    """The other edition's language and the relative URL of ``pagename``
    there, from ``pagename`` in ``language``'s edition."""
    other = _other(language)
    # up to this edition's root, then up out of its folder to the site's
    up = "../" * (pagename.count("/") + EDITIONS[language][0].count("/"))
    return other, f"{up}{EDITIONS[other][0]}{pagename}.html"


def _config_inited(app, config):
    _other(config.language or "en")  # an unknown language fails the build
    config.templates_path.append(str(TEMPLATES))
    options = config.html_theme_options
    end = options.get("article_header_end", ["article-header-buttons.html"])
    if isinstance(end, str):
        end = [item.strip() for item in end.split(",") if item.strip()]
    if SWITCH not in end:
        options["article_header_end"] = [SWITCH, *end]


def _page_context(app, pagename, templatename, context, doctree):
    language = app.config.language or "en"
    other, href = edition_link(language, pagename)
    folder, label, title = EDITIONS[other]
    context["pyxis_edition_switch"] = dict(href=href, lang=other,
                                           label=label, title=title)
    base = (app.config.html_baseurl or "").removesuffix(EDITIONS[language][0])
    if base:  # the published URL of this page in each edition
        context["metatags"] = context.get("metatags", "") + "".join(
            f'\n<link rel="alternate" hreflang="{code}" '
            f'href="{base}{EDITIONS[code][0]}{pagename}.html" />'
            for code in EDITIONS)


def _label(buttons: list[dict], labels: dict[str, str]) -> None:
    for button in buttons:
        for key in ("text", "tooltip"):
            if button.get(key) in labels:
                button[key] = labels[button[key]]
        _label(button.get("buttons", []), labels)


def _button_labels(app, pagename, templatename, context, doctree):
    labels = BUTTON_LABELS.get(app.config.language or "en")
    if labels:
        _label(context.get("header_buttons", []), labels)


def _page_labels(app, exception):
    """The English labels of every written page, in the edition's language
    (``PAGE_LABELS``), and the search page's messages that Sphinx's catalog
    leaves empty (``SEARCH_MESSAGES``, in ``_static/translations.js``)."""
    labels = PAGE_LABELS.get(app.config.language or "en")
    if exception is not None or not labels or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = old = page.read_text(encoding="utf-8")
        for english, translated in labels:
            text = text.replace(english, translated)
        if text != old:
            page.write_text(text, encoding="utf-8")
    translations = Path(app.outdir) / "_static" / "translations.js"
    if translations.is_file():
        text = old = translations.read_text(encoding="utf-8")
        for english, translated in SEARCH_MESSAGES.get(app.config.language,
                                                       []):
            text = text.replace(f'"{english}": ""',
                                f'"{english}": "{translated}"')
        if text != old:
            translations.write_text(text, encoding="utf-8")


class TranslateTocCaptions(SphinxTransform):
    """The captions of the table of contents' parts, translated from the
    page's catalog. sphinx-external-toc inserts its toctrees (transform
    priority 100) after Sphinx has translated the page (20): the gettext
    builder extracts their captions, but the build would show them in
    English."""

    default_priority = 101

    def apply(self, **kwargs):
        if (self.config.language or "en") == "en":
            return
        config = self.config
        domain = docname_to_domain(self.env.docname, config.gettext_compact)
        dirs = [os.path.join(self.env.srcdir, d) for d in config.locale_dirs]
        catalog, found = init_locale(dirs, config.language, domain)
        if not found:
            return
        for toctree in self.document.findall(addnodes.toctree):
            if toctree.get("caption"):
                toctree["caption"] = catalog.gettext(toctree["caption"])


def _refresh_copies(app, env, added, changed, removed):
    """Rebuild the root page on every build, so that the build always ends
    by copying its static and extra files: Sphinx skips that step when no
    page is out of date, and a wheel rebuilt since (`make wheel`) would
    differ between the two editions, which share it
    (tools/edition_assets.py)."""
    return [app.config.root_doc] if app.builder.format == "html" else []


def setup(app):
    app.connect("config-inited", _config_inited)
    app.connect("env-get-outdated", _refresh_copies)
    app.add_transform(TranslateTocCaptions)
    app.connect("html-page-context", _page_context)
    # after the theme has made its buttons (priority 501)
    app.connect("html-page-context", _button_labels, priority=600)
    app.connect("build-finished", _page_labels)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
