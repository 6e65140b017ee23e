"""`pytest --auxcheck` on outputs that each plant one bug: every group must fail its code.

Each planted class is its own zero-argument factory, so the fixture returns the
class; the parameter id is the class name (``PLANTED_BUGS`` maps it to its code).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from broken_plugin import outputs


@pytest.fixture(name="auxcheck_device_output", params=sorted(outputs.PLANTED_BUGS),
                ids=lambda name: f"{name}-{outputs.PLANTED_BUGS[name]}")
def broken_output(request: pytest.FixtureRequest) -> Any:
    """Returns the factory (the class) of one planted bug."""
    return getattr(outputs, request.param)


@pytest.fixture(name="auxcheck_sampling_observer", params=sorted(outputs.PLANTED_OBSERVER_BUGS),
                ids=lambda name: f"{name}-{outputs.PLANTED_OBSERVER_BUGS[name]}")
def broken_observer(request: pytest.FixtureRequest) -> Any:
    """Returns the factory (the class) of one planted observer bug."""
    return getattr(outputs, request.param)


@pytest.fixture
def auxcheck_static_buffers() -> list[torch.Tensor]:
    """Returns the stand-in CUDA graph's static buffers."""
    return outputs.static_buffers()
