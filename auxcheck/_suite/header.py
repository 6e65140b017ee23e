"""The suite's one header line, and the usage error of a run that found nothing to check."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pytest

from auxcheck._core.config import project_ignore
from auxcheck._core.errors import InvalidArgument
from auxcheck._core.text import plural
from auxcheck._core.version import __version__
from auxcheck._suite.fixture_values import fixture_location
from auxcheck._suite.names import (
    BATCH_SIZE_FIXTURE,
    DEVICE_CHECKS,
    FIXTURE,
    IMPL_GROUP,
    OBSERVER_CHECKS,
    PP_OBSERVER_FIXTURE,
    STATIC_BUFFERS_FIXTURE,
    STATIC_CODES,
    SUBJECT_FIXTURES,
    SUITE_NAME,
)
from auxcheck._suite.options import OPTIONS, AuxcheckOptions
from auxcheck._suite.pytest_compat import fixture_definitions, fixture_names

__all__ = ["Subjects", "count_subjects", "header_line", "nothing_to_check", "seed_text",
           "steps_text"]


# ---------------------------------------------------------------- header


@dataclass(frozen=True, slots=True)
class Subjects:
    """How many fixture values the suite checks: device outputs and observers."""

    outputs: int
    observers: int


def count_subjects(nodeids: Iterable[str]) -> Subjects:
    """Returns how many device-output and observer values the items ``nodeids`` check."""
    keys: dict[str, bool] = {}
    for nodeid in nodeids:
        parts = nodeid.split("::")
        if SUITE_NAME not in parts[:2]:
            continue
        at = parts.index(SUITE_NAME)
        # A parameter id may hold "::" too: all after the group is one item's name and id.
        item = "::".join(parts[at + 2:])
        if item and parts[at + 1] != IMPL_GROUP:
            name, bracket, param = item.partition("[")
            key = "::".join(parts[: at + 2]) + bracket + param
            keys[key] = keys.get(key, False) or name == OBSERVER_CHECKS[0][1]
    observers = sum(keys.values())
    return Subjects(len(keys) - observers, observers)


def header_line(options: AuxcheckOptions, subjects: Subjects) -> str:
    """Returns the one header line: version, then its parts, comma-separated.

    Implementation, what is checked, profile, and the Hypothesis seed; after a semicolon,
    the kinds of step the outputs are judged on.
    """
    from auxcheck._suite.session import profile_text

    parts = [f"impl={_impl_text(options)}", _subjects_text(subjects),
             f"profile={profile_text(options)}", seed_text(options)]
    return f"auxcheck {__version__}: {', '.join(parts)}; {steps_text(options)}"


def steps_text(options: AuxcheckOptions) -> str:
    """Returns the header's word on the steps the outputs are judged on: ``steps: KIND, ...``.

    Speculative decoding is among them only where the run declares it
    (``--auxcheck-speculative``): stock SGLang runs no observer under it. Every third
    overlapped step holds a grammar request, whose sampling SGLang delays.
    """
    from auxcheck._runtime.loop import DELAYED
    from auxcheck._runtime.scheduler import step_kinds

    kinds = [kind.value for kind in step_kinds(speculative=options.speculative)]
    return f"steps: {', '.join([*kinds, DELAYED])}"


def _impl_text(options: AuxcheckOptions) -> str:
    from auxcheck._suite.session import describe_impl, impl_fraction

    impl = describe_impl(options.impl)
    if impl_fraction(options) > 1:
        impl = impl.replace("(auto)", f"(auto, 1/{impl_fraction(options)} of the examples)")
    return impl


def _subjects_text(subjects: Subjects) -> str:
    found = ", ".join(part for part in (
        plural(subjects.outputs, "device output") if subjects.outputs else "",
        plural(subjects.observers, "observer") if subjects.observers else "") if part)
    return found or "nothing to check"


def seed_text(options: AuxcheckOptions) -> str:
    """Returns the header's word on the Hypothesis seed: ``seed=N``, or ``derandomized``.

    ``--hypothesis-seed=N`` draws the same examples again; a derandomized profile draws
    the same ones on every run.
    """
    return "derandomized" if options.seed is None else f"seed={options.seed}"


# ---------------------------------------------------------------- nothing to check


def nothing_to_check(session: pytest.Session) -> str:
    """Returns the error for a run that found no fixture to check, with the closest names seen.

    A fixture of the right name that gave nothing (defined in a test module, with
    ``params=[]``, or with every rule its items check ignored) is named with where it is
    and why.
    """
    from auxcheck._core.text import close_names

    found = _unused_definitions(session)
    if found:
        return f"--auxcheck found nothing to check: {'; '.join(found)}"
    seen = sorted(fixture_names(session))
    close = sorted({m for name in SUBJECT_FIXTURES
                    for m in close_names(name, seen, limit=3, cutoff=0.75)}
                   | {n for n in seen if n.startswith("auxcheck_") and n not in (
                       *SUBJECT_FIXTURES, STATIC_BUFFERS_FIXTURE, PP_OBSERVER_FIXTURE,
                       BATCH_SIZE_FIXTURE)})
    hint = (f"; closest fixture names seen: {', '.join(close)}" if close
            else "; no fixture with a similar name was seen")
    return ("--auxcheck found nothing to check: no conftest.py under the collected paths "
            f"defines {', '.join(SUBJECT_FIXTURES)}{hint}. Define one of them (or pass "
            "--auxcheck-impl to prove only an append/composite implementation)")


def _unused_definitions(session: pytest.Session) -> list[str]:
    """Returns, for each definition of a checked fixture, why it gave no item."""
    reasons = []
    for name in SUBJECT_FIXTURES:
        for fixturedef in fixture_definitions(session, name):
            path, line = fixture_location(fixturedef, session.path)
            where = f"{path}:{line + 1}"
            if path.name != "conftest.py":
                reasons.append(f"{name} is defined in {where}, a test module; auxcheck reads "
                               "it from conftest.py files only: move it to the conftest.py "
                               "of that folder")
            elif fixturedef.params is not None and not fixturedef.params:
                reasons.append(f"{name} at {where} has params=[], so it gives no value to "
                               "check; give it at least one")
            elif (ignored := _all_ignored(session.config, name)) is not None:
                reasons.append(f"{name} at {where} gives no item: {ignored}")
    return reasons


def _all_ignored(config: pytest.Config, name: str) -> str | None:
    """Says which settings ignore every rule fixture ``name``'s items check; None if some is left."""
    options = config.stash.get(OPTIONS, None)
    if options is None or not options.ignore:
        return None
    checks = DEVICE_CHECKS if name == FIXTURE else OBSERVER_CHECKS
    left = {code for _, _, codes in checks for code in codes} - options.ignore
    if left - STATIC_CODES:
        return None
    rules = "every rule its items check is ignored"
    if left:
        rules += (f" but {' and '.join(sorted(left))}, whose items need the fixture "
                  f"{STATIC_BUFFERS_FIXTURE}")
    sources = _ignore_sources(config)
    return (f"{rules}, by {' and by '.join(sources)}. Remove from "
            f"{'it' if len(sources) == 1 else 'them'} the codes you want checked "
            "(`auxcheck rules` lists every code)")


def _ignore_sources(config: pytest.Config) -> list[str]:
    """Names each setting that contributes to the ignored rules, as the user wrote it."""
    sources = []
    try:
        if project_ignore(config.rootpath):
            sources.append(f"[tool.auxcheck] ignore in {config.rootpath / 'pyproject.toml'}")
    except InvalidArgument:
        pass  # already a usage error when the options were read
    if config.getini("auxcheck_ignore"):
        table = " [tool.pytest.ini_options]" if (config.inipath is not None and
                                                 config.inipath.suffix == ".toml") else ""
        sources.append(f"auxcheck_ignore in{table} {config.inipath}")
    if config.getoption("auxcheck_ignore"):
        sources.append("--auxcheck-ignore on the command line")
    return sources
