"""Tests for ``auxcheck check --sglang``: imports, hook targets, entry points and signatures per release.

Small release trees built in ``tmp_path`` pin each rule; the real 0.5.19, 0.5.20 and
0.5.23 wheels (from the test cache, never installed) prove it on SGLang itself.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import REAL_CACHE, write_release

from auxcheck._index import ReleaseIndex
from auxcheck._plugin_scan import scan_project
from auxcheck._release_check import ReleaseResult, check_release, render_matrix
from auxcheck.cli.check import main
from auxcheck.migrate._moves import builtin_moves
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
                 {"imports": ["AUX503"]}, id="missing-attribute-through-alias"),
    pytest.param("import sglang.srt.managers.scheduler\nsglang.srt.managers.scheduler.Missing\n",
                 {"imports": ["AUX503"]}, id="missing-attribute-through-dotted-import"),
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
    assert hooks.notes == ("plug/hooks.py:3:1: hook target is not a string constant; not checked",)


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
    assert "release  imports        hooks  entry-points  contract" in out
    assert "9.1.0    FAIL 1 AUX503  -      -             -" in out
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
    assert [s["stage"] for s in only["stages"]] == ["imports", "hooks", "entry-points", "contract"]
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
    assert [s.checked for s in result.stages] == [2, 2, 1, 0]


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
