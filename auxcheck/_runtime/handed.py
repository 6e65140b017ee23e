"""What SGLang hands an observer's hook, held before the call and compared after it (AUX113).

SGLang passes those very tensors on: ``before_grammar``'s logits to the grammar mask and
the sampler (``apply_logits_bias_with_observer`` in ``sampling/sampling_batch_info.py``,
``logits.div_`` in ``layers/sampler.py``), ``after_sample``'s token ids to the commit,
``after_forward``'s logits output and forward batch to sampling. A hook that writes to
one of them changes what every request samples, silently. Only the hook's own writes
count: the snapshot is taken right before the call and compared right after it, before
SGLang's own in-place work. torch is imported by the functions that need it, never at
import time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from auxcheck._core.plugin_calls import passes_through, shape_text
from auxcheck._core.report import Finding
from auxcheck._runtime.copying import covered_bytes, covered_view, raw_bytes
from auxcheck._runtime.walk import iter_tensors, unique_tensors

__all__ = ["HeldTensor", "hold", "sampler_failed", "written"]


@dataclass(frozen=True, slots=True)
class HeldTensor:
    """One tensor handed to a hook, named as SGLang passes it, with what it held then."""

    name: str
    tensor: Any
    layout: tuple[Any, ...]
    """Its shape and dtype."""
    values: Any
    """A host copy of the elements it covered (None: no data to compare)."""


def hold(arguments: Iterable[tuple[str, Any]]) -> list[HeldTensor]:
    """Returns a snapshot of every tensor reachable from the named ``arguments``, each once.

    A tensor is named by the argument and the path to it: ``logits``,
    ``logits_output.hidden_states``, ``forward_batch.sampling_info.temperatures``.
    """
    refs = unique_tensors([(_joined(name, path), tensor) for name, value in arguments
                           for path, tensor in iter_tensors(value)])
    held = []
    for name, tensor in refs:
        try:
            held.append(HeldTensor(name, tensor, _layout(tensor), covered_bytes(tensor)))
        except BaseException as exc:  # a tensor whose layout cannot be read: not compared
            if passes_through(exc):
                raise
    return held


def _joined(name: str, path: str) -> str:
    return name if path == "<self>" else name + path


def _layout(tensor: Any) -> tuple[Any, ...]:
    return (*tensor.shape, tensor.dtype)


def _layout_text(layout: tuple[Any, ...]) -> str:
    """Returns ``[4, 16] float32``, as :func:`shape_text` writes a tensor's."""
    *sizes, dtype = layout
    return f"[{', '.join(str(int(n)) for n in sizes)}] {str(dtype).removeprefix('torch.')}"


def written(held: Sequence[HeldTensor], call: str, passes_on: str,
            observer: Any) -> list[Finding]:
    """Returns AUX113 for each held tensor the hook changed: its values, shape or dtype.

    ``call`` names the call (``before_grammar at step 2``); ``passes_on`` says where SGLang
    sends the tensors next. Values compare bitwise, so a NaN left alone is unchanged; a
    tensor that cannot be compared is taken as unchanged (no finding on a guess).
    """
    findings = []
    for item in held:
        try:
            change = _change(item)
        except BaseException as exc:  # the checker's own tensors; one that will not compare
            if passes_through(exc):
                raise
            change = None
        if change is not None:
            findings.append(Finding.of(
                "AUX113", f"{call} {change}",
                f"expected the observer to leave what SGLang handed it as it was: SGLang "
                f"passes the same tensor on ({passes_on})", observer))
    return findings


def _change(item: HeldTensor) -> str | None:
    """Returns how the hook changed ``item`` (``wrote to `logits` ...``), or None."""
    if _layout(item.tensor) != item.layout:
        return (f"changed `{item.name}` from {_layout_text(item.layout)} to "
                f"{shape_text(item.tensor)} in place")
    if item.values is None:
        return None
    count = _changed_values(covered_view(item.tensor), item.values)
    if not count:
        return None
    return (f"wrote to `{item.name}` {shape_text(item.tensor)}: {count} of "
            f"{item.values.numel()} value{'s' if item.values.numel() != 1 else ''} changed")


def _changed_values(now: Any, before: Any) -> int:
    """Returns how many elements of two flat tensors differ in their bytes (NaN == NaN)."""
    if before.numel() == 0:
        return 0
    left, right = raw_bytes(now.to(before.device)), raw_bytes(before)
    width = left.numel() // before.numel()
    return int((left != right).view(-1, width).any(dim=1).sum())


def sampler_failed(finding: Finding, error: str, detail: str | None) -> Finding:
    """Returns ``finding`` saying the sampler then could not run (``error``), with its traceback."""
    seen = f"{finding.summary}, and the sampler could not run after it: {error}"
    return replace(finding, message=f"{seen}; {finding.expected}", seen=seen, detail=detail)
