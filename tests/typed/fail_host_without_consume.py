"""A host output must have consume(batch, commits)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from sglang.srt.managers.auxiliary_output import (
    CommittedTokens,
    DeviceAuxiliaryOutput,
    HostAuxiliaryOutput,
)
from sglang.srt.managers.schedule_batch import ScheduleBatch


class HostWithoutConsume:
    def publish(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]) -> None:
        pass


class HostWithNarrowCommits:
    # The scheduler passes None for requests with no new token.
    def consume(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens]) -> None:
        pass


class DeviceToHostWithoutConsume:
    def copy_to_host(
        self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]
    ) -> HostWithoutConsume:
        return HostWithoutConsume()


class SubclassDeviceToHostWithoutConsume(DeviceAuxiliaryOutput):
    def copy_to_host(  # type: ignore[override]
        self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]
    ) -> HostWithoutConsume:
        return HostWithoutConsume()


host: HostAuxiliaryOutput = HostWithoutConsume()  # type: ignore[assignment]
narrow: HostAuxiliaryOutput = HostWithNarrowCommits()  # type: ignore[assignment]
device: DeviceAuxiliaryOutput = DeviceToHostWithoutConsume()  # type: ignore[assignment]
