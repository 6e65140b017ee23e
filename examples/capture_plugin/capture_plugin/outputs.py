"""Hidden-state capture: the observer, its device output and the host output it copies to.

The observer clones the rows of the model's hidden-state buffer for the sampled
requests (a CUDA-graph buffer that the next replay overwrites, hence the clone);
the host output appends each request's row to ``req.customized_info`` only when
that request got newly visible tokens, so streaming sees one row per commit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:  # mypy checks against the contract (auxcheck's sglang-stubs)
    from sglang.srt.managers.auxiliary_output import CommittedTokens
else:
    try:  # the real contract when SGLang is installed ...
        from sglang.srt.managers.auxiliary_output import CommittedTokens
    except ImportError:  # ... else auxcheck's reference copy of it
        from auxcheck.protocols import CommittedTokens

HIDDEN_KEY = "hidden_states"
POSITION_KEY = "hidden_state_output_index"


@dataclass(frozen=True)
class HiddenStateHostOutput:
    """Host copies of the captured rows; buffers one row per committed request."""

    hidden: torch.Tensor
    positions: torch.Tensor

    def consume(self, batch: Any, commits: Sequence[CommittedTokens | None]) -> None:
        """Appends each committed request's row to its ``customized_info``; returns None."""
        rows = {int(p): r for r, p in enumerate(self.positions.tolist())}
        for index, (req, commit) in enumerate(zip(batch.reqs, commits)):
            if commit is None or index not in rows:
                continue
            if req.customized_info is None:
                req.customized_info = {}
            req.customized_info.setdefault(HIDDEN_KEY, []).append(
                self.hidden[rows[index]].tolist())
            req.customized_info.setdefault(POSITION_KEY, []).append(commit.output_index)


@dataclass(frozen=True)
class HiddenStateDeviceOutput:
    """Rows ``hidden[bs, hidden_size]`` owned by this output, and the batch index of each row."""

    hidden: torch.Tensor
    positions: torch.Tensor

    def copy_to_host(
        self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]
    ) -> HiddenStateHostOutput:
        """Returns the host output, copying each tensor exactly once."""
        return HiddenStateHostOutput(copy_tensor(self.hidden), copy_tensor(self.positions))

    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        """Returns the tensors that cross pipeline-parallel stages."""
        return {"hidden": self.hidden, "positions": self.positions}


class HiddenStateObserver:
    """A SamplingObserver that captures rows of the model's hidden-state buffer."""

    def __init__(self, hidden_buffer: torch.Tensor, *, enabled: bool = True) -> None:
        self.hidden_buffer = hidden_buffer
        self.enabled = enabled

    def is_active(self, sampling_info: Any) -> bool:
        """Returns True while capture is enabled."""
        return self.enabled

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> int | None:
        """Returns the batch size as the state for ``after_sample`` (None skips it)."""
        return int(logits.shape[0]) if self.enabled else None

    def after_sample(self, state: int, token_ids: torch.Tensor) -> HiddenStateDeviceOutput:
        """Returns a device output owning a clone of the rows, never a view of the buffer
        (the first rows the buffer holds, when the batch is larger than the buffer)."""
        rows = min(state, self.hidden_buffer.shape[0])
        return HiddenStateDeviceOutput(
            hidden=self.hidden_buffer[:rows].clone(),
            positions=torch.arange(rows, device=token_ids.device),
        )

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> HiddenStateDeviceOutput:
        """Returns the device output rebuilt from the tensors another PP stage sent."""
        return HiddenStateDeviceOutput(hidden=tensors["hidden"], positions=tensors["positions"])


MODEL_HIDDEN_BUFFER = torch.arange(8 * 16, dtype=torch.float32).reshape(8, 16)
"""Stands in for the model's CUDA-graph hidden-state buffer (max batch 8, hidden 16)."""


def make_observer() -> HiddenStateObserver:
    """Returns an observer over the stand-in model buffer."""
    return HiddenStateObserver(MODEL_HIDDEN_BUFFER)


def make_device_output(batch_size: int = 4) -> HiddenStateDeviceOutput:
    """Returns the device output one sampling step of ``batch_size`` requests publishes."""
    observer = make_observer()
    logits = torch.zeros(batch_size, 32)
    state = observer.before_grammar(logits, None)
    assert state is not None
    return observer.after_sample(state, torch.zeros(batch_size, dtype=torch.long))


def make_host_output() -> HiddenStateHostOutput:
    """Returns the host output of one step, copied with plain clones."""
    return make_device_output().copy_to_host(lambda tensor: tensor.to("cpu", copy=True))


def static_buffers() -> list[torch.Tensor]:
    """Returns the CUDA-graph buffers the device outputs must not alias."""
    return [MODEL_HIDDEN_BUFFER]
