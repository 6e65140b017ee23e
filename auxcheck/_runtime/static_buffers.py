"""The CUDA-graph aliasing detector: the static-buffer registry, capture, the overlap findings.

:mod:`auxcheck.aliasing` re-exports the public names; its docstring is the user's
documentation, and this module the implementation behind it.
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, Union

from auxcheck._core.errors import CudaGraphAliasError, InvalidArgument
from auxcheck._core.plugin_calls import kind_name
from auxcheck._core.report import Finding
from auxcheck._core.rules import get_rule
from auxcheck._runtime.byteranges import ByteRange, byte_range, ranges_overlap
from auxcheck._runtime.sharing import (
    DEFAULT_LIMIT,
    Geometry,
    Runs,
    geometry,
    runs_hit,
    runs_of,
    runs_share,
)
from auxcheck._runtime.walk import is_tensor

if TYPE_CHECKING:
    from torch import Tensor


DeviceKey = tuple[str, int]
Segments = Sequence[Mapping[str, Any]]
SegmentSource = Callable[[], Segments]
StaticBuffers = Union["StaticBufferRegistry", Mapping[str, "Tensor"], Iterable["Tensor"], None]
_R = TypeVar("_R")

_TEXT: tuple[type, ...] = (str, bytes)  # iterable, but never a collection of buffers
_BUFFER = "AUX110"
_POOL = "AUX111"


@dataclass(frozen=True, slots=True)
class Registration:
    """One registered static byte range ``[lo, hi)`` on a device, with its name and rule code.

    ``pool`` is the CUDA-graph pool id for pool segments (AUX111), None for buffers.
    """

    name: str
    code: str
    device: DeviceKey
    lo: int
    hi: int
    owner: Any = field(default=None, compare=False, repr=False)
    geometry: Geometry | None = field(default=None, compare=False, repr=False)
    storage_ref: Any = field(default=None, compare=False, repr=False)
    pool: tuple[int, int] | None = None

    @property
    def span(self) -> ByteRange:
        """Returns the registered bytes as a range."""
        return ByteRange(self.device, self.lo, self.hi)

    @property
    def alive(self) -> bool:
        """Returns False once the storage this was registered from has been freed."""
        return self.storage_ref is None or not self.storage_ref.expired()


@dataclass(frozen=True, slots=True)
class Overlap:
    """What a tensor shares with one registration: the buffer and the shared byte offsets.

    ``start`` and ``end`` are offsets into the buffer, of the first shared byte and one
    past the last; ``size`` is the buffer's size in bytes.
    """

    code: str
    name: str
    device: DeviceKey
    start: int
    end: int
    size: int

    def describe(self) -> str:
        """Returns the overlap as text, e.g. ``bytes [0, 16) of 'out' (64 bytes on cuda:0)``."""
        kind = "CUDA-graph pool segment" if self.code == _POOL else "static buffer"
        return (f"bytes [{self.start}, {self.end}) of {kind} {self.name!r} "
                f"({self.size} bytes on {_device_text(self.device)})")


@dataclass(frozen=True, slots=True)
class _DeviceIndex:
    """Merged, disjoint intervals of one device, sorted, each with the registrations inside."""

    los: list[int]
    his: list[int]
    groups: list[tuple[Registration, ...]]

    def candidates(self, lo: int, hi: int) -> list[Registration]:
        """Returns the registrations of every merged interval that meets ``[lo, hi)``."""
        i = bisect_left(self.los, hi) - 1
        if i < 0 or self.his[i] <= lo:  # the common case: a miss, one bisection
            return []
        found: list[Registration] = []
        while i >= 0 and self.his[i] > lo:
            found += self.groups[i]
            i -= 1
        return found


def _build_index(entries: Iterable[Registration]) -> dict[DeviceKey, _DeviceIndex]:
    by_device: dict[DeviceKey, list[Registration]] = {}
    for entry in entries:
        by_device.setdefault(entry.device, []).append(entry)
    return {device: _merge(sorted(group, key=lambda e: e.lo))
            for device, group in by_device.items()}


def _merge(entries: list[Registration]) -> _DeviceIndex:
    los: list[int] = []
    his: list[int] = []
    groups: list[list[Registration]] = []
    for entry in entries:
        if his and entry.lo <= his[-1]:
            his[-1] = max(his[-1], entry.hi)
            groups[-1].append(entry)
        else:
            los.append(entry.lo)
            his.append(entry.hi)
            groups.append([entry])
    return _DeviceIndex(los, his, [tuple(g) for g in groups])


class StaticBufferRegistry:
    """Holds the byte ranges of CUDA-graph static buffers and pool segments, per device.

    Register buffers (:meth:`register`, :meth:`register_buffers`, :meth:`register_range`)
    and graph pools (:meth:`register_pool`), then ask :meth:`find_overlaps` or
    :meth:`check` about each tensor a device output publishes. Lookups cost one
    bisection per device; the index is rebuilt lazily after registrations change.
    Not thread-safe for concurrent registration; lookups read an immutable index.
    """

    __slots__ = ("_entries", "_index")

    def __init__(self) -> None:
        self._entries: list[Registration] = []
        self._index: dict[DeviceKey, _DeviceIndex] | None = None

    def __len__(self) -> int:
        self.prune()
        return len(self._entries)

    def __iter__(self) -> Iterator[Registration]:
        self.prune()
        return iter(tuple(self._entries))

    def __repr__(self) -> str:
        return f"<StaticBufferRegistry: {len(self._entries)} registrations>"

    def register(self, tensor: Tensor, *, name: str, owner: Any = None,
                 whole_storage: bool = True) -> Registration | None:
        """Registers the bytes of ``tensor`` (its whole storage by default) as a static buffer.

        SGLang's graph runners hand out ``[:bs]`` views of max-size buffers, so the
        whole storage is registered unless ``whole_storage=False``. ``owner``
        (default: ``name``) is what :meth:`unregister` removes by. Returns the
        registration, or None when the tensor touches no byte.
        """
        _check_name(name)
        span = _storage_range(tensor) if whole_storage else _tensor_range(tensor, "register")
        if span is None:
            return None
        geo = None if whole_storage else geometry(tensor)
        entry = Registration(name, _BUFFER, span.device, span.lo, span.hi,
                             name if owner is None else owner, geo, _storage_ref(tensor))
        return self._add(entry)

    def register_range(self, device: Any, lo: int, hi: int, *, name: str,
                       owner: Any = None) -> Registration | None:
        """Registers bytes ``[lo, hi)`` of ``device`` as a static buffer until unregistered.

        ``device`` is a ``torch.device``, a string such as ``"cuda:0"`` or a
        ``(type, index)`` pair. Returns the registration, or None when ``hi <= lo``.
        """
        _check_name(name)
        key = _device_key_of(device)
        if hi <= lo:
            return None
        return self._add(Registration(name, _BUFFER, key, int(lo), int(hi),
                                      name if owner is None else owner))

    def register_buffers(self, obj: Any, *, name: str, owner: Any = None,
                         whole_storage: bool = True, max_depth: int = 8) -> int:
        """Registers every tensor reachable from ``obj``'s attributes; returns how many.

        The walk reads dataclass fields, ``__dict__`` and ``__slots__`` entries, dict
        values and list/tuple/set items, ``max_depth`` levels deep; each buffer is
        named after its path, like ``runner.out_cache[2]``.
        """
        from auxcheck._runtime.walk import iter_tensors, unique_tensors

        _check_name(name)
        owner = name if owner is None else owner
        found = unique_tensors(iter_tensors(obj, max_depth=max_depth))
        count = 0
        for path, tensor in found:
            label = name if path == "<self>" else f"{name}{path}"
            if self.register(tensor, name=label, owner=owner, whole_storage=whole_storage):
                count += 1
        return count

    def register_pool(self, pool_id: Any, *, snapshot: SegmentSource | None = None,
                      owner: Any = None, name: str | None = None) -> int:
        """Registers every segment of CUDA-graph memory pool ``pool_id``; returns how many.

        Whole segments are registered, not just live blocks, because a replay writes
        into blocks that were freed during capture. ``snapshot`` returns segments in
        ``torch.cuda.memory_snapshot()`` form (the default reads it); a segment's
        ``device`` is a CUDA device index (or, from a fake source, any device such as
        ``"cpu"``). Registering a pool again refreshes its segments. Overlaps with them
        are AUX111.
        """
        pool = _pool_key(pool_id)
        owner = pool if owner is None else owner
        label = name or f"cuda-graph pool {pool}"
        segments = (snapshot or _cuda_segments)()
        self._remove(lambda e: e.pool == pool and _same_owner(e.owner, owner))
        count = 0
        for segment in segments:
            if _pool_key(segment.get("segment_pool_id", (0, 0))) != pool:
                continue
            lo = int(segment["address"])
            device = _segment_device(segment.get("device", 0))
            self._add(Registration(f"{label} segment {lo:#x}", _POOL, device, lo,
                                   lo + int(segment["total_size"]), owner, pool=pool))
            count += 1
        return count

    def unregister(self, owner: Any) -> int:
        """Removes every registration made with this owner; returns how many were removed."""
        return self._remove(lambda e: _same_owner(e.owner, owner))

    def prune(self) -> int:
        """Drops registrations whose storage has been freed; returns how many were dropped."""
        return self._remove(lambda e: not e.alive)

    def find_overlaps(self, tensor: Tensor, *, exact: bool = False) -> list[Overlap]:
        """Returns every registration ``tensor`` shares bytes with, in address order.

        With ``exact=True`` bytes a strided view skips over do not count; views too
        large to expand fall back to the bounding answer.
        """
        span = _tensor_range(tensor, "find_overlaps")
        if span is None:
            return []
        index = self._current_index().get(span.device)
        if index is None:
            return []
        near = index.candidates(span.lo, span.hi)
        hits = [e for e in near if ranges_overlap(span, e.span)] if near else near
        return self._confirm(tensor, span, hits, exact=exact) if hits else []

    def check(self, tensor: Tensor, *, exact: bool = False) -> None:
        """Raises CudaGraphAliasError (AUX110 or AUX111) when ``tensor`` aliases static memory."""
        overlaps = self.find_overlaps(tensor, exact=exact)
        if overlaps:
            raise CudaGraphAliasError(_error_message(tensor, overlaps), code=overlaps[0].code,
                                      tensor=tensor, overlaps=overlaps)

    def findings(self, tensors: Iterable[Tensor | tuple[str, Tensor]], *,
                 exact: bool = False) -> list[Finding]:
        """Returns one AUX110/AUX111 finding per (tensor, registration) pair that overlaps.

        Items are tensors or ``(path, tensor)`` pairs; a path is named in the message.
        """
        found: list[Finding] = []
        for item in tensors:
            path, tensor = item if isinstance(item, tuple) else ("", item)
            for overlap in self.find_overlaps(tensor, exact=exact):
                found.append(_finding(path, tensor, overlap))
        return found

    def finding(self, tensor: Tensor, *, path: str = "", exact: bool = False) -> Finding | None:
        """Returns one finding naming every registration ``tensor`` overlaps, or None.

        The code is the first overlap's (AUX110 or AUX111); the live guard reports one
        finding per tensor this way, however many buffers it spans.
        """
        overlaps = self.find_overlaps(tensor, exact=exact)
        if not overlaps:
            return None
        where = f"device tensor {path} " if path else ""
        seen = f"{where}{_tensor_text(tensor)} shares {_overlaps_text(overlaps)}"
        return Finding.of(overlaps[0].code, seen, _EXPECTED[overlaps[0].code], tensor)

    def _confirm(self, tensor: Tensor, span: ByteRange, hits: list[Registration], *,
                 exact: bool) -> list[Overlap]:
        runs: list[Runs | None] = []
        found: dict[Overlap, None] = {}
        for entry in sorted(hits, key=lambda e: (e.lo, e.name)):
            if not entry.alive:
                self._index = None  # freed: the next lookup rebuilds without it
                continue
            if exact and not _exactly_shares(tensor, entry, runs):
                continue
            found[_overlap(span, entry)] = None
        if self._index is None:
            self.prune()
        return list(found)

    def _current_index(self) -> dict[DeviceKey, _DeviceIndex]:
        index = self._index
        if index is None:
            self._entries = [e for e in self._entries if e.alive]
            index = self._index = _build_index(self._entries)
        return index

    def _add(self, entry: Registration) -> Registration:
        self._entries.append(entry)
        self._index = None
        return entry

    def _remove(self, drop: Callable[[Registration], bool]) -> int:
        kept = [e for e in self._entries if not drop(e)]
        removed = len(self._entries) - len(kept)
        if removed:
            self._entries = kept
            self._index = None
        return removed


class CaptureHandle:
    """What :func:`capture` yields: the graph, and a way to register its output tensors.

    Every registration made through the handle is owned by it, so :meth:`release`
    removes them all when the graph is dropped.
    """

    __slots__ = ("graph", "name", "registry")

    def __init__(self, registry: StaticBufferRegistry, graph: Any, name: str) -> None:
        self.registry = registry
        self.graph = graph
        self.name = name

    def __repr__(self) -> str:
        return f"<CaptureHandle {self.name!r}>"

    @property
    def pool_id(self) -> tuple[int, int]:
        """Returns the id of the memory pool the graph allocates from."""
        return _pool_key(self.graph.pool())

    def register(self, tensor: Tensor, *, name: str | None = None,
                 whole_storage: bool = True) -> Registration | None:
        """Registers a tensor the graph owns (an output, a static input) as a static buffer."""
        label = f"{self.name} output" if name is None else name
        return self.registry.register(tensor, name=label, owner=self, whole_storage=whole_storage)

    def register_buffers(self, obj: Any, *, name: str) -> int:
        """Registers every tensor reachable from ``obj``; returns how many."""
        return self.registry.register_buffers(obj, name=name, owner=self)

    def refresh(self, *, snapshot: SegmentSource | None = None) -> int:
        """Registers the graph pool's current segments again; returns how many there are.

        Segments keep the pool's own name, so graphs sharing one pool (SGLang captures
        every batch size into one) report a tensor in it once, not once per graph.
        """
        return self.registry.register_pool(self.pool_id, snapshot=snapshot, owner=self)

    def release(self) -> int:
        """Unregisters everything this handle registered; returns how many registrations."""
        return self.registry.unregister(self)


CaptureContext = Callable[..., AbstractContextManager[Any]]


@contextmanager
def capture(registry: StaticBufferRegistry, graph: Any = None, *, pool: Any = None,
            stream: Any = None, name: str = "cuda graph",
            snapshot: SegmentSource | None = None,
            capture_context: CaptureContext | None = None) -> Iterator[CaptureHandle]:
    """Captures a CUDA graph like ``torch.cuda.graph`` and registers its memory afterwards.

    Yields a :class:`CaptureHandle`; register the graph's outputs through it. When the
    capture ends without error, every segment of the graph's pool is registered
    (AUX111), which covers the tensors created during capture. ``graph`` defaults
    to a new ``torch.cuda.CUDAGraph``; ``capture_context(graph, pool=, stream=)``
    replaces ``torch.cuda.graph`` and ``snapshot`` the memory snapshot (for tests).
    """
    _check_name(name)
    if graph is None or capture_context is None:
        import torch

        graph = torch.cuda.CUDAGraph() if graph is None else graph
        capture_context = capture_context or torch.cuda.graph
    handle = CaptureHandle(registry, graph, name)
    with capture_context(graph, pool=pool, stream=stream):
        yield handle
    handle.refresh(snapshot=snapshot)


def guard_copy(copy_tensor: Callable[[Tensor], _R], registry: StaticBuffers, *,
               exact: bool = False) -> Callable[[Tensor], _R]:
    """Returns a drop-in ``copy_tensor`` that checks each tensor before copying it.

    Wrap the scheduler's copy function in a debug run and every ``copy_to_host``
    raises CudaGraphAliasError on the first tensor that aliases static memory.
    """
    check = as_registry(registry).check

    @functools.wraps(copy_tensor)
    def guarded(tensor: Tensor) -> _R:
        check(tensor, exact=exact)
        return copy_tensor(tensor)

    return guarded


def static_buffer_findings(tensors: Iterable[Tensor | tuple[str, Tensor]],
                           static_buffers: StaticBuffers, *,
                           exact: bool = False) -> list[Finding]:
    """Returns AUX110/AUX111 findings, one per tensor and static buffer they share bytes with.

    ``tensors`` holds tensors or ``(path, tensor)`` pairs (paths appear in messages).
    ``static_buffers`` is a registry, a mapping of names to tensors, or tensors
    (registered whole-storage, named ``static_buffers[i]``); None means none.
    """
    if static_buffers is None:
        return []
    return as_registry(static_buffers).findings(tensors, exact=exact)


def as_registry(static_buffers: StaticBuffers) -> StaticBufferRegistry:
    """Returns ``static_buffers`` as a registry: the one builder every check uses.

    Accepts a registry (returned as is), a mapping of names to tensors, an iterable of
    tensors (named ``static_buffers[i]``), one tensor, or None (no buffers). Each
    tensor is one buffer, registered whole-storage, so a ``[:bs]`` view of a max-size
    buffer counts. Raises InvalidArgument naming an entry that is not a tensor.
    """
    if isinstance(static_buffers, StaticBufferRegistry):
        return static_buffers
    registry = StaticBufferRegistry()
    if static_buffers is None:
        return registry
    items: Iterable[tuple[Any, Any]]
    if is_tensor(static_buffers):  # one tensor, not a collection of its rows
        items = [("static_buffers[0]", static_buffers)]
    elif isinstance(static_buffers, Mapping):
        items = list(static_buffers.items())
    elif isinstance(static_buffers, Iterable) and not isinstance(static_buffers, _TEXT):
        items = [(f"static_buffers[{i}]", t) for i, t in enumerate(static_buffers)]
    else:
        raise InvalidArgument(
            f"static_buffers is a {kind_name(static_buffers)}; expected a "
            "StaticBufferRegistry, a mapping of names to tensors, tensors, or None"
        )
    for label, tensor in items:
        if not is_tensor(tensor):
            raise InvalidArgument(
                f"{label} is a {kind_name(tensor)}, not a tensor; pass the tensors a "
                "CUDA graph owns (e.g. its static input/output buffers)"
            )
        registry.register(tensor, name=str(label))
    return registry


def tensors_overlap(a: Tensor, b: Tensor, *, exact: bool = False) -> bool:
    """Returns True when ``a`` and ``b`` share at least one byte on the same device."""
    ra, rb = _tensor_range(a, "tensors_overlap"), _tensor_range(b, "tensors_overlap")
    if not ranges_overlap(ra, rb):
        return False
    if not exact:
        return True
    runs_a, runs_b = runs_of(geometry(a)), runs_of(geometry(b))
    return runs_a is None or runs_b is None or runs_share(runs_a, runs_b)


def _exactly_shares(tensor: Tensor, entry: Registration, cache: list[Runs | None]) -> bool:
    if not cache:
        cache.append(runs_of(geometry(tensor), limit=DEFAULT_LIMIT))
    runs = cache[0]
    if runs is None:
        return True  # too large to expand: the bounding answer stands
    if entry.geometry is None:
        return runs_hit(runs, entry.lo, entry.hi)
    other = runs_of(entry.geometry)
    return other is None or runs_share(runs, other)


def _overlap(span: ByteRange, entry: Registration) -> Overlap:
    start, end = max(span.lo, entry.lo), min(span.hi, entry.hi)
    return Overlap(entry.code, entry.name, entry.device, start - entry.lo, end - entry.lo,
                   entry.hi - entry.lo)


def _tensor_range(tensor: Any, where: str) -> ByteRange | None:
    try:
        return byte_range(tensor)
    except (AttributeError, TypeError):
        raise InvalidArgument(
            f"{where}() expected a torch.Tensor, got {type(tensor).__qualname__}; "
            f"pass the tensor itself (walk containers with register_buffers)"
        ) from None
    except RuntimeError as exc:  # sparse tensors have no strides, fake ones no data
        raise InvalidArgument(
            f"{where}() cannot read the bytes of {_tensor_text(tensor)} ({exc}); expected "
            f"a dense strided tensor with storage; pass a dense tensor (e.g. .to_dense())"
        ) from None


def _storage_range(tensor: Any) -> ByteRange | None:
    span = _tensor_range(tensor, "register")
    storage = tensor.untyped_storage()
    lo, size = int(storage.data_ptr()), int(storage.nbytes())
    if size == 0:
        return None
    device = span.device if span is not None else _device_key_of(tensor.device)
    return ByteRange(device, lo, lo + size)


def _device_key_of(device: Any) -> DeviceKey:
    if isinstance(device, tuple) and len(device) == 2:
        return (str(device[0]), int(device[1]))
    text = str(device)
    kind, _, index = text.partition(":")
    if index.isdigit():
        return (kind, int(index))
    if kind in ("cpu", "meta"):
        return (kind, -1)
    raise InvalidArgument(
        f"device {device!r} has no index; expected a device such as 'cuda:0', 'cpu' "
        f"or a ('cuda', 0) pair, since a range without index cannot be matched"
    )


def _segment_device(device: Any) -> DeviceKey:
    return ("cuda", device) if isinstance(device, int) else _device_key_of(device)


def _pool_key(pool_id: Any) -> tuple[int, int]:
    try:
        first, second = pool_id
        return (int(first), int(second))
    except (TypeError, ValueError):
        raise InvalidArgument(
            f"pool id {pool_id!r} is not a pair of ints; pass graph.pool() or "
            f"torch.cuda.graph_pool_handle()"
        ) from None


def _same_owner(a: Any, b: Any) -> bool:
    # Identity for objects (runners, handles); equality only for plain keys, since
    # `==` on arbitrary objects (tensors) is not a truth value.
    return a is b or (type(a) is type(b) and isinstance(a, (str, int, tuple)) and a == b)


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"name must be a non-empty string, got {name!r}; "
                              f"name the buffer so findings can say which one it is")


def _cuda_segments() -> Segments:
    import torch

    read: Callable[[], Segments] = torch.cuda.memory_snapshot
    return read()


def _storage_ref(tensor: Any) -> Any:
    # A weak reference to the C++ storage itself: it expires exactly when the bytes
    # are freed, whichever Python wrappers come and go.
    from torch.multiprocessing.reductions import StorageWeakRef

    make: Callable[[Any], Any] = StorageWeakRef
    return make(tensor.untyped_storage())


def _device_text(device: DeviceKey) -> str:
    kind, index = device
    return kind if index < 0 else f"{kind}:{index}"


def _tensor_text(tensor: Any) -> str:
    # Never repr() a device tensor: printing its values would synchronise the device.
    shape = "x".join(str(n) for n in tensor.shape) or "scalar"
    return f"tensor[{shape}, {str(tensor.dtype).replace('torch.', '')}]"


_EXPECTED = {
    _BUFFER: "expected device output tensors not to share bytes with CUDA-graph static "
             "buffers, which the next replay can overwrite before the scheduler's "
             "asynchronous copy completes",
    _POOL: "expected device output tensors not to lie in a CUDA-graph private memory pool, "
           "which the next replay can overwrite before the scheduler's asynchronous copy "
           "completes",
}


def _finding(path: str, tensor: Any, overlap: Overlap) -> Finding:
    where = f"device tensor {path} " if path else ""
    seen = f"{where}{_tensor_text(tensor)} shares {overlap.describe()}"
    return Finding.of(overlap.code, seen, _EXPECTED[overlap.code], tensor)


def _overlaps_text(overlaps: list[Overlap]) -> str:
    shown = ", ".join(o.describe() for o in overlaps[:3])
    return shown + (f" and {len(overlaps) - 3} more" if len(overlaps) > 3 else "")


def _error_message(tensor: Any, overlaps: list[Overlap]) -> str:
    code = overlaps[0].code
    return (f"{code} {_tensor_text(tensor)} shares {_overlaps_text(overlaps)}; "
            f"{_EXPECTED[code]}; fix: {get_rule(code).hint}")
