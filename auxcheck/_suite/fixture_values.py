"""The fixtures the suite reads: values for an item, the record of one that raised, its place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from auxcheck._suite.names import BATCH_SIZE_FIXTURE, PP_OBSERVER_FIXTURE, STATIC_BUFFERS_FIXTURE

if TYPE_CHECKING:
    from auxcheck._suite.pytest_compat import FixtureDef

__all__ = ["FixtureFailed", "Visible", "fixture_failed", "fixture_location", "fixture_value"]


@dataclass(frozen=True, slots=True)
class FixtureFailed:
    """A fixture the suite reads (an optional one, or an observer) that raised when set up.

    The items that need its value report it (AUX110 for static buffers, AUX403 for the
    PP observer, AUX102 for an observer, the first item for the batch size); the
    others run without it.
    """

    name: str
    error: BaseException


def fixture_value(request: pytest.FixtureRequest, name: str) -> Any:
    """Returns fixture ``name``'s value, or FixtureFailed when setting it up raised."""
    from auxcheck._core.plugin_calls import passes_through

    try:
        return request.getfixturevalue(name)
    except BaseException as exc:  # the fixture is plugin code: what it raises is reported
        if passes_through(exc):
            raise
        return FixtureFailed(name, exc)


def fixture_failed(value: Any) -> FixtureFailed | None:
    """Returns ``value`` when it records a fixture that raised, else None."""
    return value if type(value) is FixtureFailed else None


@dataclass(frozen=True, slots=True)
class Visible:
    """Which optional fixtures an item can see."""

    buffers: bool
    pp_observer: bool
    batch_size: bool

    def values(self, request: pytest.FixtureRequest) -> tuple[Any, Any, Any]:
        """Returns (static buffers, PP observer, batch size) from the fixtures that exist.

        A fixture that raised is a FixtureFailed, reported by the items that need it.
        """
        buffers = fixture_value(request, STATIC_BUFFERS_FIXTURE) if self.buffers else ()
        observer = fixture_value(request, PP_OBSERVER_FIXTURE) if self.pp_observer else None
        size = fixture_value(request, BATCH_SIZE_FIXTURE) if self.batch_size else None
        return buffers, observer, size


def fixture_location(fixturedef: FixtureDef[Any], default: Path) -> tuple[Path, int]:
    """Returns the file and 0-based line where the user's fixture is defined."""
    code = getattr(fixturedef.func, "__code__", None)
    if code is None:
        return default, 0
    return Path(code.co_filename), code.co_firstlineno - 1
