"""Tests for ``auxcheck check --sglang``: imports, hook targets, entry points and signatures per release.

Small release trees built in ``tmp_path`` pin each rule; the real 0.5.19, 0.5.20 and
0.5.23 wheels (from the test cache, never installed) prove it on SGLang itself.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from helpers.releases import REAL_CACHE, write_release

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_scan import PluginScan, scan_project
from auxcheck._releases.release_check import ReleaseResult, check_release, render_matrix
from auxcheck.cli.check import main
from auxcheck.migrate.moves import builtin_moves
from auxcheck.releases import Release, find_release

SKIP_OTHERS = ["--skip", "imports", "--skip", "mypy", "--skip", "contract"]

RELEASE_FILES = {
    "sglang/_version.py": '__version__ = "9.1.0"\n',
    "sglang/srt/managers/auxiliary_output.py": """
        from typing import Protocol
        class CommittedTokens: ...
        class DeviceAuxiliaryOutput(Protocol):
            def copy_to_host(self, copy_tensor): ...
        class HostAuxiliaryOutput(Protocol):
            def consume(self, batch, commits): ...
        """,
    "sglang/srt/sampling/sampling_observer.py": """
        from typing import TYPE_CHECKING
        from sglang.srt.managers.auxiliary_output import DeviceAuxiliaryOutput
        if TYPE_CHECKING:
            from sglang.srt.managers.auxiliary_output import CommittedTokens
        class SamplingObserver:
            def is_active(self, sampling_info): ...
            def before_grammar(self, logits, sampling_info): ...
            def after_sample(self, state, token_ids): ...
        """,
    "sglang/srt/managers/mixin.py": """
        class OutputMixin:
            def get_output_streamer_class(self): ...
        """,
    "sglang/srt/managers/scheduler.py": """
        from sglang.srt.managers.mixin import OutputMixin
        class Scheduler(OutputMixin):
            def __init__(self): ...
            class Inner:
                def step(self): ...
        def run_scheduler_process(): ...
        """,
    "sglang/srt/plugins/__init__.py": "def load_plugins(): ...\n",
    "sglang/srt/plugins/hook_registry.py": """
        class HookType: ...
        class HookRegistry:
            @classmethod
            def register(cls, target, hook, hook_type=None): ...
        def plugin_hook(target, type=None): ...
        """,
}
"""A release tree with the shapes the rules care about (version 9.1.0)."""


def build_release(root: Path, files: dict[str, str] = RELEASE_FILES) -> Path:
    """Writes a release tree under ``root`` and returns it."""
    return write_release(root, {path: textwrap.dedent(text) for path, text in files.items()})


def build_plugin(root: Path, source: str, *, pyproject: str = "") -> Path:
    """Writes a one-module plugin package ``plug`` (and a pyproject.toml) under ``root``."""
    (root / "plug").mkdir(parents=True)
    (root / "plug" / "__init__.py").write_text("")
    (root / "plug" / "hooks.py").write_text(textwrap.dedent(source), encoding="utf-8")
    if pyproject:
        (root / "pyproject.toml").write_text(textwrap.dedent(pyproject), encoding="utf-8")
    return root


def judge(tmp_path: Path, source: str, *, pyproject: str = "") -> ReleaseResult:
    """Returns the plugin's result on the small release."""
    release = Release.from_source(build_release(tmp_path / "release"))
    plugin = build_plugin(tmp_path / "plugin", source, pyproject=pyproject)
    return check_release(scan_project(plugin), ReleaseIndex(release), moves=builtin_moves())


def codes(result: ReleaseResult) -> dict[str, list[str]]:
    """Returns the codes found, by stage."""
    return {s.stage: [f.code for f in s.findings] for s in result.stages if s.findings}


@pytest.mark.parametrize(("source", "expected"), [
    pytest.param("from sglang.srt.managers.auxiliary_output import CommittedTokens\n", {},
                 id="defined-name"),
    pytest.param("from sglang.srt.sampling.sampling_observer import DeviceAuxiliaryOutput\n", {},
                 id="re-exported-name"),
    pytest.param("from sglang.srt.sampling.sampling_observer import CommittedTokens\n",
                 {"imports": ["AUX503"]}, id="name-imported-only-under-type-checking"),
    pytest.param("from sglang.srt.managers import scheduler\n", {}, id="submodule-from-package"),
    pytest.param("from sglang.srt.managers.gone import X\n", {"imports": ["AUX503"]},
                 id="missing-module"),
    pytest.param("import sglang.srt.managers.gone\n", {"imports": ["AUX503"]},
                 id="missing-module-import"),
    pytest.param("import sglang.srt.managers.scheduler as s\nx = s.Scheduler.Inner\n", {},
                 id="attribute-through-alias"),
    pytest.param("import sglang.srt.managers.scheduler as s\nx = s.Missing\n",
                 {"attributes": ["AUX503"]}, id="missing-attribute-through-alias"),
    pytest.param("import sglang.srt.managers.scheduler\nsglang.srt.managers.scheduler.Missing\n",
                 {"attributes": ["AUX503"]}, id="missing-attribute-through-dotted-import"),
    pytest.param("from unittest import mock\nmock.patch('sglang.srt.managers.scheduler.Gone')\n",
                 {"imports": ["AUX503"]}, id="patch-target-missing"),
    pytest.param("from unittest import mock\n"
                 "mock.patch('sglang.srt.managers.scheduler.Gone', create=True)\n", {},
                 id="patch-target-created"),
    pytest.param("def f(monkeypatch):\n"
                 "    monkeypatch.setattr('sglang.srt.managers.scheduler.run_scheduler_process', 1)\n",
                 {}, id="monkeypatch-dotted-target"),
    pytest.param("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                 "    from sglang.srt.managers.gone import X\n", {}, id="type-checking-import"),
    pytest.param("try:\n    from sglang.srt.managers.gone import X\nexcept ImportError:\n"
                 "    X = None\n", {}, id="guarded-import-handled"),
    pytest.param("try:\n    from sglang.srt.managers.gone import X\nexcept ImportError:\n"
                 "    from sglang.srt.managers.auxiliary_output import CommittedTokens as X\n", {},
                 id="guarded-import-with-working-fallback"),
    pytest.param("try:\n    from sglang.srt.managers.gone import X\nexcept ImportError:\n"
                 "    from sglang.srt.managers.also_gone import X\n",
                 {"imports": ["AUX503", "AUX503"]}, id="guarded-import-with-broken-fallback"),
    pytest.param("try:\n    from sglang.srt.managers.gone import X\nexcept Exception:\n"
                 "    X = None\n", {}, id="guarded-by-except-exception"),
    pytest.param("try:\n    from sglang.srt.managers.gone import X\nexcept KeyError:\n"
                 "    X = None\n", {"imports": ["AUX503"]}, id="handler-not-catching-import-error"),
])
def test_imports_resolve_as_python_would_import_them(
    tmp_path: Path, source: str, expected: dict[str, list[str]],
) -> None:
    """Each kind of use resolves, or is AUX503, exactly as the import system would decide."""
    assert codes(judge(tmp_path, source)) == expected


@pytest.mark.parametrize(("handler", "shown"), [
    ("except ImportError:", "`except ImportError` there handles it"),
    ("except Exception:", "`except Exception` there handles it"),
    ("except (ImportError, AttributeError):",
     "`except (ImportError, AttributeError)` there handles it"),
    ("except:", "`except:` there handles it"),
])
def test_a_handled_import_note_names_the_handler_as_written(
    tmp_path: Path, handler: str, shown: str,
) -> None:
    """The note says which clause swallows the failed import, not always ImportError."""
    result = judge(tmp_path, f"try:\n    from sglang.srt.managers.gone import X\n{handler}\n"
                             "    X = None\n")
    [note] = result.stages[0].notes
    assert note.endswith(shown), note


HOOKS = "from sglang.srt.plugins.hook_registry import HookRegistry, HookType, plugin_hook\n"


@pytest.mark.parametrize(("source", "expected"), [
    pytest.param("HookRegistry.register('sglang.srt.managers.scheduler.Scheduler.__init__', f)",
                 [], id="method-on-the-class"),
    pytest.param("HookRegistry.register("
                 "'sglang.srt.managers.scheduler.Scheduler.get_output_streamer_class', f, "
                 "HookType.AFTER)", [], id="method-inherited-from-a-mixin"),
    pytest.param("HookRegistry.register('sglang.srt.managers.scheduler.Scheduler.Inner.step', f)",
                 [], id="method-of-a-nested-class"),
    pytest.param("HookRegistry.register('sglang.srt.managers.scheduler.run_scheduler_process', "
                 "f, HookType.AROUND)", [], id="module-function"),
    pytest.param("TARGET = 'sglang.srt.managers.scheduler.Scheduler.nope'\n"
                 "HookRegistry.register(TARGET, f)", ["AUX701"], id="missing-method-by-constant"),
    pytest.param("HookRegistry.register('sglang.srt.managers.scheduler.Scheduler', f, "
                 "HookType.AROUND)", ["AUX701"], id="class-target-not-replace"),
    pytest.param("HookRegistry.register('sglang.srt.managers.scheduler.Scheduler', F, "
                 "HookType.REPLACE)", [], id="class-target-replace"),
    pytest.param("HookRegistry.register('sglang.srt.managers.gone.X.y', f)", ["AUX701"],
                 id="missing-module"),
    pytest.param("HookRegistry.register('sglang', f)", ["AUX701"], id="no-attribute"),
    pytest.param("S = 'sglang.srt.managers.scheduler.Scheduler'\n"
                 "HookRegistry.register(f'{S}.nope', f)\nHookRegistry.register(S + '.__init__', f)",
                 ["AUX701"], id="f-string-and-sum-of-constants"),
    pytest.param("@plugin_hook('sglang.srt.managers.scheduler.Scheduler.nope', "
                 "type=HookType.BEFORE)\ndef g(*a, **k): ...", ["AUX701"],
                 id="decorator-on-missing-method"),
])
def test_hook_targets_must_exist_in_the_release(
    tmp_path: Path, source: str, expected: list[str],
) -> None:
    """A hook target must be a function, class or method the release has (AUX701)."""
    result = judge(tmp_path, HOOKS + "def f(*a, **k): ...\nclass F: ...\n" + source + "\n")
    assert codes(result).get("hooks", []) == expected


def test_a_hook_target_built_at_run_time_is_a_note_not_a_failure(tmp_path: Path) -> None:
    """A target that is not a string constant cannot be checked; the note says so."""
    result = judge(tmp_path, HOOKS + "def f(): ...\nHookRegistry.register(make(), f)\n")
    hooks = next(s for s in result.stages if s.stage == "hooks")
    assert hooks.result == "ok"
    assert hooks.notes == (("plug/hooks.py:3:1: hook target is not a string auxcheck can read "
                            "(a constant, or an f-string or `+` of names bound once to "
                            "strings); not checked"),)


ENTRY = '[project.entry-points."sglang.srt.plugins"]\n'


@pytest.mark.parametrize(("entry", "problem"), [
    pytest.param('p = "plug.hooks:register"', None, id="function-without-arguments"),
    pytest.param('p = "plug.hooks:with_defaults"', None, id="function-with-defaults"),
    pytest.param('p = "plug.hooks:Plugin"', None, id="class-without-init-arguments"),
    pytest.param('p = "plug.hooks"', "'plug.hooks' names a module, not a callable: write "
                 '"plug.hooks:register"', id="no-attribute"),
    pytest.param('p = "plug.hooks:needs"', "plug.hooks:needs takes x; load_plugins calls it "
                 "with no arguments", id="function-with-an-argument"),
    pytest.param('p = "plug.hooks:missing"', "plug.hooks has no module-level missing",
                 id="missing-function"),
    pytest.param('p = "plug.gone:register"', "module plug.gone is not in the project",
                 id="missing-module"),
    pytest.param('p = "plug.hooks:Needy"', "plug.hooks:Needy is a class whose __init__ takes "
                 "config; load_plugins calls it with none", id="class-with-init-arguments"),
])
def test_entry_points_must_name_a_callable_taking_no_arguments(
    tmp_path: Path, entry: str, problem: str | None,
) -> None:
    """load_plugins() calls each entry point's object with no arguments (AUX702 otherwise)."""
    source = """
        def register(): ...
        def with_defaults(x=1, *, y=2): ...
        def needs(x): ...
        class Plugin: ...
        class Needy:
            def __init__(self, config): ...
        """
    result = judge(tmp_path, source, pyproject=ENTRY + entry + "\n")
    stage = next(s for s in result.stages if s.stage == "entry-points")
    messages = [f.message for f in stage.findings]
    if problem is None:
        assert messages == []
    else:
        assert len(messages) == 1 and messages[0].startswith(problem), messages
        assert stage.findings[0].code == "AUX702"


def test_poetry_plugin_tables_are_read_too(tmp_path: Path) -> None:
    """Entry points declared in [tool.poetry.plugins] are checked like PEP 621 ones."""
    table = '[tool.poetry.plugins."sglang.srt.plugins"]\np = "plug.hooks:needs"\n'
    result = judge(tmp_path, "def needs(x): ...\n", pyproject=table)
    assert codes(result) == {"entry-points": ["AUX702"]}


def judge_bytes(tmp_path: Path, data: bytes) -> tuple[PluginScan, ReleaseResult]:
    """Returns the plugin's scan and its result on the small release, ``plug/hooks.py``
    holding ``data`` exactly and ``p = "plug.hooks:register"`` its entry point."""
    release = Release.from_source(build_release(tmp_path / "release"))
    plugin = build_plugin(tmp_path / "plugin", "", pyproject=ENTRY + 'p = "plug.hooks:register"\n')
    (plugin / "plug" / "hooks.py").write_bytes(data)
    scan = scan_project(plugin)
    return scan, check_release(scan, ReleaseIndex(release), moves=builtin_moves())


@pytest.mark.parametrize("data", [
    pytest.param(b"\xef\xbb\xbfdef register(): ...\n", id="utf-8-bom"),
    pytest.param(b"# -*- coding: latin-1 -*-\nNAME = '\xe9'\ndef register(): ...\n",
                 id="latin-1-coding-cookie"),
    pytest.param(b"def register():\r\n    ...\r\n", id="crlf-line-ends"),
])
def test_an_entry_point_module_is_read_as_python_reads_it(tmp_path: Path, data: bytes) -> None:
    """The entry point's module is decoded by its BOM or coding cookie, as Python and the
    plugin scan decode it (it was once read as UTF-8 and failed AUX702 on such a file)."""
    scan, result = judge_bytes(tmp_path, data)
    assert (scan.broken, codes(result)) == ((), {})


@pytest.mark.parametrize("data", [
    pytest.param(b"def register(:\n", id="syntax-error"),
    pytest.param(b"NAME = '\xff'\ndef register(): ...\n", id="not-utf-8"),
    pytest.param(b"NAME = 1\0\ndef register(): ...\n", id="null-byte"),
    pytest.param(b"# -*- coding: no-such-codec -*-\ndef register(): ...\n",
                 id="unknown-coding-cookie"),
])
def test_an_entry_point_module_that_cannot_be_read_fails_with_its_aux504_verdict(
        tmp_path: Path, data: bytes) -> None:
    """An entry point's module that cannot be decoded or parsed is AUX702, naming the
    AUX504 verdict the plugin scan gives the same file, at the same place."""
    scan, result = judge_bytes(tmp_path, data)
    [broken] = scan.broken
    stage = next(s for s in result.stages if s.stage == "entry-points")
    [finding] = stage.findings
    seen = broken.message.partition("; ")[0]
    assert (broken.code, finding.code) == ("AUX504", "AUX702")
    assert finding.message.startswith(
        f"module plug.hooks cannot be checked: {broken.location}: AUX504 {seen}; "), finding


@pytest.mark.parametrize(("source", "expected"), [
    pytest.param("class H:\n    def consume(self, batch, commits): ...\n", {}, id="consume-ok"),
    pytest.param("class H:\n    def consume(self, batch): ...\n", {"contract": ["AUX201"]},
                 id="consume-one-argument"),
    pytest.param("class H:\n    def consume(self, *args): ...\n", {}, id="consume-varargs"),
    pytest.param("class D:\n    @staticmethod\n    def copy_to_host(copy_tensor): ...\n", {},
                 id="static-copy-to-host"),
    pytest.param("class D:\n    def copy_to_host(self, copy_tensor, extra): ...\n",
                 {"contract": ["AUX102"]}, id="copy-to-host-extra-argument"),
    pytest.param("class O:\n    def is_active(self, info): ...\n"
                 "    def before_grammar(self, logits, info): ...\n"
                 "    def after_sample(self, state): ...\n", {"contract": ["AUX102"]},
                 id="observer-after-sample-short"),
])
def test_contract_classes_take_the_calls_the_release_declares(
    tmp_path: Path, source: str, expected: dict[str, list[str]],
) -> None:
    """Implementations of the release's protocols accept its calls (AUX102, AUX201)."""
    assert codes(judge(tmp_path, source)) == expected


# ---------------------------------------------------------------- the command line


def test_the_command_prints_a_release_by_stage_table_and_fails_on_any_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """--source adds a release; the table shows each stage; exit 1 when one release fails."""
    release = build_release(tmp_path / "release")
    plugin = build_plugin(tmp_path / "plugin", "from sglang.srt.managers.gone import X\n")
    status = main([str(plugin), *SKIP_OTHERS, "--source", str(release), "--offline"])
    out = capsys.readouterr().out
    assert status == 1
    assert ("release  imports        attributes  hooks  calls  classes  entry-points  contract"
            in out)
    assert "9.1.0    FAIL 1 AUX503  -           -      -      -        -             -" in out
    assert "plug/hooks.py:1:1: AUX503 `from sglang.srt.managers.gone import X` does not " \
           "resolve in sglang 9.1.0: module sglang.srt.managers.gone does not exist" in out


def test_json_holds_every_release_with_its_stages_and_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """--format json carries the matrix: per release, per stage, the findings."""
    release = build_release(tmp_path / "release")
    plugin = build_plugin(tmp_path / "plugin", "import sglang.srt.managers.scheduler\n")
    status = main(["--format", "json", str(plugin), *SKIP_OTHERS, "--source", str(release)])
    document = json.loads(capsys.readouterr().out)
    sglang = next(s for s in document["stages"] if s["stage"] == "sglang")
    assert status == 0 and document["ok"]
    [only] = sglang["data"]["releases"]
    assert only["version"] == "9.1.0" and only["ok"]
    assert [s["stage"] for s in only["stages"]] == [
        "imports", "attributes", "hooks", "calls", "classes", "entry-points", "contract"]
    assert only["stages"][0]["checked"] == 1


def test_releases_come_from_the_project_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """[tool.auxcheck] sglang lists the releases when --sglang is not given."""
    plugin = build_plugin(tmp_path / "plugin", "x = 1\n",
                          pyproject='[tool.auxcheck]\nsglang = ["9.9.9"]\n')
    status = main([str(plugin), *SKIP_OTHERS, "--offline", "--cache", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert status == 1
    assert "9.9.9    ERROR" in out
    assert "cannot get sglang 9.9.9: it is not in the cache. When offline, pass --wheel PATH" in out


@pytest.mark.parametrize(("args", "pyproject", "message"), [
    pytest.param(["--sglang", "0.5.x"], "", "--sglang: '0.5.x' is not an SGLang release version; "
                 "expected versions such as 0.5.19,0.5.20,0.5.23", id="bad-version"),
    pytest.param([], '[tool.auxcheck]\nsglang = "0.5.20"\n', "[tool.auxcheck] sglang must be a "
                 "list of SGLang releases such as [\"0.5.20\", \"0.5.23\"], got '0.5.20'",
                 id="config-not-a-list"),
])
def test_bad_release_lists_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], pyproject: str,
    message: str,
) -> None:
    """A release that is not a version, from the command line or the config, exits 2."""
    plugin = build_plugin(tmp_path / "plugin", "x = 1\n", pyproject=pyproject)
    assert main([str(plugin), *SKIP_OTHERS, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("auxcheck check: error: ") and err.endswith(f"{message}\n")


def test_without_releases_the_stage_is_skipped_and_says_how_to_ask(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """No --sglang and no configuration: the sglang stage is skipped, naming both ways."""
    plugin = build_plugin(tmp_path / "plugin", "x = 1\n")
    assert main([str(plugin), *SKIP_OTHERS]) == 0
    assert "sglang    skipped  no --sglang, no [tool.auxcheck] sglang" in capsys.readouterr().out


# ---------------------------------------------------------------- real releases

SPECFORGE_STYLE = """
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    def _streamer(result, *args, **kwargs):
        return result

    def _init(result, self, *args, **kwargs):
        return None

    def register():
        HookRegistry.register(
            "sglang.srt.managers.scheduler.Scheduler.get_output_streamer_class",
            _streamer, HookType.AFTER)
        HookRegistry.register("sglang.srt.managers.scheduler.Scheduler.__init__", _init,
                              HookType.AFTER)
    """


def real_result(tmp_path: Path, source: str, version: str, *, pyproject: str = "") -> ReleaseResult:
    """Returns the plugin's result on a real release."""
    plugin = build_plugin(tmp_path / f"plugin-{version}", source, pyproject=pyproject)
    index = ReleaseIndex(find_release(version, cache=REAL_CACHE))
    return check_release(scan_project(plugin), index, moves=builtin_moves())


@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_specforge_style_hook_registrations_pass_on_real_releases(
    tmp_path: Path, version: str,
) -> None:
    """The capture plugin's AFTER hooks on Scheduler resolve in 0.5.19 and 0.5.23."""
    result = real_result(tmp_path, SPECFORGE_STYLE, version,
                         pyproject=ENTRY + 'capture = "plug.hooks:register"\n')
    assert not result.failed, render_matrix([result])
    # imports 2; attributes: HookRegistry.register and HookType.AFTER, twice; hooks 2;
    # calls: the two HookRegistry.register calls; one entry point.
    assert [s.checked for s in result.stages] == [2, 4, 2, 2, 0, 1, 0]


@pytest.mark.parametrize("version", ["0.5.19", "0.5.20", "0.5.23"])
def test_a_hook_on_a_method_no_release_has_is_aux701_everywhere(
    tmp_path: Path, version: str,
) -> None:
    """A misspelt method is found at check time, not in a log line at server start."""
    source = SPECFORGE_STYLE.replace("get_output_streamer_class", "get_output_streamer_klass")
    result = real_result(tmp_path, source, version)
    assert codes(result) == {"hooks": ["AUX701"]}


def test_an_import_that_arrived_in_0_5_20_fails_on_0_5_19_with_its_old_home(
    tmp_path: Path,
) -> None:
    """CommittedTokens from auxiliary_output is AUX503 on 0.5.19; the fix names its 0.5.19 home."""
    source = "from sglang.srt.managers.auxiliary_output import CommittedTokens\n"
    old = real_result(tmp_path, source, "0.5.19")
    assert codes(old) == {"imports": ["AUX503"]}
    [finding] = old.stages[0].findings
    assert "module sglang.srt.managers.auxiliary_output does not exist" in finding.message
    assert finding.hint.startswith("sglang 0.5.19 defines CommittedTokens in "
                                   "sglang.srt.sampling.sampling_observer")
    assert not real_result(tmp_path, source, "0.5.20").failed


@pytest.mark.slow
def test_a_re_export_removed_in_0_5_23_fails_there_naming_the_new_module(tmp_path: Path) -> None:
    """runner_utils stopped re-exporting DecodeInputBuffers: AUX503 on 0.5.23, ok on 0.5.19."""
    source = "from sglang.srt.model_executor.runner_utils import DecodeInputBuffers\n"
    assert not real_result(tmp_path, source, "0.5.19").failed
    new = real_result(tmp_path, source, "0.5.23")
    [finding] = new.stages[0].findings
    assert finding.code == "AUX503"
    assert "sglang.srt.model_executor.runner_utils.buffers" in finding.hint


def test_relative_imports_inside_an_sglang_tree_resolve_against_the_release(tmp_path: Path) -> None:
    """A file of an SGLang fork (under sglang/) has its relative imports checked too."""
    release = Release.from_source(build_release(tmp_path / "release"))
    fork = write_release(tmp_path / "fork", {
        "sglang/srt/extra/feature.py": ("from ..managers.scheduler import Scheduler\n"
                                        "from ..managers.gone import Missing\n"),
    })
    result = check_release(scan_project(fork), ReleaseIndex(release))
    [finding] = result.stages[0].findings
    assert finding.code == "AUX503"
    assert finding.message.startswith("`from ..managers.gone import Missing` does not resolve in "
                                      "sglang 9.1.0: module sglang.srt.managers.gone does not exist")


# ---------------------------------------------------------------- calls, attributes, outside targets

API = {**RELEASE_FILES, "sglang/srt/managers/api.py": """
    import dataclasses
    from dataclasses import dataclass, field

    def compute(tp_rank, *, scale=1.0): ...

    @dataclass
    class Result:
        infos: list
        pids: list = field(default_factory=list)
        block_until_exits: object = None

    @dataclass(kw_only=True)
    class Options:
        size: int = 0

    @dataclass
    class MoreResult(Result):
        extra: int = 0

    class Batch:
        LIMIT = 4
        size: int = 0

        def __init__(self, reqs, *, pool=None): ...

        @classmethod
        def init_new(cls, reqs, model_runner, *, capture=None): ...

        @staticmethod
        def helper(x): ...

        def evict(self, req, pre_len): ...

    class Child(Batch):
        pass

    if __name__ == "__main__":
        result = compute(0)
    """}
"""The small release plus a module of callees of every kind."""


def judge_api(tmp_path: Path, source: str) -> ReleaseResult:
    """Returns the plugin's result on the small release with the ``api`` module."""
    release = Release.from_source(build_release(tmp_path / "release", API))
    plugin = build_plugin(tmp_path / "plugin", source)
    return check_release(scan_project(plugin), ReleaseIndex(release), moves=builtin_moves())


FROM_API = "from sglang.srt.managers.api import Batch, Child, MoreResult, Options, Result, compute\n"


@pytest.mark.parametrize(("call", "problem"), [
    pytest.param("compute(0)", None, id="function-positional"),
    pytest.param("compute(tp_rank=0, scale=2.0)", None, id="function-keywords"),
    pytest.param("compute(None, tp_rank=0)", "multiple values for argument 'tp_rank'",
                 id="function-argument-given-twice"),
    pytest.param("compute(0, 2.0)", "too many positional arguments",
                 id="keyword-only-parameter-by-position"),
    pytest.param("Result(infos=[], block_until_exits=None)", None, id="dataclass-fields"),
    pytest.param("Result(infos=[], wait_for_completion=None)",
                 "got an unexpected keyword argument 'wait_for_completion'",
                 id="dataclass-unknown-field"),
    pytest.param("Result()", "missing a required argument: 'infos'", id="dataclass-missing-field"),
    pytest.param("Options(0)", "too many positional arguments", id="kw-only-dataclass"),
    pytest.param("MoreResult([], extra=1)", None, id="inherited-dataclass-fields"),
    pytest.param("Batch([], pool=None)", None, id="class-init"),
    pytest.param("Child([], None)", "too many positional arguments", id="inherited-init"),
    pytest.param("Batch.init_new([], None, capture=1)", None, id="classmethod-through-the-class"),
    pytest.param("Batch.init_new(Batch, [], None)", "too many positional arguments",
                 id="classmethod-given-cls"),
    pytest.param("Batch.helper(1)", None, id="staticmethod"),
    pytest.param("Batch.evict(batch, req, 3)", None, id="method-through-the-class-takes-self"),
    pytest.param("Batch.evict(req, 3)", "missing a required argument: 'pre_len'",
                 id="method-through-the-class-without-self"),
])
def test_calls_into_sglang_bind_to_the_releases_signature(
    tmp_path: Path, call: str, problem: str | None,
) -> None:
    """Each call binds with Python's rules to the callee as that release declares it (AUX704)."""
    result = judge_api(tmp_path, FROM_API + f"def use(batch, req):\n    {call}\n")
    calls = next(s for s in result.stages if s.stage == "calls")
    assert calls.checked == 1
    if problem is None:
        assert calls.findings == () and [j.verdict for j in calls.judged] == ["ok"]
    else:
        [finding] = calls.findings
        assert finding.code == "AUX704" and finding.message.endswith(problem + "; expected a "
                                                                     "call that binds to " +
                                                                     call.split("(")[0]
                                                                     .split(".")[-1] +
                                                                     " in sglang 9.1.0")


@pytest.mark.parametrize(("source", "note"), [
    pytest.param("def use(args):\n    compute(*args)\n", "passes *args or **kwargs",
                 id="splat"),
    pytest.param("def use():\n    try:\n        compute(0, 2.0)\n    except TypeError:\n"
                 "        compute(0)\n", "whose handler catches TypeError", id="try-type-error"),
    pytest.param("import sglang\ndef use():\n    if sglang.__version__ < '0.5.20':\n"
                 "        compute(0, 2.0)\n", "runs under `if sglang.__version__ < '0.5.20'`",
                 id="version-branch"),
])
def test_calls_whose_binding_cannot_be_judged_are_notes(
    tmp_path: Path, source: str, note: str,
) -> None:
    """A splat, or a call a TypeError handler or a version test guards, is a note, not AUX704."""
    result = judge_api(tmp_path, FROM_API + source)
    calls = next(s for s in result.stages if s.stage == "calls")
    assert calls.findings == ()
    assert any(note in n for n in calls.notes), calls.notes


def test_a_broad_except_does_not_hide_a_call_that_cannot_bind(tmp_path: Path) -> None:
    """`except Exception` around plugin logic is not a plan for a signature change: AUX704."""
    source = FROM_API + "def use():\n    try:\n        compute(0, 2.0)\n    except Exception:\n" \
                        "        pass\n"
    assert codes(judge_api(tmp_path, source)) == {"calls": ["AUX704"]}


@pytest.mark.parametrize(("use", "expected"), [
    pytest.param("Batch.LIMIT", [], id="class-level-assignment"),
    pytest.param("Batch.size", [], id="annotation-with-value"),
    pytest.param("Result.infos", [], id="dataclass-field"),
    pytest.param("Child.init_new", [], id="through-a-base"),
    pytest.param("Batch.missing", ["AUX503"], id="missing-member"),
    pytest.param("Child.missing", ["AUX503"], id="missing-through-bases"),
    pytest.param("compute.__name__", [], id="function-object-attribute"),
    pytest.param("Batch.__dict__.get('x')", [], id="what-every-class-has"),
    pytest.param("Child.__mro__", [], id="what-every-class-has-from-type"),
    pytest.param("Batch.__dict_", ["AUX503"], id="a-dunder-no-class-has"),
    pytest.param("None\nimport sglang.srt.managers.api as api\napi.NEW = 1\ny = api.NEW", [],
                 id="an-attribute-the-plugin-assigns"),
])
def test_class_attributes_of_imported_sglang_names_resolve(
    tmp_path: Path, use: str, expected: list[str],
) -> None:
    """`Class.attr` of an imported SGLang class resolves through bases, assignments, fields."""
    result = judge_api(tmp_path, FROM_API + f"x = {use}\n")
    assert codes(result).get("attributes", []) == expected


def test_a_name_bound_only_under_main_is_not_importable(tmp_path: Path) -> None:
    """`if __name__ == "__main__":` binds nothing for importers: importing its names fails."""
    result = judge_api(tmp_path, "from sglang.srt.managers.api import result\n")
    assert codes(result) == {"imports": ["AUX503"]}


COMPAT = """
    try:
        import sglang.srt.managers.auxiliary_output as so
    except ImportError:
        import sglang.srt.sampling.sampling_observer as so

    x = so.CommittedTokens
    """


def test_a_module_alias_from_try_except_import_error_resolves_per_branch(tmp_path: Path) -> None:
    """The try body's module is the alias when it imports; the except branch's otherwise."""
    result = judge(tmp_path, COMPAT)
    assert not result.failed, render_matrix([result])
    assert next(s for s in result.stages if s.stage == "attributes").checked == 1


@pytest.mark.parametrize(("installed", "state"), [
    pytest.param({"fakekernel/__init__.py": "from fakekernel.mla import run\n",
                  "fakekernel/mla.py": "def run(q, k): ...\n"}, "found in the installed",
                 id="installed"),
    pytest.param({"fakekernel/__init__.py": "", "fakekernel/mla.py": "def other(): ...\n"},
                 "does not define it", id="installed-without-the-name"),
    pytest.param({}, "resolves nowhere auxcheck can read", id="not-installed"),
])
def test_targets_outside_sglang_are_read_from_the_environment_and_never_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed: dict[str, str], state: str,
) -> None:
    """A target in another package (sgl_kernel...) is looked up without running it: a note."""
    site = tmp_path / "site"
    for path, text in installed.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)
    (site / "fakekernel").mkdir(parents=True, exist_ok=True)
    (site / "fakekernel" / "__init__.py").write_text(
        "raise SystemExit('auxcheck ran the package')\n" + installed.get(
            "fakekernel/__init__.py", ""))
    monkeypatch.syspath_prepend(str(site)) if installed else None
    result = judge(tmp_path, HOOKS + "def f(*a, **k): ...\n"
                   "HookRegistry.register('fakekernel.mla.run', f, HookType.REPLACE)\n"
                   "HookRegistry.register('fakekernel.run', f, HookType.REPLACE)\n")
    hooks = next(s for s in result.stages if s.stage == "hooks")
    assert hooks.findings == ()
    assert [j.verdict for j in hooks.judged] == ["note", "note"]
    assert state in hooks.notes[0]


def test_a_target_that_is_not_a_dotted_path_is_aux701(tmp_path: Path) -> None:
    """HookRegistry raises ValueError on a target without a module part."""
    result = judge(tmp_path, HOOKS + "def f(*a, **k): ...\nHookRegistry.register('target', f)\n")
    [finding] = next(s for s in result.stages if s.stage == "hooks").findings
    assert finding.code == "AUX701" and "not a dotted path" in finding.message


def test_a_missing_target_names_the_closest_names_and_its_new_home(tmp_path: Path) -> None:
    """The fix says where to go: near names in that class, and where the release defines it."""
    result = judge(tmp_path, HOOKS + "def f(*a, **k): ...\n"
                   "HookRegistry.register('sglang.srt.managers.scheduler.Scheduler."
                   "get_output_streamer_klass', f)\n"
                   "HookRegistry.register('sglang.srt.managers.gone.run_scheduler_process', f)\n")
    first, second = next(s for s in result.stages if s.stage == "hooks").findings
    assert first.hint.startswith("the closest names in sglang.srt.managers.scheduler.Scheduler: "
                                 "get_output_streamer_class")
    assert second.hint.startswith("sglang 9.1.0 defines run_scheduler_process in "
                                  "sglang.srt.managers.scheduler: hook "
                                  "sglang.srt.managers.scheduler.run_scheduler_process")


def test_the_json_carries_each_judgement(tmp_path: Path) -> None:
    """Every hook, call and attribute judged is in the stage's `judged` list, with a verdict."""
    result = judge_api(tmp_path, FROM_API + "compute(0)\ncompute(0, 2.0)\n")
    calls = next(s for s in result.to_dict()["stages"] if s["stage"] == "calls")
    assert [j["verdict"] for j in calls["judged"]] == ["ok", "fail"]
    assert calls["judged"][1]["location"] == "plug/hooks.py:3:1"


def test_a_plugin_kept_under_a_folder_named_sglang_keeps_its_own_packages(tmp_path: Path) -> None:
    """`integrations/sglang/src/plug/` is the plugin's package, not a file of SGLang: its
    relative imports are its own (OrbitKV lays itself out so)."""
    release = Release.from_source(build_release(tmp_path / "release"))
    project = write_release(tmp_path / "repo", {
        "integrations/sglang/pyproject.toml": "",
        "integrations/sglang/src/plug/__init__.py": "from .hooks import register\n",
        "integrations/sglang/src/plug/hooks.py": "def register(): ...\n",
    })
    result = check_release(scan_project(project / "integrations" / "sglang"),
                           ReleaseIndex(release))
    assert not result.failed, render_matrix([result])


def test_a_missing_attribute_names_the_closest_names_of_its_class(tmp_path: Path) -> None:
    """`Batch.evicts` is AUX503; the fix names `evict`, found on the release's class."""
    result = judge_api(tmp_path, FROM_API + "x = Child.evicts\n")
    [finding] = next(s for s in result.stages if s.stage == "attributes").findings
    assert finding.hint == ("sglang 9.1.0 has no evicts there; the closest names in "
                            "sglang.srt.managers.api.Child: evict")


def test_the_json_judges_each_import_and_attribute_use(tmp_path: Path) -> None:
    """Imports and attributes carry one judgement per use: ok, fail, or note for cannot tell."""
    source = ("import sglang.srt.managers.scheduler as s\nx = s.Scheduler\ny = s.Gone\n"
              "try:\n    from sglang.srt.managers.gone import X\nexcept ImportError:\n"
              "    X = None\n")
    stages = {s.stage: s for s in judge(tmp_path, source).stages}
    assert [(j.subject, j.verdict) for j in stages["imports"].judged] == [
        ("import sglang.srt.managers.scheduler", "ok"),
        ("from sglang.srt.managers.gone import X", "note")]
    assert [(j.subject, j.verdict) for j in stages["attributes"].judged] == [
        ("s.Scheduler", "ok"), ("s.Gone", "fail")]


def test_an_attribute_of_an_import_that_fails_is_not_a_second_finding(tmp_path: Path) -> None:
    """One cause, one finding: `Gone.apply` after `from ... import Gone` fails is the
    import's finding only; the attribute is judged a note."""
    source = ("def run():\n    from sglang.srt.managers.gone import Gone\n"
              "    return Gone.apply(1)\n")
    result = judge(tmp_path, source)
    assert codes(result) == {"imports": ["AUX503"]}
    attributes = next(s for s in result.stages if s.stage == "attributes")
    assert [(j.subject, j.verdict) for j in attributes.judged] == [("Gone.apply", "note")]


MORE_FILES = {
    **RELEASE_FILES,
    "sglang/srt/models/registry.py": """
        from dataclasses import dataclass, field
        @dataclass
        class _ModelRegistry:
            models: dict = field(default_factory=dict)
            def register(self, package_name, overwrite=False): ...
            @classmethod
            def build(cls, name): ...
        ModelRegistry = _ModelRegistry()
        Twice = _ModelRegistry()
        Twice = None
        """,
    "sglang/srt/layers/norm.py": """
        import torch
        from torch import nn
        class CustomOp(nn.Module):
            def forward_native(self, x): ...
        class RMSNorm(CustomOp):
            def forward_cuda(self, x): ...
        class Unknown(SomethingUnbound):
            pass
        """,
}
"""The release, with a module-level instance and classes deriving from torch's nn.Module."""


def judge_more(tmp_path: Path, source: str) -> ReleaseResult:
    """Returns the plugin's result on the release with MORE_FILES."""
    release = Release.from_source(build_release(tmp_path / "release", MORE_FILES))
    plugin = build_plugin(tmp_path / "plugin", source)
    return check_release(scan_project(plugin), ReleaseIndex(release), moves=builtin_moves())


REGISTRY = "from sglang.srt.models.registry import ModelRegistry, Twice\n"
NORM = "sglang.srt.layers.norm"


@pytest.mark.parametrize(("source", "expected"), [
    pytest.param(REGISTRY + "ModelRegistry.register('pkg', overwrite=True)\n", {},
                 id="instance-method-call-that-binds"),
    pytest.param(REGISTRY + "ModelRegistry.register('pkg', strict=True)\n", {"calls": ["AUX704"]},
                 id="instance-method-call-with-a-keyword-it-lacks"),
    pytest.param(REGISTRY + "ModelRegistry.register('a', 'b', 'c')\n", {"calls": ["AUX704"]},
                 id="instance-method-call-with-one-argument-too-many"),
    pytest.param(REGISTRY + "ModelRegistry.build('x')\n", {}, id="instance-classmethod-call"),
    pytest.param(REGISTRY + "ModelRegistry.models['A'] = object\nModelRegistry.anything\n", {},
                 id="instance-attributes-it-may-set-are-not-judged"),
    pytest.param(REGISTRY + "Twice.register(1, 2, 3, 4)\n", {},
                 id="a-name-bound-twice-is-not-judged"),
    pytest.param(REGISTRY + "def g(kw):\n    ModelRegistry.register('p', strict=True, **kw)\n",
                 {"calls": ["AUX704"]}, id="a-keyword-it-lacks-beside-a-keyword-splat"),
    pytest.param(REGISTRY + "def g(kw):\n    ModelRegistry.register('p', overwrite=1, **kw)\n",
                 {}, id="a-keyword-it-has-beside-a-keyword-splat"),
    pytest.param(HOOKS + f"HookRegistry.register('{NORM}.RMSNorm.forward_hip', f)\n",
                 {"hooks": ["AUX701"]}, id="method-missing-through-an-installed-outside-base"),
    pytest.param(HOOKS + f"HookRegistry.register('{NORM}.RMSNorm.state_dict', f)\n", {},
                 id="method-of-the-installed-outside-base"),
    pytest.param(HOOKS + f"HookRegistry.register('{NORM}.Unknown.forward_hip', f)\n", {},
                 id="method-of-a-class-whose-base-cannot-be-read"),
    pytest.param(HOOKS + "def register():\n    owner = 'sglang.srt.managers.scheduler.Scheduler'\n"
                 "    HookRegistry.register(f'{owner}.gone', f)\n"
                 "    HookRegistry.register(owner + '.also_gone', f)\n",
                 {"hooks": ["AUX701", "AUX701"]}, id="targets-built-from-a-local-name"),
    pytest.param(HOOKS + "T = 'sglang.srt.managers.scheduler.Scheduler'\n"
                 "def register(T):\n    HookRegistry.register(f'{T}.gone', f)\n", {},
                 id="a-parameter-shadows-the-module-constant"),
    pytest.param(HOOKS + "def register(flag):\n    owner = 'sglang.srt.managers.scheduler.Nope'\n"
                 "    if flag:\n        owner = 'sglang.srt.managers.scheduler.Scheduler'\n"
                 "    HookRegistry.register(f'{owner}.__init__', f)\n", {},
                 id="a-local-bound-twice-is-not-judged"),
])
def test_instances_outside_bases_and_local_targets_are_judged_only_where_certain(
    tmp_path: Path, source: str, expected: dict[str, list[str]],
) -> None:
    """Module-level instances bind their class's methods with ``self`` given; a base outside
    sglang is read as installed here (torch's nn.Module); a target built from a name the
    registering function binds once is judged; anything less certain is not."""
    assert codes(judge_more(tmp_path, "def f(*a, **k): ...\n" + source)) == expected


def test_a_missing_method_says_which_outside_base_was_read_as_installed(tmp_path: Path) -> None:
    """The AUX701 through nn.Module says nn.Module came from this environment's torch."""
    result = judge_more(tmp_path, HOOKS + "def f(*a, **k): ...\n"
                        f"HookRegistry.register('{NORM}.RMSNorm.forward_hip', f)\n")
    [finding] = next(s for s in result.stages if s.stage == "hooks").findings
    assert "torch.nn.Module read as installed here" in finding.message, finding.message


def test_a_local_target_bound_twice_is_a_note_saying_it_is_not_checked(tmp_path: Path) -> None:
    """What cannot be read is said, not passed: the hooks cell counts it as not judged."""
    result = judge_more(tmp_path, HOOKS + "def f(*a, **k): ...\ndef register(flag):\n"
                        "    owner = 'x'\n    if flag:\n        owner = 'y'\n"
                        "    HookRegistry.register(f'{owner}.m', f)\n")
    hooks = next(s for s in result.stages if s.stage == "hooks")
    assert hooks.cell() == "1 not judged"
    assert "hook target is not a string auxcheck can read" in hooks.notes[0]
