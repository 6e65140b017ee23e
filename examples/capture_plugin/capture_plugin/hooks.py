"""The plugin's entry point: hooks SGLang's scheduler the way SpecForge's capture plugin does.

SGLang's ``load_plugins()`` calls :func:`register` once per process (the
``sglang.srt.plugins`` entry point in ``pyproject.toml``), then applies the hooks.
``auxcheck check --sglang`` proves that every target below exists in each release
listed under ``[tool.auxcheck] sglang``: a renamed method would otherwise only show
up as a log line at server start.
"""

from __future__ import annotations

from typing import Any

from sglang.srt.plugins.hook_registry import HookRegistry, HookType

from capture_plugin.outputs import make_observer

SCHEDULER = "sglang.srt.managers.scheduler.Scheduler"
RUNNER = "sglang.srt.model_executor.model_runner.ModelRunner"

INSTALLED: list[Any] = []
"""The observers installed in this process, one per scheduler."""


def _after_init(result: None, scheduler: Any, *args: Any, **kwargs: Any) -> None:
    """Gives each new scheduler its own hidden-state observer."""
    observer = make_observer()
    INSTALLED.append(observer)
    scheduler.auxcheck_capture_observer = observer


def _after_runner_init(result: None, runner: Any) -> None:
    """Installs the observer where SGLang calls it: ``ModelRunner.sample`` reads
    ``runner.sampling_observer`` each step (``auxcheck live`` watches it run)."""
    runner.sampling_observer = make_observer()


def _after_streamer_class(result: type, scheduler: Any, *args: Any, **kwargs: Any) -> type:
    """Keeps SGLang's streamer class: the captured rows travel in ``req.customized_info``."""
    return result


def register() -> None:
    """Registers the scheduler hooks; SGLang calls it with no arguments."""
    HookRegistry.register(f"{SCHEDULER}.__init__", _after_init, HookType.AFTER)
    HookRegistry.register(f"{SCHEDULER}.get_output_streamer_class", _after_streamer_class,
                          HookType.AFTER)
    HookRegistry.register(f"{RUNNER}.initialize", _after_runner_init, HookType.AFTER)
