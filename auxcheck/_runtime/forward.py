"""One forward pass as observers see it: the batch, sampling info, logits and CUDA-graph outputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from auxcheck._core.report import Finding
from auxcheck._runtime.scheduler import FakeBatch, FakeForwardMode

if TYPE_CHECKING:
    from auxcheck._runtime.static_buffers import StaticBufferRegistry

__all__ = [
    "FakeForwardBatch",
    "FakeForwardMode",
    "FakeGrammar",
    "FakeLogitsOutput",
    "FakeSamplingInfo",
    "Forward",
    "GraphOutputs",
]

@dataclass(slots=True)
class FakeGrammar:
    """A request's grammar (``BaseGrammarObject``): it allows the lower half of the vocabulary."""

    finished: bool = False

    def is_terminated(self) -> bool:
        """Returns False: the model's grammars never terminate a request."""
        return False


@dataclass(slots=True)
class FakeSamplingInfo:
    """The ``SamplingBatchInfo`` fields observers read, one row per request."""

    temperatures: Any
    top_ps: Any
    top_ks: Any
    min_ps: Any
    vocab_size: int
    is_all_greedy: bool = False
    need_min_p_sampling: bool = False
    device: str = "cpu"
    grammars: list[Any] | None = None
    custom_params: list[dict[str, Any] | None] | None = None
    logit_bias: Any = None


@dataclass(slots=True)
class FakeLogitsOutput:
    """``LogitsProcessorOutput``: views of the graph's persistent outputs on decode steps."""

    next_token_logits: Any
    hidden_states: Any
    auxiliary_device_output: Any = None
    customized_info: Any = None


@dataclass(slots=True)
class FakeForwardBatch:
    """``ForwardBatch``: what ``after_forward`` reads besides the logits output."""

    batch_size: int
    forward_mode: FakeForwardMode
    seq_lens: Any
    positions: Any
    req_pool_indices: Any
    sampling_info: FakeSamplingInfo


@dataclass(frozen=True, slots=True)
class Forward:
    """One forward pass: the live batch, and what the model runner hands the observers."""

    step: int
    batch: FakeBatch
    forward_batch: FakeForwardBatch
    logits_output: FakeLogitsOutput
    can_run_graph: bool
    noted: list[Finding] = field(default_factory=list)
    """What the producer found that does not stop the step (AUX113): the loop keeps it as
    its own findings, each code from the first step that shows it."""


class GraphOutputs:
    """The persistent outputs a decode CUDA graph replays into, rewritten on every replay."""

    def __init__(self, *, max_rows: int, vocab: int = 32, hidden: int = 16, seed: int = 0) -> None:
        import torch

        self._generator = torch.Generator().manual_seed(seed)
        self.logits = torch.empty(max(max_rows, 1), vocab)
        self.hidden = torch.empty(max(max_rows, 1), hidden)
        self.replay()

    def replay(self) -> None:
        """Rewrites every persistent output, as the next replay of the graph does."""
        self.logits.normal_(generator=self._generator)
        self.hidden.normal_(generator=self._generator)

    def registry(self) -> StaticBufferRegistry:
        """Returns a registry holding the graph's outputs (AUX110 when a device output keeps them)."""
        from auxcheck._runtime.static_buffers import StaticBufferRegistry

        registry = StaticBufferRegistry()
        registry.register(self.logits, name="CUDA-graph output next_token_logits")
        registry.register(self.hidden, name="CUDA-graph output hidden_states")
        return registry

    def forward(self, step: int, batch: FakeBatch, *, grammar: bool = False) -> Forward:
        """Returns forward ``step`` of ``batch``: a replay (views) after the first, eager prefill.

        ``grammar`` gives the first request a grammar (``sampling_info.grammars``).
        """
        import torch

        n = len(batch.reqs)
        decode = step > 0
        if decode:
            self.replay()
            logits, hidden = self.logits[:n], self.hidden[:n]
        else:
            logits = torch.randn(n, self.logits.shape[1], generator=self._generator)
            hidden = torch.randn(n, self.hidden.shape[1], generator=self._generator)
        info = FakeSamplingInfo(torch.full((n, 1), 0.7), torch.full((n,), 0.9),
                                torch.full((n,), 20, dtype=torch.int32), torch.zeros(n),
                                int(logits.shape[1]))
        if grammar and n:
            info.grammars = [FakeGrammar(), *([None] * (n - 1))]
        lens = torch.tensor([len(r.origin_input_ids) + len(r.output_ids) for r in batch.reqs],
                            dtype=torch.int64)
        forward_batch = FakeForwardBatch(n, FakeForwardMode("DECODE" if decode else "EXTEND"),
                                         lens, lens - 1, torch.arange(n), info)
        return Forward(step, batch, forward_batch, FakeLogitsOutput(logits, hidden), decode)

