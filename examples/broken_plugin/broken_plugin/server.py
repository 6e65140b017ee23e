"""The entry point that puts one planted bug into a real server: the observer that reuses its buffer.

SGLang's ``load_plugins()`` calls :func:`register`; the hook gives each model runner a
``ReusingObserver``, whose outputs are views of one buffer it rewrites every step. With
overlap scheduling, step N+1 rewrites the rows step N published before SGLang consumed
them: ``auxcheck live`` reports the live guard's AUX112 on a real CPU server.
"""

from __future__ import annotations

from typing import Any

from sglang.srt.plugins.hook_registry import HookRegistry, HookType

from broken_plugin.outputs import ReusingObserver

RUNNER = "sglang.srt.model_executor.model_runner.ModelRunner"


def _after_runner_init(result: None, runner: Any) -> None:
    """Installs the reusing observer where SGLang calls it (``ModelRunner.sample``)."""
    runner.sampling_observer = ReusingObserver()


def register() -> None:
    """Registers the hook; SGLang calls it with no arguments."""
    HookRegistry.register(f"{RUNNER}.initialize", _after_runner_init, HookType.AFTER)
