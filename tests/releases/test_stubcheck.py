"""Tests for auxcheck._releases.stubcheck: the stub-versus-source checker behind ``auxcheck stubcheck``."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from helpers.paths import STUBS
from helpers.releases import real_release, real_tree

from auxcheck._releases import stubcheck
from auxcheck._releases.stubcheck import (
    ALLOWED_OMISSIONS,
    PINNED_SGLANG_VERSION,
    compare_modules,
    find_stubs_dir,
    parse_module,
    stubs_sglang_version,
)
from auxcheck.cli.stubcheck import main

STUB_MODULES = len(list(STUBS.rglob("*.pyi")))
"""How many modules the stubs describe (each is compared with the source)."""
_RE_EXPORT = re.compile(r"from sglang\.[\w.]+ import (\w+) as \1")


def _messages(stub: str, source: str, *, module: str = "m") -> list[str]:
    stub_info = parse_module(module, textwrap.dedent(stub), stub=True)
    source_info = parse_module(module, textwrap.dedent(source), stub=False)
    mismatches, _ = compare_modules(stub_info, source_info, allowed={})
    return [str(mismatch) for mismatch in mismatches]


MATCHING = [
    pytest.param("def f(a: int, /, b: str = ..., *c: int, d: int, **e: int) -> None: ...",
                 "def f(a, /, b='x', *c, d, **e):\n    pass", id="every-parameter-kind"),
    pytest.param("def f(a: int = 0) -> None: ...", "def f(a=0): pass", id="literal-default-equal"),
    pytest.param("def f(a: int = ...) -> None: ...", "def f(a=3): pass", id="ellipsis-default"),
    pytest.param("class C(Protocol):\n    def m(self) -> None: ...",
                 "class C(Protocol):\n    def m(self):\n        '''Doc.'''", id="protocol"),
    pytest.param("class C(Protocol):\n    def m(self, x: int, /) -> None: ...",
                 "class C(Protocol):\n    def m(self, x): pass",
                 id="protocol-method-positional-only-in-the-stub"),
    pytest.param("@dataclass(frozen=True)\nclass C:\n    a: int\n    b: int = ...",
                 "@dataclass(frozen=True, slots=True)\nclass C:\n    a: int\n    b: int = 2",
                 id="dataclass-slots-ignored"),
    pytest.param("def __getattr__(name: str) -> Incomplete: ...\nclass C: ...",
                 "class C: pass\nclass D: pass\ndef g(): pass", id="partial-module"),
    pytest.param("class C:\n    x: int\n    def __getattr__(self, name: str) -> Incomplete: ...",
                 "@dataclass\nclass C:\n    y: int\n    def __init__(self):\n        self.x = 1\n"
                 "    def other(self): pass", id="partial-class-attribute-set-in-init"),
    pytest.param("class C:\n    def __init__(self, *args: Incomplete, **kwargs: Incomplete) -> None:"
                 " ...\n    def __getattr__(self, name: str) -> Incomplete: ...\n"
                 "    def __setattr__(self, name: str, value: Incomplete) -> None: ...",
                 "@dataclass\nclass C:\n    rid: str\n    n: int = 0",
                 id="partial-class-accepting-what-the-real-one-accepts"),
    pytest.param("def f() -> None: ...",
                 "from typing import TYPE_CHECKING\nimport torch\nfrom os import path\n"
                 "if TYPE_CHECKING:\n    from sglang.x import Y\n_private = 1\ndef f(): pass",
                 id="private-third-party-and-type-checking-names-ignored"),
    pytest.param("from sglang.x import Y as Y", "from sglang.x import Y", id="explicit-re-export"),
    pytest.param("X: str", "try:\n    X = 'a'\nexcept ImportError:\n    X = 'b'",
                 id="variable-in-try"),
]


@pytest.mark.parametrize(("stub", "source"), MATCHING)
def test_stub_that_matches_its_source_has_no_mismatches(stub: str, source: str) -> None:
    """A stub that agrees with the source on names, kinds and defaults reports nothing."""
    assert _messages(stub, source) == []


MOVED_MESSAGE = "m:Moved: the source imports this name from sglang.a (so it resolves here); stub it"

MISMATCHING = [
    pytest.param("class C:\n    def a(self) -> None: ...",
                 "class C:\n    def a(self): pass\n    def b(self): pass",
                 ["m:C.b: missing method: the source defines it"], id="missing-method"),
    pytest.param("class C:\n    def a(self) -> None: ...\n    def z(self) -> None: ...",
                 "class C:\n    def a(self): pass",
                 ["m:C.z: the stub declares a method the source lacks"], id="extra-method"),
    pytest.param("def f(a: int, b: int) -> None: ...", "def f(a): pass",
                 ["m:f: extra parameter 'b': the source has no such parameter"],
                 id="extra-parameter"),
    pytest.param("def f(a: int) -> None: ...", "def f(a, b): pass",
                 ["m:f: missing parameter 'b' (POSITIONAL_OR_KEYWORD)"], id="missing-parameter"),
    pytest.param("def f(a: int = 1) -> None: ...", "def f(a=0): pass",
                 ["m:f: parameter 'a' defaults to 1 in the stub, 0 in the source"],
                 id="wrong-default"),
    pytest.param("def f(a: int) -> None: ...", "def f(a=None): pass",
                 ["m:f: parameter 'a' has no default in the stub; the source has =None"],
                 id="default-only-in-source"),
    pytest.param("def f(a: int = ...) -> None: ...", "def f(a): pass",
                 ["m:f: parameter 'a' has a default in the stub; the source has none"],
                 id="default-only-in-stub"),
    pytest.param("def f(*, a: int) -> None: ...", "def f(a): pass",
                 [("m:f: parameter 'a' is KEYWORD_ONLY in the stub, POSITIONAL_OR_KEYWORD in "
                   "the source")], id="wrong-kind"),
    pytest.param("def f(a: int, /) -> None: ...", "def f(a): pass",
                 [("m:f: parameter 'a' is POSITIONAL_ONLY in the stub, POSITIONAL_OR_KEYWORD in "
                   "the source")], id="positional-only-outside-a-protocol"),
    pytest.param("class C:\n    def m(self, a: int, /) -> None: ...",
                 "class C:\n    def m(self, a): pass",
                 [("m:C.m: parameter 'self' is POSITIONAL_ONLY in the stub, "
                   "POSITIONAL_OR_KEYWORD in the source"),
                  ("m:C.m: parameter 'a' is POSITIONAL_ONLY in the stub, POSITIONAL_OR_KEYWORD "
                   "in the source")], id="positional-only-in-a-plain-class"),
    pytest.param("def f(copy: int) -> None: ...", "def f(copy_tensor): pass",
                 ["m:f: parameter 1 is 'copy' in the stub, 'copy_tensor' in the source"],
                 id="renamed-parameter"),
    pytest.param("async def f() -> None: ...", "def f(): pass",
                 ["m:f: is async in the stub only"], id="async"),
    pytest.param("class C:\n    @staticmethod\n    def m() -> None: ...",
                 "class C:\n    def m(): pass",
                 ["m:C.m: decorated ['staticmethod'] in the stub, [] in the source"],
                 id="staticmethod"),
    pytest.param("", "def f(): pass", ["m:f: missing from the stub: the source defines this function"], id="missing-name"),
    pytest.param("def g() -> None: ...", "", ["m:g: the stub declares a name the source lacks"],
                 id="extra-name"),
    pytest.param("class C: ...", "def C(): pass",
                 ["m:C: a class in the stub, a function in the source"], id="wrong-symbol-kind"),
    pytest.param("", "from sglang.a import Moved",
                 [MOVED_MESSAGE], id="runtime-import-not-stubbed"),
    pytest.param("from sglang.a import Moved", "from sglang.a import Moved",
                 [MOVED_MESSAGE], id="stub-import-is-not-a-re-export"),
    pytest.param("class C: ...", "class C(Protocol): pass",
                 ["m:C: is a Protocol in the source only"], id="protocol-flag"),
    pytest.param("@runtime_checkable\nclass C(Protocol): ...", "class C(Protocol): pass",
                 ["m:C: is @runtime_checkable in the stub only"], id="runtime-checkable"),
    pytest.param("@dataclass\nclass C:\n    a: int", "@dataclass(frozen=True)\nclass C:\n    a: int",
                 ["m:C: dataclass frozen=False in the stub, frozen=True in the source"],
                 id="dataclass-frozen"),
    pytest.param("class C:\n    a: int", "@dataclass\nclass C:\n    a: int",
                 ["m:C: is a dataclass in the source only"], id="dataclass-flag"),
    pytest.param("@dataclass\nclass C:\n    b: int\n    a: int",
                 "@dataclass\nclass C:\n    a: int\n    b: int",
                 ["m:C: dataclass fields (b, a) in the stub, (a, b) in the source"],
                 id="dataclass-field-order"),
    pytest.param("class C:\n    x: int\n    def __getattr__(self, name: str) -> Incomplete: ...",
                 "class C:\n    def __init__(self):\n        self.y = 1",
                 ["m:C.x: the stub declares an attribute the source never sets"],
                 id="partial-class-unknown-attribute"),
    pytest.param("class C: ...", "class C:\n    x: int",
                 ["m:C.x: missing attribute: the source declares it"], id="missing-attribute"),
    pytest.param("class C:\n    def __init__(self, *args: Incomplete, **kwargs: Incomplete) -> None:"
                 " ...", "class C:\n    def __init__(self, rid): pass",
                 ["m:C.__init__: parameter 2 is 'args' in the stub, 'rid' in the source",
                  ("m:C.__init__: parameter 'args' is VAR_POSITIONAL in the stub, "
                   "POSITIONAL_OR_KEYWORD in the source"),
                  "m:C.__init__: extra parameter 'kwargs': the source has no such parameter"],
                 id="open-init-of-a-class-that-is-not-partial"),
]


@pytest.mark.parametrize(("stub", "source", "expected"), MISMATCHING)
def test_each_difference_from_the_source_is_reported(
    stub: str, source: str, expected: list[str]
) -> None:
    """Every kind of stub-versus-source difference is reported once, at module:qualname."""
    assert _messages(stub, source) == expected


def test_allowed_omission_is_a_note_not_a_mismatch() -> None:
    """A name left out on purpose is listed with its reason instead of failing the check."""
    stub = parse_module("m", "", stub=True)
    source = parse_module("m", "from sglang.a import Moved", stub=False)
    mismatches, notes = compare_modules(stub, source, allowed={"m:Moved": "it moved"})
    assert (mismatches, notes) == ([], ["note: m:Moved left out on purpose: it moved"])


def test_every_allowed_omission_names_a_stub_module() -> None:
    """Each allow-list entry is module:name for a module the stubs describe, with a reason."""
    stub_modules = {module for module, _ in stubcheck._stub_modules(STUBS)}
    for key, reason in ALLOWED_OMISSIONS.items():
        module, _, name = key.partition(":")
        assert module in stub_modules and name and reason


def test_stubs_match_the_reference_contract() -> None:
    """The contract stubs agree with auxcheck/protocols.py, module by module."""
    result = stubcheck.check_against_reference(STUBS)
    assert result.mismatches == ()
    assert result.modules == len(stubcheck.REFERENCE_LAYOUT)


def test_metadata_names_the_pinned_release() -> None:
    """METADATA.toml in the stubs names the release the checker pins."""
    assert stubs_sglang_version(STUBS) == PINNED_SGLANG_VERSION


def test_installed_stubs_are_found_on_sys_path() -> None:
    """The editable install puts stubs/ on sys.path, where mypy and the checker find them."""
    assert find_stubs_dir().resolve() == STUBS


def test_missing_stubs_directory_names_the_fix() -> None:
    """Without sglang-stubs on the path the error says to install auxcheck or pass --stubs."""
    with pytest.raises(FileNotFoundError, match=r"install auxcheck .* or pass --stubs DIR"):
        find_stubs_dir([])


# ---------------------------------------------------------------- the command line


def _copy_stubs(tmp_path: Path) -> Path:
    return Path(shutil.copytree(STUBS, tmp_path / "sglang-stubs"))


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _source_tree_from_stubs(root: Path, *, version: str = PINNED_SGLANG_VERSION) -> Path:
    # Stubs are valid Python, so a tree of them read as source must match the stubs.
    for path in STUBS.rglob("*.pyi"):
        target = root / "sglang" / path.relative_to(STUBS).with_suffix(".py")
        target.parent.mkdir(parents=True, exist_ok=True)
        lines = [_as_source_line(line) for line in path.read_text().splitlines()]
        target.write_text("from typing import TYPE_CHECKING\n" + "\n".join(lines) + "\n")
    (root / "sglang" / "_version.py").write_text(f"__version__ = version = {version!r}\n")
    return root


def _as_source_line(line: str) -> str:
    # Stub imports are for the type checker, as in SGLang's TYPE_CHECKING blocks; an
    # explicit re-export (`import X as X`) is API, a plain import in the source.
    if not line.startswith("from sglang.") or _RE_EXPORT.fullmatch(line):
        return line
    return f"if TYPE_CHECKING:\n    {line}"


def _zip_tree(root: Path, wheel: Path) -> Path:
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(root.rglob("*.py")):
            archive.write(path, path.relative_to(root).as_posix())
    return wheel


def test_reference_run_passes_and_prints_its_notes(capsys: pytest.CaptureFixture[str]) -> None:
    """--reference exits 0, naming the reference-only names and the summary line."""
    assert main(["--reference", "--stubs", str(STUBS)]) == 0
    out = capsys.readouterr().out
    assert "note: auxcheck.protocols:ScheduleBatchLike has no SGLang counterpart" in out
    assert out.endswith(f"stubs for sglang {PINNED_SGLANG_VERSION} vs the reference contract: "
                        "4 modules compared, 0 mismatches\n")


MUTATIONS = [
    pytest.param("srt/managers/auxiliary_output.pyi",
                 "HostAuxiliaryOutput, ...]\n    def consume(self, batch: ScheduleBatch, commits: "
                 "Sequence[CommittedTokens | None]) -> None: ...\n", "HostAuxiliaryOutput, ...]\n",
                 "sglang.srt.managers.auxiliary_output:CompositeHostAuxiliaryOutput.consume: "
                 "missing method: the source defines it", id="missing-method"),
    pytest.param("srt/sampling/sampling_observer.pyi", "token_ids: torch.Tensor, /",
                 "token_ids: torch.Tensor, extra: int, /",
                 "sglang.srt.sampling.sampling_observer:SamplingObserver.after_sample: extra "
                 "parameter 'extra': the source has no such parameter", id="extra-parameter"),
    pytest.param("srt/sampling/sampling_observer_pp.pyi", "output: DeviceAuxiliaryOutput | None\n",
                 "output: DeviceAuxiliaryOutput | None = None\n",
                 "sglang.srt.sampling.sampling_observer_pp:add_auxiliary_output_to_pp_tensors: "
                 "parameter 'output' has a default in the stub; the source has none",
                 id="wrong-default"),
    pytest.param("srt/managers/auxiliary_output.pyi", "def append_auxiliary_output(\n    current",
                 "def append_auxiliary_output(\n    *, current",
                 "sglang.srt.managers.auxiliary_output:append_auxiliary_output: parameter "
                 "'current' is KEYWORD_ONLY in the stub, POSITIONAL_OR_KEYWORD in the source",
                 id="wrong-kind"),
]


@pytest.mark.parametrize(("stub_file", "old", "new", "expected"), MUTATIONS)
def test_broken_stub_fails_against_the_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stub_file: str, old: str, new: str,
    expected: str,
) -> None:
    """A stub with a missing method, extra parameter, wrong default or kind exits 1, saying so."""
    stubs = _copy_stubs(tmp_path)
    _edit(stubs / stub_file, old, new)
    assert main(["--reference", "--stubs", str(stubs), "--quiet"]) == 1
    assert capsys.readouterr().out.splitlines()[0] == expected


def test_source_tree_that_matches_the_stubs_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--source reads a directory holding sglang/ and exits 0 when it matches the stubs."""
    root = _source_tree_from_stubs(tmp_path / "site")
    assert main(["--source", str(root / "sglang"), "--stubs", str(STUBS), "-q"]) == 0
    assert f"(sglang {PINNED_SGLANG_VERSION}): {STUB_MODULES} modules compared, 0 mismatches" in (
        capsys.readouterr().out
    )


def test_wheel_with_a_changed_signature_and_release_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--wheel reads the zip without installing it; other releases and signatures are reported."""
    root = _source_tree_from_stubs(tmp_path / "site", version="0.5.23")
    _edit(root / "sglang/srt/managers/schedule_batch.py", "def finished(self)",
          "def finished(self, strict)")
    wheel = _zip_tree(root, tmp_path / "sglang-0.5.23-py3-none-any.whl")
    assert main(["--wheel", str(wheel), "--stubs", str(STUBS), "-q"]) == 1
    assert capsys.readouterr().out.splitlines()[:2] == [
        ("sglang.srt.managers.schedule_batch:Req.finished: missing parameter 'strict' "
         "(POSITIONAL_OR_KEYWORD)"),
        (f"stubs for sglang {PINNED_SGLANG_VERSION} vs wheel {wheel.name} (sglang 0.5.23): "
         f"{STUB_MODULES} modules compared, 1 mismatch"),
    ]


def test_stub_module_absent_from_the_source_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stub module whose source file is gone is a mismatch, not a crash."""
    root = _source_tree_from_stubs(tmp_path / "site")
    (root / "sglang/srt/sampling/sampling_observer_pp.py").unlink()
    assert main(["--source", str(root), "--stubs", str(STUBS), "-q"]) == 1
    assert capsys.readouterr().out.splitlines()[0] == (
        "sglang.srt.sampling.sampling_observer_pp: the stubs describe a module the source "
        "does not have"
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(["--wheel", "missing.whl"], "--wheel: no wheel at missing.whl; download "
                     f"it with `pip download --no-deps sglang=={PINNED_SGLANG_VERSION}`",
                     id="no-wheel"),
        pytest.param(["--source", "."], "--source: . holds no sglang package; pass the "
                     "directory that contains sglang/ (e.g. an unpacked wheel)", id="no-package"),
        pytest.param(["--reference", "--stubs", "nowhere"], "--stubs: nowhere holds no sglang "
                     "stubs (no __init__.pyi); pass the sglang-stubs directory", id="no-stubs"),
    ],
)
def test_unusable_input_exits_2_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    args: list[str], expected: str,
) -> None:
    """A missing wheel, a directory without sglang/ or missing stubs is a usage error that
    names the option and the fix."""
    monkeypatch.chdir(tmp_path)
    assert main([*args, "--stubs", str(STUBS)] if "--stubs" not in args else args) == 2
    assert capsys.readouterr().err == f"auxcheck stubcheck: error: {expected}\n"


@pytest.mark.parametrize(("args", "expected"), [
    pytest.param([], "pass --sglang R1,R2 (releases, fetched into the cache when missing), "
                     "--wheel WHEEL, --source DIR or --reference", id="no-target"),
    pytest.param(["--reference", "--sglang", "0.5.23"], "--reference compares with auxcheck's "
                 "own contract: pass it alone, or pass --sglang/--wheel/--source without it",
                 id="reference-and-release"),
    pytest.param(["--sglang", "0.5.x"], "'0.5.x' is not an SGLang release version; expected "
                 "versions such as 0.5.19,0.5.20,0.5.23", id="bad-version"),
])
def test_a_missing_or_contradictory_target_exits_2_saying_what_to_pass(
    capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    """Without a target, or with --reference beside a release, stubcheck says what to pass."""
    assert main(args) == 2
    assert capsys.readouterr().err == f"auxcheck stubcheck: error: {expected}\n"


def test_sglang_releases_are_read_from_the_cache_like_check_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--sglang R1,R2 takes each release's wheel from --cache, as `auxcheck check --sglang`
    does (offline here: nothing is downloaded), and reports each release on its own."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for version in ("0.5.20", "0.5.23"):
        wheel = real_release(version).path
        (cache / wheel.name).symlink_to(wheel)
    assert main(["--sglang", "0.5.20,0.5.23", "--cache", str(cache), "--offline", "--stubs",
                 str(STUBS), "-q"]) == 0
    assert [line.split(": ")[0] for line in capsys.readouterr().out.splitlines()] == [
        f"stubs for sglang {PINNED_SGLANG_VERSION} vs wheel {real_release(v).path.name} "
        f"(sglang {v})" for v in ("0.5.20", "0.5.23")]


def test_a_release_missing_from_the_cache_offline_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--offline with a release the cache lacks exits 2 and says how to get it."""
    assert main(["--sglang", "0.5.23", "--cache", str(tmp_path), "--offline"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("auxcheck stubcheck: error: ") and "0.5.23" in err


def _mismatch_lines(out: str) -> list[str]:
    """Returns the mismatch lines of a stubcheck report: neither notes nor the summary."""
    lines = out.splitlines()
    return [line for line in lines[:-1] if not line.startswith("note: ")]


def test_stubs_match_the_pinned_sglang_wheel(capsys: pytest.CaptureFixture[str]) -> None:
    """The stubs match the real wheel of the pinned release, read without installing it."""
    wheel = real_release(PINNED_SGLANG_VERSION).path
    assert main(["--wheel", str(wheel), "--stubs", str(STUBS)]) == 0
    out = capsys.readouterr().out
    assert "note: sglang.srt.sampling.sampling_observer:DeviceAuxiliaryOutput left out" in out
    assert out.endswith(f"vs wheel {wheel.name} (sglang {PINNED_SGLANG_VERSION}): "
                        f"{STUB_MODULES} modules compared, 0 mismatches\n")


def test_stubs_match_the_unpacked_pinned_source(capsys: pytest.CaptureFixture[str]) -> None:
    """The stubs match the real unpacked source tree of the pinned release."""
    assert main(["--source", str(real_tree(PINNED_SGLANG_VERSION)), "--stubs", str(STUBS),
                 "-q"]) == 0
    assert f"(sglang {PINNED_SGLANG_VERSION}): {STUB_MODULES} modules compared, 0 mismatches" in (
        capsys.readouterr().out)


OTHER_RELEASES = [
    # 0.5.19 predates the move: the contract lived in sampling_observer and there were no
    # composites, so the stubs' auxiliary_output module is absent and two classes sit in
    # their old home (DeviceAuxiliaryOutput there is an allowed omission, a note).
    pytest.param("0.5.19", [
        ("sglang.srt.managers.auxiliary_output: the stubs describe a module the source does "
         "not have"),
        ("sglang.srt.sampling.sampling_observer:CommittedTokens: missing from the stub: the "
         "source defines this class"),
        ("sglang.srt.sampling.sampling_observer:HostAuxiliaryOutput: missing from the stub: "
         "the source defines this class"),
    ], id="0.5.19-before-the-move"),
    # 0.5.23 changed none of the contract's signatures: the stubs describe it as well (the
    # release they were written from is a note, not a mismatch).
    pytest.param("0.5.23", [], id="0.5.23-same-contract"),
]


@pytest.mark.parametrize(("version", "expected"), OTHER_RELEASES)
def test_stubs_against_other_real_releases_show_exactly_what_changed(
    capsys: pytest.CaptureFixture[str], version: str, expected: list[str]
) -> None:
    """Against 0.5.19 and 0.5.23 the report lists exactly the contract's real differences,
    and notes the release the stubs were written from."""
    wheel = real_release(version).path
    assert main(["--wheel", str(wheel), "--stubs", str(STUBS)]) == (1 if expected else 0)
    out = capsys.readouterr().out
    assert _mismatch_lines(out) == expected
    assert (f"note: the stubs were written from sglang {PINNED_SGLANG_VERSION}; compared here "
            f"with sglang {version}") in out.splitlines()
    assert out.splitlines()[-1] == (
        f"stubs for sglang {PINNED_SGLANG_VERSION} vs wheel {wheel.name} (sglang {version}): "
        f"{STUB_MODULES} modules compared, {len(expected)} "
        f"mismatch{'' if len(expected) == 1 else 'es'}")


def test_command_runs_as_a_subprocess() -> None:
    """`python -m auxcheck stubcheck --reference` exits 0 from a real process."""
    completed = subprocess.run(
        [sys.executable, "-m", "auxcheck", "stubcheck", "--reference", "-q"],
        capture_output=True, text=True, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "0 mismatches" in completed.stdout


def test_checker_imports_neither_torch_nor_sglang() -> None:
    """Running the checker loads no heavy module: SGLang is parsed, never imported."""
    code = ("import sys\nfrom auxcheck.cli.stubcheck import main\nmain(['--reference', '-q'])\n"
            "print(sorted(m for m in ('torch', 'sglang', 'libcst', 'hypothesis') "
            "if m in sys.modules))")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               check=False)
    assert completed.stdout.splitlines()[-1] == "[]", completed.stderr
