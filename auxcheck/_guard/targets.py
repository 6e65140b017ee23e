"""The hook points that apply to the running SGLang, and its missing targets, from its source."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from auxcheck._guard.guard import Guard
from auxcheck._guard.settings import HOOKS, GuardSettings, HookPoint

if TYPE_CHECKING:
    from auxcheck._releases.index import ReleaseIndex

__all__ = ["HookPlan", "hook_plan"]


@dataclass(frozen=True, slots=True)
class HookPlan:
    """The hook points to register in the running SGLang, and why any of their targets cannot be."""

    points: tuple[HookPoint, ...]
    problems: dict[str, str]


def hook_plan(settings: GuardSettings) -> HookPlan:
    """Returns the points ``settings`` and the running SGLang call for, and their targets' problems.

    A point serving a feature the running SGLang certainly lacks (``HookPoint.requires``)
    is left out, not reported: an SGLang without a forward observer has no forward output
    to check.
    """
    from auxcheck._core.errors import ReleaseError
    from auxcheck._releases.index import ReleaseIndex
    from auxcheck._releases.wheels import Release

    wanted = tuple(p for p in HOOKS if settings.values or not p.values_only)
    root = _sglang_root()
    if root is None:
        return _unjudged(wanted, "sglang is not importable here")
    try:
        index = ReleaseIndex(Release.from_source(root))
    except (ReleaseError, OSError) as exc:
        return _unjudged(wanted, f"the running sglang's source cannot be read ({exc})")
    points = tuple(p for p in wanted if _applies(p, index))
    problems = {}
    for point in points:
        problem = _target_problem(point, index)
        if problem is not None:
            problems[point.target] = problem
    return HookPlan(points, problems)


def _unjudged(points: tuple[HookPoint, ...], why: str) -> HookPlan:
    """Returns the plan when the source cannot be read: every required target off, for ``why``."""
    required = tuple(p for p in points if p.requires is None)
    return HookPlan(required, {p.target: why for p in required})


def _applies(point: HookPoint, index: ReleaseIndex) -> bool:
    """Returns False when the running SGLang certainly lacks the feature ``point`` serves."""
    if point.requires is None:
        return True
    found = index.resolve(point.requires)
    return bool(found.ok or not found.certain)


def _target_problem(point: HookPoint, index: ReleaseIndex) -> str | None:
    from auxcheck._releases.signature_check import hook_target_problem

    problem = hook_target_problem(point.target, point.hook_type, index)
    if problem is not None:
        return f"hook target {point.target} not found: {problem}"
    problem = _signature_problem(point, index)
    if problem is not None:
        return f"hook on {point.target} cannot take the calls HookRegistry makes: {problem}"
    return None


def _signature_problem(point: HookPoint, index: ReleaseIndex) -> str | None:
    """Returns why the guard's own handler cannot take the calls made on ``point``'s target.

    The rule ``auxcheck check`` applies to a plugin's hooks (AUX703), on the running
    SGLang's source; a target whose signature cannot be read is not judged.
    """
    from auxcheck._releases.definitions import callee
    from auxcheck._releases.signature_check import hook_signature_problem, target_signature

    found = index.resolve(point.target)
    target = callee(index, found.where) if found.ok and found.certain else None
    signature = target_signature(target, point.hook_type) if target is not None else None
    if signature is None or isinstance(signature, str):
        return None
    handler = inspect.signature(getattr(Guard, point.handler))
    bound = handler.replace(parameters=list(handler.parameters.values())[1:])  # drop self
    return hook_signature_problem(signature, bound, point.hook_type)


def _sglang_root() -> Path | None:
    """Returns the folder holding the running ``sglang`` package, without importing it."""
    module = sys.modules.get("sglang")
    paths = list(getattr(module, "__path__", None) or [])
    if not paths:
        try:
            spec = importlib.util.find_spec("sglang")
        except (ImportError, ValueError):
            spec = None
        paths = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(paths[0]).parent if paths else None
