"""List the words in the chapters' outputs that the Japanese edition cannot
translate yet (alt texts, widget labels, a view's sentences).

    python tools/output_messages.py [--all] [book/qkv.ipynb ...]

Each line is a string the build would warn of (and fail on), with its kind
and chapter; ``--all`` lists every string of words and its translation.
Add a message for it to ``locale/ja/outputs.po``: the text as it stands, or
a template with slots (``{name}``, ``{name:n}`` for a number) when code
writes it from numbers or tokens (_ext/pyxis_outputs.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "_ext"))

from pyxis_outputs import (CATALOG, OutputCatalog, _strings,  # noqa: E402
                           is_words, translate_notebook)


def main(argv: list[str]) -> int:
    show_all = "--all" in argv
    paths = [Path(a) for a in argv if a != "--all"] or sorted(
        (ROOT / "book").glob("*.ipynb"))
    catalog = OutputCatalog.read(Path(str(CATALOG).format(lang="ja")))
    missing_total = 0
    seen = set()
    for path in paths:
        nb = json.loads(path.read_text(encoding="utf-8"))
        if show_all:
            for kind, text, _ in _strings(nb):
                if is_words(text) and (path.stem, text) not in seen:
                    seen.add((path.stem, text))
                    print(f"{path.stem}\t{kind}\t{text}\n\t-> "
                          f"{catalog.translate(text)}")
            continue
        for kind, text in translate_notebook(nb, catalog):
            if (path.stem, text) not in seen:
                seen.add((path.stem, text))
                missing_total += 1
                print(f"{path.stem}\t{kind}\t{text}")
    if not show_all:
        print(f"{missing_total} strings without a message", file=sys.stderr)
    return 1 if missing_total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
