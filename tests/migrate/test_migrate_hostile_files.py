"""Tests for `auxcheck migrate` on hostile trees: deep files, odd file kinds, owners, links,
signals, concurrent edits, sizes, folders it cannot enter and bad `[tool.auxcheck]` tables.

The migrate promise: every file ends either exactly as it was or fully rewritten, and
nothing is skipped without a word.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.plugin_sources import FIXABLE, MIGRATED, NEW, OLD, flat_sum
from helpers.processes import (
    HANG_GUARD,
    alive,
    children,
    cpu_seconds,
    ctrl_c_as_at_a_terminal,
    finish,
    wait_until,
)

from auxcheck._core.config import project_ignore
from auxcheck._core.errors import NotARegularFile
from auxcheck._core.python_files import iter_python_files
from auxcheck.cli.migrate import main
from auxcheck.errors import InvalidArgument, Stopped
from auxcheck.migrate import files, runner
from auxcheck.migrate.files import Prefilter
from auxcheck.migrate.moves import builtin_moves
from auxcheck.migrate.scan import scan_paths

LINUX = sys.platform.startswith("linux")
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def cli(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Runs the installed `auxcheck migrate` in a real process."""
    return subprocess.run([sys.executable, "-m", "auxcheck", "migrate", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False)


# ---------------------------------------------------------------- 1: deep files


@pytest.mark.parametrize("jobs", ["1", "2"], ids=["one-process", "two-workers"])
def test_a_long_flat_expression_python_parses_is_migrated(
        tmp_path: Path, jobs: str, capsys: pytest.CaptureFixture[str]) -> None:
    """489 terms of `1+1+...` (CPython parses 2,989) are rewritten, each file announced."""
    (tmp_path / "deep.py").write_text(flat_sum(489))
    for i in range(15):  # enough candidates for -j 2 to use worker processes
        (tmp_path / f"m{i:02}.py").write_text(FIXABLE)
    assert main(["-j", jobs, str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert err.count("Rewriting ") == 16
    assert err.endswith("auxcheck migrate: 16 files rewritten (16 files scanned)\n")
    assert (tmp_path / "deep.py").read_text() == flat_sum(489).replace(OLD, NEW)


def test_check_reports_the_use_in_a_long_flat_expression_not_a_parse_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--check finds the AUX501 use in a 489-term file instead of calling it unparsable."""
    (tmp_path / "m.py").write_text(flat_sum(489))
    assert main(["--check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "AUX501" in out
    assert "AUX504" not in out


DEEP = {
    "3000-terms": flat_sum(3000),
    "100000-terms": flat_sum(100_000),
    "1000-parentheses": FIXABLE + "x = " + "(" * 1000 + "1" + ")" * 1000 + "\n",
    "1000-brackets": FIXABLE + "x = " + "[" * 1000 + "1" + "]" * 1000 + "\n",
}


@pytest.mark.parametrize("mode", [[], ["--check"]], ids=["write", "check"])
@pytest.mark.parametrize("text", DEEP.values(), ids=DEEP.keys())
def test_a_file_too_deep_for_python_is_aux504_without_a_traceback(
        tmp_path: Path, text: str, mode: list[str]) -> None:
    """What Python cannot parse is one AUX504 (exit 1), left byte-identical, no traceback."""
    (tmp_path / "deep.py").write_text(text)
    done = cli(*mode, "deep.py", cwd=tmp_path)
    assert (done.returncode, "Traceback" in done.stderr) == (1, False)
    assert "deep.py: error: does not parse" in done.stderr
    assert (tmp_path / "deep.py").read_text() == text


@pytest.mark.parametrize("text", DEEP.values(), ids=DEEP.keys())
def test_the_imports_scan_reports_a_too_deep_file_as_aux504(tmp_path: Path, text: str) -> None:
    """scan_paths (pytest --auxcheck's imports item, auxcheck check) gives AUX504, no crash."""
    (tmp_path / "deep.py").write_text(text)
    assert [f.code for f in scan_paths([str(tmp_path)])] == ["AUX504"]


def test_the_scans_report_the_use_in_a_long_flat_expression_not_a_parse_error(
        tmp_path: Path) -> None:
    """The imports item and check's release scan walk a 489-term file Python parses."""
    from auxcheck._releases.plugin_scan import scan_project

    (tmp_path / "m.py").write_text(flat_sum(489))
    assert [f.code for f in scan_paths([str(tmp_path)])] == ["AUX501"]
    scan = scan_project(tmp_path)
    assert ([i.module for i in scan.imports], scan.unreadable) == ([OLD], ())


# ---------------------------------------------------------------- 2: owner, group, mode


@pytest.mark.skipif(not ROOT, reason="giving a file to another user takes root")
def test_a_rewrite_keeps_the_files_owner_group_and_mode(tmp_path: Path) -> None:
    """A nobody:nogroup 0660 file migrated by root is still nobody:nogroup 0660."""
    path = tmp_path / "own.py"
    path.write_text(FIXABLE)
    os.chown(path, 65534, 65534)
    path.chmod(0o660)
    assert main([str(path)]) == 0
    status = path.stat()
    assert (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (65534, 65534, 0o660)
    assert path.read_text() == MIGRATED


@pytest.mark.skipif(not (ROOT and LINUX), reason="running as another user takes root")
def test_a_file_whose_owner_cannot_be_kept_is_refused_and_left_unchanged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A user who may write root's file but not give a new one to root is refused, with why."""
    tmp_path.chmod(0o777)
    (tmp_path / "warm.py").write_text(FIXABLE)
    assert main([str(tmp_path / "warm.py")]) == 0  # every import done while still root
    (tmp_path / "a.py").write_text(FIXABLE)
    (tmp_path / "a.py").chmod(0o666)
    capsys.readouterr()
    # A forked child drops to nobody: the interpreter itself may sit where nobody cannot
    # read it (a pyenv under /root), so no new process is started as that user.
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.chdir(tmp_path)  # nobody may not pass through the folders above it
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            status = main(["-j", "1", "a.py"])
            os.write(write, f"{status}\n{capsys.readouterr().err}".encode())
        except BaseException:  # noqa: BLE001 - said to the parent, which fails
            os.write(write, f"crash\n{traceback.format_exc()}".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, encoding="utf-8") as pipe:
        status, _, err = pipe.read().partition("\n")
    os.waitpid(pid, 0)
    assert status == "1", err
    assert "a.py: error: its owner and group (0:0) cannot be given to the rewritten file by " \
           "user 65534" in err
    assert (tmp_path / "a.py").read_text() == FIXABLE
    assert (tmp_path / "a.py").stat().st_uid == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "warm.py"]  # no temp file left


# ---------------------------------------------------------------- 3: signals


def _slow_tree(folder: Path, count: int) -> str:
    """Writes ``count`` files that each need a rewrite and take libcst a while; returns one."""
    text = FIXABLE + "".join(f"def f{i}(a):\n    return a + {i}\n" for i in range(150))
    for i in range(count):
        (folder / f"m{i:03}.py").write_text(text)
    return text


LONG = "m" * 200
"""A long file name: 'Rewriting ./mmm...' lines fill a small pipe after a few files."""


def _long_named_tree(folder: Path, count: int) -> list[str]:
    """Writes ``count`` small files that need a rewrite, under long names; returns the names."""
    names = [f"{LONG}{i:03}.py" for i in range(count)]
    for name in names:
        (folder / name).write_text(FIXABLE)
    return names


def _start(folder: Path, *args: str, group: bool = False,
           ctrl_c_ignored: bool = False) -> subprocess.Popen[str]:
    """Starts `auxcheck migrate ARGS` in ``folder``, Ctrl-C at its default as at a terminal
    (``group``: leading a process group of its own, as a terminal's job does), or ignored
    as a shell starts a background job of a script (``ctrl_c_ignored``)."""
    with ctrl_c_as_at_a_terminal():
        if ctrl_c_ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # put back on leaving the block
        return subprocess.Popen([sys.executable, "-m", "auxcheck", "migrate", *args],
                                cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, start_new_session=group)


def _first_line(process: subprocess.Popen[str]) -> str:
    """Reads one line of the process's stderr, leaving the rest in the pipe."""
    assert process.stderr is not None
    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(process.stderr.fileno(), 1)
        if not byte:
            break
        line += byte
    return line.decode()


def _run_blocked_on_its_output(folder: Path, jobs: str, *, group: bool = False,
                               ctrl_c_ignored: bool = False) -> subprocess.Popen[str]:
    """Starts a run that cannot end before the test reads its stderr: the pipe holds one page
    (4 KB) and the run writes far more. Returns it once it has rewritten a file."""
    process = _start(folder, "-j", jobs, ".", group=group, ctrl_c_ignored=ctrl_c_ignored)
    assert process.stderr is not None
    fcntl.fcntl(process.stderr.fileno(), fcntl.F_SETPIPE_SZ, 4096)
    first = _first_line(process)
    assert first.startswith("Rewriting "), first
    return process


def _names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


@pytest.mark.skipif(not LINUX, reason="reads worker pids from /proc")
def test_workers_die_with_a_killed_parent_and_leave_files_old_or_new(tmp_path: Path) -> None:
    """kill -9 of the parent: no worker survives, every file is fully old or fully new, and
    no temporary file is left (a worker ends only once the file it writes is in place)."""
    old = _slow_tree(tmp_path, 80)
    process = _start(tmp_path, "-j", "2", ".")
    assert _first_line(process).startswith("Rewriting ")  # workers are busy on other files
    workers = children(process.pid)
    process.kill()
    finish(process, "the killed migrate")
    wait_until(lambda: not any(map(alive, workers)), "a worker outliving its killed parent")
    assert len(workers) == 2
    assert _names(tmp_path) == [f"m{i:03}.py" for i in range(80)]  # no .auxcheck-*.tmp
    texts = [path.read_text() for path in sorted(tmp_path.iterdir())]
    assert set(texts) <= {old, old.replace(OLD, NEW)}
    assert old.replace(OLD, NEW) in texts


@pytest.mark.skipif(not LINUX, reason="sets a pipe's size and reads worker pids from /proc")
@pytest.mark.parametrize("jobs", ["2", "1"], ids=["pool", "in-process"])
@pytest.mark.parametrize(("sig", "status", "name", "group"), [
    (signal.SIGINT, 130, "SIGINT", False), (signal.SIGINT, 130, "SIGINT", True),
    (signal.SIGTERM, 143, "SIGTERM", False)], ids=["ctrl-c", "ctrl-c-at-a-terminal", "sigterm"])
def test_an_interrupt_stops_the_run_and_says_what_was_done(
        tmp_path: Path, sig: int, status: int, name: str, group: bool, jobs: str) -> None:
    """SIGINT/SIGTERM (to the process, or Ctrl-C at a terminal, to its whole group) while
    files are being rewritten: exit 130/143, no traceback and no abort (a process that used
    libcst's native parser once aborted as it exited), what was rewritten counted, every
    file old or new, no temporary file, no worker left.

    The run cannot finish before the signal lands: it blocks on its full stderr pipe until
    the test, after signalling, reads it."""
    names = _long_named_tree(tmp_path, 40)
    process = _run_blocked_on_its_output(tmp_path, jobs, group=group)
    workers = children(process.pid)
    if group:
        os.killpg(process.pid, sig)
    else:
        process.send_signal(sig)
    _, err = finish(process, f"migrate after {name}")
    assert (process.returncode, "Traceback" in err, "Fatal Python error" in err) == (
        status, False, False), err
    rewritten = 1 + err.count("Rewriting ")  # the first line was read by the test
    assert f"auxcheck migrate: stopped by {name}: {rewritten} file" in err
    assert rewritten < len(names) and "run the same command again to finish" in err
    assert _names(tmp_path) == names  # no .auxcheck-*.tmp
    texts = [(tmp_path / name).read_text() for name in names]
    assert set(texts) == {FIXABLE, MIGRATED}
    assert len(workers) == (2 if jobs == "2" else 0) and not any(map(alive, workers))


@pytest.mark.skipif(not LINUX, reason="sets a pipe's size")
def test_a_run_started_with_ctrl_c_ignored_ignores_it_as_asked(tmp_path: Path) -> None:
    """A process started with SIGINT ignored (`trap '' INT`, or a background job of a script,
    which shells start so) keeps ignoring it, as every program does: the run finishes."""
    names = _long_named_tree(tmp_path, 40)
    process = _run_blocked_on_its_output(tmp_path, "2", ctrl_c_ignored=True)
    process.send_signal(signal.SIGINT)
    _, err = finish(process, "migrate with SIGINT ignored")
    assert (process.returncode, err.count("Rewriting ")) == (0, len(names) - 1), err
    assert {(tmp_path / name).read_text() for name in names} == {MIGRATED}


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="reads worker pids from /proc")
def test_a_large_file_is_parsed_in_a_worker_that_an_interrupt_ends_at_once(
        tmp_path: Path) -> None:
    """With -j 1 a file over 256 KB is still migrated in a worker process: Ctrl-C while it
    is parsed (about 10 s of processor time; the signal comes after the first second) stops
    the run without waiting for the parse: exit 130, the file old, no temporary file left."""
    text = FIXABLE + "".join(f"def f{i}(a):\n    return a + {i}\n" for i in range(40_000))
    (tmp_path / "big.py").write_text(text)
    process = _start(tmp_path, "-j", "1", "big.py")
    wait_until(lambda: children(process.pid) or process.poll() is not None,
               "migrate starting its worker")
    workers = children(process.pid)
    assert len(workers) == 1
    wait_until(lambda: cpu_seconds(workers[0]) >= 1.0, "the worker parsing big.py")
    process.send_signal(signal.SIGINT)
    _, err = finish(process, "migrate after Ctrl-C during a parse")
    assert (process.returncode, "Fatal Python error" in err) == (130, False), err
    assert not any(map(alive, workers))
    assert _names(tmp_path) == ["big.py"] and (tmp_path / "big.py").read_text() == text


_FORKS: dict[str, int | None] = {"parent": None, "child": None}
"""The signal each side of the next fork sends itself (see :func:`_signal_after_fork`)."""


def _signal_after_fork(side: str) -> Callable[[], None]:
    def after() -> None:
        signum = _FORKS[side]
        if signum is not None:
            if side == "parent":
                _FORKS["parent"] = None  # the first fork only: the pool has more to start
            os.kill(os.getpid(), signum)
    return after


os.register_at_fork(after_in_parent=_signal_after_fork("parent"),
                    after_in_child=_signal_after_fork("child"))


@pytest.mark.skipif(not LINUX, reason="reads worker pids from /proc")
@pytest.mark.parametrize("reached", ["parent", "parent-and-workers"])
def test_a_ctrl_c_while_the_pool_starts_its_workers_stops_every_one(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], reached: str) -> None:
    """Ctrl-C just after the first worker is forked, before the pool has recorded it (and,
    as at a terminal, in each worker before it has set its handlers): the run stops, says so,
    leaves no worker behind and prints no traceback. (A worker the pool did not know of
    once kept the run waiting for it at exit, forever.)"""
    _long_named_tree(tmp_path, 40)
    before = set(children(os.getpid()))
    _FORKS.update(parent=signal.SIGINT,
                  child=signal.SIGINT if reached == "parent-and-workers" else None)
    try:
        with ctrl_c_as_at_a_terminal():
            summary = runner.run([str(tmp_path)], moves=builtin_moves(), mode="write", jobs=2)
    except KeyboardInterrupt:
        pytest.fail("the Ctrl-C escaped run() instead of stopping it")
    finally:
        _FORKS.update(parent=None, child=None)
        left = set(children(os.getpid())) - before
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert (summary.interrupted, summary.changed, left) == (signal.SIGINT, [], set())
    assert summary.unstarted + len(summary.in_progress) == 40
    assert "Traceback" not in capfd.readouterr().err
    assert _names(tmp_path) == sorted(f"{LONG}{i:03}.py" for i in range(40))


STOP_POINTS = {
    "the-temporary-file-made": "_temporary_file",
    "the-files-swapped": "_exchange",
}


@pytest.mark.skipif(not LINUX, reason="swaps files with renameat2")
@pytest.mark.parametrize("point", STOP_POINTS.values(), ids=STOP_POINTS.keys())
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_in_the_middle_of_a_write_comes_once_the_file_is_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, sig: int) -> None:
    """A signal that lands while a file is written is held until the new file is in place:
    then it stops the run as usual, and no temporary file is left (one cut there once left
    an empty one, or the old text under a temporary name)."""
    path = tmp_path / "a.py"
    path.write_text(FIXABLE)
    real = getattr(files, point)

    def then_stopped(*args: object) -> object:
        result = real(*args)
        # To the main thread, as a terminal's signal reaches the one thread of the CLI: sent
        # to the process, a pytest-xdist worker's execnet thread could take it, and its
        # Python handler would then run whenever the main thread next looks, maybe only
        # after the write (a flaky test: "DID NOT RAISE", then a worker killed).
        signal.pthread_kill(threading.main_thread().ident or 0, sig)
        return result

    def stop(signum: int, frame: object) -> None:
        raise Stopped(signum)

    monkeypatch.setattr(files, point, then_stopped)
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with ctrl_c_as_at_a_terminal(), pytest.raises(KeyboardInterrupt):
            runner.migrate_file(str(path), moves=builtin_moves(), mode="write")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert (_names(tmp_path), path.read_text()) == (["a.py"], MIGRATED)


# ---------------------------------------------------------------- 4: not regular files


def _fifo(folder: Path) -> list[str]:
    os.mkfifo(folder / "pipe.py")
    return ["pipe.py"]


def _device_link(folder: Path) -> list[str]:
    (folder / "zero.py").symlink_to("/dev/zero")
    return ["zero.py"]


def _fifo_in_a_folder(folder: Path) -> list[str]:
    (folder / "pkg").mkdir()
    os.mkfifo(folder / "pkg" / "pipe.py")
    return ["pkg"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("mode", [[], ["--check"]], ids=["write", "check"])
@pytest.mark.parametrize("make", [_fifo, _device_link, _fifo_in_a_folder],
                         ids=["fifo-named", "link-to-dev-zero-named", "fifo-walked"])
def test_a_fifo_or_device_named_py_is_skipped_with_a_note(tmp_path: Path, make: object,
                                                           mode: list[str]) -> None:
    """A FIFO or a character device is never read: a note names it, and the run ends."""
    paths = make(tmp_path)  # type: ignore[operator]
    (tmp_path / "ok.py").write_text(FIXABLE)
    done = cli(*mode, *paths, "ok.py", cwd=tmp_path, timeout=HANG_GUARD)
    assert "Traceback" not in done.stderr
    assert ": note: skipped: it is a " in done.stderr
    assert "not a regular file; only regular files are read" in done.stderr
    assert done.returncode == (1 if mode else 0)


def _device_node(folder: Path) -> Path:
    os.mknod(folder / "zero.py", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # like /dev/zero
    return folder / "zero.py"


def _named_fifo(folder: Path) -> Path:
    os.mkfifo(folder / "pipe.py")
    return folder / "pipe.py"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("given", ["walked", "named"])
@pytest.mark.parametrize("make, kind", [
    (_named_fifo, "a FIFO (named pipe)"),
    pytest.param(_device_node, "a character device", marks=pytest.mark.skipif(
        not ROOT, reason="only root may create a device node")),
], ids=["fifo", "character-device"])
def test_a_file_that_is_not_regular_is_refused_without_being_opened(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: object, kind: str,
        given: str) -> None:
    """The walk's listing (or one stat of a named root) marks it, so the reader refuses it
    before any open: opening a device can have effects of its own."""
    node = make(tmp_path)  # type: ignore[operator]
    root = str(tmp_path) if given == "walked" else str(node)
    [found] = iter_python_files([root])
    opened: list[str] = []
    real_open = os.open

    def recording_open(path: str, *args: object, **kwargs: object) -> int:
        opened.append(path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", recording_open)
    with pytest.raises(NotARegularFile, match=re.escape(f"it is {kind}, not a regular file")):
        Prefilter([b"sglang"])(found)
    assert opened == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("every_file", [True, False], ids=["every-file", "prefiltered"])
def test_the_imports_scan_reports_a_fifo_instead_of_hanging(
        tmp_path: Path, every_file: bool) -> None:
    """scan_paths (the imports item) says a FIFO cannot be read, in a real process, whether
    or not it prefilters files by their bytes (it once raised NotRegularFile there)."""
    os.mkfifo(tmp_path / "pipe.py")
    code = ("import sys; from auxcheck.migrate.scan import scan_paths; "
            f"print(*[f.message for f in scan_paths(['.'], every_file={every_file})])")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=HANG_GUARD, check=False)
    assert "it is a FIFO (named pipe), not a regular file" in done.stdout, done.stderr


def test_a_symlink_met_in_a_folder_is_not_followed_and_said_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A link to a .py file inside a walked folder is not followed; the summary says so."""
    (tmp_path / "real.py").write_text(FIXABLE)
    (tmp_path / "link.py").symlink_to("real.py")
    assert main([str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert f"did not follow 1 symlink: {tmp_path / 'link.py'}" in err


# ---------------------------------------------------------------- 5: concurrent edits


def test_a_file_edited_during_the_run_keeps_the_users_edit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """An edit made between read and write wins: the file fails with 'changed while...'."""
    path = tmp_path / "m.py"
    path.write_text(FIXABLE)
    process = runner.process_source

    def edit_meanwhile(*args: object, **kwargs: object) -> runner.FileOutcome:
        subprocess.run([sys.executable, "-c",
                        f"open({str(path)!r}, 'a').write('# mine\\n')"], check=True)
        return process(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "process_source", edit_meanwhile)
    assert main([str(path)]) == 1
    assert path.read_text() == FIXABLE + "# mine\n"
    assert "changed while auxcheck ran" in capsys.readouterr().err


# ---------------------------------------------------------------- 6: hard links


def test_a_hard_linked_file_is_refused_unless_asked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file with two links is left alone with why; --break-hardlinks rewrites and says so."""
    (tmp_path / "a.py").write_text(FIXABLE)
    os.link(tmp_path / "a.py", tmp_path / "b.py")
    assert main([str(tmp_path / "a.py")]) == 1
    assert "a.py: error: it has 2 hard links" in capsys.readouterr().err
    assert (tmp_path / "a.py").read_text() == FIXABLE
    assert main(["--break-hardlinks", str(tmp_path / "a.py")]) == 0
    assert "(it had 2 hard links: the other link keeps the old text)" in capsys.readouterr().err
    assert (tmp_path / "a.py").read_text() == MIGRATED
    assert (tmp_path / "b.py").read_text() == FIXABLE


# ---------------------------------------------------------------- 7: one file, one visit


@pytest.mark.parametrize("spellings", [
    ["d", "d/"], ["d", "d/sub"], ["d", "./d"], ["d", "link"], ["d/sub/a.py", "d"],
], ids=["trailing-slash", "subfolder", "dot-slash", "linked-folder", "file-then-folder"])
def test_a_file_reached_through_several_roots_is_migrated_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spellings: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """Two spellings of one tree count and print each file once, under the first spelling."""
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "sub" / "a.py").write_text(FIXABLE)
    (tmp_path / "d" / "b.py").write_text(FIXABLE)
    (tmp_path / "link").symlink_to("d")
    monkeypatch.chdir(tmp_path)
    assert main(spellings) == 0
    err = capsys.readouterr().err
    assert err.count("Rewriting ") == 2
    assert "2 files rewritten (2 files scanned)" in err


@pytest.mark.parametrize("spellings", [["d", "d/"], ["d", "./d", "d"]],
                         ids=["trailing-slash", "three-spellings"])
def test_a_place_reached_through_several_roots_is_noted_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spellings: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """A link not followed and a folder skipped by default are listed once, not per root."""
    (tmp_path / "d" / "venv").mkdir(parents=True)
    (tmp_path / "d" / "venv" / "pyvenv.cfg").write_text("")
    (tmp_path / "d" / "a.py").write_text(FIXABLE)
    (tmp_path / "d" / "link.py").symlink_to("a.py")
    monkeypatch.chdir(tmp_path)
    assert main(["--check", *spellings]) == 1
    err = capsys.readouterr().err
    assert "skipped 1 folder by default: d/venv (" in err
    assert "did not follow 1 symlink: d/link.py (" in err


# ---------------------------------------------------------------- 8: folders not entered


def test_a_package_named_like_a_skipped_folder_is_walked_and_the_rest_noted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """build/, env/, dist/ with __init__.py are the user's code; a virtualenv, and names no
    package can have (.git, __pycache__, site-packages), are noted even with __init__.py."""
    never = (".git", "__pycache__", "site-packages")
    for name in ("build", "env", "dist", "venv", *never):
        (tmp_path / name).mkdir()
        (tmp_path / name / "m.py").write_text(FIXABLE)
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    assert main(["--check", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert sorted(line.split("/")[-2] for line in captured.out.splitlines()) == [
        "build", "dist", "env"]
    noted = ", ".join(str(tmp_path / n) for n in (".git", "__pycache__", "site-packages",
                                                  "venv"))
    assert (f"auxcheck migrate: skipped 4 folders by default: {noted} (name a folder to "
            "migrate it)") in captured.err


def test_a_folder_that_cannot_be_listed_fails_with_a_note(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A folder os.scandir refuses is one failure naming it (exit 1), not silence."""
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "m.py").write_text(FIXABLE)
    if ROOT:  # chmod stops nobody who is root: refuse the listing as the kernel would
        scandir = os.scandir

        def refusing(path: str) -> object:
            if os.path.abspath(path) == str(locked):
                raise PermissionError(13, "Permission denied", path)
            return scandir(path)

        monkeypatch.setattr(os, "scandir", refusing)
    else:
        locked.chmod(0)
    try:
        assert main([str(tmp_path)]) == 1
    finally:
        locked.chmod(0o755)
    assert (f"{locked}: error: cannot list this folder (Permission denied); its files were "
            "not migrated") in capsys.readouterr().err


# ---------------------------------------------------------------- 9: [tool.auxcheck]


BAD_PYPROJECTS = {
    "tool-is-a-number": ("tool = 5\n", "tool must be a table"),
    "auxcheck-is-a-number": ("[tool]\nauxcheck = 5\n", "tool.auxcheck must be a table"),
    "migrate-is-a-string": ('[tool.auxcheck]\nmigrate = "x"\n',
                            "tool.auxcheck.migrate must be a table"),
}


@pytest.mark.parametrize(("text", "message"), BAD_PYPROJECTS.values(), ids=BAD_PYPROJECTS.keys())
def test_a_malformed_tool_table_is_a_usage_error_naming_file_and_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`tool = 5` and friends exit 2 naming pyproject.toml and the key, no traceback."""
    (tmp_path / "pyproject.toml").write_text(text)
    (tmp_path / "m.py").write_text(FIXABLE)
    monkeypatch.chdir(tmp_path)
    assert main(["m.py"]) == 2
    assert f"{tmp_path / 'pyproject.toml'}: {message}" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "message"), [
    *list(BAD_PYPROJECTS.values())[:2],
    ("[tool.auxcheck]\nignore = 5\n", "[tool.auxcheck] ignore must be a list"),
], ids=["tool-is-a-number", "auxcheck-is-a-number", "ignore-is-a-number"])
def test_the_shared_ignore_reader_rejects_a_malformed_tool_table(
        tmp_path: Path, text: str, message: str) -> None:
    """project_ignore (auxcheck check, pytest --auxcheck) raises InvalidArgument, not a crash."""
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(InvalidArgument, match=message.replace("[", r"\[").replace(".", r"\.")):
        project_ignore(tmp_path)


# ---------------------------------------------------------------- 10: size


def test_a_file_over_the_size_limit_is_left_unchanged_with_a_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file over --max-file-size fails with how to raise the limit; exit 1."""
    path = tmp_path / "big.py"
    path.write_text(FIXABLE + "x = 1\n" * 400)
    assert main(["--max-file-size", "1KB", str(path)]) == 1
    assert ("big.py: error: 2,466 bytes, over --max-file-size 1,024 (parsing takes about "
            "1,000 times a file's size in memory); pass --max-file-size 2MB to migrate it; "
            "left unchanged") in capsys.readouterr().err
    assert main(["--max-file-size", "1MB", str(path)]) == 0


@pytest.mark.slow
def test_migrate_s_scan_leaves_a_file_over_its_size_limit_unparsed_and_the_release_scan_reads_it(
    tmp_path: Path,
) -> None:
    """A generated module just over 2 MB: migrate's scan says AUX504 naming its limit; the
    read-only release scan (``check``'s, 16 MB) reads it."""
    from auxcheck._releases.plugin_scan import scan_project

    (tmp_path / "big.py").write_text(FIXABLE + "x = 1\n" * 360_000)
    [finding] = scan_paths([str(tmp_path)])
    assert (finding.code, finding.location) == ("AUX504", f"{tmp_path / 'big.py'}:1:1")
    assert finding.message.startswith("was not parsed: 2,160,066 bytes, over the 2,097,152 bytes")
    scan = scan_project(tmp_path)
    assert ([i.module for i in scan.imports], list(scan.unreadable)) == ([OLD], [])


@pytest.mark.parametrize(("text", "size"), [
    ("2MB", 2 << 20), ("500kb", 500 << 10), ("1048576", 1 << 20), ("0", None), ("none", None),
], ids=["megabytes", "kilobytes", "bytes", "zero", "none"])
def test_file_sizes_parse_with_units(text: str, size: int | None) -> None:
    """--max-file-size takes bytes or K/M/G units; 0 and none mean no limit."""
    from auxcheck.cli._common import byte_size

    assert byte_size(text) == size


def test_the_default_size_limit_is_two_megabytes() -> None:
    """The default limit keeps a 20 MB generated file away from libcst."""
    assert runner.DEFAULT_MAX_FILE_SIZE == 2 << 20


# ---------------------------------------------------------------- more hostile trees


@pytest.mark.skipif(not LINUX, reason="Linux file names may be any bytes")
def test_names_with_newlines_and_bytes_that_are_not_utf8_are_printed_escaped(
        tmp_path: Path) -> None:
    """Odd file names are migrated and printed escaped, without a traceback."""
    (tmp_path / "new\nline.py").write_text(FIXABLE)
    (Path(os.fsdecode(bytes(tmp_path)) + "/bad\udcff.py")).write_text(FIXABLE)
    done = cli(".", cwd=tmp_path)
    assert (done.returncode, "Traceback" in done.stderr) == (0, False)
    assert "Rewriting ./new\\nline.py\n" in done.stderr
    assert "Rewriting ./bad\\xff.py\n" in done.stderr


def test_a_read_only_folder_fails_the_file_naming_the_folder(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str],
                                                             ) -> None:
    """No temporary file can be made: the file fails, naming the folder and the fix."""

    (tmp_path / "m.py").write_text(FIXABLE)

    def refusing(*args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied")

    if ROOT:  # root writes in any folder: refuse the temporary file as the kernel would
        monkeypatch.setattr(files, "_temporary_file", refusing)
    else:
        tmp_path.chmod(0o555)
    try:
        assert main([str(tmp_path / "m.py")]) == 1
    finally:
        tmp_path.chmod(0o755)
    assert (f"cannot create a temporary file in {tmp_path} (Permission denied); make that "
            "folder writable") in capsys.readouterr().err


def test_a_file_deleted_after_the_prefilter_is_one_failure(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            ) -> None:
    """A candidate that vanishes before its worker reads it fails alone, the run goes on."""
    (tmp_path / "a.py").write_text(FIXABLE)
    (tmp_path / "b.py").write_text(FIXABLE)
    migrate = runner.migrate_file

    def delete_first(path: str, **kwargs: object) -> runner.FileOutcome:
        if path.endswith("a.py"):
            os.unlink(path)
        return migrate(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "migrate_file", delete_first)
    summary = runner.run([str(tmp_path)], moves=builtin_moves(), mode="write", jobs=1)
    assert [(Path(o.path).name, o.status) for o in summary.outcomes] == [
        ("a.py", "failed"), ("b.py", "changed")]
    assert summary.failed[0].reason.startswith("cannot read: No such file or directory")


def test_many_files_are_walked_in_order_each_once(tmp_path: Path) -> None:
    """2,000 files in one folder come back sorted and unique."""
    for i in range(2000):
        (tmp_path / f"m{i:04}.py").touch()
    found = list(iter_python_files([str(tmp_path), str(tmp_path)]))
    assert found == sorted(found) and len(found) == 2000
