"""The names the suite uses: the fixtures it reads, its collectors, and each group's items and codes."""

from __future__ import annotations

__all__ = [
    "BATCH_SIZE_FIXTURE",
    "DEVICE_CHECKS",
    "FIXTURE",
    "FORWARD_OBSERVER_FIXTURE",
    "IMPL_GROUP",
    "IMPORTS_ITEM",
    "IMPORT_CODES",
    "NOTHING_ITEM",
    "OBSERVER_CHECKS",
    "OBSERVER_FIXTURES",
    "PP_MARK",
    "PP_OBSERVER_FIXTURE",
    "SAMPLING_OBSERVER_FIXTURE",
    "STATIC_BUFFERS_FIXTURE",
    "STATIC_CODES",
    "SUBJECT_FIXTURES",
    "SUITE_NAME",
]

FIXTURE = "auxcheck_device_output"
SAMPLING_OBSERVER_FIXTURE = "auxcheck_sampling_observer"
FORWARD_OBSERVER_FIXTURE = "auxcheck_forward_observer"
STATIC_BUFFERS_FIXTURE = "auxcheck_static_buffers"
PP_OBSERVER_FIXTURE = "auxcheck_pp_observer"
BATCH_SIZE_FIXTURE = "auxcheck_batch_size"
PP_MARK = "auxcheck_pp"
"""The mark on a fixture value saying whether it crosses pipeline-parallel stages."""
OBSERVER_FIXTURES = {SAMPLING_OBSERVER_FIXTURE: "sampling", FORWARD_OBSERVER_FIXTURE: "forward"}
SUBJECT_FIXTURES = (FIXTURE, *OBSERVER_FIXTURES)
"""The fixtures whose values the suite checks; finding none of them is a usage error."""
SUITE_NAME = "auxcheck"
IMPORTS_ITEM = "imports"
IMPORT_CODES = ("AUX501", "AUX502", "AUX504")
"""The codes the imports item reports; it is left out when all of them are ignored."""
IMPL_GROUP = "impl"
NOTHING_ITEM = "auxcheck-nothing-to-check"

DEVICE_CHECKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("AUX101", "AUX101-copy-to-host-callable", ("AUX101",)),
    ("AUX102", "AUX102-copy-to-host-arity", ("AUX102",)),
    ("AUX103", "AUX103-copy-to-host-result", ("AUX103",)),
    ("AUX104", "AUX104-single-copy", ("AUX104",)),
    ("AUX105", "AUX105-no-copy-bypass", ("AUX105",)),
    ("AUX110", "AUX110-static-buffer-alias", ("AUX110",)),
    ("AUX111", "AUX111-graph-pool-alias", ("AUX111",)),
    ("AUX112", "AUX112-values-at-copy", ("AUX112",)),
    ("AUX114", "AUX114-host-values-read-after-sync", ("AUX114",)),
    ("AUX201", "AUX201-consume-callable", ("AUX201",)),
    ("AUX202", "AUX202-consume-valid-commits", ("AUX202",)),
    ("AUX203", "AUX203-consume-read-only", ("AUX203",)),
    ("AUX204", "AUX204-consume-returns-none", ("AUX204",)),
    ("AUX301", "AUX301-append-flattens", ("AUX301",)),
    ("AUX302", "AUX302-append-order", ("AUX302",)),
    ("AUX303", "AUX303-append-none", ("AUX303",)),
    ("AUX304", "AUX304-composite-copies-once", ("AUX304",)),
    ("AUX305", "AUX305-composite-broadcast", ("AUX305",)),
    ("AUX306", "AUX306-composite-frozen", ("AUX306",)),
    ("AUX401", "AUX401-pp-transport", ("AUX401",)),
    ("AUX402", "AUX402-pp-tensors", ("AUX402",)),
    ("AUX403", "AUX403-pp-round-trip", ("AUX403",)),
)
"""(check key, item name, rule codes) of every item in a device-output group.

AUX110/AUX111 appear only where the fixture ``auxcheck_static_buffers`` is visible.
"""

_OBSERVER_CODES = ("AUX103", "AUX104", "AUX105", "AUX110", "AUX111", "AUX112", "AUX114",
                   "AUX201", "AUX202", "AUX203", "AUX204")
OBSERVER_CHECKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("AUX102", "AUX102-observer-hooks", ("AUX102",)),
    ("AUX101", "AUX101-published-output", ("AUX101",)),
    *sorted((*(check for check in DEVICE_CHECKS if check[0] in _OBSERVER_CODES),
             ("AUX113", "AUX113-inputs-read-only", ("AUX113",)),
             ("AUX115", "AUX115-no-kept-logits-read", ("AUX115",)))),
)
"""(code, item name, rule codes) of every item in an observer group, run through the step loop.

AUX111 appears only where ``auxcheck_static_buffers`` is visible; AUX110 always (the
loop's own CUDA-graph outputs count). AUX113 (the hooks left what SGLang handed them as
it was) and AUX115 (no logits read after the sampler edited them) are an observer's alone: a
device-output group has no hooks.
"""

STATIC_CODES = frozenset({"AUX110", "AUX111"})
"""The static-memory codes, whose items need ``auxcheck_static_buffers`` (or a loop's own)."""
