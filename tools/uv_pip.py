"""``uv pip install`` into an environment, from the places pip would look.

    python tools/uv_pip.py PYTHON ARGS...

installs ``ARGS`` (as ``pip install`` takes them: ``-r file``, ``-c file``,
``-e .``, names) into the environment of the interpreter ``PYTHON``, with
uv (the Makefile's UV_PIN; ``make venv`` puts it in .venv with pip) and compiled
to bytecode, as pip does: where the environment sets
PYTHONDONTWRITEBYTECODE, as this project's machines do, a module left
uncompiled is compiled again by every process that imports it (torch and
transformers: 12 s instead of 6 s).

Why uv: on this project's machines pip took 33 s for requirements.txt and
42 s for torch and transformers, most of it reading the package mirrors on
disk; uv takes 29 s for both, compiling included (16 s instead of 35 s for
the standalone chapters' environment, tools/run_standalone.py).

uv reads no pip configuration, so the places pip is configured to look
(``pip config list``: its index URL, extra index URLs and find-links, from
its files or PIP_* variables) are passed on as uv's flags. On this
project's machines they are a mirror of the package index on disk and the
folder holding torch's CPU build; elsewhere there are none and uv reads
the package index, as pip would. With extra indexes, uv is asked to choose
among all of them as pip does (``unsafe-best-match``; uv's default takes a
package from the first index that has it, and the mirrors hold only some
versions).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

FLAGS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url",
         "find-links": "--find-links"}


def pip_places(python: str = sys.executable) -> list[str]:
    """uv's flags for the index URLs and find-links pip is configured with."""
    listed = subprocess.run([python, "-m", "pip", "config", "list"],
                            capture_output=True, text=True, check=True).stdout
    found: dict[str, list[str]] = {}
    for line in listed.splitlines():  # global.find-links='/opt/wheels'
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        if name in FLAGS and value:
            for place in shlex.split(value)[0].split():
                found.setdefault(name, [])
                if place not in found[name]:
                    found[name].append(place)
    flags = [f"{FLAGS[name]}={place}" for name, places in found.items()
             for place in places]
    if found.get("extra-index-url"):
        flags.append("--index-strategy=unsafe-best-match")
    return flags


def uv_bin() -> str:
    """The uv that pip installed beside this interpreter."""
    from uv import find_uv_bin  # the uv package, installed by make venv
    return find_uv_bin()


def install(python: str | Path, args: list[str]) -> None:
    """``uv pip install ARGS`` into ``python``'s environment, compiled."""
    subprocess.run([uv_bin(), "pip", "install", "--quiet", "--python",
                    str(python), "--compile-bytecode", *pip_places(), *args],
                   check=True)


if __name__ == "__main__":
    install(sys.argv[1], sys.argv[2:])
