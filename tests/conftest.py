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
