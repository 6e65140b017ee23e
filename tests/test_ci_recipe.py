"""docs/ci.md's GitHub Actions workflow: the steps it describes, commands that exist, a run.

The workflow is the page's one ``yaml github-actions`` block, read with PyYAML (the ``test``
extra). Its ``auxcheck`` commands parse with auxcheck's own
command line, its cache holds the folder auxcheck reads its releases from, its torch is the
Makefile's pin, and its check step, run here as a runner runs it on a copy of the capture
example, writes a SARIF log the SARIF Multitool finds valid.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

import pytest
import yaml
from helpers.paths import REPO, torch_pin
from helpers.processes import finish
from helpers.releases import REAL_CACHE, REAL_RELEASES
from helpers.sarif import problems, sarif_of

from auxcheck.cli import SUBCOMMANDS
from auxcheck.releases import CACHE_ENV, cache_dir, parse_versions

if sys.version_info >= (3, 11):
    import tomllib
else:  # the backport auxcheck depends on there
    import tomli as tomllib

PAGE = REPO / "docs" / "ci.md"

CPU_TORCH = "https://download.pytorch.org/whl/cpu"
"""PyTorch's index of CPU-only builds: a runner has no GPU, and PyPI's Linux torch is CUDA's."""

STEPS = [
    "actions/checkout",
    "actions/setup-python",
    "run: pip pip pip",
    "run: echo",
    "actions/cache/restore",
    "run: auxcheck",
    "github/codeql-action/upload-sarif",
    "actions/cache/save",
]
"""What each step is, in order: the action it uses, or the programs its lines run."""

OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


# ---------------------------------------------------------------------------------------------
# Reading the workflow


@cache
def workflow() -> dict[Any, Any]:
    """Returns the workflow of docs/ci.md's one ``yaml github-actions`` block."""
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml github-actions\n(.*?)^```$", text,
                        flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1, f"{PAGE.name} holds {len(blocks)} yaml github-actions blocks"
    loaded: dict[Any, Any] = yaml.safe_load(blocks[0])
    return loaded


def job() -> dict[str, Any]:
    """Returns the workflow's one job."""
    [only] = workflow()["jobs"].values()
    return dict(only)


def what(step: dict[str, Any]) -> str:
    """Returns what a step is: its action without the version, or ``run:`` and its programs."""
    if "uses" in step:
        return str(step["uses"]).partition("@")[0]
    return "run: " + " ".join(shlex.split(line)[0] for line in commands(step))


def commands(step: dict[str, Any]) -> list[str]:
    """Returns the command lines of a ``run`` step ([] for an action)."""
    return [line.strip() for line in str(step.get("run", "")).splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def step(kind: str) -> dict[str, Any]:
    """Returns the one step that :func:`what` calls ``kind``."""
    [found] = [s for s in job()["steps"] if what(s) == kind]
    return dict(found)


def job_env() -> dict[str, str]:
    """Returns the variables the job sets for every step."""
    return {name: str(value) for name, value in job().get("env", {}).items()}


def auxcheck_lines() -> list[str]:
    """Returns every command line of a ``run`` step that runs auxcheck."""
    return [line for s in job()["steps"] for line in commands(s)
            if shlex.split(line)[0] == "auxcheck"]


def words_and_output(line: str) -> tuple[list[str], str | None]:
    """Returns a command line's words, the job's variables filled in, and the file its stdout
    goes to (None when it is not redirected)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = [Template(word).substitute(job_env()) for word in lexer]
    if ">" in words:
        at = words.index(">")
        return words[:at] + words[at + 2:], words[at + 1]
    return words, None


def parsed(line: str) -> Any:
    """Returns the options of an ``auxcheck`` command line, parsed by its subcommand's own
    parser (a usage error on an option it lacks); fails on an option spelled other than as
    the parser names it (argparse would take an abbreviation)."""
    words, _ = words_and_output(line)
    assert words[1] in SUBCOMMANDS, f"auxcheck has no command {words[1]}"
    parser = importlib.import_module(SUBCOMMANDS[words[1]][0])._parser()
    arguments = words[2:words.index("--")] if "--" in words else words[2:]
    named = set(OPTION.findall(parser.format_help()))
    assert [w for w in arguments if OPTION.fullmatch(w.partition("=")[0])
            and w.partition("=")[0] not in named] == []
    return parser.parse_args(arguments)


def check_line() -> str:
    """Returns the workflow's ``auxcheck check`` command line."""
    [line] = commands(step("run: auxcheck"))
    return line


# ---------------------------------------------------------------------------------------------
# What the workflow says


def test_the_job_runs_on_pushes_and_pull_requests_on_ubuntu_with_python_3_11() -> None:
    """One job, on ubuntu-latest, with Python 3.11 (SGLang's wheels are CPython 3.11's)."""
    triggers = workflow().get("on", workflow().get(True))  # YAML 1.1 reads a bare `on` as True
    assert triggers == {"push": {"branches": ["main"]}, "pull_request": None}
    assert job()["runs-on"] == "ubuntu-latest"
    assert step("actions/setup-python")["with"] == {"python-version": "3.11"}


def test_the_steps_are_those_the_page_describes_each_action_at_a_major_version() -> None:
    """Check out, Python, install, the cache folder, restore, check, upload, save."""
    assert [what(s) for s in job()["steps"]] == STEPS
    assert [s["uses"] for s in job()["steps"] if not re.fullmatch(r"[\w/-]+@v\d+",
                                                                  s.get("uses", "x@v1"))] == []


def test_torch_is_installed_first_pinned_as_the_makefile_pins_it_from_the_cpu_index() -> None:
    """torch from PyTorch's CPU index, then auxcheck with an extra it has, then the plugin."""
    install = [shlex.split(line) for line in commands(step("run: pip pip pip"))]
    assert install == [["pip", "install", torch_pin(), "--index-url", CPU_TORCH],
                       ["pip", "install", "auxcheck[contracts]"],
                       ["pip", "install", "-e", "."]]
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "contracts" in project["optional-dependencies"]


@pytest.mark.parametrize("line", auxcheck_lines())
def test_every_auxcheck_command_parses_with_auxcheck_s_own_command_line(line: str) -> None:
    """Its subcommand exists and takes every option as spelled, with the job's variables."""
    assert parsed(line) is not None


def test_the_check_judges_the_releases_the_suite_reads_and_writes_sarif_for_the_upload() -> None:
    """0.5.19, 0.5.20 and 0.5.23 (``make wheels``'s), as SARIF, into the file uploaded."""
    options = parsed(check_line())
    assert (options.path, options.format) == (".", "sarif")
    assert parse_versions(",".join(options.sglang)) == REAL_RELEASES
    assert words_and_output(check_line())[1] == step(
        "github/codeql-action/upload-sarif")["with"]["sarif_file"]


def test_the_upload_runs_always_with_permission_to_write_security_events() -> None:
    """The findings of a failed check are uploaded too; the job may write them."""
    assert step("github/codeql-action/upload-sarif")["if"] == "always()"
    assert job()["permissions"] == {"contents": "read", "security-events": "write",
                                    "actions": "read"}


def _run_bash(line: str, *, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """Returns the process running ``line`` as a runner runs a step's script (``bash -e``)."""
    return subprocess.Popen(["bash", "-e", "-c", line], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def test_the_cache_holds_the_folder_auxcheck_reads_its_releases_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The step naming the folder sets AUXCHECK_CACHE_DIR to auxcheck's default folder; the
    cache restores and saves that folder, keyed on the releases the check is given."""
    home, github_env = tmp_path / "home", tmp_path / "github_env"
    [line] = commands(step("run: echo"))
    process = _run_bash(line, cwd=tmp_path, env={**os.environ, "HOME": str(home),
                                                 "GITHUB_ENV": str(github_env)})
    _, err = finish(process, line)
    assert process.returncode == 0, err
    name, _, folder = github_env.read_text(encoding="utf-8").strip().partition("=")
    assert name == CACHE_ENV
    monkeypatch.setenv(CACHE_ENV, folder)
    assert cache_dir() == Path(folder)
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(home))
    assert cache_dir() == Path(folder)  # the folder auxcheck uses when nothing names one
    assert parsed(check_line()).cache is None  # no --cache overriding the variable

    restore, save = step("actions/cache/restore"), step("actions/cache/save")
    assert restore["with"]["path"] == save["with"]["path"] == f"${{{{ env.{CACHE_ENV} }}}}"
    assert "${{ env.SGLANG_RELEASES }}" in restore["with"]["key"]
    assert "$SGLANG_RELEASES" in check_line()
    outputs = f"steps.{restore['id']}.outputs"
    assert save["with"]["key"] == f"${{{{ {outputs}.cache-primary-key }}}}"
    assert save["if"] == f"always() && {outputs}.cache-hit != 'true'"


# ---------------------------------------------------------------------------------------------
# The check step, run


@pytest.mark.slow
def test_the_check_step_on_the_capture_example_writes_a_valid_sarif_log_of_four_stages(
        example: Callable[[str], Path], tmp_path: Path) -> None:
    """Run by bash in a copy of the clean example, with the job's variables and the suite's
    wheel cache: exit 0, a log the Multitool finds valid, no result, no stage left out."""
    plugin = example("capture_plugin")
    bin_folder = Path(sys.executable).parent
    env = {**os.environ, **job_env(), CACHE_ENV: str(REAL_CACHE),
           "PATH": f"{bin_folder}{os.pathsep}{os.environ.get('PATH', '')}"}
    process = _run_bash(check_line(), cwd=plugin, env=env)
    _, err = finish(process, check_line())
    assert process.returncode == 0, err[-6000:]
    log = (plugin / "auxcheck.sarif").read_text(encoding="utf-8")
    folder = tmp_path / "multitool"
    folder.mkdir()
    assert problems(log, folder) == []
    run = sarif_of(log)
    assert run["results"] == []
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == plugin.resolve().as_uri() + "/"
    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is True
    assert invocation.get("toolExecutionNotifications", []) == []
