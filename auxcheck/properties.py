"""The invariants of append and the composites (docs/contract.md), as reusable properties.

Each ``check_*`` function takes the :class:`Implementation` under test and concrete
inputs, and raises :class:`~auxcheck.errors.ContractViolation` when the implementation
breaks the invariant; the message starts with the rule code and the carried report
holds one finding per problem seen. :func:`property_tests` wraps each one in a
Hypothesis test and :func:`run_properties` runs them all, returning a report whose
findings carry the shrunk falsifying example in ``detail``.

The implementation under test is plugin code too: every call into it, and every
attribute of what it returns, goes through the guarded calls of
:mod:`auxcheck._properties.implementation_calls`. Whatever it raises (``SystemExit``,
``GeneratorExit``, a bare ``BaseException``) becomes a finding inside the Hypothesis test
body, before Hypothesis sees it (:mod:`auxcheck._properties.contract_tests`). Implementations
are loaded by :mod:`auxcheck._properties.implementations`; their names are re-exported here.
"""

from auxcheck._properties.implementation_calls import (
    checked_result,
    children,
)
from auxcheck._properties.implementations import (
    REFERENCE,
    SGLANG_MODULE,
    Implementation,
    load_implementation,
    release_implementation,
    release_version,
)
from auxcheck._properties.invariants import (
    PropertyTest,
    broadcast_findings,
    check_associativity,
    check_broadcast,
    check_copy_once,
    check_flattening,
    check_frozen,
    check_none_identity,
    check_order,
    consume_findings,
    consumed_findings,
    copy_count_findings,
    copy_findings,
    copy_logged,
    flattening_findings,
    frozen_findings,
    none_findings,
    occurrence_records,
    order_findings,
    property_tests,
    run_properties,
    structure_findings,
)

__all__ = [
    "REFERENCE",
    "SGLANG_MODULE",
    "Implementation",
    "PropertyTest",
    "broadcast_findings",
    "check_associativity",
    "check_broadcast",
    "check_copy_once",
    "check_flattening",
    "check_frozen",
    "check_none_identity",
    "check_order",
    "checked_result",
    "children",
    "consume_findings",
    "consumed_findings",
    "copy_count_findings",
    "copy_findings",
    "copy_logged",
    "flattening_findings",
    "frozen_findings",
    "load_implementation",
    "none_findings",
    "occurrence_records",
    "order_findings",
    "property_tests",
    "release_implementation",
    "release_version",
    "run_properties",
    "structure_findings",
]
