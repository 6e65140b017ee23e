"""What the drivers need of SGLang 0.5.23 on CPU: its context, a plugin's hooks, a real sampler.

Imported by ``driver.py``, ``hooks_driver.py``, ``hostile_shapes_driver.py`` and
``hostile_targets_driver.py`` inside the CPU SGLang environment (they run as scripts from
this folder, which puts it on ``sys.path``), never by the suite's interpreter.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from typing import Any
from unittest import mock


def publish_cpu_context(model: str) -> None:
    """SGLang 0.5.23 reads its settings from a process-wide runtime context: a CPU one."""
    from sglang.srt.runtime_context import get_parallel, publish
    from sglang.srt.server_args import ServerArgs

    publish(ServerArgs(model_path=model, device="cpu", attention_backend="torch_native",
                       disable_cuda_graph=True, skip_server_warmup=True), role="scheduler")
    get_parallel().override_permanently(tp_group=types.SimpleNamespace(device_group=None))


def outcome(call: Callable[[], Any]) -> str:
    """Returns "ok", or ``"TypeName: message"`` of what ``call()`` raised."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - what the real call raises is the result
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def apply_plugin_hooks(root: str, module: str, entry: str, source: tuple[str, str]) -> Any:
    """Imports the plugin ``module`` from ``root`` and calls its ``entry()`` inside SGLang's
    plugin-source context ``source`` (entry-point name, distribution name), as
    ``load_plugins()`` calls a plugin; then ``HookRegistry.apply_hooks()`` patches SGLang's
    real modules. Returns the plugin module.
    """
    from sglang.srt.plugins.hook_registry import (
        HookRegistry,
        HookSource,
        _current_plugin_source,
    )

    sys.path.insert(0, root)
    token = _current_plugin_source.set(HookSource(*source))
    try:
        plugin = importlib.import_module(module)
        getattr(plugin, entry)()
    finally:
        _current_plugin_source.reset(token)
    HookRegistry.apply_hooks()
    return plugin


def sample(logits: Any, temperatures: Any, observer: Any = None) -> Any:
    """Runs SGLang's real ``ModelRunner.sample`` on ``logits`` (rows x vocabulary), ``observer`` installed.

    The runner is an attribute bag (``object.__new__``) whose methods are SGLang's; the
    observer goes through the real ``sampling_observer`` setter. Returns the sampled ids.
    """
    import torch
    from sglang.srt.layers.logits_processor import LogitsProcessorOutput
    from sglang.srt.layers.sampler import Sampler
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    from sglang.srt.model_executor.model_runner import ModelRunner
    from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    rows, vocab = logits.shape
    runner = object.__new__(ModelRunner)
    runner._sampling_observer = None
    runner.spec_algorithm = SpeculativeAlgorithm.NONE
    runner.sampler = Sampler()
    runner.watermark_state = None
    runner.ngram_embedding_manager = mock.MagicMock()
    if observer is not None:
        runner.sampling_observer = observer
    info = SamplingBatchInfo(
        temperatures=torch.as_tensor(temperatures, dtype=torch.float32)[:, None],
        top_ps=torch.ones(rows), top_ks=torch.full((rows,), vocab, dtype=torch.int32),
        min_ps=torch.zeros(rows), is_all_greedy=False, is_any_greedy=False,
        need_top_p_sampling=False, need_top_k_sampling=False, need_min_p_sampling=False,
        vocab_size=vocab, device="cpu")
    forward_batch = types.SimpleNamespace(
        sampling_info=info, return_logprob=False, top_logprobs_nums=None,
        token_ids_logprobs=None, forward_mode=ForwardMode.DECODE,
        positions=torch.zeros(rows, dtype=torch.int64),
        seq_lens=torch.ones(rows, dtype=torch.int64), req_pool_indices=torch.arange(rows))
    return runner.sample(LogitsProcessorOutput(next_token_logits=logits), forward_batch)
