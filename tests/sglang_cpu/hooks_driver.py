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
import types
from typing import Any
from unittest import mock


def outcome(call: Any) -> str:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - what the real call raises is the result
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def main(model: str, root: str) -> None:
    import torch
    from sglang.srt.runtime_context import get_parallel, publish
    from sglang.srt.server_args import ServerArgs

    publish(ServerArgs(model_path=model, device="cpu", attention_backend="torch_native",
                       disable_cuda_graph=True, skip_server_warmup=True), role="scheduler")
    get_parallel().override_permanently(tp_group=types.SimpleNamespace(device_group=None))

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

    from sglang.srt.layers.logits_processor import LogitsProcessorOutput
    from sglang.srt.layers.moe.topk import TopK
    from sglang.srt.layers.sampler import Sampler
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    from sglang.srt.model_executor.model_runner import ModelRunner
    from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    results: dict[str, str] = {}

    def initialize() -> None:
        wrapper = ModelRunner.initialize
        original = wrapper.__wrapped__
        for cell in wrapper.__closure__ or ():  # the original would load a whole model
            if cell.cell_contents is original:
                cell.cell_contents = lambda self: None
        object.__new__(ModelRunner).initialize()  # as ModelRunner.__init__ calls it

    results["_install_observer"] = outcome(initialize)

    def sample() -> None:
        runner = object.__new__(ModelRunner)
        runner._sampling_observer = None
        runner.spec_algorithm = SpeculativeAlgorithm.NONE
        runner.sampler = Sampler()
        runner.watermark_state = None
        runner.ngram_embedding_manager = mock.MagicMock()
        info = SamplingBatchInfo(
            temperatures=torch.full((2, 1), 0.7), top_ps=torch.ones(2),
            top_ks=torch.full((2,), 16, dtype=torch.int32), min_ps=torch.zeros(2),
            is_all_greedy=False, is_any_greedy=False, need_top_p_sampling=False,
            need_top_k_sampling=False, need_min_p_sampling=False, vocab_size=16, device="cpu")
        forward_batch = types.SimpleNamespace(
            sampling_info=info, return_logprob=False, top_logprobs_nums=None,
            token_ids_logprobs=None, forward_mode=ForwardMode.DECODE,
            positions=torch.zeros(2, dtype=torch.int64), seq_lens=torch.ones(2, dtype=torch.int64),
            req_pool_indices=torch.arange(2))
        runner.sample(LogitsProcessorOutput(next_token_logits=torch.randn(2, 16)), forward_batch)

    results["_timed_sample"] = outcome(sample)

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
