"""Tests for the sglang stubs: typed cases under mypy --strict and pyright, SGLang absent and installed.

The cases in tests/typed are type-checked, never run (typeshed's manner): a pass case
must type-check cleanly, and a fail case marks every expected error with
``# type: ignore[code]``; ``--warn-unused-ignores`` turns a missing or different error
into a failure. One mypy run per scenario checks every case; each case's result is its
own test. torch is replaced by a small stand-in stub (tests/typed/_torch) because mypy
needs ~30 s to analyse the real torch cold; benchmarks/bench_stubs.py uses real torch.

pyright (standard mode, ``# type: ignore`` comments not honoured) checks the same cases, one
run per scenario: a pass case gets no diagnostic, and in a fail case pyright reports an
error in each statement mypy's markers mark and nowhere else. A statement pyright cannot
find wrong is listed in :data:`PYRIGHT_MISSES` with the reason, and the list is checked.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import pytest
from helpers.paths import STUBS, TORCH_STANDIN, TYPED
from helpers.pyright import PyrightRun, run_pyright

from auxcheck._releases.stubcheck import PINNED_SGLANG_VERSION, find_stubs_dir

COMMON_CASES = sorted(path.name for path in TYPED.glob("*.py"))
SCENARIO_CASES = {
    scenario: sorted(f"{scenario}/{path.name}" for path in (TYPED / scenario).glob("*.py"))
    for scenario in ("absent", "installed")
}
ERROR_LINE = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")
MYPY_MARKER = re.compile(r"# type: ignore\[[a-z-]+(?:, *[a-z-]+)*\]")

# An untyped SGLang look-alike (no py.typed), laid out like the real one: sglang/srt
# and below are namespace packages. It still defines the names that moved in 0.5.20
# at their old home, and a module the stubs do not cover.
FAKE_SGLANG = {
    "sglang/__init__.py": "Engine = object\n",
    "sglang/srt/server_args.py": "class ServerArgs:\n    port = 30000\n",
    "sglang/srt/managers/auxiliary_output.py": (
        "def append_auxiliary_output(current, output):\n    return output\n"
    ),
    "sglang/srt/sampling/sampling_observer.py": (
        "class CommittedTokens: pass\n"
        "class DeviceAuxiliaryOutput: pass\n"
        "class HostAuxiliaryOutput: pass\n"
        "class SamplingObserver: pass\n"
    ),
}


@dataclass(frozen=True, slots=True)
class MypyRun:
    """The outcome of one mypy run over a scenario's cases."""

    status: int
    output: str
    cases: tuple[str, ...]

    def errors_in(self, case: str) -> list[str]:
        """Returns the error lines mypy reported for ``case``."""
        return [
            line for line in self.output.splitlines()
            if (match := ERROR_LINE.match(line)) and match["path"] == case
        ]


def run_mypy(
    cases: list[str], *, cache_dir: Path, site_dir: Path | None = None, cwd: Path = TYPED
) -> MypyRun:
    """Returns mypy --strict's verdict on ``cases``, with ``site_dir`` importable as if installed.

    A real subprocess, so the site dir reaches mypy exactly as an installed package does:
    mypy asks the interpreter for its sys.path, where PYTHONPATH entries sit with
    site-packages (MYPYPATH would instead outrank every stub package).
    """
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["MYPYPATH"] = str(TORCH_STANDIN)
    if site_dir is not None:
        env["PYTHONPATH"] = str(site_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    config = cache_dir.parent / "mypy.ini"
    config.write_text("[mypy]\n")
    command = [
        sys.executable, "-m", "mypy", "--strict", "--warn-unused-ignores", "--python-version",
        "3.10", "--config-file", str(config), "--cache-dir", str(cache_dir), *cases,
    ]
    completed = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    return MypyRun(completed.returncode, completed.stdout + completed.stderr, tuple(cases))


def _write_fake_sglang(site_dir: Path) -> Path:
    for relative, text in FAKE_SGLANG.items():
        path = site_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return site_dir


Run = TypeVar("Run")


class ScenarioRuns(Generic[Run]):
    """Runs a type checker once per scenario, on first use: SGLang absent, or an untyped
    SGLang installed; ``check(cases, folder, site_dir)`` is one run over the typed cases.

    Lazy, so a pytest-xdist worker only pays for the scenarios its tests need.
    """

    def __init__(self, root: Path, check: Callable[[list[str], Path, Path | None], Run]) -> None:
        self.root = root
        self.check = check
        self.runs: dict[str, Run] = {}

    def __getitem__(self, scenario: str) -> Run:
        if scenario not in self.runs:
            site_dir = _write_fake_sglang(self.root / "site") if scenario == "installed" else None
            self.runs[scenario] = self.check(COMMON_CASES + SCENARIO_CASES[scenario],
                                             self.root / scenario, site_dir)
        return self.runs[scenario]


def scenario_runs(tmp_path_factory: pytest.TempPathFactory, name: str,
                  check: Callable[[list[str], Path, Path | None], Run]) -> ScenarioRuns[Run]:
    """Returns the lazy per-scenario runs of one type checker (skipped where SGLang is
    importable: the 'absent' scenario cannot be set up there)."""
    if importlib.util.find_spec("sglang") is not None:
        pytest.skip("sglang is importable here, so the 'absent' scenario cannot be set up; "
                    "run the suite in an environment without SGLang")
    return ScenarioRuns(tmp_path_factory.mktemp(name), check)


@pytest.fixture(scope="session")
def mypy_runs(tmp_path_factory: pytest.TempPathFactory) -> ScenarioRuns[MypyRun]:
    """Returns the per-scenario mypy runs over tests/typed, shared by the whole session."""
    return scenario_runs(tmp_path_factory, "mypy-stubs", lambda cases, folder, site_dir: run_mypy(
        cases, cache_dir=folder / "cache", site_dir=site_dir))


CASE_PARAMS = [
    pytest.param(scenario, case, id=f"{scenario}-{Path(case).stem}")
    for scenario in ("absent", "installed")
    for case in COMMON_CASES + SCENARIO_CASES[scenario]
]


@pytest.mark.parametrize(("scenario", "case"), CASE_PARAMS)
def test_typed_case_meets_its_expectations_under_mypy_strict(
    mypy_runs: ScenarioRuns[MypyRun], scenario: str, case: str
) -> None:
    """Pass cases type-check cleanly; fail cases report exactly the ignored error codes."""
    assert mypy_runs[scenario].errors_in(case) == []


@pytest.mark.parametrize("scenario", ["absent", "installed"])
def test_each_scenario_run_checks_every_case_successfully(
    mypy_runs: ScenarioRuns[MypyRun], scenario: str
) -> None:
    """The scenario's run exits 0 having checked every case file (none silently skipped)."""
    run = mypy_runs[scenario]
    assert (run.status, run.output.strip()) == (
        0, f"Success: no issues found in {len(run.cases)} source files"
    )


def test_scenario_cases_exist_for_both_scenarios() -> None:
    """Each scenario has at least one case of its own, proving how partial stubs resolve."""
    assert all(SCENARIO_CASES.values())


@pytest.mark.parametrize("case", sorted(TYPED.glob("fail_*.py")), ids=lambda path: path.stem)
def test_fail_case_declares_its_expected_error_codes(case: Path) -> None:
    """A fail case names at least one expected error code, so it cannot pass vacuously."""
    assert re.search(r"# type: ignore\[[a-z-]+\]", case.read_text())


@pytest.mark.parametrize("case", sorted(TYPED.glob("pass_*.py")), ids=lambda path: path.stem)
def test_pass_case_ignores_nothing(case: Path) -> None:
    """A pass case contains no type: ignore, so every line in it must type-check."""
    assert "type: ignore" not in case.read_text()


def test_errors_outside_the_expectations_fail_the_run(tmp_path: Path) -> None:
    """An unmarked error and a marker with the wrong code both fail, with their codes."""
    case = tmp_path / "case.py"
    case.write_text(
        "from sglang.srt.sampling.sampling_observer import CommittedTokens\n"
        "from sglang.srt.managers.auxiliary_output import append_auxiliary_output\n"
        "append_auxiliary_output(None)  # type: ignore[arg-type]\n"
    )
    run = run_mypy(["case.py"], cache_dir=tmp_path / "cache", cwd=tmp_path)
    codes = [match["code"] for line in run.errors_in("case.py")
             if (match := ERROR_LINE.match(line))]
    assert (run.status, codes) == (1, ["attr-defined", "unused-ignore", "call-arg"])


def test_stub_package_has_an_init_stub_at_every_level() -> None:
    """Every directory of sglang-stubs has __init__.pyi, so mypy works without SGLang."""
    directories = [STUBS, *(path for path in STUBS.rglob("*") if path.is_dir())]
    assert [d for d in directories if not (d / "__init__.pyi").is_file()] == []


def test_stub_package_is_marked_partial() -> None:
    """py.typed says partial, so modules the stubs lack resolve to an installed SGLang."""
    assert (STUBS / "py.typed").read_text().strip() == "partial"


def test_metadata_states_the_described_release() -> None:
    """METADATA.toml states which SGLang release the stubs describe."""
    assert f'sglang_version = "{PINNED_SGLANG_VERSION}"' in (STUBS / "METADATA.toml").read_text()


def test_installed_stubs_are_these_stubs() -> None:
    """The stubs mypy finds through the installed auxcheck are the ones in this checkout."""
    assert find_stubs_dir().resolve() == STUBS


# -- pyright -----------------------------------------------------------------------------------

PYRIGHT_SETTINGS = {
    "stubPath": str(TORCH_STANDIN),
    # Every error counts: the markers are mypy's expectations, compared below, not pyright's.
    "enableTypeIgnoreComments": False,
}
PYRIGHT_MISSES = {
    ("installed/partial_installed.py", "import sglang.srt.server_args"): (
        "mypy's import-untyped: pyright reads an untyped package's source instead "
        "(reportMissingTypeStubs is off in standard mode), so there is nothing to report"),
}
"""(case, text of the statement) -> why pyright reports nothing where mypy's marker is."""


def _marked_statements(case: Path) -> dict[int, tuple[int, int]]:
    """Returns {line of a mypy marker: the lines of the statement it marks} for ``case`` (a
    compound statement's header only: a ``def`` marked for its signature)."""
    text = case.read_text()
    spans: dict[int, tuple[int, int]] = {}
    nodes = [node for node in ast.walk(ast.parse(text)) if isinstance(node, ast.stmt)]
    for number, line in enumerate(text.splitlines(), 1):
        if not MYPY_MARKER.search(line):
            continue
        spans[number] = min(
            (_header(node) for node in nodes if _header(node)[0] <= number <= _header(node)[1]),
            key=lambda span: span[1] - span[0])
    return spans


def _header(node: ast.stmt) -> tuple[int, int]:
    body = getattr(node, "body", None)
    end = body[0].lineno - 1 if isinstance(body, list) and body else node.end_lineno or node.lineno
    return node.lineno, max(node.lineno, end)


def _miss_lines(case: str) -> dict[int, str]:
    """Returns {line: reason} for the statements of ``case`` listed in PYRIGHT_MISSES."""
    lines = (TYPED / case).read_text().splitlines()
    return {number: reason for (name, fragment), reason in PYRIGHT_MISSES.items() if name == case
            for number, line in enumerate(lines, 1) if fragment in line}


def pyright_problems(run: PyrightRun, case: str) -> list[str]:
    """Returns where pyright disagrees with the mypy markers of ``case`` (empty: it agrees)."""
    spans = _marked_statements(TYPED / case)
    misses = _miss_lines(case)
    found = run.in_file(TYPED / case)
    problems = [f"pyright reports what mypy does not: {item}" for item in found
                if not any(start <= item.line <= end for start, end in spans.values())]
    for line, (start, end) in sorted(spans.items()):
        hits = [item for item in found if start <= item.line <= end]
        if line in misses and hits:
            problems.append(f"line {line} is in PYRIGHT_MISSES but pyright finds it: {hits[0]}")
        elif line not in misses and not hits:
            problems.append(f"line {line}: mypy's marker, and no pyright error in lines "
                            f"{start}-{end}")
    return problems


@pytest.fixture(scope="session")
def pyright_runs(tmp_path_factory: pytest.TempPathFactory) -> ScenarioRuns[PyrightRun]:
    """Returns the per-scenario pyright runs over tests/typed, shared by the whole session."""
    return scenario_runs(
        tmp_path_factory, "pyright-stubs", lambda cases, folder, site_dir: run_pyright(
            [TYPED / case for case in cases], root=folder, settings=PYRIGHT_SETTINGS,
            site_dir=site_dir))


@pytest.mark.parametrize(("scenario", "case"), CASE_PARAMS)
def test_typed_case_meets_its_expectations_under_pyright(
    pyright_runs: ScenarioRuns[PyrightRun], scenario: str, case: str
) -> None:
    """Pass cases are clean under pyright; fail cases are errors exactly where mypy's are,
    but for the misses listed with their reasons."""
    assert pyright_problems(pyright_runs[scenario], case) == []


@pytest.mark.parametrize("scenario", ["absent", "installed"])
def test_each_scenario_pyright_run_analyses_every_case(
    pyright_runs: ScenarioRuns[PyrightRun], scenario: str
) -> None:
    """pyright analysed every case file of the scenario (none silently left out)."""
    assert pyright_runs[scenario].files == len(COMMON_CASES) + len(SCENARIO_CASES[scenario])


def test_every_pyright_miss_names_a_marked_statement() -> None:
    """Each listed miss names one statement mypy's markers mark, so no entry is stale."""
    for case, fragment in PYRIGHT_MISSES:
        lines = [line for line in (TYPED / case).read_text().splitlines() if fragment in line]
        assert len(lines) == 1 and MYPY_MARKER.search(lines[0]), (case, fragment)


def test_pyright_disagreements_with_the_markers_are_reported(tmp_path: Path) -> None:
    """A marked statement pyright passes, and an error on an unmarked line, are both told."""
    case = tmp_path / "case.py"
    case.write_text(
        "from sglang.srt.managers.auxiliary_output import append_auxiliary_output\n"
        "x: int = 1  # type: ignore[assignment]\n"
        "append_auxiliary_output(None)\n"
    )
    run = run_pyright([case], root=tmp_path / "run", settings=PYRIGHT_SETTINGS)
    spans = _marked_statements(case)
    found = run.in_file(case)
    assert (spans, [(item.line, item.rule) for item in found]) == (
        {2: (2, 2)}, [(3, "reportCallIssue")])
