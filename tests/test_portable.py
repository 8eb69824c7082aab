"""The stored chapters read right outside the website (issue #10).

No MyST directive is left for JupyterLab, Colab, VS Code or GitHub to show
raw; listings are ``px.show_source`` outputs; every widget output carries a
picture; the install cell, README and intro agree with _config.yml and
pyproject.toml (``tools/portable_cells.py --check``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import portable_cells as pc  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"
VIEW_KEY = "pyxis_widget_view"  # tools/execute_notebooks.py
SETTINGS = pc.settings()


def _read(path):
    return nbformat.read(path, as_version=4)


DIRECTIVE = re.compile(r"```+\s*\{|:::+\s*\{")


def test_every_file_is_up_to_date():
    """Running tools/portable_cells.py would change nothing."""
    assert pc.main(["--check"]) == 0


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_literalinclude_and_no_directive(path):
    nb = _read(path)
    assert "literalinclude" not in nbformat.writes(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            assert not pc._has_directive(cell.source), cell.source[:200]
            # a fence anywhere in a line, nested ones too: ```{...} or :::{...}
            for line in cell.source.splitlines():
                assert not DIRECTIVE.search(line), f"cell {i}: {line}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_first_code_cell_is_the_install_cell(path):
    code = [c for c in _read(path).cells if c.cell_type == "code"
            and pc.BEFORE_TAG not in c.metadata.get("tags", [])]
    first = code[0]
    assert first.metadata.get(pc.INSTALL_KEY)
    assert first.source == pc.install_source(SETTINGS)
    assert first.source.startswith("# ")  # its one-sentence explanation
    # where the package is present (the stored run, nbval, the website),
    # the cell prints nothing: pip never ran
    assert first.outputs == []
    assert all(len(line) <= 79 for line in first.source.splitlines())
    assert "import numpy as np" in code[1].source  # the chapter's own setup


def test_install_cell_is_short():
    """Issue #30, item 14: a few lines, as short as any code cell of a
    chapter (tests/test_chapters.py, which no longer exempts it); it was 26.
    Pip finds the wheel wherever it is (the index, the website's page of
    links), so the cell needs no list of commands for each place."""
    source = pc.install_source(SETTINGS)
    assert len(source.splitlines()) <= 20, source


def test_install_cell_says_what_to_run():
    """When pip fails, the cell raises what pip said, then the git+ command
    of _config.yml's repository; it guesses no cause. Pip runs in a
    subprocess with its output captured: no IPython magic is left to print
    "you may need to restart the kernel"."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    site = config["html"]["baseurl"]
    repo = config["repository"]["url"]
    assert site.startswith("https://") and SETTINGS["site"] == site.rstrip("/") + "/"
    assert SETTINGS["links"] == SETTINGS["site"] + "_downloads/"
    message = pc.failure_message(SETTINGS)
    assert message.startswith("{pip.stderr}")  # pip's own words first
    assert message.splitlines()[-1] == f'%pip install "git+{repo}"'
    source = pc.install_source(SETTINGS)
    code = [line for line in source.splitlines()
            if not line.lstrip().startswith(("'", '"', "f'", 'f"', "#"))]
    assert not any("%pip" in line or line.lstrip().startswith("!")
                   for line in code), "a magic in the install cell"
    assert "capture_output=True" in source
    assert all(len(line) <= 79 for line in source.splitlines())
    # the messages the cell raises are the ones above, piece for piece
    pip = type("Pip", (), {"stderr": "ERROR: pip's words\n"})
    raised = source.split("raise ModuleNotFoundError(")[1].split(")\n")[0]
    assert eval(f"({raised})") == message.format(pip=pip)
    px = type("Px", (), {"__version__": "0.1.0"})
    raised = source.split("raise ImportError(")[1].rsplit(")", 1)[0]
    assert eval(f"({raised})") == pc.upgrade_message(SETTINGS).format(px=px)


def _run_install_cell(monkeypatch, stderr="ERROR: pip's words\n"):
    """The install cell's code where pyxis_nb is missing and pip fails:
    the arguments and the environment pip got, and what the cell raised."""
    import importlib.util
    import subprocess

    seen = {}

    def pip(args, **kwargs):
        seen.update(kwargs, args=args)
        return subprocess.CompletedProcess(args, 1, "", stderr)

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(subprocess, "run", pip)
    with pytest.raises(ModuleNotFoundError) as raised:
        exec(pc.install_source(SETTINGS), {})
    return seen, str(raised.value)


def test_pip_looks_on_the_index_and_the_website(monkeypatch):
    """The one pip call asks for the version range; it looks on the index
    and, through PIP_FIND_LINKS, on the website's page of links (written
    by ``make wheel``), so it finds the package before and after release."""
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    seen, message = _run_install_cell(monkeypatch)
    assert seen["args"][-1] == SETTINGS["spec"] == "pyxis-nb>=0.2,<0.3"
    assert seen["env"]["PIP_FIND_LINKS"] == SETTINGS["links"]
    assert "--no-index" not in seen["args"] and "-f" not in seen["args"]
    assert message.startswith("ERROR: pip's words\nInstall it from GitHub")


def test_pip_find_links_of_the_reader_wins(monkeypatch):
    """Where PIP_FIND_LINKS is set (the tests: the checkout's wheel, no
    index), it replaces the website: an unreachable website would cost
    pip five retries (8 s measured here), and the tests must install the
    checkout's wheel, not the published one."""
    monkeypatch.setenv("PIP_FIND_LINKS", "/somewhere/wheels")
    seen, _ = _run_install_cell(monkeypatch)
    assert seen["env"]["PIP_FIND_LINKS"] == "/somewhere/wheels"


def test_links_page_lists_each_wheel_with_its_hash(tmp_path):
    import hashlib

    wheel = tmp_path / "pyxis_nb-0.2.0-py3-none-any.whl"
    wheel.write_bytes(b"not really a wheel")
    (tmp_path / "notes.txt").write_text("not linked")
    page = pc.write_links_page(tmp_path).read_text()
    digest = hashlib.sha256(b"not really a wheel").hexdigest()
    assert re.findall(r'href="([^"]+)"', page) == [
        f"{wheel.name}#sha256={digest}"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_listings_are_show_source_outputs(path):
    cells = [c for c in _read(path).cells
             if c.cell_type == "code" and "px.show_source(" in c.source]
    assert cells, "a chapter shows at least one listing"
    for cell in cells:
        assert "remove-input" in cell.metadata.get("tags", [])
        (out,) = cell.outputs
        assert out.data["text/markdown"].startswith("```python\n")
        assert out.data["text/plain"].splitlines()[0].startswith(("def ", "class ", "@"))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_widget_output_has_a_picture(path):
    """A widget output is stored as its picture, its view kept aside in the
    output's metadata (tests/test_previews.py checks what viewers draw)."""
    for cell in _read(path).cells:
        for out in cell.get("outputs", []):
            if WIDGET in out.get("data", {}) or VIEW_KEY in out.get("metadata", {}):
                assert out.data["image/png"][:8] == "iVBORw0K"  # base64 of a PNG
                assert 0 < len(out.data["text/plain"]) <= 400


def test_repository_url_has_one_home():
    """Every GitHub repository URL in README, intro and the chapters is the
    one of _config.yml (which the launch buttons read); a reference entry
    may cite another repository (a method published as one)."""
    repo = SETTINGS["repo"]
    texts = {"README.md": (ROOT / "README.md").read_text(),
             "book/intro.md": (ROOT / "book" / "intro.md").read_text()}
    for path in CHAPTERS:
        source = "\n".join(c.source for c in _read(path).cells)
        # the install cell splits long URLs over adjacent string literals
        source = re.sub(r'^- <a id="ref-.*$', "", source, flags=re.M)
        texts[path.name] = re.sub(r"['\"]\s*\n\s*['\"]", "", source)
    for name, text in texts.items():
        for url in re.findall(r"https://github\.com/[\w.-]+/[\w-]+(?:\.[\w-]+)*", text):
            assert url == repo, f"{name} names {url}, _config.yml says {repo}"
    assert repo in texts["README.md"] and repo in texts["qkv.ipynb"]


def _names(lines) -> set[str]:
    """The project names of requirement lines (comments, options skipped),
    normalized as PEP 503 says."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    return {canonicalize_name(Requirement(line).name) for line in lines
            if line.strip() and not line.lstrip().startswith(("#", "-"))}


def _pins() -> dict:
    """constraints.txt as {normalized name: version}."""
    from packaging.utils import canonicalize_name
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line)
        if m:
            pins[canonicalize_name(m[1])] = m[2]
    return pins


def test_binder_installs_every_dependency_and_the_package():
    """repo2docker installs binder/requirements.txt, then runs postBuild:
    every dependency that pyproject.toml declares is in the first, pinned
    by constraints.txt at a version the declaration allows, and postBuild
    installs the package with its dependencies, under the same pins."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    declared = [Requirement(d) for d in tomllib.loads(
        (ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    requirements = (ROOT / "binder" / "requirements.txt").read_text()
    assert re.search(r"^-c \.\./constraints\.txt$", requirements, re.M)
    listed = _names(requirements.splitlines())
    pins = _pins()
    for dep in declared:
        name = canonicalize_name(dep.name)
        assert name in listed, f"binder/requirements.txt lacks {dep.name}"
        assert name in pins, f"constraints.txt pins no {dep.name}"
        assert dep.specifier.contains(pins[name]), (dep, pins[name])
    assert "ipykernel" in listed  # a kernel for the chapters
    post = ROOT / "binder" / "postBuild"
    command = [line for line in post.read_text().splitlines()
               if "pip install" in line]
    assert command == [
        "python -m pip install --no-cache-dir -c constraints.txt ."]
    assert post.stat().st_mode & 0o111


def test_version_agrees():
    import pyxis_nb

    assert pyxis_nb.__version__ == SETTINGS["version"]


def test_widget_bundle_carries_its_default_view_as_png():
    """The PNG is the view shown before any control is touched."""
    import base64

    import numpy as np
    import pyxis_nb as px

    w = np.array([[1.0, 0.0], [0.5, 0.5]])
    explorer = px.attention_explorer(["a", "b"], {"causal": w, "full": np.full((2, 2), 0.5)})
    grid = px.view_grid({"x": {"1": b"\x89PNG one", "2": b"\x89PNG two"},
                         "y": {"1": b"\x89PNG three", "2": b"\x89PNG four"}})
    for widget, first in [(grid, b"\x89PNG one"), (explorer, None)]:
        bundle = widget._repr_mimebundle_()
        if isinstance(bundle, tuple):  # (data, metadata): the picture's alt text
            bundle, metadata = bundle
            assert metadata["image/png"]["alt"]  # the default view's
        assert WIDGET in bundle and bundle["text/plain"] == repr(widget)
        png = base64.b64decode(bundle["image/png"])
        assert png.startswith(b"\x89PNG")
        if first is not None:
            assert png == first


def test_intro_separates_readers_from_contributors():
    """The first page's "How to run it": a reader's three ways in (online,
    one chapter launched, a download) with no make target, then what a
    contributor needs, the clone URL of _config.yml and the two commands."""
    intro = (ROOT / "book" / "intro.md").read_text()
    part = intro.split("## How to run it\n", 1)[1].split("\n## ", 1)[0]
    readers, contributors = part.split("### Working on the book\n")
    assert readers.lstrip().startswith("### Reading and running a chapter")
    for words in ("Read it online", "Binder", "Colab", "JupyterLab", "Download"):
        assert words in readers, words
    assert "make " not in readers and "git clone" not in readers
    for words in ("Python 3.11", "`make`", "Node.js", "npm", "Chromium",
                  f"git clone {SETTINGS['repo']}\n", "make site", "make test"):
        assert words in contributors, words
