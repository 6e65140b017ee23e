"""The live-server guard on SGLang main's forward observer, judged on stand-ins modelling main.

SGLang main (after 0.5.23) copies ``append_auxiliary_output(forward_auxiliary_output,
logits_output.auxiliary_device_output)``: the forward observer's output first, then the
sampling observer's. Each test runs a 0.5.23 process on CPU (``sglang_process.py``) with
stand-ins for main's ``copy_auxiliary_output_to_cpu`` and
``TpModelWorker.forward_batch_generation``, written for these tests under
``helpers/sglang_main/`` (``sglang_main.py``) with main's signatures and fields, patched by
0.5.23's real ``HookRegistry``; the guard reads the stand-ins' source at start-up.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers.releases import real_tree
from helpers.sglang_main import WORKER_CLASS, MainServer, install_main, main_tree
from helpers.sglang_process import (
    GRAPH_MEMORY,
    PublishingObserver,
    SGLangProcess,
    sglang_process,
)

from auxcheck._guard import live, settings, targets
from auxcheck.aliasing import StaticBufferRegistry
from auxcheck.errors import GuardError
from auxcheck.sglang_plugin import current_guard

RELEASE = "0.5.23"
WIDTH = 4
FORWARD_TARGET = f"{WORKER_CLASS}.forward_batch_generation"


# ---------------------------------------------------------------- plugin outputs


class Host:
    """A host output keeping what was copied."""

    def __init__(self, values: torch.Tensor) -> None:
        self.values = values

    def consume(self, batch: Any, commits: Any) -> None:
        pass


class ForwardHost(Host):
    """The forward observer's host output."""


class ForwardOutput:
    """A forward observer's device output that copies its one tensor, as the contract asks."""

    host = ForwardHost

    def __init__(self, values: torch.Tensor) -> None:
        self.values = values

    def copy_to_host(self, copy_tensor: Any) -> Host:
        return self.host(copy_tensor(self.values))


class SampledHost(Host):
    """The sampling observer's host output."""


class SampledOutput(ForwardOutput):
    """A sampling observer's device output."""

    host = SampledHost


class ForwardObserver:
    """Main's ``ForwardObserver``: ``publish`` makes the output from the logits output."""

    def __init__(self, publish: Any) -> None:
        self.publish = publish
        self.published: list[torch.Tensor] = []

    def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any, *,
                      can_run_graph: bool) -> ForwardOutput:
        output = ForwardOutput(self.publish(logits_output.next_token_logits))
        self.published.append(output.values)
        return output


def sampling_observer(publish: Any) -> PublishingObserver:
    """Returns a sampling observer publishing ``SampledOutput(publish(logits))``."""
    return PublishingObserver(lambda logits: SampledOutput(publish(logits)))


def view(logits: torch.Tensor) -> torch.Tensor:
    """The bug: a view of the graph's persistent logits (they lie in the graph pool)."""
    return logits[:, :WIDTH]


def clone(logits: torch.Tensor) -> torch.Tensor:
    """The fix: a fresh tensor."""
    return logits[:, :WIDTH].clone()


class Reusing:
    """Reuses one buffer of its own every step: the next forward overwrites it before the copy."""

    def __init__(self) -> None:
        self.buffer = torch.zeros(8, WIDTH)

    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        n = logits.shape[0]
        self.buffer[:n].copy_(logits[:, :WIDTH])
        return self.buffer[:n]


FORWARD = f"{__name__}.ForwardOutput"
SAMPLED = f"{__name__}.SampledOutput"


# ---------------------------------------------------------------- processes


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No guard variable set, no other plugin selected, no guard left from another test; every
    test leaves sys.modules' sglang entries as it found them."""
    for name in (settings.GUARD_ENV, settings.VALUES_ENV, settings.REPORT_ENV, "SGLANG_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(live, "_ACTIVE", None)
    before = {n: m for n, m in sys.modules.items() if n.partition(".")[0] == "sglang"}
    yield
    assert {n: m for n, m in sys.modules.items() if n.partition(".")[0] == "sglang"} == before


@pytest.fixture
def process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[SGLangProcess]:
    """An SGLang main process on CPU: the stand-ins for main's code, and their source read."""
    tree = main_tree(tmp_path, real_tree(RELEASE))
    monkeypatch.setattr(targets, "_sglang_root", lambda: tree)
    with sglang_process(real_tree(RELEASE)) as proc:
        install_main(proc)
        yield proc


def start(process: SGLangProcess, monkeypatch: pytest.MonkeyPatch, mode: str,
          values: str = "0") -> Any:
    """Sets the guard's variables, loads the plugins as SGLang does; returns the guard."""
    monkeypatch.setenv(settings.GUARD_ENV, mode)
    monkeypatch.setenv(settings.VALUES_ENV, values)
    monkeypatch.setattr(torch.cuda, "memory_snapshot", process.pool.segments)
    process.load_plugins()
    return current_guard()


def hooked(process: SGLangProcess) -> set[str]:
    """Returns the targets the release's HookRegistry holds hooks for."""
    return {target for target, hooks in process.hook_registry._hooks.items() if hooks}


def guard_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Returns the guard's log lines, in order."""
    return [r.getMessage() for r in caplog.records if r.name == "auxcheck.guard"]


# ---------------------------------------------------------------- hooking


@pytest.mark.parametrize("sglang", ["main", RELEASE])
def test_the_forward_point_is_hooked_on_main_and_left_out_without_a_word_on_0_5_23(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        sglang: str) -> None:
    """Only an SGLang whose results carry a forward observer's output gets the forward hook."""
    if sglang == "main":
        tree = main_tree(tmp_path, real_tree(RELEASE))
        monkeypatch.setattr(targets, "_sglang_root", lambda: tree)
    before = {p.target for p in settings.HOOKS if p.target != FORWARD_TARGET}
    with sglang_process(real_tree(RELEASE)) as proc:
        if sglang == "main":
            install_main(proc)
        guard = start(proc, monkeypatch, "warn", values="1")
        assert hooked(proc) == before | ({FORWARD_TARGET} if sglang == "main" else set())
    assert guard.checks["values"] is None
    start_line = guard_lines(caplog)[0]
    assert "not hooked" not in start_line and "OFF" not in start_line
    assert "tp_worker" not in start_line


def test_a_forward_target_main_lacks_is_noted_and_values_stay_on_for_the_sampling_output(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """One missing publication point turns off only its own snapshot, and the log says which."""
    tree = main_tree(tmp_path, real_tree(RELEASE))
    worker = tree / "sglang/srt/managers/tp_worker.py"
    worker.write_text(worker.read_text().replace("def forward_batch_generation(",
                                                 "def forward_renamed("))
    monkeypatch.setattr(targets, "_sglang_root", lambda: tree)
    with sglang_process(real_tree(RELEASE)) as proc:
        install_main(proc)
        guard = start(proc, monkeypatch, "warn", values="1")
        assert FORWARD_TARGET not in hooked(proc)
    assert guard.checks["values"] is None
    assert (f"; not hooked: hook target {FORWARD_TARGET} not found: sglang main-271536c has no "
            f"{FORWARD_TARGET}: class {WORKER_CLASS} has no attribute forward_batch_generation "
            "(nor do its bases)" in guard_lines(caplog)[0])


# ---------------------------------------------------------------- findings at the copy


@pytest.mark.parametrize(("publish", "code", "buffer"), GRAPH_MEMORY)
def test_a_forward_output_keeping_graph_memory_is_caught_at_mains_copy(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, publish: str, code: str, buffer: str) -> None:
    """The hazard main's ForwardObserver docstring warns of: a view of what the graph owns."""
    guard = start(process, monkeypatch, "warn")
    holder: list[MainServer] = []
    make = {"view": view,
            "input": lambda logits: holder[0].graph.buffers.positions[:logits.shape[0]],
            "shared": lambda logits: process.shared_logits[0][:logits.shape[0], :WIDTH]}[publish]
    server = MainServer(process, ForwardObserver(make))
    holder.append(server)
    server.run(3)
    assert guard.counts() == {(code, FORWARD): 3}
    first = next(line for line in guard_lines(caplog) if line.startswith(f"auxcheck guard: {code}"))
    assert first.startswith(f"auxcheck guard: {code} in {FORWARD} (first of its kind in pid ")
    assert buffer in first
    assert [type(host) for host in server.hosts] == [ForwardHost] * 3


@pytest.mark.parametrize(("values", "expected"), [
    pytest.param("1", {("AUX112", FORWARD): 3}, id="values-on"),
    pytest.param("0", {}, id="values-off"),
])
def test_a_forward_output_buffer_overwritten_before_the_copy_is_aux112(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, values: str,
        expected: dict[tuple[str, str], int]) -> None:
    """Snapshot where forward_batch_generation took the output, compared at consume."""
    guard = start(process, monkeypatch, "warn", values=values)
    MainServer(process, ForwardObserver(Reusing())).run(4)  # the last copy is read in time
    assert guard.counts() == expected
    if expected:
        first = next(line for line in guard_lines(caplog)
                     if line.startswith("auxcheck guard: AUX112"))
        assert ("changed between its publication (ForwardObserver.after_forward) and the copy "
                "SGLang made of it") in first


def test_a_clean_forward_output_is_looked_up_and_reported_clean(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """No false positive on a clone, values on; and each of its tensors was checked."""
    looked_up: list[int] = []
    finding = StaticBufferRegistry.finding

    def spy(registry: StaticBufferRegistry, tensor: Any, **kwargs: Any) -> Any:
        looked_up.append(tensor.data_ptr())
        return finding(registry, tensor, **kwargs)

    monkeypatch.setattr(StaticBufferRegistry, "finding", spy)
    guard = start(process, monkeypatch, "warn", values="1")
    observer = ForwardObserver(clone)
    server = MainServer(process, observer)
    server.run(4)
    assert guard.counts() == {}
    assert {t.data_ptr() for t in observer.published} <= set(looked_up)
    assert [host.values.tolist() for host in server.hosts] == [
        t.tolist() for t in observer.published]


def test_both_observers_outputs_are_judged_each_as_its_own_class_in_mains_order(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """Main composes forward then sampling output; the guard probes both children in place."""
    guard = start(process, monkeypatch, "warn")
    server = MainServer(process, ForwardObserver(view), sampling_observer=sampling_observer(view))
    server.run(2)
    assert guard.counts() == {("AUX111", FORWARD): 2, ("AUX111", SAMPLED): 2}
    composite = server.hosts[0]
    assert type(composite) is process.contract.CompositeHostAuxiliaryOutput
    assert [type(child) for child in composite.outputs] == [ForwardHost, SampledHost]


def test_raise_mode_raises_for_the_forward_child_once_mains_copy_completed(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """raise stops a test run at the faulty step; SGLang's copy finished and cleared both slots."""
    start(process, monkeypatch, "raise")
    server = MainServer(process, ForwardObserver(view),
                        sampling_observer=sampling_observer(clone))
    result = server.worker.forward_batch_generation(server.batch)
    with pytest.raises(GuardError) as raised:
        result.copy_auxiliary_output_to_cpu()
    assert [f.code for f in raised.value.findings] == ["AUX111"]
    assert raised.value.output_classes == (FORWARD,)
    assert [type(child) for child in result.auxiliary_host_output.outputs] == [
        ForwardHost, SampledHost]
    assert result.forward_auxiliary_output is None
    assert result.logits_output.auxiliary_device_output is None


def test_a_forward_observers_own_error_passes_through_and_its_output_is_put_back(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
        ) -> None:
    """The guard never turns a plugin's exception into its own, nor leaves a probe behind."""
    caplog.set_level(logging.INFO)
    start(process, monkeypatch, "raise")

    class Broken(ForwardOutput):
        def copy_to_host(self, copy_tensor: Any) -> Host:
            raise ValueError("plugin bug")

    server = MainServer(process, ForwardObserver(clone))
    result = server.worker.forward_batch_generation(server.batch)
    broken = Broken(torch.zeros(3, WIDTH))
    result.forward_auxiliary_output = broken
    with pytest.raises(ValueError, match="plugin bug") as raised:
        result.copy_auxiliary_output_to_cpu()
    assert "probes.py" in {entry.path.name for entry in raised.traceback}  # through the probe
    assert result.forward_auxiliary_output is broken
    assert not any("failed inside auxcheck" in line for line in guard_lines(caplog))
