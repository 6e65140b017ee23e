"""Tests for AUX113 (auxcheck/_runtime/handed.py and the producers in observer_hooks.py): an
observer's hook that writes to a tensor SGLang handed it.

SGLang passes the very tensors it hands the hooks on (``apply_logits_bias_with_observer``
masks and biases the logits ``before_grammar`` saw, the sampler scales them; the sampled
ids are committed; the logits output feeds sampling), so a write there changes what every
request samples. Two tables: observers that write there, and observers that must pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from auxcheck._runtime.handed import hold, written
from auxcheck.report import Finding, Report
from auxcheck.validate import check_forward_observer, check_sampling_observer

Copy = Callable[[torch.Tensor], torch.Tensor]


class RowsHost:
    """A correct host output that keeps its copy and reads nothing else."""

    def __init__(self, rows: torch.Tensor) -> None:
        self.rows = rows

    def consume(self, batch: Any, commits: Any) -> None:
        return None


class Rows:
    """A correct device output owning its rows."""

    def __init__(self, rows: torch.Tensor) -> None:
        self.rows = rows

    def copy_to_host(self, copy_tensor: Copy) -> RowsHost:
        return RowsHost(copy_tensor(self.rows))


class Sampling:
    """A correct sampling observer: reads the logits, publishes a clone of the top two."""

    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> Any:
        return logits.topk(2, dim=-1).values.clone()

    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Any:
        return Rows(torch.cat([state, token_ids.float()[:, None]], dim=1))


class TopKMasking(Sampling):
    """The measured bug: top-k masking in place, so every request samples top-k."""

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> Any:
        kth = logits.topk(5, dim=-1).values[:, -1:]
        logits.masked_fill_(logits < kth, float("-inf"))
        return super().before_grammar(logits, sampling_info)


class TopKOnAClone(Sampling):
    """The fix: the same masking on a clone of the logits."""

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> Any:
        masked = logits.clone()
        kth = masked.topk(5, dim=-1).values[:, -1:]
        masked.masked_fill_(masked < kth, float("-inf"))
        return masked.topk(2, dim=-1).values.clone()


class ResizesLogits(Sampling):
    """Resizes the logits in place: the sampler can no longer run on them."""

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> Any:
        logits.resize_(0)
        return None


class ScalesTemperatures(Sampling):
    """Writes to the sampling info SGLang handed it (every request gets temperature 1)."""

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> Any:
        sampling_info.temperatures.fill_(1.0)
        return super().before_grammar(logits, sampling_info)


class RewritesTokenIds(Sampling):
    """Overwrites the sampled ids in place: SGLang commits what it wrote."""

    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Any:
        token_ids.clamp_(max=3)
        return super().after_sample(state, token_ids)


class OwnBuffer(Sampling):
    """Writes only to tensors of its own: the state SGLang hands back, and a fresh buffer."""

    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Any:
        state.mul_(2)  # made by before_grammar: SGLang only carries it to after_sample
        buffer = torch.zeros(token_ids.shape[0], 3)
        buffer[:, :2] = state
        buffer[:, 2] = token_ids.float()
        buffer.mul_(2)
        return Rows(buffer)


class Forward:
    """A correct forward observer: clones the hidden states it publishes."""

    def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any, *,
                      can_run_graph: bool) -> Any:
        return Rows(logits_output.hidden_states.clone())


class ScalesHidden(Forward):
    def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any, *,
                      can_run_graph: bool) -> Any:
        logits_output.hidden_states.mul_(2)
        return super().after_forward(batch, forward_batch, logits_output,
                                     can_run_graph=can_run_graph)


class BiasesNextTokenLogits(Forward):
    def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any, *,
                      can_run_graph: bool) -> Any:
        logits_output.next_token_logits[:, 0] += 100.0
        return super().after_forward(batch, forward_batch, logits_output,
                                     can_run_graph=can_run_graph)


class BumpsSeqLens(Forward):
    def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any, *,
                      can_run_graph: bool) -> Any:
        forward_batch.seq_lens.add_(1)
        return super().after_forward(batch, forward_batch, logits_output,
                                     can_run_graph=can_run_graph)


def _observe(observer: Any) -> Report:
    if hasattr(observer, "after_forward"):
        return check_forward_observer(observer)
    return check_sampling_observer(observer)


@pytest.mark.parametrize(("observer", "name", "call"), [
    pytest.param(TopKMasking(), "logits", "before_grammar at step 1", id="masked-fill-logits"),
    pytest.param(ScalesTemperatures(), "sampling_info.temperatures", "before_grammar at step 1",
                 id="sampling-info-temperatures"),
    pytest.param(RewritesTokenIds(), "token_ids", "after_sample at step 1",
                 id="token-ids-in-after-sample"),
    pytest.param(ScalesHidden(), "logits_output.hidden_states", "after_forward at step 1",
                 id="logits-output-hidden-states"),
    pytest.param(BiasesNextTokenLogits(), "logits_output.next_token_logits",
                 "after_forward at step 1", id="logits-output-next-token-logits"),
    pytest.param(BumpsSeqLens(), "forward_batch.seq_lens", "after_forward at step 1",
                 id="forward-batch-seq-lens"),
])
def test_a_hook_writing_to_what_sglang_handed_it_is_aux113(observer: Any, name: str,
                                                           call: str) -> None:
    """The write is AUX113 alone, naming the call and the tensor as SGLang passes it."""
    report = _observe(observer)
    assert report.codes == ["AUX113"], report.to_text()
    [finding] = report.findings
    assert finding.summary.startswith(f"{call} wrote to `{name}` ")
    assert "values changed" in finding.summary or "value changed" in finding.summary
    assert finding.expected is not None
    assert finding.expected.startswith("expected the observer to leave what SGLang handed it")
    assert finding.obj is observer


@pytest.mark.parametrize("observer", [
    pytest.param(Sampling(), id="reads-and-clones"),
    pytest.param(TopKOnAClone(), id="masks-a-clone-of-the-logits"),
    pytest.param(OwnBuffer(), id="writes-only-its-own-buffers"),
    pytest.param(Forward(), id="forward-observer-that-clones"),
])
def test_an_observer_that_leaves_what_it_was_handed_alone_passes(observer: Any) -> None:
    """Reading, cloning and editing clones or buffers of its own is no finding."""
    assert _observe(observer).findings == []


def test_the_masking_observer_is_reported_with_the_count_of_values_it_masked() -> None:
    """The message says how many of the logits' values the hook changed."""
    finding = check_sampling_observer(TopKMasking(), batch_size=3).findings[0]
    assert finding.message.startswith(
        "before_grammar at step 1 wrote to `logits` [3, 32] float32: 81 of 96 values changed; "
        "expected the observer to leave what SGLang handed it as it was: SGLang passes the "
        "same tensor on (grammar mask, sampler)")
    assert finding.hint.startswith("`clone()` before editing")


def test_the_loop_goes_on_after_aux113_and_keeps_the_first_step() -> None:
    """AUX113 does not stop the observer: it publishes every step; one step's findings kept."""
    published: list[int] = []
    from auxcheck._runtime.observer_hooks import check_observers, sampling_producer

    report = check_observers(sampling_producer(TopKMasking()), subject="s", batch_size=2,
                             steps=4, published=published)
    assert published == [0, 1, 2, 3]
    assert [f.summary.split(" wrote")[0] for f in report] == ["before_grammar at step 1"]


def test_a_hook_writing_to_several_handed_tensors_gets_one_finding_each() -> None:
    """Each tensor a hook wrote to is named, in the order SGLang passes them."""
    class Both(ScalesHidden):
        def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any, *,
                          can_run_graph: bool) -> Any:
            forward_batch.positions.zero_()
            return super().after_forward(batch, forward_batch, logits_output,
                                         can_run_graph=can_run_graph)

    names = [f.summary.split("`")[1] for f in check_forward_observer(Both())]
    assert names == ["forward_batch.positions", "logits_output.hidden_states"]


def test_a_forward_and_a_sampling_observer_are_both_watched() -> None:
    """With a sampling observer behind the forward one, each hook's writes are its own."""
    report = check_forward_observer(Forward(), sampling_observer=RewritesTokenIds())
    assert [f.summary.split(" wrote")[0] for f in report] == ["after_sample at step 1"]


def test_a_resized_logits_tensor_is_aux113_naming_the_shape_and_the_failed_sampler() -> None:
    """A resize_ that leaves the sampler unable to run is the hook's write, not AUX102."""
    report = check_sampling_observer(ResizesLogits(), batch_size=3)
    assert report.codes == ["AUX113"]
    [finding] = report.findings
    assert finding.summary.startswith(
        "before_grammar at step 1 changed `logits` from [3, 32] float32 to [0] float32 in "
        "place, and the sampler could not run after it: RuntimeError")
    assert "RuntimeError" in (finding.detail or "")


def test_the_sampler_s_own_scaling_of_the_logits_is_not_the_hook_s_write() -> None:
    """The logits are compared before the sampler's in-place div_, and replays are the loop's."""
    class KeepsLogits(Sampling):
        def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> Any:
            return logits  # the sampler scales it after the call: not the hook's write

        def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Any:
            return None

    assert check_sampling_observer(KeepsLogits(), steps=6).findings == []


# ---------------------------------------------------------------- hold and compare


def _after(tensor: torch.Tensor, edit: Callable[[torch.Tensor], object]) -> list[Finding]:
    held = hold([("logits", tensor)])
    edit(tensor)
    return written(held, "before_grammar at step 2", "grammar mask, sampler", None)


NAN_LOGITS = [float("nan"), 1.0, float("-inf"), 2.0]


@pytest.mark.parametrize("edit", [
    pytest.param(lambda t: None, id="left-alone"),
    pytest.param(lambda t: t.copy_(t.clone()), id="rewritten-with-the-same-bits"),
    pytest.param(lambda t: t.max(), id="only-read"),
])
def test_nan_logits_left_alone_are_no_finding(edit: Callable[[torch.Tensor], object]) -> None:
    """Values compare bitwise: NaN is equal to itself."""
    assert _after(torch.tensor([NAN_LOGITS]), edit) == []


@pytest.mark.parametrize(("edit", "seen"), [
    pytest.param(lambda t: t.nan_to_num_(), "wrote to `logits` [1, 4] float32: 2 of 4 values "
                 "changed", id="nan-replaced"),
    pytest.param(lambda t: t.t_(), "changed `logits` from [1, 4] float32 to [4, 1] float32 "
                 "in place", id="transposed-in-place"),
    pytest.param(lambda t: t.set_(torch.zeros(2)), "changed `logits` from [1, 4] float32 to "
                 "[2] float32 in place", id="set-to-other-storage"),
])
def test_an_edit_of_held_logits_says_what_changed(edit: Callable[[torch.Tensor], object],
                                                  seen: str) -> None:
    """A changed value, shape or storage is named with the call and the tensor."""
    [finding] = _after(torch.tensor([NAN_LOGITS]), edit)
    assert finding.summary == f"before_grammar at step 2 {seen}"


def test_a_tensor_reachable_twice_is_held_once_under_its_first_name() -> None:
    """The walk's paths name the tensors; one tensor reached twice is compared once."""
    shared = torch.ones(2)

    class Info:
        def __init__(self) -> None:
            self.temperatures = shared
            self.again = [shared]

    names = [h.name for h in hold([("logits", shared), ("sampling_info", Info())])]
    assert names == ["logits"]
