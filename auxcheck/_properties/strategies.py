"""The Hypothesis strategies of the contract's values, and the settings profiles.

:mod:`auxcheck.strategies` re-exports the public names; its docstring is the user's
documentation, and this module the implementation behind it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from auxcheck._core.errors import InvalidArgument
from auxcheck._core.plugin_calls import type_name
from auxcheck._core.protocols import CommittedTokens, append_auxiliary_output
from auxcheck._properties.drawing import Drawn, user_outputs
from auxcheck._runtime.recording import (
    Appended,
    Operand,
    RecordingDeviceOutput,
    RecordingHostOutput,
    build_operand,
    count_leaves,
    operand_leaves,
)
from auxcheck._runtime.scheduler import FakeBatch, FakeReq, build_commits, snapshot_output_starts

_DTYPES: tuple[torch.dtype, ...] = (
    torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8,
    torch.bool,
)
_LAYOUTS = ("contiguous", "transposed", "strided", "expanded")
_LABELS = ("a", "b", "c", "d")


def _check_range(name: str, low: int, high: int) -> None:
    if not 0 <= low <= high:
        raise InvalidArgument(
            f"{name}: got min={low}, max={high}; expected 0 <= min <= max"
        )


_SEEDS = st.integers(0, 2**16)
__LAYOUTS = st.sampled_from(_LAYOUTS)


@st.composite
def _tensors(draw: st.DrawFn, dtypes: st.SearchStrategy[torch.dtype],
             shapes: st.SearchStrategy[list[int]]) -> torch.Tensor:
    shape = draw(shapes)
    dtype = draw(dtypes)
    layout = draw(__LAYOUTS) if shape else "contiguous"
    generator = torch.Generator().manual_seed(draw(_SEEDS))
    if layout == "transposed":
        base = _filled(list(reversed(shape)), dtype, generator)
        return base.permute(*reversed(range(len(shape))))
    if layout == "strided":
        base = _filled(shape[:-1] + [2 * shape[-1]], dtype, generator)
        return base[..., ::2]
    if layout == "expanded":
        return _filled(shape[:-1] + [1], dtype, generator).expand(*shape)
    return _filled(shape, dtype, generator)


def _filled(shape: list[int], dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    values = torch.randint(0, 100, shape, generator=generator, dtype=torch.int64)
    return values.to(dtype)


def tensors(
    *,
    dtypes: Sequence[torch.dtype] | None = None,
    max_dims: int = 3,
    max_side: int = 4,
) -> st.SearchStrategy[torch.Tensor]:
    """Returns a strategy which generates small real CPU torch tensors.

    Shapes have up to ``max_dims`` dimensions of up to ``max_side`` elements (zero
    included, so zero-size tensors occur); layouts are contiguous, transposed,
    strided (every other element) and expanded (a zero stride). Every tensor owns
    fresh storage, so two drawn tensors never share bytes.
    """
    _check_range("tensors(max_dims=...)", 0, max_dims)
    _check_range("tensors(max_side=...)", 0, max_side)
    chosen = _DTYPES if dtypes is None else tuple(dtypes)
    if not chosen or not all(isinstance(d, torch.dtype) for d in chosen):
        raise InvalidArgument(f"tensors(dtypes={dtypes!r}): expected a non-empty list of torch.dtype")
    shapes = st.lists(st.integers(0, max_side), max_size=max_dims)
    return _tensors(st.sampled_from(chosen), shapes)


def device_outputs(
    *,
    leaves: st.SearchStrategy[Any] | None = None,
    max_tensors: int = 3,
) -> st.SearchStrategy[RecordingDeviceOutput]:
    """Returns a strategy which generates recording leaf device outputs.

    Each holds up to ``max_tensors`` tensors from :func:`tensors` and a label from a
    small alphabet (outputs with equal labels compare equal). ``leaves``, a strategy
    of your own device outputs, is mixed in: its values are wrapped so their copies
    and consumes are recorded while your ``copy_to_host`` and ``consume`` still run.
    """
    _check_range("device_outputs(max_tensors=...)", 0, max_tensors)
    own = st.builds(
        RecordingDeviceOutput, st.sampled_from(_LABELS), st.lists(tensors(), max_size=max_tensors)
    )
    if leaves is None:
        return own
    if not issubclass(type(leaves), st.SearchStrategy):
        raise InvalidArgument(
            f"device_outputs(leaves=<{type_name(leaves)} object>): expected a Hypothesis "
            "strategy of device outputs, e.g. st.builds(MyOutput, ...)"
        )
    return st.one_of(own, user_outputs(leaves).map(_recorded))


def _recorded(drawn: Drawn) -> RecordingDeviceOutput:
    return RecordingDeviceOutput(type_name(drawn.value).rpartition(".")[2], inner=drawn.value)


def host_outputs(
    *, leaves: st.SearchStrategy[Any] | None = None
) -> st.SearchStrategy[RecordingHostOutput]:
    """Returns a strategy which generates recording host outputs, copied from device outputs."""
    return device_outputs(leaves=leaves).map(lambda output: output.copy_to_host(torch.clone))


def _operands(leaves: st.SearchStrategy[Any] | None) -> st.SearchStrategy[Operand]:
    base: st.SearchStrategy[Operand] = st.none() | device_outputs(leaves=leaves)
    return st.recursive(
        base,
        lambda inner: st.lists(inner, max_size=3).map(lambda items: Appended(tuple(items))),
        max_leaves=6,
    )


@st.composite
def _append_sequences(draw: st.DrawFn, operands: st.SearchStrategy[list[Operand]],
                      leaves: st.SearchStrategy[RecordingDeviceOutput],
                      min_leaves: int) -> tuple[Operand, ...]:
    drawn = draw(operands)
    while count_leaves(drawn) < min_leaves:
        drawn.insert(draw(st.integers(0, len(drawn))), draw(leaves))
    own = [leaf for leaf in operand_leaves(Appended(tuple(drawn))) if leaf.inner is None]
    if own and draw(st.integers(0, 3)) == 0:  # the same object appended twice, now and then
        drawn.insert(draw(st.integers(0, len(drawn))), draw(st.sampled_from(own)))
    return tuple(drawn)


def append_sequences(
    *,
    leaves: st.SearchStrategy[Any] | None = None,
    min_leaves: int = 0,
    max_size: int = 4,
) -> st.SearchStrategy[tuple[Operand, ...]]:
    """Returns a strategy which generates sequences of operands to append, in order.

    An operand is None, a leaf output, or an :class:`Appended` group: the output
    built by appending its own operands, so already-composite operands occur on
    either side of an append. Build one with the implementation under test via
    ``build_operand(append, Appended(sequence))``. At least ``min_leaves`` leaves
    occur in all. Now and then one of auxcheck's own leaves occurs twice, as the very
    same object: append keeps both children, so an implementation that de-duplicates
    by identity is caught (a user's outputs from ``leaves`` are never repeated, since
    SGLang never copies one observer's output twice in a step).
    """
    _check_range("append_sequences(min_leaves=..., max_size=...)", 0, max_size)
    if min_leaves < 0:
        raise InvalidArgument(f"append_sequences(min_leaves={min_leaves}): expected >= 0")
    operands = st.lists(_operands(leaves), max_size=max_size)
    return _append_sequences(operands, device_outputs(leaves=leaves), min_leaves)


def auxiliary_outputs(
    *,
    leaves: st.SearchStrategy[Any] | None = None,
    append: Callable[[Any, Any], Any] | None = None,
) -> st.SearchStrategy[Any]:
    """Returns a strategy which generates None, leaf outputs, and composites built by appends.

    Composites are built with ``append`` (auxcheck's reference
    ``append_auxiliary_output`` by default) from an :func:`append_sequences` draw.
    """
    join = append_auxiliary_output if append is None else append
    return append_sequences(leaves=leaves).map(lambda ops: build_operand(join, Appended(ops)))


def committed_tokens() -> st.SearchStrategy[CommittedTokens]:
    """Returns a strategy which generates well-formed CommittedTokens (index >= 0, tokens non-empty)."""
    return st.builds(
        CommittedTokens,
        st.integers(0, 4096),
        st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=4).map(tuple),
    )


# True one time in five; shrinks towards False.
_RARELY = st.integers(0, 4).map(lambda n: n == 4)
_TOKENS = st.lists(st.integers(0, 999), max_size=3)


@st.composite
def _requests(draw: st.DrawFn, index: int) -> FakeReq:
    output_ids = draw(_TOKENS)
    finished_len = draw(st.integers(0, len(output_ids))) if draw(_RARELY) else None
    retracted = finished_len is None and draw(_RARELY)
    return FakeReq(f"r{index}", output_ids=output_ids, finished_len=finished_len,
                   is_retracted=retracted)


@st.composite
def _batches(draw: st.DrawFn, sizes: st.SearchStrategy[int]) -> FakeBatch:
    return FakeBatch([draw(_requests(index)) for index in range(draw(sizes))])


def batches(*, min_reqs: int = 0, max_reqs: int = 4) -> st.SearchStrategy[FakeBatch]:
    """Returns a strategy which generates fake schedule batches of fresh requests.

    Requests have a few output tokens already; some have finished (possibly with a
    visible length below ``len(output_ids)``) and some were retracted. An empty batch
    occurs when ``min_reqs`` is 0.
    """
    _check_range("batches(min_reqs=..., max_reqs=...)", min_reqs, max_reqs)
    return _batches(st.integers(min_reqs, max_reqs))


@dataclass(frozen=True, slots=True)
class Growth:
    """What happens to one request in one step: new tokens, then maybe finish, abort or retract.

    ``finish_cut`` (when set) finishes the request with a visible length that many
    tokens short of its output, but never below the visible length before the step.
    ``abort`` finishes it as an abort while it ran does in SGLang: its new tokens are
    committed all the same, and ``finished_len`` stays None. A retracted request, or one
    already finished, does not grow.
    """

    tokens: tuple[int, ...] = ()
    finish_cut: int | None = None
    retract: bool = False
    abort: bool = False

    def apply(self, req: FakeReq) -> None:
        """Grows ``req`` as this step says; leaves finished and retracted requests alone."""
        if req.finished() or req.is_retracted:
            return
        if self.retract:
            req.is_retracted = True
            return
        start = len(req.output_ids)
        req.output_ids.extend(self.tokens)
        if self.finish_cut is not None:
            req.finished_len = max(start, len(req.output_ids) - self.finish_cut)
            req.finished_reason = "stop"
        elif self.abort:
            req.finished_reason = "abort"


def growths() -> st.SearchStrategy[Growth]:
    """Returns a strategy which generates one request's growth in one step.

    Most steps add tokens; about one in five finishes the request, one in five of the
    others aborts it (its tokens committed, ``finished_len`` None) and one in five retracts
    it, so streams run for several steps.
    """
    cut = st.tuples(_RARELY, st.integers(0, 2)).map(lambda pair: pair[1] if pair[0] else None)
    return st.builds(
        Growth, st.lists(st.integers(0, 999), max_size=3).map(tuple), cut, _RARELY, _RARELY
    )


_GROWTHS = growths()


@dataclass(frozen=True, slots=True)
class CommitStep:
    """One scheduler step: the batch after it, and the commits aligned with ``batch.reqs``."""

    batch: FakeBatch
    commits: list[CommittedTokens | None]


@dataclass(frozen=True, slots=True)
class CommitStream:
    """A batch and the growth of each of its requests over several steps.

    :meth:`play` replays the steps on a fresh copy of the batch, so a stream can be
    played any number of times.
    """

    batch: FakeBatch
    steps: tuple[tuple[Growth, ...], ...]

    def play(self) -> Iterator[CommitStep]:
        """Yields each step's batch and commits, built exactly as SGLang's scheduler does."""
        batch = copy.deepcopy(self.batch)
        for step in self.steps:
            yield advance(batch, step)


def advance(batch: FakeBatch, step: Sequence[Growth]) -> CommitStep:
    """Returns the commits of one step: snapshot the starts, grow the requests, build commits.

    ``step`` gives one growth per request (missing ones mean no growth).
    """
    starts = snapshot_output_starts(batch)
    for req, growth in zip(batch.reqs, step):
        growth.apply(req)
    return CommitStep(batch, build_commits(batch, starts))


@st.composite
def _commit_streams(draw: st.DrawFn, batch_strategy: st.SearchStrategy[FakeBatch],
                    min_steps: int, max_steps: int) -> CommitStream:
    batch = draw(batch_strategy)
    size = len(batch.reqs)
    step = st.lists(_GROWTHS, min_size=size, max_size=size).map(tuple)
    return CommitStream(batch, tuple(draw(st.lists(step, min_size=min_steps, max_size=max_steps))))


def commit_streams(
    *,
    batches: st.SearchStrategy[FakeBatch] | None = None,
    min_steps: int = 1,
    max_steps: int = 4,
) -> st.SearchStrategy[CommitStream]:
    """Returns a strategy which generates batches whose requests grow over several steps.

    Play a stream with ``stream.play()`` to get each step's batch and the commits
    aligned with ``batch.reqs`` (None where nothing new became visible; finished
    and retracted requests included), built by ``auxcheck._runtime.scheduler.build_commits``.
    """
    _check_range("commit_streams(min_steps=..., max_steps=...)", min_steps, max_steps)
    batch_strategy = _batches(st.integers(0, 4)) if batches is None else batches
    return _commit_streams(batch_strategy, min_steps, max_steps)


# The explain phase (comments on which parts of a failing example matter) costs
# tens of seconds per failure on these nested examples, for little extra clarity.
_COMMON: dict[str, Any] = {
    "phases": tuple(phase for phase in Phase if phase is not Phase.explain),
    "deadline": None,
    "report_multiple_bugs": False,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
PROFILES: dict[str, dict[str, Any]] = {
    "auxcheck-default": {**_COMMON, "max_examples": 50, "stateful_step_count": 20},
    "auxcheck-ci": {
        **_COMMON, "max_examples": 100, "stateful_step_count": 20,
        "derandomize": True, "database": None, "print_blob": True,
    },
}
"""The settings of each auxcheck profile: a fast default, and a reproducible CI profile."""


def register_profiles() -> None:
    """Registers every auxcheck profile with Hypothesis (safe to call repeatedly)."""
    for name, options in PROFILES.items():
        settings.register_profile(name, **options)


def settings_for(name: str) -> settings:
    """Returns the settings of the auxcheck profile ``name``; InvalidArgument on an unknown name."""
    if name not in PROFILES:
        raise InvalidArgument(
            f"unknown auxcheck settings profile {name!r}; expected one of "
            f"{', '.join(PROFILES)}"
        )
    register_profiles()
    return settings.get_profile(name)


def resolve_profile(profile: str | settings) -> settings:
    """Returns the settings of ``profile``: an auxcheck profile, a user's, or a settings object.

    A name that is not an auxcheck profile is looked up among the profiles registered
    with Hypothesis; InvalidArgument names it when there is none. Every setting of a user's profile applies (examples, deadline, phases, database,
    step count), not just its example count.
    """
    if isinstance(profile, settings):
        return profile
    if profile in PROFILES:
        return settings_for(profile)
    try:
        return settings.get_profile(profile)
    except Exception:  # noqa: BLE001 - Hypothesis raises its own InvalidArgument
        raise InvalidArgument(
            f"unknown Hypothesis settings profile {profile!r}; expected one of "
            f"{', '.join(PROFILES)} or a profile registered with "
            "hypothesis.settings.register_profile"
        ) from None


def load_profile(name: str) -> settings:
    """Makes the auxcheck profile ``name`` Hypothesis's current settings and returns them."""
    chosen = settings_for(name)
    settings.load_profile(name)
    return chosen
