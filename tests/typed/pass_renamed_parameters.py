"""The scheduler calls positionally, so implementations may rename parameters or widen them."""

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
from sglang.srt.sampling.sampling_observer import SamplingObserver


class TerseHost:
    def consume(self, b: ScheduleBatch, c: Sequence[CommittedTokens | None]) -> None:
        pass


class WideHost:
    # Accepting more than the contract promises is fine (parameters are contravariant).
    def consume(self, batch: object, commits: Sequence[object], *extra: object) -> None:
        pass


class TerseDevice:
    def copy_to_host(self, copy: Callable[[torch.Tensor], torch.Tensor]) -> TerseHost:
        return TerseHost()


class DeviceWithOptions:
    def copy_to_host(
        self, d2h: Callable[[torch.Tensor], torch.Tensor], *, pinned: bool = True
    ) -> WideHost:
        return WideHost()


class TerseObserver:
    def is_active(self, info: Any) -> bool:
        return True

    def before_grammar(self, scores: torch.Tensor, info: Any) -> None:
        return None

    def after_sample(self, s: Any, ids: torch.Tensor) -> TerseDevice:
        return TerseDevice()


devices: list[DeviceAuxiliaryOutput] = [TerseDevice(), DeviceWithOptions()]
hosts: list[HostAuxiliaryOutput] = [TerseHost(), WideHost()]
observer: SamplingObserver = TerseObserver()
