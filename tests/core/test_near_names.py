"""Tests for the near-name rule and the reading of failed imports (auxcheck/_core/text.py,
auxcheck/_core/imports.py) that validate, the guard and the release check share."""

from __future__ import annotations

import pytest

from auxcheck._core.imports import is_missing
from auxcheck._core.text import close_names, did_you_mean


@pytest.mark.parametrize(("name", "candidates", "near"), [
    pytest.param("make_observr", ["make_observer", "Observer", "make_output"], ["make_observer"],
                 id="a-typo-without-the-far-ones"),
    pytest.param("make_outpus", ["make_output", "make_outputs", "make_observer"],
                 ["make_outputs", "make_output"], id="two-as-close"),
    pytest.param("evicts", ["evict", "evicts"], ["evict"], id="never-the-name-itself"),
    pytest.param("zebra", ["make_output", "Observer"], [], id="nothing-close"),
])
def test_close_names_keeps_only_the_names_about_as_close_as_the_closest(
        name: str, candidates: list[str], near: list[str]) -> None:
    """A far name (ratio more than 0.1 below the closest one) is never suggested beside a typo."""
    assert close_names(name, candidates) == near


@pytest.mark.parametrize(("options", "text"), [
    pytest.param([], "", id="none"),
    pytest.param(["a"], "; did you mean a?", id="one"),
    pytest.param(["a", "b", "c"], "; did you mean a, b or c?", id="three"),
])
def test_did_you_mean_lists_the_options_or_says_nothing(options: list[str], text: str) -> None:
    """One wording for every "did you mean" auxcheck prints."""
    assert did_you_mean(options) == text


def _not_found(name: str | None) -> ModuleNotFoundError:
    return ModuleNotFoundError(f"No module named {name!r}", name=name)


@pytest.mark.parametrize(("error", "module", "missing"), [
    pytest.param(_not_found("pkg.outputs"), "pkg.outputs", True, id="the-module"),
    pytest.param(_not_found("pkg"), "pkg.outputs", True, id="a-package-above"),
    pytest.param(_not_found("orjson"), "pkg.outputs", False, id="a-dependency"),
    pytest.param(_not_found("pkg.out"), "pkg.outputs", False, id="a-prefix-is-not-a-package"),
    pytest.param(_not_found(None), "pkg", False, id="no-name"),
    pytest.param(ImportError("cannot import name 'X'", name="pkg"), "pkg", False,
                 id="not-a-module-not-found"),
])
def test_is_missing_tells_a_wrong_name_from_an_import_that_failed(
        error: BaseException, module: str, missing: bool) -> None:
    """Only the module asked for, or a package above it, not being there makes it missing."""
    assert is_missing(error, module) is missing
