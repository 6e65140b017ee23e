"""Hooks written against one SGLang release, as the public hook-based plugins are.

``auxcheck check examples/hook_plugin`` (the releases come from ``[tool.auxcheck]``)
judges each hook against what ``HookRegistry`` passes it in each release, and each call
into SGLang against that release's signature. Every break below was measured on a
public plugin; each comment says where it breaks and why.
"""

from __future__ import annotations

from typing import Any

from sglang.srt.entrypoints.engine import SchedulerInitResult
from sglang.srt.plugins.hook_registry import HookRegistry, HookType, plugin_hook

RUNNER = "sglang.srt.model_executor.model_runner.ModelRunner"
BATCH = "sglang.srt.managers.schedule_batch.ScheduleBatch"


def _install_observer(runner: Any) -> None:
    """Breaks on every release: an AFTER hook receives the result first, then ``self``."""


def _after_runner_init(result: Any, runner: Any, model_config: Any, mem_fraction_static: float,
                       gpu_id: int, ps: Any, nccl_port: int, server_args: Any,
                       **kwargs: Any) -> None:
    """Breaks on 0.5.23: ``ModelRunner`` lost ``ps``, and ``tp_worker.py`` builds it by
    keyword, so the hook misses a required argument."""


TAGGED: list[Any] = []


def _tag_server_args(result: Any, server_args: Any) -> None:
    """Never runs from 0.5.20: ``ServerArgs`` became a msgspec Struct, which calls the
    ``__post_init__`` it had when it was made, never the wrapper HookRegistry sets."""
    TAGGED.append(server_args)


def _own_swa_reclamation(original_fn: Any, batch: Any, req: Any, pre_len: int) -> None:
    """Breaks on 0.5.23, whose ``maybe_evict_swa`` passes ``eviction_interval=``."""
    original_fn(batch, req, pre_len)


def _timed_sample(original_fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Fits every release: an AROUND hook that passes everything on."""
    return original_fn(*args, **kwargs)


@plugin_hook("sglang.srt.layers.moe.topk.select_experts", type=HookType.REPLACE)
def select_experts(hidden_states: Any, router_logits: Any, topk_config: Any, *,
                   layer_id: int | None = None, num_token_non_padded: Any = None,
                   expert_location_dispatch_info: Any = None) -> Any:
    """Breaks on 0.5.23: its ``topk.py`` passes ``dynamic_expert_bias=`` to the function."""
    raise NotImplementedError


def launched(infos: list[dict[str, Any]]) -> Any:
    """Breaks on every release: the field is ``block_until_scheduler_exits``."""
    return SchedulerInitResult(scheduler_infos=infos, wait_for_completion=lambda: None)


def register() -> None:
    """Registers the hooks; SGLang's ``load_plugins()`` calls it with no arguments."""
    HookRegistry.register(f"{RUNNER}.initialize", _install_observer, HookType.AFTER)
    HookRegistry.register(f"{RUNNER}.__init__", _after_runner_init, HookType.AFTER)
    HookRegistry.register("sglang.srt.server_args.ServerArgs.__post_init__", _tag_server_args,
                          HookType.AFTER)
    HookRegistry.register(f"{RUNNER}.sample", _timed_sample, HookType.AROUND)
    HookRegistry.register(f"{BATCH}._evict_swa", _own_swa_reclamation, HookType.AROUND)
    # A kernel outside sglang: HookRegistry resolves any importable module. auxcheck reads
    # it from this environment when installed, and says it cannot tell when not.
    HookRegistry.register("sgl_kernel.flash_mla.flash_mla_with_kvcache", _timed_sample,
                          HookType.AROUND)
