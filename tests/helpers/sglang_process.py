"""An SGLang process on CPU, built from a real release's own code, for the oracle and guard tests.

SGLang cannot be installed here, and its runtime modules pull in its whole GPU stack.
What can be run for real is: the stdlib-only plugin modules (``sglang.srt.plugins``,
``hook_registry``, ``environ``), the contract module (torch only), and single methods
cut out of the large modules with ``ast`` (:func:`cut_class`), compiled alone with their
release's file name and lines. :func:`sglang_process` puts those, plus small stand-ins
for what they call (a sampler, a graph runner, ``_async_d2h``), into ``sys.modules`` under
the names SGLang uses, so ``load_plugins()`` and ``HookRegistry.apply_hooks()`` resolve
and patch them exactly as in a server; everything is put back afterwards.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import copy
import importlib
import sys
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch

from auxcheck._runtime.copying import DeferredCopy

CONTRACT_MODULE = "sglang.srt.managers.auxiliary_output"
PROCESSOR_FILE = "sglang/srt/managers/scheduler_components/batch_result_processor.py"
PROCESSOR_CLASS = "SchedulerBatchResultProcessor"
COMMIT_METHODS = ("_visible_output_len", "snapshot_auxiliary_output_starts",
                  "_build_auxiliary_commits", "consume_auxiliary_output")
UTILS_FILE = "sglang/srt/managers/utils.py"
RUNNER_FILE = "sglang/srt/model_executor/model_runner.py"
POOL_ID = (0, 7)
GRAPH_MEMORY = [
    pytest.param("view", "AUX111", "CUDA-graph pool segment 'SGLang graph pool segment 0x",
                 id="graph-output-in-the-pool"),
    pytest.param("shared", "AUX110", "static buffer 'GraphSharedOutput[0]'",
                 id="graph-shared-logits"),
    pytest.param("input", "AUX110", "static buffer 'DecodeCudaGraphRunner.buffers.positions'",
                 id="runner-input-buffer"),
]
"""(how an output keeps graph memory, the code the guard reports, the buffer it names):
each kind of graph memory SGLang keeps, caught at the copy."""


# ---------------------------------------------------------------- cutting methods out


def cut_class(path: Path, class_name: str, methods: Sequence[str],
              namespace: Mapping[str, Any], *,
              edit: Callable[[ast.ClassDef], None] | None = None) -> type:
    """Returns class ``class_name`` of file ``path`` holding only ``methods``, compiled alone.

    The methods keep their source lines (tracebacks point into the release's file),
    their decorators, and unevaluated annotations. ``edit`` may change the cut class's
    tree first (to plant a regression). Raises LookupError when a method is missing or
    uses a global name ``namespace`` does not give.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    found = next(node for node in ast.walk(tree)
                 if isinstance(node, ast.ClassDef) and node.name == class_name)
    defs = {node.name: node for node in found.body if isinstance(node, ast.FunctionDef)}
    missing = [name for name in methods if name not in defs]
    if missing:
        raise LookupError(f"{path} {class_name} defines no {', '.join(missing)}")
    cut = copy.copy(found)  # keeps the fields of this Python's ClassDef, bases dropped
    cut.bases, cut.keywords, cut.decorator_list = [], [], []
    cut.body = [copy.deepcopy(defs[name]) for name in methods]
    if edit is not None:
        edit(cut)
    unknown = _free_names(cut) - set(namespace) - set(vars(builtins)) - set(methods)
    if unknown:
        raise LookupError(f"{class_name} methods use {', '.join(sorted(unknown))}: give "
                          "stand-ins for them")
    module = ast.fix_missing_locations(ast.Module(body=[cut], type_ignores=[]))
    scope = dict(namespace)
    code = compile(module, str(path), "exec", flags=__future__.annotations.compiler_flag,
                   dont_inherit=True)
    exec(code, scope)  # noqa: S102 - the release's own source, read from its wheel
    result: type = scope[class_name]
    return result


def _free_names(node: ast.AST) -> set[str]:
    """Returns the names ``node`` reads but never binds (its globals), annotations left out."""
    hidden: set[int] = set()
    for sub in ast.walk(node):
        for annotation in (getattr(sub, "annotation", None), getattr(sub, "returns", None)):
            if annotation is not None:
                hidden.update(id(n) for n in ast.walk(annotation))
    names = [n for n in ast.walk(node) if isinstance(n, ast.Name) and id(n) not in hidden]
    binds = {n.id for n in names if isinstance(n.ctx, ast.Store)}
    binds |= {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}
    return {n.id for n in names if isinstance(n.ctx, ast.Load)} - binds


# ---------------------------------------------------------------- stand-ins


class SamplingInfo:
    """``SamplingBatchInfo`` as ``_preprocess_logits`` and ``sample`` read it: no bias, no mask."""

    has_watermark_candidates = False
    grammar_mask = None

    def update_regex_vocab_mask(self) -> None:
        """No grammar here."""

    def apply_logits_bias(self, logits: torch.Tensor) -> None:
        """No bias here."""

    def apply_logits_bias_with_observer(self, logits: torch.Tensor, observer: Any) -> Any:
        """Calls ``before_grammar`` as SGLang 0.5.23's does (no transform to apply here)."""
        return observer.before_grammar(logits, self)


class ForwardMode:
    """A decode step."""

    def is_decode(self) -> bool:
        """Always a decode step."""
        return True


@dataclass
class ForwardBatch:
    """What ``ModelRunner.sample`` reads of a forward batch."""

    size: int
    sampling_info: SamplingInfo = field(default_factory=SamplingInfo)
    forward_mode: ForwardMode = field(default_factory=ForwardMode)
    return_logprob: bool = False
    top_logprobs_nums: Any = None
    token_ids_logprobs: Any = None
    positions: Any = None
    seq_lens: Any = None


@dataclass
class LogitsOutput:
    """``LogitsProcessorOutput``'s fields the step reads."""

    next_token_logits: torch.Tensor
    auxiliary_device_output: Any = None


class _Sampler:
    def __call__(self, logits_output: LogitsOutput, *args: Any, **kwargs: Any) -> torch.Tensor:
        return logits_output.next_token_logits.argmax(dim=-1)


class _NgramManager:
    def update_after_decode(self, **kwargs: Any) -> None:
        """Nothing to update."""


@dataclass
class InputBuffers:
    """A graph runner's static inputs (``DecodeInputBuffers`` holds tensors like these)."""

    input_ids: torch.Tensor
    positions: torch.Tensor


class GraphRunner:
    """A CUDA-graph runner on CPU: capture makes static buffers and a pool-held output.

    ``replay`` rewrites the persistent output as a graph replay does and returns a
    ``[:n]`` view of it, as ``DecodeCudaGraphRunner.replay`` does.
    """

    def __init__(self, pool: Pool, *, max_bs: int = 8, vocab: int = 16) -> None:
        self.pool = pool
        self.max_bs = max_bs
        self.vocab = vocab
        self.calls = 0

    def capture(self) -> None:
        """Allocates the static input buffers and the output in the graph pool."""
        self.buffers = InputBuffers(torch.zeros(self.max_bs, dtype=torch.int64),
                                    torch.zeros(self.max_bs, dtype=torch.int64))
        self.output = self.pool.allocate((self.max_bs, self.vocab))

    def replay(self, n: int, step: int) -> LogitsOutput:
        """Writes step ``step``'s logits into the persistent output; returns its first rows."""
        generator = torch.Generator().manual_seed(step)
        self.output.copy_(torch.randn(self.output.shape, generator=generator))
        self.calls += 1
        return LogitsOutput(self.output[:n])


class Pool:
    """A graph memory pool on CPU: one segment, reported like ``torch.cuda.memory_snapshot``."""

    def __init__(self, numel: int = 4096) -> None:
        self.segment = torch.zeros(numel, dtype=torch.float32)
        self.used = 0

    def allocate(self, shape: tuple[int, int]) -> torch.Tensor:
        """Returns a tensor carved out of the pool's segment."""
        count = shape[0] * shape[1]
        tensor = self.segment[self.used:self.used + count].view(shape)
        self.used += count
        return tensor

    def segments(self) -> list[dict[str, Any]]:
        """Returns the pool's segments in ``torch.cuda.memory_snapshot()`` form."""
        storage = self.segment.untyped_storage()
        return [{"device": "cpu", "address": storage.data_ptr(),
                 "total_size": storage.nbytes(), "segment_pool_id": POOL_ID}]


# ---------------------------------------------------------------- the process


@dataclass
class SGLangProcess:
    """One SGLang process on CPU: real plugin loading, real hook application, real methods."""

    root: Path
    modules: dict[str, types.ModuleType] = field(default_factory=dict)
    copier: DeferredCopy = field(default_factory=DeferredCopy)
    pool: Pool = field(default_factory=Pool)
    shared_logits: dict[int, torch.Tensor] = field(
        default_factory=lambda: {0: torch.zeros(8, 16)})

    def async_d2h(self, tensor: torch.Tensor) -> torch.Tensor:
        """SGLang's ``_async_d2h`` on CPU: the copy in flight, read again at :meth:`synchronize`."""
        return self.copier(tensor)

    def copies_in_flight(self) -> DeferredCopy:
        """Returns the copies issued since the last call; ``complete()`` is their synchronize."""
        issued, self.copier = self.copier, DeferredCopy()
        return issued

    @property
    def hook_registry(self) -> Any:
        """Returns the release's real ``HookRegistry``."""
        return self.modules["sglang.srt.plugins.hook_registry"].HookRegistry

    @property
    def contract(self) -> types.ModuleType:
        """Returns the release's real ``auxiliary_output`` module."""
        return self.modules[CONTRACT_MODULE]

    def load_plugins(self) -> None:
        """Calls the release's real ``load_plugins()``: entry points, register(), apply_hooks()."""
        self.modules["sglang.srt.plugins"].load_plugins()

    def cls(self, target: str) -> Any:
        """Returns the (possibly patched) object at dotted ``target``."""
        module, _, name = target.rpartition(".")
        return getattr(sys.modules[module], name)

    def model_runner(self, observer: Any) -> Any:
        """Returns a ModelRunner running the release's own ``sample`` with ``observer``."""
        runner = self.cls("sglang.srt.model_executor.model_runner.ModelRunner")()
        runner.sampling_observer = observer
        runner.watermark_state = None
        runner.sampler = _Sampler()
        runner.ngram_embedding_manager = _NgramManager()
        return runner

    def result(self, logits_output: LogitsOutput) -> Any:
        """Returns a GenerationBatchResult for one step's logits output."""
        result = self.cls("sglang.srt.managers.utils.GenerationBatchResult")()
        result.logits_output = logits_output
        result.auxiliary_host_output = None
        return result

    @property
    def processor(self) -> Any:
        """Returns the release's ``SchedulerBatchResultProcessor`` (commit building, consume)."""
        return self.cls("sglang.srt.managers.scheduler_components.batch_result_processor."
                        f"{PROCESSOR_CLASS}")

    def process_result(self, batch: Any, result: Any, hosts: list[Any]) -> None:
        """Processes one step's ``result``, as SGLang does: ``copy_done.synchronize()``,
        one token committed per request of ``batch``, then consume (none when nothing was
        published); the host output consumed goes to ``hosts``."""
        result.copied.complete()
        processor = self.processor
        starts = processor.snapshot_auxiliary_output_starts(batch, result)
        for req in batch.reqs:
            req.output_ids.append(len(req.output_ids) + 100)
        host = result.auxiliary_host_output
        if host is not None:
            hosts.append(host)
            processor.consume_auxiliary_output(batch, host, starts)


class PublishingObserver:
    """A sampling observer; ``publish`` makes the device output from the logits it saw."""

    def __init__(self, publish: Any) -> None:
        self.publish = publish

    def is_active(self, sampling_info: Any) -> bool:
        """Always active."""
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> torch.Tensor:
        """Keeps the logits as its state."""
        return logits

    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Any:
        """Publishes what ``publish`` makes of the logits."""
        return self.publish(state)


def _module(name: str, *, package: bool = False, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    if package:
        module.__path__ = []
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


@contextmanager
def sglang_process(root: Path, *, edit_commits: Callable[[ast.ClassDef], None] | None = None
                   ) -> Iterator[SGLangProcess]:
    """Yields an SGLang process built from the release unpacked at ``root``.

    ``sglang/__init__.py`` never runs; the real plugin and contract modules are imported
    from ``root``; ``GenerationBatchResult.copy_auxiliary_output_to_cpu``,
    ``ModelRunner._preprocess_logits``/``sample`` and the commit-building methods are the
    release's own, cut out of their files. Every ``sglang`` entry of ``sys.modules`` is
    put back afterwards.
    """
    with sglang_namespace(root):
        yield _build(root, edit_commits)


@contextmanager
def sglang_namespace(root: Path) -> Iterator[None]:
    """Makes ``import sglang...`` read ``root/sglang`` without running ``sglang/__init__.py``.

    Every ``sglang`` entry of ``sys.modules``, whatever imported it meanwhile, is put
    back as it was afterwards.
    """
    saved = {name: mod for name, mod in sys.modules.items()
             if name == "sglang" or name.startswith("sglang.")}
    for name in saved:
        del sys.modules[name]
    sys.modules["sglang"] = _module("sglang", package=True)
    sys.modules["sglang"].__path__ = [str(root / "sglang")]
    try:
        yield
    finally:
        for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def _build(root: Path, edit_commits: Callable[[ast.ClassDef], None] | None) -> SGLangProcess:
    process = SGLangProcess(root)
    modules = process.modules
    modules.update({name: importlib.import_module(name) for name in (
        "sglang.srt.plugins", "sglang.srt.plugins.hook_registry", CONTRACT_MODULE)})
    contract = modules[CONTRACT_MODULE]
    stand_ins = {
        "sglang.srt.managers.utils": {"GenerationBatchResult": cut_class(
            root / UTILS_FILE, "GenerationBatchResult", ["copy_auxiliary_output_to_cpu"],
            {"_async_d2h": process.async_d2h})},
        "sglang.srt.managers.scheduler_components.batch_result_processor": {
            PROCESSOR_CLASS: cut_class(root / PROCESSOR_FILE, PROCESSOR_CLASS, COMMIT_METHODS,
                                       {"CommittedTokens": contract.CommittedTokens},
                                       edit=edit_commits)},
        "sglang.srt.model_executor.model_runner": {"ModelRunner": cut_class(
            root / RUNNER_FILE, "ModelRunner", ["_preprocess_logits", "sample"], {})},
        "sglang.srt.model_executor.runner.decode_cuda_graph_runner": {
            "DecodeCudaGraphRunner": type("DecodeCudaGraphRunner", (GraphRunner,), {})},
        "sglang.srt.model_executor.runner.prefill_cuda_graph_runner": {
            "PrefillCudaGraphRunner": type("PrefillCudaGraphRunner", (GraphRunner,), {})},
        "sglang.srt.model_executor.runner_utils.pool": {
            "get_global_graph_memory_pool": lambda: POOL_ID},
        "sglang.srt.model_executor.graph_shared_output": {"GraphSharedOutput": type(
            "GraphSharedOutput", (), {"_process_shared": types.SimpleNamespace(
                _logits_buffers=process.shared_logits)})},
    }
    for package in ("sglang.srt.managers.scheduler_components", "sglang.srt.model_executor",
                    "sglang.srt.model_executor.runner", "sglang.srt.model_executor.runner_utils"):
        sys.modules[package] = _module(package, package=True)
    for name, attrs in stand_ins.items():
        sys.modules[name] = modules[name] = _module(name, **attrs)
    return process
