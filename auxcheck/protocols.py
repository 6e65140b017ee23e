"""The reference auxiliary-output contract of SGLang 0.5.20 and later.

Written for auxcheck from the contract in docs/contract.md; it behaves like
``sglang.srt.managers.auxiliary_output`` and ``sglang.srt.sampling.sampling_observer(_pp)``
without importing torch at run time (torch appears only in annotations).
"""

from auxcheck._core.protocols import (
    PP_OUTPUT_PREFIX,
    CommittedTokens,
    CompositeDeviceAuxiliaryOutput,
    CompositeHostAuxiliaryOutput,
    DeviceAuxiliaryOutput,
    ForwardObserver,
    HostAuxiliaryOutput,
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    SamplingObserver,
    ScheduleBatchLike,
    add_auxiliary_output_to_pp_tensors,
    append_auxiliary_output,
    pop_auxiliary_output_from_pp_tensors,
)

__all__ = [
    "PP_OUTPUT_PREFIX",
    "CommittedTokens",
    "CompositeDeviceAuxiliaryOutput",
    "CompositeHostAuxiliaryOutput",
    "DeviceAuxiliaryOutput",
    "ForwardObserver",
    "HostAuxiliaryOutput",
    "PipelineParallelAuxiliaryOutput",
    "PipelineParallelSamplingObserver",
    "SamplingObserver",
    "ScheduleBatchLike",
    "add_auxiliary_output_to_pp_tensors",
    "append_auxiliary_output",
    "pop_auxiliary_output_from_pp_tensors",
]
