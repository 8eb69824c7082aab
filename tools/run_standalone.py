"""Run chapters alone, as a reader would after downloading one. No network.

    python tools/run_standalone.py                  # every book/*.ipynb
    python tools/run_standalone.py book/qkv.ipynb   # some chapters
    python tools/run_standalone.py --prepare DIR    # copies for nbval (make test)
    python tools/run_standalone.py --wheel DIR ...  # use DIR's wheel, built once

Running chapters prints, at the end, a Markdown table of the Run All time of
each (wall clock from the kernel's start to its last cell, install cell
included) and the kernel's CPU time (its own
and its children's, pip included), with the machine's load average, for
CONTRIBUTING.md (``make chapter-times``).

Each chapter is copied alone into an empty temporary folder and run top to
bottom (nbclient) by a kernel whose Python has only numpy, matplotlib,
ipywidgets, ipykernel, safetensors, tokenizers, threadpoolctl, gguf and
jinja2 (pyxis-nb's own dependencies), pinned with all they depend on by constraints.txt, and no
pyxis_nb. Its install cell then runs ``pip install "pyxis-nb>=..."``,
which pip satisfies from the wheel built from this checkout, with no index
(PIP_NO_INDEX=1, PIP_FIND_LINKS=<wheel dir>, no pip config file; the
PIP_FIND_LINKS replaces the website, where the cell has pip look by default).

The environment with those packages is created once (uv installs them,
tools/uv_pip.py) and cached under
``_build/standalone/env-<hash of the pins>``. Each chapter gets a throwaway
environment on top of it (``venv --without-pip`` plus a .pth file naming the
cached site-packages), so what one chapter installs never leaks into another.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

import uv_pip  # tools/uv_pip.py

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ("numpy", "matplotlib", "ipywidgets", "ipykernel", "safetensors",
           "tokenizers", "threadpoolctl", "gguf", "jinja2")
CACHE = ROOT / "_build" / "standalone"
PY = f"python{sys.version_info.major}.{sys.version_info.minor}"


def pins(root: Path = ROOT) -> list[str]:
    """``name==version`` of the runtime packages, from constraints.txt."""
    found = {}
    for line in (root / "constraints.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if m and m[1].lower() in RUNTIME:
            found[m[1].lower()] = f"{m[1]}=={m[2]}"
    missing = set(RUNTIME) - set(found)
    if missing:
        raise RuntimeError(f"constraints.txt pins none of {sorted(missing)}")
    return [found[name] for name in RUNTIME]


def _bin(env: Path, name: str = "python") -> Path:
    return env / "bin" / name


def _site(env: Path) -> Path:
    return env / "lib" / PY / "site-packages"


def base_env() -> Path:
    """The cached environment with the pinned packages (created once)."""
    # constraints.txt pins what they pull in too (Pygments, say, whose
    # HTML is part of every listing's stored output)
    constraints = ROOT / "constraints.txt"
    key = hashlib.sha256("\n".join(
        [sys.version, *pins(), constraints.read_text()]).encode()).hexdigest()[:12]
    env = CACHE / f"env-{key}"
    if (env / ".ready").exists():
        return env
    shutil.rmtree(env, ignore_errors=True)
    # the base interpreter, not this venv's: the new env must not see .venv
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(env)], check=True)
    uv_pip.install(_bin(env), ["-c", str(constraints), *pins()])
    # matplotlib's font cache, so that its one-time notice is not a cell output
    subprocess.run([_bin(env), "-c", "import matplotlib.pyplot"], check=True,
                   env={**os.environ, "MPLBACKEND": "Agg"})
    (env / ".ready").touch()
    return env


def build_wheel(out: Path) -> Path:
    """The pyxis-nb wheel of this checkout, built into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.whl"):
        old.unlink()
    # one build at a time: setuptools builds in the checkout's build/, which
    # two pytest-xdist workers would otherwise share (and delete)
    (ROOT / "_build").mkdir(exist_ok=True)
    with open(ROOT / "_build" / "wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(ROOT / "build", ignore_errors=True)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q",
                        "--no-deps", "--no-build-isolation", "-w", str(out),
                        str(ROOT)], check=True, cwd=ROOT)
        shutil.rmtree(ROOT / "build", ignore_errors=True)
    (wheel,) = out.glob("*.whl")
    return wheel


def fake_wheel(out: Path, version: str = "0.1.0") -> Path:
    """A wheel of an old pyxis-nb that has nothing but its version."""
    out.mkdir(parents=True, exist_ok=True)
    dist = f"pyxis_nb-{version}.dist-info"
    files = {
        "pyxis_nb/__init__.py": f'__version__ = "{version}"\n',
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: pyxis-nb\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: fake\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n",
    }
    files[f"{dist}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{dist}/RECORD"])
    path = out / f"pyxis_nb-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def child_env(base: Path, where: Path) -> Path:
    """A throwaway environment that sees the base's packages and adds its own."""
    subprocess.run([_bin(base), "-m", "venv", "--without-pip", str(where)], check=True)
    (_site(where) / "standalone_base.pth").write_text(
        f"import site; site.addsitedir({str(_site(base))!r})\n")
    return where


def kernel_env(env: Path, find_links: Path) -> dict:
    """What the kernel sees: no PYTHONPATH, no pip config, no package index."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV", "JUPYTER"))}
    return {
        **keep,
        "PATH": f"{env / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(env),
        "PYTHONNOUSERSITE": "1",
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(find_links),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


# run after the chapter's last cell, in its kernel: CPU seconds so far
CPU_CELL = ("import resource as _r\n"
            "print(sum(getattr(_r.getrusage(w), f) for f in "
            "('ru_utime', 'ru_stime')\n"
            "          for w in (_r.RUSAGE_SELF, _r.RUSAGE_CHILDREN)))")


def run_chapter(chapter: Path, env: Path, find_links: Path, workdir: Path,
                timeout: int = 600, clear: bool = False,
                cpu: bool = False) -> nbformat.NotebookNode:
    """Run ``chapter`` alone in ``workdir`` with ``env``'s Python; raises
    nbclient's CellExecutionError at the first failing cell. ``clear``: drop
    the stored outputs first, so the copy shows which cells ran. ``cpu``:
    then ask the kernel for its CPU seconds (``nb.metadata.kernel_cpu_s``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    copy = workdir / chapter.name
    shutil.copy(chapter, copy)
    kernels = workdir / ".kernels"
    spec = kernels / "standalone"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(_bin(env)), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "standalone", "language": "python"}))
    km = KernelManager(kernel_name="standalone",
                       kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))
    nb = nbformat.read(copy, as_version=4)
    if clear:
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
    if cpu:
        nb.cells.append(nbformat.v4.new_code_cell(CPU_CELL))
    client = NotebookClient(nb, km=km, timeout=timeout, record_timing=False,
                            resources={"metadata": {"path": str(workdir)}})
    try:
        client.execute(env=kernel_env(env, find_links), cwd=str(workdir))
    finally:
        if cpu and nb.cells[-1].outputs:
            last = nb.cells.pop()
            nb.metadata["kernel_cpu_s"] = float(last.outputs[0]["text"])
        nbformat.write(nb, copy)
    return nb


def wheel_into(out: Path, wheel_dir: Path | None) -> Path:
    """The checkout's wheel in ``out``: copied from ``wheel_dir`` (built once
    by ``make wheel``) if given, else built."""
    if wheel_dir is None:
        return build_wheel(out)
    (wheel,) = Path(wheel_dir).glob("*.whl")
    out.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(wheel, out))


def prepare(out: Path, chapters: list[Path],
            wheel_dir: Path | None = None) -> list[Path]:
    """Copies of ``chapters`` that nbval runs alone, each with its own kernel.

    ``out/<stem>/run/<stem>.ipynb`` sits alone in its folder, and its
    kernelspec ``pyxis-<stem>`` (``out/kernels/``, found through
    JUPYTER_PATH=out) starts a fresh child environment with no index, on top
    of one where pip installed the checkout's wheel, once, here
    (``out/installed``). So ``make test`` executes every chapter once, in a
    fresh kernel, compared with its stored outputs (nbval, strict); its
    install cell finds pyxis-nb of the right version and runs no pip. The
    cell's pip (from a page of links, and its two ways of failing) is
    tests/test_standalone.py's: every chapter carries that very cell
    (tests/test_portable.py), and running pip in each of them took some 2 s
    a chapter of the test run (issue #37). Two changes to each copy: the
    install cell's output is not compared, and a last cell asserts that the
    kernel imports this checkout's wheel, as installed.
    """
    shutil.rmtree(out, ignore_errors=True)
    base, wheels = base_env(), out / "wheels"
    wheel = wheel_into(wheels, wheel_dir)
    version = wheel.name.split("-")[1]
    installed = child_env(base, out / "installed")
    subprocess.run([_bin(installed), "-m", "pip", "install", "-q",
                    "--no-deps", str(wheel)], check=True,
                   env=kernel_env(installed, wheels))
    copies = []
    for chapter in chapters:
        env = child_env(installed, out / chapter.stem / "env")
        name = f"pyxis-{chapter.stem}"
        spec = out / "kernels" / name
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [str(_bin(env)), "-m", "ipykernel_launcher",
                     "-f", "{connection_file}"],
            "display_name": name, "language": "python",
            "env": {**kernel_env(env, wheels), "PYTHONPATH": ""},
        }))
        nb = nbformat.read(chapter, as_version=4)
        nb.metadata["kernelspec"] = {"name": name, "display_name": name,
                                     "language": "python"}
        for cell in nb.cells:
            if cell.metadata.get("pyxis_install_cell"):
                tags = cell.metadata.setdefault("tags", [])
                tags.append("nbval-ignore-output")
        nb.cells.append(nbformat.v4.new_code_cell(
            "import pyxis_nb\n"
            f"assert pyxis_nb.__file__.startswith({str(_site(installed))!r}), "
            "pyxis_nb.__file__\n"
            f"assert pyxis_nb.__version__ == {version!r}, pyxis_nb.__version__"))
        copy = out / chapter.stem / "run" / chapter.name
        copy.parent.mkdir(parents=True)
        nbformat.write(nb, copy)
        copies.append(copy)
    return copies


def installed_version(env: Path) -> str | None:
    found = list(_site(env).glob("pyxis_nb-*.dist-info"))
    return found[0].name.removesuffix(".dist-info").split("-")[1] if found else None


def table(rows: list[tuple[str, float, float | None]], load) -> str:
    """The Run All times as a Markdown table, with the load it ran under."""
    lines = ["| chapter | Run All (wall) | kernel CPU |", "|---|---|---|"]
    for name, wall, cpu in rows:
        shown = "failed" if cpu is None else f"{cpu:.1f} s"
        lines.append(f"| {name} | {wall:.1f} s | {shown} |")
    lines.append(f"\nMeasured {time.strftime('%Y-%m-%d %H:%M')} on "
                 f"{os.cpu_count()} cores; load average (1 min) "
                 f"{load[0]:.1f} before, {load[1]:.1f} after.")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    wheel_dir = None
    if argv[:1] == ["--wheel"]:
        wheel_dir, argv = Path(argv[1]), argv[2:]
    if argv[:1] == ["--prepare"]:
        chapters = sorted((ROOT / "book").glob("*.ipynb"))
        for copy in prepare(Path(argv[1]).resolve(), chapters, wheel_dir):
            print(copy.relative_to(ROOT))
        return 0
    chapters = [Path(a) for a in argv] or sorted((ROOT / "book").glob("*.ipynb"))
    base = base_env()
    rows, before = [], os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        wheels = Path(tmp) / "wheels"
        print("wheel:", wheel_into(wheels, wheel_dir).name)
        failed = 0
        for chapter in chapters:
            work = Path(tmp) / chapter.stem
            env = child_env(base, work / "env")
            cpu, start = None, time.perf_counter()  # kernel start to end
            try:
                nb = run_chapter(chapter.resolve(), env, wheels, work / "run",
                                 cpu=True)
                cpu = nb.metadata.get("kernel_cpu_s")
                status = f"ok (installed pyxis-nb {installed_version(env)})"
            except Exception as err:  # report and go on to the next chapter
                failed += 1
                status = f"FAILED: {str(err).strip().splitlines()[-1]}"
            wall = time.perf_counter() - start
            rows.append((chapter.stem, wall, cpu))
            print(f"{chapter.name}: {status}, {wall:.1f} s")
    print()
    print(table(rows, (before, os.getloadavg()[0])))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
