"""SGLang main (after 0.5.23) on CPU: its forward-observer code, run inside a 0.5.23 process.

main is on no wheel, and nothing of its code is copied here: ``sglang_main/`` holds stand-ins
written for these tests (each names the repository, commit and path it models), keeping
main's interface (module paths, class, method and field names, the methods' signatures) and
the behaviour the guard depends on: ``GenerationBatchResult.copy_auxiliary_output_to_cpu``,
which copies the forward observer's output composed with the sampling one, and
``TpModelWorker.forward_batch_generation``, the one place main calls
``ForwardObserver.after_forward``. :func:`install_main` compiles those methods alone (:func:`~helpers.sglang_process.cut_class`) into a 0.5.23 process, whose
plugin loading, ``HookRegistry``, contract module, ``ModelRunner.sample`` and commit building
stay the release's own; :func:`main_tree` writes the source the guard reads at start-up.
"""

from __future__ import annotations

import itertools
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auxcheck._guard.settings import HOOKS
from auxcheck._runtime.scheduler import FakeBatch, SchedulerModel
from helpers.releases import write_release
from helpers.sglang_process import (
    ForwardBatch,
    GraphRunner,
    LogitsOutput,
    SGLangProcess,
    cut_class,
)

MAIN_COMMIT = "271536c900ff452be76e55fdc62844dc75f597a8"
"""The sgl-project/sglang commit the stand-ins under ``sglang_main/`` model."""

SOURCES = Path(__file__).parent / "sglang_main"
UTILS = "sglang/srt/managers/utils.py"
TP_WORKER = "sglang/srt/managers/tp_worker.py"
WORKER_CLASS = "sglang.srt.managers.tp_worker.TpModelWorker"
RESULT_CLASS = "sglang.srt.managers.utils.GenerationBatchResult"


def main_source(path: str) -> Path:
    """Returns the stored stand-in for main's file ``path`` (a path under ``sglang/``)."""
    return SOURCES / f"{path}.txt"


def main_tree(root: Path, base: Path) -> Path:
    """Writes, under ``root``, the source the guard reads in an SGLang main process; returns it.

    The files of the guard's hook targets are ``base``'s (0.5.23's: the same names in
    main), with the stand-ins for main's ``managers/utils.py`` and ``managers/tp_worker.py``
    over them.
    """
    files = {}
    for point in HOOKS:
        path = point.target.rsplit(".", 2)[0].replace(".", "/") + ".py"
        if (base / path).is_file():
            files[path] = (base / path).read_text(encoding="utf-8")
    for path in (UTILS, TP_WORKER):
        files[path] = main_source(path).read_text(encoding="utf-8")
    return write_release(root / f"main-{MAIN_COMMIT[:7]}", files)


@dataclass
class ModelRunnerOutput:
    """What main's ``ModelRunner.forward`` returns."""

    logits_output: LogitsOutput
    can_run_graph: bool


@dataclass
class MainForwardBatch(ForwardBatch):
    """A forward batch built the way ``forward_batch_generation`` builds it."""

    @classmethod
    def init_new(cls, batch: Any, model_runner: Any, **kwargs: Any) -> MainForwardBatch:
        """Returns the forward batch of schedule batch ``batch``."""
        return cls(len(batch.reqs))


def _new_result(cls: type, **fields: Any) -> Any:
    """Returns a GenerationBatchResult of the cut stand-in class, its dataclass defaults set."""
    result = cls()
    result.logits_output = None
    result.forward_auxiliary_output = None
    result.auxiliary_host_output = None
    for name, value in fields.items():
        setattr(result, name, value)
    return result


def install_main(process: SGLangProcess) -> None:
    """Puts the stand-ins for main's ``GenerationBatchResult`` and ``TpModelWorker`` into
    ``process``'s modules.

    Call it before ``load_plugins()``, so that ``HookRegistry`` patches main's methods.
    """
    results = cut_class(main_source(UTILS), "GenerationBatchResult",
                        ["copy_auxiliary_output_to_cpu"],
                        {"_async_d2h": process.async_d2h,
                         "append_auxiliary_output": process.contract.append_auxiliary_output})
    workers = cut_class(main_source(TP_WORKER), "TpModelWorker", ["forward_batch_generation"], {
        "ForwardBatch": MainForwardBatch,
        "GenerationBatchResult": lambda **fields: _new_result(results, **fields),
    })
    for name, attrs in {"sglang.srt.managers.utils": {"GenerationBatchResult": results},
                        "sglang.srt.managers.tp_worker": {"TpModelWorker": workers}}.items():
        module = types.ModuleType(name)
        for key, value in attrs.items():
            setattr(module, key, value)
        sys.modules[name] = process.modules[name] = module


def _forwarding(graph: GraphRunner) -> Callable[..., ModelRunnerOutput]:
    """Returns ``ModelRunner.forward`` as a decode graph replay: one step per call."""
    steps = itertools.count()

    def forward(forward_batch: MainForwardBatch, **kwargs: Any) -> ModelRunnerOutput:
        return ModelRunnerOutput(graph.replay(forward_batch.size, next(steps)), can_run_graph=True)

    return forward


class MainServer:
    """The overlap loop's steps in SGLang main: forward N (with ``after_forward``), sample N and
    copy N, then forward N+1, then step N is processed; the stand-ins' methods, as patched."""

    def __init__(self, process: SGLangProcess, forward_observer: Any, *,
                 sampling_observer: Any = None, size: int = 3) -> None:
        self.process = process
        self.graph = process.cls("sglang.srt.model_executor.runner.decode_cuda_graph_runner."
                                 "DecodeCudaGraphRunner")(process.pool)
        self.graph.capture()
        runner = process.model_runner(sampling_observer)
        runner.forward_observer = forward_observer
        runner.forward = _forwarding(self.graph)
        self.worker = process.cls(WORKER_CLASS)()
        self.worker.model_runner = runner
        self.batch: FakeBatch = SchedulerModel(seed=3).batch(size)
        self.hosts: list[Any] = []

    def run(self, steps: int) -> None:
        """Runs ``steps`` steps, each processed after the next one's forward and copy."""
        in_flight = None
        for step in range(steps + 1):
            current = self.forward() if step < steps else None
            if in_flight is not None:
                self.process_result(in_flight)
            in_flight = current

    def forward(self) -> Any:
        """Runs ``forward_batch_generation`` and starts the copy (the stand-ins for main's)."""
        result = self.worker.forward_batch_generation(self.batch)
        result.copy_auxiliary_output_to_cpu()
        result.copied = self.process.copies_in_flight()
        return result

    def process_result(self, result: Any) -> None:
        """``copy_done.synchronize()``, commit one token per request, consume."""
        self.process.process_result(self.batch, result, self.hosts)
