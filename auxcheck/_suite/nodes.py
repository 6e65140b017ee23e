"""The suite's collectors and items: the ``auxcheck`` collector, one group per fixture value, the items.

Items are real ``pytest.Function`` objects, so the user's fixtures, parametrisation, ``-k``,
``-m auxcheck`` and pytest-xdist all apply. What they run lives in :mod:`auxcheck._suite.item_runs`,
imported when an item runs or a group is collected.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from auxcheck._suite.failures import item_failure_text
from auxcheck._suite.fixture_values import Visible, fixture_location, fixture_value
from auxcheck._suite.names import (
    BATCH_SIZE_FIXTURE,
    DEVICE_CHECKS,
    FIXTURE,
    IMPL_GROUP,
    IMPORT_CODES,
    IMPORTS_ITEM,
    NOTHING_ITEM,
    OBSERVER_CHECKS,
    OBSERVER_FIXTURES,
    PP_MARK,
    PP_OBSERVER_FIXTURE,
    STATIC_BUFFERS_FIXTURE,
    STATIC_CODES,
)
from auxcheck._suite.options import OPTIONS, AuxcheckOptions
from auxcheck._suite.pytest_compat import (
    fixture_callspec,
    fixture_defs_at,
    fixture_visible,
    id_callspec,
    is_parameter_set,
)

if TYPE_CHECKING:
    from auxcheck._suite.pytest_compat import FixtureDef

__all__ = [
    "AuxcheckFunction",
    "AuxcheckSuite",
    "DeviceGroup",
    "GroupSubject",
    "ImplGroup",
    "ImportScanItem",
    "NothingToCheckItem",
]


# ---------------------------------------------------------------- the auxcheck collector


class AuxcheckSuite(pytest.Collector):
    """The ``auxcheck`` collector: device-output groups, plus at session level the impl and imports."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        """Returns one group per value of the fixture defined here (and the session items)."""
        options = self.config.stash[OPTIONS]
        nodes: list[pytest.Item | pytest.Collector] = []
        for fixturedef in fixture_defs_at(self._owner, FIXTURE)[-1:]:
            nodes += _device_groups(self, fixturedef)
        for name, kind in OBSERVER_FIXTURES.items():
            for fixturedef in fixture_defs_at(self._owner, name)[-1:]:
                group = getattr(fixturedef.func, "__name__", name)
                nodes.append(DeviceGroup.from_parent(
                    self, name=group, fixturedef=fixturedef,
                    subject=GroupSubject(OBSERVER_CHECKS, fixturedef.argname, kind)))
        if isinstance(self.parent, pytest.Session):
            from auxcheck._suite import item_runs

            impl = item_runs.describe_impl(options.impl, short=True)
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
    return [DeviceGroup.from_parent(suite, name=name, fixturedef=fixturedef,
                                    subject=GroupSubject(DEVICE_CHECKS, FIXTURE))]


# ---------------------------------------------------------------- fixture parameters


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

    given = getattr(param, "id", None) if is_parameter_set(param) else None
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


def _param_value(param: object) -> object:
    return param.values[0] if is_parameter_set(param) else param  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class GroupSubject:
    """What a group's items judge: a device output (``kind`` None) or an observer of ``kind``,
    the checks they run and the fixture whose values they take."""

    checks: tuple[tuple[str, str, tuple[str, ...]], ...]
    fixture: str
    kind: str | None = None
    """The observer's kind (``sampling``, ``forward``); None for a device output."""

    @property
    def is_observer(self) -> bool:
        """Returns True when the items judge an observer, driven through the step loop."""
        return self.kind is not None

    def graph_buffers_own(self, key: str) -> bool:
        """Returns True for a static-memory code judged without user buffers: an observer's
        AUX110 (the loop's own CUDA-graph outputs are registered)."""
        return self.is_observer and key == "AUX110"

    def callobj(self, key: str, group: str, names: dict[str, str],
                visible: Visible) -> Callable[..., None]:
        """Returns the test function of one item of this subject."""
        if self.kind is None:
            return _device_callobj(key, group, names, visible)
        return _observer_callobj(key, self.kind, self.fixture, group, names, visible)


class DeviceGroup(pytest.Collector):
    """The per-rule items for every value of one fixture: ``auxcheck_device_output``, or an
    observer fixture (``subject`` says which), each item a rule.

    Items are ``RULE-slug[param]``, one set per fixture value in order, the value's id
    last as in any parametrised pytest test.
    """

    def __init__(self, *, fixturedef: FixtureDef[Any], subject: GroupSubject,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fixturedef = fixturedef
        self.subject = subject

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        """Returns one item per rule and value (AUX11x only with ``auxcheck_static_buffers``)."""
        params = self.fixturedef.params
        indices: Sequence[int | None] = [None] if params is None else range(len(params))
        ids = _param_ids(self.fixturedef)
        return [item for index in indices for item in self._items(index, ids)]

    def _items(self, index: int | None, ids: list[str]) -> list[AuxcheckFunction]:
        """Returns the items that check the fixture value at ``index`` (None: not parametrised)."""
        options = self.config.stash[OPTIONS]
        subject = self.subject
        has_buffers = fixture_visible(self, STATIC_BUFFERS_FIXTURE)
        has_observer = fixture_visible(self, PP_OBSERVER_FIXTURE)
        has_size = fixture_visible(self, BATCH_SIZE_FIXTURE)
        callspec = self._callspec(index, ids)
        suffix = "" if callspec is None else f"[{callspec.id}]"
        names = {key: f"{name}{suffix}" for key, name, _ in subject.checks}
        items = []
        for key, name, codes in subject.checks:
            if set(codes) <= options.ignore or (set(codes) <= STATIC_CODES and not has_buffers
                                                and not subject.graph_buffers_own(key)):
                continue
            item = AuxcheckFunction.from_parent(
                self, name=f"{name}{suffix}", originalname=name, callspec=callspec,
                callobj=subject.callobj(key, f"{self.nodeid}{suffix}", names,
                                        Visible(has_buffers, has_observer, has_size)))
            item.extra_keyword_matches.update(codes)
            items.append(item)
        return items

    def _callspec(self, index: int | None, ids: list[str]) -> Any:
        """Returns the parametrisation that selects the fixture value at ``index``, if any."""
        params = self.fixturedef.params
        if index is None or params is None:
            return None
        param = params[index]
        marks = list(getattr(param, "marks", ())) if is_parameter_set(param) else []
        return fixture_callspec(self.fixturedef, self.subject.fixture, index,
                                _param_value(param), ids[index], marks)


def _context(request: pytest.FixtureRequest, group: str, names: dict[str, str]) -> Any:
    from auxcheck._suite import item_runs

    return item_runs.ItemContext(group, names, request.node.user_properties,
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
                    visible: Visible) -> Callable[..., None]:
    """Returns the test function of one device-output item (it requests the user's fixture)."""

    def auxcheck_device_output_check(request: pytest.FixtureRequest,
                                     auxcheck_device_output: Any) -> None:
        from auxcheck._suite import item_runs

        buffers, observer, size = visible.values(request)
        mark = request.node.get_closest_marker(PP_MARK)
        item_runs.run_device_check(code, auxcheck_device_output, options=_options(request),
                                   context=_context(request, group, names),
                                   static_buffers=buffers, pp_observer=observer,
                                   batch_size=size,
                                   pp_mark=None if mark is None else (mark.args, mark.kwargs))

    return auxcheck_device_output_check


def _observer_callobj(key: str, kind: str, fixture: str, group: str, names: dict[str, str],
                      visible: Visible) -> Callable[..., None]:
    """Returns the test function of one observer item, driven through the step loop."""

    def auxcheck_observer_check(request: pytest.FixtureRequest) -> None:
        from auxcheck._suite import item_runs

        buffers, _, size = visible.values(request)
        item_runs.run_observer_check(key, kind, fixture_value(request, fixture),
                                     context=_context(request, group, names),
                                     static_buffers=buffers, batch_size=size,
                                     speculative=_options(request).speculative)

    return auxcheck_observer_check


def _options(request: pytest.FixtureRequest) -> AuxcheckOptions:
    return request.config.stash[OPTIONS]


# ---------------------------------------------------------------- implementation


class ImplGroup(pytest.Collector):
    """The append/composite properties and the state machine, against the chosen implementation.

    Items are ``RULE-property[impl]``: the implementation's name is the parameter.
    """

    def __init__(self, *, impl: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.impl = impl

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        """Returns one item per property (named by its first rule code) and the machine."""
        from auxcheck._suite.item_runs import property_label, property_names

        ignore = self.config.stash[OPTIONS].ignore
        checks = [(name, property_label(name, codes), codes)
                  for name, codes in property_names() if not set(codes) <= ignore]
        checks.append(("machine", "machine-append-copy-consume", ()))
        callspec = id_callspec(self.impl)
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
        from auxcheck._suite import item_runs

        item_runs.run_impl_check(name, options=_options(request),
                              context=_context(request, IMPL_GROUP, names))

    return auxcheck_impl_check


# ---------------------------------------------------------------- items


def _domain(item: pytest.Item) -> str:
    """Returns ``group::name[id]``: the names of the nodes below the ``auxcheck`` collector,
    read from the nodes (an id, the user's text, may hold ``auxcheck::`` too)."""
    names = [item.name]
    node = item.parent
    while node is not None and not isinstance(node, AuxcheckSuite):
        names.append(node.name)
        node = node.parent
    return "::".join(reversed(names)) if node is not None else item.name



class AuxcheckFunction(pytest.Function):
    """An auxcheck item: a pytest function whose failures read like a contract finding."""

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Returns the item's location: the user's fixture for device items, and its id."""
        domain = _domain(self)
        if isinstance(self.parent, DeviceGroup):
            return (*fixture_location(self.parent.fixturedef, self.path), domain)
        return self.path, 0, domain

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str:
        """Returns the failure as text: the findings of a violation, else the error itself.

        Never pytest's traceback: its long form prints each frame's arguments, running
        the ``__repr__`` of the plugin's objects they hold (a ``SystemExit`` there is an
        INTERNALERROR). The last line is the command that re-runs the item, drawing the
        same examples.
        """
        from auxcheck._suite.reruns import rerun_command

        return item_failure_text(excinfo.value, rerun=rerun_command(self))


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
        from auxcheck._suite import item_runs

        item_runs.run_import_scan(self.config.stash[OPTIONS])

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Returns the item's location: the rootdir and ``imports``."""
        return self.path, 0, f"{IMPORTS_ITEM} ({', '.join(IMPORT_CODES)})"

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str:
        """Returns the findings as text, one per line with its location, then the command
        that re-runs the scan."""
        from auxcheck._suite.reruns import rerun_command

        return item_failure_text(excinfo.value, rerun=rerun_command(self))
