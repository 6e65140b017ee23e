"""Tests for auxcheck.releases: SGLang releases read from wheels and trees, never installed."""

from __future__ import annotations

import sys
import types
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from helpers.releases import real_tree

from auxcheck import releases
from auxcheck._core import errors
from auxcheck._core.errors import ReleaseError
from auxcheck._releases import wheels
from auxcheck.releases import (
    CACHE_ENV,
    Release,
    cache_dir,
    fetch_wheel,
    find_release,
    import_modules,
    parse_versions,
    unpack,
)

OFFLINE_HINT = ("When offline, pass --wheel PATH (from `pip download --no-deps sglang==0.5.23` on "
                "a connected machine) or --source DIR (an unpacked sglang 0.5.23), or put "
                "sglang-0.5.23-*.whl in {cache}")


def release_files(version: str, *, marker: str = "") -> dict[str, str]:
    """Returns the files of a tiny SGLang release: a version, a module, a poisoned __init__."""
    return {
        "sglang/__init__.py": "raise RuntimeError('sglang/__init__.py must never run')\n",
        "sglang/version.py": f"__version__ = {version!r}\n",
        "sglang/srt/managers/tiny.py": ("from sglang.srt.utils_tiny import helper\n"
                                        f"MARKER = {marker or version!r}\n"),
        "sglang/srt/utils_tiny.py": "def helper():\n    return 1\n",
        "sglang/srt/notes.txt": "not Python\n",
    }


def build_tree(root: Path, files: Mapping[str, str]) -> Path:
    """Returns ``root`` after writing ``files`` under it (a folder holding ``sglang/``)."""
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


def build_wheel(path: Path, files: Mapping[str, str]) -> Path:
    """Returns ``path`` after zipping ``files`` into it (a wheel is a zip of the files)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_all_lists_exactly_the_public_names() -> None:
    """__all__ names every public function, class and constant the face re-exports from the
    module behind it, and the two errors it raises (which live with every other exception in
    ``auxcheck._core.errors``), each the very object defined there."""
    public = {name for name, value in vars(wheels).items()
              if not name.startswith("_") and getattr(value, "__module__", None) == wheels.__name__}
    raised = {"ReleaseError", "UndecodableSource"}
    assert set(releases.__all__) == public | {"CACHE_ENV"} | raised
    assert all(getattr(releases, name) is getattr(errors if name in raised else wheels, name)
               for name in releases.__all__)


# ---------------------------------------------------------------- versions and the cache


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("0.5.23", ("0.5.23",), id="one"),
    pytest.param("0.5.19,0.5.20,0.5.23", ("0.5.19", "0.5.20", "0.5.23"), id="comma-list"),
    pytest.param(" 0.5.20 , 0.5.19 ", ("0.5.20", "0.5.19"), id="spaces-kept-in-order"),
    pytest.param("0.5.20,0.5.20", ("0.5.20",), id="repeat-dropped"),
    pytest.param(["0.5.23", "0.6.0rc1"], ("0.5.23", "0.6.0rc1"), id="list-with-rc"),
    pytest.param("0.5.3.post1,1.0.dev2", ("0.5.3.post1", "1.0.dev2"), id="post-and-dev"),
])
def test_parse_versions_returns_the_versions_in_order(text: str | list[str],
                                                      expected: tuple[str, ...]) -> None:
    """Versions come back stripped, in the order given, without repeats."""
    assert parse_versions(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("banana", "'banana' is not an SGLang release version; expected versions such "
                 "as 0.5.19,0.5.20,0.5.23", id="word"),
    pytest.param("0.5.20,,0.5.23", "'' is not an SGLang release version; expected versions such "
                 "as 0.5.19,0.5.20,0.5.23", id="empty-entry"),
    pytest.param("v0.5.20", "'v0.5.20' is not an SGLang release version; expected versions such "
                 "as 0.5.19,0.5.20,0.5.23", id="v-prefix"),
    pytest.param("sglang==0.5.20", "'sglang==0.5.20' is not an SGLang release version; expected "
                 "versions such as 0.5.19,0.5.20,0.5.23", id="requirement"),
    pytest.param([], "no SGLang release given; expected versions such as 0.5.20,0.5.23",
                 id="nothing"),
])
def test_parse_versions_rejects_what_is_not_a_version(text: str | list[str],
                                                      message: str) -> None:
    """The error names the first entry that is not a version and shows the expected form."""
    with pytest.raises(ReleaseError) as raised:
        parse_versions(text)
    assert str(raised.value) == message


@pytest.mark.parametrize(("env", "expected"), [
    pytest.param({CACHE_ENV: "/x/wheels", "XDG_CACHE_HOME": "/xdg"}, "/x/wheels", id="explicit"),
    pytest.param({"XDG_CACHE_HOME": "/xdg"}, "/xdg/auxcheck/sglang", id="xdg"),
    pytest.param({"HOME": "/home/me"}, "/home/me/.cache/auxcheck/sglang", id="home"),
])
def test_cache_dir_prefers_the_variable_then_xdg_then_home(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str
) -> None:
    """$AUXCHECK_CACHE_DIR wins, then $XDG_CACHE_HOME/auxcheck/sglang, then ~/.cache."""
    for name in (CACHE_ENV, "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cache_dir() == Path(expected)


# ---------------------------------------------------------------- wheels and trees


def test_a_wheel_is_read_as_a_zip_with_its_declared_version(tmp_path: Path) -> None:
    """from_wheel reads the version, the file list and the text without unpacking anything."""
    wheel = build_wheel(tmp_path / "sglang-0.5.23-py3-none-any.whl", release_files("0.5.23"))
    release = Release.from_wheel(wheel)
    assert (release.version, release.kind, release.label) == (
        "0.5.23", "wheel", "sglang 0.5.23 (wheel sglang-0.5.23-py3-none-any.whl)")
    assert release.python_files() == ["sglang/__init__.py", "sglang/srt/managers/tiny.py",
                                      "sglang/srt/utils_tiny.py", "sglang/version.py"]
    assert release.read("sglang/srt/utils_tiny.py") == "def helper():\n    return 1\n"
    assert release.read("sglang/srt/missing.py") is None
    assert release.exists("sglang/srt/managers") and not release.exists("sglang/srt/mana")


def test_a_tree_is_read_from_the_folder_holding_sglang_or_sglang_itself(tmp_path: Path) -> None:
    """from_source accepts the parent of sglang/ and sglang/ itself: the same release."""
    root = build_tree(tmp_path / "python", release_files("0.5.20"))
    outer, inner = Release.from_source(root), Release.from_source(root / "sglang")
    assert (outer.path, outer.version, outer.kind) == (root, "0.5.20", "source")
    assert (inner.path, inner.version) == (root, "0.5.20")
    assert outer.read("sglang/srt/managers/tiny.py") == inner.read("sglang/srt/managers/tiny.py")
    assert outer.exists("sglang/srt/managers/tiny.py") and outer.read("sglang/nope.py") is None


def test_a_release_without_a_version_file_is_named_after_its_file(tmp_path: Path) -> None:
    """With no sglang/version.py the version is the one asked for, else the path's name."""
    files = {"sglang/srt/a.py": "X = 1\n"}
    assert Release.from_source(build_tree(tmp_path / "checkout", files)).version == "checkout"
    wheel = build_wheel(tmp_path / "w.whl", files)
    assert Release.from_wheel(wheel, version="0.5.23").version == "0.5.23"


def test_a_version_other_than_the_one_asked_for_is_refused(tmp_path: Path) -> None:
    """A wheel declaring 0.5.20 is not taken for 0.5.23: the error names both."""
    wheel = build_wheel(tmp_path / "sglang-0.5.23-py3-none-any.whl", release_files("0.5.20"))
    with pytest.raises(ReleaseError) as raised:
        Release.from_wheel(wheel, version="0.5.23")
    assert str(raised.value) == (f"{wheel} is sglang 0.5.20, not 0.5.23; pass the wheel or "
                                 "tree of sglang 0.5.23")


@pytest.mark.parametrize(("content", "why"), [
    pytest.param(b"not a zip", "File is not a zip file", id="text-file"),
    pytest.param(None, "[Errno 2] No such file or directory: '{path}'", id="missing-file"),
])
def test_a_file_that_is_not_a_wheel_is_refused(tmp_path: Path, content: bytes | None,
                                               why: str) -> None:
    """A file that is no zip says so and how to get a wheel."""
    path = tmp_path / "sglang-0.5.23-py3-none-any.whl"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ReleaseError) as raised:
        Release.from_wheel(path)
    assert str(raised.value) == (f"{path} is not a readable wheel ({why.format(path=path)}); "
                                 "download one with `pip download --no-deps sglang==VERSION`")


def test_a_zip_without_sglang_sources_is_refused(tmp_path: Path) -> None:
    """Some other project's wheel is not taken for an SGLang release."""
    wheel = build_wheel(tmp_path / "other-1.0-py3-none-any.whl", {"other/__init__.py": ""})
    with pytest.raises(ReleaseError) as raised:
        Release.from_wheel(wheel)
    assert str(raised.value) == f"{wheel} holds no sglang/srt sources; is it an SGLang release?"


def test_a_folder_without_sglang_is_refused(tmp_path: Path) -> None:
    """from_source on a folder with no sglang/ says which folder to pass instead."""
    with pytest.raises(ReleaseError) as raised:
        Release.from_source(tmp_path)
    assert str(raised.value) == (f"{tmp_path} holds no sglang package; pass the folder that "
                                 "contains sglang/ (an unpacked wheel or a checkout's python/ "
                                 "folder)")


def test_find_release_prefers_the_given_copy_of_that_version(tmp_path: Path,
                                                             offline_pip: None) -> None:
    """Of the wheels and trees given, the one declaring the version is used; pip never runs."""
    old = build_wheel(tmp_path / "a.whl", release_files("0.5.20"))
    new = build_tree(tmp_path / "tree", release_files("0.5.23"))
    found = find_release("0.5.23", wheels=[old], sources=[new], cache=tmp_path / "cache")
    assert (found.kind, found.path, found.version) == ("source", new, "0.5.23")
    assert find_release("0.5.20", wheels=[old], cache=tmp_path / "cache").path == old


def test_find_release_refuses_a_wheel_path_that_is_not_there(tmp_path: Path) -> None:
    """A --wheel naming no file is an error, not a download."""
    with pytest.raises(ReleaseError) as raised:
        find_release("0.5.23", wheels=[tmp_path / "nope.whl"], cache=tmp_path)
    assert str(raised.value) == (f"no wheel at {tmp_path / 'nope.whl'}; download one with "
                                 "`pip download --no-deps sglang==VERSION`")


# ---------------------------------------------------------------- fetching


def test_a_cached_wheel_is_returned_without_pip(tmp_path: Path, offline_pip: None) -> None:
    """A wheel already in the cache is used as it is, even offline."""
    wheel = build_wheel(tmp_path / "sglang-0.5.23-py3-none-any.whl", release_files("0.5.23"))
    assert fetch_wheel("0.5.23", cache=tmp_path) == wheel
    assert find_release("0.5.23", cache=tmp_path).path == wheel


def test_an_empty_cache_without_download_names_the_offline_ways(tmp_path: Path) -> None:
    """download=False on an empty cache raises, naming the release, --wheel and --source."""
    with pytest.raises(ReleaseError) as raised:
        fetch_wheel("0.5.23", cache=tmp_path, download=False)
    assert str(raised.value) == ("cannot get sglang 0.5.23: it is not in the cache. "
                                 + OFFLINE_HINT.format(cache=tmp_path))


def test_a_failed_download_names_the_release_and_the_offline_ways(tmp_path: Path,
                                                                  offline_pip: None) -> None:
    """Without an index pip fails; the error carries pip's reason and the offline fixes."""
    with pytest.raises(ReleaseError) as raised:
        fetch_wheel("0.5.23", cache=tmp_path)
    assert str(raised.value) == (
        "cannot get sglang 0.5.23: pip download failed: ERROR: No matching distribution found "
        "for sglang==0.5.23. " + OFFLINE_HINT.format(cache=tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == []  # no half-downloaded folder is left


def test_fetch_wheel_downloads_with_pip_into_the_cache(tmp_path: Path, offline_pip: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """pip download (here from a local folder) puts the wheel in the cache, nothing else."""
    files = {**release_files("0.5.23"),
             "sglang-0.5.23.dist-info/METADATA": ("Metadata-Version: 2.1\nName: sglang\n"
                                                  "Version: 0.5.23\n"),
             "sglang-0.5.23.dist-info/WHEEL": ("Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                                               "Tag: py3-none-any\n"),
             "sglang-0.5.23.dist-info/RECORD": ""}
    build_wheel(tmp_path / "links" / "sglang-0.5.23-py3-none-any.whl", files)
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "links"))
    wheel = fetch_wheel("0.5.23", cache=tmp_path / "cache")
    assert wheel == tmp_path / "cache" / "sglang-0.5.23-py3-none-any.whl"
    assert [p.name for p in wheel.parent.iterdir()] == [wheel.name]
    assert find_release("0.5.23", cache=tmp_path / "cache").read("sglang/version.py") == (
        "__version__ = '0.5.23'\n")


def test_a_wheel_another_run_moved_in_first_is_kept(tmp_path: Path) -> None:
    """Two runs downloading at once: the second keeps the first's file, so its mtime holds."""
    first = build_wheel(tmp_path / "cache" / "sglang-0.5.23-py3-none-any.whl",
                        release_files("0.5.23", marker="first"))
    before = Release.from_wheel(first).fingerprint()
    late = build_wheel(tmp_path / "tmp" / first.name, release_files("0.5.23", marker="late"))
    assert wheels._move_in(late, first) == first
    assert Release.from_wheel(first).fingerprint() == before
    assert "first" in (Release.from_wheel(first).read("sglang/srt/managers/tiny.py") or "")


# ---------------------------------------------------------------- unpacking


def test_unpack_writes_the_python_files_once_and_returns_the_same_folder(tmp_path: Path) -> None:
    """A second unpack returns the first folder; only Python files are written; no temp left."""
    release = Release.from_wheel(build_wheel(tmp_path / "sglang-0.5.23-py3-none-any.whl",
                                             release_files("0.5.23")))
    first = unpack(release, cache=tmp_path / "cache")
    (first / "sglang" / "srt" / "utils_tiny.py").write_text("# kept\n")
    second = unpack(release, cache=tmp_path / "cache")
    assert second == first and first.parent == tmp_path / "cache" / "unpacked"
    assert first.name == f"sglang-0.5.23-{release.fingerprint()}"
    assert (second / "sglang" / "srt" / "utils_tiny.py").read_text() == "# kept\n"
    assert sorted(p.relative_to(first).as_posix() for p in first.rglob("*.*")) == (
        release.python_files())
    assert [p.name for p in first.parent.iterdir()] == [first.name]


def test_unpack_never_uses_a_half_written_copy(tmp_path: Path) -> None:
    """A temporary folder left by a crashed unpack is not taken for the release."""
    release = Release.from_wheel(build_wheel(tmp_path / "sglang-0.5.23-py3-none-any.whl",
                                             release_files("0.5.23")))
    crashed = build_tree(tmp_path / "cache" / "unpacked" / ".unpack-crashed",
                         {"sglang/srt/managers/tiny.py": "half"})
    target = unpack(release, cache=tmp_path / "cache")
    assert target != crashed
    assert (target / "sglang/srt/managers/tiny.py").read_text().endswith("MARKER = '0.5.23'\n")


def test_unpack_returns_a_source_tree_as_it_is(tmp_path: Path) -> None:
    """A tree is already unpacked: nothing is copied."""
    root = build_tree(tmp_path / "tree", release_files("0.5.20"))
    assert unpack(Release.from_source(root), cache=tmp_path / "cache") == root
    assert not (tmp_path / "cache").exists()


# ---------------------------------------------------------------- importing


def test_import_modules_never_runs_sglang_init_and_restores_sys_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pre-existing sglang entry survives; the release's modules stay out of sys.modules."""
    installed = types.ModuleType("sglang")
    monkeypatch.setitem(sys.modules, "sglang", installed)
    root = build_tree(tmp_path / "tree", release_files("0.5.23"))
    modules = import_modules(root, ["sglang.srt.managers.tiny"])
    tiny = modules["sglang.srt.managers.tiny"]
    assert tiny.MARKER == "0.5.23" and tiny.helper() == 1
    assert tiny.__file__ == str(root / "sglang/srt/managers/tiny.py")
    assert sys.modules["sglang"] is installed
    assert [n for n in sys.modules if n.startswith("sglang.")] == []


def test_import_modules_restores_sys_modules_when_an_import_fails(tmp_path: Path) -> None:
    """A module that does not exist raises ImportError and leaves no sglang entry behind."""
    root = build_tree(tmp_path / "tree", release_files("0.5.23"))
    with pytest.raises(ImportError):
        import_modules(root, ["sglang.srt.managers.tiny", "sglang.srt.nope"])
    assert [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")] == []


def test_two_releases_load_side_by_side_as_distinct_modules(tmp_path: Path) -> None:
    """Each release's module is its own object, with its own code."""
    old = import_modules(build_tree(tmp_path / "a", release_files("0.5.20")),
                         ["sglang.srt.managers.tiny"])["sglang.srt.managers.tiny"]
    new = import_modules(build_tree(tmp_path / "b", release_files("0.5.23")),
                         ["sglang.srt.managers.tiny"])["sglang.srt.managers.tiny"]
    assert old is not new and (old.MARKER, new.MARKER) == ("0.5.20", "0.5.23")


def test_real_releases_load_their_own_contract_classes_side_by_side() -> None:
    """SGLang 0.5.20's and 0.5.23's auxiliary_output import with torch alone, as distinct classes."""
    name = "sglang.srt.managers.auxiliary_output"
    old = import_modules(real_tree("0.5.20"), [name])[name]
    new = import_modules(real_tree("0.5.23"), [name])[name]
    assert old.CompositeDeviceAuxiliaryOutput is not new.CompositeDeviceAuxiliaryOutput
    assert old.__file__ == str(real_tree("0.5.20") / "sglang/srt/managers/auxiliary_output.py")
    assert "sglang" not in sys.modules
