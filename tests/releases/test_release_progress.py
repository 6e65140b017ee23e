"""Progress on stderr while a release is fetched or indexed, and silence when nobody asked.

The download is real: pip fetches a wheel from a PEP 503 index served over HTTP on this
machine. The reporter runs with no delay and no rate limit, so no test depends on speed.
"""

from __future__ import annotations

import functools
import io
import os
import re
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers.progress import show_progress
from helpers.releases import write_release, write_wheel

from auxcheck._core.progress import Reporter, reporting
from auxcheck._releases.download import raw_progress
from auxcheck._releases.index import ReleaseIndex
from auxcheck.cli.moves import main as moves_main
from auxcheck.releases import Release, fetch_wheel

WHEEL = "sglang-9.9.1-py3-none-any.whl"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Logs nothing: the test's stderr is what is checked."""


@pytest.fixture
def index_url(tmp_path: Path) -> Iterator[str]:
    """Returns the URL of a simple index on this machine offering one 1 MB sglang wheel."""
    site = tmp_path / "site"
    blob = os.urandom(512 * 1024).hex()  # incompressible: the wheel stays over 512 kB
    write_wheel(site / "files" / WHEEL, {
        "sglang/version.py": "__version__ = '9.9.1'\n",
        "sglang/srt/blob.py": f"BLOB = {blob!r}\n",
        "sglang-9.9.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: sglang\nVersion: 9.9.1\n",
        "sglang-9.9.1.dist-info/WHEEL": ("Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                                         "Tag: py3-none-any\n"),
        "sglang-9.9.1.dist-info/RECORD": ""})
    (site / "simple" / "sglang").mkdir(parents=True)
    (site / "simple" / "sglang" / "index.html").write_text(
        f'<html><body><a href="../../files/{WHEEL}">{WHEEL}</a></body></html>\n')
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def local_index(index_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Points pip at the local index only: no configuration file, no find-links, no cache."""
    monkeypatch.setenv("PIP_INDEX_URL", index_url)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    for name in ("PIP_NO_INDEX", "PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)


def reporter(stream: io.StringIO, prefix: str = "auxcheck x") -> Reporter:
    """Returns a plain reporter that prints at every report: no delay, no rate limit."""
    return Reporter(stream, prefix=prefix, tty=False, delay=0.0, every=0.0)


@pytest.mark.slow
@pytest.mark.skipif(not raw_progress(), reason="pip before 24.1 prints no byte counts "
                                               "(--progress-bar raw)")
def test_a_download_reports_the_bytes_of_the_wheels_size(tmp_path: Path,
                                                         local_index: None) -> None:
    """pip's raw progress becomes `fetching sglang 9.9.1: X of 1.1 MB` lines, then `done`."""
    stream = io.StringIO()
    with reporting("auxcheck x", reporter=reporter(stream)):
        wheel = fetch_wheel("9.9.1", cache=tmp_path / "cache")
    size = f"{wheel.stat().st_size / 1e6:.1f}"
    lines = stream.getvalue().splitlines()
    assert any(re.fullmatch(rf"auxcheck x: fetching sglang 9\.9\.1: \d+\.\d of {size} MB "
                            r"\(\d+ s\)", line) for line in lines), lines
    assert re.fullmatch(rf"auxcheck x: fetching sglang 9\.9\.1: done, {size} of {size} MB in "
                        r"\d+\.\d s", lines[-1]), lines


@pytest.mark.slow
def test_a_download_from_library_code_prints_nothing(
        tmp_path: Path, local_index: None, capfd: pytest.CaptureFixture[str]) -> None:
    """No command turned reporting on: fetch_wheel is silent, and pip's lines stay captured."""
    fetch_wheel("9.9.1", cache=tmp_path / "cache")
    assert capfd.readouterr() == ("", "")


FILES = {"sglang/version.py": "__version__ = '0.0.1'\n",
         **{f"sglang/srt/m{i}.py": f"X{i} = {i}\n" for i in range(9)}}
"""A release of ten modules."""


def test_a_cold_index_build_reports_files_of_total_and_a_warm_one_nothing(tmp_path: Path) -> None:
    """Parsing a release's modules says how many of how many are done; read from the cache
    the next time, it says nothing."""
    release = Release.from_source(write_release(tmp_path / "release", FILES))
    stream = io.StringIO()
    with reporting("auxcheck x", reporter=reporter(stream)):
        ReleaseIndex(release, cache=tmp_path / "cache").load_all(jobs=1)
    lines = [re.sub(r"\d+(\.\d)? s\b", "T s", line) for line in stream.getvalue().splitlines()]
    assert lines == [*(f"auxcheck x: indexing sglang 0.0.1: {n} of 10 files (T s)"
                       for n in range(1, 11)),
                     "auxcheck x: indexing sglang 0.0.1: done, 10 of 10 files in T s"]
    again = io.StringIO()
    with reporting("auxcheck x", reporter=reporter(again)):
        ReleaseIndex(release, cache=tmp_path / "cache").load_all(jobs=1)
    assert again.getvalue() == ""


def moved_releases(tmp_path: Path) -> list[str]:
    """Returns the options of `auxcheck moves` between two releases where one name moved."""
    old = write_release(tmp_path / "old", {"sglang/version.py": "__version__ = '0.0.1'\n",
                                           "sglang/srt/a.py": "class Moved: ...\n"})
    new = write_release(tmp_path / "new", {"sglang/version.py": "__version__ = '0.0.2'\n",
                                           "sglang/srt/b.py": "class Moved: ...\n"})
    return ["--from", "0.0.1", "--to", "0.0.2", "--source", str(old), "--source", str(new),
            "--offline", "--cache", str(tmp_path / "cache")]


@pytest.mark.parametrize("quiet", [False, True], ids=["reported", "quiet"])
def test_moves_reports_its_index_building_on_stderr_unless_quiet(
        quiet: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`auxcheck moves` says which release it indexes (no delay here); -q only the summary;
    stdout is the same TOML either way."""
    show_progress(monkeypatch, delay=0.0)
    assert moves_main([*moved_releases(tmp_path), *(["-q"] if quiet else [])]) == 0
    out, err = capsys.readouterr()
    assert 'old = "sglang.srt.a"\nnew = "sglang.srt.b"\n' in out
    progress_lines = [line for line in err.splitlines()
                      if not line.startswith("auxcheck moves: sglang 0.0.1 -> 0.0.2: ")]
    if quiet:
        assert progress_lines == []
    else:
        assert "auxcheck moves: indexing sglang 0.0.1: done, 2 of 2 files in " in err
        assert "auxcheck moves: indexing sglang 0.0.2: done, 2 of 2 files in " in err
