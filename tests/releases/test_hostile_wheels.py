"""Wheels and caches that would make auxcheck write outside its folders, eat memory or crash.

Every wheel here is a real zip crafted with :mod:`zipfile` in the test's folder: a member
named to climb out of the unpack folder, a symbolic-link member, a zip bomb, damaged
deflate data or CRC, a file that is not UTF-8; every cache a real folder: read-only,
another user's, or a small file system that fills up.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
import tracemalloc
import zipfile
from pathlib import Path

import pytest
import torch  # noqa: F401  (in-process pytester runs cannot import torch a second time)
from helpers.releases import impl_release_files, write_wheel

import auxcheck._suite.item_runs
import auxcheck.machine  # noqa: F401
from auxcheck._core.errors import ReleaseError
from auxcheck._releases.index import ReleaseIndex
from auxcheck.cli.check import main as check_main
from auxcheck.cli.moves import main as moves_main
from auxcheck.properties import release_implementation
from auxcheck.releases import (
    CACHE_ENV,
    Release,
    fetch_wheel,
    find_release,
    parse_versions,
    same_version,
    unpack,
)

pytest_plugins = ["pytester"]

VERSION = "9.9.3"
WHEEL = f"sglang-{VERSION}-py3-none-any.whl"
CLIMB = "sglang/" + "../" * 4 + "escaped.py"
"""From CACHE/unpacked/.unpack-X/ this lands next to CACHE: outside the cache."""
MIB = 1 << 20


def escaped(root: Path) -> list[str]:
    """Returns every file named escaped.py under ``root`` (none may be written anywhere)."""
    return [str(p) for p in root.rglob("escaped.py")]


def refusal(wheel: Path, member: str, why: str) -> str:
    """Returns the whole error for a wheel member that could land outside its folder."""
    return (f"{wheel}: member {member!r} {why}, so unpacking it could write outside its folder; "
            "auxcheck reads no such wheel (pip and PyPI wheels have none). Delete it and "
            "download the release again, or pass --wheel or --source with a trusted copy")


# ---------------------------------------------------------------- confinement


@pytest.mark.parametrize(("member", "why"), [
    pytest.param(CLIMB, "has a '..' part", id="dot-dot"),
    pytest.param("sglang/srt/../../../../../escaped.py", "has a '..' part", id="dot-dot-deeper"),
    pytest.param("sglang/..\\..\\..\\escaped.py", "holds a backslash", id="backslash"),
    pytest.param("sglang/C:/escaped.py", "has a drive or stream colon", id="drive-letter"),
    pytest.param("sglang//tmp/escaped.py", "has an empty or '.' part", id="absolute-inside"),
    pytest.param("sglang/./escaped.py", "has an empty or '.' part", id="dot-part"),
])
def test_a_member_that_could_land_outside_its_folder_is_refused_naming_it(
    tmp_path: Path, member: str, why: str
) -> None:
    """The wheel is refused on opening, naming the member; nothing is written anywhere."""
    wheel = write_wheel(tmp_path / "w" / WHEEL, {**impl_release_files(VERSION), member: "X = 1\n"})
    with pytest.raises(ReleaseError) as raised:
        Release.from_wheel(wheel)
    assert str(raised.value) == refusal(wheel, member, why)
    assert escaped(tmp_path) == []


def test_a_symbolic_link_member_is_refused_naming_it(tmp_path: Path) -> None:
    """A member stored as a link (to /etc/passwd here) is refused like a climbing name."""
    wheel = write_wheel(tmp_path / WHEEL, impl_release_files(VERSION),
                        links={"sglang/srt/link.py": "/etc/passwd"})
    with pytest.raises(ReleaseError) as raised:
        Release.from_wheel(wheel)
    assert str(raised.value) == refusal(wheel, "sglang/srt/link.py", "is a symbolic link")


def test_check_impl_of_a_cached_release_with_a_climbing_member_exits_2_writing_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`check --impl sglang==X` on a planted wheel: exit 2 naming the member, no file outside."""
    cache = tmp_path / "cache"
    wheel = write_wheel(cache / WHEEL, {**impl_release_files(VERSION), CLIMB: "X = 1\n"})
    (tmp_path / "plugin").mkdir()
    monkeypatch.setenv(CACHE_ENV, str(cache))
    assert check_main([str(tmp_path / "plugin"), "--impl", f"sglang=={VERSION}"]) == 2
    assert refusal(wheel, CLIMB, "has a '..' part") in capsys.readouterr().err
    assert escaped(tmp_path) == []


def test_pytest_impl_of_a_cached_release_with_a_climbing_member_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pytest --auxcheck-impl=sglang==X` on a planted wheel: a usage error, no file outside."""
    cache = pytester.path / "cache"
    wheel = write_wheel(cache / WHEEL, {**impl_release_files(VERSION), CLIMB: "X = 1\n"})
    monkeypatch.setenv(CACHE_ENV, str(cache))
    result = pytester.runpytest_inprocess("--auxcheck", f"--auxcheck-impl=sglang=={VERSION}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--auxcheck-impl: " + refusal(wheel, CLIMB, "has a '..' part")
                                 .replace("[", "[[]")])
    assert escaped(pytester.path) == []


def test_pytest_impl_of_a_release_whose_module_raises_on_import_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The release's own auxiliary_output runs here: what it raises is named, no INTERNALERROR."""
    cache = pytester.path / "cache"
    write_wheel(cache / WHEEL, {**impl_release_files(VERSION),
                                "sglang/srt/managers/auxiliary_output.py": "raise OSError('x')\n"})
    monkeypatch.setenv(CACHE_ENV, str(cache))
    result = pytester.runpytest_inprocess("--auxcheck", f"--auxcheck-impl=sglang=={VERSION}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([(
        f"*--auxcheck-impl: implementation 'sglang=={VERSION}': importing "
        f"sglang.srt.managers.auxiliary_output from {cache}/unpacked/sglang-{VERSION}-* raised "
        f"OSError (x); delete that folder so that auxcheck unpacks sglang {VERSION} again, or "
        "choose 'reference'")])


# ---------------------------------------------------------------- sizes


def too_large(where: Path, name: str, size: int) -> str:
    """Returns the whole error for a member over the 16 MiB one source file may hold."""
    return (f"{where}: {name} holds {size} bytes, more than the 16 MiB auxcheck reads of one "
            "source file (SGLang's largest is under 300 kB); this is not an SGLang release as "
            "published: delete it and download the release again")


def test_a_zip_bomb_is_refused_by_its_declared_size_before_it_is_inflated(tmp_path: Path) -> None:
    """A 17 MiB member that deflates to 17 kB is refused on opening: nothing is inflated."""
    bomb = b"#" * (17 * MIB)
    wheel = write_wheel(tmp_path / WHEEL, {**impl_release_files(VERSION),
                                           "sglang/srt/bomb.py": bomb})
    assert wheel.stat().st_size < MIB
    tracemalloc.start()
    try:
        with pytest.raises(ReleaseError) as raised:
            Release.from_wheel(wheel)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(raised.value) == too_large(wheel, "sglang/srt/bomb.py", len(bomb))
    assert peak < 4 * MIB


def lie_about_size(wheel: Path, name: str, size: int) -> None:
    """Rewrites the sizes ``name`` declares (local header and central directory) to ``size``."""
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo(name)
    data = bytearray(wheel.read_bytes())
    local = info.header_offset
    data[local + 22:local + 26] = size.to_bytes(4, "little")  # uncompressed size
    central = data.find(b"PK\x01\x02" + data[local + 4:local + 6])
    while data[central + 46:central + 46 + len(name)] != name.encode():
        central = data.find(b"PK\x01\x02", central + 4)
    data[central + 24:central + 28] = size.to_bytes(4, "little")
    wheel.write_bytes(bytes(data))


def test_a_member_inflating_past_its_declared_size_is_refused_as_damaged(tmp_path: Path) -> None:
    """Declared 10 bytes, inflating to 1 MiB: reading stops at 10 and the CRC says damaged."""
    name = "sglang/srt/liar.py"
    wheel = write_wheel(tmp_path / WHEEL, {**impl_release_files(VERSION), name: "#" * MIB})
    lie_about_size(wheel, name, 10)
    release = Release.from_wheel(wheel)
    with pytest.raises(ReleaseError) as raised:
        release.read(name)
    assert str(raised.value) == (f"{wheel}: cannot read {name} (Bad CRC-32 for file {name!r}); "
                                 "the wheel is damaged: delete it and download the release again")
    with pytest.raises(ReleaseError) as unpacking:
        unpack(release, cache=tmp_path / "cache")
    assert str(unpacking.value) == str(raised.value)
    assert [p.name for p in (tmp_path / "cache" / "unpacked").iterdir()] == []


def test_unpack_streams_a_member_to_disk_in_chunks(tmp_path: Path) -> None:
    """A 12 MiB member is copied, not held: unpacking it allocates a few MiB at most."""
    big = "#" * (12 * MIB) + "\n"
    release = Release.from_wheel(write_wheel(tmp_path / WHEEL, {**impl_release_files(VERSION),
                                                                "sglang/srt/big.py": big}))
    tracemalloc.start()
    try:
        target = unpack(release, cache=tmp_path / "cache")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (target / "sglang/srt/big.py").stat().st_size == len(big)
    assert peak < 4 * MIB


def test_the_index_refuses_a_source_file_over_16_mib(tmp_path: Path) -> None:
    """A source tree's 17 MiB module is refused when the index reads it, naming the file."""
    root = tmp_path / "tree"
    (root / "sglang/srt").mkdir(parents=True)
    (root / "sglang/srt/huge.py").write_bytes(b"#" * (17 * MIB))
    index = ReleaseIndex(Release.from_source(root, version=VERSION), cache=tmp_path / "cache")
    with pytest.raises(ReleaseError) as raised:
        index.summary("sglang.srt.huge")
    assert str(raised.value) == too_large(root, str(root / "sglang/srt/huge.py"), 17 * MIB)


# ---------------------------------------------------------------- damaged and non-UTF-8 members


def damage(wheel: Path, name: str, how: str) -> None:
    """Damages member ``name``: flips a stored byte (``crc``) or the deflate header (``inflate``)."""
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo(name)
    data = bytearray(wheel.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    if how == "crc":
        data[start] ^= 0x01
    else:
        data[start:start + 8] = b"\xff" * 8
    wheel.write_bytes(bytes(data))


DAMAGED = [
    pytest.param("crc", zipfile.ZIP_STORED, "Bad CRC-32 for file 'sglang/srt/plugin_api.py'",
                 id="crc"),
    pytest.param("inflate", zipfile.ZIP_DEFLATED, "bad compressed data: Error -3 while "
                 "decompressing data: invalid block type", id="inflate"),
]


def two_releases(tmp_path: Path, old: dict[str, str | bytes], *,
                 compression: int = zipfile.ZIP_STORED) -> tuple[Path, Path]:
    """Returns wheels of 9.9.1 (``old`` added) and 9.9.2 (``Hook`` moved to srt/api/hooks)."""
    base = {"sglang/version.py": "__version__ = '9.9.1'\n",
            "sglang/srt/plugin_api.py": "class Hook:\n    pass\n"}
    first = write_wheel(tmp_path / "sglang-9.9.1-py3-none-any.whl", {**base, **old},
                        compression=compression)
    second = write_wheel(tmp_path / "sglang-9.9.2-py3-none-any.whl", {
        "sglang/version.py": "__version__ = '9.9.2'\n",
        "sglang/srt/api/hooks.py": "class Hook:\n    pass\n"})
    return first, second


@pytest.mark.parametrize(("how", "compression", "detail"), DAMAGED)
def test_moves_over_a_damaged_member_exits_2_naming_the_wheel_and_member(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str, compression: int, detail: str
) -> None:
    """`auxcheck moves` says which member of which wheel is damaged and how to fix it."""
    first, second = two_releases(tmp_path, {}, compression=compression)
    damage(first, "sglang/srt/plugin_api.py", how)
    status = moves_main(["--from", "9.9.1", "--to", "9.9.2", "--wheel", str(first),
                         "--wheel", str(second), "--offline", "--cache", str(tmp_path / "c")])
    assert status == 2
    assert capsys.readouterr().err == (
        f"auxcheck moves: error: {first}: cannot read sglang/srt/plugin_api.py ({detail}); the "
        "wheel is damaged: delete it and download the release again\n")


def test_check_sglang_over_a_damaged_member_reports_it_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`check --sglang` on a wheel whose imported module is damaged: an error row, no traceback."""
    first, _ = two_releases(tmp_path, {})
    damage(first, "sglang/srt/plugin_api.py", "crc")
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin/uses.py").write_text("from sglang.srt.plugin_api import Hook\n")
    check_main([str(tmp_path / "plugin"), "--wheel", str(first), "--offline", "--cache",
                str(tmp_path / "c"), "--skip", "contract", "--skip", "mypy", "--skip", "imports"])
    assert "cannot read sglang/srt/plugin_api.py (Bad CRC-32" in capsys.readouterr().out


def test_a_module_that_is_not_utf8_is_left_uncertain_and_moves_still_prints_a_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python cannot import a latin-1 file without a cookie, so auxcheck cannot tell what it
    binds: its names are "cannot tell", never missing, and the rest of the release is read."""
    first, second = two_releases(tmp_path, {"sglang/srt/latin.py": "X = 'caf\xe9'\n"
                                            .encode("latin-1")})
    index = ReleaseIndex(Release.from_wheel(first), cache=tmp_path / "c")
    found = index.provides("sglang.srt.latin", "X")
    assert (found.ok, found.certain) == (True, False)
    status = moves_main(["--from", "9.9.1", "--to", "9.9.2", "--wheel", str(first),
                         "--wheel", str(second), "--offline", "--cache", str(tmp_path / "c")])
    assert status == 0
    assert 'old = "sglang.srt.plugin_api"' in capsys.readouterr().out


def test_a_module_with_a_coding_cookie_is_read_as_python_reads_it(tmp_path: Path) -> None:
    """A latin-1 file that says so (PEP 263) is decoded by its cookie, as Python imports it."""
    text = "# -*- coding: latin-1 -*-\nCAFE = 'caf\xe9'\n"
    wheel = write_wheel(tmp_path / WHEEL, {**impl_release_files(VERSION),
                                           "sglang/srt/latin.py": text.encode("latin-1")})
    assert Release.from_wheel(wheel).read("sglang/srt/latin.py") == text


# ---------------------------------------------------------------- read-only, other users', full


def cached_impl_wheel(cache: Path) -> Path:
    """Returns a wheel of an implementation release put in ``cache``."""
    return write_wheel(cache / WHEEL, impl_release_files(VERSION))


@pytest.mark.mode_bits
def test_pytest_impl_with_a_read_only_cache_is_a_usage_error_naming_the_cache(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wheel is cached but cannot be unpacked there: a usage error, not INTERNALERROR."""
    cache = pytester.path / "cache"
    cached_impl_wheel(cache)
    cache.chmod(0o555)
    monkeypatch.setenv(CACHE_ENV, str(cache))
    try:
        result = pytester.runpytest_inprocess("--auxcheck", f"--auxcheck-impl=sglang=={VERSION}")
    finally:
        cache.chmod(0o755)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        (f"*--auxcheck-impl: cannot unpack sglang {VERSION} (wheel {WHEEL}): cannot write the "
        f"cache {cache} (Permission denied); make it writable, or set AUXCHECK_CACHE_DIR to a "
        "writable folder of your own")])


@pytest.mark.mode_bits
def test_a_copy_unpacked_by_another_user_is_refused_naming_it_and_the_fixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user's 0700 copy: not "No module named 'sglang.srt'" but the path and the fix."""
    if os.geteuid() != 0:
        pytest.skip("only root can give a folder to another user")
    cache = tmp_path / "cache"
    release = Release.from_wheel(cached_impl_wheel(cache))
    target = unpack(release, cache=cache)
    for folder, _, files in os.walk(target):
        os.chown(folder, 65534, 65534)
        os.chmod(folder, 0o700)
        for name in files:
            os.chown(os.path.join(folder, name), 65534, 65534)
    monkeypatch.setenv(CACHE_ENV, str(cache))
    with pytest.raises(ReleaseError) as raised:
        release_implementation(VERSION)
    owner = "user nobody (uid 65534)" if _has_user(65534) else "uid 65534"
    assert str(raised.value) == (
        f"{target} in the cache cannot be read (Permission denied); it belongs to {owner}. Ask "
        f"its owner to make it readable (`chmod -R a+rX {target}`), delete it, or set "
        "AUXCHECK_CACHE_DIR to a folder of your own")


def _has_user(uid: int) -> bool:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name == "nobody"
    except KeyError:
        return False


def test_an_unpacked_copy_gets_the_modes_of_the_users_umask(tmp_path: Path) -> None:
    """Not mkdtemp's 0700: under umask 022 another user sharing the cache can read the copy."""
    release = Release.from_wheel(cached_impl_wheel(tmp_path / "cache"))
    before = os.umask(0o022)
    try:
        target = unpack(release, cache=tmp_path / "cache")
    finally:
        os.umask(before)
    modes = {stat.S_IMODE(p.stat().st_mode) for p in [target, *target.rglob("*")] if p.is_dir()}
    assert modes == {0o755}


SMALL_FS = textwrap.dedent("""\
    import os, sys
    from pathlib import Path
    from auxcheck.releases import ReleaseError, Release, fetch_wheel, unpack
    cache = Path(sys.argv[1]) / "cache"
    try:
        if sys.argv[2] == "download":
            fetch_wheel("9.9.1", cache=cache)
        else:
            unpack(Release.from_wheel(Path(sys.argv[3])), cache=cache)
    except ReleaseError as exc:
        print("ERROR", exc)
    print("LEFT", sorted(str(p.relative_to(cache)) for p in cache.rglob("*")))
""")


def on_a_small_file_system(folder: Path, kilobytes: int, *args: str) -> str:
    """Returns the output of SMALL_FS run with a ``kilobytes`` tmpfs mounted on ``folder``.

    The mount lives in a private mount namespace (``unshare``), so no root is needed where
    unprivileged user namespaces are allowed; skips where they are not.
    """
    if shutil.which("unshare") is None or not sys.platform.startswith("linux"):
        pytest.skip("a small file system needs Linux's unshare")
    folder.mkdir(parents=True, exist_ok=True)
    script = (f"mount -t tmpfs -o size={kilobytes}k tmpfs {folder} && echo MOUNTED && "
              f'exec "{sys.executable}" -c "$0" "$@"')
    done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script,
                           SMALL_FS, str(folder), *args],
                          capture_output=True, text=True, timeout=120, check=False)
    if not done.stdout.startswith("MOUNTED\n"):
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {done.stderr.strip()}")
    return done.stdout.removeprefix("MOUNTED\n") + done.stderr


def incompressible_release(folder: Path, version: str, kilobytes: int) -> Path:
    """Returns a pip-installable wheel of a release holding ``kilobytes`` of random hex text."""
    blob = os.urandom(kilobytes * 512).hex()
    return write_wheel(folder / f"sglang-{version}-py3-none-any.whl", {
        "sglang/version.py": f"__version__ = {version!r}\n",
        "sglang/srt/blob.py": f"BLOB = {blob!r}\n",
        f"sglang-{version}.dist-info/METADATA": ("Metadata-Version: 2.1\nName: sglang\n"
                                                 f"Version: {version}\n"),
        f"sglang-{version}.dist-info/WHEEL": ("Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                                              "Tag: py3-none-any\n"),
        f"sglang-{version}.dist-info/RECORD": ""})


@pytest.mark.slow
def test_a_download_onto_a_full_disk_says_so_and_leaves_no_part_of_the_wheel(
    tmp_path: Path, offline_pip: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip fills a 96 kB file system: the error names the cache and the fix, and the cache
    holds no half wheel (pip itself says only "ERROR: Exception:")."""
    incompressible_release(tmp_path / "links", "9.9.1", 300)
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "links"))
    out = on_a_small_file_system(tmp_path / "small", 96, "download")
    cache = tmp_path / "small" / "cache"
    assert f"ERROR cannot get sglang 9.9.1: no space left on the device holding the cache {cache} (" \
        in out
    assert "free, an SGLang wheel takes about 40 MB); free some space there, or set " \
        "AUXCHECK_CACHE_DIR to a folder on a disk with room\n" in out
    assert out.endswith("LEFT []\n")


@pytest.mark.slow
def test_an_unpack_onto_a_full_disk_says_so_and_leaves_no_half_copy(tmp_path: Path) -> None:
    """The wheel fits, its unpacked files do not: the error gives the space needed."""
    wheel = incompressible_release(tmp_path / "w", "9.9.1", 200)
    out = on_a_small_file_system(tmp_path / "small", 96, "unpack", str(wheel))
    with zipfile.ZipFile(wheel) as archive:
        need = sum(i.file_size for i in archive.infolist() if i.filename.startswith("sglang/"))
    needed = f"{need / 1e6:.1f} MB needed"
    assert f"ERROR cannot unpack sglang 9.9.1 (wheel {wheel.name}): no space left on the " \
        f"device holding the cache {tmp_path / 'small' / 'cache'} (" in out
    assert needed in out
    assert out.endswith("LEFT ['unpacked']\n")


# ---------------------------------------------------------------- versions PEP 440 compares


@pytest.mark.parametrize(("first", "second", "same"), [
    pytest.param("9.9.1.0", "9.9.1", True, id="trailing-zero"),
    pytest.param("9.9.1.0.0", "9.9.1", True, id="trailing-zeros"),
    pytest.param("0.05.19", "0.5.19", True, id="leading-zero"),
    pytest.param("1.0rc1", "1rc1", True, id="pre-release"),
    pytest.param("9.9.1", "9.9.10", False, id="different"),
    pytest.param("9.9.1", "9.9.1.post1", False, id="post-release"),
    pytest.param("9.9.1rc1", "9.9.1", False, id="release-candidate"),
])
def test_same_version_compares_as_pep_440_does(first: str, second: str, same: bool) -> None:
    """Trailing zeros and leading zeros do not count; pre, post and dev parts do."""
    assert same_version(first, second) is same
    assert same_version(second, first) is same


def test_a_version_given_twice_in_two_spellings_is_read_once() -> None:
    """9.9.1 and 9.9.1.0 are one release: the first spelling is kept."""
    assert parse_versions("9.9.1,9.9.1.0,9.9.2") == ("9.9.1", "9.9.2")


def test_a_release_spelled_with_a_trailing_zero_uses_the_wheel_pip_downloads(
    tmp_path: Path, offline_pip: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--sglang 9.9.1.0: pip downloads sglang-9.9.1-...whl, and auxcheck takes it (and reuses it)."""
    incompressible_release(tmp_path / "links", "9.9.1", 1)
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "links"))
    wheel = fetch_wheel("9.9.1.0", cache=tmp_path / "cache")
    assert wheel == tmp_path / "cache" / "sglang-9.9.1-py3-none-any.whl"
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "nowhere"))
    release = find_release("9.9.1.0", cache=tmp_path / "cache")
    assert (release.path, release.version, release.declared_version()) == (wheel, "9.9.1.0",
                                                                           "9.9.1")
