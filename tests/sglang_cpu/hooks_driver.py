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
- the plugin's own call into SGLang, ``launched([])`` (``SchedulerInitResult(...)``);
- ``ModelRunner.__init__`` (AFTER): built as ``tp_worker.py`` builds it, by the keywords its
  ``ModelRunner(...)`` call passes (read from the installed source), the registry's real
  wrapper around an original that loads nothing;
- ``ServerArgs.__post_init__`` (AFTER): a real ``ServerArgs(...)`` is built; ``inert`` when
  the hook never ran;
- ``AuditedPrefixCache``: the plugin's ``BasePrefixCache`` subclass, instantiated.

Prints one JSON object: hook, call or class name -> "ok", "inert" or the error SGLang's
call raised.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import sys
from unittest import mock

from real_sglang import apply_plugin_hooks, outcome, publish_cpu_context, sample


def main(model: str, root: str) -> None:
    import torch

    publish_cpu_context(model)
    plugin = apply_plugin_hooks(root, "hook_plugin.hooks", "register", ("hooks", "hook-plugin"))

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

    def runner_init() -> None:
        wrapper = ModelRunner.__init__
        original = wrapper.__wrapped__
        for cell in wrapper.__closure__ or ():  # the original would load a whole model
            if cell.cell_contents is original:
                cell.cell_contents = lambda self, *args, **kwargs: None
        ModelRunner(**{name: None for name in _tp_worker_keywords()})

    results["_after_runner_init"] = outcome(runner_init)

    from sglang.srt.server_args import ServerArgs

    def server_args() -> str:
        ServerArgs(model_path=model, device="cpu", attention_backend="torch_native",
                   disable_cuda_graph=True, skip_server_warmup=True)
        return "ok" if plugin.TAGGED else "inert"

    built = outcome(server_args)
    results["ServerArgs.__post_init__"] = ("ok" if plugin.TAGGED else "inert") if (
        built == "ok") else built
    cache = importlib.import_module("hook_plugin.cache")
    results["AuditedPrefixCache"] = outcome(cache.AuditedPrefixCache)
    print(json.dumps(results))


def _tp_worker_keywords() -> list[str]:
    """Returns the keywords ``tp_worker.py``'s first ``ModelRunner(...)`` call passes."""
    from sglang.srt.managers import tp_worker

    tree = ast.parse(inspect.getsource(tp_worker))
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name) and node.func.id == "ModelRunner")
    assert not call.args, "tp_worker builds ModelRunner by keyword"
    return [k.arg for k in call.keywords if k.arg is not None]


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
