"""Tests that keep the README and docs/ true: every code block is run or type-checked, every
relative link and every path they name resolves, and each claim with a source of truth matches it.

A fence's info string says how its block is checked (GitHub shows only the first word):

- ``python conftest``: run under ``pytest --auxcheck`` beside :data:`MY_PLUGIN`, and type-checked;
- ``python run``: run, beside :data:`MY_PLUGIN`, and type-checked;
- ``python before`` then ``python after FLAGS``: ``auxcheck migrate FLAGS`` turns the first into
  the second, which is type-checked;
- any other ``python`` block: type-checked with ``mypy --strict`` against the shipped stubs, where
  a line ending ``# error: ... [code]`` must get exactly that error and no other line any; and
  with pyright (standard mode), which must report on exactly those lines;
- ``console`` / ``bash``: every command line uses commands, options, targets and extras that
  exist (``console run``: run from a folder holding ``examples/``, printing what the block shows);
  output lines are checked as ``text`` is;
- ``text``: every rule code exists, and a finding's title and fix line are the rule table's;
- ``toml``: read by auxcheck itself; ``yaml``: names pre-commit hooks the project ships
  (``yaml github-actions``: a workflow, checked by ``tests/test_ci_recipe.py``).

The prose is checked as well: an inline ``auxcheck SUB ...``, ``pytest -...`` or ``make ...``
as a console line is; the options of an ``Options:`` list are its subcommand's; every rule code,
family and range exists; and in README.md, benchmarks.md and development.md every measured time,
ratio or size sits in a paragraph, list item or captioned table that says ``measured on DATE at
COMMIT``.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# In-process pytester runs (the conftest blocks) drop the modules they imported afterwards,
# and torch cannot be imported twice in one process: import what the suite uses up front.
import pytest
import torch  # noqa: F401
from helpers.paths import EXAMPLES, PACKAGE, REPO, TESTS, TORCH_STANDIN
from helpers.pyright import run_pyright
from helpers.releases import REAL_CACHE

import auxcheck._suite.item_runs
import auxcheck.machine
import auxcheck.migrate.scan  # noqa: F401
from auxcheck import __version__
from auxcheck.cli import SUBCOMMANDS
from auxcheck.cli import main as auxcheck_main
from auxcheck.rules import RULES, parse_codes, render_table

if sys.version_info >= (3, 11):
    import tomllib
else:  # the backport auxcheck depends on there
    import tomli as tomllib

pytest_plugins = ["pytester"]

README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = (README, *sorted(DOCS.glob("*.md")))
README_LIMIT = 15_000
"""Bytes: the README is a front page; reference material goes to docs/."""


# ---------------------------------------------------------------------------------------------
# Reading the pages


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    line: int
    """The line of its opening fence (1-based)."""
    lang: str
    tags: tuple[str, ...]
    text: str

    @property
    def id(self) -> str:
        """Returns the block's test id: page, line and language."""
        return f"{self.page}:{self.line}-{self.lang}"


def _relative(page: Path) -> str:
    return page.relative_to(REPO).as_posix()


@cache
def blocks() -> tuple[Block, ...]:
    """Returns every fenced block of the README and docs/, in page order."""
    found = []
    for page in PAGES:
        opened: tuple[int, str, tuple[str, ...]] | None = None
        body: list[str] = []
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if opened is None and line.startswith("```"):
                lang, *tags = line[3:].split()
                opened, body = (number, lang, tuple(tags)), []
            elif opened is not None and line == "```":
                found.append(Block(_relative(page), opened[0], opened[1], opened[2],
                                   "\n".join(body) + "\n"))
                opened = None
            elif opened is not None:
                body.append(line)
        assert opened is None, f"{_relative(page)}:{opened[0]}: a fence is never closed"
    return tuple(found)


def blocks_of(lang: str, *tags: str) -> list[Block]:
    """Returns the blocks of ``lang`` whose info string starts with ``tags``."""
    return [b for b in blocks() if b.lang == lang and b.tags[:len(tags)] == tags]


def params(chosen: list[Block]) -> pytest.MarkDecorator:
    """Returns a parametrize mark over ``chosen``, one readable id per block."""
    return pytest.mark.parametrize("block", chosen, ids=[b.id for b in chosen])


def prose(page: Path) -> str:
    """Returns a page's text without its fenced blocks (their lines left empty)."""
    lines, inside = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside = not inside
            lines.append("")
        else:
            lines.append("" if inside else line)
    return "\n".join(lines)


KNOWN_TAGS = {
    "python": {(), ("conftest",), ("run",), ("before",), ("after",)},
    "console": {(), ("run",)},
    "bash": {()}, "text": {()}, "toml": {()}, "yaml": {(), ("github-actions",)},
}
"""The languages and leading tags this module checks; ``after`` takes flags after it."""


@params(list(blocks()))
def test_every_block_is_one_the_suite_checks(block: Block) -> None:
    """Each block names a language (and tags) this module knows how to run or check."""
    assert block.lang in KNOWN_TAGS, f"no check for ```{block.lang} blocks"
    assert block.tags[:1] in KNOWN_TAGS[block.lang], f"unknown tags {block.tags}"


def test_the_pages_hold_blocks_of_every_kind_this_module_checks() -> None:
    """A check that no block reaches would test nothing: each kind appears somewhere."""
    for lang, tags in KNOWN_TAGS.items():
        for tag in tags:
            assert blocks_of(lang, *tag), f"no ```{lang} {' '.join(tag)} block left"


# ---------------------------------------------------------------------------------------------
# The plugin and model runner the Python samples import


MY_PLUGIN = '''
"""The plugin the docs' samples import: typed, and honouring the contract."""

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

MY_MODEL = '''
"""The model runner the docs' aliasing sample imports (type-checked only: it needs CUDA)."""

from __future__ import annotations

from typing import Any

import torch

graph_runner: Any = object()
out_buffer = torch.zeros(8, 16)
static_input = torch.zeros(8, 16)
pool_id: tuple[int, int] = (0, 0)


def model(batch: torch.Tensor) -> torch.Tensor:
    return batch.clone()


def async_d2h(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to("cpu", non_blocking=True)
'''


def write_samples(folder: Path) -> None:
    """Writes the modules the Python samples import into ``folder``."""
    (folder / "my_plugin.py").write_text(MY_PLUGIN)
    (folder / "my_model.py").write_text(MY_MODEL)


# ---------------------------------------------------------------------------------------------
# Python: type-checked, run, run under pytest --auxcheck, migrated


EXPECTED_ERROR = re.compile(r"#\s*error:.*\[(?P<code>[a-z-]+)\]\s*$")
MYPY_ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")
TYPED_BLOCKS = [b for b in blocks_of("python") if b.tags[:1] != ("before",)]


def expected_errors(block: Block) -> list[tuple[int, str]]:
    """Returns the (line, code) of each ``# error: ... [code]`` line of ``block``."""
    return [(number, match["code"]) for number, line in enumerate(block.text.splitlines(), 1)
            if (match := EXPECTED_ERROR.search(line))]


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, str]]]:
    """Returns mypy --strict's errors per file, from one run over every typed block.

    torch is the small stand-in stub (real torch costs mypy ~30 s cold); the sglang stubs and
    auxcheck come from the environment, as they do for a plugin's CI.
    """
    folder = tmp_path_factory.mktemp("docs-mypy")
    write_samples(folder)
    files = ["my_plugin.py", "my_model.py"]
    for index, block in enumerate(TYPED_BLOCKS):
        files.append(f"block_{index}.py")
        (folder / files[-1]).write_text(block.text)
    (folder / "mypy.ini").write_text("[mypy]\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["MYPYPATH"] = str(TORCH_STANDIN)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--warn-unused-ignores", "--config-file",
         "mypy.ini", "--cache-dir", str(folder / ".mypy_cache"), *files],
        cwd=folder, env=env, capture_output=True, text=True, check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    errors: dict[str, list[tuple[int, str]]] = {name: [] for name in files}
    for line in done.stdout.splitlines():
        if match := MYPY_ERROR.match(line):
            errors[match["path"]].append((int(match["line"]), match["code"]))
    errors["output"] = [(0, done.stdout)]
    return errors


@pytest.mark.slow
def test_the_modules_the_samples_import_pass_mypy_strict(
        mypy_errors: dict[str, list[tuple[int, str]]]) -> None:
    """MY_PLUGIN and MY_MODEL are typed as users type theirs: mypy --strict finds nothing."""
    assert mypy_errors["my_plugin.py"] + mypy_errors["my_model.py"] == [], mypy_errors["output"]


@pytest.mark.slow
@params(TYPED_BLOCKS)
def test_a_python_block_type_checks_with_exactly_its_marked_errors(
        block: Block, mypy_errors: dict[str, list[tuple[int, str]]]) -> None:
    """mypy --strict reports exactly the errors the block marks, against the shipped stubs.

    A conftest's fixtures name the Protocols in their return types, so mypy checks the plugin's
    outputs and observers against the contract (a wrong copy_to_host arity would be an error).
    """
    name = f"block_{TYPED_BLOCKS.index(block)}.py"
    assert sorted(mypy_errors[name]) == expected_errors(block), mypy_errors["output"]


@pytest.fixture(scope="module")
def pyright_lines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[int]]:
    """Returns the lines pyright (standard mode) reports on per file, from one run over the
    files the mypy run checks, with the same torch stand-in."""
    folder = tmp_path_factory.mktemp("docs-pyright")
    write_samples(folder)
    files = [folder / "my_plugin.py", folder / "my_model.py"]
    for index, block in enumerate(TYPED_BLOCKS):
        files.append(folder / f"block_{index}.py")
        files[-1].write_text(block.text)
    run = run_pyright(files, root=folder, settings={"stubPath": str(TORCH_STANDIN)})
    return {path.name: sorted({found.line for found in run.in_file(path)}) for path in files}


@pytest.mark.slow
@params(TYPED_BLOCKS)
def test_a_python_block_gets_pyright_errors_exactly_where_mypy_does(
        block: Block, pyright_lines: dict[str, list[int]]) -> None:
    """pyright reports on exactly the lines a block marks for mypy (none on most blocks),
    and nothing on the modules the samples import."""
    name = f"block_{TYPED_BLOCKS.index(block)}.py"
    expected = sorted({line for line, _ in expected_errors(block)})
    assert (pyright_lines[name], pyright_lines["my_plugin.py"], pyright_lines["my_model.py"]) == (
        expected, [], [])


@pytest.fixture
def beside_my_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Runs the test in a folder holding MY_PLUGIN and MY_MODEL, importable; forgets them after."""
    write_samples(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in ("my_plugin", "my_model"):
        sys.modules.pop(name, None)


@pytest.mark.slow
@params(blocks_of("python", "run"))
def test_a_python_block_marked_run_runs(block: Block, beside_my_plugin: Path) -> None:
    """The sample runs to its end as written (a validator's report raises on any finding)."""
    sample = compile(block.text, block.id, "exec")
    exec(sample, {"__name__": "docs_sample"})  # noqa: S102 - running the sample is the test


CONFTEST_SUBJECTS = {"README.md": (1, 1), "docs/pytest-plugin.md": (4, 1)}
"""Page -> (device outputs, observers) its conftest gives ``pytest --auxcheck``."""


def conftest_of(page: str) -> Block:
    """Returns the one ``python conftest`` block of ``page``."""
    [block] = [b for b in blocks_of("python", "conftest") if b.page == page]
    return block


def test_every_conftest_block_is_run() -> None:
    """Each page with a conftest sample says what pytest --auxcheck must find in it."""
    assert {b.page for b in blocks_of("python", "conftest")} == set(CONFTEST_SUBJECTS)


def _run_conftest(pytester: pytest.Pytester, page: str, *args: str) -> pytest.RunResult:
    pytester.makeconftest(conftest_of(page).text + textwrap.dedent("""
        from hypothesis import settings
        settings.register_profile("docs", max_examples=3, deadline=None, database=None)
    """))
    pytester.makepyfile(my_plugin=MY_PLUGIN)
    return pytester.runpytest_inprocess("--auxcheck", "--auxcheck-profile=docs",
                                        "-p", "no:randomly", "-p", "no:cacheprovider", *args)


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(CONFTEST_SUBJECTS))
def test_a_conftest_block_runs_under_pytest_auxcheck(pytester: pytest.Pytester,
                                                     page: str) -> None:
    """pytest --auxcheck collects the conftest's outputs and observer and every item passes."""
    outputs, observers = CONFTEST_SUBJECTS[page]
    result = _run_conftest(pytester, page, "-k", "not impl")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0, result.stdout.str()
    assert outcomes["passed"] >= outputs * 10, result.stdout.str()
    plural = "s" if outputs > 1 else ""
    header = f"auxcheck *{outputs} device output{plural}, {observers} observer*"
    result.stdout.fnmatch_lines([header])


@pytest.mark.slow
def test_the_item_ids_shown_are_those_pytest_collects(pytester: pytest.Pytester) -> None:
    """The header and ids the pytest page shows are what its conftest gives, word for word."""
    [shown] = [b for b in blocks_of("text") if b.page == "docs/pytest-plugin.md"
               and "auxcheck::" in b.text]
    header, *ids = shown.text.splitlines()
    result = _run_conftest(pytester, "docs/pytest-plugin.md", "--collect-only", "-q")
    assert [i for i in ids if i not in result.stdout.lines] == [], result.stdout.str()
    # A fresh seed every run, or none under CI=true (derandomized).
    shown_header = re.sub(r"seed=\d+", "*", header)
    result.stdout.fnmatch_lines([shown_header.replace("profile=auxcheck-default",
                                                      "profile=docs*")])


def migration_pairs() -> list[tuple[Block, Block]]:
    """Returns each ``python before`` block with the ``python after`` block that follows it."""
    pairs = []
    for before in blocks_of("python", "before"):
        after = next(b for b in blocks() if b.page == before.page and b.line > before.line)
        assert after.tags[:1] == ("after",), f"{before.id}: no `python after` block follows"
        pairs.append((before, after))
    return pairs


@pytest.mark.parametrize(("before", "after"), migration_pairs(),
                         ids=[a.id for _, a in migration_pairs()])
def test_a_before_block_migrates_to_the_after_block(before: Block, after: Block) -> None:
    """``auxcheck migrate FLAGS -`` prints the after block for the before block, byte for byte."""
    done = subprocess.run([sys.executable, "-m", "auxcheck", "migrate", *after.tags[1:], "-"],
                          input=before.text, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == after.text


# ---------------------------------------------------------------------------------------------
# Command lines and their output


OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
ASSIGNMENT = re.compile(r"^([A-Z][A-Z0-9_]*)=(.*)$")
SGLANG_COMMANDS = {("python", "-m", "sglang.launch_server")}
"""SGLang's own commands, shown as where auxcheck's variables go: only those are checked."""


@dataclass(frozen=True)
class Console:
    """A console block split into its command lines and the output they print."""

    commands: tuple[tuple[str, ...], ...]
    output: str


def console(block: Block) -> Console:
    """Returns the block's commands (``$ ``-prompted lines when it has any) and output.

    A line ending in a backslash, or an indented line of a block without prompts (a usage
    synopsis), continues the line before.
    """
    lines = block.text.replace("\\\n", " ").splitlines()
    if not any(line.startswith("$ ") for line in lines):
        lines = re.sub(r"\n[ \t]+", " ", "\n".join(lines)).splitlines()
    prompted = any(line.startswith("$ ") for line in lines)
    commands, output = [], []
    for line in lines:
        if prompted and not line.startswith("$ "):
            output.append(line)
        elif words := shlex.split(line.removeprefix("$ "), comments=True):
            commands.append(tuple(words))
    return Console(tuple(commands), "\n".join(output).strip("\n"))


def options_of(words: tuple[str, ...]) -> set[str]:
    """Returns the options a command line passes (``[--x`` and ``--x=v`` too), up to ``--``."""
    found = set()
    for word in words:
        if word == "--":
            break
        if match := re.fullmatch(r"\[?(--?[A-Za-z][\w-]*)(=.*)?\]?", word):
            found.add(match[1])
    return found


@cache
def auxcheck_options(*command: str) -> frozenset[str]:
    """Returns the options ``auxcheck [COMMAND] --help`` lists (no COMMAND: auxcheck's own)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert auxcheck_main([*command, "--help"]) == 0
    return frozenset(OPTION.findall(out.getvalue()))


@cache
def help_options(*program: str) -> frozenset[str]:
    """Returns the options a program's ``--help`` lists (pytest with every installed plugin)."""
    done = subprocess.run([sys.executable, "-m", *program, "--help"], cwd=REPO,
                          capture_output=True, text=True, check=True)
    return frozenset(OPTION.findall(done.stdout))


@cache
def makefile_text() -> str:
    """Returns the Makefile's text."""
    return (REPO / "Makefile").read_text(encoding="utf-8")


@cache
def makefile_targets() -> frozenset[str]:
    """Returns the targets the Makefile defines."""
    return frozenset(re.findall(r"^([\w-]+):", makefile_text(), flags=re.MULTILINE))


def make_word_problem(word: str) -> str | None:
    """Returns what is wrong with one word after ``make``: a target the Makefile lacks, or a
    ``NAME=value`` whose NAME it never reads; None when it is fine."""
    name, assigns, _ = word.partition("=")
    if assigns:
        found = re.search(rf"\b{re.escape(name)}\b", makefile_text())
        return None if found else f"the Makefile never names {name}"
    return None if word in makefile_targets() else f"no make target {word}"


@cache
def extras() -> frozenset[str]:
    """Returns the optional-dependency groups pyproject.toml declares."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return frozenset(project["optional-dependencies"])


def _pip_problems(words: tuple[str, ...]) -> list[str]:
    problems = [f"pip {words[1]} has no {o}" for o in options_of(words[2:])
                - help_options("pip", words[1])]
    wheel = f"dist/auxcheck-{__version__}-py3-none-any.whl"
    for word in words[2:]:
        name, _, extra = word.partition("[")
        if word.startswith("-") or word in ("dist", "."):
            continue
        if name not in (".", "auxcheck", wheel):
            problems.append(f"pip installs {word}: not this project or its {wheel}")
        if not set(extra.rstrip("]").split(",")) <= extras():
            problems.append(f"{word}: extras are {sorted(extras())}")
    return problems


def _environment_problems(assignments: list[tuple[str, str]]) -> list[str]:
    sources = "\n".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py"))
    return [f"{name}={value}: auxcheck reads no such variable, or not that value"
            for name, value in assignments
            if f'"{name}"' not in sources or (value.isalpha() and f'"{value}"' not in sources)]


def command_problems(words: tuple[str, ...]) -> list[str]:
    """Returns what is wrong with one command line ([] when everything it names exists)."""
    assignments = []
    while words and (match := ASSIGNMENT.match(words[0])):
        assignments.append((match[1], match[2]))
        words = words[1:]
    problems = _environment_problems(assignments)
    if words[:1] == ("auxcheck",) and words[1:2] and words[1].startswith("-"):
        missing = options_of(words[1:]) - auxcheck_options()
        return [*problems, *(f"auxcheck has no {o}" for o in sorted(missing))]
    if words[:1] == ("auxcheck",):
        command = words[1]
        if command not in SUBCOMMANDS:
            return [*problems, f"auxcheck has no command {command}"]
        missing = options_of(words[2:]) - auxcheck_options(command)
        return [*problems, *(f"auxcheck {command} has no {o}" for o in sorted(missing))]
    if words[:1] == ("pytest",) or words[:3] == ("python", "-m", "pytest"):
        missing = options_of(words) - help_options("pytest")
        return [*problems, *(f"pytest has no {o}" for o in sorted(missing))]
    if words[:3] == ("python", "-m", "mypy"):
        missing = options_of(words[3:]) - help_options("mypy")
        return [*problems, *(f"mypy has no {o}" for o in sorted(missing))]
    if words[:1] == ("make",):
        return [*problems, *filter(None, map(make_word_problem, words[1:]))]
    if words[:1] == ("pip",) and words[1:2] in (("install",), ("wheel",)):
        return [*problems, *_pip_problems(words)]
    if words[:3] in SGLANG_COMMANDS:
        return problems
    return [*problems, f"no check for the command {shlex.join(words)}"]


TITLED = re.compile(r"^(AUX\d{3}) (.+)$")
FIX = re.compile(r"^\s+fix:\s+(.+)$")


def output_problems(text: str) -> list[str]:
    """Returns what is wrong with shown output: unknown codes, a title or fix off the table."""
    problems = [f"no rule {code}" for code in re.findall(r"\bAUX\d{3}\b", text)
                if code not in RULES]
    rule = None
    for line in text.splitlines():
        if (match := TITLED.match(line)) and match[1] in RULES:
            rule = RULES[match[1]]
            if match[2] != rule.title:
                problems.append(f"{rule.code}'s title is {rule.title!r}, not {match[2]!r}")
        elif (match := FIX.match(line)) and rule is not None and match[1] != rule.hint:
            problems.append(f"{rule.code}'s fix is {rule.hint!r}, not {match[1]!r}")
    return problems


@params(blocks_of("console") + blocks_of("bash"))
def test_every_command_line_names_what_exists(block: Block) -> None:
    """Commands, subcommands, options, make targets and extras exist; output names real rules."""
    shown = console(block)
    assert shown.commands, "a console block with no command"
    assert [p for words in shown.commands for p in command_problems(words)] == []
    assert output_problems(shown.output) == []


@params(blocks_of("text"))
def test_shown_output_names_real_rules_with_their_titles_and_fixes(block: Block) -> None:
    """Every code is a rule; a finding's title line and fix line are the rule table's."""
    assert output_problems(block.text) == []


RUN_FILES = {
    "hostile.py": textwrap.dedent('''
        """Plugin code that hangs: robustness.md's `auxcheck validate --timeout` sample."""
        import time


        class Hangs:
            def copy_to_host(self, copy_tensor):
                time.sleep(3600)
    '''),
}
"""Modules the ``console run`` blocks name, written beside a link to ``examples/``."""


@pytest.mark.slow
@params(blocks_of("console", "run"))
def test_a_console_block_marked_run_prints_what_it_shows(
        block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Each command runs in-process; it exits 0, or prints exactly the output shown."""
    (tmp_path / "examples").symlink_to(EXAMPLES)
    for name, text in RUN_FILES.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    shown = console(block)
    for words in shown.commands:
        assert words[0] == "auxcheck"
        status = auxcheck_main(list(words[1:]))
        out = capsys.readouterr().out
        if shown.output:
            assert out.strip("\n") == shown.output
        else:
            assert status == 0, out


# ---------------------------------------------------------------------------------------------
# Configuration samples


@params(blocks_of("toml"))
def test_a_toml_block_is_configuration_auxcheck_reads(block: Block, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """``ignore`` names real codes; a ``migrate`` move table makes ``--check`` find its move."""
    settings = tomllib.loads(block.text)["tool"]["auxcheck"]
    assert set(settings) <= {"ignore", "migrate"}, f"no check for {sorted(settings)}"
    if "ignore" in settings:
        assert parse_codes(settings["ignore"])
    for move in settings.get("migrate", {}).get("move", []):
        (tmp_path / "pyproject.toml").write_text(block.text)
        (tmp_path / "uses.py").write_text(f"from {move['old']} import {move['names'][0]}\n")
        assert auxcheck_main(["migrate", "--check", str(tmp_path)]) == 1
        assert "AUX501" in capsys.readouterr().out


@params([b for b in blocks_of("yaml") if not b.tags])
def test_a_pre_commit_block_names_the_hooks_the_project_ships(block: Block) -> None:
    """Its hook ids are in .pre-commit-hooks.yaml and its rev is this release's tag."""
    shipped = re.findall(r"^- id: (\S+)$", (REPO / ".pre-commit-hooks.yaml").read_text(),
                         flags=re.MULTILINE)
    used = re.findall(r"- id: (\S+)(?:\s+# or (\S+))?", block.text)
    assert used and {i for pair in used for i in pair if i} <= set(shipped)
    assert f"rev: v{__version__}" in block.text


# ---------------------------------------------------------------------------------------------
# Links and paths


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
REPO_PATH = re.compile(r"(?:auxcheck|tests|examples|benchmarks|stubs|docs|\.ci)/[\w./*-]*")


def slug(heading: str) -> str:
    """Returns GitHub's anchor for a heading's text."""
    text = heading.replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """Returns the anchors of a page's headings (repeats get GitHub's -1, -2 suffixes)."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose(page).splitlines():
        if match := re.match(r"^#{1,6} (.+)$", line):
            base = slug(match[1])
            found.add(base if base not in seen else f"{base}-{seen[base]}")
            seen[base] = seen.get(base, 0) + 1
    return frozenset(found)


@pytest.mark.parametrize("page", PAGES, ids=[_relative(p) for p in PAGES])
def test_every_relative_link_resolves_to_a_file_and_heading(page: Path) -> None:
    """Links to files of the checkout exist; an anchor names a heading of its page."""
    broken = []
    for target in LINK.findall(CODE_SPAN.sub("", prose(page))):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists() or REPO not in linked.parents:
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in anchors(linked):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=[_relative(p) for p in PAGES])
def test_every_path_a_page_names_exists(page: Path) -> None:
    """A path of the checkout in backticks (`auxcheck/_runtime/`, `tests/typed/...`) exists."""
    named = [span for span in CODE_SPAN.findall(prose(page)) if REPO_PATH.fullmatch(span)]
    assert [p for p in named if not list(REPO.glob(p.rstrip("/")))] == []


# ---------------------------------------------------------------------------------------------
# Commands, options and rule codes in the prose


HEADING = re.compile(r"^(#{1,6}) (.+)$")
COMMAND_SPAN = re.compile(r"(?:auxcheck\s+(?:-|[a-z]+(?:\s|$))|pytest\s+-|make(?:\s|$)).*")
"""A code span that is a command line: ``auxcheck SUB ...``, ``pytest -...``, ``make ...``."""


@cache
def joined_prose(page: Path) -> tuple[str, ...]:
    """Returns a page's prose as its headings and paragraphs, each paragraph on one line (so
    a code span wrapped over two lines reads whole)."""
    found: list[str] = []
    current: list[str] = []
    for line in [*prose(page).splitlines(), ""]:
        if line.strip() and not HEADING.match(line):
            current.append(line.strip())
            continue
        found += [" ".join(current)] if current else []
        found += [line] if line.strip() else []
        current = []
    return tuple(found)


def command_spans() -> list[tuple[str, tuple[str, ...]]]:
    """Returns (page, words) for each command line in a code span of the prose, once each."""
    return sorted({(_relative(page), tuple(shlex.split(span))) for page in PAGES
                   for paragraph in joined_prose(page) for span in CODE_SPAN.findall(paragraph)
                   if COMMAND_SPAN.fullmatch(span)})


@pytest.mark.parametrize(("span", "is_command"), [
    ("auxcheck check --sglang", True), ("auxcheck --version", True), ("make test-fast", True),
    ("pytest -n 2", True), ("auxcheck check: mypy ok (3.1s)", False), ("auxcheck.cli", False),
    ("auxcheck-ci", False), ("pytest.skip", False),
    ("auxcheck = auxcheck.sglang_plugin:register", False),
], ids=["subcommand", "top-level-option", "make", "pytest", "progress-line", "module",
        "profile", "pytest-api", "entry-point"])
def test_a_code_span_is_read_as_a_command_only_when_it_is_one(span: str,
                                                              is_command: bool) -> None:
    """Commands are checked; a progress line, a module, a profile or an entry point is not."""
    assert bool(COMMAND_SPAN.fullmatch(span)) is is_command


@pytest.mark.parametrize(("page", "words"), command_spans(),
                         ids=[f"{page}:{shlex.join(words)}" for page, words in command_spans()])
def test_every_command_in_the_prose_names_what_exists(page: str, words: tuple[str, ...]) -> None:
    """An inline `auxcheck SUB --opt`, `pytest -x` or `make TARGET` is checked as a console
    line is: the subcommand, its options and the make target exist."""
    assert command_problems(words) == []


OPTIONS_LIST = re.compile(r"\bOptions: (.*)")


@dataclass(frozen=True)
class OptionList:
    """The options an ``Options:`` sentence of the prose lists, and the subcommand they are of."""

    page: str
    command: str
    """The subcommand the innermost heading above it names (`` `auxcheck SUB` ``)."""
    spans: tuple[str, ...]
    """Its code spans that spell an option (``-j/--jobs N``), to its paragraph's end."""


def option_lists() -> list[OptionList]:
    """Returns every ``Options:`` list of the pages' prose, with the subcommand it is about."""
    found = []
    for page in PAGES:
        headings: dict[int, str] = {}
        for paragraph in joined_prose(page):
            if match := HEADING.match(paragraph):
                level = len(match[1])
                headings = {k: v for k, v in headings.items() if k < level} | {level: match[2]}
            elif listed := OPTIONS_LIST.search(paragraph):
                named = [m[1] for heading in headings.values()
                         if (m := re.search(r"`auxcheck ([a-z]+)", heading))]
                assert named, f"{_relative(page)}: no heading above `Options:` names a command"
                spans = tuple(s for s in CODE_SPAN.findall(listed[1]) if s.startswith("-"))
                found.append(OptionList(_relative(page), named[-1], spans))
    return found


@pytest.mark.parametrize("listed", option_lists(),
                         ids=[f"{o.page}:auxcheck {o.command}" for o in option_lists()])
def test_every_option_a_command_lists_in_the_prose_exists(listed: OptionList) -> None:
    """Each option of an "Options:" list, to its paragraph's end, is one its subcommand takes
    (`-j/--jobs N`: both spellings)."""
    assert listed.spans
    problems = []
    for span in listed.spans:
        words = [part for word in shlex.split(span)
                 for part in (word.split("/") if word.startswith("-") else [word])]
        problems += command_problems(("auxcheck", listed.command, *words))
    assert problems == []


CODE_MENTION = re.compile(r"\bAUX(\d{1,3})((?:[-–/]\d{3})*)\b")
"""A rule code (``AUX104``), a family (``AUX5``), a range (``AUX401-403``) or a list
(``AUX110/111``)."""


def code_problems(text: str) -> list[str]:
    """Returns each rule code, family or range ``text`` mentions that the rule table lacks."""
    problems = []
    for match in CODE_MENTION.finditer(text):
        first, rest = match[1], re.findall(r"\d{3}", match[2])
        if len(first) < 3:
            named = [] if any(code.startswith(f"AUX{first}") for code in RULES) else [first]
        elif "-" in match[2] or "–" in match[2]:
            named = [str(n) for n in range(int(first), int(rest[-1]) + 1)]
        else:
            named = [first, *rest]
        problems += [f"{match[0]}: no rule AUX{n}" for n in named if f"AUX{n}" not in RULES]
    return problems


@pytest.mark.parametrize(("text", "problems"), [
    ("AUX104, AUX5 and AUX401-403", []),
    ("AUX101–106 and AUX110/111", []),
    ("AUX107", ["AUX107: no rule AUX107"]),
    ("AUX105-107", ["AUX105-107: no rule AUX107"]),
    ("AUX110/116", ["AUX110/116: no rule AUX116"]),
    ("AUX9", ["AUX9: no rule AUX9"]),
], ids=["codes", "ranges", "unknown", "range-past-the-table", "list", "family"])
def test_the_rule_code_check_reads_ranges_lists_and_families(text: str,
                                                            problems: list[str]) -> None:
    """A range covers every code between its ends; a family needs one code of its prefix."""
    assert code_problems(text) == problems


@pytest.mark.parametrize("page", PAGES, ids=[_relative(p) for p in PAGES])
def test_every_rule_code_the_prose_names_exists(page: Path) -> None:
    """Every AUXnnn, family (AUX5) and range (AUX401-403, each code in it) is in the rule
    table; no page names a code as planned or removed, so none is let through."""
    assert code_problems(prose(page)) == []


# ---------------------------------------------------------------------------------------------
# Claims with a source of truth


def page_text(name: str) -> str:
    """Returns a page's text by its path in the checkout."""
    return (REPO / name).read_text(encoding="utf-8")


def test_the_rule_page_holds_the_rule_table_rendered() -> None:
    """docs/rules.md's table is exactly `auxcheck rules --markdown`, so docs cannot drift."""
    assert render_table(markdown=True) in page_text("docs/rules.md")


def test_readme_shows_the_two_set_up_commands() -> None:
    """The set-up is `make demo` and `make test`, and both Makefile targets exist."""
    for target in ("demo", "test"):
        assert f"make {target}" in page_text("README.md")
        assert target in makefile_targets()


def test_ci_runs_exactly_the_readme_test_command() -> None:
    """`.ci/run` runs `make test` and nothing else."""
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in lines if line.strip() and not line.lstrip().startswith("#")
                and not line.startswith(("set ", "cd "))]
    assert commands == ["make test"]


def test_the_readme_is_a_front_page() -> None:
    """The README stays under README_LIMIT bytes and links every page of docs/."""
    readme = page_text("README.md")
    assert len(readme.encode()) < README_LIMIT
    linked = {target.partition("#")[0] for target in LINK.findall(readme)}
    assert {_relative(p) for p in DOCS.glob("*.md")} <= linked


def test_the_readme_capability_table_names_every_command() -> None:
    """Each `auxcheck` subcommand, the pytest plugin and the live guard have a row."""
    readme = page_text("README.md")
    entry_points = [f"`auxcheck {name}" for name in SUBCOMMANDS]
    assert [e for e in [*entry_points, "`pytest --auxcheck`", "`AUXCHECK_GUARD="]
            if e not in readme] == []


def _literal(name: str, tree: ast.Module) -> ast.expr:
    """Returns the expression a module assigns to ``name`` at its top level."""
    [value] = [node.value for node in tree.body
               if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets]
               == [name] or isinstance(node, ast.AnnAssign) and node.value is not None
               and getattr(node.target, "id", None) == name]
    assert value is not None
    return value


def test_the_mutant_count_is_what_the_mutant_tests_run() -> None:
    """properties.md names as many mutants as tests/suite/test_mutants.py's MUTANTS holds."""
    [source] = TESTS.rglob("test_mutants.py")
    mutants = _literal("MUTANTS", ast.parse(source.read_text(encoding="utf-8")))
    assert isinstance(mutants, ast.List)
    assert f"kills {len(mutants.elts)} mutant implementations" in page_text("docs/properties.md")


def test_the_architecture_page_holds_the_layering_tests_table() -> None:
    """docs/architecture.md's capability table is tests/test_layering.py's, row for row."""
    tree = ast.parse((TESTS / "test_layering.py").read_text(encoding="utf-8"))
    capabilities = ast.literal_eval(_literal("CAPABILITIES", tree))
    table_node = _literal("MAY_IMPORT", tree)
    assert isinstance(table_node, ast.Dict)
    may_import = {}
    for key, value in zip(table_node.keys, table_node.values):
        assert isinstance(key, ast.Constant)
        may_import[key.value] = (set(capabilities) if ast.unparse(value) == "set(CAPABILITIES)"
                                 else ast.literal_eval(value))
    page = page_text("docs/architecture.md")
    rows = re.findall(r"^\| (\w+) \| (.+?) \| (.+?) \| .+ \|$", page, flags=re.MULTILINE)
    every = set(capabilities)
    table = {name: (tuple(re.findall(r"`([\w.]+)`", modules)),
                    every if allowed == "every capability" else set(allowed.split(", ")))
             for name, modules, allowed in rows if name in capabilities}
    assert table == {name: (capabilities[name], may_import[name]) for name in capabilities}
    max_lines = ast.literal_eval(_literal("MAX_LINES", tree))
    assert f"**No module over {max_lines} lines**" in page


NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen")


def test_the_planted_bugs_counted_are_those_the_broken_example_plants() -> None:
    """README's "N planted bugs under M rule codes" and development.md's list of codes are
    PLANTED_BUGS and PLANTED_OBSERVER_BUGS of examples/broken_plugin, which the demo checks."""
    outputs = EXAMPLES / "broken_plugin" / "broken_plugin" / "outputs.py"
    tree = ast.parse(outputs.read_text(encoding="utf-8"))
    planted = {**ast.literal_eval(_literal("PLANTED_BUGS", tree)),
               **ast.literal_eval(_literal("PLANTED_OBSERVER_BUGS", tree))}
    codes = Counter(planted.values())
    readme = " ".join(page_text("README.md").split())
    assert (f"{NUMBER_WORDS[len(planted)]} planted bugs under {NUMBER_WORDS[len(codes)]} rule "
            "codes") in readme
    development = " ".join(page_text("docs/development.md").split())
    [listed] = re.findall(rf"{NUMBER_WORDS[len(planted)]} classes, each with one planted bug: "
                          r"(.+?)\), and checks", development)
    shown = Counter({m[1]: 2 if m[2] else 1 for m in re.finditer(r"(AUX\d{3})( twice)?", listed)})
    assert shown == codes


def imported_modules(source: Path) -> set[str]:
    """Returns every module a Python file imports, inside functions too."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def _source_of(module: str) -> Path | None:
    """Returns the file of an auxcheck module, or None for another package's."""
    if module != "auxcheck" and not module.startswith("auxcheck."):
        return None
    base = PACKAGE.parent.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def reached_modules(source: Path) -> set[str]:
    """Returns every auxcheck module a file imports, and what those import in turn."""
    found: set[str] = set()
    todo = [source]
    while todo:
        for module in imported_modules(todo.pop()):
            path = _source_of(module)
            if path is not None and module not in found:
                found.add(module)
                todo.append(path)
    return found


def fronted_packages(face: str) -> set[str]:
    """Returns the private packages a public face re-exports from (``auxcheck._releases`` for
    ``auxcheck.releases``)."""
    path = _source_of(face)
    if path is None:
        return set()
    return {".".join(module.split(".")[:2]) for module in imported_modules(path)
            if module.startswith("auxcheck._")}


def test_the_readme_capability_table_names_where_each_command_lives() -> None:
    """A row's module for `auxcheck SUB` is `auxcheck.cli` or a public module whose work the
    subcommand runs: one its module reaches through its imports, or the face of a private
    package it reaches (faces only re-export, so the command imports the package behind)."""
    rows = re.findall(r"^\| [^|]+ \| `auxcheck ([a-z]+)[^`]*` \| ([^|]+) \|",
                      page_text("README.md"), flags=re.MULTILINE)
    assert {command for command, _ in rows} == set(SUBCOMMANDS)
    wrong = []
    for command, modules in rows:
        reached = reached_modules(PACKAGE / "cli" / f"{command}.py")
        packages = {".".join(name.split(".")[:2]) for name in reached}
        public = {name for name in reached if not re.search(r"(^|\.)_", name)}
        public |= {face for face in re.findall(r"`([\w.]+)`", modules)
                   if fronted_packages(face) and fronted_packages(face) <= packages}
        for module in re.findall(r"`([\w.]+)`", modules):
            if module != "auxcheck.cli" and not any(
                    name == module or name.startswith(f"{module}.") for name in public):
                wrong.append(f"auxcheck {command}: {module} is not where it lives")
    assert wrong == []


def test_the_pytest_page_says_what_the_fallback_runs_of_each_profile() -> None:
    """The header's `1/N of the examples` is explained with N and each built-in profile's
    share of examples, as the suite computes them."""
    from auxcheck._suite.session import FALLBACK_FRACTION, share_of_examples
    from auxcheck.strategies import PROFILES, settings_for

    page = " ".join(page_text("docs/pytest-plugin.md").split())
    assert f"`impl=reference (auto, 1/{FALLBACK_FRACTION} of the examples)`" in page
    for name in PROFILES:
        chosen = settings_for(name)
        share = share_of_examples(chosen, FALLBACK_FRACTION)
        assert f"{share} of `{name}`'s {chosen.max_examples}" in page


def test_a_src_layout_runs_under_pytest_auxcheck_only_with_pythonpath(
        pytester: pytest.Pytester) -> None:
    """As pytest-plugin.md says: the README's conftest cannot import a package under src/
    until pytest's ini sets `pythonpath = src`; then the suite is collected."""
    page = " ".join(page_text("docs/pytest-plugin.md").split())
    assert "`pythonpath = src` under `[pytest]` in `pytest.ini`" in page
    (pytester.mkdir("src") / "my_plugin").mkdir()
    (pytester.path / "src" / "my_plugin" / "__init__.py").write_text(MY_PLUGIN)
    pytester.makeconftest(conftest_of("README.md").text)
    args = ("--auxcheck", "--collect-only", "-q", "-p", "no:randomly", "-p", "no:cacheprovider")
    pytester.makeini("[pytest]\n")
    without = pytester.runpytest_inprocess(*args)
    shown = without.stdout.str() + without.stderr.str()
    assert without.ret != 0
    for quoted in ("ImportError while loading conftest", "No module named 'my_plugin'"):
        assert f"`{quoted}`" in page and quoted in shown
    pytester.makeini("[pytest]\npythonpath = src\n")
    with_path = pytester.runpytest_inprocess(*args)
    assert with_path.ret == 0, with_path.stdout.str()
    with_path.stdout.fnmatch_lines(["auxcheck::*AUX104-single-copy*"])


PYRIGHT_SILENCER = "# pyright: reportMissingModuleSource=false"


@pytest.mark.slow
def test_pyright_warns_about_stubs_without_sglang_and_is_silenced_as_the_stubs_page_says(
        tmp_path: Path) -> None:
    """Without SGLang, pyright warns once per import of a stubbed module, in the words the page
    quotes, and exits 0; the page's file comment and setting silence it."""
    page = " ".join(page_text("docs/stubs.md").split())
    assert f"`{PYRIGHT_SILENCER}`" in page and "`reportMissingModuleSource = false`" in page
    imports = ("from sglang.srt.managers.auxiliary_output import CommittedTokens\n"
               "from sglang.srt.managers.schedule_batch import ScheduleBatch\n")
    plain, quiet = tmp_path / "plain.py", tmp_path / "quiet.py"
    plain.write_text(imports)
    quiet.write_text(f"{PYRIGHT_SILENCER}\n{imports}")
    default = run_pyright([plain, quiet], root=tmp_path / "default",
                          settings={"reportMissingModuleSource": "warning"})
    warned = default.in_file(plain)
    assert [(w.line, w.severity, w.rule) for w in warned] == [
        (1, "warning", "reportMissingModuleSource"), (2, "warning", "reportMissingModuleSource")]
    assert f"`warning: {warned[0].message} ({warned[0].rule})`" in page
    assert (default.status, default.in_file(quiet)) == (0, [])
    off = run_pyright([plain], root=tmp_path / "off",
                      settings={"reportMissingModuleSource": False})
    assert off.diagnostics == ()


@pytest.mark.slow
def test_the_moves_summary_benchmarks_shows_is_what_auxcheck_moves_prints(
        capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks.md's `auxcheck moves --from 0.5.19 --to 0.5.23` line is the command's last
    line on stderr today, read from the real wheels."""
    [shown] = [b for b in blocks_of("text") if b.page == "docs/benchmarks.md"
               and b.text.startswith("auxcheck moves:")]
    assert auxcheck_main(["moves", "--from", "0.5.19", "--to", "0.5.23", "-q",
                          "--cache", str(REAL_CACHE)]) == 0
    assert capsys.readouterr().err.splitlines()[-1] + "\n" == shown.text


# ---------------------------------------------------------------------------------------------
# Measured figures: each labelled with when and where it was measured


FIGURE_PAGES = ("README.md", "docs/benchmarks.md", "docs/development.md", "docs/live.md")
"""The pages whose times, ratios and sizes are measurements."""
FIGURE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s?(?:µs|ms|s|KB|MB|GB|MiB|GiB)|x)(?!\w)")
"""A time (``0.14 s``, ``57.6 ms``, ``1.24 µs``), a ratio (``1.97x``) or a size (``1.9 GB``)."""
LIMIT_BEFORE = re.compile(r"\b(?:under|over|at most|at least|within|passes|past)\s$")
LIMIT_AFTER = re.compile(r"^\s+target\b")
MEASURED = re.compile(r"measured on (\d{4}-\d{2}-\d{2}) at ([0-9a-f]{7,40})\b", re.IGNORECASE)
"""The label: ``measured on DATE at COMMIT``, COMMIT the one that recorded the figures."""


@dataclass(frozen=True)
class Unit:
    """A paragraph, a list item or a table with the paragraph above it (its caption)."""

    page: str
    line: int
    """Its first line (1-based)."""
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        """Returns its lines joined into one."""
        return " ".join(self.lines)


def figure_units(page: Path) -> list[Unit]:
    """Returns the paragraphs, list items and captioned tables of a page's prose."""
    units: list[Unit] = []
    lines: list[str] = []
    start = 0
    for number, line in enumerate([*prose(page).splitlines(), ""], 1):
        item = re.match(r"\s*(?:[-*]|\d+\.) ", line) is not None
        table = line.startswith("|") and bool(lines) and not lines[-1].startswith("|")
        if lines and (not line.strip() or item or table or HEADING.match(line)):
            units.append(Unit(_relative(page), start, tuple(lines)))
            lines = []
        if line.strip():
            start = start if lines else number
            lines.append(line.strip())
    joined: list[Unit] = []
    for unit in units:
        if unit.lines[0].startswith("|") and joined and not HEADING.match(joined[-1].lines[0]):
            joined[-1] = Unit(unit.page, joined[-1].line, joined[-1].lines + unit.lines)
        else:
            joined.append(unit)
    return joined


def measured_figures(unit: Unit) -> list[str]:
    """Returns the figures of ``unit`` that are measurements: not a limit ("under 5 ms", "at
    most 2x") nor a target ("the 2x target"), nor quoted in a code span; a table's bare
    number cells count too."""
    text = CODE_SPAN.sub("`...`", unit.text)
    found = [m[0] for m in FIGURE.finditer(text) if not LIMIT_BEFORE.search(text[:m.start()])
             and not LIMIT_AFTER.match(text[m.end():])]
    cells = [c.strip() for line in unit.lines if line.startswith("|") for c in line.split("|")]
    return found + [c for c in cells if re.fullmatch(r"[+\d][\d.,/ +]*", c)]


@cache
def commit_date(commit: str) -> str | None:
    """Returns the date (YYYY-MM-DD) of ``commit``; "" when the checkout's history lacks it;
    None when git cannot say (no git, no history, a shallow clone)."""
    try:
        shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=REPO,
                                 capture_output=True, text=True, check=False)
        done = subprocess.run(["git", "log", "-1", "--format=%ad", "--date=short", commit, "--"],
                              cwd=REPO, capture_output=True, text=True, check=False)
    except OSError:
        return None
    if shallow.stdout.strip() != "false":
        return None
    return done.stdout.strip() if done.returncode == 0 else ""


@pytest.mark.parametrize(("text", "figures"), [
    ("takes 1.52 s, against 0.14 s: 10.5x slower", ["1.52 s", "0.14 s", "10.5x"]),
    ("target under 5 ms; at most 2x; within 2.5x; the 5x target", []),
    ("about 1.9 GB, 57.6 ms and 1.24 µs", ["1.9 GB", "57.6 ms", "1.24 µs"]),
    ("SGLang 0.5.23, torch==2.13.0, 8 static buffers, 3,510 files", []),
    ("| ratio | 1.97x |\n| copy, bare | 0.9 |", ["1.97x", "0.9"]),
    ("a figure such as `0.14 s` or `1.97x`", []),
], ids=["times-and-ratio", "limits-and-targets", "sizes-and-units", "no-figure", "table",
        "quoted"])
def test_a_measured_figure_is_a_time_ratio_or_size_that_is_no_limit(text: str,
                                                                    figures: list[str]) -> None:
    """Versions, counts and limits are not measurements; a table's number cells are."""
    assert measured_figures(Unit("page.md", 1, tuple(text.splitlines()))) == figures


@pytest.mark.parametrize("name", FIGURE_PAGES)
def test_every_measured_figure_says_when_and_at_which_commit(name: str) -> None:
    """A paragraph, list item or table (with its caption) holding a measured time, ratio or
    size carries `measured on DATE at COMMIT`: COMMIT in the history, of that DATE."""
    problems = []
    for unit in figure_units(REPO / name):
        figures = measured_figures(unit)
        labels = MEASURED.findall(unit.text)
        if figures and not labels:
            problems.append(f"{unit.page}:{unit.line}: {', '.join(figures[:3])} unlabelled")
        for date, commit in labels:
            known = commit_date(commit)
            if known is not None and known != date:
                problems.append(f"{unit.page}:{unit.line}: {commit} is "
                                f"{'not a commit here' if not known else f'of {known}'}, "
                                f"not of {date}")
    assert problems == []
