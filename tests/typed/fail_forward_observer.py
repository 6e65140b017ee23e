"""An after_forward without the keyword-only can_run_graph is not a ForwardObserver."""

from __future__ import annotations

from typing import Any

from sglang.srt.managers.auxiliary_output import DeviceAuxiliaryOutput
from sglang.srt.managers.schedule_batch import ScheduleBatch
from sglang.srt.model_executor.forward_observer import ForwardObserver


class NoKeyword:
    def after_forward(self, batch: ScheduleBatch, forward_batch: Any,
                      logits_output: Any) -> DeviceAuxiliaryOutput | None:
        return None


wrong: ForwardObserver = NoKeyword()  # type: ignore[assignment]
