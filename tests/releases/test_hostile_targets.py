"""Hostile hook targets (AUX703): how SGLang's side binds, against the real 0.5.23 HookRegistry.

Two ways the judge misread SGLang's side. A classmethod or staticmethod a class inherits
is not in its ``__dict__``: ``_apply_target`` then wraps the attribute ``getattr`` gave
(a classmethod already bound to the class, a staticmethod's plain function) and sets the
wrapper on the class as a plain function, so a call through the class passes the hook
exactly the caller's arguments and a call through an instance passes the instance first.
And a call of a method of the same name on another class (``self.info.filter(...)``) is
no call of the target: only a receiver known to be an instance of the hooked class, or
the class itself, makes a call site the evidence of a failure.

Each case runs the wheel's own ``hook_registry.py`` on the same hook and calls: a
``fail`` must be a TypeError there, an ``ok`` must not raise, a ``note`` says auxcheck
cannot tell and the case records what really happens.
"""

from __future__ import annotations

import importlib
import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest
from helpers.releases import real_registry_source, real_release, sglang_from, write_release

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import check_release
from auxcheck.releases import Release

ORACLE = """
    class Base:
        @classmethod
        def make(cls, x):
            return cls

        @staticmethod
        def s(x, y):
            return x


    class Sub(Base):
        pass


    class Own(Base):
        @classmethod
        def make(cls, x):
            return cls


    class Info:
        def filter(self, keep, device=None):
            return keep


    class Batch:
        def __init__(self):
            self.info = Info()

        def filter(self, exclude=None, keep=None):
            return keep

        def shrink(self):
            self.info.filter([0], "cpu")


    class Narrow(Batch):
        def filter(self, a, b):
            return a

        def shrink(self):
            self.filter(1, 2)
    """
"""``sglang.srt.oracle``: the classes every case hooks."""


class Case(NamedTuple):
    target: str
    hook_type: str
    hook: str
    calls: str
    """Statements of ``run()`` in ``sglang.srt.caller``, which imports every oracle class."""
    verdict: str
    raises: bool


CASES = {
    # Inherited classmethod: through the class the hook gets the caller's arguments, no cls.
    "replace-of-an-inherited-classmethod-without-cls-sglang-calls-through-the-class": Case(
        "Sub.make", "REPLACE", "def HOOK(x): ...", "Sub.make(1)", "note", False),
    "replace-of-an-inherited-classmethod-taking-cls-sglang-calls-through-the-class": Case(
        "Sub.make", "REPLACE", "def HOOK(cls, x): ...", "Sub.make(1)", "fail", True),
    "after-on-an-inherited-classmethod-taking-cls": Case(
        "Sub.make", "AFTER", "def HOOK(result, cls, x): ...", "Sub.make(1)", "fail", True),
    "after-on-an-inherited-classmethod-taking-cls-sglang-calls-through-an-instance": Case(
        "Sub.make", "AFTER", "def HOOK(result, cls, x): ...", "Sub().make(1)", "fail", True),
    "after-on-an-inherited-classmethod-without-cls": Case(
        "Sub.make", "AFTER", "def HOOK(result, x): ...", "Sub.make(1)", "note", False),
    "replace-of-an-inherited-classmethod-taking-the-instance-sglang-passes": Case(
        "Sub.make", "REPLACE", "def HOOK(obj, x): ...", "Sub().make(1)", "note", False),
    "around-an-inherited-classmethod-taking-anything": Case(
        "Sub.make", "AROUND", "def HOOK(original_fn, *args, **kwargs):\n"
        "    return original_fn(*args, **kwargs)", "Sub.make(1)", "note", False),
    "replace-of-an-inherited-classmethod-taking-anything": Case(
        "Sub.make", "REPLACE", "def HOOK(*args, **kwargs): ...", "Sub.make(1)\nSub().make(1)",
        "ok", False),
    "replace-of-an-inherited-classmethod-requiring-two-more": Case(
        "Sub.make", "REPLACE", "def HOOK(a, b, c, d): ...", "Sub.make(1)", "fail", True),
    # Inherited staticmethod: the same re-binding.
    "replace-of-an-inherited-staticmethod-sglang-calls-through-the-class": Case(
        "Sub.s", "REPLACE", "def HOOK(x, y): ...", "Sub.s(1, 2)", "note", False),
    "replace-of-an-inherited-staticmethod-taking-self": Case(
        "Sub.s", "REPLACE", "def HOOK(self, x, y): ...", "Sub.s(1, 2)", "fail", True),
    # A classmethod the hooked class defines itself keeps cls, through class or instance.
    "replace-of-an-own-classmethod-with-cls": Case(
        "Own.make", "REPLACE", "def HOOK(cls, x): ...", "Own.make(1)\nOwn().make(2)", "ok", False),
    "replace-of-an-own-classmethod-without-cls": Case(
        "Own.make", "REPLACE", "def HOOK(x): ...", "Own.make(1)", "fail", True),
    # Call sites: only a receiver known to be the hooked class (or an instance of it) counts.
    "a-same-named-method-of-another-class-is-no-call-site": Case(
        "Batch.filter", "BEFORE", "def HOOK(batch, exclude=None, *, keep=None):\n    return None",
        "Batch().shrink()\nBatch().filter(keep=[1])", "note", False),
    "an-override-in-a-subclass-is-no-call-site": Case(
        "Batch.filter", "BEFORE", "def HOOK(batch, exclude=None, *, keep=None):\n    return None",
        "Narrow().shrink()", "note", False),
    "a-parameter-annotated-with-the-class-is-a-call-site": Case(
        "Batch.filter", "BEFORE", "def HOOK(batch, exclude=None, *, keep=None):\n    return None",
        "def go(batch: Batch):\n    batch.filter(None, [1])\ngo(Batch())", "fail", True),
    "a-local-built-from-the-class-is-a-call-site": Case(
        "Batch.filter", "BEFORE", "def HOOK(batch, exclude=None, *, keep=None):\n    return None",
        "batch = Batch()\nbatch.filter(None, [1])", "fail", True),
    "a-call-through-the-class-is-a-call-site": Case(
        "Batch.filter", "BEFORE", "def HOOK(batch, exclude=None, *, keep=None):\n    return None",
        "Batch.filter(Batch(), None, [1])", "fail", True),
    "a-same-named-method-called-through-another-class-is-no-call-site": Case(
        "Batch.filter", "BEFORE", "def HOOK(batch, exclude=None, *, keep=None):\n    return None",
        "Info.filter(Info(), [0])", "note", False),
}


def _plugin_source(case: Case) -> str:
    return ("from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n"
            f"{case.hook}\n\n\ndef register():\n"
            f"    HookRegistry.register('sglang.srt.oracle.{case.target}', HOOK, "
            f"HookType.{case.hook_type})\n")


def _caller_source(case: Case) -> str:
    return ("from sglang.srt.oracle import Base, Batch, Info, Narrow, Own, Sub\n\n\n"
            f"def run():\n{textwrap.indent(case.calls, '    ')}\n")


def _build(tmp_path: Path, case: Case) -> tuple[Path, Path]:
    release = write_release(tmp_path / "release", {
        "sglang/_version.py": '__version__ = "0.5.23"\n',
        "sglang/srt/plugins/__init__.py": "",
        "sglang/srt/plugins/hook_registry.py": real_registry_source(),
        "sglang/srt/oracle.py": textwrap.dedent(ORACLE),
        "sglang/srt/caller.py": _caller_source(case),
    })
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "__init__.py").write_text("")
    (plugin / "plug" / "hooks.py").write_text(_plugin_source(case))
    return release, plugin


def _verdict(release: Path, plugin: Path) -> tuple[str, str]:
    result = check_release(scan_project(plugin), ReleaseIndex(Release.from_source(release)))
    hooks = next(s for s in result.stages if s.stage == "hooks")
    [judged] = hooks.judged
    if hooks.findings:
        assert {f.code for f in hooks.findings} == {"AUX703"}, hooks.findings
        return "fail", hooks.findings[0].message
    return judged.verdict, judged.detail


def _real_outcome(release: Path, plugin: Path) -> str | None:
    with sglang_from(release, plugin):
        registry = importlib.import_module("sglang.srt.plugins.hook_registry").HookRegistry
        importlib.import_module("plug.hooks").register()
        registry.apply_hooks()
        try:
            importlib.import_module("sglang.srt.caller").run()
        except TypeError as exc:
            return str(exc)
        return None


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_hostile_target_is_judged_as_the_real_hook_registry_binds_it(
    tmp_path: Path, case: Case,
) -> None:
    """fail means the 0.5.23 HookRegistry raises TypeError on SGLang's calls, ok means it
    does not; note is auxcheck saying it cannot tell which binding runs."""
    release, plugin = _build(tmp_path, case)
    verdict, why = _verdict(release, plugin)
    raised = _real_outcome(release, plugin)
    assert (raised is not None) == case.raises, raised
    assert verdict == case.verdict, why
    if verdict == "fail":
        assert raised is not None
    if verdict == "ok":
        assert raised is None


def test_an_inherited_classmethod_note_says_how_each_call_binds(tmp_path: Path) -> None:
    """The note names both bindings: through the class, and through an instance."""
    release, plugin = _build(tmp_path, CASES[
        "replace-of-an-inherited-classmethod-without-cls-sglang-calls-through-the-class"])
    verdict, why = _verdict(release, plugin)
    assert verdict == "note"
    assert "sglang.srt.oracle.Sub.make is a classmethod Sub inherits from " \
           "sglang.srt.oracle.Base" in why
    assert "through the class" in why and "through an instance" in why


def test_a_correct_before_hook_on_schedule_batch_filter_batch_passes_on_0_5_23(
    tmp_path: Path,
) -> None:
    """``self.sampling_info.filter_batch(keep_indices, keep_indices_device)`` calls
    SamplingBatchInfo's method, not ScheduleBatch's: it is no evidence against the hook."""
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "hooks.py").write_text(
        "from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n"
        "def before_filter(batch, reqs_to_exclude=None, *, keep_indices=None):\n"
        "    return None\n\n"
        "def register():\n"
        "    HookRegistry.register('sglang.srt.managers.schedule_batch.ScheduleBatch."
        "filter_batch', before_filter, HookType.BEFORE)\n")
    result = check_release(scan_project(plugin), ReleaseIndex(real_release("0.5.23")))
    hooks = next(s for s in result.stages if s.stage == "hooks")
    assert not hooks.findings, hooks.findings[0].message
    [judged] = hooks.judged
    assert judged.verdict == "note"
    assert "sampling_info" not in judged.detail


def test_an_around_hook_taking_anything_is_a_note_since_the_original_breaks_through_an_instance(
    tmp_path: Path,
) -> None:
    """Through an instance the wrapper hands the instance to the original too: a note, not a
    pass, even for a hook that takes both calls."""
    release, plugin = _build(tmp_path, CASES["around-an-inherited-classmethod-taking-anything"])
    verdict, why = _verdict(release, plugin)
    assert verdict == "note"
    assert "the original then raises TypeError whatever the hook; `HOOK` takes both" in why
