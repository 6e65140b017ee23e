"""Hostile hook targets against SGLang 0.5.23's real HookRegistry and real call sites, on CPU.

Runs inside auxcheck's CPU SGLang environment: ``python hostile_targets_driver.py MODEL
PLUGIN_ROOT``. The plugin's ``plug.hooks.register()`` runs inside SGLang's plugin-source
context, as ``load_plugins()`` does, ``HookRegistry.apply_hooks()`` patches SGLang's real
modules, and each hooked method is reached through the SGLang code that really calls it:

- ``ScheduleBatch.filter_batch``: called as ``schedule_policy.py`` calls it
  (``keep_indices=``) on a three-request batch; its real body then calls
  ``self.sampling_info.filter_batch(keep_indices, keep_indices_device)`` on a real
  ``SamplingBatchInfo`` (a method of the same name on another class);
- ``MistralDetector.parses_without_tools`` and ``KimiK2Detector.parses_without_tools``,
  classmethods both inherit from ``BaseFormatDetector``: the real
  ``FunctionCallParser.has_tool_call``, which calls them through the detector instance.

Prints one JSON object: hook name -> "ok" or the error SGLang's call raised.
"""

from __future__ import annotations

import json
import sys
import types
from unittest import mock

from real_sglang import apply_plugin_hooks, outcome, publish_cpu_context


def filter_three_requests() -> None:
    """The real ``ScheduleBatch.filter_batch`` keeping requests 0 and 2 of three."""
    import torch
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode
    from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo

    rows = 3
    batch = object.__new__(ScheduleBatch)
    batch.beam_tail = None
    batch.reqs = [types.SimpleNamespace(finished=lambda: False, return_logprob=False,
                                        grammar=None,
                                        return_hidden_states_mode=CaptureHiddenMode.NULL)
                  for _ in range(rows)]
    batch.device = "cpu"
    batch.model_config = types.SimpleNamespace(is_encoder_decoder=False)
    batch.multimodal_inputs = None
    batch.req_pool_indices = torch.arange(rows)
    batch.req_pool_indices_cpu = torch.arange(rows)
    batch.seq_lens = torch.ones(rows, dtype=torch.int64)
    batch.orig_seq_lens = torch.ones(rows, dtype=torch.int64)
    batch.input_ids = None
    batch.seq_lens_cpu = None
    batch.spec_info = None
    info = SamplingBatchInfo(
        temperatures=torch.ones(rows, 1), top_ps=torch.ones(rows),
        top_ks=torch.full((rows,), 8, dtype=torch.int32), min_ps=torch.zeros(rows),
        is_all_greedy=False, is_any_greedy=False, need_top_p_sampling=False,
        need_top_k_sampling=False, need_min_p_sampling=False, vocab_size=8, device="cpu")
    info.penalizer_orchestrator = mock.MagicMock()
    batch.sampling_info = info
    batch.filter_batch(keep_indices=[0, 2])  # as schedule_policy.py calls it
    if len(batch.reqs) != 2 or info.temperatures.shape[0] != 2:
        raise AssertionError("filter_batch did not filter the batch")


def main(model: str, root: str) -> None:
    publish_cpu_context(model)
    plugin = apply_plugin_hooks(root, "plug.hooks", "register", ("hooks", "hostile-plugin"))

    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    results = {
        "before_filter": outcome(filter_three_requests),
        "after_parses": outcome(lambda: FunctionCallParser([], "mistral").has_tool_call("x")),
        "replace_parses": outcome(
            lambda: FunctionCallParser([], "kimi_k2").has_tool_call("x")),
    }
    if results["before_filter"] == "ok" and plugin.CALLS != ["before_filter"]:
        results["before_filter"] = f"the hook did not run once: {plugin.CALLS}"
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
