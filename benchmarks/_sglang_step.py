"""SGLang 0.5.23's copy step, restated for the guard benchmarks (no SGLang needed to run them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Logits:
    """``LogitsProcessorOutput``'s one field the copy reads."""

    auxiliary_device_output: Any = None


class Result:
    """``GenerationBatchResult``'s fields the copy reads and writes."""

    def __init__(self, output: Any) -> None:
        self.logits_output = Logits()
        self.logits_output.auxiliary_device_output = output
        self.auxiliary_host_output: Any = None


def copy_step(async_d2h: Callable[[Any], Any]) -> Callable[[Result], None]:
    """Returns ``GenerationBatchResult.copy_auxiliary_output_to_cpu`` of 0.5.23, copying with
    ``async_d2h`` (the module-level ``_async_d2h`` there)."""

    def copy_auxiliary_output_to_cpu(self: Result) -> None:
        if self.logits_output is None or self.auxiliary_host_output is not None:
            return
        device_output = self.logits_output.auxiliary_device_output
        if device_output is not None:
            self.auxiliary_host_output = device_output.copy_to_host(async_d2h)
            self.logits_output.auxiliary_device_output = None

    return copy_auxiliary_output_to_cpu
