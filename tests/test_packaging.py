"""The release as a user gets it: the sdist and wheel, and a fresh environment that installs it.

``python -m build`` makes the sdist and, from it, the wheel; ``twine check --strict`` must
pass on both, and the wheel must hold the package, the stubs and the entry points. Then a
fresh virtual environment (``python -m venv`` in a temporary folder, never the project's
``.venv``) gets torch pinned as the Makefile pins it (any other request pulls a multi-GB CUDA
build), and runs README.md's Install commands as written, in the unpacked sdist: the wheel
they build must be the one ``python -m build`` made. The Quick start's commands then run as
written on a copy of the capture example, and mypy on copies of typed cases finds the
installed stubs. Nothing of the checkout can leak in: every command runs in a temporary
folder, without ``PYTHONPATH`` or ``MYPYPATH``, and the tests check that what runs is the
installed package.

The build and the environment are made once per run, whichever pytest-xdist workers ask.
"""

from __future__ import annotations

import configparser
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

import pytest
from helpers.paths import PACKAGE, REPO, STUBS, TYPED, torch_pin
from helpers.processes import finish
from helpers.releases import REAL_CACHE

from auxcheck import __version__
from auxcheck.releases import CACHE_ENV

if sys.version_info >= (3, 11):
    import tomllib
else:  # the backport auxcheck depends on there
    import tomli as tomllib

pytestmark = pytest.mark.slow

INSTALL_LIMIT = 900.0
"""Seconds a pip install may take before it counts as hung (CI's pip cache may be cold)."""

COMMAND_LIMIT = 300.0
"""Seconds any other command may take before it counts as hung (each takes under 30)."""

LEAKY_VARIABLES = frozenset({
    "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "MYPYPATH", "VIRTUAL_ENV",
    "MYPY_CACHE_DIR",
})
"""Variables through which the checkout, or the project's .venv, could reach the fresh one."""

EXAMPLE = "capture_plugin"
"""The example the Quick start runs on: a clean plugin whose conftest names its outputs."""

PLACEHOLDERS = {"src/": f"{EXAMPLE}/"}
"""What the Quick start's placeholders stand for in the example (``src/``: its sources)."""

PASS_CASE, FAIL_CASE = "pass_plugin.py", "fail_old_imports.py"
"""Typed cases mypy checks against the installed stubs; the fail case with its ignores cut."""

IGNORE = re.compile(r"  # type: ignore\[(?P<code>[a-z-]+)\]")
MYPY_ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")

ENTRY_POINTS = [
    ("console_scripts", "auxcheck", "auxcheck.cli:main"),
    ("pytest11", "auxcheck", "auxcheck.pytest_plugin"),
    ("sglang.srt.plugins", "auxcheck", "auxcheck.sglang_plugin:register"),
    ("hypothesis", "auxcheck", "auxcheck._suite.hypothesis_hook:_hypothesis_setup_hook"),
]
"""Every entry point the wheel must declare: the CLI, the pytest plugin, the guard, the
Hypothesis hook."""

LICENSE = "LICENSE"
"""The license file at the root of the checkout, shipped in the sdist and the wheel."""

METADATA = [
    ("Name", "auxcheck"),
    ("Version", __version__),
    ("Description-Content-Type", "text/markdown"),
    ("License-Expression", "Apache-2.0"),
    ("License-File", LICENSE),
    ("Project-URL", "Source, https://github.com/auxcheck/auxcheck"),
    ("Requires-Python", ">=3.10"),
    ("Provides-Extra", "contracts"),
    ("Classifier", "Typing :: Typed"),
]
"""Fields the wheel's METADATA must hold (PyPI renders the README as Markdown; the license
file ships beside the expression; the package ships py.typed, so it is typed, not stubs
only)."""

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```$", flags=re.MULTILINE | re.DOTALL)


# ---------------------------------------------------------------------------------------------
# Reading README.md and the Makefile


def readme_commands(heading: str) -> list[tuple[str, ...]]:
    """Returns the command lines of the first console block under README.md's ``## heading``."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```console\n", 1)[1].split("```", 1)[0]
    return [tuple(words) for line in block.splitlines()
            if (words := shlex.split(line, comments=True))]


def install_commands() -> list[tuple[str, ...]]:
    """Returns the Install section's commands but the editable install: the wheel's route.

    The editable install is the checkout's route, the one ``make test`` sets up its own
    ``.venv`` with; the wheel route would only replace it.
    """
    return [words for words in readme_commands("Install") if "-e" not in words]


# ---------------------------------------------------------------------------------------------
# Running commands


@dataclass(frozen=True, slots=True)
class Ran:
    """One command's exit status and what it wrote (stdout and stderr together)."""

    command: str
    status: int
    output: str


def run(command: Sequence[str | Path], *, cwd: Path, env: dict[str, str] | None = None,
        limit: float = COMMAND_LIMIT) -> Ran:
    """Returns what ``command`` did, run in ``cwd``; fails the test as hung after ``limit``."""
    words = [str(word) for word in command]
    process = subprocess.Popen(words, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    out, _ = finish(process, shlex.join(words), limit=limit)
    return Ran(shlex.join(words), process.returncode, out)


def succeeded(ran: Ran) -> Ran:
    """Returns ``ran``; fails the test with its output when it exited non-zero."""
    if ran.status != 0:
        pytest.fail(f"`{ran.command}` exited {ran.status}:\n{ran.output[-6000:]}")
    return ran


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str,
              make: Callable[[Path], None]) -> Path:
    """Returns the folder ``name``, filled by ``make`` once per run of the suite.

    Under pytest-xdist the first worker to ask makes it while the others wait on a lock,
    then read it: the folder lies beside the workers' own temporary folders. A failed
    ``make`` is recorded, and fails every later asker with its message instead of a rerun.
    """
    base = tmp_path_factory.getbasetemp()
    root = base.parent if "PYTEST_XDIST_WORKER" in os.environ else base
    folder, done, failed = root / name, root / f"{name}.done", root / f"{name}.failed"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if failed.exists():
            pytest.fail(f"making {name} failed in another worker:\n{failed.read_text()}")
        if not done.exists():  # made where it stays: a virtual environment cannot be moved
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            try:
                make(folder)
            except BaseException as error:
                failed.write_text(str(error))
                raise
            done.touch()
    return folder


# ---------------------------------------------------------------------------------------------
# The release


@dataclass(frozen=True, slots=True)
class Release:
    """What ``python -m build`` made: the sdist and the wheel built from it."""

    sdist: Path
    wheel: Path


def only(folder: Path, pattern: str) -> Path:
    """Returns the one file in ``folder`` matching ``pattern``."""
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, f"expected one {pattern} in {folder}, found {found}"
    return found[0]


def _build(folder: Path) -> None:
    succeeded(run([sys.executable, "-m", "build", "--outdir", folder / "dist", REPO],
                  cwd=folder, env=clean_environment(), limit=INSTALL_LIMIT))


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    """Returns the sdist and wheel ``python -m build`` made from the checkout (once a run)."""
    dist = made_once(tmp_path_factory, "release", _build) / "dist"
    return Release(only(dist, "*.tar.gz"), only(dist, "*.whl"))


def clean_environment() -> dict[str, str]:
    """Returns this process's environment less what could carry the checkout into a child."""
    return {key: value for key, value in os.environ.items()
            if key not in LEAKY_VARIABLES and not key.startswith("PYTEST_")}


def test_the_sdist_and_the_wheel_pass_twine_check(release: Release) -> None:
    """`twine check --strict` passes both (metadata complete, the README renders on PyPI)."""
    ran = run([sys.executable, "-m", "twine", "check", "--strict", release.sdist, release.wheel],
              cwd=release.wheel.parent, env=clean_environment())
    assert (ran.status, ran.output.count("PASSED")) == (0, 2), ran.output


def _source_files(root: Path, prefix: str) -> set[str]:
    return {f"{prefix}/{path.relative_to(root).as_posix()}" for path in root.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}


def test_the_wheel_holds_the_package_and_the_stubs_and_nothing_else(release: Release) -> None:
    """Every file of auxcheck/ (py.typed too) and of the sglang stubs, the metadata and the
    license."""
    with zipfile.ZipFile(release.wheel) as wheel:
        names = set(wheel.namelist())
    info = f"auxcheck-{__version__}.dist-info"
    expected = (_source_files(PACKAGE, "auxcheck") | _source_files(STUBS, "sglang-stubs")
                | {f"{info}/{name}" for name in ("METADATA", "WHEEL", "RECORD", "entry_points.txt",
                                                  f"licenses/{LICENSE}")})
    assert {"auxcheck/py.typed", "sglang-stubs/py.typed"} <= expected
    assert sorted(names ^ expected) == []


def _wheel_text(wheel: Path, name: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(f"auxcheck-{__version__}.dist-info/{name}").decode()


@pytest.mark.parametrize(("group", "name", "target"), ENTRY_POINTS,
                         ids=[group for group, _, _ in ENTRY_POINTS])
def test_the_wheel_declares_the_entry_point(release: Release, group: str, name: str,
                                            target: str) -> None:
    """The CLI, the pytest plugin, the guard's SGLang plugin and the Hypothesis hook."""
    declared = configparser.ConfigParser(delimiters=("=",))
    declared.read_string(_wheel_text(release.wheel, "entry_points.txt"))
    assert declared.get(group, name, fallback=None) == target


@pytest.mark.parametrize(("field", "value"), METADATA, ids=[f for f, _ in METADATA])
def test_the_wheel_metadata_holds_the_field(release: Release, field: str, value: str) -> None:
    """Name, version, the README as Markdown, the license, the Python range, the extra."""
    metadata = HeaderParser().parsestr(_wheel_text(release.wheel, "METADATA"))
    assert value in (metadata.get_all(field) or [])


def test_the_wheel_and_the_sdist_hold_the_license_file(release: Release) -> None:
    """The wheel's dist-info/licenses/ and the sdist's root hold LICENSE as the checkout has it;
    the sdist holds the metadata hook too, so the wheel built from it gets the same README."""
    with zipfile.ZipFile(release.wheel) as wheel:
        shipped = wheel.read(f"auxcheck-{__version__}.dist-info/licenses/{LICENSE}")
    root = release.sdist.name.removesuffix(".tar.gz")
    with tarfile.open(release.sdist) as sdist:
        members = set(sdist.getnames())
        member = sdist.extractfile(f"{root}/{LICENSE}")
        assert member is not None
        in_sdist = member.read()
    assert shipped == in_sdist == (REPO / LICENSE).read_bytes()
    assert {f"{root}/hatch_build.py", f"{root}/README.md"} <= members
    assert b"Apache License" in shipped and b"Version 2.0, January 2004" in shipped


def _links(markdown: str) -> list[str]:
    """Returns the target of each inline link outside fenced blocks, in order."""
    return LINK.findall(FENCED.sub("", markdown))


def _release_base() -> str:
    """Returns where the README's relative links point on the package index: the Source URL
    of pyproject.toml's [project.urls] at this release's tag."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return f"{project['urls']['Source']}/blob/v{__version__}/"


def test_the_long_description_links_absolutely_to_the_files_the_readme_links(
        release: Release) -> None:
    """Every link of the README in METADATA is a URL or an in-page anchor; each relative one
    of README.md became the Source URL at the release's tag, naming a file of the checkout."""
    description = HeaderParser().parsestr(_wheel_text(release.wheel, "METADATA")).get_payload()
    assert isinstance(description, str)
    shipped = _links(description)
    assert [t for t in shipped if not re.match(r"[a-z]+:|#", t)] == []
    readme = _links((REPO / "README.md").read_text(encoding="utf-8"))
    relative = [t for t in readme if not re.match(r"[a-z]+:|#", t)]
    assert relative, "README.md has no relative link left to check"
    base = _release_base()
    assert [t.removeprefix(base) for t in shipped if t.startswith(base)] == relative
    assert [t for t in relative if not (REPO / t.partition("#")[0]).is_file()] == []


def test_the_readme_in_the_repository_keeps_its_relative_links() -> None:
    """GitHub resolves them and tests/test_docs.py checks them: none is the release's URL."""
    readme = _links((REPO / "README.md").read_text(encoding="utf-8"))
    assert [t for t in readme if t.startswith("docs/")] != []
    assert [t for t in readme if t.startswith(_release_base())] == []


# ---------------------------------------------------------------------------------------------
# A fresh virtual environment, installed as the README says


@dataclass(frozen=True, slots=True)
class Installed:
    """A fresh virtual environment with the wheel installed by the README's commands."""

    venv: Path
    source: Path
    """The unpacked sdist, where the README's Install commands ran."""
    ran: tuple[Ran, ...]
    """The README's Install commands, as they ran."""

    @property
    def env(self) -> dict[str, str]:
        """Returns the environment a user who activated the venv has (the checkout out of it)."""
        env = clean_environment()
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.venv)
        env[CACHE_ENV] = str(REAL_CACHE)  # the SGLang wheels: a cache, not code
        return env

    def resolve(self, words: Sequence[str]) -> list[str]:
        """Returns a README command line with its program taken from the venv."""
        if words[0] not in ("pip", "python", "auxcheck", "pytest", "mypy"):
            pytest.fail(f"the README's `{shlex.join(words)}` runs no program of the venv")
        return [str(self.venv / "bin" / words[0]), *words[1:]]


def _unpack(sdist: Path, into: Path) -> Path:
    with tarfile.open(sdist) as archive:
        if hasattr(tarfile, "data_filter"):
            archive.extractall(into, filter="data")
        else:  # Python before 3.10.12 / 3.11.4: the sdist is our own
            archive.extractall(into)
    return into / sdist.name.removesuffix(".tar.gz")


def _install(release: Release) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        venv = folder / "venv"
        succeeded(run([sys.executable, "-m", "venv", venv], cwd=folder,
                      env=clean_environment()))
        installed = Installed(venv, _unpack(release.sdist, folder), ())
        succeeded(run([venv / "bin" / "pip", "install", "numpy", torch_pin()], cwd=folder,
                      env=installed.env, limit=INSTALL_LIMIT))
        ran = [run(installed.resolve(words), cwd=installed.source, env=installed.env,
                   limit=INSTALL_LIMIT) for words in install_commands()]
        (folder / "ran.json").write_text(json.dumps(
            [[r.command, r.status, r.output] for r in ran]))
    return make


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, release: Release) -> Installed:
    """Returns the fresh venv, with the wheel installed by the README's commands (once a run)."""
    folder = made_once(tmp_path_factory, "fresh-venv", _install(release))
    ran = tuple(Ran(*entry) for entry in json.loads((folder / "ran.json").read_text()))
    return Installed(folder / "venv", folder / release.sdist.name.removesuffix(".tar.gz"), ran)


def _digests(wheel: Path) -> dict[str, str]:
    """Returns each file's digest, less the two that name the tool that built the wheel."""
    with zipfile.ZipFile(wheel) as archive:
        return {name: hashlib.sha256(archive.read(name)).hexdigest()
                for name in archive.namelist() if not name.endswith(("/WHEEL", "/RECORD"))}


def test_the_readme_install_commands_install_the_built_wheel(
    installed: Installed, release: Release
) -> None:
    """They run, building the wheel `python -m build` made, and pip installs it with its extra."""
    assert [(r.command, r.status) for r in installed.ran if r.status != 0] == [], \
        "\n".join(r.output[-4000:] for r in installed.ran)
    installs = [r for r in installed.ran if re.search(r"pip install \S*\.whl\[contracts\]",
                                                       r.command)]
    assert len(installs) == 1, "the Install section installs no wheel with [contracts]"
    built = installed.source / "dist" / release.wheel.name
    assert _digests(built) == _digests(release.wheel)


PROBE = """\
import json, sysconfig
from importlib.metadata import distribution
import auxcheck
site = sysconfig.get_paths()["purelib"]
dist = distribution("auxcheck")
loaded = [f"{e.group}:{e.name}" for e in dist.entry_points if e.load() is not None]
direct = dist.read_text("direct_url.json") or "{}"
print(json.dumps({"site": site, "auxcheck": auxcheck.__file__, "loaded": sorted(loaded),
                  "editable": json.loads(direct).get("dir_info", {}).get("editable", False)}))
"""


def test_the_fresh_environment_runs_the_installed_package_not_the_checkout(
    installed: Installed, tmp_path: Path
) -> None:
    """auxcheck and the stubs come from its site-packages, not editable; each entry point loads."""
    ran = succeeded(run([installed.venv / "bin" / "python", "-c", PROBE], cwd=tmp_path,
                        env=installed.env))
    probe = json.loads(ran.output.splitlines()[-1])
    site = Path(probe["site"])
    assert Path(probe["auxcheck"]).is_relative_to(site / "auxcheck")
    assert probe["editable"] is False
    assert (site / "sglang-stubs" / "py.typed").is_file()
    assert [p.name for p in site.glob("*.pth") if str(REPO) in p.read_text()] == []
    assert probe["loaded"] == sorted(f"{group}:{name}" for group, name, _ in ENTRY_POINTS)


def example_copy(installed: Installed, into: Path) -> Path:
    """Returns a copy of the example plugin, taken from the unpacked sdist, in ``into``."""
    return Path(shutil.copytree(installed.source / "examples" / EXAMPLE, into / EXAMPLE))


QUICK_START = [("auxcheck", "--version"), *readme_commands("Quick start for a plugin author")]


def test_the_quick_start_runs_in_order_in_one_project_of_the_fresh_environment(
    installed: Installed, tmp_path: Path
) -> None:
    """The README's Quick start, as written, in order, on one copy of the example (as a user
    runs it, so a later `auxcheck check` finds what the earlier one cached): each succeeds."""
    plugin = example_copy(installed, tmp_path)
    failed = []
    for words in QUICK_START:
        command = installed.resolve([PLACEHOLDERS.get(word, word) for word in words])
        ran = run(command, cwd=plugin, env=installed.env)
        if (ran.status, "Traceback" in ran.output) != (0, False):
            failed.append(f"$ {shlex.join(words)}: exit {ran.status}\n{ran.output[-6000:]}")
    assert not failed, "\n".join(failed)


def _cut_ignores(source: Path, target: Path) -> set[tuple[int, str]]:
    """Writes ``source`` without its ``# type: ignore[code]`` comments to ``target``; returns
    the (line, code) errors those comments marked."""
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    target.write_text("".join(IGNORE.sub("", line) for line in lines), encoding="utf-8")
    return {(number, match["code"]) for number, line in enumerate(lines, 1)
            for match in IGNORE.finditer(line)}


def test_mypy_in_the_fresh_environment_checks_against_the_installed_stubs(
    installed: Installed, tmp_path: Path
) -> None:
    """A conforming plugin passes `mypy --strict`; old imports get exactly their errors."""
    shutil.copy(TYPED / PASS_CASE, tmp_path / PASS_CASE)
    expected = _cut_ignores(TYPED / FAIL_CASE, tmp_path / FAIL_CASE)
    (tmp_path / "mypy.ini").write_text("[mypy]\n")
    ran = run([installed.venv / "bin" / "mypy", "--strict", "--config-file", "mypy.ini",
               PASS_CASE, FAIL_CASE], cwd=tmp_path, env=installed.env)
    errors = {(match["path"], int(match["line"]), match["code"])
              for line in ran.output.splitlines() if (match := MYPY_ERROR.match(line))}
    assert ran.status == 1, ran.output
    # Without the stubs both files would get import errors instead (SGLang is not installed).
    assert errors == {(FAIL_CASE, line, code) for line, code in expected}, ran.output
