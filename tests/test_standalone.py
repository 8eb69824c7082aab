"""The two ways a chapter's install cell can go wrong for a reader: an older
pyxis-nb already installed, and no index to install from. Each must stop the
chapter at its install cell with one line that says what to do.

That every chapter runs alone, as a reader gets it (downloaded into an empty
folder, in a fresh Python with only numpy, matplotlib, ipywidgets, ipykernel,
safetensors and tokenizers, installing pyxis-nb from this checkout's wheel
with no index), is checked by nbval itself: ``make test`` runs nbval on
copies made by ``tools/run_standalone.py --prepare``, each with its own fresh
kernel.

The environment with those packages is created once (about a minute, the
first time only) and cached under _build/standalone/.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import run_standalone as rs  # noqa: E402

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
INSTALL_KEY = "pyxis_install_cell"


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    base = rs.base_env()
    tmp = tmp_path_factory.mktemp("standalone")
    wheels = tmp / "wheels"
    rs.build_wheel(wheels)
    return base, wheels, tmp


def _stopped_at_install_cell(path: Path) -> dict:
    """The error output of the install cell; no later code cell ran."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    at = next(i for i, c in enumerate(code) if c.metadata.get(INSTALL_KEY))
    (error,) = [o for o in code[at].outputs if o.output_type == "error"]
    assert all(c.execution_count is None for c in code[at + 1:])
    return error


def _run_until_install_cell(env: Path, wheels: Path, run: Path) -> dict:
    """Run a cleared copy of qkv in ``env``; it must stop at its install cell."""
    with pytest.raises(CellExecutionError):
        rs.run_chapter(ROOT / "book" / "qkv.ipynb", env, wheels, run, clear=True)
    return _stopped_at_install_cell(run / "qkv.ipynb")


def test_older_package_stops_with_one_line(standalone, tmp_path):
    base, wheels, _ = standalone
    env = rs.child_env(base, tmp_path / "env")
    old = rs.fake_wheel(tmp_path / "old", version="0.1.0")
    rs.subprocess.run([rs._bin(env), "-m", "pip", "install", "-q", "--no-index",
                       "--no-deps", str(old)], check=True,
                      env=rs.kernel_env(env, tmp_path / "old"))
    error = _run_until_install_cell(env, wheels, tmp_path / "run")
    assert error.ename == "ImportError"
    assert "\n" not in error.evalue
    assert "pyxis_nb 0.1.0 is installed" in error.evalue
    assert "pyxis-nb>=0.2,<0.3" in error.evalue and "%pip install --upgrade" in error.evalue
    assert rs.installed_version(env) == "0.1.0"  # nothing was installed over it


def test_no_index_stops_naming_the_wheel(standalone, tmp_path):
    base, _, _ = standalone
    env = rs.child_env(base, tmp_path / "env")
    nothing = tmp_path / "no-wheels"
    nothing.mkdir()
    error = _run_until_install_cell(env, nothing, tmp_path / "run")
    assert error.ename == "ModuleNotFoundError"
    assert "\n" not in error.evalue
    assert "could not be installed" in error.evalue
    assert f"pyxis_nb-{VERSION}-py3-none-any.whl" in error.evalue


def test_prepared_copies_run_alone_with_their_own_kernel(tmp_path):
    """What `make test` hands to nbval: each chapter alone in its folder, a
    kernel of its own with no pyxis_nb, no index and the checkout's wheel."""
    chapter = ROOT / "book" / "qkv.ipynb"
    (copy,) = rs.prepare(tmp_path / "copies", [chapter])
    assert [p.name for p in copy.parent.iterdir()] == ["qkv.ipynb"]
    nb = nbformat.read(copy, as_version=4)
    spec = tmp_path / "copies" / "kernels" / nb.metadata.kernelspec.name
    kernel = rs.json.loads((spec / "kernel.json").read_text())
    env = Path(kernel["argv"][0]).parent.parent
    assert rs.installed_version(env) is None  # the install cell must install
    assert kernel["env"]["PIP_NO_INDEX"] == "1"
    wheels = Path(kernel["env"]["PIP_FIND_LINKS"])
    assert [w.name for w in wheels.glob("*.whl")] == [
        f"pyxis_nb-{VERSION}-py3-none-any.whl"]
    # the stored cells are unchanged but for one tag; one checking cell added
    original = nbformat.read(chapter, as_version=4)
    assert [c.source for c in nb.cells[:-1]] == [c.source for c in original.cells]
    assert f"__version__ == {VERSION!r}" in nb.cells[-1].source
