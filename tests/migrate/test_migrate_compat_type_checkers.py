"""``migrate --compat`` output under pyright (standard mode) and ``mypy --strict``, with the stubs.

Each row is a typed plugin file importing the moved names from their old home in one of the
forms ``--compat`` handles (from-imports beside a name that did not move, module aliases,
dotted uses, the package form, imports in functions and classes, string targets, a ``# noqa``,
a user's own fallback for an alias). Its output must be clean under both type checkers (one
run of each over every row) and bind its names on both layouts (fake SGLangs).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest
from helpers.compat_corpus import LAYOUTS, USES, LayoutRun, bound_uses
from helpers.migration import MOVES
from helpers.paths import TORCH_STANDIN
from helpers.plugin_sources import OLD
from helpers.pyright import run_pyright

from auxcheck.migrate.transform import migrate_source

APPEND = "from sglang.srt.managers.auxiliary_output import append_auxiliary_output"
ROWS = {
    "from-import beside append_auxiliary_output": (f"""\
        from __future__ import annotations

        {APPEND}
        from {OLD} import CommittedTokens, DeviceAuxiliaryOutput


        def merge(a: DeviceAuxiliaryOutput | None, b: DeviceAuxiliaryOutput | None
                  ) -> DeviceAuxiliaryOutput | None:
            return append_auxiliary_output(a, b)


        {USES} = (CommittedTokens, DeviceAuxiliaryOutput, append_auxiliary_output)
        """, ("CommittedTokens", "DeviceAuxiliaryOutput", "append_auxiliary_output")),
    "module alias for moved and staying names": (f"""\
        {APPEND}
        import {OLD} as so

        {USES} = (so.CommittedTokens, so.SamplingObserver, append_auxiliary_output)
        """, ("CommittedTokens", "SamplingObserver", "append_auxiliary_output")),
    "module alias for moved names only": (f"""\
        import {OLD} as so

        {USES} = (so.HostAuxiliaryOutput,)
        """, ("HostAuxiliaryOutput",)),
    "dotted module": (f"""\
        import {OLD}

        {USES} = ({OLD}.CommittedTokens,)
        """, ("CommittedTokens",)),
    "the package form": (f"""\
        from sglang.srt.sampling import sampling_observer

        {USES} = (sampling_observer.DeviceAuxiliaryOutput,)
        """, ("DeviceAuxiliaryOutput",)),
    "aliased name and noqa": (f"""\
        from {OLD} import (  # noqa: F401
            CommittedTokens as Commit,
            SamplingObserver,
        )

        {USES} = (Commit,)
        """, ("CommittedTokens",)),
    "the file's own TYPE_CHECKING under an alias": (f"""\
        from typing import TYPE_CHECKING as TC

        from {OLD} import CommittedTokens

        {USES} = (CommittedTokens, TC)
        """, ("CommittedTokens", None)),
    "a string target": (f"""\
        from unittest import mock

        from {OLD} import CommittedTokens

        PATCH = mock.patch("{OLD}.CommittedTokens")
        {USES} = (CommittedTokens,)
        """, ("CommittedTokens",)),
    "a user's own fallback for an alias": (f"""\
        try:
            import {OLD} as so
        except ImportError:
            import auxcheck.protocols as so  # type: ignore[no-redef]

        {USES} = (so.CommittedTokens, so.SamplingObserver)
        """, ("CommittedTokens", "SamplingObserver")),
}
FUNCTION_ROWS = {
    "in a function": f"""\
        def uses() -> tuple[object, ...]:
            from {OLD} import CommittedTokens
            import {OLD} as so
            {USES} = (CommittedTokens, so.HostAuxiliaryOutput)
            return {USES}
        """,
    "in a class": f"""\
        class Holder:
            from {OLD} import CommittedTokens

            value = CommittedTokens
        """,
}
MYPY_ERROR = re.compile(r"^(?P<path>[^:\s]+)\.py:\d+: error: ")


def _outputs() -> dict[str, str]:
    """Returns {row id: its --compat output}."""
    inputs = {name: text for name, (text, _) in ROWS.items()} | FUNCTION_ROWS
    outputs = {}
    for name, text in inputs.items():
        result = migrate_source(dedent(text), moves=MOVES, compat=True)
        assert result.status == "changed", (name, result.reason)
        outputs[name] = result.text
    return outputs


def _stem(name: str) -> str:
    return re.sub(r"\W+", "_", name).strip("_")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Returns {row id: the file holding its --compat output}."""
    folder = tmp_path_factory.mktemp("compat-typed")
    files = {}
    for name, text in _outputs().items():
        files[name] = folder / f"{_stem(name)}.py"
        files[name].write_text(text)
    return files


@pytest.fixture(scope="module")
def pyright_found(written: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
                  ) -> dict[str, list[str]]:
    """Returns {row id: pyright's diagnostics on its output}, from one run."""
    run = run_pyright(list(written.values()), root=tmp_path_factory.mktemp("compat-pyright"),
                      settings={"stubPath": str(TORCH_STANDIN)})
    return {name: [str(found) for found in run.in_file(path)] for name, path in written.items()}


@pytest.fixture(scope="module")
def mypy_found(written: dict[str, Path]) -> dict[str, list[str]]:
    """Returns {row id: mypy --strict's errors on its output}, from one run."""
    folder = next(iter(written.values())).parent
    (folder / "mypy.ini").write_text("[mypy]\n")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["MYPYPATH"] = str(TORCH_STANDIN)
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
         "--python-version", "3.10", "--config-file", "mypy.ini", "--show-error-codes",
         *(path.name for path in written.values())],
        cwd=folder, env=env, capture_output=True, text=True, check=False, timeout=300)
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr
    stems = {path.stem: name for name, path in written.items()}
    found: dict[str, list[str]] = {name: [] for name in written}
    for line in completed.stdout.splitlines():
        if (match := MYPY_ERROR.match(line)) and match["path"] in stems:
            found[stems[match["path"]]].append(line)
    return found


ALL_ROWS = [*ROWS, *FUNCTION_ROWS]


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL_ROWS)
def test_compat_output_is_clean_under_pyright_standard(
        name: str, pyright_found: dict[str, list[str]]) -> None:
    """pyright reports nothing on the output: no name possibly unbound, no old import seen."""
    assert pyright_found[name] == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL_ROWS)
def test_compat_output_is_clean_under_mypy_strict(
        name: str, mypy_found: dict[str, list[str]]) -> None:
    """mypy --strict reports nothing on the output."""
    assert mypy_found[name] == []


@pytest.mark.parametrize("name", list(ROWS))
def test_compat_output_binds_its_names_on_both_layouts(name: str) -> None:
    """At run time the output imports from whichever layout the fake SGLang has (the new one
    only, for a file importing ``append_auxiliary_output``, which SGLang added in 0.5.20)."""
    text = _outputs()[name]
    for layout in ("new",) if APPEND in ROWS[name][0] else LAYOUTS:
        assert bound_uses(text, layout, function=False) == LayoutRun((ROWS[name][1],), ())


def test_compat_output_in_a_function_binds_its_names_on_both_layouts() -> None:
    """An import in a function falls back to the old layout when the function runs."""
    text = _outputs()["in a function"]
    for layout in LAYOUTS:
        assert bound_uses(text, layout, function=True) == LayoutRun(
            (("CommittedTokens", "HostAuxiliaryOutput"),), ())
