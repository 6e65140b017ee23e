"""Tests for `auxcheck check`'s stages run beside each other (auxcheck/_check/beside.py, run_stages):
mypy and the contract suite wait on their child processes on threads of their own, the results
are those of a run one after another, a stop ends every child, and the project is walked once.

Nothing here times anything: that the stages overlap is shown by a mypy plugin that waits
for a file the contract suite's conftest writes, which only a run beside each other gets.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers.plugin_sources import CLEAN_OUTPUT, FIXABLE
from helpers.processes import alive, ctrl_c_as_at_a_terminal, finish, hang_guard, wait_until
from helpers.releases import REAL_CACHE

from auxcheck._check import stages
from auxcheck._check.base import CheckOptions, StageResult
from auxcheck._check.beside import calls_beside, can_end_children
from auxcheck._check.stages import run_stages, stages_at_once
from auxcheck._core.errors import Stopped
from auxcheck._isolation.bounded import run_bounded
from auxcheck.cli.check import main, render_json, render_table

linux = pytest.mark.skipif(not can_end_children(), reason="ends children found in /proc")

CLEAN_CONFTEST = "import pytest\nimport torch\n\n\n" + CLEAN_OUTPUT + textwrap.dedent("""

    @pytest.fixture
    def auxcheck_device_output():
        return Clean()
""")
"""A conftest whose one device output keeps the contract."""

NARROW = ("--", "-p", "no:randomly", "-k", "AUX104-single-copy or AUX201 or imports")
"""Pytest arguments that keep the contract stage to a few items."""

SLEEPER = [sys.executable, "-c", "import time; time.sleep(1000)"]


def project(folder: Path, *, package: str = "VALUE: int = 1\n",
            conftest: str = CLEAN_CONFTEST) -> Path:
    """Writes a package ``plug`` holding ``package`` and a ``conftest``; returns ``folder``."""
    (folder / "plug").mkdir(parents=True)
    (folder / "plug" / "__init__.py").write_text(package)
    (folder / "conftest.py").write_text(conftest)
    return folder


def mypy_plugin(folder: Path, body: str) -> None:
    """Gives the project in ``folder`` a mypy configuration loading a plugin that runs
    ``body`` (indented code, ``os`` and ``time`` imported) as mypy starts."""
    (folder / "mypy.ini").write_text("[mypy]\nplugins = waiting_plugin.py\n")
    (folder / "waiting_plugin.py").write_text(
        "import os\nimport time\n\nfrom mypy.plugin import Plugin\n\n\n"
        f"def plugin(version):\n{textwrap.indent(textwrap.dedent(body), '    ')}"
        "    return Plugin\n")


def sleeping_child(ready: threading.Event, pids: list[int]) -> str:
    """Runs a child that sleeps without end, bounded; records its pid, sets ``ready``."""
    def started(data: bytes) -> float:
        if not pids:
            pids.extend(c for c in _children(os.getpid()) if c not in pids)
            ready.set()
        return 0

    done = run_bounded(SLEEPER, progress="sleeper", count=started)
    return done.text()


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


# ---------------------------------------------------------------- Beside


def test_calls_beside_each_other_run_at_the_same_time() -> None:
    """Two calls that each wait for the other's event both return: they ran at once."""
    first, second = threading.Event(), threading.Event()

    def one() -> bool:
        first.set()
        return second.wait(60)

    def other() -> bool:
        second.set()
        return first.wait(60)

    with hang_guard("two calls beside each other"), calls_beside() as pool:
        calls = [pool.start("one", one), pool.start("other", other)]
    assert [call.result() for call in calls] == [True, True]


@linux
def test_a_stop_while_calls_wait_on_children_ends_every_child_and_thread() -> None:
    """A stop raised in this thread while a call waits on its bounded child: the child's
    process group is ended, the call's thread returns, and the stop goes on up."""
    ready, pids = threading.Event(), list[int]()
    with (hang_guard("a stop beside a call waiting on its child"), pytest.raises(Stopped),
          calls_beside() as pool):
        call = pool.start("sleeper", lambda: sleeping_child(ready, pids))
        assert ready.wait(60), "the child did not start"
        raise Stopped(signal.SIGINT)
    assert (call.done, pool.stopping.is_set(), pids != []) == (True, True, True)
    wait_until(lambda: not any(map(alive, pids)), "the sleeping child ending")


@linux
def test_a_call_that_raises_ends_the_others_and_its_error_comes_here() -> None:
    """One call raises while another waits on its child: the other's child is ended and the
    error is raised by the `with`."""
    ready, pids = threading.Event(), list[int]()

    def broken() -> None:
        ready.wait(60)
        raise ValueError("broken")

    with (hang_guard("a call raising beside one waiting on its child"),
          pytest.raises(ValueError, match="broken"), calls_beside() as pool):
        pool.start("sleeper", lambda: sleeping_child(ready, pids))
        pool.start("broken", broken)
    wait_until(lambda: not any(map(alive, pids)), "the sleeping child ending")


# ---------------------------------------------------------------- when stages run beside


@pytest.mark.parametrize(("changes", "beside"), [
    ({}, ["mypy", "contract"]),
    ({"at_once": False}, []),
    ({"jobs": 1}, []),
    ({"jobs": 1, "at_once": True}, ["mypy", "contract"]),
    ({"skip": frozenset({"mypy"})}, []),
    ({"skip": frozenset({"mypy"}), "releases": ("0.5.23",)}, ["contract"]),
    ({"skip": frozenset({"mypy", "contract"}), "releases": ("0.5.23",)}, []),
], ids=["default", "sequential", "jobs-1", "jobs-1-forced", "contract-alone",
        "contract-beside-releases", "releases-alone"])
@linux
def test_mypy_and_the_contract_run_beside_the_rest_unless_asked_not_to(
        changes: dict[str, object], beside: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """With two cores: mypy and the contract suite beside the rest, unless --sequential or
    -j 1 says one after another, or only one stage has work."""
    monkeypatch.setattr(stages, "usable_cores", lambda: 2)
    options = CheckOptions(Path("p"), **changes)  # type: ignore[arg-type]
    assert stages_at_once(options) == beside


def test_one_core_runs_the_stages_one_after_another(monkeypatch: pytest.MonkeyPatch) -> None:
    """On one core the stages run one after another."""
    monkeypatch.setattr(stages, "usable_cores", lambda: 1)
    assert stages_at_once(CheckOptions(Path("p"))) == []


# ---------------------------------------------------------------- the same results


def _untimed(results: list[StageResult]) -> tuple[str, list[str]]:
    """Returns the JSON document without times (nor the results file's temporary folder,
    another at each run), and the table without its time column."""
    document = json.loads(render_json(Path("p"), results))
    for stage in document["stages"]:
        stage["seconds"] = 0
        if "command" in stage["data"]:
            stage["data"]["command"] = [re.sub(r"auxcheck-[^/]+", "auxcheck-TMP", word)
                                        for word in stage["data"]["command"]]
    table = [line.rsplit("  ", 1)[0] for line in render_table(Path("p"), results).splitlines()]
    return json.dumps(document, indent=1), table


@pytest.mark.slow
@linux
def test_stages_beside_each_other_give_what_one_after_another_gives(tmp_path: Path) -> None:
    """An old import that the scan, mypy and the contract's imports item all report: run
    beside each other or one after another, the findings, what is referred to the scan's,
    the table and the verdict are the same; beside, mypy and pytest are waited for on
    threads of their own."""
    folder = project(tmp_path / "plugin", package=FIXABLE)
    threads: dict[bool, dict[str, str]] = {True: {}, False: {}}
    found = {}
    with hang_guard("check beside and one after another"):
        for at_once in (True, False):
            def started(index: int, stage: str, seen: dict[str, str] = threads[at_once]) -> None:
                seen[stage] = threading.current_thread().name

            options = CheckOptions(folder, at_once=at_once, stream=False, timeout=240,
                                   pytest_args=NARROW[1:])
            found[at_once] = run_stages(options, started=started)
    assert _untimed(found[True]) == _untimed(found[False])
    assert [(r.stage, r.result, len(r.referred)) for r in found[True]] == [
        ("imports", "fail", 0), ("mypy", "ok", 1), ("contract", "ok", 1),
        ("sglang", "skipped", 0)]
    main_thread = threading.main_thread().name
    assert threads == {
        True: {"imports": main_thread, "mypy": "auxcheck-mypy", "contract": "auxcheck-contract",
               "sglang": main_thread},
        False: dict.fromkeys(("imports", "mypy", "contract", "sglang"), main_thread)}


WAITS_FOR_CONTRACT = """\
marker = os.environ["AUXCHECK_TEST_MARKER"]
for _ in range(1200):  # 120 s at most: one after another, the conftest never comes first
    if os.path.exists(marker):
        break
    time.sleep(0.1)
with open(marker + ".seen", "w") as out:
    out.write("yes" if os.path.exists(marker) else "no")
"""
"""A mypy plugin's start that waits for the contract suite's conftest to write the marker."""


@pytest.mark.slow
@linux
def test_check_runs_mypy_while_the_contract_suite_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A mypy plugin that waits for a file the contract suite's conftest writes sees it:
    `auxcheck check` ran mypy while the contract suite ran, and both passed."""
    folder = project(tmp_path / "plugin", conftest=CLEAN_CONFTEST + textwrap.dedent("""
        import os
        open(os.environ["AUXCHECK_TEST_MARKER"], "w").close()
    """))
    mypy_plugin(folder, WAITS_FOR_CONTRACT)
    marker = tmp_path / "contract-started"
    monkeypatch.setenv("AUXCHECK_TEST_MARKER", str(marker))
    with hang_guard("check with mypy waiting for the contract suite"):
        status = main(["--format", "json", "--timeout", "240", str(folder), *NARROW])
    stages = {s["stage"]: s for s in json.loads(capsys.readouterr().out)["stages"]}
    assert (status, stages["mypy"]["result"], stages["contract"]["result"]) == (0, "ok", "ok"), (
        stages["mypy"]["summary"], stages["contract"]["summary"])
    assert Path(f"{marker}.seen").read_text() == "yes"


# ---------------------------------------------------------------- a stop


SLEEPS = """\
with open(os.environ["AUXCHECK_TEST_PID_FILE"] + ".mypy", "w") as out:
    out.write(str(os.getpid()))
time.sleep(1000)
"""
"""A mypy plugin's start that writes mypy's pid, then sleeps."""

PID_CONFTEST = CLEAN_CONFTEST + textwrap.dedent("""
    import os, time

    @pytest.fixture(autouse=True)
    def _marker():
        with open(os.environ["AUXCHECK_TEST_PID_FILE"] + ".pytest", "w") as out:
            out.write(str(os.getpid()))
        time.sleep(1000)
""")
"""A conftest whose first contract item writes the pytest process's pid, then sleeps."""


@pytest.mark.slow
@linux
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_check_stopped_while_mypy_and_pytest_run_beside_ends_both(
        tmp_path: Path, sig: signal.Signals) -> None:
    """SIGTERM or Ctrl-C while mypy and the contract suite's pytest both run: both are ended,
    the results folder removed, the run exits 128 + the signal saying so, and neither
    stage's end is reported as an error."""
    folder = project(tmp_path / "plugin", conftest=PID_CONFTEST)
    mypy_plugin(folder, SLEEPS)
    pid_file, temp = tmp_path / "pid", tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "AUXCHECK_TEST_PID_FILE": str(pid_file), "TMPDIR": str(temp),
           "AUXCHECK_PROGRESS": "auto"}
    with ctrl_c_as_at_a_terminal():
        check = subprocess.Popen(
            [sys.executable, "-m", "auxcheck", "check", "--timeout", "0", str(folder), *NARROW],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            pids = [Path(f"{pid_file}.{tool}") for tool in ("mypy", "pytest")]
            wait_until(lambda: all(p.exists() and p.read_text() for p in pids),
                       "mypy and pytest writing their pids")
            mypy_pid, pytest_pid = (int(p.read_text()) for p in pids)
            check.send_signal(sig)
            _, err = finish(check, f"auxcheck check after {sig.name}")
        finally:
            check.kill()
    wait_until(lambda: not alive(mypy_pid) and not alive(pytest_pid), "mypy and pytest ending")
    assert (check.returncode, sorted(p.name for p in temp.iterdir())) == (128 + sig, [])
    assert (f"auxcheck check: stopped by {sig.name}; the processes it started were ended and "
            "its temporary files removed") in err
    assert "ERROR" not in err and "Traceback" not in err, err


# ---------------------------------------------------------------- one walk


@pytest.mark.slow
@linux
def test_a_check_walks_each_folder_of_the_project_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Every stage beside each other, with a release: this process walks the project once,
    listing each folder once (os.scandir, which os.walk, glob and rglob use too), whatever
    the stages read."""
    folder = project(tmp_path / "plugin")
    for nested in ("plug/sub", "plug/sub/deeper", "tests", "docs"):
        (folder / nested).mkdir(parents=True, exist_ok=True)
        (folder / nested / "__init__.py").write_text("X = 1\n")
    listed: Counter[str] = Counter()
    scandir = os.scandir

    def counted(path: Any = ".") -> Any:
        # Path.iterdir lists one folder (the packages beside PATH), no walk; on Python 3.13
        # and later it lists it through os.scandir.
        if isinstance(path, (str, os.PathLike)) and sys._getframe(1).f_code.co_name != "iterdir":
            listed[os.path.abspath(os.fspath(path))] += 1
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counted)
    with hang_guard("check with every stage on a nested project"):
        status = main(["--format", "json", "--timeout", "240", "--sglang", "0.5.23",
                       "--offline", "--cache", str(REAL_CACHE), str(folder), *NARROW])
    document = json.loads(capsys.readouterr().out)
    assert (status, [s["result"] for s in document["stages"]]) == (
        0, ["ok", "ok", "ok", "ok"]), [s["summary"] for s in document["stages"]]
    root = folder.resolve()
    inside = {path: n for path, n in listed.items()
              if Path(path) == root or root in Path(path).parents}
    assert sorted(inside) == sorted([str(root)] + [str(root / f) for f in (
        "plug", "plug/sub", "plug/sub/deeper", "tests", "docs")])
    assert set(inside.values()) == {1}, inside
