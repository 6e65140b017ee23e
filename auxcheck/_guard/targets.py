"""The hook targets the running SGLang lacks, judged from its source before any is hooked."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from auxcheck._guard.guard import Guard
from auxcheck._guard.settings import HOOKS, GuardSettings, HookPoint

__all__ = ["target_problems"]


def target_problems(settings: GuardSettings) -> dict[str, str]:
    """Returns, per hook target the running SGLang lacks, why (empty when all resolve)."""
    from auxcheck._releases.index import ReleaseIndex
    from auxcheck._releases.signature_check import hook_target_problem
    from auxcheck.releases import Release, ReleaseError

    root = _sglang_root()
    if root is None:
        return {p.target: "sglang is not importable here" for p in HOOKS}
    try:
        index = ReleaseIndex(Release.from_source(root))
    except (ReleaseError, OSError) as exc:
        return {p.target: f"the running sglang's source cannot be read ({exc})" for p in HOOKS}
    problems = {}
    for point in HOOKS:
        if point.values_only and not settings.values:
            continue
        problem = hook_target_problem(point.target, point.hook_type, index)
        if problem is not None:
            problems[point.target] = f"hook target {point.target} not found: {problem}"
            continue
        problem = _signature_problem(point, index)
        if problem is not None:
            problems[point.target] = (f"hook on {point.target} cannot take the calls "
                                      f"HookRegistry makes: {problem}")
    return problems


def _signature_problem(point: HookPoint, index: Any) -> str | None:
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
