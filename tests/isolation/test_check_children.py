"""Tests for what ``auxcheck check`` starts (auxcheck/_isolation/bounded.py, stops.py, tail.py):
a project's symlink loops, a SIGTERM or Ctrl-C mid-stage, a child that prints or allocates
without end. Every wait is a hang guard, never a claim about speed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.plugin_sources import CLEAN_OUTPUT
from helpers.processes import alive, ctrl_c_as_at_a_terminal, finish, hang_guard, wait_until

from auxcheck._isolation.bounded import OUTPUT_KEPT, run_bounded
from auxcheck._isolation.tail import Tail
from auxcheck.cli.check import main

CLEAN_CONFTEST = "import pytest\nimport torch\n\n\n" + CLEAN_OUTPUT + textwrap.dedent("""

    @pytest.fixture
    def auxcheck_device_output():
        return Clean()
""")
"""A conftest whose one device output keeps the contract."""

NARROW = ("--", "-p", "no:randomly", "-k", "AUX104-single-copy or AUX201")
"""Pytest arguments that keep the contract stage to a few items."""


def plugin(folder: Path, conftest: str = CLEAN_CONFTEST) -> Path:
    """Writes a typed package ``loopy`` and ``conftest`` into ``folder``; returns ``folder``."""
    (folder / "loopy").mkdir(parents=True)
    (folder / "loopy" / "__init__.py").write_text("VALUE: int = 1\n")
    (folder / "conftest.py").write_text(conftest)
    return folder


def check_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    """Returns the exit status and JSON document of an in-process ``auxcheck check``, and
    what it said on stderr under the key ``stderr``."""
    status = main(["--format", "json", *args])
    out, err = capsys.readouterr()
    return status, {**json.loads(out), "stderr": err}


def by_stage(document: dict[str, object]) -> dict[str, dict[str, object]]:
    """Returns the document's stages by name."""
    return {s["stage"]: s for s in document["stages"]}  # type: ignore[attr-defined,index]


# ---------------------------------------------------------------- symlink loops


@pytest.mark.slow
def test_symlink_loops_are_noted_once_and_neither_mypy_nor_pytest_follows_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A package holding `up -> ..` and `self -> .` is type-checked and tested once: the links
    are named in one warning, mypy finishes, and pytest collects each contract item once."""
    plain = plugin(tmp_path / "plain")
    loops = plugin(tmp_path / "loops")
    (loops / "loopy" / "up").symlink_to("..")
    (loops / "loopy" / "self").symlink_to(".")
    limits = ("--timeout", "240", "--max-memory", "4GB", "--skip", "imports")
    with hang_guard("auxcheck check on a project with symlink loops"):
        _, expected = check_json(capsys, str(plain), *limits, *NARROW)
        status, document = check_json(capsys, str(loops), *limits, *NARROW)
    stages = by_stage(document)
    assert (status, stages["mypy"]["result"], stages["contract"]["result"]) == (0, "ok", "ok"), (
        stages["mypy"]["summary"], stages["contract"]["summary"])
    assert stages["contract"]["counts"] == by_stage(expected)["contract"]["counts"]
    assert stages["mypy"]["counts"]["files"] == 1  # type: ignore[index]
    assert document["warnings"] == [(
        "2 symbolic links not followed: loopy/self, loopy/up; no stage enters them (the import "
        "scan skips them, mypy and pytest are told to leave them out): check the folder they "
        "point to on its own")]
    assert str(document["stderr"]).count("symbolic links not followed") == 1


# ---------------------------------------------------------------- stopping check


PID_CONFTEST = CLEAN_CONFTEST + textwrap.dedent("""
    import os, time

    @pytest.fixture(autouse=True)
    def _marker():
        with open(os.environ["AUXCHECK_TEST_PID_FILE"], "w") as out:
            out.write(str(os.getpid()))
        time.sleep(1000)
""")
"""A conftest whose first contract item writes the pytest process's pid, then sleeps."""


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_stopped_check_ends_its_pytest_and_removes_its_results_folder(
        tmp_path: Path, sig: signal.Signals) -> None:
    """SIGTERM or SIGINT to `auxcheck check` mid contract stage ends the stage's pytest (found
    by the pid its conftest wrote) and removes the folder of its results, then says so."""
    project = plugin(tmp_path / "project", PID_CONFTEST)
    pid_file, temp = tmp_path / "pytest.pid", tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "AUXCHECK_TEST_PID_FILE": str(pid_file), "TMPDIR": str(temp)}
    with ctrl_c_as_at_a_terminal():
        check = subprocess.Popen(
            [sys.executable, "-m", "auxcheck", "check", "--skip", "imports", "--skip", "mypy",
             "--format", "json", "--timeout", "0", str(project), *NARROW],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: pid_file.exists() and pid_file.read_text(),
                       "the contract stage's pytest writing its pid")
            pytest_pid = int(pid_file.read_text())
            assert any(temp.iterdir())  # the results folder, while the stage runs
            check.send_signal(sig)
            _, err = finish(check, f"auxcheck check after {sig.name}")
        finally:
            check.kill()
    wait_until(lambda: not alive(pytest_pid), "the stopped check's pytest ending")
    assert (check.returncode, sorted(p.name for p in temp.iterdir())) == (128 + sig, [])
    assert (f"auxcheck check: stopped by {sig.name}; the processes it started were ended and "
            "its temporary files removed") in err


# ---------------------------------------------------------------- memory and output


GROWS = ("import time\nheld = []\n"
         "for _ in range(64):\n    held.append(b'x' * (32 << 20))\n    time.sleep(0.01)\n"
         "time.sleep(1000)\n")
"""A child that takes 32 MB after 32 MB, up to 2 GB, then waits."""


@pytest.mark.slow
def test_a_child_over_its_memory_limit_is_killed_and_the_run_says_so() -> None:
    """A bounded command whose memory passes the limit is killed, however long its time limit."""
    with hang_guard("run_bounded of a command that grows past its memory limit"):
        done = run_bounded([sys.executable, "-c", GROWS], timeout=600, memory=256 << 20)
    assert (done.timed_out, done.memory_limit) == (False, 256 << 20)
    assert done.text() == "held more than 256 MB of memory (--max-memory) and was killed"


@pytest.mark.slow
def test_a_contract_stage_over_max_memory_fails_naming_the_option(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fixture that allocates without end fails the contract stage on --max-memory."""
    grows = "\n    ".join(GROWS.splitlines())
    project = plugin(tmp_path, CLEAN_CONFTEST + (
        f"\n@pytest.fixture(autouse=True)\ndef _grows():\n    {grows}\n"))
    with hang_guard("auxcheck check on a fixture that allocates without end"):
        status, document = check_json(capsys, str(project), "--skip", "imports", "--skip",
                                      "mypy", "--max-memory", "1GB", "--timeout", "600", *NARROW)
    contract = by_stage(document)["contract"]
    assert (status, contract["result"], contract["summary"]) == (
        1, "error", ("pytest held more than 1 GB of memory (--max-memory) and was killed; "
                     "pass a larger --max-memory (or 0: no limit) if it needs more"))


@pytest.mark.parametrize("stream", [False, True], ids=["captured", "streamed"])
def test_a_child_that_prints_a_lot_leaves_only_a_bounded_tail(stream: bool) -> None:
    """Of 48 MB a command prints only the last OUTPUT_KEPT bytes are kept, headed by a line
    saying how much was written; streamed, everything is relayed and nothing kept."""
    script = ("import os\nline = b'x' * 1023 + b'\\n'\n"
              "for _ in range(48 * 1024):\n    os.write(1, line)\nos.write(1, b'the end\\n')\n")
    read_end, write_end = os.pipe()
    relayed = bytearray()
    with os.fdopen(write_end, "w") as sink, hang_guard("a command printing 48 MB"):
        if stream:
            import threading

            reader = threading.Thread(target=lambda: _read_all(read_end, relayed))
            reader.start()
        done = run_bounded([sys.executable, "-c", script], timeout=300,
                           stream=sink if stream else None)
    if stream:
        reader.join()
        assert (done.output, len(relayed)) == ("", 48 * 1024 * 1024 + 8)
        return
    os.close(read_end)
    header, _, kept = done.output.partition("\n")
    assert header == (f"[auxcheck: output cut: {48 * 1024 * 1024 + 8:,} bytes written, only "
                      f"the last {OUTPUT_KEPT:,} kept]")
    assert (len(kept), kept.endswith("x\nthe end\n")) == (OUTPUT_KEPT, True)


def _read_all(fd: int, into: bytearray) -> None:
    with os.fdopen(fd, "rb") as pipe:
        while chunk := pipe.read(1 << 16):
            into += chunk


@pytest.mark.slow
def test_a_contract_run_that_prints_a_lot_keeps_a_bounded_tail_in_the_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pytest printing 40 MB (a hook writing past capture) gives a JSON document of a bounded
    size, whose contract output says it was cut."""
    project = plugin(tmp_path, CLEAN_CONFTEST + textwrap.dedent("""
        import os

        def pytest_unconfigure(config):
            for _ in range(40 * 1024):
                os.write(1, b"z" * 1023 + b"\\n")
    """))
    with hang_guard("auxcheck check on a pytest that prints 40 MB"):
        status, document = check_json(capsys, str(project), "--skip", "imports", "--skip",
                                      "mypy", *NARROW)
    contract = by_stage(document)["contract"]
    assert (status, contract["result"]) == (0, "ok"), contract["summary"]
    assert len(json.dumps(document)) < 4 * OUTPUT_KEPT
    assert str(contract["output"]).startswith("[auxcheck: output cut: ")


def test_a_tail_keeps_the_last_bytes_and_counts_the_rest() -> None:
    """A Tail of 4 bytes fed 10 keeps the last 4 and says 10 were written."""
    tail = Tail(4)
    for piece in (b"abc", b"defg", b"hij"):
        tail.add(piece)
    assert tail.text() == "[auxcheck: output cut: 10 bytes written, only the last 4 kept]\nghij"
    assert (tail.take(), tail.text()) == (
        "[auxcheck: output cut: 10 bytes written, only the last 4 kept]\nghij", "")
