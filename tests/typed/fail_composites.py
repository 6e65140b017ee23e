"""Composites and commits are immutable and built from tuples."""

from __future__ import annotations

from array import array

from sglang.srt.managers.auxiliary_output import (
    CommittedTokens,
    CompositeDeviceAuxiliaryOutput,
    CompositeHostAuxiliaryOutput,
    DeviceAuxiliaryOutput,
    append_auxiliary_output,
)
from sglang.srt.managers.schedule_batch import Req


def misuse(device: DeviceAuxiliaryOutput, composite: CompositeDeviceAuxiliaryOutput, req: Req) -> None:
    CompositeDeviceAuxiliaryOutput([device])  # type: ignore[arg-type]
    CompositeHostAuxiliaryOutput((device,))  # type: ignore[arg-type]
    composite.outputs = ()  # type: ignore[misc]
    commit = CommittedTokens(0, [1, 2])  # type: ignore[arg-type]
    commit.token_ids = ()  # type: ignore[misc]
    append_auxiliary_output(device)  # type: ignore[call-arg]
    req.output_ids = [1, 2]  # type: ignore[assignment]
    req.output_ids = array("q", [1, 2])
    req.finished_len = "3"  # type: ignore[assignment]
