from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
from sglang.srt.managers.schedule_batch import ScheduleBatch

@dataclass(frozen=True)
class CommittedTokens:
    output_index: int
    token_ids: tuple[int, ...]

# SGLang calls the contract's methods positionally, so their parameters are positional-only
# here: an implementation may name its own (pyright compares names, mypy does not).
class DeviceAuxiliaryOutput(Protocol):
    def copy_to_host(
        self, copy_tensor: Callable[[torch.Tensor], torch.Tensor], /
    ) -> HostAuxiliaryOutput: ...

class HostAuxiliaryOutput(Protocol):
    def consume(
        self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None], /
    ) -> None: ...

@dataclass(frozen=True)
class CompositeHostAuxiliaryOutput:
    outputs: tuple[HostAuxiliaryOutput, ...]
    def consume(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]) -> None: ...

@dataclass(frozen=True)
class CompositeDeviceAuxiliaryOutput:
    outputs: tuple[DeviceAuxiliaryOutput, ...]
    def copy_to_host(
        self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]
    ) -> CompositeHostAuxiliaryOutput: ...

def append_auxiliary_output(
    current: DeviceAuxiliaryOutput | None, output: DeviceAuxiliaryOutput | None
) -> DeviceAuxiliaryOutput | None: ...
