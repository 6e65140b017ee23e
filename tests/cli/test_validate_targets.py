"""Tests for how ``auxcheck validate`` reads its targets: a mistyped module or attribute is a
usage error that names the close names ("did you mean"), a module that exists and fails its
own import is the plugin's finding, naming the import that failed."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from auxcheck.cli import main

PACKAGE = {
    "tokstats/__init__.py": "",
    "tokstats/outputs.py": (
        "class Observer:\n"
        "    def after_sample(self, *args):\n"
        "        return None\n"
        "def make_observer():\n    return Observer()\n"
        "def make_output():\n    return None\n"
        "def make_outputs():\n    return []\n"),
    "tokstats/helpers.py": "",
    "tokstats/broken.py": "import tokstats_absent_dependency\n",
    "tokstats/misspelt.py": "import tokstats.helperz\n",
}
"""A plugin package ``tokstats`` (the issue's example) with a module whose dependency is
missing and one that imports a sibling under a mistyped name."""


@pytest.fixture
def project(tmp_path: Path) -> Iterator[str]:
    """Returns a folder holding the package ``tokstats``."""
    for name, text in PACKAGE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    yield str(tmp_path)
    for name in [n for n in sys.modules if n.partition(".")[0] == "tokstats"]:
        del sys.modules[name]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["validate", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize(("target", "message"), [
    pytest.param("tokstats.outputs:make_observr",
                 "module 'tokstats.outputs' has no attribute 'make_observr'; did you mean "
                 "tokstats.outputs:make_observer?", id="attribute"),
    pytest.param("tokstats.outputs:Observer.afterr_sample",
                 "'tokstats.outputs:Observer' has no attribute 'afterr_sample'; did you mean "
                 "tokstats.outputs:Observer.after_sample?", id="nested-attribute"),
    pytest.param("tokstats.outputs:make_outpus",
                 "module 'tokstats.outputs' has no attribute 'make_outpus'; did you mean "
                 "tokstats.outputs:make_outputs or tokstats.outputs:make_output?",
                 id="attribute-two-close"),
    pytest.param("tokstats.outputz:make_observer",
                 "cannot import module 'tokstats.outputz': No module named 'tokstats.outputz'; "
                 "did you mean tokstats.outputs:make_observer?", id="module"),
    pytest.param("tokstat.outputs:make_observer",
                 "cannot import module 'tokstat.outputs': No module named 'tokstat'; did you "
                 "mean tokstats.outputs:make_observer?", id="top-level-package"),
    pytest.param("tokstats.outputs:zebra",
                 "module 'tokstats.outputs' has no attribute 'zebra'", id="nothing-close"),
])
def test_a_mistyped_target_is_a_usage_error_naming_the_close_names(
    capsys: pytest.CaptureFixture[str], project: str, target: str, message: str
) -> None:
    """A module or attribute that does not exist exits 2 with the targets it may have meant."""
    status, out, err = run(capsys, "--path", project, target)
    assert (status, out) == (2, "")
    assert err == f"auxcheck validate: error: {message}\n"


@pytest.mark.slow
@pytest.mark.parametrize(("target", "seen", "hint"), [
    pytest.param("tokstats.broken:T",
                 "raised ModuleNotFoundError(\"No module named 'tokstats_absent_dependency'\")",
                 "a dependency of tokstats.broken is missing: install the package that "
                 "provides the module tokstats_absent_dependency (usually `pip install "
                 "tokstats_absent_dependency`)", id="missing-dependency"),
    pytest.param("tokstats.misspelt:T",
                 "raised ModuleNotFoundError(\"No module named 'tokstats.helperz'\")",
                 "tokstats is there but has no module tokstats.helperz; did you mean "
                 "tokstats.helpers?", id="mistyped-import-inside"),
])
def test_a_module_whose_own_import_fails_names_the_failing_import_not_the_target(
    capsys: pytest.CaptureFixture[str], project: str, target: str, seen: str, hint: str
) -> None:
    """A target module that exists but fails its import is AUX101 (exit 1), with the import that
    failed and how to fix it; its name is right, so no "did you mean" for it."""
    status, out, err = run(capsys, "--path", project, "--format", "json", target)
    [finding] = json.loads(out)[0]["findings"]
    assert (status, finding["code"], err) == (1, "AUX101", "")
    assert finding["message"].startswith(f"importing module {target.split(':')[0]!r} ({target}) "
                                         f"{seen}")
    assert finding["hint"] == hint
