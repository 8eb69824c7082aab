"""The explorer's keys in JupyterLab (issue #21, item 8), with real key presses.

JupyterLab's notebook binds ArrowUp and ArrowDown to "move to the cell above /
below"; without help it takes them from a focused <select> in an output, so
the explorer's query dropdown could not be driven by the keyboard. This test
starts JupyterLab on a loopback port, runs a small notebook with an explorer,
clicks the query dropdown and presses the arrow keys in Chromium: the chosen
token must change and the active cell must not.

JupyterLab is not part of the book's toolchain (requirements.txt): it comes
from requirements-lab.txt (``make lab``). Without it the test is skipped.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("jupyterlab", reason="JupyterLab is not installed "
                    "(pip install -r requirements-lab.txt -c constraints.txt)")
playwright = pytest.importorskip("playwright.sync_api")

from website import OUTLINE_BOXES  # noqa: E402 (after the skips)

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("PYXIS_CHROMIUM", "/usr/bin/chromium")
TOKEN = "pyxis-lab-test"
TOKENS = ["The", "cat", "sat", "down"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("import numpy as np\nimport pyxis_nb as px"),
        nbformat.v4.new_code_cell(
            f"tokens = {TOKENS!r}\n"
            "w = np.tril(np.ones((4, 4)))\n"
            "w /= w.sum(axis=1, keepdims=True)\n"
            "px.attention_explorer(tokens, {'causal': w})"),
        nbformat.v4.new_markdown_cell("A cell below the explorer."),
    ]
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on 127.0.0.1 with a token, in a folder of its own; its
    kernel imports this checkout's pyxis_nb."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    home = tmp_path_factory.mktemp("lab")
    work = home / "work"
    work.mkdir()
    _notebook(work / "explorer.ipynb")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_DATA_DIR": str(home / "data"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
           "MPLBACKEND": "Agg"}
    # the lab extensions (ipywidgets') are where the package put them
    env["JUPYTER_PATH"] = os.pathsep.join(
        [str(Path(sys.prefix) / "share" / "jupyter"), env.get("JUPYTER_PATH", "")])
    log = open(home / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser",
         f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}",
         f"--ServerApp.root_dir={work}", "--LabApp.expose_app_in_browser=True",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class="
         "jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly"]
        + (["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={TOKEN}",
                                            timeout=5) as r:
                    json.load(r)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not start:\n"
                                + (home / "lab.log").read_text()[-3000:])
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


READY = """() => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const kernel = panel && panel.sessionContext && panel.sessionContext.session
    && panel.sessionContext.session.kernel;
  return !!(kernel && panel.content.widgets.length === 3
    && kernel.connectionStatus === 'connected' && kernel.status === 'idle');
}"""

ACTIVE_CELL = """() => {
  const cells = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')];
  return cells.findIndex(c => c.classList.contains('jp-mod-active'));
}"""


def test_arrow_keys_change_the_token_not_the_cell(lab):
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            # generous: on a busy 2-core machine Lab takes minutes to load
            page.set_default_timeout(300_000)
            page.goto(f"{lab}/lab/tree/explorer.ipynb?token={TOKEN}",
                      wait_until="domcontentloaded")
            # the notebook's three cells, its kernel connected and idle
            page.wait_for_function(READY, timeout=300_000)
            page.evaluate("() => window.jupyterapp.commands.execute("
                          "'notebook:run-all-cells')")
            select = page.locator(".pyxis-explorer .pyxis-query-control select")
            select.wait_for()
            sentence = page.locator(".pyxis-explorer .pyxis-describe-stack "
                                    ".pyxis-describe:visible")
            assert select.evaluate("s => s.selectedIndex") == len(TOKENS) - 1
            first = sentence.inner_text()

            select.click()
            page.keyboard.press("Escape")  # close the list; the focus stays
            assert select.evaluate("s => document.activeElement === s")
            # what keeps the keys in: Lumino's own opt-out attribute
            assert select.get_attribute("data-lm-suppress-shortcuts") == "true"
            cell = page.evaluate(ACTIVE_CELL)
            assert cell == 1, "clicking the explorer makes its cell active"

            page.keyboard.press("ArrowUp")
            page.keyboard.press("ArrowUp")
            page.wait_for_timeout(300)
            assert select.evaluate("s => s.selectedIndex") == len(TOKENS) - 3
            assert page.evaluate(ACTIVE_CELL) == cell, "ArrowUp moved the active cell"
            page.keyboard.press("ArrowDown")
            page.wait_for_timeout(300)
            assert select.evaluate("s => s.selectedIndex") == len(TOKENS) - 2
            assert page.evaluate(ACTIVE_CELL) == cell, "ArrowDown moved the active cell"
            # the widget followed: the sentence is now about another token
            assert sentence.inner_text() != first
            assert sentence.inner_text().startswith(f"'{TOKENS[-2]}' attends")
            # and the outline over the picture moved up a row, inside it
            explorer = page.locator(".pyxis-explorer").first

            def outline():  # the one drawn outline's box and its picture's
                (boxes,) = explorer.evaluate(OUTLINE_BOXES)
                return boxes

            (top, bottom, *_), (img_top, img_bottom, *_) = outline()
            assert img_top <= top < bottom <= img_bottom
            rows = [top]
            page.keyboard.press("ArrowDown")
            page.wait_for_timeout(300)
            rows.append(outline()[0][0])
            assert rows[0] < rows[1], f"the outline did not move down: {rows}"
            if os.environ.get("PYXIS_SCREENSHOTS") == "1":
                page.locator(".pyxis-explorer").screenshot(
                    path=str(ROOT / "_build/screenshots/lab_explorer.png"))
        finally:
            browser.close()
