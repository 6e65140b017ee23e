"""Benchmark: the full property set and the state machine under each auxcheck profile.

Run by hand: ``.venv/bin/python benchmarks/bench_strategies.py [--impl reference]``.
Prints, per profile, the seconds and the examples (test cases) per second of the
seven properties and of the machine; the target is under 20 s in all on two cores, printed
as a ``RESULT`` line (``from _timing import result_line``) against that budget.
Examples are counted by wrapping the property bodies and counting machine instances
(Hypothesis's observability callbacks would slow the run tenfold).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from _timing import result_line

from auxcheck import machine
from auxcheck._properties import invariants
from auxcheck.machine import run_machine
from auxcheck.properties import load_implementation, run_properties
from auxcheck.report import Report
from auxcheck.strategies import PROFILES

BUDGET = 20.0
"""The most seconds the four runs (two profiles, properties and machine) may take in all."""

_cases = 0


def _count_properties() -> None:
    # property_tests wraps each body with the name invariants imported, so patch it there.
    named = invariants.guarded_body

    def counting(name: str, code: str, function: Callable[..., None]) -> Callable[..., None]:
        def run(**kwargs: Any) -> None:
            global _cases
            _cases += 1
            function(**kwargs)

        return named(name, code, run)

    invariants.guarded_body = counting


def _count_machines() -> None:
    init = machine.LifecycleMachine.__init__

    def counting(self: machine.LifecycleMachine) -> None:
        global _cases
        _cases += 1
        init(self)

    machine.LifecycleMachine.__init__ = counting  # type: ignore[method-assign]


def measure(run: Callable[[], Report]) -> tuple[float, int, bool]:
    """Returns the seconds ``run`` took, the examples it ran, and whether it passed."""
    global _cases
    _cases = 0
    start = time.perf_counter()
    report = run()
    return time.perf_counter() - start, _cases, report.ok


def main() -> int:
    """Prints the table and the RESULT line; returns 1 when anything failed on the
    implementation or the runs took over the budget."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default="reference", help="reference, sglang, auto or a module")
    impl = load_implementation(parser.parse_args().impl)
    _count_properties()
    _count_machines()
    # Warm up torch and Hypothesis so the first row does not pay for imports.
    run_properties(impl, max_examples=2)
    print(f"{'profile':<18} {'suite':<11} {'seconds':>8} {'examples':>9} {'ex/s':>8}  ok")
    total, passed = 0.0, True
    for profile in PROFILES:
        for suite, run in (("properties", run_properties), ("machine", run_machine)):
            seconds, cases, ok = measure(partial(run, impl, profile=profile))
            total += seconds
            passed &= ok
            print(f"{profile:<18} {suite:<11} {seconds:8.2f} {cases:9d} {cases / seconds:8.0f}  {ok}")
    print(f"{'total':<30} {total:8.2f}")
    met = result_line("properties + machine under every profile (all four runs) vs the 20 s "
                      "budget", total, BUDGET, at_most=1)
    return 0 if passed and met else 1


if __name__ == "__main__":
    raise SystemExit(main())
