"""Write every message catalog under a folder in one format.

    python tools/tidy_catalogs.py locale/ja/LC_MESSAGES

`make gettext` runs it after ``sphinx-intl update``. sphinx-intl rewrites a
catalog only when its messages change, with Babel, lines wrapped at 76
columns; a translator's tool (polib) wraps them its own way. Read and
written again as sphinx-intl writes them, without source locations (the
catalogs name none: ``gettext_location: false`` in _config.yml), every
catalog looks the same whoever touched it last, and a later update changes
only the lines whose messages changed. A catalog already in that format is
left as it is.

Two things Babel does are undone here. It reads "80 % of" as a Python
format string ("% o") and flags the message ``python-format``, and then
``msgfmt --check`` fails on the translation ("80%の"): nothing in a
catalog of prose is a format string. And the header keeps the template's
placeholders ("FULL NAME <EMAIL@ADDRESS>", "YEAR-MO-DA"), which
``msgfmt --check`` warns of: the header names the project and its
translators instead, and is not fuzzy.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from babel.messages import pofile

WIDTH = 76  # sphinx-intl's default
HEADER = """\
# Pyxis Notebooks in Japanese: the messages of one page of the book.
# `make gettext` updates this catalog from the English text; CONTRIBUTING.md
# says how to translate it."""
PROJECT = "Pyxis Notebooks"
TRANSLATORS = "Pyxis Notebooks translators"


def tidy(po: Path) -> bool:
    """Rewrite ``po`` in the one format; whether it changed."""
    with po.open("rb") as f:
        catalog = pofile.read_po(f)
    catalog.header_comment = HEADER
    catalog.project, catalog.version, catalog.fuzzy = PROJECT, "", False
    if "EMAIL@ADDRESS" in catalog.last_translator:
        catalog.last_translator = TRANSLATORS
    if isinstance(catalog.revision_date, str):  # still the placeholder
        catalog.revision_date = catalog.creation_date
    for message in catalog:
        message.locations = []
        if message.id:
            message.flags.discard("python-format")
    out = io.BytesIO()
    pofile.write_po(out, catalog, width=WIDTH)
    if out.getvalue() == po.read_bytes():
        return False
    po.write_bytes(out.getvalue())
    return True


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit(__doc__)
    for po in ([Path(argv[0])] if argv[0].endswith(".po")
               else sorted(Path(argv[0]).rglob("*.po"))):
        if tidy(po):
            print(f"Tidied: {po}")


if __name__ == "__main__":
    main(sys.argv[1:])
