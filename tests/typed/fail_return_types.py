"""Contract methods must return what the scheduler expects."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch
from sglang.srt.managers.auxiliary_output import (
    CommittedTokens,
    CompositeDeviceAuxiliaryOutput,
    DeviceAuxiliaryOutput,
    HostAuxiliaryOutput,
    append_auxiliary_output,
)
from sglang.srt.managers.schedule_batch import ScheduleBatch
from sglang.srt.sampling.sampling_observer_pp import (
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
)


class Host:
    def consume(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]) -> None:
        pass


class CopyReturnsNone:
    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> None:
        pass


class CopyReturnsTensor:
    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        return copy_tensor(torch.zeros(1))


class ConsumeReturnsCount:
    def consume(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]) -> int:
        return len(commits)


class SubclassConsumeReturnsCount(HostAuxiliaryOutput):
    def consume(  # type: ignore[override]
        self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]
    ) -> int:
        return len(commits)


class PPTensorsAsList:
    def to_pp_tensors(self) -> list[torch.Tensor]:
        return []


class RebuildMayFail:
    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> DeviceAuxiliaryOutput | None:
        return None


copy_none: DeviceAuxiliaryOutput = CopyReturnsNone()  # type: ignore[assignment]
copy_tensor: DeviceAuxiliaryOutput = CopyReturnsTensor()  # type: ignore[assignment]
consume_count: HostAuxiliaryOutput = ConsumeReturnsCount()  # type: ignore[assignment]
pp_list: PipelineParallelAuxiliaryOutput = PPTensorsAsList()  # type: ignore[assignment]
pp_optional: PipelineParallelSamplingObserver = RebuildMayFail()  # type: ignore[assignment]


def narrowing(device: DeviceAuxiliaryOutput) -> CompositeDeviceAuxiliaryOutput:
    return append_auxiliary_output(device, device)  # type: ignore[return-value]
