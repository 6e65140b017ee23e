"""Hypothesis tests as contract checks: what escapes them becomes a ContractViolation.

Hypothesis re-raises ``SystemExit`` and ``GeneratorExit`` as themselves and stops at any
other ``BaseException``; its own exceptions (control flow, usage errors) pass unchanged.
Hypothesis is imported by the functions that need it, never at import time.
"""

from __future__ import annotations

import unittest
from collections.abc import Callable
from typing import Any

from auxcheck._core.errors import ContractViolation
from auxcheck._core.plugin_calls import attempt, kind_name, lookup, summarize
from auxcheck._core.report import Finding, Report
from auxcheck._properties.implementation_calls import is_a

__all__ = ["contract_test", "guarded_body"]


def contract_test(name: str, code: str, test: Callable[[], None]) -> Callable[[], None]:
    """Returns ``test`` raising only ContractViolation, Hypothesis's own usage errors, or the
    ``unittest.SkipTest`` of a profile that runs none of its examples.

    What Hypothesis itself lets out becomes a ContractViolation (``code``): a
    FlakyFailure (the implementation judged the same example differently on a re-run)
    and whatever plugin code raised inside Hypothesis's own machinery, such as a class
    whose ``__name__`` raises when the example is printed.
    """
    from auxcheck._properties.drawing import hypothesis_own

    def judged() -> None:
        outcome = attempt(test)
        error = outcome.error
        if error is None or is_a(error, ContractViolation):
            if error is not None:
                raise error
            return
        inner = [e for e in _flattened(error) if is_a(e, ContractViolation)]
        if inner:
            raise inner[0]
        if hypothesis_own(error) and not kind_name(error).startswith("Flaky"):
            raise error  # a settings or health-check problem: Hypothesis's message says how
        if is_a(error, unittest.SkipTest):
            raise error  # a profile that runs no example of this test: nothing was judged
        finding = Finding.of(code, f"{name} stopped with {kind_name(error)} raised outside the "
                             "checks", "expected the implementation and your outputs to "
                             "behave the same on every run of an example, raising nothing "
                             "that escapes their calls", None, detail=summarize(error))
        raise ContractViolation(Report(f"{code} {name}", [finding])) from None

    judged.__name__ = judged.__qualname__ = name
    return judged


def _flattened(error: BaseException) -> list[BaseException]:
    """Returns ``error``'s leaf exceptions when it is an exception group, else ``[error]``."""
    inner = lookup(error, "exceptions").value
    if type(inner) is not tuple:
        return [error]
    return [leaf for each in inner if is_a(each, BaseException) for leaf in _flattened(each)]


def guarded_body(name: str, code: str, function: Callable[..., None]) -> Callable[..., None]:
    """Returns ``function`` named ``name`` (Hypothesis names the example after it), guarded.

    Hypothesis re-raises ``SystemExit`` and ``GeneratorExit`` as themselves and stops at
    any other ``BaseException``: whatever escapes the checks' own guarded calls is made
    a ContractViolation (``code``) here, inside the body, so Hypothesis shrinks it as a
    failure. ContractViolation and Hypothesis's own exceptions pass unchanged.
    """
    from auxcheck._properties.drawing import hypothesis_control

    def run(**kwargs: Any) -> None:
        outcome = attempt(function, **kwargs)
        error = outcome.error
        if error is None:
            return
        if is_a(error, ContractViolation) or hypothesis_control(error):
            raise error
        raise ContractViolation(Report(f"{code} {name}", [Finding.of(
            code, f"{name} raised {kind_name(error)} outside the guarded calls into the "
            "implementation", "expected only findings; if the detail shows only auxcheck's "
            "frames, report it as an auxcheck bug", None, detail=summarize(error))])) from None

    run.__name__ = run.__qualname__ = name
    return run
