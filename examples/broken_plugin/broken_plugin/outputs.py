"""Device and host outputs that each break the auxiliary-output contract in one way.

Every class is its own zero-argument factory; ``PLANTED_BUGS`` maps each to the
rule code auxcheck must report for it (``examples/demo_check.sh`` checks exactly that).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

try:
    from sglang.srt.managers.auxiliary_output import CommittedTokens
except ImportError:
    from auxcheck.protocols import CommittedTokens

Copy = Callable[[torch.Tensor], torch.Tensor]
Commits = Sequence[CommittedTokens | None]

GRAPH_HIDDEN_BUFFER = torch.zeros(8, 16)
"""Stands in for a CUDA-graph static buffer that the next replay overwrites."""


def static_buffers() -> list[torch.Tensor]:
    """Returns the static buffers of the stand-in CUDA graph (for ``--static-buffers``)."""
    return [GRAPH_HIDDEN_BUFFER]


class GoodHost:
    """A correct host output: records each committed request's row."""

    def __init__(self, rows: torch.Tensor) -> None:
        self.rows = rows

    def consume(self, batch: Any, commits: Commits) -> None:
        """Appends the row of every committed request."""
        for index, (req, commit) in enumerate(zip(batch.reqs, commits)):
            if commit is not None and index < len(self.rows):
                req.customized_info = {"row": [self.rows[index].tolist()]}


class _Rows:
    def __init__(self) -> None:
        self.rows = torch.randn(4, 16)


class WrongArityOutput(_Rows):
    """AUX102: copy_to_host takes no copy function, so SGLang's call fails."""

    def copy_to_host(self) -> GoodHost:
        return GoodHost(self.rows.cpu())


class DoubleCopyOutput(_Rows):
    """AUX104: copies the rows, then a view of the same rows, within one copy."""

    def copy_to_host(self, copy_tensor: Copy) -> GoodHost:
        rows = copy_tensor(self.rows)
        copy_tensor(self.rows[:, :4])  # the first columns again, "for convenience"
        return GoodHost(rows)


class KeepsDeviceTensorOutput(_Rows):
    """AUX105: the host output keeps the device tensor instead of the copy."""

    def copy_to_host(self, copy_tensor: Copy) -> GoodHost:
        copy_tensor(self.rows)
        return GoodHost(self.rows)


class StaticBufferViewOutput:
    """AUX110: publishes a view of the graph's static buffer instead of a clone."""

    def __init__(self) -> None:
        self.rows = GRAPH_HIDDEN_BUFFER[:4]

    def copy_to_host(self, copy_tensor: Copy) -> GoodHost:
        return GoodHost(copy_tensor(self.rows))


class _HostWith(_Rows):
    host_class: type

    def copy_to_host(self, copy_tensor: Copy) -> Any:
        return self.host_class(copy_tensor(self.rows))


class CommitsMutatingHost(GoodHost):
    """AUX203: drops the None entries from commits in place (siblings then see a shorter list)."""

    def consume(self, batch: Any, commits: Commits) -> None:
        assert isinstance(commits, list)
        commits[:] = [c for c in commits if c is not None]


class MutatesCommitsOutput(_HostWith):
    """AUX203: its host output mutates the commits it is given."""

    host_class = CommitsMutatingHost


class ValueReturningHost(GoodHost):
    """AUX204: returns the rows it recorded."""

    def consume(self, batch: Any, commits: Commits) -> Any:  # type: ignore[override]
        super().consume(batch, commits)
        return {"recorded": len(batch.reqs)}


class ReturnsValueOutput(_HostWith):
    """AUX204: its host output's consume returns a value."""

    host_class = ValueReturningHost


class NoneUnsafeHost(GoodHost):
    """AUX202: reads commit.output_index without checking for None."""

    def consume(self, batch: Any, commits: Commits) -> None:
        for req, commit in zip(batch.reqs, commits):
            req.customized_info = {"start": [commit.output_index]}  # type: ignore[union-attr]


class CrashesOnNoneOutput(_HostWith):
    """AUX202: its host output crashes on None commits."""

    host_class = NoneUnsafeHost


class EmptyPPOutput(_Rows):
    """AUX402: claims PP support but sends no tensors."""

    def copy_to_host(self, copy_tensor: Copy) -> GoodHost:
        return GoodHost(copy_tensor(self.rows))

    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return {}


STEP_BUFFER = torch.zeros(8, 16)
"""A buffer the next class writes every step: its published views change before they are copied."""


class ReusesBufferOutput:
    """AUX112: writes each step's rows into one module-level buffer and publishes a view of it."""

    steps = 0

    def __init__(self) -> None:
        ReusesBufferOutput.steps += 1
        STEP_BUFFER[:4].fill_(float(ReusesBufferOutput.steps))
        self.rows = STEP_BUFFER[:4]

    def copy_to_host(self, copy_tensor: Copy) -> GoodHost:
        return GoodHost(copy_tensor(self.rows))


class SortingHost(GoodHost):
    """AUX203: sorts the requests by rid in place (every sibling then sees them reordered)."""

    def consume(self, batch: Any, commits: Commits) -> None:
        batch.reqs.sort(key=lambda req: req.rid)
        super().consume(batch, commits)


class SortsRequestsOutput(_HostWith):
    """AUX203: its host output reorders batch.reqs in place."""

    host_class = SortingHost


class ReusingObserver:
    """AUX112: a sampling observer that publishes views of one buffer it rewrites every step."""

    def __init__(self) -> None:
        self.buffer = torch.zeros(16, dtype=torch.long)

    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> int:
        return int(logits.shape[0])

    def after_sample(self, rows: int, token_ids: torch.Tensor) -> Any:
        self.buffer[:rows].copy_(token_ids)
        return TokenOutput(self.buffer[:rows])


class TokenOutput:
    """The reusing observer's output: a view of its buffer (the bug), copied once."""

    def __init__(self, tokens: torch.Tensor) -> None:
        self.tokens = tokens

    def copy_to_host(self, copy_tensor: Copy) -> GoodHost:
        return GoodHost(copy_tensor(self.tokens))


PLANTED_OBSERVER_BUGS: dict[str, str] = {"ReusingObserver": "AUX112"}
"""Observer class name -> the rule code auxcheck must report for it."""


PLANTED_BUGS: dict[str, str] = {
    "WrongArityOutput": "AUX102",
    "DoubleCopyOutput": "AUX104",
    "KeepsDeviceTensorOutput": "AUX105",
    "StaticBufferViewOutput": "AUX110",
    "MutatesCommitsOutput": "AUX203",
    "ReturnsValueOutput": "AUX204",
    "CrashesOnNoneOutput": "AUX202",
    "EmptyPPOutput": "AUX402",
    "ReusesBufferOutput": "AUX112",
    "SortsRequestsOutput": "AUX203",
}
"""Class name -> the rule code auxcheck must report for it."""
