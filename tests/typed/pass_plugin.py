"""A conforming plugin: device and host outputs, an observer, and PP transport."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from sglang.srt.managers.auxiliary_output import (
    CommittedTokens,
    DeviceAuxiliaryOutput,
    HostAuxiliaryOutput,
    append_auxiliary_output,
)
from sglang.srt.managers.schedule_batch import ScheduleBatch
from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo
from sglang.srt.sampling.sampling_observer import SamplingObserver
from sglang.srt.sampling.sampling_observer_pp import (
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    add_auxiliary_output_to_pp_tensors,
    pop_auxiliary_output_from_pp_tensors,
)


class CapturedHost:
    def __init__(self, values: torch.Tensor) -> None:
        self.values = values

    def consume(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]) -> None:
        for req, commit in zip(batch.reqs, commits):
            if commit is None or req.is_retracted:
                continue
            info = req.customized_info
            if info is None:
                info = req.customized_info = {}
            end = commit.output_index + len(commit.token_ids)
            info.setdefault(req.rid, []).append(self.values[commit.output_index : end].tolist())
            if req.finished() and req.finished_len is not None:
                info[req.rid].append(len(req.origin_input_ids) + req.finished_len)


class CapturedDevice:
    def __init__(self, values: torch.Tensor) -> None:
        self.values = values

    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> CapturedHost:
        return CapturedHost(copy_tensor(self.values))

    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return {"values": self.values}


class CaptureObserver:
    def is_active(self, sampling_info: SamplingBatchInfo) -> bool:
        return not sampling_info.is_all_greedy

    def before_grammar(self, logits: torch.Tensor, sampling_info: SamplingBatchInfo) -> Any:
        return logits.clone()

    def after_sample(self, state: Any, token_ids: torch.Tensor) -> DeviceAuxiliaryOutput | None:
        return None if state is None else CapturedDevice(token_ids.clone())

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> CapturedDevice:
        return CapturedDevice(tensors["values"])


device: DeviceAuxiliaryOutput = CapturedDevice(torch.zeros(4))
host: HostAuxiliaryOutput = device.copy_to_host(lambda tensor: tensor.to("cpu", non_blocking=True))
observer: SamplingObserver = CaptureObserver()
pp_output: PipelineParallelAuxiliaryOutput = CapturedDevice(torch.zeros(4))
pp_observer: PipelineParallelSamplingObserver = CaptureObserver()

pending = append_auxiliary_output(None, device)
pending = append_auxiliary_output(pending, observer.after_sample(object(), torch.zeros(2)))
tensors: dict[str, Any] = {}
add_auxiliary_output_to_pp_tensors(tensors, pending)
received = pop_auxiliary_output_from_pp_tensors(tensors, observer)
