"""Write the Japanese edition's Jupyter Book configuration.

    python tools/edition_config.py _config.yml _config_ja.yml OUT.yml

Jupyter Book 1 reads one configuration file (``--config``), so the
Japanese edition's is made at build time: ``_config.yml`` with
``_config_ja.yml``'s settings on top (a mapping is merged key by key, any
other value replaced), so the two editions never drift apart in anything
but what ``_config_ja.yml`` says. Sphinx reads the paths in it
(``_vendor``, ``locale``) from the book's root, where `make site` runs;
Jupyter Book reads ``local_extensions`` from the file's own folder, so those
are rewritten relative to ``OUT.yml``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml


def merged(base: dict, over: dict) -> dict:
    """``base`` with ``over`` on top: mappings merged key by key, any other
    value replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def edition_config(base: Path, over: Path) -> dict:
    """The configuration of ``over``'s edition, as a dict."""
    return merged(yaml.safe_load(base.read_text(encoding="utf-8")),
                  yaml.safe_load(over.read_text(encoding="utf-8")))


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        sys.exit(__doc__)
    base, over, out = map(Path, argv)
    out.parent.mkdir(parents=True, exist_ok=True)
    config = edition_config(base, over)
    local = config.get("sphinx", {}).get("local_extensions") or {}
    for name, folder in local.items():
        local[name] = os.path.relpath(base.parent / folder, out.parent)
    out.write_text("# made by tools/edition_config.py from "
                   f"{base} and {over}; do not edit\n"
                   + yaml.safe_dump(config,
                                    allow_unicode=True, sort_keys=False),
                   encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
