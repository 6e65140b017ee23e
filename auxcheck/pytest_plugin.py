"""``pytest --auxcheck``: the contract suite as pytest items (does nothing without the flag).

With ``--auxcheck`` the plugin adds an ``auxcheck`` collector to the session (the
implementation's append/composite properties and state machine, and a scan of the
project's imports) and one to every directory whose ``conftest.py`` defines the
fixture ``auxcheck_device_output``, ``auxcheck_sampling_observer`` or
``auxcheck_forward_observer`` (one group of per-rule items per fixture value). Finding
none of them is a usage error, never a pass.
Items are real ``pytest.Function`` objects, so the user's fixtures, parametrisation,
``-k``, ``-m auxcheck`` and pytest-xdist all apply. This module holds the plugin's hooks
and options; the collectors and items live in :mod:`auxcheck._suite.nodes`, and the
checks themselves in :mod:`auxcheck._suite.item_runs`, imported only when the flag is on:
this module imports nothing heavier than pytest, so an installed-but-off plugin costs
nothing. The suite's item ids work as arguments, and a failing item ends with the command
that re-runs it, drawing the same examples (:mod:`auxcheck._suite.reruns`).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from auxcheck._suite.header import Subjects, count_subjects, header_line, nothing_to_check
from auxcheck._suite.names import (
    DEVICE_CHECKS,
    FIXTURE,
    NOTHING_ITEM,
    OBSERVER_CHECKS,
    SUBJECT_FIXTURES,
    SUITE_NAME,
)
from auxcheck._suite.nodes import AuxcheckFunction, AuxcheckSuite, DeviceGroup, NothingToCheckItem
from auxcheck._suite.options import (
    DEFAULT_PROFILE,
    OPTIONS,
    AuxcheckOptions,
    ignore_value,
    impl_value,
    profile_value,
    resolve_options,
)
from auxcheck._suite.pytest_compat import fixture_defs_at
from auxcheck._suite.reruns import (
    SEED_INPUT,
    Selection,
    left_out,
    selected,
    take_selection,
    unmatched,
)
from auxcheck._suite.results import ResultWriter, record_item, results_path

__all__ = [
    "DEVICE_CHECKS",
    "FIXTURE",
    "OBSERVER_CHECKS",
    "AuxcheckOptions",
]

_HEADER_SHOWN = pytest.StashKey[bool]()
_SUBJECTS = pytest.StashKey[Subjects]()
_SELECTION = pytest.StashKey[Selection]()


# ---------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    """Adds the ``--auxcheck`` option group and its ini settings."""
    group = parser.getgroup("auxcheck", "auxiliary-output contract checks")
    group.addoption("--auxcheck", action="store_true", default=False,
                    help="collect auxcheck's contract suite as test items (marker: auxcheck)")
    group.addoption("--auxcheck-impl", type=impl_value, default=None, metavar="IMPL",
                    help="append/composite implementation to prove: auto (SGLang when "
                         "importable, else the reference), reference, sglang (the installed "
                         "one), sglang==X.Y.Z (that release, read from its wheel, downloaded "
                         "into the cache once; 0.5.20 or later) or a dotted module; ini: "
                         "auxcheck_impl (default: auto)")
    group.addoption("--auxcheck-profile", type=profile_value, default=None, metavar="NAME",
                    help="Hypothesis settings profile for the suite's properties; ini: "
                         f"auxcheck_profile (default: {DEFAULT_PROFILE})")
    group.addoption("--auxcheck-ignore", type=ignore_value, action="append", default=[],
                    metavar="CODES", help="rule codes or families (AUX104, AUX5) to leave "
                                          "out; adds to ini auxcheck_ignore")
    group.addoption("--auxcheck-speculative", action="store_true", default=None,
                    help="your plugin's observers run under speculative decoding or dLLM (a "
                         "model runner that allows it): steps then commit several tokens to "
                         "a request; ini: auxcheck_speculative (default: off, as stock "
                         "SGLang runs no sampling observer under them)")
    group.addoption("--auxcheck-results", default=None, metavar="FILE",
                    help="write every item's outcome to FILE as JSON (for `auxcheck check`)")
    parser.addini("auxcheck_impl", "auxcheck: default for --auxcheck-impl", default="auto")
    parser.addini("auxcheck_profile", "auxcheck: default for --auxcheck-profile",
                  default=DEFAULT_PROFILE)
    parser.addini("auxcheck_ignore", "auxcheck: rule codes or families to leave out",
                  type="args", default=[])
    parser.addini("auxcheck_speculative", "auxcheck: default for --auxcheck-speculative",
                  type="bool", default=False)
    parser.addini("auxcheck_paths", "auxcheck: paths the import scan covers (default: rootdir)",
                  type="paths", default=[])


def pytest_configure(config: pytest.Config) -> None:
    """Registers the ``auxcheck`` marker; with ``--auxcheck``, validates the options."""
    config.addinivalue_line(
        "markers", "auxcheck: an item of auxcheck's contract suite (added by --auxcheck)")
    config.addinivalue_line(
        "markers", "auxcheck_pp(crosses): on a value of auxcheck_device_output: whether it "
                   "crosses pipeline-parallel stages (auxcheck_pp(False): never PP-checked)")
    if not config.getoption("auxcheck"):
        return
    results = config.getoption("auxcheck_results")
    if results and not hasattr(config, "workerinput"):  # the xdist controller, or no xdist
        config.pluginmanager.register(ResultWriter(results_path(results)), "auxcheck-results")
    options = resolve_options(config)
    from auxcheck._suite import item_runs

    item_runs.validate_options(options)
    from auxcheck._suite.session import run_seed

    inherited = getattr(config, "workerinput", {}).get(SEED_INPUT)
    config.stash[OPTIONS] = replace(options, seed=run_seed(
        options, given=config.getoption("hypothesis_seed", None), inherited=inherited))
    selection = take_selection(config)
    if selection is not None:
        config.stash[_SELECTION] = selection


# ---------------------------------------------------------------- seed


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Hands the run's Hypothesis seed to a pytest-xdist worker: all draw what the header says."""
    options = node.config.stash.get(OPTIONS, None)
    if options is not None and options.seed is not None:
        node.workerinput[SEED_INPUT] = options.seed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Runs an auxcheck item with every Hypothesis test in it drawing from the run's seed."""
    options = item.config.stash.get(OPTIONS, None)
    if options is None or not isinstance(item, AuxcheckFunction):
        return (yield)
    from auxcheck._suite.session import seeded

    with seeded(options.seed):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None],
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """With ``--auxcheck-results``, keeps on the report what the item judges, its codes and
    the findings it raised."""
    report = yield
    if item.config.getoption("auxcheck_results", None):
        record_item(report, item, None if call.excinfo is None else call.excinfo.value)
    return report


# ---------------------------------------------------------------- header


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Counts the device outputs collected, before ``-k`` / ``-m`` deselect any item.

    Raises pytest.UsageError when nothing is there to check: no output and no observer
    fixture (a misnamed fixture must never read as a pass), unless ``--auxcheck-impl``
    names the implementation to prove. When item ids name auxcheck items, keeps only
    those of the suite's items (the error then is an id that names none).
    """
    options = config.stash.get(OPTIONS, None)
    if options is None:
        return
    config.stash[_SUBJECTS] = count_subjects(i.nodeid for i in items)
    selection = config.stash.get(_SELECTION, None)
    if selection is not None:
        _keep_selected(session, items, selection)
        return
    subjects = any(isinstance(i.parent, DeviceGroup) for i in items)
    if subjects or options.impl_given:
        return
    _usage_error(session, items, nothing_to_check(session))


def _keep_selected(session: pytest.Session, items: list[pytest.Item],
                   selection: Selection) -> None:
    """Deselects the suite's items that no id on the command line names."""
    missing = unmatched([i.nodeid for i in items], selection)
    if missing:
        _usage_error(session, items, f"--auxcheck: not found: {', '.join(missing)} (no "
                     "auxcheck item has this id; `pytest --auxcheck --co -q` lists them)")
        return
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        named = item.get_closest_marker("auxcheck") is None or selected(item.nodeid, selection)
        (kept if named else dropped).append(item)
    if dropped:
        session.config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _usage_error(session: pytest.Session, items: list[pytest.Item], message: str) -> None:
    """Raises pytest.UsageError with ``message``; on a pytest-xdist worker, fails one item.

    A UsageError on a worker reads as a crash of some item: every worker runs one
    failing item instead, with the same message.
    """
    if not hasattr(session.config, "workerinput"):
        raise pytest.UsageError(message)
    items[:] = [NothingToCheckItem.from_parent(session, name=NOTHING_ITEM, message=message)]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leaves out what a directory holds besides the auxcheck items named on the command line."""
    selection = config.stash.get(_SELECTION, None)
    if selection is not None and left_out(collection_path, selection):
        return True
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    """Lists the notes (AUX106) the passing items recorded, once each."""
    if OPTIONS not in config.stash:
        return
    notes: dict[str, None] = {}
    for report in terminalreporter.stats.get("passed", []):
        for key, text in getattr(report, "user_properties", ()):
            if key == "auxcheck note":
                notes.setdefault(f"{report.nodeid}: {text}")
    if notes:
        terminalreporter.section("auxcheck notes")
        for line in notes:
            terminalreporter.line(line)


def pytest_report_collectionfinish(
    config: pytest.Config, start_path: Path, items: Sequence[pytest.Item]
) -> list[str]:
    """Returns the auxcheck header line once collection is done (nothing without the flag)."""
    options = config.stash.get(OPTIONS, None)
    if options is None:
        return []
    return [header_line(options, config.stash.get(_SUBJECTS, Subjects(0, 0)))]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: Sequence[str]) -> None:
    """Writes the header line on the pytest-xdist controller, once, from a worker's ids."""
    config: pytest.Config = node.config
    options = config.stash.get(OPTIONS, None)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if options is None or reporter is None or config.stash.get(_HEADER_SHOWN, False):
        return
    config.stash[_HEADER_SHOWN] = True
    reporter.ensure_newline()
    reporter.write_line(header_line(options, count_subjects(ids)))


# ---------------------------------------------------------------- collection


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Appends an ``auxcheck`` collector to the session and to directories defining the fixture."""
    report = yield
    options = collector.config.stash.get(OPTIONS, None)
    if options is None or not report.passed:
        return report
    if isinstance(collector, pytest.Session):
        suite = AuxcheckSuite.from_parent(collector, name=SUITE_NAME, nodeid=SUITE_NAME)
    elif isinstance(collector, pytest.Directory) and any(
            fixture_defs_at(collector, name) for name in SUBJECT_FIXTURES):
        suite = AuxcheckSuite.from_parent(collector, name=SUITE_NAME)
    else:
        return report
    suite.add_marker("auxcheck")
    report.result.append(suite)
    return report
