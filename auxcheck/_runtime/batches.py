"""The batch size a check runs with: declared, inferred from an output's tensors, or assumed.

The findings the batch size affects (AUX202-204) say how it was known.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from auxcheck._core.plugin_calls import attempt, shape_text
from auxcheck._core.report import Finding
from auxcheck._runtime.walk import iter_tensors, unique_tensors

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "MAX_BATCH_SIZE",
    "OBSERVER_SIZES",
    "BatchSize",
    "batch_noted",
    "infer_batch_sizes",
]

DEFAULT_BATCH_SIZE = 3
"""The batch size assumed when neither a declaration nor the output's tensors tell."""
OBSERVER_SIZES = (DEFAULT_BATCH_SIZE, 4, 2, 3)
"""The batch sizes steps cycle through when the batch is built for the publisher (a factory
taking it, an observer) and none is declared."""
MAX_BATCH_SIZE = 4096
"""The largest batch, declared or inferred from a tensor's shape (SGLang runs fewer requests in
one batch than this)."""
_MAX_CANDIDATES = 3
_NOTED_CODES = frozenset({"AUX202", "AUX203", "AUX204"})
"""The findings the batch size affects: they say how it was known."""


@dataclass(frozen=True, slots=True)
class BatchSize:
    """The batch size each step uses, and how it was known (named in the findings it affects)."""

    sizes: tuple[int, ...]
    how: str = ""

    def at(self, step: int) -> int:
        """Returns the batch size of ``step``."""
        return self.sizes[step % len(self.sizes)]


def infer_batch_sizes(output: Any) -> list[BatchSize]:
    """Returns the likely batch sizes of ``output``, best first, each saying what it came from.

    A size counts for every tensor having it as a dimension (the batch dimension is
    usually shared by all of them), then for tensors leading with it; smaller sizes
    win ties. An output without tensors is assumed to be built for 3 requests.
    """
    score: dict[int, list[Any]] = {}
    for path, tensor in unique_tensors(list(iter_tensors(output))):
        shape = attempt(lambda t=tensor: [int(n) for n in t.shape])
        if shape.error is not None:  # a nested tensor has no single shape
            continue
        dims: list[int] = shape.value
        for n in set(dims):
            if n < 1 or n > MAX_BATCH_SIZE:
                continue
            entry = score.setdefault(n, [0, 0, f"{path} {shape_text(tensor)}"])
            entry[0] += 1
            entry[1] += dims[0] == n
    ranked = sorted(score.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
    if not ranked:
        return [BatchSize((DEFAULT_BATCH_SIZE,), f"assumed a batch of {DEFAULT_BATCH_SIZE} requests (the output holds no tensor to "
                                "tell); declare auxcheck_batch_size (or --batch-size) to set it")]
    return [BatchSize((n, ), f"inferred a batch of {n} requests from {info[2]}; declare "
                             "auxcheck_batch_size (or --batch-size) to set it")
            for n, info in ranked[:_MAX_CANDIDATES]]



def batch_noted(finding: Finding, how: str) -> Finding:
    """Returns ``finding`` with ``how`` (how the batch size was known) opening its detail.

    Only the findings the batch size affects (AUX202-204) carry it; any other finding,
    or an empty ``how``, comes back as it is.
    """
    if not how or finding.code not in _NOTED_CODES:
        return finding
    return replace(finding, detail="\n".join(filter(None, [how, finding.detail])))
