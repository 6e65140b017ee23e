"""Plugins may subclass the contract protocols explicitly."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from sglang.srt.managers.auxiliary_output import (
    CommittedTokens,
    DeviceAuxiliaryOutput,
    HostAuxiliaryOutput,
)
from sglang.srt.managers.schedule_batch import ScheduleBatch
from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo
from sglang.srt.sampling.sampling_observer import SamplingObserver
from sglang.srt.sampling.sampling_observer_pp import (
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
)


class LogprobHost(HostAuxiliaryOutput):
    def consume(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]) -> None:
        for req in batch.reqs:
            req.customized_info = {"logprobs": []}


class LogprobDevice(DeviceAuxiliaryOutput, PipelineParallelAuxiliaryOutput):
    def __init__(self, logprobs: torch.Tensor) -> None:
        self.logprobs = logprobs

    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> LogprobHost:
        copy_tensor(self.logprobs)
        return LogprobHost()

    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return {"logprobs": self.logprobs}


class LogprobObserver(SamplingObserver, PipelineParallelSamplingObserver):
    def is_active(self, sampling_info: SamplingBatchInfo) -> bool:
        return sampling_info.vocab_size > 0

    def before_grammar(self, logits: torch.Tensor, sampling_info: SamplingBatchInfo) -> Any:
        return logits

    def after_sample(self, state: Any, token_ids: torch.Tensor) -> LogprobDevice | None:
        return LogprobDevice(token_ids)

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> LogprobDevice:
        return LogprobDevice(tensors["logprobs"])


device: DeviceAuxiliaryOutput = LogprobDevice(torch.zeros(1))
host: HostAuxiliaryOutput = device.copy_to_host(torch.Tensor.clone)
observer: SamplingObserver = LogprobObserver()
is_pp_output = isinstance(device, PipelineParallelAuxiliaryOutput)
