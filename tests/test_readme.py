"""Tests that keep the README true: its rule table and its set-up commands."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from auxcheck.rules import render_table

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_rule_table_is_the_rule_table_rendered() -> None:
    """The README's rule table is exactly `auxcheck rules --markdown`, so docs cannot drift."""
    assert render_table(markdown=True) in README


def test_readme_shows_the_two_set_up_commands() -> None:
    """The set-up is `make demo` and `make test`, and both Makefile targets exist."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test"):
        assert f"make {target}" in README
        assert f"\n{target}:" in makefile


def test_ci_runs_exactly_the_readme_test_command() -> None:
    """`.ci/run` runs `make test` and nothing else."""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in lines if line.strip() and not line.lstrip().startswith("#")
                and not line.startswith(("set ", "cd "))]
    assert commands == ["make test"]


CONFTEST_INTRO = "Add fixtures to your `conftest.py` and `--auxcheck` to your CI"

MY_PLUGIN = '''
"""The plugin the README's conftest imports: typed, and honouring the contract."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from sglang.srt.managers.auxiliary_output import CommittedTokens
    from sglang.srt.managers.schedule_batch import ScheduleBatch

MODEL_HIDDEN_BUFFER = torch.zeros(16, 4)


class Host:
    def __init__(self, rows: torch.Tensor) -> None:
        self.rows = rows

    def consume(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]) -> None:
        self.seen = [commit is not None for commit in commits]


class Output:
    def __init__(self, rows: torch.Tensor) -> None:
        self.rows = rows

    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> Host:
        return Host(copy_tensor(self.rows))

    def to_pp_tensors(self) -> dict[str, torch.Tensor]:
        return {"rows": self.rows}


def make_device_output(seed: int = 0) -> Output:
    return Output(torch.zeros(4, 2))


def output_for(batch: ScheduleBatch) -> Output:
    return Output(torch.zeros(len(batch.reqs), 2))


class Observer:
    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> Any:
        return logits

    def after_sample(self, state: Any, token_ids: torch.Tensor) -> Output | None:
        return Output(token_ids.clone())

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> Output:
        return Output(tensors["rows"])


def make_observer() -> Observer:
    return Observer()
'''


def readme_conftest() -> str:
    """Returns the README's conftest.py: the first python block after its introduction."""
    start = README.index("```python\n", README.index(CONFTEST_INTRO)) + len("```python\n")
    return README[start:README.index("```\n", start)]


@pytest.mark.slow
def test_the_readme_conftest_passes_mypy_strict_against_the_stubs(tmp_path: Path) -> None:
    """The conftest snippet, with a plugin module typed as users type theirs, is mypy --strict clean.

    Its fixtures' return types name the Protocols, so mypy checks the plugin's outputs
    and observers against the contract (a wrong copy_to_host arity would be an error).
    """
    import subprocess
    import sys

    (tmp_path / "conftest.py").write_text(readme_conftest())
    (tmp_path / "my_plugin.py").write_text(MY_PLUGIN)
    (tmp_path / "mypy.ini").write_text("[mypy]\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["MYPYPATH"] = str(ROOT / "tests" / "typed" / "_torch")  # real torch costs mypy ~30 s
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--warn-unused-ignores", "--config-file",
         "mypy.ini", "--cache-dir", str(tmp_path / ".mypy_cache"), "conftest.py", "my_plugin.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found in 2 source files" in done.stdout


@pytest.mark.slow
def test_the_readme_conftest_runs_under_pytest_auxcheck(pytester: pytest.Pytester) -> None:
    """pytest --auxcheck collects the snippet's four outputs and observer and every item passes."""
    pytester.makeconftest(readme_conftest() + textwrap.dedent("""
        from hypothesis import settings
        settings.register_profile("readme", max_examples=3, deadline=None, database=None)
    """))
    pytester.makepyfile(my_plugin=MY_PLUGIN)
    result = pytester.runpytest_inprocess("--auxcheck", "--auxcheck-profile=readme",
                                          "-p", "no:randomly", "-p", "no:cacheprovider",
                                          "-k", "not impl")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0, result.stdout.str()
    assert outcomes["passed"] >= 4 * 10, result.stdout.str()
    result.stdout.fnmatch_lines(["auxcheck *4 device outputs, 1 observer*"])
