"""examples/hook_plugin against SGLang 0.5.23's real HookRegistry and real call sites, on CPU.

Runs inside auxcheck's CPU SGLang environment: ``python hooks_driver.py MODEL PLUGIN_ROOT``.
The plugin's module is imported (its ``@plugin_hook`` registers at import) and its
``register()`` called inside SGLang's plugin-source context, as ``load_plugins()`` does;
``HookRegistry.apply_hooks()`` patches SGLang's real modules; then each hooked function is
reached through the SGLang code that really calls it, with the arguments that code passes:

- ``ModelRunner.initialize`` (AFTER): ``ModelRunner.__init__`` calls ``self.initialize()``;
  the registry's real wrapper runs, around an original that loads no model;
- ``ModelRunner.sample`` (AROUND): the real ``ModelRunner.sample`` on real logits;
- ``ScheduleBatch._evict_swa`` (AROUND): the real ``ScheduleBatch.maybe_evict_swa``;
- ``select_experts`` (REPLACE): the real ``TopK.forward_native``;
- the plugin's own call into SGLang, ``launched([])`` (``SchedulerInitResult(...)``).

Prints one JSON object: hook or call name -> "ok" or the error SGLang's call raised.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any
from unittest import mock

from real_sglang import publish_cpu_context, sample


def outcome(call: Any) -> str:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - what the real call raises is the result
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def main(model: str, root: str) -> None:
    import torch

    publish_cpu_context(model)

    from sglang.srt.plugins.hook_registry import (
        HookRegistry,
        HookSource,
        _current_plugin_source,
    )

    sys.path.insert(0, root)
    token = _current_plugin_source.set(HookSource("hooks", "hook-plugin"))
    try:
        plugin = importlib.import_module("hook_plugin.hooks")
        plugin.register()
    finally:
        _current_plugin_source.reset(token)
    HookRegistry.apply_hooks()

    from sglang.srt.layers.moe.topk import TopK
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    from sglang.srt.model_executor.model_runner import ModelRunner

    results: dict[str, str] = {}

    def initialize() -> None:
        wrapper = ModelRunner.initialize
        original = wrapper.__wrapped__
        for cell in wrapper.__closure__ or ():  # the original would load a whole model
            if cell.cell_contents is original:
                cell.cell_contents = lambda self: None
        object.__new__(ModelRunner).initialize()  # as ModelRunner.__init__ calls it

    results["_install_observer"] = outcome(initialize)

    results["_timed_sample"] = outcome(lambda: sample(torch.randn(2, 16), [0.7, 0.7]))

    def evict() -> None:
        batch = object.__new__(ScheduleBatch)
        batch.tree_cache = mock.MagicMock(swa_retain_window=4)
        batch.tree_cache.supports_swa.return_value = True
        batch.tree_cache.supports_auxiliary_swa.return_value = True
        batch.token_to_kv_pool_allocator = mock.MagicMock()
        batch.forward_mode = ForwardMode.DECODE
        req = mock.MagicMock(decode_batch_idx=3, seqlen=10)
        req.kv.holds_kv = True
        batch.reqs = [req]
        batch.maybe_evict_swa()

    results["_own_swa_reclamation"] = outcome(evict)
    results["select_experts"] = outcome(lambda: TopK(top_k=2, layer_id=0, renormalize=True)
                                        .forward_native(torch.randn(3, 8), torch.randn(3, 4)))
    results["SchedulerInitResult"] = outcome(lambda: plugin.launched([]))
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
