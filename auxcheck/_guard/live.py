"""The live-server guard: auxcheck's checks inside a running SGLang, through its own plugin hooks.

:func:`install` runs in ``register()`` of auxcheck's ``sglang.srt.plugins`` entry point
(see :mod:`auxcheck.sglang_plugin`) when ``AUXCHECK_GUARD`` is ``warn`` or ``raise``. It
reads the running SGLang's source to confirm each hook target exists (the same judgement
``auxcheck check`` makes for a plugin's hooks, AUX701), registers hooks only on those, and
logs which checks are on and which are off, and why. The hooks (SGLang 0.5.23 names):

- ``DecodeCudaGraphRunner.capture`` / ``PrefillCudaGraphRunner.capture`` (AFTER): the
  runner's static input buffers, the process-wide ``GraphSharedOutput`` logits buffers
  and every segment of the graph memory pool are registered (AUX110/AUX111);
- ``GenerationBatchResult.copy_auxiliary_output_to_cpu`` (AROUND): each published output
  (the sampling observer's and, where SGLang has one, the forward observer's
  ``forward_auxiliary_output``) is wrapped for the call so that its ``copy_to_host``
  receives a copy function that checks each tensor against the registry before SGLang's
  ``_async_d2h`` copies it; the tensors the output holds are checked too. ``_async_d2h``
  itself is never re-bound;
- ``ModelRunner.sample`` (AFTER, only with ``AUXCHECK_GUARD_VALUES=1``): the output just
  published is snapshot to the host, synchronously, so the copy can be compared (AUX112);
- ``TpModelWorker.forward_batch_generation`` (AFTER, only with ``AUXCHECK_GUARD_VALUES=1``,
  and only on an SGLang with a forward observer, main after 0.5.23): the output
  ``ForwardObserver.after_forward`` returned there is snapshot likewise;
- ``SchedulerBatchResultProcessor._build_auxiliary_commits`` (AFTER): commits are checked
  against ``batch.reqs`` (AUX601);
- ``SchedulerBatchResultProcessor.consume_auxiliary_output`` (AROUND): each host output's
  ``consume`` is fingerprinted before and after (AUX203), and copied values are compared
  with their snapshot, after SGLang waited for the copy.

Composites are judged per child: the guard hands SGLang's own composite a copy of itself
whose children are thin probes, so SGLang's composite code still does the iterating.

The guard observes, it never repairs: a server runs the same with it as without it, but
for the time the checks take. Its own failures never reach the server: a check that
raises is logged once and switched off. ``warn`` logs the first finding of each rule and
output class in full, then counts (a line at 10, 100, 1000... and a summary at exit);
``raise`` raises :class:`~auxcheck.errors.GuardError` once the hooked SGLang call returned.
``AUXCHECK_GUARD_REPORT=PATH`` appends the same events to PATH as JSON lines.

Where each part lives: the settings and the hook table in :mod:`auxcheck._guard.settings`,
the targets judged in :mod:`~auxcheck._guard.targets`, the handlers in
:mod:`~auxcheck._guard.guard`, the stand-ins SGLang is handed in
:mod:`~auxcheck._guard.probes`, the log and report in :mod:`~auxcheck._guard.reporter`.
"""

from __future__ import annotations

import atexit
import logging
import os
from collections.abc import Mapping

from auxcheck._core.errors import SettingError
from auxcheck._core.imports import import_failure, is_missing
from auxcheck._guard.guard import Guard
from auxcheck._guard.settings import VALUES_ENV, GuardSettings
from auxcheck._guard.targets import hook_plan

__all__ = ["active", "install"]

logger = logging.getLogger("auxcheck.guard")
_ACTIVE: Guard | None = None
_EXIT_HOOKED = False
REGISTRY_MODULE = "sglang.srt.plugins.hook_registry"
"""The module holding SGLang's ``HookRegistry``, which the guard registers its hooks with."""

_CHECKS = {
    "capture": "CUDA-graph buffers and pool registered after capture",
    "copy": "aliasing at copy (AUX110/AUX111)",
    "values": "published values against the copy (AUX112)",
    "commits": "commits (AUX601)",
    "consume": "consume leaves commits and batch.reqs alone (AUX203)",
}


def active() -> Guard | None:
    """Returns the guard installed in this process, or None."""
    return _ACTIVE


def install(environ: Mapping[str, str] | None = None) -> Guard | None:
    """Reads the settings, verifies the hook targets and registers the hooks; returns the guard.

    Returns None, after logging why, when the guard is off or cannot run here (a bad
    setting, no SGLang, no HookRegistry). Never raises.
    """
    global _ACTIVE
    try:
        settings = GuardSettings.from_env(os.environ if environ is None else environ)
    except SettingError as exc:
        logger.error("auxcheck guard is off: %s", exc)
        return None
    if settings is None:
        return None
    try:
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType
    except Exception as exc:  # noqa: BLE001 - SGLang's import raising anything turns the guard off
        logger.error("auxcheck guard is off: %s", _registry_problem(exc))
        return None
    guard = Guard(settings)
    plan = hook_plan(settings)
    for point in plan.points:
        problem = plan.problems.get(point.target)
        if problem is not None:
            guard.checks.setdefault(point.check, problem)
            continue
        guard.checks[point.check] = None  # one hooked target is enough (either graph runner)
        HookRegistry.register(point.target, getattr(guard, point.handler),
                              HookType[point.hook_type])
    _settle_values(guard, settings)
    _ACTIVE = guard
    _log_start(guard, plan.problems)
    _exit_summary()
    return guard


def _registry_problem(exc: Exception) -> str:
    """Returns why the hook registry could not be imported: it is not in this SGLang (or
    there is no SGLang), or it is there and its import raised (a missing dependency)."""
    if is_missing(exc, REGISTRY_MODULE):
        if exc.name == "sglang":
            return f"SGLang cannot be imported here ({exc.msg})"
        return (f"this SGLang has no plugin hook registry ({REGISTRY_MODULE}: {exc.msg}); it "
                "needs an SGLang with sglang.srt.plugins (0.5.19 or later)")
    if type(exc) is ImportError and exc.name == REGISTRY_MODULE and "circular" not in str(exc):
        return (f"this SGLang's plugin hook registry is not the one the guard knows ({exc}); "
                "it needs HookRegistry and HookType, as in sglang.srt.plugins 0.5.19 or later")
    return import_failure(exc, REGISTRY_MODULE, needed_by="SGLang")


def _settle_values(guard: Guard, settings: GuardSettings) -> None:
    if not settings.values:
        guard.checks["values"] = f"{VALUES_ENV} is not set to 1"
        return
    for needed in ("copy", "consume"):
        if guard.checks.get(needed) is not None and guard.checks.get("values") is None:
            guard.checks["values"] = f"it needs the {needed} check, which is off"


def _log_start(guard: Guard, problems: Mapping[str, str]) -> None:
    on = [_CHECKS[c] for c, why in guard.checks.items() if why is None]
    off = [f"{_CHECKS[c]}: {why}" for c, why in guard.checks.items() if why is not None]
    missing = [why for why in problems.values() if why not in guard.checks.values()]
    logger.warning("auxcheck guard on (%s) in pid %d: checks on: %s%s%s", guard.settings.mode,
                   os.getpid(), "; ".join(on) or "none",
                   "".join(f"; OFF {text}" for text in off),
                   "".join(f"; not hooked: {text}" for text in missing))
    guard.reporter.write("start", checks={c: why or "on" for c, why in guard.checks.items()},
                         values=guard.settings.values)


def _exit_summary() -> None:
    global _EXIT_HOOKED
    if not _EXIT_HOOKED:
        atexit.register(_summary_at_exit)
        _EXIT_HOOKED = True


def _summary_at_exit() -> None:
    guard = _ACTIVE
    if guard is not None:
        guard.reporter.summary()
