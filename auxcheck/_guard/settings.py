"""The guard's settings, read from the environment, and the hooks it may register."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from auxcheck._core.errors import SettingError

__all__ = [
    "GUARD_ENV",
    "HOOKS",
    "REPORT_ENV",
    "VALUES_ENV",
    "GuardSettings",
    "HookPoint",
    "Mode",
    "SettingError",
]

GUARD_ENV = "AUXCHECK_GUARD"
VALUES_ENV = "AUXCHECK_GUARD_VALUES"
REPORT_ENV = "AUXCHECK_GUARD_REPORT"

Mode = Literal["warn", "raise"]
_MODES: tuple[Mode, ...] = ("warn", "raise")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


@dataclass(frozen=True, slots=True)
class GuardSettings:
    """The guard's configuration, from the environment."""

    mode: Mode
    values: bool = False
    report: Path | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> GuardSettings | None:
        """Returns the settings ``environ`` asks for, or None when the guard is off.

        Raises SettingError naming the variable, the value and what it accepts.
        """
        raw = environ.get(GUARD_ENV, "")
        mode = raw.strip().lower()
        if not mode:
            return None
        if mode not in _MODES:
            raise SettingError(f"{GUARD_ENV}={raw!r} is not a guard mode; expected warn (log "
                               f"findings) or raise (raise GuardError), or unset it to "
                               f"switch the guard off")
        values_raw = environ.get(VALUES_ENV, "")
        values = values_raw.strip().lower()
        if values not in _TRUE + _FALSE:
            raise SettingError(f"{VALUES_ENV}={values_raw!r} is neither on nor off; expected "
                               f"1 to snapshot published values (one extra synchronous "
                               f"copy per output) or 0")
        report = environ.get(REPORT_ENV, "").strip()
        return cls("raise" if mode == "raise" else "warn", values in _TRUE,
                   Path(report) if report else None)


@dataclass(frozen=True, slots=True)
class HookPoint:
    """One place the guard hooks: the check it serves, the SGLang target and the hook type."""

    check: str
    target: str
    hook_type: Literal["AFTER", "AROUND"]
    handler: str
    values_only: bool = False
    requires: str | None = None
    """A name only an SGLang with the feature this point serves defines; where the running
    SGLang certainly lacks it, the point is left out without a word (there is nothing to check)."""


_PROCESSOR = ("sglang.srt.managers.scheduler_components.batch_result_processor."
              "SchedulerBatchResultProcessor")
_RUNNERS = "sglang.srt.model_executor.runner"
HOOKS: tuple[HookPoint, ...] = (
    HookPoint("capture", f"{_RUNNERS}.decode_cuda_graph_runner.DecodeCudaGraphRunner.capture",
              "AFTER", "after_capture"),
    HookPoint("capture", f"{_RUNNERS}.prefill_cuda_graph_runner.PrefillCudaGraphRunner.capture",
              "AFTER", "after_capture"),
    HookPoint("copy", "sglang.srt.managers.utils.GenerationBatchResult."
              "copy_auxiliary_output_to_cpu", "AROUND", "around_copy"),
    HookPoint("values", "sglang.srt.model_executor.model_runner.ModelRunner.sample",
              "AFTER", "after_sample", values_only=True),
    # SGLang main after 0.5.23: ForwardObserver.after_forward's output is taken here.
    HookPoint("values", "sglang.srt.managers.tp_worker.TpModelWorker.forward_batch_generation",
              "AFTER", "after_forward_batch", values_only=True,
              requires="sglang.srt.managers.utils.GenerationBatchResult.forward_auxiliary_output"),
    HookPoint("commits", f"{_PROCESSOR}._build_auxiliary_commits", "AFTER", "after_commits"),
    HookPoint("consume", f"{_PROCESSOR}.consume_auxiliary_output", "AROUND", "around_consume"),
)
"""Every hook the guard may register, in the order it registers them."""
