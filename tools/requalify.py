"""Rewrite ``px.NAME`` to ``px.MODULE.NAME`` for names that left the top level.

    PYTHONPATH=$PWD python tools/requalify.py FILE [FILE ...]

Python files are rewritten as text; notebooks (``.ipynb``) in their code
cells only, with nbformat, outputs kept. A one-off migration helper for the
smaller namespace of issue #27; it changes nothing that is already right.
"""

import importlib
import re
import sys
from pathlib import Path

import nbformat

import pyxis_nb as px


def mapping() -> dict[str, str]:
    """name -> ``module.name`` for every module name not at the top level."""
    out = {}
    for module in px._MODULES:
        mod = importlib.import_module(f"pyxis_nb.{module}")
        for name in mod.__all__:
            if name not in px.__all__:
                out.setdefault(name, f"{module}.{name}")
    return out


def rewrite(text: str, names: dict[str, str]) -> str:
    pattern = re.compile(r"\bpx\.(%s)\b" % "|".join(map(re.escape, names)))
    return pattern.sub(lambda m: "px." + names[m.group(1)], text)


def main(paths: list[str]) -> None:
    names = mapping()
    for path in map(Path, paths):
        if path.suffix == ".ipynb":
            nb = nbformat.read(path, as_version=4)
            changed = False
            for cell in nb.cells:
                if cell.cell_type == "code":
                    new = rewrite(cell.source, names)
                    changed |= new != cell.source
                    cell.source = new
            if changed:
                nbformat.write(nb, path)
                print("rewrote", path)
        else:
            text = path.read_text()
            new = rewrite(text, names)
            if new != text:
                path.write_text(new)
                print("rewrote", path)


if __name__ == "__main__":
    main(sys.argv[1:])
