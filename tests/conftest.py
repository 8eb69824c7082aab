"""Shared test settings.

Hypothesis runs derandomized (a fixed sequence of examples per test) so that a
green main stays green; set HYPOTHESIS_PROFILE=explore to search afresh
(`make quick` sets HYPOTHESIS_PROFILE=quick: fewer examples).
"""

import os
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", deadline=None, max_examples=500)
# `make quick`: derandomized too, 10 examples a test instead of 60
settings.register_profile("quick", parent=settings.get_profile("ci"),
                          max_examples=10)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def close_figures():
    """Close every matplotlib figure a test left open (plots and views)."""
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


@pytest.fixture
def rng():
    """A seeded generator, fresh for each test."""
    return np.random.default_rng(1234)


# ---- `make quick`: the inner loop, in under a minute on two cores --------
#
# `make quick` leaves out whole files (the Makefile's QUICK_SKIP: builds,
# browsers, notebooks, the references against torch and transformers), the
# tests named for what they compare with (QUICK_NOT: torch, transformers,
# ...) and every test marked slow: over about a second on a two-core
# machine. A file marks its own slow tests (@pytest.mark.slow); SLOW marks
# these by name (every parametrization), until their files carry the mark.
SLOW = {
    "tests/test_conventions.py::test_import_loads_numpy_only",
    "tests/test_tiled.py::test_mask_mod_matches_torch_flex_attention",
}


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: over about a second on a two-core machine; "
        "`make quick` leaves it out (-m 'not slow')")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.split("[")[0] in SLOW:
            item.add_marker(pytest.mark.slow)


def _kind(nodeid: str) -> str:
    if ".ipynb::" in nodeid:
        return "nbval notebook cells"
    if "tests/test_website" in nodeid:
        return "website checks"
    return "unit, property and reference tests"


def _is_reference(nodeid: str) -> bool:
    """A test that compares with PyTorch or Hugging Face."""
    return "reference" in nodeid.split("::")[0]


def _skip_reason(report) -> str:
    """The reason a skip report carries (``(path, line, reason)``)."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter):
    """One line per kind of test, so a CI log shows how many notebook cells
    passed; then every skipped reference test by name, with the reason (a
    green run without torch must not read like a run that checked torch)."""
    counts: dict[str, dict[str, int]] = {}
    skipped_references = {}
    for outcome in ("passed", "failed", "skipped", "error"):
        for report in terminalreporter.stats.get(outcome, []):
            nodeid = getattr(report, "nodeid", "")
            when = getattr(report, "when", "call")  # a whole file: "collect"
            if not nodeid or when not in ("call", "setup", "collect"):
                continue
            if when == "collect" and outcome != "skipped":
                continue
            if outcome == "passed" and report.when != "call":
                continue
            kind = counts.setdefault(_kind(nodeid), {})
            kind[outcome] = kind.get(outcome, 0) + 1
            if outcome == "skipped" and _is_reference(nodeid):
                skipped_references[nodeid] = _skip_reason(report)
    if counts:
        kind_s, file_s = _seconds(terminalreporter.stats)
        terminalreporter.section("pyxis summary")
        for kind, by_outcome in sorted(counts.items()):
            parts = ", ".join(f"{n} {o}" for o, n in by_outcome.items())
            terminalreporter.write_line(
                f"{kind}: {parts} ({kind_s[kind]:.0f} s of test time)")
        terminalreporter.write_line(
            f"test time {file_s.total():.0f} s in all; the slowest files: "
            + ", ".join(f"{f} {s:.0f} s"
                        for f, s in file_s.most_common(SLOWEST_FILES)))
        for nodeid, reason in sorted(skipped_references.items()):
            terminalreporter.write_line(
                f"reference test skipped: {nodeid} ({reason})")


SLOWEST_FILES = 6


def _seconds(stats) -> tuple[Counter, Counter]:
    """Seconds of test time (set-up, call and tear-down, summed over the
    workers) by kind of test and by file: where a run's time went, in every
    CI log."""
    kinds, files = Counter(), Counter()
    for reports in stats.values():
        for report in reports:
            nodeid = getattr(report, "nodeid", "")
            duration = getattr(report, "duration", None)
            if not nodeid or duration is None:
                continue
            file = nodeid.split("::")[0]
            if ".ipynb" in file:  # a chapter's copy: .../<name>/run/<name>.ipynb
                file = file.rsplit("/", 1)[-1]
            kinds[_kind(nodeid)] += duration
            files[file] += duration
    return kinds, files


# ---- helpers that several test files import (``from conftest import ...``)

def left_pad(prompts, pad=0):
    """Token lists -> a left-padded (B, P) batch and its 0/1 mask."""
    P = max(map(len, prompts))
    ids = np.array([[pad] * (P - len(p)) + p for p in prompts])
    mask = np.array([[0] * (P - len(p)) + [1] * len(p) for p in prompts])
    return ids, mask


def generate_with_logits(model, *args, **kwargs):
    """``model.generate``'s ids and each step's logits, (..., N, V)."""
    out = model.generate(*args, **kwargs, output_logits=True,
                         return_dict_in_generate=True)
    return out.sequences, np.stack(out.logits, axis=-2)


def fresh_python(code: str, **kwargs):
    """``code`` run by a new interpreter of this Python (``python -c``), so
    that nothing this process imported is loaded there; its
    CompletedProcess, stdout and stderr as text."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, **kwargs)


class _Float64Torch:
    """``torch`` whose ``float`` and ``float32`` are ``torch.float64``."""

    def __init__(self, torch):
        self._torch = torch

    def __getattr__(self, name):
        if name in ("float", "float32"):
            return self._torch.float64
        return getattr(self._torch, name)


def run_in_float64(monkeypatch, *modules, tensor_float=False):
    """Make transformers' ``modules`` compute in float64 where they cast to
    float32 by name (``dtype=torch.float``, ``.to(torch.float32)``): their
    global ``torch`` is swapped for one whose float32 is float64, for this
    test. With ``tensor_float``, ``tensor.float()`` also leaves a float64
    tensor as it is (else it rounds to float32)."""
    import torch
    for module in modules:
        monkeypatch.setattr(module, "torch", _Float64Torch(torch))
    if tensor_float:
        to_float = torch.Tensor.float

        def keep_float64(self, *args, **kwargs):
            if self.dtype == torch.float64:
                return self
            return to_float(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, "float", keep_float64)
