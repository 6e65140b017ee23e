"""Names that moved out of sampling_observer in SGLang 0.5.20 are errors at their old home."""

# ruff: noqa: F401, I001  (the imports are the test cases)
from __future__ import annotations

import sglang.srt.sampling.sampling_observer
import sglang.srt.sampling.sampling_observer as observer_module
from sglang.srt.sampling import sampling_observer
from sglang.srt.sampling.sampling_observer import CommittedTokens  # type: ignore[attr-defined]
from sglang.srt.sampling.sampling_observer import DeviceAuxiliaryOutput  # type: ignore[attr-defined]
from sglang.srt.sampling.sampling_observer import HostAuxiliaryOutput  # type: ignore[attr-defined]
from sglang.srt.sampling.sampling_observer import (  # type: ignore[attr-defined]
    HostAuxiliaryOutput as Host,
    SamplingObserver,
)

module_attribute = observer_module.CommittedTokens  # type: ignore[attr-defined]
from_package = sampling_observer.DeviceAuxiliaryOutput  # type: ignore[attr-defined]
dotted = sglang.srt.sampling.sampling_observer.HostAuxiliaryOutput  # type: ignore[attr-defined]


def annotated(output: observer_module.DeviceAuxiliaryOutput) -> None:  # type: ignore[name-defined]
    pass
