"""pytest's private API, in one adapter: fixture definitions by name, item parametrisation.

pytest lists fixture definitions and builds an item's parametrisation nowhere publicly; the
suite needs both to give each fixture value its own items. Every other module of the suite
uses pytest's public names only. Checked on pytest 8.4.2, 9.0.0, 9.1.0 and 9.2.0 with the
suite's pytester tests (pytest 9.1 ids the rootdir's directory node ``.``, so item ids under it
read ``.::auxcheck::...`` there). Before 8.1 ``getfixturedefs`` took a node id, and before 8.0
there is no ``pytest.Directory``, so pyproject asks for pytest 8.1 or later; a public name
newer than that keeps its private fallback here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest import FixtureDef
else:
    try:
        from pytest import FixtureDef
    except ImportError:  # pytest < 8.0 has no public name for it
        from _pytest.fixtures import FixtureDef

try:
    from pytest import ParameterSet
except ImportError:  # pytest < 9.2 has no public name for it
    from _pytest.mark.structures import ParameterSet  # type: ignore[assignment,unused-ignore]

try:
    from _pytest.python import CallSpec
except ImportError:  # pytest < 9.2 names it CallSpec2
    from _pytest.python import CallSpec2 as CallSpec  # type: ignore[attr-defined,no-redef,unused-ignore]

__all__ = [
    "FixtureDef",
    "fixture_callspec",
    "fixture_definitions",
    "fixture_defs_at",
    "fixture_names",
    "fixture_visible",
    "id_callspec",
    "is_parameter_set",
]

_NO_NODE = object()

_FIXTURE_TABLES = ("_arg2node2fixturedefs", "_arg2nodeid2fixturedefs", "_arg2fixturedefs")
"""Where pytest's fixture manager keeps fixture definitions by name, which it lists nowhere
publicly: pytest 9.1 and later in the first two, older ones in ``_arg2fixturedefs``."""


# ---------------------------------------------------------------- fixture definitions


def fixture_definitions(session: pytest.Session, name: str) -> list[FixtureDef[Any]]:
    """Returns every definition of fixture ``name`` pytest registered, wherever it is."""
    manager = session._fixturemanager
    for attr in _FIXTURE_TABLES:
        table = getattr(manager, attr, {}).get(name)
        if isinstance(table, dict):
            return [d for defs in table.values() for d in defs]
        if table:
            return list(table)
    return []


def fixture_names(session: pytest.Session) -> set[str]:
    """Returns the name of every fixture pytest registered in the session."""
    manager = session._fixturemanager
    names: set[str] = set()
    for attr in _FIXTURE_TABLES:
        names.update(getattr(manager, attr, {}))
    return names


def fixture_defs_at(node: pytest.Collector, name: str) -> list[FixtureDef[Any]]:
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


def fixture_visible(node: pytest.Collector, name: str) -> bool:
    """Returns True when a fixture ``name`` is visible from ``node``."""
    return bool(node.session._fixturemanager.getfixturedefs(name, node))


# ---------------------------------------------------------------- parametrisation


def is_parameter_set(param: object) -> bool:
    """Returns True for a ``pytest.param(...)`` value."""
    return isinstance(param, ParameterSet)


def fixture_callspec(fixturedef: FixtureDef[Any], argname: str, index: int, value: object,
                     param_id: str, marks: list[Any]) -> Any:
    """Returns the parametrisation that selects ``fixturedef``'s value at ``index`` for ``argname``."""
    return CallSpec(params={argname: value}, indices={argname: index},
                    _arg2scope={argname: fixturedef._scope}, _idlist=[param_id], marks=marks)


def id_callspec(param_id: str) -> Any:
    """Returns a parametrisation that only names the item ``[param_id]``."""
    return CallSpec(_idlist=[param_id])
