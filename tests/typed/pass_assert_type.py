"""The types the stubs give to contract results, composites and request fields."""

from __future__ import annotations

from array import array
from typing import Any

import torch
from sglang.srt.managers.auxiliary_output import (
    CommittedTokens,
    CompositeDeviceAuxiliaryOutput,
    CompositeHostAuxiliaryOutput,
    DeviceAuxiliaryOutput,
    HostAuxiliaryOutput,
    append_auxiliary_output,
)
from sglang.srt.managers.schedule_batch import Req, ScheduleBatch
from sglang.srt.sampling.sampling_observer import SamplingObserver
from sglang.srt.sampling.sampling_observer_pp import pop_auxiliary_output_from_pp_tensors
from typing_extensions import assert_type


def check(
    device: DeviceAuxiliaryOutput,
    composite: CompositeDeviceAuxiliaryOutput,
    batch: ScheduleBatch,
    observer: SamplingObserver,
) -> None:
    assert_type(append_auxiliary_output(None, None), DeviceAuxiliaryOutput | None)
    assert_type(append_auxiliary_output(device, composite), DeviceAuxiliaryOutput | None)
    assert_type(composite.outputs, tuple[DeviceAuxiliaryOutput, ...])
    host = composite.copy_to_host(torch.Tensor.clone)
    assert_type(host, CompositeHostAuxiliaryOutput)
    assert_type(host.outputs, tuple[HostAuxiliaryOutput, ...])
    assert_type(host.consume(batch, [None]), None)
    assert_type(device.copy_to_host(torch.Tensor.clone), HostAuxiliaryOutput)
    assert_type(CompositeDeviceAuxiliaryOutput((device, composite)), CompositeDeviceAuxiliaryOutput)

    commit = CommittedTokens(output_index=3, token_ids=(7, 8))
    assert_type(commit.output_index, int)
    assert_type(commit.token_ids, tuple[int, ...])

    req = batch.reqs[0]
    assert_type(batch.reqs, list[Req])
    assert_type(req.rid, str)
    assert_type(req.output_ids, array[int])
    assert_type(req.origin_input_ids, array[int])
    assert_type(req.finished(), bool)
    assert_type(req.is_retracted, bool)
    assert_type(req.finished_len, int | None)
    assert_type(req.customized_info, dict[str, list[Any]] | None)

    assert_type(observer.after_sample(None, torch.zeros(1)), DeviceAuxiliaryOutput | None)
    assert_type(pop_auxiliary_output_from_pp_tensors({}, observer), DeviceAuxiliaryOutput | None)
