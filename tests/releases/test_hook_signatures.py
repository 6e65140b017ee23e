"""Hook signatures (AUX703): auxcheck's verdict against the real HookRegistry of the 0.5.23 wheel.

Each case is a target module, a plugin registering one hook, and the calls SGLang's code
makes to the target. auxcheck judges it from source (the calls are the release's call
sites); then the wheel's own ``hook_registry.py`` registers the same hook, applies it to
the real target and the calls run. A ``fail`` must be a TypeError there and an ``ok``
must not; a ``note`` is auxcheck saying it cannot tell, and the case says what really
happens so the table documents it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest
from helpers.hook_cases import (
    HookCase,
    assert_judged_as_the_registry_runs_it,
    write_hook_case,
    write_plugin,
)
from helpers.paths import REPO
from helpers.releases import REAL_CACHE, real_registry_source, real_release

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.moves_infer import moves_between
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import ReleaseResult, check_release, render_matrix
from auxcheck.migrate.moves import builtin_moves

TARGETS = """
    import functools

    def f(a, b, c=0, *, flag=False):
        return (a, b, c, flag)

    def g(a, *, interval=1):
        return a

    def v(*args, **kwargs):
        return args

    class C:
        def __init__(self, x=0):
            self.x = x

        def m(self, x, y=1):
            return x

        @classmethod
        def make(cls, x):
            return cls

        @staticmethod
        def s(x, y):
            return x
    """
"""The module ``sglang.srt.oracle`` every case hooks."""


CASES = {
    "replace-function-same-parameters": HookCase(
        "f", "REPLACE", "def HOOK(a, b, c=0, *, flag=False): ...", "f(1, 2)\nf(1, 2, 3, flag=True)",
        "ok", False),
    "replace-function-missing-a-keyword-only-parameter-sglang-passes": HookCase(
        "f", "REPLACE", "def HOOK(a, b, c=0): ...", "f(1, 2, flag=True)", "fail", True),
    "replace-function-missing-parameters-no-call-passes": HookCase(
        "f", "REPLACE", "def HOOK(a, b): ...", "f(1, 2)", "note", False),
    "replace-function-requiring-what-the-target-does-not-supply": HookCase(
        "f", "REPLACE", "def HOOK(a, b, c, *, flag, extra): ...", "f(1, 2)", "fail", True),
    "after-function-taking-result-and-varargs": HookCase(
        "f", "AFTER", "def HOOK(result, *args, **kwargs): ...", "f(1, 2, flag=True)", "ok", False),
    "after-function-without-result": HookCase(
        "f", "AFTER", "def HOOK(a, b, c=0, *, flag=False): ...", "f(1, 2, 3)", "fail", True),
    "around-function-with-original-fn": HookCase(
        "f", "AROUND", "def HOOK(original_fn, a, b, c=0, *, flag=False):\n"
        "    return original_fn(a, b, c, flag=flag)", "f(1, 2, 3, flag=True)", "ok", False),
    "around-function-forgetting-original-fn": HookCase(
        "f", "AROUND", "def HOOK(a, b, c=0, *, flag=False): ...", "f(1, 2, 3)", "fail", True),
    "around-keyword-only-parameter-sglang-passes": HookCase(
        "g", "AROUND", "def HOOK(original_fn, a): ...", "g(1, interval=2)", "fail", True),
    "around-keyword-only-parameter-no-call-passes": HookCase(
        "g", "AROUND", "def HOOK(original_fn, a): ...", "g(1)", "note", False),
    "before-method-with-self": HookCase(
        "C.m", "BEFORE", "def HOOK(self, x, y=1):\n    return None", "C().m(1, y=2)", "ok", False),
    "before-returning-a-number": HookCase(
        "C.m", "BEFORE", "def HOOK(self, x, y=1):\n    return 5", "C().m(1)", "fail", True),
    "before-returning-args-and-kwargs": HookCase(
        "C.m", "BEFORE", "def HOOK(self, *args, **kwargs):\n    return (self, *args), kwargs",
        "C().m(1)", "ok", False),
    "after-method-forgetting-self": HookCase(
        "C.m", "AFTER", "def HOOK(result, x, y=1): ...", "C().m(1, y=2)", "fail", True),
    "after-method-taking-result-and-self": HookCase(
        "C.m", "AFTER", "def HOOK(result, self, x, y=1): ...", "C().m(1, y=3)", "ok", False),
    "replace-method-renamed-parameter-passed-by-position": HookCase(
        "C.m", "REPLACE", "def HOOK(self, value, y=1): ...", "C().m(1)", "note", False),
    "replace-method-renamed-parameter-passed-by-keyword": HookCase(
        "C.m", "REPLACE", "def HOOK(self, value, y=1): ...", "C().m(x=1)", "fail", True),
    "replace-classmethod-with-cls": HookCase(
        "C.make", "REPLACE", "def HOOK(cls, x): ...", "C.make(1)", "ok", False),
    "replace-classmethod-without-cls": HookCase(
        "C.make", "REPLACE", "def HOOK(x): ...", "C.make(1)", "fail", True),
    "replace-staticmethod-without-self": HookCase(
        "C.s", "REPLACE", "def HOOK(x, y): ...", "C.s(1, 2)", "ok", False),
    "replace-staticmethod-with-self": HookCase(
        "C.s", "REPLACE", "def HOOK(self, x, y): ...", "C.s(1, 2)", "fail", True),
    "replace-class-with-a-class": HookCase(
        "C", "REPLACE", "class HOOK:\n    def __init__(self, x=0): ...", "C(1)", "ok", False),
    "replace-class-whose-constructor-lacks-a-keyword-sglang-passes": HookCase(
        "C", "REPLACE", "class HOOK:\n    def __init__(self): ...", "C(x=1)", "fail", True),
    "replace-class-whose-constructor-lacks-a-parameter-no-call-passes": HookCase(
        "C", "REPLACE", "class HOOK:\n    def __init__(self): ...", "C()", "note", False),
    "replace-class-without-a-constructor-of-its-own": HookCase(
        "C", "REPLACE", "class HOOK:\n    pass", "C(1)", "fail", True),
    "replace-class-deriving-from-the-target": HookCase(
        "C", "REPLACE", "from sglang.srt.oracle import C\nclass HOOK(C):\n    pass", "C(x=2)",
        "ok", False),
    "after-hook-on-a-constructor-sglang-calls-by-keyword": HookCase(
        "C.__init__", "AFTER", "def HOOK(result, self, y=0): ...", "C(x=1)", "fail", True),
    "after-hook-on-a-constructor-taking-what-sglang-passes": HookCase(
        "C.__init__", "AFTER", "def HOOK(result, self, x=0): ...", "C(x=1)\nC(2)", "ok", False),
    "f-string-target-from-a-name-of-the-registering-function": HookCase(
        "C.m", "AFTER", "def after(result, x): ...\n"
        "def register():\n    owner = 'sglang.srt.oracle.C'\n"
        "    HookRegistry.register(f'{owner}.m', after, TYPE)", "C().m(1)", "fail", True),
    "around-class-hook-on-a-class": HookCase(
        "C.m", "AROUND", "class HOOK:\n    pass", "C().m(1)", "fail", True),
    "replace-varargs-target-with-one-parameter-callers-fill": HookCase(
        "v", "REPLACE", "def HOOK(a): ...", "v(1)", "note", False),
    "partial-supplying-a-leading-argument": HookCase(
        "f", "REPLACE", "import functools\ndef _impl(extra, a, b, c=0, *, flag=False): ...\n"
        "HOOK = functools.partial(_impl, 'x')", "f(1, 2, 3, flag=True)", "ok", False),
    "partial-binding-a-keyword-sglang-passes-by-position": HookCase(
        "f", "REPLACE", "import functools\ndef _impl(a, b, c=0, *, flag=False): ...\n"
        "HOOK = functools.partial(_impl, 0)", "f(1, 2, 3)", "fail", True),
    "lambda-after-hook": HookCase(
        "f", "AFTER", "HOOK = lambda result, *a, **k: None", "f(1, 2)", "ok", False),
    "known-decorator-keeps-the-verdict": HookCase(
        "f", "REPLACE", "import functools\n@functools.lru_cache\ndef HOOK(a, b, c=0): ...",
        "f(1, 2, flag=True)", "fail", True),
    "unknown-decorator-is-a-note": HookCase(
        "f", "REPLACE", "import functools\ndef deco(fn):\n    @functools.wraps(fn)\n"
        "    def inner(*a, **k):\n        return fn(*a, **k)\n    return inner\n"
        "@deco\ndef HOOK(a, b, c=0): ...", "f(1, 2, flag=True)", "note", True),
    "bound-method-of-a-plugin-class": HookCase(
        "C.m", "AFTER", "class Plugin:\n    def after(self, result, obj, x, y=1): ...\n"
        "    def install(self):\n        HookRegistry.register(TARGET, self.after, TYPE)\n"
        "def register():\n    Plugin().install()", "C().m(1)", "ok", False),
    "bound-method-forgetting-the-target-self": HookCase(
        "C.m", "AFTER", "class Plugin:\n    def after(self, result, x, y=1): ...\n"
        "    def install(self):\n        HookRegistry.register(TARGET, self.after, TYPE)\n"
        "def register():\n    Plugin().install()", "C().m(1, y=2)", "fail", True),
    "plugin-hook-decorator": HookCase(
        "f", "REPLACE", "@plugin_hook(TARGET, type=TYPE)\ndef replacement(a, b): ...\n"
        "def register():\n    pass", "f(1, 2, 3)", "fail", True),
    "hook-from-another-module-of-the-plugin": HookCase(
        "g", "AROUND", "from plug.impl import around as HOOK", "g(1, interval=2)", "fail", True,
        impl="def around(original_fn, a):\n    return original_fn(a)\n"),
    "hook-from-a-relative-import": HookCase(
        "g", "AROUND", "from .impl import around as HOOK", "g(1, interval=2)", "ok", False,
        impl="def around(original_fn, a, **kwargs):\n    return original_fn(a, **kwargs)\n"),
    "f-string-target": HookCase(
        "C.m", "AFTER", "MODULE = 'sglang.srt.oracle'\ndef after(result, x): ...\n"
        "def register():\n    HookRegistry.register(f'{MODULE}.C.m', after, TYPE)",
        "C().m(1)", "fail", True),
}


@pytest.fixture(scope="module")
def registry_source() -> str:
    """Returns the text of the real 0.5.23 ``hook_registry.py``."""
    return real_registry_source()


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_each_hook_form_is_judged_as_the_real_hook_registry_calls_it(
    tmp_path: Path, registry_source: str, case: HookCase,
) -> None:
    """fail means the 0.5.23 HookRegistry raises TypeError on SGLang's calls; ok means it
    does not; note is auxcheck saying it cannot tell (the case records the truth)."""
    release, plugin = write_hook_case(tmp_path, case, oracle=TARGETS, registry=registry_source)
    assert_judged_as_the_registry_runs_it(release, plugin, case)


# ---------------------------------------------------------------- real releases

REAL = ("0.5.19", "0.5.20", "0.5.23")


def real_results(tmp_path: Path, source: str) -> dict[str, ReleaseResult]:
    """Returns the plugin's result on each real release (wheels from the test cache)."""
    scan = scan_project(write_plugin(tmp_path / "plugin", textwrap.dedent(source)))
    return {v: check_release(scan, ReleaseIndex(real_release(v)), moves=builtin_moves())
            for v in REAL}


def codes_by_release(results: dict[str, ReleaseResult]) -> dict[str, list[str]]:
    """Returns the finding codes of each release, in stage order."""
    return {v: [f.code for s in r.stages for f in s.findings] for v, r in results.items()}


class Shape(NamedTuple):
    source: str
    """The plugin module after its ``hook_registry`` import."""
    expected: dict[str, list[str]]
    """The finding codes on each release."""


PUBLIC_SHAPES = {
    # sglang_hook: REPLACE of parallel_state functions written against an older signature;
    # srt/distributed/bootstrap.py passes max_world_size= in every release read.
    "replacement-lacking-max-world-size": Shape(
        "def init_distributed_environment(world_size=-1, rank=-1, distributed_init_method="
        "'env://', local_rank=-1, backend='nccl', timeout=None, moe_a2a_backend=None, "
        "recovered_rank=False): ...\n"
        "HookRegistry.register('sglang.srt.distributed.parallel_state."
        "init_distributed_environment', init_distributed_environment, HookType.REPLACE)\n",
        {"0.5.19": ["AUX703"], "0.5.20": ["AUX703"], "0.5.23": ["AUX703"]}),
    # OrbitKV: AROUND on ScheduleBatch._evict_swa; 0.5.23's maybe_evict_swa passes
    # eviction_interval=.
    "around-hook-lacking-a-new-keyword-only-parameter": Shape(
        "def _own_swa_reclamation(_original_fn, batch, req, pre_len):\n"
        "    return _original_fn(batch, req, pre_len)\n"
        "HookRegistry.register('sglang.srt.managers.schedule_batch.ScheduleBatch._evict_swa', "
        "_own_swa_reclamation, HookType.AROUND)\n",
        {"0.5.19": [], "0.5.20": [], "0.5.23": ["AUX703"]}),
    # sglang-kunlun: REPLACE of topk.select_experts; 0.5.23's topk.py passes
    # dynamic_expert_bias=.
    "replacement-lacking-new-keyword-only-parameters": Shape(
        "@plugin_hook('sglang.srt.layers.moe.topk.select_experts', type=HookType.REPLACE)\n"
        "def select_experts(hidden_states, router_logits, topk_config, *, layer_id=None, "
        "num_token_non_padded=None, expert_location_dispatch_info=None): ...\n",
        {"0.5.19": [], "0.5.20": [], "0.5.23": ["AUX703"]}),
    # A new user's AFTER hook forgetting that the wrapper passes the result first.
    "after-hook-without-the-result": Shape(
        "def _install_observer(runner): ...\n"
        "HookRegistry.register('sglang.srt.model_executor.model_runner.ModelRunner.initialize',"
        " _install_observer, HookType.AFTER)\n",
        {"0.5.19": ["AUX703"], "0.5.20": ["AUX703"], "0.5.23": ["AUX703"]}),
    # sglang-kunlun: targets in sgl_kernel, which HookRegistry resolves like any module.
    "targets-in-sgl-kernel": Shape(
        "def mla(*args, **kwargs): ...\n"
        "HookRegistry.register('sgl_kernel.flash_mla.flash_mla_with_kvcache', mla, "
        "HookType.REPLACE)\n"
        "HookRegistry.register('sgl_kernel.flash_mla_with_kvcache', mla, HookType.REPLACE)\n",
        {"0.5.19": [], "0.5.20": [], "0.5.23": []}),
    # sglang_hook's engine.py: a dataclass field that never existed, and a helper whose
    # signature changed in 0.5.20 and that 0.5.23 removed.
    "calls-that-do-not-bind": Shape(
        "from sglang.srt.entrypoints.engine import SchedulerInitResult\n"
        "try:\n    from sglang.srt.entrypoints.engine import _compute_parallelism_ranks\n"
        "except ImportError:\n    _compute_parallelism_ranks = None\n"
        "def launch(server_args):\n"
        "    _compute_parallelism_ranks(server_args, tp_rank=0)\n"
        "    return SchedulerInitResult(scheduler_infos=[], wait_for_completion=None)\n",
        {"0.5.19": ["AUX704"], "0.5.20": ["AUX704", "AUX704"], "0.5.23": ["AUX704"]}),
    "a-registry-method-no-release-has": Shape(
        "assert not HookRegistry.is_hook_applied('x')\n",
        {"0.5.19": ["AUX503"], "0.5.20": ["AUX503"], "0.5.23": ["AUX503"]}),
    # SpecForge-style hooks written right: no finding anywhere.
    "hooks-that-fit": Shape(
        "def _streamer(result, *args, **kwargs):\n    return result\n"
        "def _init(result, self, *args, **kwargs):\n    return None\n"
        "def _around(original_fn, *args, **kwargs):\n    return original_fn(*args, **kwargs)\n"
        "def register():\n"
        "    HookRegistry.register('sglang.srt.managers.scheduler.Scheduler."
        "get_output_streamer_class', _streamer, HookType.AFTER)\n"
        "    HookRegistry.register('sglang.srt.managers.scheduler.Scheduler.__init__', _init, "
        "HookType.AFTER)\n"
        "    HookRegistry.register('sglang.srt.managers.schedule_batch.ScheduleBatch._evict_swa',"
        " _around, HookType.AROUND)\n",
        {"0.5.19": [], "0.5.20": [], "0.5.23": []}),
}


@pytest.mark.slow
@pytest.mark.parametrize(("source", "expected"), PUBLIC_SHAPES.values(), ids=PUBLIC_SHAPES.keys())
def test_public_plugin_shapes_are_judged_right_on_each_real_release(
    tmp_path: Path, source: str, expected: dict[str, list[str]],
) -> None:
    """The breaks measured on public plugins fail where SGLang's own code breaks them, and
    hooks that fit (or that auxcheck cannot read) fail nowhere."""
    header = ("from sglang.srt.plugins.hook_registry import HookRegistry, HookType, "
              "plugin_hook\n")
    results = real_results(tmp_path, header + source)
    assert codes_by_release(results) == expected, render_matrix(list(results.values()))


def test_the_around_hook_failure_names_the_call_sglang_makes(tmp_path: Path) -> None:
    """The message says what the wrapper passes, the TypeError, and SGLang's own call site."""
    source, _ = PUBLIC_SHAPES["around-hook-lacking-a-new-keyword-only-parameter"]
    plugin = write_plugin(tmp_path / "plugin",
                          "from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n"
                          + source)
    result = check_release(scan_project(plugin), ReleaseIndex(real_release("0.5.23")))
    [finding] = next(s for s in result.stages if s.stage == "hooks").findings
    assert finding.message.startswith(
        "`_own_swa_reclamation` cannot take the call HookRegistry makes for an AROUND hook on "
        "sglang.srt.managers.schedule_batch.ScheduleBatch._evict_swa(self, req, pre_len, *, "
        "eviction_interval=...) (sglang 0.5.23): _own_swa_reclamation(original_fn, a1, a2, a3, "
        "eviction_interval=...) raises TypeError: got an unexpected keyword argument "
        "'eviction_interval'; SGLang's own code makes that call "
        "(sglang/srt/managers/schedule_batch.py:")
    assert finding.hint.startswith("declare the hook as (original_fn, self, req, pre_len, *, "
                                   "eviction_interval=...)")


@pytest.mark.slow
def test_the_compat_codemods_output_passes_the_release_check(tmp_path: Path) -> None:
    """`auxcheck migrate --compat` output (a try/except ImportError module alias) resolves on
    every release: auxcheck does not contradict its own codemod."""
    from auxcheck.cli.migrate import main as migrate

    source = ("import sglang.srt.sampling.sampling_observer as so\n\n"
              "def commit(i):\n    return so.CommittedTokens(i, (1,))\n")
    results = {}
    plugin = write_plugin(tmp_path / "plugin", source)
    assert migrate([str(plugin), "--compat"]) == 0
    rewritten = (plugin / "plug" / "hooks.py").read_text()
    assert "except ImportError:" in rewritten
    scan = scan_project(plugin)
    for version in REAL:
        results[version] = check_release(scan, ReleaseIndex(real_release(version)))
    assert not any(r.failed for r in results.values()), render_matrix(list(results.values()))
    # The call through the alias is judged against the module each release imports.
    assert {v: [s.checked for s in r.stages if s.stage == "calls"] for v, r in results.items()} \
        == {v: [1] for v in REAL}


@pytest.mark.slow
def test_moves_leave_out_names_bound_only_under_main(tmp_path: Path) -> None:
    """`if __name__ == "__main__":` binds nothing for importers: no move points there."""
    found = moves_between("0.5.19", "0.5.23", cache=REAL_CACHE)
    targets = {(m.new, n) for m in found.moves for n in m.names}
    assert ("sglang.srt.distributed.device_communicators.custom_all_reduce_utils", "result") \
        not in targets
    assert not any(module.endswith("run_npu_e2e_test") for module, _ in targets)


@pytest.mark.slow
def test_the_readmes_hook_plugin_example_is_what_the_command_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each line of docs/releases.md's `examples/hook_plugin` output is printed as shown (a line
    ending in `; ...` is a prefix), so the documented verdicts cannot drift."""
    from auxcheck.cli.check import main

    readme = (REPO / "docs" / "releases.md").read_text()
    start = readme.index("$ auxcheck check examples/hook_plugin")
    block = readme[start:readme.index("```", start)].splitlines()[1:]
    monkeypatch.chdir(REPO)
    status = main(["examples/hook_plugin", "--skip", "imports", "--skip", "mypy", "--skip",
                   "contract", "--offline", "--cache", str(REAL_CACHE)])
    out = capsys.readouterr().out
    assert status == 1
    for line in block:
        if line == "...":
            continue
        assert line.removesuffix("; ...") in out, line
