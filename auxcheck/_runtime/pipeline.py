"""Pipeline-parallel transport (AUX401-403): to_pp_tensors, from_pp_tensors and the round trip."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from auxcheck._core.plugin_calls import (
    MISSING,
    Outcome,
    announce,
    attempt,
    kind_name,
    lookup,
    shape_text,
)
from auxcheck._core.report import Finding, describe
from auxcheck._runtime.methods import method_findings
from auxcheck._runtime.walk import TensorRef, is_tensor, iter_tensors

__all__ = ["pp_findings"]


def pp_findings(obj: Any, pp_observer: Any, *, crosses: bool = False) -> list[Finding]:
    """Returns AUX401-403 findings for PP transport of ``obj``.

    PP is in play when ``obj`` has ``to_pp_tensors``, a ``pp_observer`` receives it, or
    ``crosses`` declares that it crosses pipeline-parallel stages; otherwise there is none.
    """
    to_pp = lookup(obj, "to_pp_tensors")
    absent = to_pp.error is not None or to_pp.value is MISSING
    if absent and pp_observer is None and not crosses:
        return []
    if absent or not callable(to_pp.value):
        return [Finding.of("AUX401", "pipeline-parallel transport needs `to_pp_tensors`, "
                           f"but it is {_absence(to_pp)}",
                           "expected to_pp_tensors() -> Mapping[str, Tensor]", obj,
                           detail=to_pp.detail)]
    announce("AUX402", "`to_pp_tensors` of {}", obj)
    outcome = attempt(to_pp.value)
    if outcome.error is not None:
        return [Finding.of("AUX402", f"to_pp_tensors raised {kind_name(outcome.error)}",
                           "expected a mapping of names to tensors", obj, detail=outcome.detail)]
    tensors, findings = _pp_mapping_findings(obj, outcome.value)
    if findings or pp_observer is None:
        return findings
    return _round_trip_findings(obj, _plain_host(obj), tensors, pp_observer)


def _plain_host(obj: Any) -> Any:
    """Returns ``obj``'s host output copied with plain clones, or None when it cannot be had."""
    copy = lookup(obj, "copy_to_host")
    if not callable(copy.value):
        return None
    announce("AUX403", "`copy_to_host` of {} (the values before transport)", obj)
    return attempt(copy.value, _Recorder()).value


def _absence(found: Outcome) -> str:
    if found.error is not None:
        return f"unreadable ({kind_name(found.error)})"
    return "missing" if found.value is MISSING else f"a {kind_name(found.value)}"


_MAX_PP_TENSORS = 4096
"""The most entries a ``to_pp_tensors`` mapping is read for (SGLang sends a few)."""


def _pp_mapping_findings(obj: Any, tensors: Any) -> tuple[dict[str, Any], list[Finding]]:
    """Returns the PP tensors as a plain dict, and AUX402 for an empty mapping, a bad name or value.

    The mapping is read once, through guarded calls (its ``items()``, ``len`` and truth
    are plugin code); names become plain ``str`` so later dict work runs no plugin code.
    """
    expected = "expected a non-empty mapping of non-empty string names to tensors"
    if not attempt(issubclass, type(tensors), Mapping).value:
        return {}, [Finding.of("AUX402", f"to_pp_tensors returned a {type(tensors).__name__}",
                               expected, obj)]
    announce("AUX402", "reading the mapping `to_pp_tensors` of {} returned", obj)
    items = attempt(lambda: list(itertools.islice(tensors.items(), _MAX_PP_TENSORS + 1)))
    if items.error is not None:
        return {}, [Finding.of("AUX402", "items() of the mapping to_pp_tensors returned raised "
                               f"{type(items.error).__name__}", expected, obj,
                               detail=items.detail)]
    if len(items.value) > _MAX_PP_TENSORS:
        return {}, [Finding.of("AUX402", "items() of the mapping to_pp_tensors returned gave "
                               f"more than {_MAX_PP_TENSORS} entries (an endless iterator?)",
                               expected, obj)]
    if not all(type(i) is tuple and len(i) == 2 for i in items.value):
        return {}, [Finding.of("AUX402", "items() of the mapping to_pp_tensors returned gave "
                               "something other than (name, tensor) pairs", expected, obj)]
    if not items.value:
        return {}, [Finding.of("AUX402", "to_pp_tensors returned an empty mapping", expected,
                               obj)]
    findings, plain = [], {}
    for name, value in items.value:
        if not issubclass(type(name), str) or not str.__len__(name):
            findings.append(Finding.of("AUX402", f"to_pp_tensors name {describe(name)} is "
                                       "not a non-empty string", expected, obj))
        if not is_tensor(value):
            findings.append(Finding.of("AUX402", f"to_pp_tensors value {describe(name)} is a "
                                       f"{type(value).__name__}", expected, obj))
        if not findings:
            plain[str.__str__(name)] = value
    return plain, findings


def _round_trip_findings(obj: Any, host: Any, tensors: Mapping[str, Any],
                         observer: Any) -> list[Finding]:
    """Returns AUX403 findings for ``observer.from_pp_tensors`` of ``obj``'s PP tensors."""
    from_pp, findings = method_findings(observer, "from_pp_tensors", ["tensors"],
                                        missing="AUX403", arity="AUX403")
    if from_pp is None:
        return findings
    # The receiving stage gets fresh tensors, never the sender's storage.
    fresh = attempt(lambda: {name: _fresh(t) for name, t in tensors.items()})
    if fresh.error is not None:
        return [Finding.of("AUX402", f"a to_pp_tensors tensor cannot be copied: "
                           f"{type(fresh.error).__name__}", "expected plain tensors SGLang "
                           "can send to the next stage", obj, detail=fresh.detail)]
    announce("AUX403", "`from_pp_tensors` of {}", observer)
    outcome = attempt(from_pp, fresh.value)
    if outcome.error is not None or outcome.value is None:
        seen = "returned None" if outcome.error is None else \
            f"raised {kind_name(outcome.error)}"
        return [Finding.of("AUX403", f"from_pp_tensors {seen}",
                           "expected an equivalent device output", observer,
                           detail=outcome.detail)]
    return _host_value_findings(obj, host, outcome.value)


def _host_value_findings(obj: Any, host: Any, rebuilt: Any) -> list[Finding]:
    """Returns AUX403 when the rebuilt output copies to host values unlike the original's."""
    expected = "expected the rebuilt output to copy to the same host values"
    announce("AUX403", "`copy_to_host` of {} (rebuilt by from_pp_tensors)", rebuilt)
    copy = lookup(rebuilt, "copy_to_host")
    outcome = attempt(copy.value, _Recorder()) if callable(copy.value) else \
        Outcome(error=copy.error or TypeError("the rebuilt output has no copy_to_host"))
    if outcome.error is not None:
        return [Finding.of("AUX403", f"copying the rebuilt output raised "
                           f"{kind_name(outcome.error)}", expected, rebuilt,
                           detail=outcome.detail)]
    if host is None:
        return []
    mismatch = _tensor_mismatch(list(iter_tensors(host)), list(iter_tensors(outcome.value)))
    if mismatch is None:
        return []
    return [Finding.of("AUX403", f"the rebuilt output's host values differ: {mismatch}",
                       expected, rebuilt)]


def _fresh(tensor: Any) -> Any:
    """Returns a copy of a PP tensor on its device, as the next stage receives it."""
    from auxcheck._runtime.copying import covered_view

    if tensor.layout != _strided() or tensor.is_nested:
        return tensor.detach().clone()
    view = covered_view(tensor)  # an expanded view is sent as the bytes under it
    if view.numel() == tensor.numel():
        return tensor.detach().clone()
    return view.clone().as_strided(tuple(tensor.shape), tuple(tensor.stride()), 0)


def _strided() -> Any:
    import torch

    return torch.strided


def _tensor_mismatch(left: Sequence[TensorRef], right: Sequence[TensorRef]) -> str | None:
    """Returns how two host outputs' tensors differ, or None when all hold the same values.

    Sparse tensors compare by their nonzero entries (never densified: a [2**30, 2**30]
    tensor with one entry is compared as one entry), nested ones component by component;
    tensors without data (meta, fake) by shape and dtype only.
    """
    if len(left) != len(right):
        return f"{len(left)} tensors before transport, {len(right)} after"
    for (path, a), (_, b) in zip(left, right):
        same = attempt(_same_values, a, b)
        if same.error is not None or same.value is False:
            how = "" if same.error is None else f" (comparing raised {type(same.error).__name__})"
            return f"{path} {shape_text(a)} became {shape_text(b)} after transport{how}"
    return None


def _same_values(a: Any, b: Any) -> bool:
    import torch

    if a.is_nested or b.is_nested:
        parts_a, parts_b = a.unbind(), b.unbind()
        return len(parts_a) == len(parts_b) and all(
            _same_values(x, y) for x, y in zip(parts_a, parts_b))
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
        return False
    from auxcheck._runtime.walk import has_no_data

    if has_no_data(a) or has_no_data(b):
        return True  # meta and fake tensors hold no values to compare
    if a.layout != torch.strided and b.layout != torch.strided:
        return all(bool(torch.equal(x, y.to(x.device)))
                   for x, y in zip(_nonzero_entries(a), _nonzero_entries(b)))
    # One side is dense: its memory is already spent, densifying the other costs as much.
    dense = [t.to_dense() if t.layout != torch.strided else t for t in (a, b)]
    return bool(torch.equal(dense[0], dense[1].to(dense[0].device)))


def _nonzero_entries(tensor: Any) -> tuple[Any, Any]:
    """Returns a sparse tensor's indices and values, coalesced, explicit zeros left out
    (so two layouts of the same values compare equal), in memory of the order of its entries."""
    coo = (tensor if tensor.layout == _sparse_coo() else tensor.to_sparse()).coalesce()
    indices, values = coo.indices(), coo.values()
    nonzero = values.ne(0)
    keep = nonzero.flatten(1).any(dim=1) if nonzero.dim() > 1 else nonzero
    return indices[:, keep], values[keep]


def _sparse_coo() -> Any:
    import torch

    return torch.sparse_coo


@dataclass(slots=True, eq=False)
class _Recorder:
    """A ``copy_tensor`` that returns host clones (for the PP round trip's comparison)."""

    seen: list[Any] = field(default_factory=list)

    def __call__(self, tensor: Any) -> Any:
        from auxcheck._runtime.copying import host_copy

        self.seen.append(tensor)
        if not is_tensor(tensor):
            raise TypeError(f"copy_tensor expects a tensor, got {kind_name(tensor)}")
        return host_copy(tensor)
