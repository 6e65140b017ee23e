"""Fixtures of the real-SGLang tiers: one driver process per xdist worker, shared by the modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.sglang_cpu import Driver, environment


@pytest.fixture(scope="session")
def sglang() -> Iterator[Driver]:
    """SGLang 0.5.23's real result processing and sampler, in the CPU environment (driver.py)."""
    driver = Driver(environment())
    yield driver
    driver.close()
