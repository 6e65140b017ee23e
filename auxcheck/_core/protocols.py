"""The reference auxiliary-output contract of SGLang 0.5.20 and later.

Written for auxcheck from the contract in docs/contract.md; it behaves like
``sglang.srt.managers.auxiliary_output`` and ``sglang.srt.sampling.sampling_observer(_pp)``
without importing torch at run time (torch appears only in annotations).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

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

PP_OUTPUT_PREFIX = "__sampling_observer_output__."
"""Key prefix under which auxiliary PP tensors travel between stages."""


class ScheduleBatchLike(Protocol):
    """The part of SGLang's ``ScheduleBatch`` that the contract touches: its requests."""

    @property
    def reqs(self) -> Sequence[Any]: ...


@dataclass(frozen=True, slots=True)
class CommittedTokens:
    """The tokens newly visible for one request in one step.

    ``output_index`` is the request's visible output length before them.
    """

    output_index: int
    token_ids: tuple[int, ...]


class DeviceAuxiliaryOutput(Protocol):
    """Device output of an observer, copied later by the scheduler.

    Its tensors must not alias CUDA-graph static buffers that a later replay can
    overwrite before the scheduler-side copy completes.
    """

    def copy_to_host(
        self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]
    ) -> HostAuxiliaryOutput: ...


class HostAuxiliaryOutput(Protocol):
    """Scheduler-side result of a device output.

    ``consume`` runs after sampled tokens are committed and before streaming;
    ``commits`` is aligned with ``batch.reqs`` (None where nothing became visible).
    """

    def consume(
        self, batch: ScheduleBatchLike, commits: Sequence[CommittedTokens | None]
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class CompositeHostAuxiliaryOutput:
    """Host outputs consumed together: each child gets the same batch and commits."""

    outputs: tuple[HostAuxiliaryOutput, ...]

    def consume(
        self, batch: ScheduleBatchLike, commits: Sequence[CommittedTokens | None]
    ) -> None:
        """Passes the very same ``batch`` and ``commits`` to every child, in order."""
        for output in self.outputs:
            output.consume(batch, commits)


@dataclass(frozen=True, slots=True)
class CompositeDeviceAuxiliaryOutput:
    """Device outputs copied together: each child is copied once, in order."""

    outputs: tuple[DeviceAuxiliaryOutput, ...]

    def copy_to_host(
        self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]
    ) -> CompositeHostAuxiliaryOutput:
        """Returns the composite of every child's host output, copying each child once."""
        return CompositeHostAuxiliaryOutput(
            tuple(output.copy_to_host(copy_tensor) for output in self.outputs)
        )


def append_auxiliary_output(
    current: DeviceAuxiliaryOutput | None,
    output: DeviceAuxiliaryOutput | None,
) -> DeviceAuxiliaryOutput | None:
    """Returns ``current`` with ``output`` appended: None is the identity, composites flatten."""
    if output is None:
        return current
    if current is None:
        return output
    return CompositeDeviceAuxiliaryOutput(_children(current) + _children(output))


def _children(output: DeviceAuxiliaryOutput) -> tuple[DeviceAuxiliaryOutput, ...]:
    # Never isinstance: it reads a plugin's __class__, which may be a raising property.
    if issubclass(type(output), CompositeDeviceAuxiliaryOutput):
        return output.outputs  # type: ignore[attr-defined, no-any-return]
    return (output,)


class SamplingObserver(Protocol):
    """Invocation-scoped hooks around the grammar mask and the sampler.

    Returning None from ``before_grammar`` skips ``after_sample``.
    """

    def is_active(self, sampling_info: Any) -> bool: ...

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> Any: ...

    def after_sample(
        self, state: Any, token_ids: torch.Tensor
    ) -> DeviceAuxiliaryOutput | None: ...


class ForwardObserver(Protocol):
    """A hook right after the forward pass (SGLang main after 0.5.23, not yet released).

    ``after_forward`` runs on the scheduler thread right after the forward is launched;
    ``batch`` may change before the result is processed, and with ``can_run_graph``
    the logits output can alias CUDA-graph buffers. Its output is composed with the
    sampling observer's, forward first.
    """

    def after_forward(
        self, batch: Any, forward_batch: Any, logits_output: Any, *, can_run_graph: bool
    ) -> DeviceAuxiliaryOutput | None: ...


@runtime_checkable
class PipelineParallelAuxiliaryOutput(Protocol):
    """A device output that can cross pipeline-parallel stages as named tensors."""

    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]: ...


@runtime_checkable
class PipelineParallelSamplingObserver(Protocol):
    """An observer that rebuilds a device output from the tensors another stage sent."""

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> DeviceAuxiliaryOutput: ...


def add_auxiliary_output_to_pp_tensors(
    tensors: MutableMapping[str, Any], output: DeviceAuxiliaryOutput | None
) -> None:
    """Adds ``output``'s PP tensors to ``tensors`` under the prefix; raises RuntimeError as SGLang does."""
    if output is None:
        return
    if not isinstance(output, PipelineParallelAuxiliaryOutput):
        raise RuntimeError(  # noqa: TRY004 - the error SGLang raises here
            "auxiliary output does not support pipeline-parallel transport"
        )
    output_tensors = output.to_pp_tensors()
    if not output_tensors:
        raise RuntimeError("auxiliary PP output must contain at least one tensor")
    for name, tensor in output_tensors.items():
        if not isinstance(name, str) or not name:
            raise RuntimeError("auxiliary PP tensor names must be non-empty strings")
        if not _is_tensor(tensor):
            raise RuntimeError(f"auxiliary PP output {name!r} is not a tensor")
        key = f"{PP_OUTPUT_PREFIX}{name}"
        if key in tensors:
            raise RuntimeError(f"duplicate auxiliary PP tensor {name!r}")
        tensors[key] = tensor


def pop_auxiliary_output_from_pp_tensors(
    tensors: MutableMapping[str, Any], observer: SamplingObserver | None
) -> DeviceAuxiliaryOutput | None:
    """Removes the auxiliary PP tensors from ``tensors`` and returns the rebuilt output."""
    output_tensors = {
        key.removeprefix(PP_OUTPUT_PREFIX): value
        for key, value in tensors.items()
        if key.startswith(PP_OUTPUT_PREFIX)
    }
    if not output_tensors:
        return None
    if observer is None:
        raise RuntimeError("received auxiliary PP output without a sampling observer")
    if not isinstance(observer, PipelineParallelSamplingObserver):
        raise RuntimeError(  # noqa: TRY004 - the error SGLang raises here
            "sampling observer does not support pipeline-parallel transport"
        )
    if any(not _is_tensor(tensor) for tensor in output_tensors.values()):
        raise RuntimeError("received a non-tensor auxiliary PP output")
    output = observer.from_pp_tensors(output_tensors)
    if output is None:
        raise RuntimeError("sampling observer did not reconstruct its PP output")
    for name in output_tensors:
        del tensors[f"{PP_OUTPUT_PREFIX}{name}"]
    return output


def _is_tensor(value: object) -> bool:
    # Only reached with PP data, which is made of tensors, so torch is already loaded.
    import torch

    return bool(torch.is_tensor(value))
