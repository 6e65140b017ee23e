"""SamplingObserver.after_sample must return a device output or None."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from sglang.srt.managers.auxiliary_output import CommittedTokens
from sglang.srt.managers.schedule_batch import ScheduleBatch
from sglang.srt.sampling.sampling_observer import SamplingObserver


class Host:
    def consume(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]) -> None:
        pass


class ReturnsTensor:
    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> Any:
        return logits

    def after_sample(self, state: Any, token_ids: torch.Tensor) -> torch.Tensor:
        return token_ids


class ReturnsHostOutput(ReturnsTensor):
    # Returning the host side skips the scheduler's copy.
    def after_sample(  # type: ignore[override]
        self, state: Any, token_ids: torch.Tensor
    ) -> Host:
        return Host()


class SubclassReturnsTokenList(SamplingObserver):
    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> Any:
        return logits

    def after_sample(  # type: ignore[override]
        self, state: Any, token_ids: torch.Tensor
    ) -> list[int]:
        return token_ids.tolist()


tensor_observer: SamplingObserver = ReturnsTensor()  # type: ignore[assignment]
host_observer: SamplingObserver = ReturnsHostOutput()  # type: ignore[assignment]
