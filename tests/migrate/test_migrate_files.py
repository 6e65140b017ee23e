"""Tests for file handling: bytes kept exactly, failures isolated, atomic writes, discovery."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from helpers.migration import MOVES

from auxcheck._core import sources
from auxcheck._core.python_files import iter_python_files, module_name_of
from auxcheck._core.sources import decode_source, read_source
from auxcheck.migrate import files
from auxcheck.migrate.files import atomic_write
from auxcheck.migrate.runner import FileOutcome, migrate_file, run

OLD = b"sglang.srt.sampling.sampling_observer"
NEW = b"sglang.srt.managers.auxiliary_output"

BYTES = {
    "CRLF line endings": (
        b"import os\r\n\r\nfrom " + OLD + b" import CommittedTokens\r\nx = 1\r\n",
        b"import os\r\n\r\nfrom " + NEW + b" import CommittedTokens\r\nx = 1\r\n",
    ),
    "UTF-8 BOM": (
        b"\xef\xbb\xbffrom " + OLD + b" import CommittedTokens\n# caf\xc3\xa9\n",
        b"\xef\xbb\xbffrom " + NEW + b" import CommittedTokens\n# caf\xc3\xa9\n",
    ),
    "latin-1 coding cookie": (
        b"# -*- coding: latin-1 -*-\nfrom " + OLD + b" import CommittedTokens\ns = '\xe9'\n",
        b"# -*- coding: latin-1 -*-\nfrom " + NEW + b" import CommittedTokens\ns = '\xe9'\n",
    ),
    "no newline at end of file": (
        b"from " + OLD + b" import CommittedTokens",
        b"from " + NEW + b" import CommittedTokens",
    ),
    "CRLF wrapped import": (
        b"from " + OLD + b" import CommittedTokens, DeviceAuxiliaryOutput, HostAuxiliaryOutput\r\n",
        b"from " + NEW + b" import (\r\n    CommittedTokens,\r\n    DeviceAuxiliaryOutput,\r\n"
        b"    HostAuxiliaryOutput,\r\n)\r\n",
    ),
}


@pytest.mark.parametrize(("before", "after"), BYTES.values(), ids=BYTES.keys())
def test_rewrites_keep_encoding_bom_and_line_endings(tmp_path: Path, before: bytes,
                                                     after: bytes) -> None:
    """The rewritten bytes differ from the original only in the import."""
    path = tmp_path / "plugin.py"
    path.write_bytes(before)
    assert migrate_file(str(path), moves=MOVES, mode="write").status == "changed"
    assert path.read_bytes() == after


def test_rewrite_keeps_the_files_mode_bits(tmp_path: Path) -> None:
    """An executable script stays executable after a rewrite."""
    path = tmp_path / "tool.py"
    path.write_bytes(b"from " + OLD + b" import CommittedTokens\n")
    path.chmod(0o751)
    migrate_file(str(path), moves=MOVES, mode="write")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751


def test_unchanged_files_are_not_written_at_all(tmp_path: Path) -> None:
    """A file with nothing to do keeps its bytes and its modification time."""
    path = tmp_path / "ok.py"
    path.write_bytes(b"from " + OLD + b" import SamplingObserver\r\n")
    os.utime(path, (1_000_000, 1_000_000))
    assert migrate_file(str(path), moves=MOVES, mode="write").status == "unchanged"
    assert path.stat().st_mtime == 1_000_000


@pytest.mark.parametrize(("data", "reason"), [
    (b"from " + OLD + b" import (CommittedTokens\n", "does not parse: "),
    (b"# coding: latin-1\nfrom " + OLD + b" import CommittedTokens\n\x00", "does not parse: "),
    (b"from " + OLD + b" import CommittedTokens\ns = '\xff\xfe'\n", "cannot decode: "),
    (b"# coding: no-such-codec\nfrom " + OLD + b" import HostAuxiliaryOutput\n",
     "cannot decode: "),
], ids=["syntax error", "null byte", "invalid utf-8", "unknown codec"])
def test_broken_files_are_reported_and_left_untouched(tmp_path: Path, data: bytes,
                                                      reason: str) -> None:
    """Unparsable or undecodable files fail with a reason, keep their bytes, and the run goes on."""
    bad, good = tmp_path / "bad.py", tmp_path / "good.py"
    bad.write_bytes(data)
    good.write_bytes(b"from " + OLD + b" import CommittedTokens\n")
    summary = run([str(tmp_path)], moves=MOVES, mode="write", jobs=1)
    assert [(o.path, o.status) for o in summary.outcomes] == [
        (str(bad), "failed"), (str(good), "changed")]
    assert summary.outcomes[0].reason.startswith(reason)
    assert bad.read_bytes() == data


def test_interrupted_replace_leaves_the_old_file_and_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C during the atomic replace leaves the original bytes and removes the temp file."""
    path = tmp_path / "plugin.py"
    path.write_bytes(b"old\n")

    def interrupted(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(str(path), b"new\n")
    assert path.read_bytes() == b"old\n"
    assert os.listdir(tmp_path) == ["plugin.py"]


def test_killed_run_leaves_every_file_fully_old_or_fully_new(tmp_path: Path) -> None:
    """A process killed mid-run leaves each file either its old or its new bytes."""
    import signal
    import subprocess
    import sys

    before = b"from " + OLD + b" import CommittedTokens\n" + b"x = 1\n" * 300
    after = before.replace(OLD, NEW)
    for i in range(150):
        (tmp_path / f"m{i}.py").write_bytes(before)
    proc = subprocess.Popen([sys.executable, "-m", "auxcheck", "migrate", "--jobs", "1",
                             str(tmp_path)], stderr=subprocess.PIPE)
    assert proc.stderr is not None
    proc.stderr.readline()  # the first "Rewriting" line: the run is under way
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    contents = {p.read_bytes() for p in tmp_path.iterdir()}
    assert after in contents and contents <= {before, after}
    assert all(p.suffix == ".py" for p in tmp_path.iterdir())


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x = 1\n")


def test_discovery_skips_vcs_virtualenvs_build_and_cache_folders(tmp_path: Path) -> None:
    """Only source folders are walked; .git, venvs, build, caches and egg-info are not."""
    _tree(tmp_path, ["pkg/a.py", "pkg/b.pyi", "pkg/readme.txt", ".git/hooks/x.py",
                     ".venv/lib/y.py", "myenv/lib/z.py", "build/lib/c.py", "pkg/__pycache__/d.py",
                     "foo.egg-info/e.py", ".tox/py/f.py"])
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    found = [os.path.relpath(p, tmp_path) for p in iter_python_files([str(tmp_path)])]
    assert found == ["pkg/a.py", "pkg/b.pyi"]


def test_skipped_folder_named_explicitly_is_walked(tmp_path: Path) -> None:
    """A folder given on the command line is walked even if its name is usually skipped."""
    _tree(tmp_path, ["build/c.py"])
    assert list(iter_python_files([str(tmp_path / "build")])) == [str(tmp_path / "build/c.py")]


def test_exclude_globs_match_names_and_paths(tmp_path: Path) -> None:
    """--exclude globs drop matching files and folders."""
    _tree(tmp_path, ["pkg/a.py", "pkg/gen/b.py", "pkg/c_pb2.py"])
    found = iter_python_files([str(tmp_path)], exclude=["gen", "*_pb2.py"])
    assert [os.path.relpath(p, tmp_path) for p in found] == ["pkg/a.py"]


def test_symlinks_out_of_the_roots_are_not_followed(tmp_path: Path) -> None:
    """A linked folder or file leading outside the root is neither read nor rewritten."""
    outside, root = tmp_path / "outside", tmp_path / "root"
    outside.mkdir()
    root.mkdir()
    target = outside / "victim.py"
    target.write_bytes(b"from " + OLD + b" import CommittedTokens\n")
    (root / "linked_dir").symlink_to(outside, target_is_directory=True)
    (root / "linked.py").symlink_to(target)
    summary = run([str(root)], moves=MOVES, mode="write", jobs=1)
    assert summary.scanned == 0
    assert target.read_bytes().startswith(b"from " + OLD)


def test_module_names_follow_init_files_and_namespace_anchors(tmp_path: Path) -> None:
    """Module names come from __init__.py chains, or from a known top package folder."""
    _tree(tmp_path, ["plug/__init__.py", "plug/sub/__init__.py", "plug/sub/m.py",
                     "sglang/srt/sampling/x.py"])
    assert module_name_of(str(tmp_path / "plug/sub/m.py")) == "plug.sub.m"
    assert module_name_of(str(tmp_path / "plug/sub/__init__.py")) == "plug.sub"
    assert module_name_of(str(tmp_path / "sglang/srt/sampling/x.py"),
                          anchors={"sglang"}) == "sglang.srt.sampling.x"


def test_decoding_reports_the_encoding_it_will_write_back() -> None:
    """A BOM file decodes as utf-8-sig and re-encodes with its BOM."""
    source = decode_source(b"\xef\xbb\xbfx = 1\n")
    assert (source.encoding, source.text, source.encode(source.text)) == (
        "utf-8-sig", "x = 1\n", b"\xef\xbb\xbfx = 1\n")


def test_reading_a_missing_file_raises_a_clear_error(tmp_path: Path) -> None:
    """An unreadable path raises UndecodableFile naming the path and the reason."""
    with pytest.raises(sources.UndecodableFile, match="missing.py: cannot read: No such file"):
        read_source(str(tmp_path / "missing.py"))


def test_a_named_symlink_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    """Naming a linked file rewrites its target; the link is not replaced by a copy."""
    target = tmp_path / "target.py"
    target.write_bytes(b"from " + OLD + b" import CommittedTokens\n")
    link = tmp_path / "link.py"
    link.symlink_to(target)
    assert migrate_file(str(link), moves=MOVES, mode="write").status == "changed"
    assert link.is_symlink()
    assert target.read_bytes() == b"from " + NEW + b" import CommittedTokens\n"


def test_a_read_only_file_is_reported_and_left_alone(tmp_path: Path) -> None:
    """A file without write permission is not replaced behind its mode bits."""
    path = tmp_path / "frozen.py"
    path.write_bytes(b"from " + OLD + b" import CommittedTokens\n")
    path.chmod(0o444)
    outcome = migrate_file(str(path), moves=MOVES, mode="write")
    assert (outcome.status, outcome.reason) == ("failed", "cannot write: file is read-only")
    assert path.read_bytes() == b"from " + OLD + b" import CommittedTokens\n"


def test_outcomes_are_told_in_path_order_whatever_order_the_workers_finish_in(
        tmp_path: Path) -> None:
    """With two workers and a slow first file, `on_outcome` (the CLI's `Rewriting` lines)
    still hears the files in path order, every run; each once, and only once it is done."""
    slow = FIXABLE_TEXT + "".join(f"def f{i}(a):\n    return a + {i}\n" for i in range(1500))
    (tmp_path / "a000.py").write_text(slow)
    for i in range(1, 40):
        (tmp_path / f"a{i:03}.py").write_text(FIXABLE_TEXT)
    told: list[str] = []

    def hear(outcome: FileOutcome) -> None:
        path = outcome.path
        assert Path(path).read_text() != FIXABLE_TEXT  # written before it is told
        told.append(os.path.basename(path))

    summary = run([str(tmp_path)], moves=MOVES, mode="write", jobs=2, on_outcome=hear)
    assert len(summary.changed) == 40
    assert told == [f"a{i:03}.py" for i in range(40)]


FIXABLE_TEXT = "from sglang.srt.sampling.sampling_observer import CommittedTokens\n"
