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

from pathlib import Path

import pytest
from helpers.hook_cases import (
    HookCase,
    assert_judged_as_the_registry_runs_it,
    hook_verdict,
    write_hook_case,
    write_plugin,
)
from helpers.releases import real_release

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import check_release

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


CALLER_IMPORTS = ("Base", "Batch", "Info", "Narrow", "Own", "Sub")
"""What ``sglang.srt.caller`` imports of the oracle: every class a case's calls may name."""

CASES = {
    # Inherited classmethod: through the class the hook gets the caller's arguments, no cls.
    "replace-of-an-inherited-classmethod-without-cls-sglang-calls-through-the-class": HookCase(
        "Sub.make", "REPLACE", "def HOOK(x): ...", "Sub.make(1)", "note", False),
    "replace-of-an-inherited-classmethod-taking-cls-sglang-calls-through-the-class": HookCase(
        "Sub.make", "REPLACE", "def HOOK(cls, x): ...", "Sub.make(1)", "fail", True),
    "after-on-an-inherited-classmethod-taking-cls": HookCase(
        "Sub.make", "AFTER", "def HOOK(result, cls, x): ...", "Sub.make(1)", "fail", True),
    "after-on-an-inherited-classmethod-taking-cls-sglang-calls-through-an-instance": HookCase(
        "Sub.make", "AFTER", "def HOOK(result, cls, x): ...", "Sub().make(1)", "fail", True),
    "after-on-an-inherited-classmethod-without-cls": HookCase(
        "Sub.make", "AFTER", "def HOOK(result, x): ...", "Sub.make(1)", "note", False),
    "replace-of-an-inherited-classmethod-taking-the-instance-sglang-passes": HookCase(
        "Sub.make", "REPLACE", "def HOOK(obj, x): ...", "Sub().make(1)", "note", False),
    "around-an-inherited-classmethod-taking-anything": HookCase(
        "Sub.make", "AROUND", "def HOOK(original_fn, *args, **kwargs):\n"
        "    return original_fn(*args, **kwargs)", "Sub.make(1)", "note", False),
    "replace-of-an-inherited-classmethod-taking-anything": HookCase(
        "Sub.make", "REPLACE", "def HOOK(*args, **kwargs): ...", "Sub.make(1)\nSub().make(1)",
        "ok", False),
    "replace-of-an-inherited-classmethod-requiring-two-more": HookCase(
        "Sub.make", "REPLACE", "def HOOK(a, b, c, d): ...", "Sub.make(1)", "fail", True),
    # Inherited staticmethod: the same re-binding.
    "replace-of-an-inherited-staticmethod-sglang-calls-through-the-class": HookCase(
        "Sub.s", "REPLACE", "def HOOK(x, y): ...", "Sub.s(1, 2)", "note", False),
    "replace-of-an-inherited-staticmethod-taking-self": HookCase(
        "Sub.s", "REPLACE", "def HOOK(self, x, y): ...", "Sub.s(1, 2)", "fail", True),
    "around-an-inherited-staticmethod-dropping-the-instance-sglang-passes": HookCase(
        "Sub.s", "AROUND", "def HOOK(original_fn, obj, x, y):\n    return original_fn(x, y)",
        "Sub().s(1, 2)", "note", False),
    "around-an-inherited-staticmethod-without-room-for-the-instance": HookCase(
        "Sub.s", "AROUND", "def HOOK(original_fn, x, y):\n    return original_fn(x, y)",
        "Sub().s(1, 2)", "fail", True),
    # A classmethod the hooked class defines itself keeps cls, through class or instance.
    "replace-of-an-own-classmethod-with-cls": HookCase(
        "Own.make", "REPLACE", "def HOOK(cls, x): ...", "Own.make(1)\nOwn().make(2)", "ok", False),
    "replace-of-an-own-classmethod-without-cls": HookCase(
        "Own.make", "REPLACE", "def HOOK(x): ...", "Own.make(1)", "fail", True),
    # Call sites: only a receiver known to be the hooked class (or an instance of it) counts.
    "a-same-named-method-of-another-class-is-no-call-site": HookCase(
        "Batch.filter", "BEFORE", "def HOOK(batch, exclude=None, *, keep=None):\n    return None",
        "Batch().shrink()\nBatch().filter(keep=[1])", "note", False),
    "an-override-in-a-subclass-is-no-call-site": HookCase(
        "Batch.filter", "BEFORE", "def HOOK(batch, exclude=None, *, keep=None):\n    return None",
        "Narrow().shrink()", "note", False),
    "a-parameter-annotated-with-the-class-is-a-call-site": HookCase(
        "Batch.filter", "BEFORE", "def HOOK(batch, exclude=None, *, keep=None):\n    return None",
        "def go(batch: Batch):\n    batch.filter(None, [1])\ngo(Batch())", "fail", True),
    "a-local-built-from-the-class-is-a-call-site": HookCase(
        "Batch.filter", "BEFORE", "def HOOK(batch, exclude=None, *, keep=None):\n    return None",
        "batch = Batch()\nbatch.filter(None, [1])", "fail", True),
    "a-call-through-the-class-is-a-call-site": HookCase(
        "Batch.filter", "BEFORE", "def HOOK(batch, exclude=None, *, keep=None):\n    return None",
        "Batch.filter(Batch(), None, [1])", "fail", True),
    "a-same-named-method-called-through-another-class-is-no-call-site": HookCase(
        "Batch.filter", "BEFORE", "def HOOK(batch, exclude=None, *, keep=None):\n    return None",
        "Info.filter(Info(), [0])", "note", False),
}


def _build(tmp_path: Path, case: HookCase) -> tuple[Path, Path]:
    return write_hook_case(tmp_path, case, oracle=ORACLE, names=CALLER_IMPORTS)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_hostile_target_is_judged_as_the_real_hook_registry_binds_it(
    tmp_path: Path, case: HookCase,
) -> None:
    """fail means the 0.5.23 HookRegistry raises TypeError on SGLang's calls, ok means it
    does not; note is auxcheck saying it cannot tell which binding runs."""
    release, plugin = _build(tmp_path, case)
    assert_judged_as_the_registry_runs_it(release, plugin, case)


def test_an_inherited_classmethod_note_says_how_each_call_binds(tmp_path: Path) -> None:
    """The note names both bindings: through the class, and through an instance."""
    release, plugin = _build(tmp_path, CASES[
        "replace-of-an-inherited-classmethod-without-cls-sglang-calls-through-the-class"])
    verdict, why = hook_verdict(release, plugin)
    assert verdict == "note"
    assert "sglang.srt.oracle.Sub.make is a classmethod Sub inherits from " \
           "sglang.srt.oracle.Base" in why
    assert "through the class" in why and "through an instance" in why


def test_a_correct_before_hook_on_schedule_batch_filter_batch_passes_on_0_5_23(
    tmp_path: Path,
) -> None:
    """``self.sampling_info.filter_batch(keep_indices, keep_indices_device)`` calls
    SamplingBatchInfo's method, not ScheduleBatch's: it is no evidence against the hook."""
    plugin = write_plugin(
        tmp_path / "plugin",
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
    """Through an instance an AROUND hook passing its arguments on hands the instance to the
    original too: a note, not a pass, even for a hook that takes both calls."""
    release, plugin = _build(tmp_path, CASES["around-an-inherited-classmethod-taking-anything"])
    verdict, why = hook_verdict(release, plugin)
    assert verdict == "note"
    assert ("the original gets the instance too where the hook passes it on; `HOOK` takes "
            "both") in why
