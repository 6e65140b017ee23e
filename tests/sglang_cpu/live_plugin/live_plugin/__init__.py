"""A sampling-observer plugin as authors write them, for auxcheck's live tier (a real CPU server).

``register()`` (the ``sglang.srt.plugins`` entry point) hooks ``ModelRunner.initialize``
(AFTER: the hook gets the result, then the runner) to install the observer. Each step the
observer publishes the sampled ids' scores; every call SGLang makes is written as a JSON
line to ``LIVE_PLUGIN_LOG``. ``LIVE_PLUGIN_BUG`` plants one bug in every step, a request's
``custom_params={"bug": ...}`` in the steps that hold it:

- ``finished_len``: ``consume`` computes with ``finished_len`` for finished requests (an
  abort while running commits with ``finished_len`` None: the scheduler dies);
- ``reorder``: ``consume`` sorts ``batch.reqs`` in place (AUX203: the streamed order, and
  every later host output of a composite, see a different batch).
"""

from __future__ import annotations

import json
import os
from typing import Any

BUG = os.environ.get("LIVE_PLUGIN_BUG", "")


def _log(*event: Any) -> None:
    path = os.environ.get("LIVE_PLUGIN_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps([os.getpid(), *event]) + "\n")


class Host:
    def __init__(self, scores: Any) -> None:
        self.scores = scores

    def consume(self, batch: Any, commits: Any) -> None:
        _log("consume", [r.rid for r in batch.reqs],
             [None if c is None else [c.output_index, list(c.token_ids)] for c in commits],
             [r.finished() for r in batch.reqs], [r.finished_len for r in batch.reqs])
        rows = self.scores.tolist()
        bugs = {BUG} | {(r.sampling_params.custom_params or {}).get("bug", "") for r in batch.reqs}
        for req, commit, row in zip(batch.reqs, commits, rows):
            if commit is None:
                continue
            if "finished_len" in bugs and req.finished():
                row = row * (req.finished_len - commit.output_index)
            info = req.customized_info if req.customized_info is not None else {}
            info.setdefault("live_score", []).append(row)
            req.customized_info = info
        if "reorder" in bugs:
            batch.reqs.sort(key=lambda r: r.rid)


class Device:
    def __init__(self, scores: Any) -> None:
        self.scores = scores

    def copy_to_host(self, copy_tensor: Any) -> Host:
        _log("copy_to_host", len(self.scores))
        return Host(copy_tensor(self.scores))


class Observer:
    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: Any, sampling_info: Any) -> Any:
        _log("before_grammar", list(logits.shape))
        return logits.amax(dim=-1).clone()

    def after_sample(self, state: Any, token_ids: Any) -> Device:
        _log("after_sample", token_ids.tolist())
        return Device(state)


def _install(result: Any, runner: Any) -> None:
    runner.sampling_observer = Observer()
    _log("installed")


def register() -> None:
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    HookRegistry.register("sglang.srt.model_executor.model_runner.ModelRunner.initialize",
                          _install, HookType.AFTER)
