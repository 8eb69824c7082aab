"""Make chapters run and read right outside the website. Idempotent.

    python tools/portable_cells.py                 # every book/*.ipynb, README, intro
    python tools/portable_cells.py book/x.ipynb    # some chapters (and README, intro)
    python tools/portable_cells.py --check         # change nothing; exit 1 if a
                                                   # file is not up to date
    python tools/portable_cells.py --links-page DIR  # only DIR/index.html

Run it with ``PYTHONPATH=$PWD`` (it imports ``pyxis_nb`` to name listings),
then re-execute the chapters it changed (``make execute NB=...``).

What it does to each chapter (nbformat, outputs of untouched cells kept):

* inserts or updates the **install cell**, the first code cell: it imports
  ``pyxis_nb``, and only where it is missing runs one pip, for
  ``pyxis-nb>=X.Y,<X.Y+1`` (the range from pyproject.toml's version), that
  looks on the package index and on the website's page of links to its
  wheels (``<html.baseurl>_downloads/``, written by ``make wheel``), so it
  finds the package before its release and after. The website is the
  default of PIP_FIND_LINKS: one already set replaces it, so the tests,
  which set it to the checkout's wheel with no index, install that wheel
  and never wait on an unreachable website (pip retries it five times).
  If pip fails, the cell raises what pip said and the one command that
  needs neither index nor website: ``%pip install "git+<repository.url>"``.
  An older installed package stops the run with one line. The cell is
  plain Python: no magic, so pip's notes (and its "you may need to restart
  the kernel") never reach the reader; its output is captured and shown
  only in the error. At most 20 lines, as every code cell (it was 26).
  Where a chapter ran with the package installed (no output), a new
  install cell keeps the old one's execution count, as a re-run would.
  Code cells tagged ``before-install`` (environment variables that must be set
  before numpy loads) stay ahead of it. A Markdown line before it says what
  it is ("Setup: installs the book's package if it is missing"). The
  website removes both (``remove-cell``).
* puts a Markdown line "Solution" before each exercise's solution cell
  (tag ``hide-cell``), which viewers other than the website show right
  under the exercise; the website removes the line.
* replaces every MyST ``literalinclude`` listing by a code cell
  ``px.show_source(px.<name>)`` whose output is the listing, read from the
  installed package. A listing inside a ``{dropdown} Source: ...`` gets a
  short markdown lead-in and stays folded on the website (``hide-output``,
  prompt "Show source"); the website never shows the ``px.show_source`` line
  (``remove-input``).
* turns ``{warning}``, ``{note}``, ``{tip}`` (and other admonitions) into
  Markdown block quotes ``> **Warning.** ...`` and any other ``{dropdown}``
  into a bold title and its text, so no raw directive is left for JupyterLab,
  Colab, VS Code or GitHub to show.

And it writes the repository URL and the wheel's name into the marked blocks
of README.md and book/intro.md (between ``<!-- portable:... -->`` comments),
the clone command and the contributors' links (CONTRIBUTING.md, the issue
tracker, pull requests) of book/intro.md included.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import html
import re
import sys
import tomllib
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
INSTALL_KEY = "pyxis_install_cell"
BEFORE_TAG = "before-install"
ADMONITIONS = {"warning": "Warning", "note": "Note", "tip": "Tip",
               "important": "Important", "caution": "Caution",
               "attention": "Attention", "danger": "Danger", "hint": "Hint",
               "seealso": "See also", "admonition": None}
FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w-]+)\}\s*(?P<arg>.*?)\s*$")


# ---------------------------------------------------------------- settings
def settings(root: Path = ROOT) -> dict:
    """Repository URL, version, requirement range and wheel name, from their
    one home each: _config.yml and pyproject.toml."""
    config = yaml.safe_load((root / "_config.yml").read_text())
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    version = project["version"]
    major, minor = (int(p) for p in version.split(".")[:2])
    dist = project["name"]
    site = config["html"]["baseurl"].rstrip("/") + "/"
    wheel = f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"
    return {
        "repo": config["repository"]["url"].rstrip("/"),
        "site": site,
        # the page of links to the wheels that `make wheel` writes, which
        # the site serves (pip's --find-links reads it)
        "links": f"{site}_downloads/",
        "branch": config["repository"].get("branch", "main"),
        "dist": dist,
        "version": version,
        "low": (major, minor),
        "spec": f"{dist}>={major}.{minor},<{major}.{minor + 1}",
        "wheel": wheel,
    }


def _literal(text: str, indent: int, width: int = 79) -> str:
    """``text`` as adjacent string literals, one a line, each line at most
    ``width`` columns; pieces end after a space or a slash where they can.
    A piece that holds ``{...}`` is an f-string (never split inside the
    braces, which hold no space or slash)."""
    room = width - indent - 3  # the quotes and an f
    pieces = []
    for rest in text.splitlines(keepends=True):  # a new line, a new literal
        while rest:
            piece = rest
            while len(repr(piece)) - 2 > room:
                cut = max(piece.rfind(" ", 0, len(piece) - 1),
                          piece.rfind("/", 0, len(piece) - 1))
                piece = piece[:cut + 1] if cut > 0 else piece[:room]
            pieces.append(piece)
            rest = rest[len(piece):]
    quoted = [repr(p) if '"' in p else '"' + repr(p)[1:-1] + '"'
              for p in pieces]  # double quotes, as the code around them
    return ("\n" + " " * indent).join(
        ("f" if "{" in p else "") + q for p, q in zip(pieces, quoted))


def failure_message(s: dict) -> str:
    """What the install cell raises when pip could not install the package:
    what pip said (``{pip.stderr}``, filled in by the cell), then the one
    command that installs it with neither the index nor the website."""
    return ("{pip.stderr}Install it from GitHub, then run this cell again:\n"
            f'%pip install "git+{s["repo"]}"')


def upgrade_message(s: dict) -> str:
    """What the install cell raises when an older pyxis-nb is installed
    (``{px.__version__}`` filled in by the cell): one line, and what to
    run; after the restart the cell installs the right one itself."""
    return (f"pyxis_nb {{px.__version__}} is installed, this chapter needs "
            f"{s['spec']}: %pip uninstall -y {s['dist']}, restart the kernel")


INSTALL_NOTE_KEY = "pyxis_install_note"
INSTALL_NOTE = ("**Setup:** installs the book's package if it is missing "
                "(Colab, Binder, a bare kernel); where it is installed, the "
                "cell only imports it.")


def install_source(s: dict) -> str:
    """The install cell: import, else pip (the index and the website's page
    of wheels, its output captured), else say what pip said and what to
    run; then the version check. Its messages are whole literals (a test
    evaluates them), each line at most 79 columns."""
    major, minor = s["low"]
    links = _literal(s["links"], indent=13)
    if "\n" in links:  # a long address: adjacent literals need parentheses
        links = f"({links})"
    return f'''\
# Setup: install the book's package if it is missing (see the line above).
import importlib.util, os, subprocess, sys
if importlib.util.find_spec("pyxis_nb") is None:  # pip: index or website
    links = {links}
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "{s["spec"]}"],
        env={{"PIP_FIND_LINKS": links, **os.environ}},  # unless it is set
        capture_output=True, text=True)
    if pip.returncode:  # what pip said, and what to run instead
        raise ModuleNotFoundError(
            {_literal(failure_message(s), indent=12)})
    importlib.invalidate_caches()
import pyxis_nb as px
if not px.__version__.startswith("{major}.{minor}."):
    raise ImportError(
        {_literal(upgrade_message(s), indent=8)})'''


def install_cell(s: dict) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(install_source(s))
    # collapsed in JupyterLab, under its Markdown line (install_note)
    cell.metadata = {INSTALL_KEY: True, "tags": ["remove-cell"],
                     "jupyter": {"source_hidden": True}}
    return cell


def write_links_page(folder: Path) -> Path:
    """``folder/index.html``: a link to each wheel in ``folder``, with its
    sha256 (pip checks it), the page pip's ``--find-links`` reads. ``make
    wheel`` writes it; the site serves it at ``<html.baseurl>_downloads/``,
    where the install cell's pip looks (``links``)."""
    folder = Path(folder)
    rows = []
    for wheel in sorted(folder.glob("*.whl")):
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        name = html.escape(wheel.name)
        rows.append(f'<a href="{name}#sha256={digest}">{name}</a><br>')
    page = folder / "index.html"
    page.write_text("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                    "<title>pyxis-nb wheels</title></head><body>\n"
                    + "\n".join(rows) + "\n</body></html>\n")
    return page


SOLUTION_TAG = "hide-cell"  # an exercise's solution (CONTRIBUTING.md)
SOLUTION_KEY = "pyxis_solution_note"
SOLUTION_NOTE = "**Solution** (try the exercise first):"


def solution_note() -> nbformat.NotebookNode:
    """The Markdown line before a solution cell: JupyterLab, Colab, GitHub
    and nbconvert show the solution right under its exercise, so a reader
    sees what follows before reading it. The website hides the solution
    behind "Show solution" and removes the line."""
    cell = nbformat.v4.new_markdown_cell(SOLUTION_NOTE)
    cell.metadata = {SOLUTION_KEY: True, "tags": ["remove-cell"]}
    return cell


def install_note() -> nbformat.NotebookNode:
    """The Markdown line before the install cell, which says what it is
    (outside the website; the website removes both)."""
    cell = nbformat.v4.new_markdown_cell(INSTALL_NOTE)
    cell.metadata = {INSTALL_NOTE_KEY: True, "tags": ["remove-cell"]}
    return cell


# ---------------------------------------------------------------- markdown
def _blocks(lines: list[str]):
    """Split markdown lines into ('text', lines) and ('directive', name, arg,
    options, body) pieces; directives are the top-level MyST fences."""
    out, text, i = [], [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            text.append(lines[i])
            i += 1
            continue
        fence = m["fence"]
        close = re.compile(rf"^{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        body = lines[i + 1:j]
        options = {}
        while body and re.match(r"^:[\w-]+:", body[0]):
            key, _, value = body.pop(0)[1:].partition(":")
            options[key] = value.strip()
        if text:
            out.append(("text", text))
            text = []
        out.append(("directive", m["name"], m["arg"], options, body))
        i = j + 1
    if text:
        out.append(("text", text))
    return out


def _listing_expr(path: str, pyobject: str) -> str:
    """``px.name`` for a public name, ``px.module.name`` for a private one."""
    import pyxis_nb as px

    module = Path(path).stem
    head = pyobject.split(".")[0]
    expr = f"px.{pyobject}" if head in px.__all__ else f"px.{module}.{pyobject}"
    obj = px
    for part in expr.split(".")[1:]:
        obj = getattr(obj, part, None)
    if obj is None:
        raise SystemExit(f"{path}: cannot find {pyobject} as {expr}")
    return expr


def _listing_cell(expr: str, folded: bool) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(f"px.show_source({expr})")
    tags = ["remove-input"] + (["hide-output"] if folded else [])
    cell.metadata = {"tags": tags}
    if folded:
        cell.metadata["mystnb"] = {"code_prompt_show": "Show source",
                                   "code_prompt_hide": "Hide source"}
    return cell


def _literalinclude(body: list[str]):
    """The (path, pyobject) of the first literalinclude in ``body``, if any."""
    for piece in _blocks(body):
        if piece[0] == "directive" and piece[1] == "literalinclude":
            return piece[2], piece[3].get("pyobject")
    return None


def _quote(title: str, body: list[str]) -> list[str]:
    while body and not body[0].strip():
        body = body[1:]
    lines = [f"**{title}.** " + (body[0] if body else "")] + body[1:]
    return [("> " + line).rstrip() for line in lines]


def convert_markdown(source: str) -> list[nbformat.NotebookNode]:
    """One markdown cell's source -> the cells that replace it."""
    cells, text = [], []

    def flush():
        joined = "\n".join(text).strip("\n")
        if joined.strip():
            cells.append(nbformat.v4.new_markdown_cell(joined))
        text.clear()

    for piece in _blocks(source.split("\n")):
        if piece[0] == "text":
            text.extend(piece[1])
            continue
        _, name, arg, options, body = piece
        if name == "literalinclude":
            flush()
            cells.append(_listing_cell(_listing_expr(arg, options["pyobject"]),
                                       folded=False))
        elif name == "dropdown" and _literalinclude(body):
            path, pyobject = _literalinclude(body)
            expr = _listing_expr(path, pyobject)
            while text and not text[-1].strip():
                text.pop()
            text.append("")
            text.append(f"**Source:** `{expr}`")
            flush()
            cells.append(_listing_cell(expr, folded=True))
        elif name in ADMONITIONS:
            title = ADMONITIONS[name] or arg or "Note"
            if ADMONITIONS[name] and arg:
                title = f"{title}: {arg}"
            text.extend(["", *_quote(title, body), ""])
        elif name == "dropdown":
            text.extend(["", f"**{arg}**" if arg else "", *body, ""])
        else:
            raise SystemExit(f"no plain-Markdown form for the directive {{{name}}}")
    flush()
    return cells


def _has_directive(source: str) -> bool:
    return any(p[0] == "directive" for p in _blocks(source.split("\n")))


# ---------------------------------------------------------------- notebooks
def transform(nb: nbformat.NotebookNode, s: dict) -> nbformat.NotebookNode:
    """A portable copy of ``nb``; cells that need no change keep their outputs."""
    nb = copy.deepcopy(nb)
    cells = []
    old_note = next((c for c in nb.cells
                     if c.metadata.get(INSTALL_NOTE_KEY)), None)
    for cell in nb.cells:
        if cell.metadata.get(INSTALL_KEY) or cell.metadata.get(
                INSTALL_NOTE_KEY):
            continue  # written afresh below
        if (cell.cell_type == "code"
                and SOLUTION_TAG in cell.metadata.get("tags", [])
                and not (cells and cells[-1].metadata.get(SOLUTION_KEY))):
            note = solution_note()
            if "id" in note:  # stable: the solution's own id, prefixed
                note["id"] = f"solution-{cell.get('id', len(cells))}"[:64]
            cells.append(note)
        if (cell.cell_type == "code"
                and re.fullmatch(r"px\.show_source\([^\n]*\)", cell.source)):
            tags = cell.metadata.setdefault("tags", [])
            if "remove-input" not in tags:  # a listing written by hand
                tags.insert(0, "remove-input")
        if cell.cell_type == "markdown" and _has_directive(cell.source):
            new = convert_markdown(cell.source)
            for c in new:
                if c.cell_type == "markdown" and cell.metadata:
                    c.metadata = copy.deepcopy(cell.metadata)
            cells.extend(new)
        else:
            cells.append(cell)
    # the install cell goes right before the first code cell that is not
    # tagged before-install
    old = next((c for c in nb.cells if c.metadata.get(INSTALL_KEY)), None)
    fresh = install_cell(s)
    if old is not None and old.source == fresh.source:
        old.metadata = fresh.metadata
        fresh = old  # keep its (empty) outputs and execution count
    else:
        if "id" in fresh:
            fresh["id"] = (old["id"] if old is not None and "id" in old
                           else "install")
        if old is not None and not old.outputs:
            # the stored run had the package: the new cell would print
            # nothing either, and keeps the count a re-run would give it
            fresh.execution_count = old.execution_count
    at = next((i for i, c in enumerate(cells) if c.cell_type == "code"
               and BEFORE_TAG not in c.metadata.get("tags", [])), len(cells))
    note = install_note()
    if old_note is not None and old_note.source == note.source:
        note = old_note
    elif "id" in note:
        note["id"] = "install-note"
    cells[at:at] = [note, fresh]
    nb.cells = cells
    return nb


# ---------------------------------------------------------------- docs
def blocks_for_docs(s: dict) -> dict[str, str]:
    repo, wheel = s["repo"], s["wheel"]
    colab_repo = repo.replace("https://github.com/", "")
    return {
        "README.md:links": (
            f"Repository: {repo}. Run a chapter without installing anything: "
            f"[Binder](https://mybinder.org/v2/gh/{colab_repo}/{s['branch']}"
            f"?urlpath=lab/tree/book/qkv.ipynb) or "
            f"[Colab](https://colab.research.google.com/github/{colab_repo}"
            f"/blob/{s['branch']}/book/qkv.ipynb)."),
        "README.md:wheel": (
            "```bash\n"
            f"pip install {wheel}              # the wheel the website offers\n"
            f'pip install "{s["spec"]}"           # from the package index, once released\n'
            f'pip install "{s["spec"]}" -f {s["links"]}  # the index or the '
            "website, as a chapter's install cell does\n"
            f"pip install git+{repo}  # straight from the repository\n"
            "```"),
        "book/intro.md:clone": (
            "```bash\n"
            f"git clone {repo}\n"
            f"cd {repo.rsplit('/', 1)[1]}\n"
            "make site   # create .venv, install the pinned toolchain, "
            "build this website\n"
            "make test   # every test, every notebook included\n"
            "```"),
        "book/intro.md:wheel": (
            f'The package itself: <a href="../_downloads/{wheel}" download>'
            f"{wheel}</a> (`pip install {wheel}`), or from <{repo}>."),
        "book/intro.md:contribute": (
            f"The book is written in the open, at <{repo}>: "
            f"[CONTRIBUTING.md]({repo}/blob/{s['branch']}/CONTRIBUTING.md) "
            "says how a chapter is written and checked,\n"
            f"[the issue tracker]({repo}/issues) takes a mistake you found or "
            f"a question, and [pull requests]({repo}/pulls) a fix."),
    }


def update_docs(s: dict, root: Path = ROOT, write: bool = True) -> list[str]:
    changed = []
    for key, text in blocks_for_docs(s).items():
        name, block = key.split(":")
        path = root / name
        old = path.read_text()
        pattern = re.compile(rf"(<!-- portable:{block} -->\n)(?:.*?\n)?"
                             rf"(<!-- /portable:{block} -->)", re.S)
        if not pattern.search(old):
            raise SystemExit(f"{name}: no <!-- portable:{block} --> block")
        new = pattern.sub(lambda m: m.group(1) + text + "\n" + m.group(2), old)
        if new != old:
            if name not in changed:
                changed.append(name)
            if write:
                path.write_text(new)
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a file is not up to date")
    parser.add_argument("--links-page", type=Path, metavar="DIR",
                        help="only write DIR/index.html, the page of links "
                             "to DIR's wheels (make wheel)")
    args = parser.parse_args(argv)
    if args.links_page:
        print(write_links_page(args.links_page))
        return 0
    s = settings()
    paths = args.notebooks or sorted((ROOT / "book").glob("*.ipynb"))
    stale = update_docs(s, write=not args.check)
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        new = transform(nb, s)
        if nbformat.writes(new) != nbformat.writes(nb):
            stale.append(str(path))
            if not args.check:
                nbformat.write(new, path)
    verb = "not up to date" if args.check else "updated"
    for name in stale:
        print(f"{verb}: {name}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
