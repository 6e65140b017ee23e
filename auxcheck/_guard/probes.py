"""What the guard hands SGLang during a hooked call, and the published values it compares.

A probe stands in for one leaf output for the length of one SGLang call; a snapshot
keeps the bytes a published tensor covered, to compare with the copy SGLang made (AUX112).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from auxcheck._core.plugin_calls import kind_name
from auxcheck._core.report import Finding

if TYPE_CHECKING:
    from auxcheck._guard.guard import Guard

__all__ = [
    "FORWARDED",
    "SAMPLED",
    "ConsumeProbe",
    "Copied",
    "CopyProbe",
    "InFlight",
    "Publication",
    "Snapshot",
    "changed",
    "probed",
    "snapshot_of",
]


SAMPLED = "ModelRunner.sample"
"""Where a sampling observer's output is published."""
FORWARDED = "ForwardObserver.after_forward"
"""Where a forward observer's output is published (SGLang main after 0.5.23)."""


@dataclass(slots=True)
class Copied:
    """One tensor copied through a probe: source, destination, output class, argument number.

    ``published_at`` names where its output was published.
    """

    source: Any
    dest: Any
    owner: str
    number: int
    published_at: str = SAMPLED


@dataclass(slots=True, eq=False)
class CopyProbe:
    """Stands in for one leaf output during ``copy_to_host``: gives it a checking copy function.

    ``owner`` is the leaf's class's name; ``found`` collects what the guard's checks of its
    copies found.
    """

    guard: Guard
    leaf: Any
    owner: str
    found: list[tuple[Finding, str]] = field(default_factory=list)
    published_at: str = SAMPLED
    copies: list[Copied] = field(default_factory=list)
    calls: int = 0
    checked: dict[int, Any] = field(default_factory=dict)  # kept alive, so no id is reused

    def copy_to_host(self, copy_tensor: Callable[[Any], Any]) -> Any:
        """Calls the leaf's ``copy_to_host`` with a copy function that checks every tensor."""
        self.guard.check_held(self)
        return self.leaf.copy_to_host(self.guard.checking_copy(copy_tensor, self))


@dataclass(slots=True, eq=False)
class ConsumeProbe:
    """Stands in for one host output during ``consume``: fingerprints what it was given.

    ``owner`` is the leaf's class's name; ``found`` collects what its ``consume`` changed.
    """

    guard: Guard
    leaf: Any
    owner: str
    found: list[tuple[Finding, str]] = field(default_factory=list)

    def consume(self, batch: Any, commits: Any) -> Any:
        """Calls the leaf's ``consume`` and reports what it changed of batch and commits.

        A ``consume`` that raises stops SGLang's scheduler: the guard logs it (AUX202, with the
        request aborted while it ran when that is the cause) and lets the error go on.
        """
        witness = self.guard.quietly("consume", _witness, batch, commits)
        try:
            value = self.leaf.consume(batch, commits)
        except Exception as exc:
            from auxcheck._runtime.published import consume_raised

            if witness is not None:
                finding = self.guard.quietly("consume", consume_raised, self.leaf, witness, exc,
                                             None, "in the running server")
                if finding is not None:
                    self.guard.reporter.findings([(finding, self.owner)],
                                                 raised=kind_name(exc))
            raise
        if witness is not None:
            found = self.guard.quietly("consume", witness.findings, self.leaf) or []
            self.found += [(f, self.owner) for f in found]
        return value


def _witness(batch: Any, commits: Any) -> Any:
    from auxcheck._runtime.consume import ConsumeWitness

    return ConsumeWitness.take(batch, commits, full=False)


_P = TypeVar("_P", CopyProbe, ConsumeProbe)


def probed(output: Any, composite: str,
           probe: Callable[[Any], _P]) -> tuple[Any, list[_P]]:
    """Returns what to pass SGLang instead of ``output``, and the probes inside it.

    A leaf becomes its probe; SGLang's composite (a frozen dataclass named ``composite``)
    becomes a copy of itself holding one probe per child, so its own code iterates them.
    """
    children = getattr(output, "outputs", None)
    if (type(output).__name__ == composite and dataclasses.is_dataclass(output)
            and type(children) is tuple):
        probes = [probe(child) for child in children]
        return dataclasses.replace(cast(Any, output), outputs=tuple(probes)), probes
    leaf = probe(output)
    return leaf, [leaf]


@dataclass(slots=True)
class Snapshot:
    """The bytes ``lo:hi`` of a published tensor on ``device``, copied to the host."""

    device: tuple[str, int]
    lo: int
    hi: int
    data: Any


@dataclass(slots=True, eq=False)
class Publication:
    """One output published at ``published_at``, and the snapshots of its tensors."""

    output: Any
    snapshots: list[Snapshot]
    published_at: str = SAMPLED


@dataclass(slots=True, eq=False)
class InFlight:
    """A host output between its copy and its consume: what was published, what was copied.

    ``snapshots`` holds those of every output it was copied from (main copies two).
    """

    snapshots: list[Snapshot]
    copies: list[Copied]


def snapshot_of(tensor: Any) -> Snapshot | None:
    """Returns the bytes ``tensor`` covers, copied to the host now (synchronously)."""
    import torch

    from auxcheck._runtime.byteranges import byte_range

    span = byte_range(tensor)
    if span is None:
        return None
    storage = tensor.untyped_storage()
    raw = torch.empty(0, dtype=torch.uint8, device=tensor.device)
    raw.set_(storage, span.lo - storage.data_ptr(), (span.hi - span.lo,), (1,))
    return Snapshot(span.device, span.lo, span.hi, raw.to("cpu", copy=True))


def changed(copied: Copied, snapshots: Iterable[Snapshot]) -> Finding | None:
    """Returns AUX112 when the host copy differs from the source's bytes at publication."""
    import torch

    from auxcheck._core.plugin_calls import shape_text
    from auxcheck._runtime.byteranges import byte_range
    from auxcheck._runtime.copying import same_bytes

    source = copied.source
    span = byte_range(source)
    if span is None:
        return None
    snap = next((s for s in snapshots if s.device == span.device and s.lo <= span.lo
                 and span.hi <= s.hi), None)
    if snap is None:
        return None
    raw = snap.data[span.lo - snap.lo:span.hi - snap.lo].clone()
    expected = torch.empty(0, dtype=source.dtype)
    expected.set_(raw.untyped_storage(), 0, tuple(source.shape), tuple(source.stride()))
    if same_bytes(copied.dest, expected):
        return None
    return Finding.of(
        "AUX112", f"copy_tensor argument #{copied.number} {shape_text(source)} changed between "
        f"its publication ({copied.published_at}) and the copy SGLang made of it",
        "expected published tensors to keep their values until copied", source)
