"""copy_to_host and consume must accept exactly the arguments the scheduler passes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from sglang.srt.managers.auxiliary_output import (
    CommittedTokens,
    DeviceAuxiliaryOutput,
    HostAuxiliaryOutput,
)
from sglang.srt.managers.schedule_batch import ScheduleBatch


class Host:
    def consume(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]) -> None:
        pass


class NoCopyArgument:
    def copy_to_host(self) -> Host:
        return Host()


class TwoCopyArguments:
    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor], stream: int) -> Host:
        return Host()


class StaticCopy:
    @staticmethod
    def copy_to_host() -> Host:
        return Host()


class ConsumeWithoutCommits:
    def consume(self, batch: ScheduleBatch) -> None:
        pass


class SubclassWithoutCopyArgument(DeviceAuxiliaryOutput):
    def copy_to_host(self) -> Host:  # type: ignore[override]
        return Host()


no_argument: DeviceAuxiliaryOutput = NoCopyArgument()  # type: ignore[assignment]
two_arguments: DeviceAuxiliaryOutput = TwoCopyArguments()  # type: ignore[assignment]
static_copy: DeviceAuxiliaryOutput = StaticCopy()  # type: ignore[assignment]
no_commits: HostAuxiliaryOutput = ConsumeWithoutCommits()  # type: ignore[assignment]


def call_sites(device: DeviceAuxiliaryOutput, host: HostAuxiliaryOutput, batch: ScheduleBatch) -> None:
    device.copy_to_host()  # type: ignore[call-arg]
    host.consume(batch)  # type: ignore[call-arg]
    host.consume(batch, [None], [None])  # type: ignore[call-arg]
