"""``pytest --auxcheck``: the contract suite as pytest items (does nothing without the flag).

With ``--auxcheck`` the plugin adds an ``auxcheck`` collector to the session (the
implementation's append/composite properties and state machine, and a scan of the
project's imports) and one to every directory whose ``conftest.py`` defines the
fixture ``auxcheck_device_output``, ``auxcheck_sampling_observer`` or
``auxcheck_forward_observer`` (one group of per-rule items per fixture value). Finding
none of them is a usage error, never a pass.
Items are real ``pytest.Function`` objects, so the user's fixtures, parametrisation,
``-k``, ``-m auxcheck`` and pytest-xdist all apply. The checks themselves live in
:mod:`auxcheck._suite.checks`, imported only when the flag is on: this module imports
nothing heavier than pytest, so an installed-but-off plugin costs nothing.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from auxcheck._core.config import project_ignore
from auxcheck._core.text import plural
from auxcheck._core.version import __version__
from auxcheck._suite.options import AuxcheckOptions
from auxcheck.errors import InvalidArgument
from auxcheck.rules import parse_codes

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr
    from _pytest.fixtures import FixtureDef
    from _pytest.reports import CollectReport

__all__ = [
    "DEVICE_CHECKS",
    "FIXTURE",
    "OBSERVER_CHECKS",
    "AuxcheckOptions",
]

FIXTURE = "auxcheck_device_output"
SAMPLING_OBSERVER_FIXTURE = "auxcheck_sampling_observer"
FORWARD_OBSERVER_FIXTURE = "auxcheck_forward_observer"
STATIC_BUFFERS_FIXTURE = "auxcheck_static_buffers"
PP_OBSERVER_FIXTURE = "auxcheck_pp_observer"
BATCH_SIZE_FIXTURE = "auxcheck_batch_size"
OBSERVER_FIXTURES = {SAMPLING_OBSERVER_FIXTURE: "sampling", FORWARD_OBSERVER_FIXTURE: "forward"}
SUBJECT_FIXTURES = (FIXTURE, *OBSERVER_FIXTURES)
"""The fixtures whose values the suite checks; finding none of them is a usage error."""
IMPL_CHOICES = ("auto", "reference", "sglang")
DEFAULT_PROFILE = "auxcheck-default"
SUITE_NAME = "auxcheck"
IMPORTS_ITEM = "imports"
IMPORT_CODES = ("AUX501", "AUX502", "AUX504")
"""The codes the imports item reports; it is left out when all of them are ignored."""
IMPL_GROUP = "impl"

DEVICE_CHECKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("AUX101", "AUX101-copy-to-host-callable", ("AUX101",)),
    ("AUX102", "AUX102-copy-to-host-arity", ("AUX102",)),
    ("AUX103", "AUX103-copy-to-host-result", ("AUX103",)),
    ("AUX104", "AUX104-single-copy", ("AUX104",)),
    ("AUX105", "AUX105-no-copy-bypass", ("AUX105",)),
    ("AUX110", "AUX110-static-buffer-alias", ("AUX110",)),
    ("AUX111", "AUX111-graph-pool-alias", ("AUX111",)),
    ("AUX112", "AUX112-values-at-copy", ("AUX112",)),
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

_OBSERVER_CODES = ("AUX103", "AUX104", "AUX105", "AUX110", "AUX111", "AUX112", "AUX201",
                   "AUX202", "AUX203", "AUX204")
OBSERVER_CHECKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("AUX102", "AUX102-observer-hooks", ("AUX102",)),
    ("AUX101", "AUX101-published-output", ("AUX101",)),
    *(check for check in DEVICE_CHECKS if check[0] in _OBSERVER_CODES),
)
"""(code, item name, rule codes) of every item in an observer group, run through the step loop.

AUX111 appears only where ``auxcheck_static_buffers`` is visible; AUX110 always (the
loop's own CUDA-graph outputs count).
"""

_STATIC_CODES = frozenset({"AUX110", "AUX111"})
_NO_NODE = object()
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


_OPTIONS = pytest.StashKey[AuxcheckOptions]()
_HEADER_SHOWN = pytest.StashKey[bool]()
_SUBJECTS = pytest.StashKey["Subjects"]()


# ---------------------------------------------------------------- options


def impl_value(text: str) -> str:
    """Returns a valid ``--auxcheck-impl`` value; raises ArgumentTypeError naming the choices.

    Only the form is read here (argparse runs it without ``--auxcheck`` too, where the
    plugin imports nothing): ``sglang==X``'s version is checked by :func:`release_value`.
    """
    value = text.strip()
    if value.startswith("sglang==") or value in IMPL_CHOICES or _DOTTED.fullmatch(value):
        return value
    raise argparse.ArgumentTypeError(
        f"invalid value {text!r}; expected auto, reference, sglang, sglang==X.Y.Z (a release "
        "such as sglang==0.5.23) or a dotted module path such as my_plugin.aux_impl"
    )


def release_value(value: str) -> str:
    """Returns ``value`` when it names no release or one release version (``sglang==0.5.23``);
    raises ArgumentTypeError saying what the version should be."""
    if not value.startswith("sglang=="):
        return value
    from auxcheck.properties import release_version

    try:
        release_version(value)
    except InvalidArgument as exc:
        raise argparse.ArgumentTypeError(f"invalid value {value!r}: {exc}") from None
    return value


def profile_value(text: str) -> str:
    """Returns a plausible Hypothesis profile name; raises ArgumentTypeError when empty."""
    value = text.strip()
    if value:
        return value
    raise argparse.ArgumentTypeError(
        f"invalid value {text!r}; expected a Hypothesis settings profile name such as "
        f"{DEFAULT_PROFILE} or auxcheck-ci"
    )


def ignore_value(text: str) -> str:
    """Returns ``text`` when it names rule codes; raises ArgumentTypeError naming the form."""
    try:
        parse_codes([text])
    except InvalidArgument as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


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
    group.addoption("--auxcheck-results", default=None, metavar="FILE",
                    help="write every item's outcome to FILE as JSON (for `auxcheck check`)")
    parser.addini("auxcheck_impl", "auxcheck: default for --auxcheck-impl", default="auto")
    parser.addini("auxcheck_profile", "auxcheck: default for --auxcheck-profile",
                  default=DEFAULT_PROFILE)
    parser.addini("auxcheck_ignore", "auxcheck: rule codes or families to leave out",
                  type="args", default=[])
    parser.addini("auxcheck_paths", "auxcheck: paths the import scan covers (default: rootdir)",
                  type="paths", default=[])


def _ini_error(name: str, exc: Exception) -> pytest.UsageError:
    return pytest.UsageError(f"ini option {name}: {exc}")


def _option_or_ini(config: pytest.Config, name: str, parse: Callable[[str], str]) -> str:
    """Returns option ``name`` from the command line (already parsed), else its ini value parsed."""
    value: str | None = config.getoption(name)
    if value is not None:
        return value
    try:
        return parse(str(config.getini(name)))
    except argparse.ArgumentTypeError as exc:
        raise _ini_error(name, exc) from None


def _resolve_options(config: pytest.Config) -> AuxcheckOptions:
    """Returns the run's options: command line over ini, every value validated."""
    impl = _option_or_ini(config, "auxcheck_impl", impl_value)
    try:
        release_value(impl)
    except argparse.ArgumentTypeError as exc:
        given = config.getoption("auxcheck_impl") is not None
        raise (pytest.UsageError(f"argument --auxcheck-impl: {exc}") if given
               else _ini_error("auxcheck_impl", exc)) from None
    profile = _option_or_ini(config, "auxcheck_profile", profile_value)
    try:
        ignore = parse_codes(project_ignore(config.rootpath))
    except InvalidArgument as exc:
        raise pytest.UsageError(str(exc)) from None
    try:
        ignore |= parse_codes([*config.getini("auxcheck_ignore"),
                               *config.getoption("auxcheck_ignore")])
    except InvalidArgument as exc:
        raise _ini_error("auxcheck_ignore", exc) from None
    paths = tuple(Path(p) for p in config.getini("auxcheck_paths")) or (config.rootpath,)
    given = config.getoption("auxcheck_impl") is not None or impl != "auto"
    return AuxcheckOptions(impl, profile, ignore, paths, given)


def pytest_configure(config: pytest.Config) -> None:
    """Registers the ``auxcheck`` marker; with ``--auxcheck``, validates the options."""
    config.addinivalue_line(
        "markers", "auxcheck: an item of auxcheck's contract suite (added by --auxcheck)")
    if not config.getoption("auxcheck"):
        return
    results = config.getoption("auxcheck_results")
    if results and not hasattr(config, "workerinput"):  # the xdist controller, or no xdist
        config.pluginmanager.register(ResultWriter(_results_path(results)), "auxcheck-results")
    options = _resolve_options(config)
    from auxcheck._suite import checks as _suite

    _suite.validate_options(options)
    config.stash[_OPTIONS] = options


def _results_path(text: str) -> Path:
    """Returns the ``--auxcheck-results`` file; raises UsageError when it cannot be written."""
    import os

    path = Path(text)
    folder = path.parent
    problem = ("does not exist" if not folder.is_dir() else "is not writable"
               if not os.access(folder, os.W_OK) else "is a folder" if path.is_dir() else None)
    if problem is None:
        return path
    what = path if problem == "is a folder" else f"the folder {folder}"
    raise pytest.UsageError(f"--auxcheck-results: cannot write {path}: {what} {problem}")


class ResultWriter:
    """Records each item's outcome and writes them as JSON when the session ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.outcomes: dict[str, dict[str, str]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keeps the item's worst outcome so far: a failed setup is an error."""
        known = self.outcomes.get(report.nodeid)
        if known is not None and known["outcome"] != "passed":
            return
        outcome = report.outcome if report.when == "call" else {
            "failed": "error", "skipped": "skipped"}.get(report.outcome)
        if outcome is None:
            return
        text = report.longreprtext if report.outcome != "passed" else ""
        # pytest-xdist puts a "[gw0] linux -- Python ..." line above the failure text.
        lines = [line for line in text.splitlines() if line.strip() and not line.startswith("[gw")]
        self.outcomes[report.nodeid] = {"nodeid": report.nodeid, "outcome": outcome,
                                        "message": lines[0] if lines else ""}

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Writes ``{"items": [...]}`` to the results file (a write that fails is an error)."""
        import json

        try:
            self.path.write_text(json.dumps({"items": list(self.outcomes.values())}, indent=1))
        except OSError as exc:
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"ERROR: --auxcheck-results: cannot write {self.path}: "
                                    f"{exc.strerror or exc}", red=True)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR


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
        if len(parts) == at + 3 and parts[at + 1] != IMPL_GROUP:
            name, bracket, param = parts[-1].partition("[")
            key = "::".join(parts[: at + 2]) + bracket + param
            keys[key] = keys.get(key, False) or name == OBSERVER_CHECKS[0][1]
    observers = sum(keys.values())
    return Subjects(len(keys) - observers, observers)


def header_line(options: AuxcheckOptions, subjects: Subjects) -> str:
    """Returns the one header line: version, implementation, what is checked, profile."""
    from auxcheck._suite import checks as _suite

    found = ", ".join(part for part in (
        plural(subjects.outputs, "device output") if subjects.outputs else "",
        plural(subjects.observers, "observer") if subjects.observers else "") if part)
    impl = _suite.describe_impl(options.impl)
    if _suite.impl_fraction(options) > 1:
        impl = impl.replace("(auto)", f"(auto, 1/{_suite.impl_fraction(options)} of the examples)")
    return (f"auxcheck {__version__}: impl={impl}, {found or 'nothing to check'}, "
            f"profile={_suite.profile_text(options)}")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Counts the device outputs collected, before ``-k`` / ``-m`` deselect any item.

    Raises pytest.UsageError when nothing is there to check: no output and no observer
    fixture (a misnamed fixture must never read as a pass), unless ``--auxcheck-impl``
    names the implementation to prove.
    """
    options = config.stash.get(_OPTIONS, None)
    if options is None:
        return
    config.stash[_SUBJECTS] = count_subjects(i.nodeid for i in items)
    subjects = any(isinstance(i.parent, DeviceGroup) for i in items)
    if subjects or options.impl_given:
        return
    if not hasattr(config, "workerinput"):
        raise pytest.UsageError(_nothing_to_check(session))
    # A UsageError on a pytest-xdist worker reads as a crash of some item: every worker
    # runs one failing item instead, with the same message.
    items[:] = [NothingToCheckItem.from_parent(session, name=NOTHING_ITEM,
                                               message=_nothing_to_check(session))]


def _nothing_to_check(session: pytest.Session) -> str:
    """Returns the error for a run that found no fixture to check, with the closest names seen.

    A fixture of the right name that gave nothing (defined in a test module, or with
    ``params=[]``) is named with where it is and why.
    """
    import difflib

    found = _unused_definitions(session)
    if found:
        return f"--auxcheck found nothing to check: {'; '.join(found)}"
    seen = sorted(_fixture_names(session))
    close = sorted({m for name in SUBJECT_FIXTURES
                    for m in difflib.get_close_matches(name, seen, n=3, cutoff=0.75)}
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
        for fixturedef in _definitions(session, name):
            path, line = _fixture_location(fixturedef, session.path)
            where = f"{path}:{line + 1}"
            if path.name != "conftest.py":
                reasons.append(f"{name} is defined in {where}, a test module; auxcheck reads "
                               "it from conftest.py files only: move it to the conftest.py "
                               "of that folder")
            elif fixturedef.params is not None and not fixturedef.params:
                reasons.append(f"{name} at {where} has params=[], so it gives no value to "
                               "check; give it at least one")
    return reasons


_FIXTURE_TABLES = ("_arg2node2fixturedefs", "_arg2nodeid2fixturedefs", "_arg2fixturedefs")
"""Where pytest's fixture manager keeps fixture definitions by name, which it lists nowhere
publicly: pytest 9.1 and later in the first two, older ones in ``_arg2fixturedefs``."""


def _definitions(session: pytest.Session, name: str) -> list[FixtureDef[Any]]:
    """Returns every definition of fixture ``name`` pytest registered, wherever it is."""
    manager = session._fixturemanager
    for attr in _FIXTURE_TABLES:
        table = getattr(manager, attr, {}).get(name)
        if isinstance(table, dict):
            return [d for defs in table.values() for d in defs]
        if table:
            return list(table)
    return []


def _fixture_names(session: pytest.Session) -> Iterable[str]:
    manager = session._fixturemanager
    names: set[str] = set()
    for attr in _FIXTURE_TABLES:
        names.update(getattr(manager, attr, {}))
    return names


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Lists the notes (AUX106) the passing items recorded, once each."""
    if _OPTIONS not in config.stash:
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
    options = config.stash.get(_OPTIONS, None)
    if options is None:
        return []
    return [header_line(options, config.stash.get(_SUBJECTS, Subjects(0, 0)))]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: Sequence[str]) -> None:
    """Writes the header line on the pytest-xdist controller, once, from a worker's ids."""
    config: pytest.Config = node.config
    options = config.stash.get(_OPTIONS, None)
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
) -> Generator[None, CollectReport, CollectReport]:
    """Appends an ``auxcheck`` collector to the session and to directories defining the fixture."""
    report = yield
    options = collector.config.stash.get(_OPTIONS, None)
    if options is None or not report.passed:
        return report
    if isinstance(collector, pytest.Session):
        suite = AuxcheckSuite.from_parent(collector, name=SUITE_NAME, nodeid=SUITE_NAME)
    elif isinstance(collector, pytest.Directory) and any(
            _fixture_defs_at(collector, name) for name in SUBJECT_FIXTURES):
        suite = AuxcheckSuite.from_parent(collector, name=SUITE_NAME)
    else:
        return report
    suite.add_marker("auxcheck")
    report.result.append(suite)
    return report


def _fixture_defs_at(node: pytest.Collector, name: str) -> list[FixtureDef[Any]]:
    """Returns the definitions of fixture ``name`` registered on ``node`` itself."""
    defs = node.session._fixturemanager.getfixturedefs(name, node) or ()
    return [d for d in defs if _registered_on(d, node)]


def _registered_on(fixturedef: FixtureDef[Any], node: pytest.Collector) -> bool:
    """Returns True when ``fixturedef`` was registered on ``node`` (a conftest's directory)."""
    at_session = isinstance(node, pytest.Session)
    owner = getattr(fixturedef, "node", _NO_NODE)
    if owner is _NO_NODE:  # pytest < 9.1 scopes conftest fixtures by node id
        return bool(fixturedef.baseid == ("" if at_session else node.nodeid))
    return owner is node or (owner is None and at_session)


def _visible(node: pytest.Collector, name: str) -> bool:
    return bool(node.session._fixturemanager.getfixturedefs(name, node))


class AuxcheckSuite(pytest.Collector):
    """The ``auxcheck`` collector: device-output groups, plus at session level the impl and imports."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        """Returns one group per value of the fixture defined here (and the session items)."""
        options = self.config.stash[_OPTIONS]
        nodes: list[pytest.Item | pytest.Collector] = []
        for fixturedef in _fixture_defs_at(self._owner, FIXTURE)[-1:]:
            nodes += _device_groups(self, fixturedef)
        for name, kind in OBSERVER_FIXTURES.items():
            for fixturedef in _fixture_defs_at(self._owner, name)[-1:]:
                group = getattr(fixturedef.func, "__name__", name)
                nodes.append(ObserverGroup.from_parent(self, name=group, fixturedef=fixturedef,
                                                       kind=kind))
        if isinstance(self.parent, pytest.Session):
            from auxcheck._suite import checks as _suite

            impl = _suite.describe_impl(options.impl, short=True)
            nodes.append(ImplGroup.from_parent(self, name=IMPL_GROUP, impl=impl))
            if not set(IMPORT_CODES) <= options.ignore:
                nodes.append(ImportScanItem.from_parent(self, name=IMPORTS_ITEM))
        return nodes

    @property
    def _owner(self) -> pytest.Collector:
        assert isinstance(self.parent, pytest.Collector)
        return self.parent


def _device_groups(suite: AuxcheckSuite, fixturedef: FixtureDef[Any]) -> list[DeviceGroup]:
    """Returns the group of ``fixturedef``, named after its function."""
    name = getattr(fixturedef.func, "__name__", FIXTURE)
    return [DeviceGroup.from_parent(suite, name=name, fixturedef=fixturedef)]


def _param_ids(fixturedef: FixtureDef[Any]) -> list[str]:
    """Returns the id pytest shows for each fixture parameter, made unique as pytest makes them.

    Equal ids (``ids=["v", "v"]``, ``params=[4, 4]``) get pytest's counter suffix
    (``v0``, ``v1``; ``4_0``, ``4_1``): each value is its own group, judged on its own.
    """
    found = [_param_id(fixturedef, index, param)
             for index, param in enumerate(fixturedef.params or ())]
    counts = Counter(found)
    taken = set(found)
    suffixes: dict[str, int] = {}
    unique = []
    for given in found:
        if counts[given] > 1:
            sep = "_" if given[-1:].isdigit() else ""
            number = suffixes.get(given, 0)
            while f"{given}{sep}{number}" in taken:
                number += 1
            suffixes[given] = number + 1
            given = f"{given}{sep}{number}"
            taken.add(given)
        unique.append(given)
    return unique


def _param_id(fixturedef: FixtureDef[Any], index: int, param: object) -> str:
    """Returns the id pytest would show for one fixture parameter (an ``ids`` callable that
    raises, or an id that is not text, gives the parameter's index, as pytest's default)."""
    from auxcheck._core.plugin_calls import attempt

    given = getattr(param, "id", None) if _is_parameter_set(param) else None
    ids = fixturedef.ids
    if given is None and callable(ids):
        given = attempt(ids, _param_value(param)).value
    elif given is None and isinstance(ids, Sequence) and index < len(ids):
        given = ids[index]
    if given is None and type(_param_value(param)) in (str, int, float, bool):
        given = _param_value(param)  # pytest shows plain values as themselves
    if type(given) in (int, float, bool):
        given = str(given)
    return given if type(given) is str and given else f"{fixturedef.argname}{index}"


def _is_parameter_set(param: object) -> bool:
    from _pytest.mark.structures import ParameterSet

    return isinstance(param, ParameterSet)


def _param_value(param: object) -> object:
    return param.values[0] if _is_parameter_set(param) else param  # type: ignore[attr-defined]


class DeviceGroup(pytest.Collector):
    """The per-rule items for every value of one ``auxcheck_device_output`` fixture.

    Items are ``RULE-slug[param]``, one set per fixture value in order, the value's id
    last as in any parametrised pytest test.
    """

    def __init__(self, *, fixturedef: FixtureDef[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fixturedef = fixturedef

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        """Returns one item per rule and value (AUX11x only with ``auxcheck_static_buffers``)."""
        params = self.fixturedef.params
        indices: Sequence[int | None] = [None] if params is None else range(len(params))
        ids = _param_ids(self.fixturedef)
        return [item for index in indices for item in self._items(index, ids)]

    def _items(self, index: int | None, ids: list[str]) -> list[AuxcheckFunction]:
        """Returns the items that check the fixture value at ``index`` (None: not parametrised)."""
        options = self.config.stash[_OPTIONS]
        has_buffers = _visible(self, STATIC_BUFFERS_FIXTURE)
        has_observer = _visible(self, PP_OBSERVER_FIXTURE)
        has_size = _visible(self, BATCH_SIZE_FIXTURE)
        callspec = self._callspec(index, ids)
        suffix = "" if callspec is None else f"[{callspec.id}]"
        names = {key: f"{name}{suffix}" for key, name, _ in self.checks}
        items = []
        for key, name, codes in self.checks:
            if set(codes) <= options.ignore or (set(codes) <= _STATIC_CODES and not has_buffers
                                                and not self.graph_buffers_own(key)):
                continue
            item = AuxcheckFunction.from_parent(
                self, name=f"{name}{suffix}", originalname=name, callspec=callspec,
                callobj=self._callobj(key, f"{self.nodeid}{suffix}", names,
                                      _Visible(has_buffers, has_observer, has_size)))
            item.extra_keyword_matches.update(codes)
            items.append(item)
        return items

    checks = DEVICE_CHECKS
    fixture = FIXTURE

    def graph_buffers_own(self, key: str) -> bool:
        """Returns True for a static-memory code the group judges without user buffers."""
        return False

    def _callobj(self, key: str, group: str, names: dict[str, str],
                 visible: _Visible) -> Callable[..., None]:
        return _device_callobj(key, group, names, visible)

    def _callspec(self, index: int | None, ids: list[str]) -> Any:
        """Returns the parametrisation that selects the fixture value at ``index``, if any."""
        params = self.fixturedef.params
        if index is None or params is None:
            return None
        param = params[index]
        marks = list(getattr(param, "marks", ())) if _is_parameter_set(param) else []
        return _callspec_type()(
            params={self.fixture: _param_value(param)}, indices={self.fixture: index},
            _arg2scope={self.fixture: self.fixturedef._scope},
            _idlist=[ids[index]], marks=marks)


def _callspec_type() -> Any:
    try:
        from _pytest.python import CallSpec
    except ImportError:  # pytest < 9.2 names it CallSpec2
        from _pytest.python import CallSpec2 as CallSpec  # type: ignore[attr-defined,no-redef,unused-ignore]
    return CallSpec


@dataclass(frozen=True, slots=True)
class FixtureFailed:
    """A fixture the suite reads (an optional one, or an observer) that raised when set up.

    The items that need its value report it (AUX110 for static buffers, AUX403 for the
    PP observer, AUX102 for an observer, the first item for the batch size); the
    others run without it.
    """

    name: str
    error: BaseException


def _fixture_value(request: pytest.FixtureRequest, name: str) -> Any:
    """Returns fixture ``name``'s value, or FixtureFailed when setting it up raised."""
    from auxcheck._core.plugin_calls import passes_through

    try:
        return request.getfixturevalue(name)
    except BaseException as exc:  # the fixture is plugin code: what it raises is reported
        if passes_through(exc):
            raise
        return FixtureFailed(name, exc)


@dataclass(frozen=True, slots=True)
class _Visible:
    """Which optional fixtures an item can see."""

    buffers: bool
    pp_observer: bool
    batch_size: bool

    def values(self, request: pytest.FixtureRequest) -> tuple[Any, Any, Any]:
        """Returns (static buffers, PP observer, batch size) from the fixtures that exist.

        A fixture that raised is a FixtureFailed, reported by the items that need it.
        """
        buffers = _fixture_value(request, STATIC_BUFFERS_FIXTURE) if self.buffers else ()
        observer = _fixture_value(request, PP_OBSERVER_FIXTURE) if self.pp_observer else None
        size = _fixture_value(request, BATCH_SIZE_FIXTURE) if self.batch_size else None
        return buffers, observer, size


def _context(request: pytest.FixtureRequest, group: str, names: dict[str, str]) -> Any:
    from auxcheck._suite import checks as _suite

    return _suite.ItemContext(group, names, request.node.user_properties,
                              _selected(request.node))


_SELECTED = pytest.StashKey[frozenset[str]]()


def _selected(item: pytest.Item) -> frozenset[str]:
    """Returns the names of the items of ``item``'s group that this run selected (after ``-k``)."""
    parent = item.parent
    if parent is None:
        return frozenset({item.name})
    if _SELECTED not in parent.stash:
        parent.stash[_SELECTED] = frozenset(i.name for i in item.session.items
                                            if i.parent is parent)
    return parent.stash[_SELECTED]


def _device_callobj(code: str, group: str, names: dict[str, str],
                    visible: _Visible) -> Callable[..., None]:
    """Returns the test function of one device-output item (it requests the user's fixture)."""

    def auxcheck_device_output_check(request: pytest.FixtureRequest,
                                     auxcheck_device_output: Any) -> None:
        from auxcheck._suite import checks as _suite

        buffers, observer, size = visible.values(request)
        _suite.run_device_check(code, auxcheck_device_output, options=_options(request),
                                context=_context(request, group, names),
                                static_buffers=buffers, pp_observer=observer, batch_size=size)

    return auxcheck_device_output_check


class ObserverGroup(DeviceGroup):
    """The per-rule items for every value of one observer fixture, driven through the step loop."""

    checks = OBSERVER_CHECKS

    def __init__(self, *, kind: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kind = kind
        self.fixture = self.fixturedef.argname

    def graph_buffers_own(self, key: str) -> bool:
        """Returns True for AUX110: the loop's own CUDA-graph outputs are registered."""
        return key == "AUX110"

    def _callobj(self, key: str, group: str, names: dict[str, str],
                 visible: _Visible) -> Callable[..., None]:
        fixture, kind = self.fixture, self.kind

        def auxcheck_observer_check(request: pytest.FixtureRequest) -> None:
            from auxcheck._suite import checks as _suite

            buffers, _, size = visible.values(request)
            _suite.run_observer_check(key, kind, _fixture_value(request, fixture),
                                      context=_context(request, group, names),
                                      static_buffers=buffers, batch_size=size)

        return auxcheck_observer_check


def _fixture_location(fixturedef: FixtureDef[Any], default: Path) -> tuple[Path, int]:
    """Returns the file and 0-based line where the user's fixture is defined."""
    code = getattr(fixturedef.func, "__code__", None)
    if code is None:
        return default, 0
    return Path(code.co_filename), code.co_firstlineno - 1


def _options(request: pytest.FixtureRequest) -> AuxcheckOptions:
    return request.config.stash[_OPTIONS]


class ImplGroup(pytest.Collector):
    """The append/composite properties and the state machine, against the chosen implementation.

    Items are ``RULE-property[impl]``: the implementation's name is the parameter.
    """

    def __init__(self, *, impl: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.impl = impl

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        """Returns one item per property (named by its first rule code) and the machine."""
        from auxcheck._suite import checks as _suite

        ignore = self.config.stash[_OPTIONS].ignore
        checks = [(name, f"{codes[0]}-{name.removeprefix('check_').replace('_', '-')}", codes)
                  for name, codes in _suite.property_names() if not set(codes) <= ignore]
        checks.append(("machine", "machine-append-copy-consume", ()))
        callspec = _callspec_type()(_idlist=[self.impl])
        names: dict[str, str] = {}
        for _, label, codes in checks:  # a rule's item is its first property's
            if codes:
                names.setdefault(codes[0], f"{label}[{self.impl}]")
        items = []
        for name, label, codes in checks:
            item = AuxcheckFunction.from_parent(self, name=f"{label}[{self.impl}]",
                                                originalname=label, callspec=callspec,
                                                callobj=_impl_callobj(name, names))
            item.extra_keyword_matches.update(codes)
            items.append(item)
        return items


def _impl_callobj(name: str, names: dict[str, str]) -> Callable[..., None]:
    """Returns the test function of one implementation item (``names``: the item of each rule)."""

    def auxcheck_impl_check(request: pytest.FixtureRequest) -> None:
        from auxcheck._suite import checks as _suite

        _suite.run_impl_check(name, options=_options(request),
                              context=_context(request, IMPL_GROUP, names))

    return auxcheck_impl_check


class AuxcheckFunction(pytest.Function):
    """An auxcheck item: a pytest function whose failures read like a contract finding."""

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Returns the item's location: the user's fixture for device items, and its id."""
        domain = self.nodeid.rpartition(f"{SUITE_NAME}::")[2] or self.name
        if isinstance(self.parent, DeviceGroup):
            return (*_fixture_location(self.parent.fixturedef, self.path), domain)
        return self.path, 0, domain

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        """Returns the failure as text: the findings of a violation, else the error itself.

        Never pytest's traceback: its long form prints each frame's arguments, running
        the ``__repr__`` of the plugin's objects they hold (a ``SystemExit`` there is an
        INTERNALERROR).
        """
        return failure_text(excinfo.value)


def failure_text(exc: BaseException) -> str:
    """Returns how an auxcheck item's failure reads: findings, or the error and where it arose.

    A failure that is no finding (pytest-timeout's message, an error inside auxcheck)
    shows its last frames as ``file:line in function`` and its message, read under the
    guard: no frame's locals or arguments, no repr of a plugin's object.
    """
    import traceback

    from auxcheck._core.plugin_calls import attempt, kind_name, lookup
    from auxcheck.errors import ContractViolation

    if issubclass(type(exc), ContractViolation):
        from auxcheck._suite import checks as _suite

        return _suite.failure_text(exc)  # type: ignore[arg-type]
    text = attempt(str, exc).value
    message = text if type(text) is str else "<str() of the error raised>"
    if lookup(exc, "pytrace").value is False:  # pytest.fail(..., pytrace=False)
        return message
    frames = traceback.extract_tb(exc.__traceback__)[-_FRAMES:]
    lines = [f"{f.filename}:{f.lineno} in {f.name}" for f in frames]
    return "\n".join([*lines, f"{kind_name(exc)}: {message}"])


_FRAMES = 8
"""How many of the innermost frames a failure that is no finding shows."""

NOTHING_ITEM = "auxcheck-nothing-to-check"


class NothingToCheckItem(pytest.Item):
    """Fails with the nothing-to-check message (the form the error takes under pytest-xdist)."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        """Fails, naming the fixtures looked for and the closest names seen."""
        pytest.fail(self.message, pytrace=False)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Returns the rootdir and the item's name."""
        return self.path, 0, NOTHING_ITEM


class ImportScanItem(pytest.Item):
    """One item that scans the project's sources for old SGLang imports (AUX501, AUX502)
    and for files it cannot read, decode or parse (AUX504)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.extra_keyword_matches.update(IMPORT_CODES)

    def runtest(self) -> None:
        """Raises ContractViolation listing every AUX501/AUX502/AUX504 finding under the scan
        paths."""
        from auxcheck._suite import checks as _suite

        _suite.run_import_scan(self.config.stash[_OPTIONS])

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Returns the item's location: the rootdir and ``imports``."""
        return self.path, 0, f"{IMPORTS_ITEM} ({', '.join(IMPORT_CODES)})"

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        """Returns the findings as text, one per line with its location."""
        return failure_text(excinfo.value)

