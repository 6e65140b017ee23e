"""Tests for `auxcheck migrate` against a hostile machine: another user racing the write, an
editor racing the replace, attributes a rewrite must keep, hostile configuration files,
stdin, odd line endings and files at the edge of what Python compiles.

The migrate promise: every file ends either exactly as it was or fully rewritten, with
its owner, mode and attributes, and whatever goes wrong is said, never a traceback.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.plugin_sources import FIXABLE, MIGRATED, NEW, OLD, flat_sum

from auxcheck._core import sources
from auxcheck.cli.migrate import main
from auxcheck.migrate import files

LINUX = sys.platform.startswith("linux")


# ---------------------------------------------------------------- racing the write


def test_a_temporary_file_swapped_for_a_symlink_changes_nothing_it_points_at(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Another user swaps the temporary file for a link to a private file mid-write: the
    private file keeps its mode and bytes, the user's file is left as it was, and why is said.

    (A chmod by name once followed such a link: root made the target setuid and writable.)
    """
    victim = tmp_path / "victim"
    victim.write_text("secret\n")
    victim.chmod(0o600)
    path = tmp_path / "a.py"
    path.write_text(FIXABLE)
    path.chmod(0o6777)
    made = files._temporary_file

    def swapped_after_creation(folder: str) -> tuple[str, int]:
        name, fd = made(folder)
        os.unlink(name)
        os.symlink(victim, name)  # what the other user does between create and chmod
        return name, fd

    monkeypatch.setattr(files, "_temporary_file", swapped_after_creation)
    assert main([str(path)]) == 1
    assert "its temporary file was replaced by another process" in capsys.readouterr().err
    assert (victim.stat().st_mode & 0o7777, victim.read_text()) == (0o600, "secret\n")
    assert path.read_text() == FIXABLE and not path.is_symlink()


def test_an_edit_that_lands_just_before_the_replace_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """An editor that appends after auxcheck's last look, before the file is swapped in, keeps
    the edit: the old file is checked after the swap and the swap undone."""
    path = tmp_path / "m.py"
    path.write_text(FIXABLE)
    exchange = files._exchange
    calls = []

    def edit_first(first: str, second: str) -> bool | None:
        if not calls:
            subprocess.run([sys.executable, "-c",
                            f"open({str(path)!r}, 'a').write('# mine\\n')"], check=True)
        calls.append(first)
        return exchange(first, second)

    monkeypatch.setattr(files, "_exchange", edit_first)
    assert main([str(path)]) == 1
    assert "changed while auxcheck ran (left as it is now, with the change)" in \
        capsys.readouterr().err
    assert path.read_text() == FIXABLE + "# mine\n"
    assert os.listdir(tmp_path) == ["m.py"]


def test_a_file_deleted_during_the_run_is_said_to_be_deleted_not_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A file deleted between read and write is not written again, and the message says so
    without claiming it was left unchanged."""
    path = tmp_path / "m.py"
    path.write_text(FIXABLE)
    keep = files._keep_owner

    def delete_meanwhile(*args: object) -> None:
        path.unlink()
        keep(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(files, "_keep_owner", delete_meanwhile)
    assert main([str(path)]) == 1
    err = capsys.readouterr().err
    assert "m.py: error: deleted while auxcheck ran (not written again)\n" in err
    assert os.listdir(tmp_path) == []


def _acl(user: int) -> bytes:
    """Returns a POSIX access ACL as the kernel stores it: owner rw, ``user`` rw, group r,
    mask rw, others nothing."""
    undefined = 0xFFFFFFFF
    entries = [(0x01, 6, undefined), (0x02, 6, user), (0x04, 4, undefined),
               (0x10, 6, undefined), (0x20, 0, undefined)]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


@pytest.mark.skipif(not hasattr(os, "setxattr"), reason="extended attributes are Linux's")
def test_a_rewrite_keeps_extended_attributes_and_the_acl(tmp_path: Path) -> None:
    """A user attribute and an ACL granting another user access survive the rewrite: dropping
    the ACL would widen the group's access to the mask's."""
    path = tmp_path / "a.py"
    path.write_text(FIXABLE)
    path.chmod(0o660)
    try:
        os.setxattr(path, "user.origin", b"vendored")
        os.setxattr(path, "system.posix_acl_access", _acl(65534))
    except OSError as exc:
        pytest.skip(f"this file system keeps no extended attributes or ACLs: {exc.strerror}")
    before = {name: os.getxattr(path, name) for name in os.listxattr(path)}
    assert main([str(path)]) == 0
    assert path.read_text() == MIGRATED
    assert {name: os.getxattr(path, name) for name in os.listxattr(path)} == before
    assert path.stat().st_mode & 0o777 == 0o660


# ---------------------------------------------------------------- hostile configuration


def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return str(path)


CONFIGS = {
    "binary-pyproject": ("pyproject.toml", b"[tool.auxcheck]\n\x80\x81\n",
                         "pyproject.toml: not valid TOML (not UTF-8: "),
    "utf16-pyproject": ("pyproject.toml", "[tool]\n".encode("utf-16"),
                        "pyproject.toml: not valid TOML (not UTF-8: "),
    "deep-pyproject": ("pyproject.toml", b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
                       "pyproject.toml: not valid TOML (nested too deeply to read)"),
    "binary-ruff-toml": ("ruff.toml", b"\xff\xfe\x00", "ruff.toml"),
    "binary-isort-cfg": (".isort.cfg", b"[settings]\nprofile = \xff\n", ".isort.cfg"),
}


@pytest.mark.parametrize(("name", "data", "said"), CONFIGS.values(), ids=CONFIGS.keys())
def test_a_hostile_configuration_file_is_an_error_naming_it_not_a_traceback(
        tmp_path: Path, name: str, data: bytes | None, said: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A configuration file that is not UTF-8, nests too deeply or is not a file is named in
    an error; the Python file is left as it was."""
    config = tmp_path / name
    if data is None:
        config.mkdir()
    else:
        config.write_bytes(data)
    (tmp_path / "a.py").write_text(FIXABLE)
    status = main([str(tmp_path / "a.py")])
    err = capsys.readouterr().err
    assert status in (1, 2) and said in err and "Traceback" not in err, err
    assert (tmp_path / "a.py").read_text() == FIXABLE


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("make", [_fifo, lambda path: "/dev/zero"], ids=["fifo", "device"])
def test_a_moves_file_that_is_not_a_regular_file_is_refused_at_once(
        tmp_path: Path, make: object, capsys: pytest.CaptureFixture[str]) -> None:
    """--moves naming a FIFO or a device is a usage error, never a wait or an endless read."""
    (tmp_path / "a.py").write_text(FIXABLE)
    moves = make(tmp_path / "moves.toml")  # type: ignore[operator]
    assert main(["--moves", moves, str(tmp_path / "a.py")]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_every_given_paths_project_is_read_and_projects_that_disagree_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The second path's pyproject.toml is read too: `tool = 5` there is a usage error, and
    two projects with different moves are refused rather than one table silently used."""
    for name in ("A", "B"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "m.py").write_text(FIXABLE)
    (tmp_path / "B" / "pyproject.toml").write_text("tool = 5\n")
    assert main([str(tmp_path / "A"), str(tmp_path / "B")]) == 2
    assert "B/pyproject.toml: tool must be a table" in capsys.readouterr().err
    (tmp_path / "B" / "pyproject.toml").write_text(
        '[tool.auxcheck.migrate]\nmove = [{old = "a.b", new = "a.c", names = ["X"]}]\n')
    assert main([str(tmp_path / "A"), str(tmp_path / "B")]) == 2
    assert "the paths belong to projects whose moves differ" in capsys.readouterr().err
    assert (tmp_path / "A" / "m.py").read_text() == FIXABLE


# ---------------------------------------------------------------- what is said


def test_stdin_over_the_size_limit_is_echoed_unchanged_with_aux504(
        monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """`-` honours --max-file-size: the input comes back unchanged, with AUX504 and exit 1."""
    data = (FIXABLE + "x = 1\n" * 400).encode()
    monkeypatch.setattr(sys, "stdin", type("In", (), {"buffer": __import__("io").BytesIO(data)}))
    assert main(["--max-file-size", "1KB", "-"]) == 1
    captured = capsysbinary.readouterr()
    assert captured.out == data
    assert b"AUX504 was not parsed: 2,466 bytes" in captured.err


def test_check_reports_a_file_over_the_size_limit_as_aux504_and_json_is_not_ok(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--check names an over-size file as AUX504 (as the other scans do), and a failing run's
    JSON says ok: false."""
    (tmp_path / "big.py").write_text(FIXABLE + "x = 1\n" * 400)
    assert main(["--check", "--max-file-size", "1KB", "--format", "json", str(tmp_path)]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is False
    assert [f["code"] for f in document["findings"]] == ["AUX504"]


def test_a_run_that_fails_without_findings_is_not_ok_in_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A hard-linked file left alone has no finding, yet the run fails: JSON says ok: false."""
    (tmp_path / "a.py").write_text(FIXABLE)
    os.link(tmp_path / "a.py", tmp_path / "b.txt")
    assert main(["--format", "json", str(tmp_path / "a.py")]) == 1
    document = json.loads(capsys.readouterr().out)
    assert (document["ok"], document["findings"], len(document["errors"])) == (False, [], 1)


def test_check_and_diff_together_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """--check and --diff ask for two different outputs: exit 2 naming both."""
    assert main(["--check", "--diff", "."]) == 2
    assert "argument --diff: not allowed with argument --check" in capsys.readouterr().err


@pytest.mark.parametrize(("link", "said"), [
    ("loop.py", "cannot use {}: Too many levels of symbolic links"),
    ("nowhere.py", "cannot use {}: No such file or directory"),
    (None, "no such file or folder: {}"),
], ids=["symlink-loop", "dangling-symlink", "missing"])
def test_a_path_that_cannot_be_used_says_why(
        tmp_path: Path, link: str | None, said: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A link loop is not "no such file": the usage error gives the system's reason."""
    target = tmp_path / "loop.py"
    if link is not None:
        target.symlink_to(link)
    assert main([str(target)]) == 2
    assert said.format(target) in capsys.readouterr().err


def test_a_failure_message_says_left_unchanged_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """auxcheck's own failure on one file is reported once, with "left unchanged" once."""
    from auxcheck.migrate import runner

    (tmp_path / "a.py").write_text(FIXABLE)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(runner, "process_source", broken)
    assert main([str(tmp_path / "a.py")]) == 1
    err = capsys.readouterr().err
    assert err.count("left unchanged") == 1 and "(RuntimeError: boom)" in err


# ---------------------------------------------------------------- line endings, encodings


@pytest.mark.parametrize(("before", "after"), [
    (FIXABLE.replace("\n", "\r") + "x = 1\r", MIGRATED.replace("\n", "\r") + "x = 1\r"),
    (b"# -*- coding: latin-1 -*-\r" + FIXABLE.replace("\n", "\r").encode() + b'x = "\xe9"\r',
     b"# -*- coding: latin-1 -*-\r" + MIGRATED.replace("\n", "\r").encode() + b'x = "\xe9"\r'),
], ids=["cr-only", "latin1-cookie-cr-only"])
def test_a_file_whose_lines_end_in_cr_keeps_every_byte_but_the_import(
        tmp_path: Path, before: str | bytes, after: str | bytes) -> None:
    """Lone \\r line endings: the final one is kept, and a coding cookie on such a first line
    is read as Python reads it (not an AUX504)."""
    path = tmp_path / "m.py"
    path.write_bytes(before.encode() if isinstance(before, str) else before)
    assert main([str(path)]) == 0
    assert path.read_bytes() == (after.encode() if isinstance(after, str) else after)


# ---------------------------------------------------------------- what Python compiles


def python_compiles(text: str, folder: Path) -> bool:
    """Returns True when `python FILE` compiles ``text`` (Python's own verdict)."""
    path = folder / "probe_input.txt"
    path.write_text(text)
    done = subprocess.run([sys.executable, "-c",
                           "import sys; compile(open(sys.argv[1]).read(), 'm.py', 'exec')",
                           str(path)], capture_output=True, check=False)
    path.unlink()
    return done.returncode == 0


def _at_depth(frames: int, text: str) -> bool:
    """Returns compile_as_python's verdict on ``text``, asked ``frames`` calls deep."""
    if frames:
        return _at_depth(frames - 1, text)
    try:
        sources.compile_as_python(text, "m.py")
    except sources.PARSE_ERRORS:
        return False
    return True


@pytest.mark.parametrize("terms", [2980, 3100])
def test_python_s_verdict_on_a_deep_file_does_not_depend_on_who_asks(
        tmp_path: Path, terms: int) -> None:
    """A file near Python's nesting limit gets Python's own verdict, from a shallow call, a
    call 400 frames deep (a pool worker, pytest) or under a raised recursion limit; the
    verdict once changed with -j."""
    limit = sys.getrecursionlimit()
    expected = python_compiles(flat_sum(terms), tmp_path)
    try:
        sys.setrecursionlimit(5000)
        raised = _at_depth(0, flat_sum(terms))
    finally:
        sys.setrecursionlimit(limit)
    assert [_at_depth(0, flat_sum(terms)), _at_depth(400, flat_sum(terms)), raised] == [expected] * 3


@pytest.mark.slow
def test_a_deep_file_is_migrated_by_a_worker_process_as_in_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool and the in-process run give the same verdict on a file Python compiles."""
    from auxcheck.migrate import runner

    monkeypatch.setattr(runner, "_POOL_THRESHOLD", 2)  # two files make a pool with -j 2
    text = FIXABLE + "x = " + "not " * 2900 + "1\n"
    for i in range(2):
        (tmp_path / f"m{i}.py").write_text(text)
    assert main(["-j", "2", str(tmp_path)]) == 0
    assert all(p.read_text() == text.replace(OLD, NEW) for p in tmp_path.iterdir())


@pytest.mark.parametrize("text", [
    flat_sum(3100),
    FIXABLE + "".join(f"{'    ' * i}while x:\n" for i in range(25)) + "    " * 25 + "pass\n",
    FIXABLE + "def f():\n    pass\nreturn 1\n",
], ids=["too-deep", "too-many-nested-blocks", "return-outside-a-function"])
def test_a_file_python_refuses_to_compile_is_aux504_left_unchanged(
        tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """What `ast.parse` accepts but Python's compiler refuses is AUX504, not rewritten."""
    assert not python_compiles(text, tmp_path)
    path = tmp_path / "m.py"
    path.write_text(text)
    assert main([str(path)]) == 1
    assert "AUX504" in capsys.readouterr().out
    assert path.read_text() == text


def test_the_scans_judge_a_file_at_pythons_nesting_limit_as_migrate_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--check, the imports scan and check's release scan see the use in a 2,989-term file
    Python compiles (the issue's figure): AUX501, never an AUX504 migrate would not give."""
    from auxcheck._releases.plugin_scan import scan_project
    from auxcheck.migrate.scan import scan_paths

    assert python_compiles(flat_sum(2989), tmp_path)
    (tmp_path / "m.py").write_text(flat_sum(2989))
    assert main(["--check", str(tmp_path)]) == 1
    assert "m.py:1:1: AUX501" in capsys.readouterr().out
    assert [f.code for f in scan_paths([str(tmp_path)])] == ["AUX501"]
    assert scan_project(tmp_path).unreadable == ()
