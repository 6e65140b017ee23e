"""The live-server guard, loaded the way SGLang 0.5.23 loads plugins, judged on the release's own code.

Each test builds an SGLang process on CPU (see ``sglang_process.py``): the release's real
``load_plugins()`` finds auxcheck's installed entry point and calls ``register()``; the
real ``HookRegistry.apply_hooks()`` patches the release's own
``copy_auxiliary_output_to_cpu``, ``sample`` and commit-building methods (cut out of the
wheel with ``ast``). Steps then run in the overlap loop's order: forward N (a graph
replay), sample N, copy N (in flight), forward N+1, then step N is processed.
"""

from __future__ import annotations

import ast
import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers.releases import real_tree, write_release
from helpers.sglang_process import (
    GRAPH_MEMORY,
    ForwardBatch,
    PublishingObserver,
    SGLangProcess,
    sglang_namespace,
    sglang_process,
)

from auxcheck._guard import live, settings, targets
from auxcheck._runtime.scheduler import FakeBatch, SchedulerModel
from auxcheck.aliasing import StaticBufferRegistry
from auxcheck.errors import GuardError
from auxcheck.sglang_plugin import current_guard

RELEASE = "0.5.23"
WIDTH = 4


# ---------------------------------------------------------------- plugin outputs


class RecordingHost:
    """A host output that records what it consumed."""

    def __init__(self, values: torch.Tensor) -> None:
        self.values = values
        self.seen: list[list[Any]] = []

    def consume(self, batch: Any, commits: Any) -> None:
        self.seen.append(list(commits))


class Output:
    """A device output that copies its one tensor, as the contract asks."""

    def __init__(self, values: torch.Tensor) -> None:
        self.values = values

    def copy_to_host(self, copy_tensor: Any) -> RecordingHost:
        return RecordingHost(copy_tensor(self.values))


class Mutating(RecordingHost):
    """A host output whose consume drops the last commit: its siblings see the damage."""

    def consume(self, batch: Any, commits: Any) -> None:
        super().consume(batch, commits)
        commits.pop()


class MutatingOutput(Output):
    def copy_to_host(self, copy_tensor: Any) -> RecordingHost:
        return Mutating(copy_tensor(self.values))


def view_of_logits(logits: torch.Tensor) -> Output:
    """The bug: keeps a view of the graph's persistent logits (lies in the graph pool)."""
    return Output(logits[:, :WIDTH])


def clone_of_logits(logits: torch.Tensor) -> Output:
    """The fix: a fresh tensor."""
    return Output(logits[:, :WIDTH].clone())


class Reusing:
    """An observer output that reuses one buffer of its own every step: AUX112 with values on."""

    def __init__(self) -> None:
        self.buffer = torch.zeros(8, WIDTH)

    def __call__(self, logits: torch.Tensor) -> Output:
        n = logits.shape[0]
        self.buffer[:n].copy_(logits[:, :WIDTH])
        return Output(self.buffer[:n])


# ---------------------------------------------------------------- driving a server


class Server:
    """Steps of the overlap loop, run with the release's own methods (patched by the plugin)."""

    def __init__(self, process: SGLangProcess, observer: Any, *, size: int = 3) -> None:
        self.process = process
        self.runner = process.cls("sglang.srt.model_executor.runner.decode_cuda_graph_runner."
                                  "DecodeCudaGraphRunner")(process.pool)
        self.runner.capture()
        self.model_runner = process.model_runner(observer)
        self.batch: FakeBatch = SchedulerModel(seed=3).batch(size)
        self.hosts: list[Any] = []

    def run(self, steps: int) -> None:
        """Runs ``steps`` steps, each processed after the next one's forward and copy."""
        in_flight = None
        for step in range(steps + 1):
            current = self.forward(step) if step < steps else None
            if in_flight is not None:
                self.process_result(in_flight)
            in_flight = current

    def forward(self, step: int) -> Any:
        """Replays the graph, samples (the observer publishes), starts the copy."""
        n = len(self.batch.reqs)
        logits = self.runner.replay(n, step)
        self.model_runner.sample(logits, ForwardBatch(n))
        result = self.process.result(logits)
        result.copy_auxiliary_output_to_cpu()
        result.copied = self.process.copies_in_flight()
        return result

    def process_result(self, result: Any) -> None:
        """``copy_done.synchronize()``, commit one token per request, consume."""
        self.process.process_result(self.batch, result, self.hosts)


@pytest.fixture(autouse=True)
def _no_sglang_module_leaks() -> Iterator[None]:
    """Every test leaves sys.modules' sglang entries as it found them (later tests import them)."""
    before = {n: m for n, m in sys.modules.items() if n.partition(".")[0] == "sglang"}
    yield
    after = {n: m for n, m in sys.modules.items() if n.partition(".")[0] == "sglang"}
    assert after == before


@pytest.fixture
def process(monkeypatch: pytest.MonkeyPatch) -> Iterator[SGLangProcess]:
    """An SGLang 0.5.23 process on CPU, no guard variable set, no other plugin selected."""
    for name in (settings.GUARD_ENV, settings.VALUES_ENV, settings.REPORT_ENV, "SGLANG_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(live, "_ACTIVE", None)
    with sglang_process(real_tree(RELEASE)) as proc:
        yield proc


def start(process: SGLangProcess, monkeypatch: pytest.MonkeyPatch, mode: str | None,
          **env: str) -> Any:
    """Sets the guard's variables, loads the plugins as SGLang does; returns the guard."""
    if mode is not None:
        monkeypatch.setenv(settings.GUARD_ENV, mode)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(torch.cuda, "memory_snapshot", process.pool.segments)
    process.load_plugins()
    return current_guard()



def guard_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Returns the guard's log lines, in order."""
    return [r.getMessage() for r in caplog.records if r.name == "auxcheck.guard"]


def hooked(process: SGLangProcess) -> set[str]:
    """Returns the targets the release's HookRegistry holds hooks for."""
    return {target for target, hooks in process.hook_registry._hooks.items() if hooks}


# ---------------------------------------------------------------- loading


def test_sglang_loads_the_entry_point_and_when_off_it_registers_no_hook(
        process: SGLangProcess, caplog: pytest.LogCaptureFixture) -> None:
    """With AUXCHECK_GUARD unset, SGLang runs auxcheck's register() and nothing is hooked."""
    caplog.set_level(logging.INFO)
    process.load_plugins()
    messages = [r.getMessage() for r in caplog.records]
    assert "  - auxcheck -> auxcheck.sglang_plugin:register" in messages
    assert "Executed general plugin: auxcheck" in messages
    assert hooked(process) == set()
    assert process.hook_registry._patched == set()
    assert current_guard() is None
    copy = process.cls("sglang.srt.managers.utils.GenerationBatchResult")
    assert not hasattr(copy.copy_auxiliary_output_to_cpu, "__wrapped__")


def test_register_when_off_imports_nothing_beyond_the_standard_library() -> None:
    """SGLang loads every installed plugin in every process: auxcheck's costs nothing when off."""
    script = textwrap.dedent("""
        import os, sys
        os.environ.pop("AUXCHECK_GUARD", None)
        before = set(sys.modules)
        from auxcheck.sglang_plugin import register
        register()
        new = {m.partition(".")[0] for m in set(sys.modules) - before}
        print(sorted(m for m in new if m not in sys.stdlib_module_names))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['auxcheck']"


@pytest.mark.parametrize(("values", "expected"), [
    pytest.param("0", [p.target for p in settings.HOOKS if not p.values_only], id="values-off"),
    # 0.5.23 has no forward observer: the point serving it is left out.
    pytest.param("1", [p.target for p in settings.HOOKS if p.requires is None], id="values-on"),
])
def test_warn_hooks_exactly_the_guards_targets_and_each_is_in_the_releases_source(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch, values: str,
        expected: list[str]) -> None:
    """Every target hooked is a method defined in 0.5.23's own files; apply_hooks patched each."""
    start(process, monkeypatch, "warn", AUXCHECK_GUARD_VALUES=values)
    assert hooked(process) == set(expected)
    assert process.hook_registry._patched == set(expected)
    for target in expected:
        assert _defined_in_release(target), target


def _defined_in_release(target: str) -> bool:
    module, cls, method = target.rsplit(".", 2)
    path = real_tree(RELEASE) / (module.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.ClassDef) and node.name == cls and any(
        isinstance(item, ast.FunctionDef) and item.name == method for item in node.body)
        for node in tree.body)


@pytest.mark.parametrize(("env", "message"), [
    pytest.param({"AUXCHECK_GUARD": "loud"},
                 "auxcheck guard is off: AUXCHECK_GUARD='loud' is not a guard mode; expected "
                 "warn (log findings) or raise (raise GuardError), or unset it to switch the "
                 "guard off", id="bad-mode"),
    pytest.param({"AUXCHECK_GUARD": "warn", "AUXCHECK_GUARD_VALUES": "maybe"},
                 "auxcheck guard is off: AUXCHECK_GUARD_VALUES='maybe' is neither on nor off; "
                 "expected 1 to snapshot published values (one extra synchronous copy per "
                 "output) or 0", id="bad-values"),
])
def test_a_bad_setting_is_logged_and_nothing_is_hooked(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, env: dict[str, str], message: str) -> None:
    """A typo in a variable names the variable and what it takes; the server starts as usual."""
    assert start(process, monkeypatch, None, **env) is None
    assert guard_lines(caplog) == [message]
    assert hooked(process) == set()


def test_without_sglangs_hook_registry_the_guard_says_which_sglang_it_needs(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An SGLang from before plugins (no sglang.srt.plugins): one clear line, no guard."""
    tree = write_release(tmp_path, {"sglang/srt/utils.py": "", "sglang/version.py": ""})
    with sglang_namespace(tree):
        assert live.install({"AUXCHECK_GUARD": "warn"}) is None
    assert guard_lines(caplog) == [
        ("auxcheck guard is off: this SGLang has no plugin hook registry "
        "(sglang.srt.plugins.hook_registry: No module named 'sglang.srt.plugins'); "
        "it needs an SGLang with sglang.srt.plugins (0.5.19 or later)")]


@pytest.mark.parametrize("version", ["0.5.19", "0.5.20", "0.5.23"])
def test_every_target_of_the_guard_resolves_in_each_release_read(version: str) -> None:
    """The guard's start-up verification, run on each real release: nothing missing."""
    with sglang_namespace(real_tree(version)):
        assert targets.hook_plan(settings.GuardSettings("warn", values=True)).problems == {}


def guard_tree(tmp_path: Path, old: str, new: str) -> Path:
    """Returns a release tree of the guard's target modules (0.5.99), with ``old`` replaced
    by ``new`` in ``managers/utils.py``."""
    files = {}
    for point in settings.HOOKS:
        path = point.target.rsplit(".", 2)[0].replace(".", "/") + ".py"
        files[path] = (real_tree(RELEASE) / path).read_text(encoding="utf-8")
    utils = "sglang/srt/managers/utils.py"
    assert old in files[utils]
    files[utils] = files[utils].replace(old, new)
    files["sglang/version.py"] = '__version__ = "0.5.99"\n'
    return write_release(tmp_path / "tree", files)


def test_a_target_missing_from_the_running_sglang_turns_its_check_off_and_says_so(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """The guard reads the running SGLang's source first: a renamed method is not hooked."""
    tree = guard_tree(tmp_path, "def copy_auxiliary_output_to_cpu(", "def _renamed(")
    monkeypatch.setattr(targets, "_sglang_root", lambda: tree)
    guard = start(process, monkeypatch, "warn")
    copy_target = next(p.target for p in settings.HOOKS if p.check == "copy")
    assert copy_target not in hooked(process)
    assert hooked(process) == {p.target for p in settings.HOOKS
                               if not p.values_only and p.check != "copy"}
    assert guard.checks["copy"] == (
        f"hook target {copy_target} not found: sglang 0.5.99 has no {copy_target}: "
        "class sglang.srt.managers.utils.GenerationBatchResult has no attribute "
        "copy_auxiliary_output_to_cpu (nor do its bases)")
    assert f"OFF aliasing at copy (AUX110/AUX111): {guard.checks['copy']}" in guard_lines(
        caplog)[0]
    Server(process, PublishingObserver(view_of_logits)).run(2)  # the server runs on, unchecked
    assert guard.counts() == {}


def test_a_target_whose_calls_the_guards_hook_cannot_take_is_not_hooked(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """The guard judges its own hooks by AUX703's rule: a target turned into a staticmethod
    that takes nothing would call the AROUND handler without its `result`."""
    tree = guard_tree(tmp_path, "    def copy_auxiliary_output_to_cpu(self",
                      "    @staticmethod\n    def copy_auxiliary_output_to_cpu(*, _unused=None):\n"
                      "        pass\n\n    def _was_copy_auxiliary_output_to_cpu(self")
    monkeypatch.setattr(targets, "_sglang_root", lambda: tree)
    guard = start(process, monkeypatch, "warn")
    copy_target = next(p.target for p in settings.HOOKS if p.check == "copy")
    assert copy_target not in hooked(process)
    assert guard.checks["copy"] == (
        f"hook on {copy_target} cannot take the calls HookRegistry makes: the required "
        "arguments: missing a required argument: 'result'; `_unused` by keyword: missing a "
        "required argument: 'result'")
    assert f"OFF aliasing at copy (AUX110/AUX111): {guard.checks['copy']}" in guard_lines(
        caplog)[0]


# ---------------------------------------------------------------- findings


def _shared_logits(process: SGLangProcess) -> Any:
    return lambda logits: Output(process.shared_logits[0][:logits.shape[0], :WIDTH])


def _input_buffer(server: list[Server]) -> Any:
    return lambda logits: Output(server[0].runner.buffers.positions[:logits.shape[0]])


@pytest.mark.parametrize(("publish", "code", "buffer"), GRAPH_MEMORY)
def test_a_published_view_of_graph_memory_is_reported_once_then_counted(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, publish: str, code: str, buffer: str) -> None:
    """Each kind of graph memory SGLang keeps is registered at capture and caught at the copy."""
    guard = start(process, monkeypatch, "warn")
    holder: list[Server] = []
    make = {"view": view_of_logits, "shared": _shared_logits(process),
            "input": _input_buffer(holder)}[publish]
    server = Server(process, PublishingObserver(make))
    holder.append(server)
    server.run(10)
    owner = "test_sglang_plugin.Output"
    assert guard.counts() == {(code, owner): 10}
    lines = [line for line in guard_lines(caplog) if line.startswith(f"auxcheck guard: {code}")]
    assert len(lines) == 2
    assert lines[0].startswith(f"auxcheck guard: {code} in {owner} (first of its kind in pid ")
    assert buffer in lines[0]
    assert lines[1].startswith(f"auxcheck guard: {code} in {owner} seen 10 times in pid ")


def test_a_clone_is_clean_and_the_server_computes_the_same_with_the_guard_as_without(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No false positive on a correct plugin, and the guard changes nothing it observes."""
    runs = {}
    for mode in (None, "warn"):
        monkeypatch.setattr(live, "_ACTIVE", None)
        monkeypatch.delenv(settings.GUARD_ENV, raising=False)
        with sglang_process(real_tree(RELEASE)) as proc:
            guard = start(proc, monkeypatch, mode, AUXCHECK_GUARD_VALUES="1")
            server = Server(proc, PublishingObserver(clone_of_logits))
            server.run(6)
            runs[mode] = ([h.values.tolist() for h in server.hosts],
                          [[[(c.output_index, c.token_ids) for c in seen] for seen in h.seen]
                           for h in server.hosts])
            if guard is not None:
                assert guard.counts() == {}
    assert runs[None] == runs["warn"]


def test_composite_children_are_judged_each_as_its_own_class_and_nothing_is_repaired(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """SGLang's own composite runs over probes: findings name the child; siblings see the damage."""
    guard = start(process, monkeypatch, "warn")
    append = process.contract.append_auxiliary_output
    server = Server(process, PublishingObserver(
        lambda logits: append(MutatingOutput(logits[:, :WIDTH].clone()), view_of_logits(logits))))
    server.run(2)
    assert guard.counts() == {("AUX111", "test_sglang_plugin.Output"): 2,
                              ("AUX203", "test_sglang_plugin.Mutating"): 2}
    composite = server.hosts[0]
    assert type(composite) is process.contract.CompositeHostAuxiliaryOutput
    first, second = composite.outputs
    assert len(first.seen[0]) == 3 and len(second.seen[0]) == 2  # the second child got the damage


def test_raise_mode_raises_once_the_copy_has_completed(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """raise stops a test run at the faulty step, after SGLang's own method finished its work."""
    start(process, monkeypatch, "raise")
    server = Server(process, PublishingObserver(view_of_logits))
    n = len(server.batch.reqs)
    logits = server.runner.replay(n, 0)
    server.model_runner.sample(logits, ForwardBatch(n))
    result = process.result(logits)
    with pytest.raises(GuardError) as raised:
        result.copy_auxiliary_output_to_cpu()
    assert [f.code for f in raised.value.findings] == ["AUX111"]
    assert raised.value.output_classes == ("test_sglang_plugin.Output",)
    assert str(raised.value).startswith("auxcheck guard (AUXCHECK_GUARD=raise): "
                                        "test_sglang_plugin.Output: AUX111 device tensor ")
    assert type(result.auxiliary_host_output) is RecordingHost
    assert logits.auxiliary_device_output is None


def test_a_plugins_own_error_passes_through_unchanged(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard never turns a plugin's exception into its own, and puts the output back."""
    start(process, monkeypatch, "raise")

    class Broken(Output):
        def copy_to_host(self, copy_tensor: Any) -> RecordingHost:
            raise ValueError("plugin bug")

    output = Broken(torch.zeros(3, WIDTH))
    result = process.result(_logits_with(output))
    with pytest.raises(ValueError, match="plugin bug"):
        result.copy_auxiliary_output_to_cpu()
    assert result.logits_output.auxiliary_device_output is output


def _logits_with(output: Any) -> Any:
    from helpers.sglang_process import LogitsOutput

    return LogitsOutput(torch.zeros(3, 16), output)


@pytest.mark.parametrize(("values", "expected"), [
    pytest.param("1", {("AUX112", "test_sglang_plugin.Output"): 3}, id="values-on"),
    pytest.param("0", {}, id="values-off"),
])
def test_values_catch_an_output_buffer_the_next_step_overwrites_before_the_copy(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch, values: str,
        expected: dict[tuple[str, str], int]) -> None:
    """An observer reusing its own buffer: only the value snapshot can see it (no graph memory)."""
    guard = start(process, monkeypatch, "warn", AUXCHECK_GUARD_VALUES=values)
    server = Server(process, PublishingObserver(Reusing()))
    server.run(4)  # the last step is copied before any later step overwrites it
    assert guard.counts() == expected


def test_a_regression_in_sglangs_commit_building_is_aux601(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """For core developers: commits off by one (a planted edit of 0.5.23's code) are caught."""
    def off_by_one(cls: ast.ClassDef) -> None:
        for node in ast.walk(cls):
            if isinstance(node, ast.keyword) and node.arg == "output_index":
                node.value = ast.BinOp(node.value, ast.Add(), ast.Constant(1))

    for name in (settings.GUARD_ENV, settings.VALUES_ENV, settings.REPORT_ENV, "SGLANG_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(live, "_ACTIVE", None)
    with sglang_process(real_tree(RELEASE), edit_commits=off_by_one) as proc:
        guard = start(proc, monkeypatch, "warn")
        Server(proc, PublishingObserver(clone_of_logits)).run(2)
    owner = "SchedulerBatchResultProcessor._build_auxiliary_commits"
    assert guard.counts() == {("AUX601", owner): 6}  # each of 3 requests, 2 steps


# ---------------------------------------------------------------- the report and the guard's own faults


def test_the_report_file_holds_the_start_each_first_finding_its_counts_and_the_summary(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """AUXCHECK_GUARD_REPORT appends JSON lines a nightly job can read."""
    report = tmp_path / "guard.jsonl"
    guard = start(process, monkeypatch, "warn", AUXCHECK_GUARD_REPORT=str(report))
    Server(process, PublishingObserver(view_of_logits)).run(10)
    guard.reporter.summary()
    events = [json.loads(line) for line in report.read_text().splitlines()]
    assert [e["event"] for e in events] == ["start", "finding", "count", "summary"]
    assert events[0]["checks"]["copy"] == "on"
    assert events[0]["checks"]["values"] == "AUXCHECK_GUARD_VALUES is not set to 1"
    finding = events[1]
    assert (finding["code"], finding["output_class"], finding["count"], finding["mode"]) == (
        "AUX111", "test_sglang_plugin.Output", 1, "warn")
    assert finding["message"].startswith("device tensor .values tensor[3x4, float32] shares ")
    assert finding["hint"] == "`clone()` the tensor outside graph capture before publishing it"
    assert events[2]["count"] == 10
    assert events[3]["counts"] == [{"code": "AUX111", "output_class": "test_sglang_plugin.Output",
                                    "count": 10}]


def test_an_unwritable_report_is_said_once_and_findings_are_still_logged(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """A report path in a missing folder never stops the server; the log says how to fix it."""
    missing = tmp_path / "no" / "guard.jsonl"
    guard = start(process, monkeypatch, "warn", AUXCHECK_GUARD_REPORT=str(missing))
    Server(process, PublishingObserver(view_of_logits)).run(1)
    lines = guard_lines(caplog)
    assert lines[0] == (f"auxcheck guard: cannot open AUXCHECK_GUARD_REPORT={missing} (No such "
                        "file or directory); findings are logged only. Point it at a writable "
                        "regular file (it is created when missing).")
    assert guard.counts() == {("AUX111", "test_sglang_plugin.Output"): 1}


def test_the_guards_own_failure_is_logged_once_and_never_reaches_the_server(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Even in raise mode, auxcheck's own bug switches its check off; the plugin runs as usual."""
    guard = start(process, monkeypatch, "raise")

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("auxcheck bug")

    monkeypatch.setattr(StaticBufferRegistry, "finding", broken)
    server = Server(process, PublishingObserver(view_of_logits))
    server.run(3)
    failures = [line for line in guard_lines(caplog) if "failed inside auxcheck" in line]
    assert len(failures) == 1
    assert failures[0].startswith("auxcheck guard: the copy check failed inside auxcheck and "
                                  "is off from now on in pid ")
    assert not guard.on("copy")
    assert len(server.hosts) == 3


def _set_last_token(batch: Any, commits: Any) -> None:
    batch.reqs[1].output_ids[-1] = -5


@pytest.mark.parametrize(("mutate", "message"), [
    pytest.param(lambda b, c: c.pop(), "consume mutated commits: length 3 became 2",
                 id="pops-a-commit"),
    pytest.param(lambda b, c: c.__setitem__(0, None), "consume mutated commits: entry 0 was "
                 "replaced", id="replaces-an-entry"),
    pytest.param(lambda b, c: object.__setattr__(c[2], "output_index", 0),
                 "consume mutated commits: entry 2 was modified in place", id="edits-an-entry"),
    pytest.param(lambda b, c: b.reqs.reverse(), "consume reordered or resized in place "
                 "batch.reqs", id="reorders-reqs"),
    pytest.param(lambda b, c: setattr(b, "reqs", list(b.reqs)), "consume rebound batch.reqs",
                 id="rebinds-reqs"),
    pytest.param(_set_last_token, "consume changed the committed output of 1 request(s), "
                 "request ", id="rewrites-a-token"),
    pytest.param(lambda b, c: b.reqs[0].output_ids.append(9), "consume changed the committed "
                 "output of 1 request(s), request ", id="appends-a-token"),
])
def test_each_way_consume_can_corrupt_what_siblings_see_is_aux203(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch, mutate: Any,
        message: str) -> None:
    """The cheap fingerprint (lengths, identities, last tokens) catches every one of these."""
    guard = start(process, monkeypatch, "raise")

    class Corrupting(RecordingHost):
        def consume(self, batch: Any, commits: Any) -> None:
            mutate(batch, commits)

    class CorruptingOutput(Output):
        def copy_to_host(self, copy_tensor: Any) -> RecordingHost:
            return Corrupting(copy_tensor(self.values))

    server = Server(process, PublishingObserver(
        lambda logits: CorruptingOutput(logits[:, :WIDTH].clone())))
    with pytest.raises(GuardError) as raised:
        server.run(1)
    assert [f.code for f in raised.value.findings] == ["AUX203"]
    assert raised.value.findings[0].message.startswith(message)
    assert guard.counts() == {("AUX203", f"{__name__}.{Corrupting.__qualname__}"): 1}


def test_a_consume_that_raises_is_logged_as_aux202_and_its_error_reaches_sglang(
        process: SGLangProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard observes, never repairs: the plugin's error still stops the scheduler."""
    guard = start(process, monkeypatch, "warn")

    class Raising(RecordingHost):
        def consume(self, batch: Any, commits: Any) -> None:
            raise ZeroDivisionError("a plugin's own bug")

    class RaisingOutput(Output):
        def copy_to_host(self, copy_tensor: Any) -> RecordingHost:
            return Raising(copy_tensor(self.values))

    server = Server(process, PublishingObserver(
        lambda logits: RaisingOutput(logits[:, :WIDTH].clone())))
    with pytest.raises(ZeroDivisionError, match="a plugin's own bug"):
        server.run(1)
    assert guard.counts() == {("AUX202", f"{__name__}.{Raising.__qualname__}"): 1}
