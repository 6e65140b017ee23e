"""What a plugin adds for `pytest --auxcheck`: its device output, in the three accepted forms.

The fixture's values are an instance, a zero-argument factory and a Hypothesis
strategy of batch sizes mapped to outputs; each gets its own group of items. The
observer itself is given too, so auxcheck runs it over several overlapped steps.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from capture_plugin.outputs import (
    HiddenStateObserver,
    make_device_output,
    make_observer,
    static_buffers,
)


@pytest.fixture(name="auxcheck_device_output", params=["instance", "factory", "strategy"])
def capture_output(request: pytest.FixtureRequest) -> Any:
    """Returns the output one sampling step publishes, as an instance, factory or strategy."""
    if request.param == "instance":
        return make_device_output()
    if request.param == "factory":
        return make_device_output
    from hypothesis import strategies as st

    return st.integers(min_value=1, max_value=8).map(make_device_output)


@pytest.fixture
def auxcheck_static_buffers() -> list[torch.Tensor]:
    """Returns the CUDA-graph buffers the outputs must not alias."""
    return static_buffers()


@pytest.fixture
def auxcheck_sampling_observer() -> HiddenStateObserver:
    """Returns the observer itself: auxcheck drives it through SGLang's step loop."""
    return make_observer()


@pytest.fixture
def auxcheck_pp_observer() -> HiddenStateObserver:
    """Returns the observer that rebuilds an output on the next pipeline stage."""
    return make_observer()
