"""Shared test settings.

Hypothesis runs derandomized (a fixed sequence of examples per test) so that a
green main stays green; set HYPOTHESIS_PROFILE=explore to search afresh.
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def rng():
    """A seeded generator, fresh for each test."""
    return np.random.default_rng(1234)


def _kind(nodeid: str) -> str:
    if ".ipynb::" in nodeid:
        return "nbval notebook cells"
    if "test_website.py" in nodeid:
        return "website checks"
    return "unit, property and reference tests"


def pytest_terminal_summary(terminalreporter):
    """One line per kind of test, so a CI log shows how many notebook cells passed."""
    counts: dict[str, dict[str, int]] = {}
    for outcome in ("passed", "failed", "skipped", "error"):
        for report in terminalreporter.stats.get(outcome, []):
            nodeid = getattr(report, "nodeid", "")
            if not nodeid or getattr(report, "when", "call") not in ("call", "setup"):
                continue
            if outcome == "passed" and report.when != "call":
                continue
            kind = counts.setdefault(_kind(nodeid), {})
            kind[outcome] = kind.get(outcome, 0) + 1
    if counts:
        terminalreporter.section("pyxis summary")
        for kind, by_outcome in sorted(counts.items()):
            parts = ", ".join(f"{n} {o}" for o, n in by_outcome.items())
            terminalreporter.write_line(f"{kind}: {parts}")
