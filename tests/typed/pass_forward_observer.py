"""A forward observer (SGLang main, not yet released) type-checks against the stubs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from sglang.srt.managers.auxiliary_output import (
    CommittedTokens,
    DeviceAuxiliaryOutput,
    HostAuxiliaryOutput,
)
from sglang.srt.managers.schedule_batch import ScheduleBatch
from sglang.srt.model_executor.forward_observer import ForwardObserver


class HiddenHost:
    def consume(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]) -> None:
        return None


class HiddenDevice:
    def __init__(self, hidden: torch.Tensor) -> None:
        self.hidden = hidden

    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> HostAuxiliaryOutput:
        copy_tensor(self.hidden)
        return HiddenHost()


class CapturesHidden:
    def after_forward(self, batch: ScheduleBatch, forward_batch: Any, logits_output: Any, *,
                      can_run_graph: bool) -> DeviceAuxiliaryOutput | None:
        return HiddenDevice(logits_output.hidden_states) if can_run_graph else None


observer: ForwardObserver = CapturesHidden()
