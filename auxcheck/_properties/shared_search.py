"""One Hypothesis search for several properties: each example drawn once, checked by each.

The properties of one value draw their arguments from the same few strategies. A shared
search draws every property's arguments once per example (one argument for the
strategies several properties draw alike) and checks each wanted property on them, never
stopping at a failure: it records which properties failed. A failed property then runs
its own search: the same strategies, the same settings, the same test function (so the
same examples from the same seed, derandomized ones too, whose seed is the function's
digest), checking only it and stopping at its first failure to shrink it (Hypothesis's
explain phase, which would vary every argument no check of it reads, is left out). Which
properties are wanted never changes what is drawn, so a property run alone draws the
examples it drew beside the others, and its failure re-runs alone.

Each check makes its own composites from the drawn leaves, and every count a check
reads is taken relative to before it ran (:mod:`auxcheck._properties.invariants`), so
the checks of one example do not see each other's work; an implementation or output
that keeps state between calls could still answer differently, and then the item says so.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from auxcheck._core.errors import ContractViolation
from auxcheck._core.plugin_calls import attempt
from auxcheck._properties.contract_tests import contract_test, guarded_body
from auxcheck._properties.invariants import PropertySpec

__all__ = ["SharedSearch"]


class _NotDrawn:
    """An argument the explicit example leaves out: its properties skip that example."""

    def __repr__(self) -> str:
        return "<not drawn for this explicit example>"


_NOT_DRAWN = _NotDrawn()

_SHARED_NAME = "append_properties"
"""The shared search's test name: what Hypothesis prints is the failing property's own run."""


@dataclass(slots=True)
class SharedSearch:
    """The properties ``specs`` under ``chosen`` (a ``hypothesis.settings`` that generates),
    searched once for every property in ``wanted``; :meth:`verdict` judges one of them."""

    specs: Sequence[PropertySpec]
    chosen: Any
    wanted: Collection[str]
    keys: dict[str, dict[str, str]] = field(init=False)
    strategies: dict[str, Any] = field(init=False)
    failures: dict[str, ContractViolation] | None = field(init=False, default=None)
    screened: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.keys, self.strategies = _shared_arguments(self.specs)

    def verdict(self, name: str) -> None:
        """Raises what property ``name``'s own test would raise on these examples, if anything.

        The shared search runs on first use; a property it passed is done. One that failed
        (or every property, when the search could not vouch for any: a health check, an
        example Hypothesis rejected inside a check) runs its own search and raises its
        shrunk failure. A failure the own search does not find again is raised as the
        shared search saw it, saying so.
        """
        failures = self._screen() if len(self.wanted) > 1 and name in self.wanted else None
        if failures is not None and name not in failures:
            return
        self.own_test(name)()
        if failures is not None:
            _raise_unrepeated(name, failures[name])

    def own_test(self, name: str) -> Callable[[], None]:
        """Returns property ``name``'s own search over the shared examples, stopping at its
        first failure and shrinking it (a ContractViolation, the example in its notes)."""
        spec = next(s for s in self.specs if s.name == name)
        return contract_test(name, spec.codes[0], self._test(name, [name], None))

    def _screen(self) -> dict[str, ContractViolation] | None:
        """Returns the wanted properties that failed, by name (None: the search could not
        vouch for any), running the shared search once."""
        if not self.screened:
            self.screened = True
            failures: dict[str, ContractViolation] = {}
            diverged: list[BaseException] = []
            outcome = attempt(self._test(_SHARED_NAME, self.wanted, (failures, diverged)))
            if outcome.error is None and not diverged:
                self.failures = failures
        return self.failures

    def _test(self, name: str, wanted: Collection[str],
              record: tuple[dict[str, ContractViolation], list[BaseException]] | None
              ) -> Callable[[], None]:
        """Returns the Hypothesis test checking ``wanted`` on every example: raising at the
        first failure when ``record`` is None, else recording each property's first one."""
        from hypothesis import example, given

        checks = [(s.name, self.keys[s.name], guarded_body(s.name, s.codes[0], s.function))
                  for s in self.specs if s.name in wanted]
        body = _body(checks, record)
        body.__name__ = body.__qualname__ = name
        test = given(**self.strategies)(body)
        explicit = _explicit(self.specs, self.keys, self.strategies)
        if explicit is not None:
            test = example(**explicit)(test)
        return _without_explain(self.chosen)(test)  # type: ignore[no-any-return]


def _without_explain(chosen: Any) -> Any:
    """Returns ``chosen`` without Hypothesis's explain phase.

    After shrinking a failure, that phase re-runs the test varying every argument to mark
    those that do not matter: here every other property's arguments, drawn but unread, at
    several seconds for each failing property (the strategy items leave it out too).
    """
    from hypothesis import Phase, settings

    return settings(chosen, phases=[p for p in chosen.phases if p is not Phase.explain])


def _body(checks: list[tuple[str, dict[str, str], Callable[..., None]]],
          record: tuple[dict[str, ContractViolation], list[BaseException]] | None
          ) -> Callable[..., None]:
    """Returns the test body of a shared or an own search (one source: one derandomized seed)."""
    def run(**drawn: Any) -> None:
        for name, keys, check in checks:
            args = {arg: drawn[key] for arg, key in keys.items()}
            if any(value is _NOT_DRAWN for value in args.values()):
                continue
            if record is None:
                check(**args)
                continue
            failures, diverged = record
            try:
                check(**args)
            except ContractViolation as exc:
                failures.setdefault(name, exc)
            except BaseException as exc:  # Hypothesis's control flow: the search cannot vouch
                diverged.append(exc)
                raise

    return run


def _shared_arguments(specs: Sequence[PropertySpec]
                      ) -> tuple[dict[str, dict[str, str]], dict[str, Any]]:
    """Returns each property's argument keys, and the strategy of every key in draw order.

    Properties whose argument of one name comes from the very same strategy object share
    its key (one draw); another strategy under that name gets a key of its own, prefixed
    with its property's name.
    """
    users: dict[tuple[str, int], list[str]] = {}
    for spec in specs:
        for arg, strategy in spec.strategies.items():
            users.setdefault((arg, id(strategy)), []).append(spec.name)
    widest: dict[str, tuple[str, int]] = {}
    for entry, names in users.items():
        if entry[0] not in widest or len(names) > len(users[widest[entry[0]]]):
            widest[entry[0]] = entry
    keys: dict[str, dict[str, str]] = {}
    strategies: dict[str, Any] = {}
    for (arg, strategy_id), names in users.items():
        key = arg if widest[arg] == (arg, strategy_id) else \
            f"{names[0].removeprefix('check_')}_{arg}"
        for spec in specs:
            if spec.name in names:
                keys.setdefault(spec.name, {})[arg] = key
                strategies[key] = spec.strategies[arg]
    return keys, strategies


def _explicit(specs: Sequence[PropertySpec], keys: dict[str, dict[str, str]],
              strategies: dict[str, Any]) -> dict[str, Any] | None:
    """Returns the one explicit example of the properties that have one (they share it);
    the keys it leaves out are not drawn, and the properties reading them skip it."""
    given = {keys[s.name][arg]: value for s in specs if s.explicit is not None
             for arg, value in s.explicit.items()}
    if not given:
        return None
    return {key: given.get(key, _NOT_DRAWN) for key in strategies}


def _raise_unrepeated(name: str, violation: ContractViolation) -> None:
    """Raises the shared search's ``violation`` of ``name``, which its own search passed."""
    again = ContractViolation(violation.report)
    note = (f"{name} failed in the search shared with this value's other properties, and "
            "passed its own search of the same examples: on this example its verdict depends "
            "on what the other properties' checks did before it (state kept between calls), "
            "or changes from one run to the next; run the value's property items together to "
            "see it again")
    again.__notes__ = [note]  # type: ignore[attr-defined]
    raise again from None
