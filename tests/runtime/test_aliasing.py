"""Tests for auxcheck.aliasing: the CUDA-graph aliasing detector."""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import runpy
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from helpers.paths import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from auxcheck import aliasing
from auxcheck._runtime import static_buffers
from auxcheck._runtime.byteranges import device_key
from auxcheck._runtime.sharing import geometry, runs_of
from auxcheck.aliasing import (
    Overlap,
    StaticBufferRegistry,
    capture,
    guard_copy,
    static_buffer_findings,
    tensors_overlap,
)
from auxcheck.errors import CudaGraphAliasError, InvalidArgument
from auxcheck.rules import get_rule

NO_CUDA = "needs a CUDA device: captures a real torch.cuda graph and reads its memory pool"


def oracle_bytes(tensor: torch.Tensor) -> set[int]:
    """Returns every byte address the elements of ``tensor`` touch, by brute force."""
    ptr, size = tensor.data_ptr(), tensor.element_size()
    found: set[int] = set()
    for index in itertools.product(*(range(n) for n in tensor.shape)):
        start = ptr + size * sum(i * s for i, s in zip(index, tensor.stride()))
        found.update(range(start, start + size))
    return found


def oracle(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Returns True when ``a`` and ``b`` share a byte on one device, by brute force."""
    return device_key(a) == device_key(b) and bool(oracle_bytes(a) & oracle_bytes(b))


def _buf() -> torch.Tensor:
    return torch.arange(16, dtype=torch.float32)


def _complex() -> torch.Tensor:
    return torch.zeros(8, dtype=torch.complex64)


def _frombuffer_pair(*, overlapping: bool) -> tuple[torch.Tensor, torch.Tensor]:
    raw = bytearray(64)  # each tensor keeps the bytearray alive
    if overlapping:
        return (torch.frombuffer(raw, dtype=torch.float32),
                torch.frombuffer(raw, dtype=torch.uint8, count=4, offset=8))
    return (torch.frombuffer(raw, dtype=torch.float32, count=2),
            torch.frombuffer(raw, dtype=torch.uint8, offset=8))


def _strided_pair(view_a: Callable[[torch.Tensor], torch.Tensor],
                  view_b: Callable[[torch.Tensor], torch.Tensor],
                  base: Callable[[], torch.Tensor] = _buf) -> Callable[[], Any]:
    def build() -> tuple[torch.Tensor, torch.Tensor]:
        storage = base()
        return view_a(storage), view_b(storage)
    return build


_m = lambda b: b.view(4, 4)
_real = torch.view_as_real

# (id, build -> (a, b), bounding rule says overlap, exact says overlap)
CASES = [
    ("identity", _strided_pair(lambda b: b, lambda b: b), True, True),
    ("slice with offset", _strided_pair(lambda b: b[1:], lambda b: b), True, True),
    ("slices sharing one element", _strided_pair(lambda b: b[2:6], lambda b: b[5:9]), True, True),
    ("touching but disjoint slices", _strided_pair(lambda b: b[:4], lambda b: b[4:]), False,
     False),
    ("transpose against a row", _strided_pair(lambda b: _m(b).t(), lambda b: _m(b)[3]), True,
     True),
    ("as_strided hitting an element",
     _strided_pair(lambda b: b.as_strided((2,), (3,), 5), lambda b: b[8:9]), True, True),
    ("as_strided skipping over a slice",
     _strided_pair(lambda b: b.as_strided((2,), (3,), 5), lambda b: b[6:8]), True, False),
    ("byte view of one element",
     _strided_pair(lambda b: b.view(torch.uint8)[5:6], lambda b: b[1]), True, True),
    ("byte view of the neighbouring element",
     _strided_pair(lambda b: b.view(torch.uint8)[4:8], lambda b: b[0]), False, False),
    ("view_as_real imaginary parts against one complex",
     _strided_pair(lambda c: _real(c)[:, 1], lambda c: c[3], _complex), True, True),
    ("view_as_real real against imaginary parts",
     _strided_pair(lambda c: _real(c)[:, 0], lambda c: _real(c)[:, 1], _complex), True, False),
    ("expand of the same element",
     _strided_pair(lambda b: b[2:3].expand(5), lambda b: b[2]), True, True),
    ("expand against the next element",
     _strided_pair(lambda b: b[2:3].expand(5), lambda b: b[3]), False, False),
    ("separate storages over the same bytes", lambda: _frombuffer_pair(overlapping=True), True,
     True),
    ("separate storages over disjoint bytes", lambda: _frombuffer_pair(overlapping=False),
     False, False),
    ("zero-size slice", _strided_pair(lambda b: b[3:3], lambda b: b), False, False),
    ("clone", _strided_pair(lambda b: b.clone(), lambda b: b), False, False),
    ("interleaved columns", _strided_pair(lambda b: _m(b)[:, 0], lambda b: _m(b)[:, 1]), True,
     False),
    ("even against odd elements", _strided_pair(lambda b: b[::2], lambda b: b[1::2]), True,
     False),
    ("even against every fourth element",
     _strided_pair(lambda b: b[::2], lambda b: b[4::4]), True, True),
    ("zero-dim element against its slice", _strided_pair(lambda b: b[3], lambda b: b[3:4]),
     True, True),
]
CASE_IDS = [case[0] for case in CASES]


@pytest.mark.parametrize(("name", "build", "bounding", "exact"), CASES, ids=CASE_IDS)
def test_bounding_rule_gives_the_expected_answer_and_never_misses(
    name: str, build: Callable[[], Any], bounding: bool, exact: bool
) -> None:
    """The bounding rule answers each case as tabled and reports every real overlap."""
    a, b = build()
    assert tensors_overlap(a, b) is bounding
    assert tensors_overlap(b, a) is bounding
    assert bounding or not oracle(a, b)


@pytest.mark.parametrize(("name", "build", "bounding", "exact"), CASES, ids=CASE_IDS)
def test_exact_mode_agrees_with_the_byte_set_oracle(
    name: str, build: Callable[[], Any], bounding: bool, exact: bool
) -> None:
    """exact=True answers each case as the brute-force byte sets do (and as tabled)."""
    a, b = build()
    assert oracle(a, b) is exact
    assert tensors_overlap(a, b, exact=True) is exact
    assert tensors_overlap(b, a, exact=True) is exact


@pytest.mark.parametrize(("name", "build", "bounding", "exact"), CASES, ids=CASE_IDS)
def test_registry_of_one_view_answers_like_the_pairwise_rule(
    name: str, build: Callable[[], Any], bounding: bool, exact: bool
) -> None:
    """A registry holding view ``a`` (not its storage) finds ``b`` exactly when the rule does."""
    a, b = build()
    registry = StaticBufferRegistry()
    registry.register(a, name="a", whole_storage=False)
    assert bool(registry.find_overlaps(b)) is bounding
    assert bool(registry.find_overlaps(b, exact=True)) is exact


@st.composite
def strided_views(draw: st.DrawFn, base: torch.Tensor) -> torch.Tensor:
    """Returns a strategy which generates strided views of ``base`` in one of four dtypes."""
    dtype = draw(st.sampled_from([torch.uint8, torch.int16, torch.float32, torch.float64]))
    flat = base.view(dtype)
    ndim = draw(st.integers(0, 3))
    sizes = draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    strides = draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim))
    extent = sum(max(0, n - 1) * s for n, s in zip(sizes, strides))
    offset = draw(st.integers(0, max(0, flat.numel() - 1 - extent)))
    if offset + extent >= flat.numel():
        offset, sizes = 0, [0] * ndim
    return flat.as_strided(sizes, strides, offset)


_BASE = torch.zeros(64, dtype=torch.uint8)


@settings(max_examples=150, deadline=None)
@given(a=strided_views(_BASE), b=strided_views(_BASE))
def test_random_strided_views_bounding_never_misses_and_exact_matches_the_oracle(
    a: torch.Tensor, b: torch.Tensor
) -> None:
    """Over random views of one storage, bounding ⊇ oracle and exact == oracle, registry too."""
    truth = oracle(a, b)
    assert tensors_overlap(a, b) or not truth
    assert tensors_overlap(a, b, exact=True) is truth
    registry = StaticBufferRegistry()
    registry.register(a, name="a", whole_storage=False)
    assert bool(registry.find_overlaps(b, exact=True)) is truth


def test_whole_storage_registration_catches_other_views_of_the_buffer() -> None:
    """Registering a ``[:bs]`` view registers the max-size buffer behind it."""
    buffer = torch.zeros(64)
    registry = StaticBufferRegistry()
    registry.register(buffer[:8], name="out")
    assert registry.find_overlaps(buffer[32:34]) == [
        Overlap("AUX110", "out", ("cpu", -1), 128, 136, 256)
    ]


def test_view_registration_reports_offsets_into_the_view() -> None:
    """With whole_storage=False only the view's bytes count, and offsets are into the view."""
    buffer = torch.zeros(64)
    registry = StaticBufferRegistry()
    registry.register(buffer[8:16], name="out", whole_storage=False)
    assert registry.find_overlaps(buffer[32:34]) == []
    assert registry.find_overlaps(buffer[6:10]) == [
        Overlap("AUX110", "out", ("cpu", -1), 0, 8, 32)
    ]


def test_overlaps_come_back_in_address_order_across_merged_buffers() -> None:
    """A tensor spanning several registered buffers gets one overlap per buffer, low first."""
    buffer = torch.zeros(64)
    registry = StaticBufferRegistry()
    for i in (3, 1, 2, 0):
        registry.register(buffer[16 * i:16 * (i + 1)], name=f"b{i}", whole_storage=False)
    names = [o.name for o in registry.find_overlaps(buffer[10:40])]
    assert names == ["b0", "b1", "b2"]


@pytest.mark.parametrize(("spans", "query", "expected"), [
    pytest.param([(0, 16), (32, 48)], (8, 40), ["b0", "b1"], id="two-buffers-with-a-gap"),
    pytest.param([(0, 4), (20, 24), (40, 44)], (2, 42), ["b0", "b1", "b2"],
                 id="three-buffers-with-gaps"),
    pytest.param([(0, 16), (32, 48)], (16, 32), [], id="only-the-gap"),
    pytest.param([(0, 16), (32, 48)], (15, 33), ["b0", "b1"], id="one-element-of-each"),
    pytest.param([(0, 64), (32, 48)], (50, 60), ["b0"], id="past-a-nested-buffer"),
])
def test_a_tensor_spanning_separate_buffers_reports_every_one(
    spans: list[tuple[int, int]], query: tuple[int, int], expected: list[str]
) -> None:
    """Every registered buffer a tensor's bytes meet is reported, gaps between them or not."""
    buffer = torch.zeros(64)
    registry = StaticBufferRegistry()
    for i, (lo, hi) in enumerate(spans):
        registry.register(buffer[lo:hi], name=f"b{i}", whole_storage=False)
    assert [o.name for o in registry.find_overlaps(buffer[query[0]:query[1]])] == expected


def test_a_buffer_is_found_past_a_smaller_buffer_nested_inside_it() -> None:
    """Nested registrations merge, so bytes past the inner buffer still find the outer one."""
    buffer = torch.zeros(64)
    registry = StaticBufferRegistry()
    registry.register(buffer, name="outer", whole_storage=False)
    registry.register(buffer[60:62], name="inner", whole_storage=False)
    assert [o.name for o in registry.find_overlaps(buffer[62:63])] == ["outer"]
    assert [o.name for o in registry.find_overlaps(buffer[61:63])] == ["outer", "inner"]


def test_ranges_on_another_device_never_overlap() -> None:
    """The same addresses on another device (type or index) are not an overlap."""
    tensor = torch.zeros(8)
    lo = tensor.data_ptr()
    registry = StaticBufferRegistry()
    registry.register_range(("cuda", 0), lo, lo + 32, name="gpu buffer")
    registry.register_range("cpu:1", lo, lo + 32, name="other cpu")
    assert registry.find_overlaps(tensor) == []
    registry.register_range("cpu", lo + 4, lo + 8, name="host buffer")
    assert [o.name for o in registry.find_overlaps(tensor)] == ["host buffer"]


def test_check_raises_the_whole_alias_error_with_name_offsets_and_fix() -> None:
    """check() raises CudaGraphAliasError naming the buffer, the offsets and the fix."""
    buffer = torch.zeros(16)
    registry = StaticBufferRegistry()
    registry.register(buffer, name="logits_out")
    view = buffer[2:4]
    with pytest.raises(CudaGraphAliasError) as info:
        registry.check(view)
    assert str(info.value) == (
        "AUX110 tensor[2, float32] shares bytes [8, 16) of static buffer 'logits_out' "
        "(64 bytes on cpu); expected device output tensors not to share bytes with "
        "CUDA-graph static buffers, which the next replay can overwrite before the "
        "scheduler's asynchronous copy completes; fix: " + get_rule("AUX110").hint
    )
    assert info.value.code == "AUX110"
    assert info.value.tensor is view
    assert info.value.overlaps == [Overlap("AUX110", "logits_out", ("cpu", -1), 8, 16, 64)]


def test_check_passes_a_clone_silently() -> None:
    """A clone owns its memory, so check() returns without raising."""
    buffer = torch.zeros(16)
    registry = StaticBufferRegistry()
    registry.register(buffer, name="out")
    registry.check(buffer[2:4].clone())
    assert registry.find_overlaps(buffer[2:4].clone()) == []


def test_freed_buffer_drops_out_of_the_registry() -> None:
    """Once every reference to a buffer's storage is gone, its registration is gone."""
    registry = StaticBufferRegistry()
    buffer = torch.zeros(32)
    registry.register(buffer, name="out")
    assert len(registry) == 1
    del buffer
    gc.collect()
    assert len(registry) == 0


def test_a_live_view_keeps_the_registration_alive() -> None:
    """A view keeps the storage, so the buffer it came from is still reported."""
    registry = StaticBufferRegistry()
    buffer = torch.zeros(32)
    registry.register(buffer, name="out")
    view = buffer[4:8]
    del buffer
    gc.collect()
    assert [o.name for o in registry.find_overlaps(view)] == ["out"]


def test_a_new_tensor_at_a_freed_buffers_address_is_not_an_alarm() -> None:
    """A storage freed and another created over the very same bytes is not reported."""
    raw = bytearray(64)
    registry = StaticBufferRegistry()
    first = torch.frombuffer(raw, dtype=torch.float32)
    registry.register(first, name="old")
    del first
    gc.collect()
    reused = torch.frombuffer(raw, dtype=torch.float32)
    assert registry.find_overlaps(reused) == []
    assert len(registry) == 0


def test_unregister_removes_by_owner_and_counts() -> None:
    """unregister() drops the owner's registrations (default owner: the name), others stay."""
    buffer = torch.zeros(32)
    runner = object()
    registry = StaticBufferRegistry()
    registry.register(buffer[:8], name="graph bs=8", whole_storage=False)
    registry.register(buffer[8:16], name="a", owner=runner, whole_storage=False)
    registry.register(buffer[16:24], name="b", owner=runner, whole_storage=False)
    assert registry.unregister("graph bs=" + str(8)) == 1
    assert registry.unregister(object()) == 0
    assert [o.name for o in registry.find_overlaps(buffer)] == ["a", "b"]
    assert registry.unregister(runner) == 2
    assert registry.find_overlaps(buffer) == []


@dataclass
class _Runner:
    out: torch.Tensor
    cache: dict[str, Any] = field(default_factory=dict)
    rows: tuple[Any, ...] = ()
    label: str = "runner"


def test_register_buffers_walks_dataclasses_dicts_lists_and_tuples() -> None:
    """register_buffers() registers every distinct tensor found, named by its path."""
    out = torch.zeros(4)
    runner = _Runner(out, {"k": torch.zeros(2), "n": 3}, (torch.zeros(1), [out, torch.ones(2)]))
    registry = StaticBufferRegistry()
    assert registry.register_buffers(runner, name="runner") == 4
    assert sorted(r.name for r in registry) == [
        "runner.cache['k']", "runner.out", "runner.rows[0]", "runner.rows[1][1]",
    ]
    assert registry.unregister("runner") == 4


def _segment(address: int, size: int, pool: tuple[int, int], device: Any = "cpu") -> dict[str, Any]:
    return {"device": device, "address": address, "total_size": size, "stream": 0,
            "segment_type": "small", "segment_pool_id": pool, "allocated_size": size,
            "active_size": size, "blocks": [{"address": address, "size": size,
                                             "state": "active_allocated"}]}


def _pool_of(tensor: torch.Tensor, pool: tuple[int, int]) -> list[dict[str, Any]]:
    """Returns a fake snapshot in which ``tensor``'s storage is a segment of ``pool``."""
    storage = tensor.untyped_storage()
    other = torch.zeros(4)
    return [_segment(storage.data_ptr(), storage.nbytes(), pool),
            _segment(other.data_ptr(), 16, (0, 0))]


def test_register_pool_registers_only_that_pools_whole_segments() -> None:
    """Segments of the pool are registered whole (AUX111); other pools' are not."""
    memory = torch.zeros(16)
    registry = StaticBufferRegistry()
    count = registry.register_pool((3, 1), snapshot=lambda: _pool_of(memory, (3, 1)))
    assert count == 1
    address = memory.data_ptr()
    assert registry.find_overlaps(memory[15]) == [
        Overlap("AUX111", f"cuda-graph pool (3, 1) segment {address:#x}", ("cpu", -1),
                60, 64, 64)
    ]


def test_register_pool_again_refreshes_its_segments() -> None:
    """Registering a pool a second time replaces its segments instead of adding duplicates."""
    first, second = torch.zeros(8), torch.zeros(8)
    registry = StaticBufferRegistry()
    registry.register_pool([3, 1], snapshot=lambda: _pool_of(first, (3, 1)))
    registry.register_pool((3, 1), snapshot=lambda: _pool_of(second, (3, 1)))
    assert registry.find_overlaps(first) == []
    assert len(registry.find_overlaps(second)) == 1
    assert registry.unregister((3, 1)) == 1


def test_register_pool_reads_integer_devices_as_cuda_indices() -> None:
    """A snapshot's integer ``device`` is a CUDA index, as torch.cuda.memory_snapshot() gives."""
    registry = StaticBufferRegistry()
    segments = [_segment(4096, 512, (5, 0), device=1), _segment(8192, 512, (5, 1), device=0)]
    assert registry.register_pool((5, 0), snapshot=lambda: segments, name="graphs") == 1
    assert list(registry) == [
        aliasing.Registration("graphs segment 0x1000", "AUX111", ("cuda", 1), 4096, 4608,
                              pool=(5, 0))
    ]


class _FakeGraph:
    """Stands in for torch.cuda.CUDAGraph on a machine without CUDA."""

    def pool(self) -> tuple[int, int]:
        return (9, 2)


def _recording_context(calls: list[dict[str, Any]]) -> Callable[..., Any]:
    @contextlib.contextmanager
    def context(graph: Any, *, pool: Any, stream: Any) -> Iterator[None]:
        calls.append({"graph": graph, "pool": pool, "stream": stream})
        yield
    return context


def test_capture_registers_the_pool_and_the_outputs_through_the_handle() -> None:
    """capture() enters the graph context, then registers the pool; release() undoes it all."""
    pool_memory, output = torch.zeros(16), torch.zeros(8)
    graph, calls = _FakeGraph(), list[dict[str, Any]]()
    registry = StaticBufferRegistry()
    with capture(registry, graph, pool=(9, 2), name="decode", capture_context=
                 _recording_context(calls), snapshot=lambda: _pool_of(pool_memory, (9, 2)),
                 ) as handle:
        handle.register(output)
    assert calls == [{"graph": graph, "pool": (9, 2), "stream": None}]
    assert [o.code for o in registry.find_overlaps(pool_memory[2:3])] == ["AUX111"]
    assert [o.name for o in registry.find_overlaps(output[:1])] == ["decode output"]
    assert handle.release() == 2
    assert len(registry) == 0


def test_graphs_sharing_one_pool_report_a_tensor_in_it_once() -> None:
    """Two captures into one pool register its segments twice but report them once."""
    pool_memory = torch.zeros(16)
    registry = StaticBufferRegistry()
    handles = []
    for name in ("bs=1", "bs=2"):
        with capture(registry, _FakeGraph(), name=name, capture_context=_recording_context([]),
                     snapshot=lambda: _pool_of(pool_memory, (9, 2))) as handle:
            handles.append(handle)
    assert len(registry) == 2
    assert [o.code for o in registry.find_overlaps(pool_memory[:1])] == ["AUX111"]
    handles[0].release()
    assert [o.code for o in registry.find_overlaps(pool_memory[:1])] == ["AUX111"]


def test_capture_that_raises_registers_no_pool() -> None:
    """A failed capture propagates its error and leaves the pool unregistered."""
    snapshots: list[int] = []
    registry = StaticBufferRegistry()

    def snapshot() -> list[dict[str, Any]]:
        snapshots.append(1)
        return []

    failing = capture(registry, _FakeGraph(), capture_context=_recording_context([]),
                      snapshot=snapshot)
    with pytest.raises(RuntimeError, match="capture failed"), failing:
        raise RuntimeError("capture failed")
    assert snapshots == []


def test_guard_copy_checks_before_copying_and_keeps_the_copy_result() -> None:
    """The guarded copy returns the copy's result for clean tensors and raises before aliasing."""
    buffer = torch.zeros(16)
    copied: list[torch.Tensor] = []

    def copy_tensor(tensor: torch.Tensor) -> torch.Tensor:
        copied.append(tensor)
        return tensor.clone()

    guarded = guard_copy(copy_tensor, [buffer])
    clean = torch.ones(2)
    assert torch.equal(guarded(clean), clean)
    with pytest.raises(CudaGraphAliasError):
        guarded(buffer[:2])
    assert copied == [clean]
    assert guarded.__name__ == "copy_tensor"


def test_static_buffer_findings_reports_one_finding_per_tensor_and_buffer() -> None:
    """Each (tensor, buffer) overlap is one finding with the rule's code, hint and tensor."""
    buffer, pool_memory = torch.zeros(16), torch.zeros(16)
    registry = StaticBufferRegistry()
    registry.register(buffer, name="out")
    registry.register_range("cpu", buffer.data_ptr(), buffer.data_ptr() + 8, name="head")
    registry.register_pool((1, 1), snapshot=lambda: _pool_of(pool_memory, (1, 1)))
    tensors = [buffer[:1], pool_memory[3:4], torch.zeros(2)]
    found = static_buffer_findings(tensors, registry)
    assert [(f.code, f.obj is t) for f, t in zip(found, [tensors[0]] * 2 + [tensors[1]])] == [
        ("AUX110", True), ("AUX110", True), ("AUX111", True)]
    assert found[1].message == (
        "tensor[1, float32] shares bytes [0, 4) of static buffer 'out' (64 bytes on cpu); "
        "expected device output tensors not to share bytes with CUDA-graph static buffers, "
        "which the next replay can overwrite before the scheduler's asynchronous copy completes"
    )
    assert found[2].hint == get_rule("AUX111").hint


def test_static_buffer_findings_names_the_path_of_a_labelled_tensor() -> None:
    """``(path, tensor)`` items put the path in the message, as validators walk objects."""
    buffer = torch.zeros(4)
    [found] = static_buffer_findings([(".hidden", buffer[1:2])], [buffer])
    assert found.message.startswith(
        "device tensor .hidden tensor[1, float32] shares bytes [4, 8) of static buffer "
        "'static_buffers[0]' (16 bytes on cpu); expected"
    )


@pytest.mark.parametrize(
    ("static_buffers", "names"),
    [
        (None, []),
        ("list", ["static_buffers[0]"]),
        ("mapping", ["hidden_states"]),
        ("tensor", ["static_buffers[0]"]),
    ],
    ids=["none", "list of tensors", "mapping of names", "one tensor"],
)
def test_static_buffer_findings_accepts_tensors_mappings_and_none(
    static_buffers: Any, names: list[str]
) -> None:
    """Plain tensors are registered whole-storage and named by position or mapping key."""
    buffer = torch.zeros(8)
    given_: dict[str, Any] = {"list": [buffer], "mapping": {"hidden_states": buffer}, "tensor": buffer}
    found = static_buffer_findings([buffer[1:2]], given_.get(static_buffers))
    assert [f.message.split("'")[1] for f in found] == names


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda r: r.register([1, 2], name="x"),
         ("register() expected a torch.Tensor, got list; pass the tensor itself "
          "(walk containers with register_buffers)")),
        (lambda r: r.find_overlaps(None),
         ("find_overlaps() expected a torch.Tensor, got NoneType; pass the tensor itself "
          "(walk containers with register_buffers)")),
        (lambda r: r.register(torch.zeros(1), name=""),
         ("name must be a non-empty string, got ''; name the buffer so findings can say "
          "which one it is")),
        (lambda r: r.register_range("cuda", 0, 8, name="x"),
         ("device 'cuda' has no index; expected a device such as 'cuda:0', 'cpu' or a "
          "('cuda', 0) pair, since a range without index cannot be matched")),
        (lambda r: r.register_pool(7, snapshot=list),
         "pool id 7 is not a pair of ints; pass graph.pool() or torch.cuda.graph_pool_handle()"),
    ],
    ids=["register a list", "look up None", "empty name", "device without index",
         "pool id not a pair"],
)
def test_bad_arguments_raise_invalid_argument_naming_the_fix(
    call: Callable[[StaticBufferRegistry], Any], message: str
) -> None:
    """Misuse raises InvalidArgument (a TypeError) saying what was wrong and what to pass."""
    with pytest.raises(InvalidArgument) as info:
        call(StaticBufferRegistry())
    assert str(info.value) == message
    assert isinstance(info.value, TypeError)


def test_exact_mode_against_a_plain_range_counts_only_the_elements_bytes() -> None:
    """exact=True checks a column against a raw range by its elements, bounding does not."""
    matrix = torch.zeros(4, 4)
    registry = StaticBufferRegistry()
    start = matrix.data_ptr() + 4  # row 0, column 1: between column 0's elements
    registry.register_range("cpu", start, start + 4, name="cell")
    assert [o.name for o in registry.find_overlaps(matrix[:, 0])] == ["cell"]
    assert registry.find_overlaps(matrix[:, 0], exact=True) == []
    assert [o.name for o in registry.find_overlaps(matrix[:, 1], exact=True)] == ["cell"]


def test_a_tensor_without_readable_bytes_raises_invalid_argument() -> None:
    """A sparse tensor has no byte range: the error says so and how to fix it."""
    with pytest.raises(InvalidArgument) as info:
        StaticBufferRegistry().find_overlaps(torch.zeros(3).to_sparse())
    text = str(info.value)
    assert text.startswith("find_overlaps() cannot read the bytes of tensor[3, float32] (")
    assert text.endswith("); expected a dense strided tensor with storage; pass a dense "
                         "tensor (e.g. .to_dense())")


def test_exact_mode_does_not_expand_views_past_the_limit() -> None:
    """A view with more byte runs than the limit is not expanded (bounding answer stands)."""
    columns = torch.zeros(8, 8)[:, 0]
    assert runs_of(geometry(columns), limit=4) is None
    assert runs_of(geometry(columns), limit=8) is not None


def test_all_lists_exactly_the_public_names() -> None:
    """__all__ names every public class and function defined behind the face, and nothing else."""
    public = {n for n, v in vars(static_buffers).items()
              if not n.startswith("_") and getattr(v, "__module__", None) == static_buffers.__name__}
    assert set(aliasing.__all__) == public
    assert all(getattr(aliasing, n) is getattr(static_buffers, n) for n in aliasing.__all__)


def _run(code_or_path: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *code_or_path], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, **env}, timeout=120, check=False)


def test_importing_the_module_does_not_import_torch() -> None:
    """`import auxcheck.aliasing` leaves torch unloaded, so annotating with it is cheap."""
    result = _run(["-c", "import sys, auxcheck.aliasing; print('torch' in sys.modules)"], {})
    assert result.stdout.strip() == "False", result.stderr


@pytest.mark.parametrize("name", ["gpu_check", "gpu_guard"])
def test_each_gpu_script_skips_cleanly_without_cuda(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """benchmarks/gpu_*.py say they skipped and exit 0 when no CUDA device is visible."""
    script = runpy.run_path(str(REPO / "benchmarks" / f"{name}.py"), run_name=name)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a no-op on CPU machines
    assert script["main"]() == 0
    assert capsys.readouterr().out == "no CUDA device: skipped\n"


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_real_cuda_graph_output_view_is_reported_and_its_clone_is_not() -> None:
    """On CUDA, a view of a captured graph's output is AUX110+AUX111; its clone is clean."""
    registry = StaticBufferRegistry()
    static_in = torch.ones(64, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        static_in * 2  # warm-up outside capture, as torch.cuda.graph requires
    torch.cuda.current_stream().wait_stream(stream)
    with capture(registry, name="decode") as handle:
        static_out = static_in * 2
        handle.register(static_out, name="static_out")
    view, owned = static_out[:8], static_out[:8].clone()
    assert {f.code for f in static_buffer_findings([view], registry)} == {"AUX110", "AUX111"}
    assert static_buffer_findings([owned], registry) == []


def test_one_finding_names_every_buffer_a_tensor_spans() -> None:
    """registry.finding gives the live guard one finding per tensor, however many buffers it spans."""
    storage = torch.zeros(32)
    registry = StaticBufferRegistry()
    registry.register_range(("cpu", -1), storage.data_ptr(), storage.data_ptr() + 16, name="a")
    registry.register_range(("cpu", -1), storage.data_ptr() + 16, storage.data_ptr() + 64,
                            name="b")
    finding = registry.finding(storage[:8], path=".values")
    assert finding is not None and finding.code == "AUX110"
    assert finding.message.startswith(
        "device tensor .values tensor[8, float32] shares bytes [0, 16) of static buffer 'a' "
        "(16 bytes on cpu), bytes [0, 16) of static buffer 'b' (48 bytes on cpu); ")
    assert finding.obj is not None
    assert registry.finding(torch.zeros(8)) is None
