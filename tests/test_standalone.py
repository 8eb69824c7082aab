"""The install cell as a reader meets it. It installs pyxis-nb from a
page of links served over HTTP, as the website serves it; and it can go
wrong in two ways: an older pyxis-nb already installed, and a pip that cannot
find it (no index, or an index without it, and no website). Each must stop
the chapter at its install cell with a message that says what to run, and
nothing of pip's own output but what it said went wrong. The cell is the one
tools/portable_cells.py writes into every chapter (tests/test_portable.py
checks that the stored chapters carry it).

That every chapter runs alone, as a reader gets it (downloaded into an empty
folder, in a fresh Python with only numpy, matplotlib, ipywidgets, ipykernel,
pyxis-nb's own dependencies and pyxis-nb from this checkout's wheel, with no
index), is checked by nbval itself: ``make test`` runs nbval on copies made by
``tools/run_standalone.py --prepare``, each with its own fresh kernel. There
pip installed the wheel once, before, so the chapters' install cells find it
and check its version; the cell's pip is checked here, once, since every
chapter's install cell is that same cell (issue #37: pip in each of the 14
chapters took some 28 s of the test run). ``make chapter-times`` and
``make standalone`` still run each chapter's pip.

The environment with those packages is created once (some 20 s with uv, the
first time only) and cached under _build/standalone/.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import portable_cells as pc  # noqa: E402
import run_standalone as rs  # noqa: E402

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
INSTALL_KEY = "pyxis_install_cell"


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """The base env and a folder with the checkout's wheel: the one `make
    test` built for the site (PYXIS_WHEEL_DIR), or one built here."""
    base = rs.base_env()
    tmp = tmp_path_factory.mktemp("standalone")
    wheels = tmp / "wheels"
    rs.wheel_into(wheels, os.environ.get("PYXIS_WHEEL_DIR") or None)
    return base, wheels, tmp


def _stopped_at_install_cell(path: Path) -> dict:
    """The error output of the install cell; no later code cell ran."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    at = next(i for i, c in enumerate(code) if c.metadata.get(INSTALL_KEY))
    (error,) = [o for o in code[at].outputs if o.output_type == "error"]
    assert all(c.execution_count is None for c in code[at + 1:])
    return error


def _install_chapter(run: Path, last: str = "import numpy as np") -> Path:
    """A chapter made of the install cell and one more cell."""
    chapter = run.parent / "chapter" / "install.ipynb"
    chapter.parent.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [pc.install_cell(pc.settings()),
                nbformat.v4.new_code_cell(last)]
    nbformat.write(nb, chapter)
    return chapter


def _run_until_install_cell(env: Path, wheels: Path, run: Path) -> dict:
    """Run a chapter made of the install cell and one more cell in ``env``;
    it must stop at its install cell."""
    chapter = _install_chapter(run)
    with pytest.raises(CellExecutionError):
        rs.run_chapter(chapter, env, wheels, run, clear=True)
    return _stopped_at_install_cell(run / chapter.name)


def _install_cell_outputs(run: Path) -> list:
    nb = nbformat.read(run / "install.ipynb", as_version=4)
    return [c for c in nb.cells if c.metadata.get(INSTALL_KEY)][0].outputs


def test_installs_from_the_websites_page_of_links(standalone, tmp_path,
                                                  monkeypatch):
    """The site's ``_downloads/`` as ``make wheel`` writes it (the wheel and
    its page of links), served over HTTP: with no index, the cell's pip
    finds the wheel there and installs it, and the cell prints nothing."""
    import functools
    import http.server
    import threading

    base, wheels, _ = standalone
    site = tmp_path / "site"
    wheel = rs.wheel_into(site / "_downloads", wheels)
    pc.write_links_page(site / "_downloads")
    asked = []

    class Site(http.server.SimpleHTTPRequestHandler):
        """A static host: index.html for a folder, and no folder listings
        (GitHub Pages lists none)."""

        def list_directory(self, path):
            self.send_error(404)

        def log_message(self, format, *args):
            asked.append(self.path)

    handler = functools.partial(Site, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    links = f"http://127.0.0.1:{server.server_address[1]}/_downloads/"
    env = rs.child_env(base, tmp_path / "env")
    chapter = _install_chapter(tmp_path / "run",
                               "import pyxis_nb\nprint(pyxis_nb.__version__)")
    try:
        nb = rs.run_chapter(chapter, env, links, tmp_path / "run", clear=True)
    finally:
        server.shutdown()
    install, last = nb.cells
    assert install.outputs == []
    assert last.outputs[0]["text"] == f"{VERSION}\n"
    assert rs.installed_version(env) == VERSION
    assert asked == ["/_downloads/", f"/_downloads/{wheel.name}"]


def test_older_package_stops_with_one_line(standalone, tmp_path):
    base, wheels, _ = standalone
    env = rs.child_env(base, tmp_path / "env")
    old = rs.fake_wheel(tmp_path / "old", version="0.1.0")
    rs.subprocess.run([rs._bin(env), "-m", "pip", "install", "-q", "--no-index",
                       "--no-deps", str(old)], check=True,
                      env=rs.kernel_env(env, tmp_path / "old"))
    error = _run_until_install_cell(env, wheels, tmp_path / "run")
    assert error.ename == "ImportError"
    old_px = SimpleNamespace(__version__="0.1.0")
    assert error.evalue == pc.upgrade_message(pc.settings()).format(px=old_px)
    assert "\n" not in error.evalue
    assert error.evalue.startswith("pyxis_nb 0.1.0 is installed")
    assert "pyxis-nb>=0.2,<0.3" in error.evalue
    assert "%pip uninstall -y pyxis-nb, restart the kernel" in error.evalue
    assert rs.installed_version(env) == "0.1.0"  # nothing was installed over it


def test_pip_that_cannot_find_it_stops_saying_what_to_run(standalone, tmp_path):
    """No wheel and no index: the reader sees what pip said went wrong and
    the command that installs the package, in the cell's one output."""
    base, _, _ = standalone
    env = rs.child_env(base, tmp_path / "env")
    nothing = tmp_path / "no-wheels"
    nothing.mkdir()
    error = _run_until_install_cell(env, nothing, tmp_path / "run")
    s = pc.settings()
    assert error.ename == "ModuleNotFoundError"
    said = error.evalue.partition("Install it from GitHub")[0]
    assert error.evalue == pc.failure_message(s).replace("{pip.stderr}", said)
    # pip's own words, in its colours (ipykernel sets FORCE_COLOR, and
    # Jupyter draws a traceback's colours)
    said = re.sub(r"\x1b\[[0-9;]*m", "", said)
    assert said.startswith("ERROR: ") and said.endswith("\n")
    assert "No matching distribution found for pyxis-nb" in said
    assert error.evalue.splitlines()[-1] == f'%pip install "git+{s["repo"]}"'
    # the error is the cell's one output: pip printed nothing else
    outputs = _install_cell_outputs(tmp_path / "run")
    assert [o.output_type for o in outputs] == ["error"], outputs


def test_prepared_copies_run_alone_with_their_own_kernel(standalone, tmp_path):
    """What `make test` hands to nbval: each chapter alone in its folder, a
    kernel of its own with no index, on an environment where pip installed
    the checkout's wheel once (the install cell's pip is the tests above)."""
    chapter = ROOT / "book" / "qkv.ipynb"
    (copy,) = rs.prepare(tmp_path / "copies", [chapter], standalone[1])
    assert [p.name for p in copy.parent.iterdir()] == ["qkv.ipynb"]
    nb = nbformat.read(copy, as_version=4)
    spec = tmp_path / "copies" / "kernels" / nb.metadata.kernelspec.name
    kernel = rs.json.loads((spec / "kernel.json").read_text())
    env = Path(kernel["argv"][0]).parent.parent
    assert rs.installed_version(env) is None  # its own: nothing yet
    installed = tmp_path / "copies" / "installed"
    assert rs.installed_version(installed) == VERSION
    assert str(rs._site(installed)) in (
        rs._site(env) / "standalone_base.pth").read_text()
    assert kernel["env"]["PIP_NO_INDEX"] == "1"
    wheels = Path(kernel["env"]["PIP_FIND_LINKS"])
    assert [w.name for w in wheels.glob("*.whl")] == [
        f"pyxis_nb-{VERSION}-py3-none-any.whl"]
    # the stored cells are unchanged but for one tag; one checking cell added
    original = nbformat.read(chapter, as_version=4)
    assert [c.source for c in nb.cells[:-1]] == [c.source for c in original.cells]
    assert f"__version__ == {VERSION!r}" in nb.cells[-1].source
    assert str(rs._site(installed)) in nb.cells[-1].source


def test_uv_looks_where_pip_is_configured_to_look(monkeypatch):
    """uv reads no pip configuration: tools/uv_pip.py hands pip's index URL,
    extra index URLs and find-links (here from PIP_* variables, no config
    file) on as uv's flags, each once, and asks uv to choose among the
    indexes as pip does. With none configured, uv gets no flag and reads
    the package index, as pip would."""
    import uv_pip
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no pip.conf
    for var in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"):
        monkeypatch.delenv(var, raising=False)
    assert uv_pip.pip_places() == []
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL",
                       "file:///m/one/simple file:///m/two/simple")
    assert uv_pip.pip_places() == [
        "--extra-index-url=file:///m/one/simple",
        "--extra-index-url=file:///m/two/simple",
        "--find-links=/opt/wheels", "--index-strategy=unsafe-best-match"]
