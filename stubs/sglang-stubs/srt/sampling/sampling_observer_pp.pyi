from collections.abc import Mapping, MutableMapping
from typing import Any, Protocol, runtime_checkable

import torch
from sglang.srt.managers.auxiliary_output import DeviceAuxiliaryOutput
from sglang.srt.sampling.sampling_observer import SamplingObserver

@runtime_checkable
class PipelineParallelAuxiliaryOutput(Protocol):
    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]: ...

@runtime_checkable
class PipelineParallelSamplingObserver(Protocol):
    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor], /) -> DeviceAuxiliaryOutput: ...

def add_auxiliary_output_to_pp_tensors(
    tensors: MutableMapping[str, Any], output: DeviceAuxiliaryOutput | None
) -> None: ...
def pop_auxiliary_output_from_pp_tensors(
    tensors: MutableMapping[str, Any], observer: SamplingObserver | None
) -> DeviceAuxiliaryOutput | None: ...
