"""Let the Japanese edition use the English site's copies of what both hold.

    python tools/edition_assets.py _build/html ja

Both editions are built from the same notebooks and the same vendored
scripts, so their ``_images`` (the stored figures), ``_sources`` (the
notebooks behind each page's download button), ``_downloads`` (the wheel)
and ``_static/katex`` and ``_static/widgets`` (tools/vendor_web.sh) are
the same files: 17 MB of each edition's 23. After `make site` has copied
the Japanese build into ``SITE/ja``, this checks that each of those folders
is the same file for file as the English one, points the Japanese pages'
``src`` and ``href`` attributes at the English copy (``../_images/x.png``
becomes ``../../_images/x.png``: still relative, so the site works opened
as files too), checks that every link it rewrote finds its file, and removes the
Japanese copy. The rest of ``_static`` stays the edition's own: its
search and language scripts differ.
"""

from __future__ import annotations

import filecmp
import re
import shutil
import sys
from pathlib import Path

SHARED = ("_images", "_sources", "_downloads", "_static/katex",
          "_static/widgets")


def holds(a: Path, b: Path) -> bool:
    """Whether folder ``a`` holds every file of ``b``, byte for byte (``a``
    may hold more: an incremental English build keeps the images of
    figures that have since changed)."""
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    match, mismatch, errors = filecmp.cmpfiles(
        a, b, [str(f) for f in files_b], shallow=False)
    return not mismatch and not errors


def share(site: Path, edition: str) -> int:
    """Point ``site/edition``'s pages at the site's own SHARED folders and
    remove the edition's copies; returns how many links it rewrote."""
    root = site / edition
    folders = [f for f in SHARED if (root / f).is_dir()]
    for folder in folders:
        if not holds(site / folder, root / folder):
            sys.exit(f"{root / folder} differs from {site / folder}: "
                     "not shared (build both editions from the same tree)")
    up_one = "../" * edition.strip("/").count("/") + "../"
    rewritten = 0
    for page in root.rglob("*.html"):
        depth = len(page.relative_to(root).parts) - 1
        here = "../" * depth
        pattern = re.compile(r'((?:src|href)=")' + re.escape(here)
                             + "(" + "|".join(map(re.escape, folders))
                             + r")/([^\"#?]*)")
        missing = []

        def to_site(match):
            attribute, folder, path = match.groups()
            if not (site / folder / path).is_file():
                missing.append(f"{folder}/{path}")
            return f"{attribute}{here}{up_one}{folder}/{path}"

        text = page.read_text(encoding="utf-8")
        new, n = pattern.subn(to_site, text)
        if missing:
            sys.exit(f"{page}: no such file in {site}: {missing[:5]}")
        if n:
            page.write_text(new, encoding="utf-8")
            rewritten += n
    for folder in folders:
        shutil.rmtree(root / folder)
    return rewritten


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        sys.exit(__doc__)
    site, edition = Path(argv[0]), argv[1]
    n = share(site, edition)
    print(f"{site / edition}: {n} links now lead to the English site's "
          f"{', '.join(SHARED)}")


if __name__ == "__main__":
    main(sys.argv[1:])
