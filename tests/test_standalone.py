"""Every chapter runs alone, as a reader gets it: downloaded into an empty
folder, in a fresh Python that has only numpy, matplotlib, ipywidgets and
ipykernel. Its install cell must fetch pyxis-nb, here from the wheel built
from this checkout with no package index (tools/run_standalone.py).

Also the two ways that can go wrong for a reader: an older pyxis-nb already
installed, and no index to install from. Each must stop the chapter at its
install cell with one line that says what to do.

The environment with the four packages is created once (about a minute, the
first time only) and cached under _build/standalone/.
"""

from __future__ import annotations

import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import run_standalone as rs  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
INSTALL_KEY = "pyxis_install_cell"


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    base = rs.base_env()
    tmp = tmp_path_factory.mktemp("standalone")
    wheels = tmp / "wheels"
    rs.build_wheel(wheels)
    return base, wheels, tmp


@pytest.fixture(scope="module")
def results(standalone):
    """Run every chapter, two at a time; chapter name -> (error, version, s)."""
    base, wheels, tmp = standalone

    def one(chapter):
        start = time.perf_counter()
        env = rs.child_env(base, tmp / chapter.stem / "env")
        try:
            rs.run_chapter(chapter, env, wheels, tmp / chapter.stem / "run")
            error = None
        except Exception as err:  # reported by the chapter's own test
            error = err
        return chapter.name, (error, rs.installed_version(env),
                              time.perf_counter() - start)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, CHAPTERS))


@pytest.mark.parametrize("chapter", [c.name for c in CHAPTERS])
def test_chapter_runs_alone_in_a_fresh_environment(results, chapter):
    error, version, seconds = results[chapter]
    assert error is None, f"{chapter} failed when run alone:\n{error}"
    # the install cell ran pip, and pip took the checkout's wheel
    assert version == VERSION, f"{chapter} installed pyxis-nb {version}"
    print(f"{chapter}: {seconds:.1f} s")


def _stopped_at_install_cell(path: Path) -> dict:
    """The error output of the install cell; no later code cell ran."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    at = next(i for i, c in enumerate(code) if c.metadata.get(INSTALL_KEY))
    (error,) = [o for o in code[at].outputs if o.output_type == "error"]
    assert all(c.execution_count is None for c in code[at + 1:])
    return error


def test_older_package_stops_with_one_line(standalone, tmp_path):
    base, wheels, _ = standalone
    env = rs.child_env(base, tmp_path / "env")
    old = rs.fake_wheel(tmp_path / "old", version="0.1.0")
    rs.subprocess.run([rs._bin(env), "-m", "pip", "install", "-q", "--no-index",
                       "--no-deps", str(old)], check=True,
                      env=rs.kernel_env(env, tmp_path / "old"))
    with pytest.raises(CellExecutionError):
        rs.run_chapter(ROOT / "book" / "qkv.ipynb", env, wheels, tmp_path / "run",
                       clear=True)
    error = _stopped_at_install_cell(tmp_path / "run" / "qkv.ipynb")
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
    with pytest.raises(CellExecutionError):
        rs.run_chapter(ROOT / "book" / "qkv.ipynb", env, nothing, tmp_path / "run",
                       clear=True)
    error = _stopped_at_install_cell(tmp_path / "run" / "qkv.ipynb")
    assert error.ename == "ModuleNotFoundError"
    assert "\n" not in error.evalue
    assert "could not be installed" in error.evalue
    assert f"pyxis_nb-{VERSION}-py3-none-any.whl" in error.evalue
