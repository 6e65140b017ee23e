"""From what a real server did to findings (``auxcheck._sglang_cpu.verdicts``): one per cause, at the plugin's line.

The events here are the probe's and the guard's, as they write them; the plugin's files are
real files of a project, installed copies mapped back to them by their bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from auxcheck._sglang_cpu.install import Installed
from auxcheck._sglang_cpu.verdicts import Death, Evidence, Failure, explained, verdicts

HOOKS = "import x\n\n\ndef hook(result, runner):\n    return None\n\n\nclass Out:\n    pass\n"


@pytest.fixture
def evidence(tmp_path: Path) -> Evidence:
    project = tmp_path / "project" / "plug"
    project.mkdir(parents=True)
    source = project / "hooks.py"
    source.write_text(HOOKS)
    installed = tmp_path / "site" / "plug" / "hooks.py"
    installed.parent.mkdir(parents=True)
    installed.write_text(HOOKS)
    return Evidence(Installed(tmp_path / "site", {"plug": "plug.hooks:register"},
                              {str(installed.resolve()): source.resolve(),
                               str(source.resolve()): source.resolve()}),
                    own=frozenset({"plug"}))


def hook(evidence: Evidence, kind: str = "function") -> dict[str, Any]:
    site = evidence.installed.site
    return {"name": "hook", "file": str(site / "plug" / "hooks.py"), "line": 4, "kind": kind,
            "type": "AFTER"}


def place(evidence: Evidence, line: int) -> str:
    return f"{next(iter(evidence.installed.sources.values()))}:{line}"


def judged(evidence: Evidence) -> tuple[list[tuple[str, str | None]], list[str]]:
    found, notes = verdicts("0.5.23", evidence)
    return [(f.code, f.location) for f in found], notes


TARGET = "sglang.srt.model_executor.model_runner.ModelRunner.initialize"


def test_a_hook_apply_hooks_could_not_apply_is_aux802_at_the_hook(evidence: Evidence) -> None:
    evidence.events.append({"event": "hook-failed", "target": TARGET + "x",
                            "hooks": [hook(evidence)], "error": "AttributeError: no initializex"})
    assert judged(evidence) == ([("AUX802", place(evidence, 4))], [])


@pytest.mark.parametrize(("target", "hooks_of", "note"), [
    ("sgl_kernel.flash_mla.flash_mla_with_kvcache", "plugin", "stands in for sgl_kernel"),
    (TARGET, "guard", "auxcheck's guard could not hook"),
])
def test_a_failed_hook_that_is_not_the_plugins_to_answer_for_is_a_note(
        evidence: Evidence, target: str, hooks_of: str, note: str) -> None:
    spec = hook(evidence) if hooks_of == "plugin" else {
        "name": "Guard.after", "file": "/elsewhere/auxcheck/_guard/guard.py", "line": 9}
    evidence.events.append({"event": "hook-failed", "target": target, "hooks": [spec],
                            "error": "AttributeError: 'function' object has no attribute"})
    found, notes = judged(evidence)
    assert found == [] and len(notes) == 1 and note in notes[0]


def test_a_plugin_that_failed_to_load_is_aux801_at_its_innermost_frame(
        evidence: Evidence) -> None:
    frames = [["/sglang/srt/plugins/__init__.py", 80, "load_plugins_by_group"],
              [str(evidence.installed.site / "plug" / "hooks.py"), 1, "<module>"],
              ["/lib/x.py", 3, "<module>"]]
    evidence.events.append({"event": "plugin-error", "message": "Failed to load plugin plug "
                            "from group sglang.srt.plugins", "error": "ImportError: x",
                            "frames": frames})
    found, _notes = verdicts("0.5.23", evidence)
    assert [(f.code, f.location) for f in found] == [("AUX801", place(evidence, 1))]
    assert found[0].detail is not None and "plug/hooks.py:1 in <module>" in found[0].detail


@pytest.mark.parametrize(("message", "error", "note"), [
    ("Failed to execute general plugin: other", "ValueError: x", "not the plugin's"),
    ("Failed to execute general plugin: plug", ("NotImplementedError: sgl_kernel.f is not "
     "available in auxcheck's CPU SGLang environment (a stand-in ...)"), "stands in for"),
])
def test_a_load_error_of_another_plugin_or_of_a_stand_in_is_a_note(
        evidence: Evidence, message: str, error: str, note: str) -> None:
    evidence.events.append({"event": "plugin-error", "message": message, "error": error,
                            "frames": []})
    found, notes = judged(evidence)
    assert found == [] and len(notes) == 1 and note in notes[0]


def death(evidence: Evidence, *events: dict[str, Any]) -> None:
    evidence.deaths.append(Death("overlap on", "while starting", Path("/logs/server.log"),
                                 "tail", "exited", tuple(events)))


def test_a_death_through_a_frame_of_the_plugin_is_aux804_at_that_frame(
        evidence: Evidence) -> None:
    frames = [["/sglang/srt/managers/scheduler.py", 10, "run"],
              [str(evidence.installed.site / "plug" / "hooks.py"), 5, "hook"]]
    death(evidence, {"event": "process-error", "message": "Scheduler hit an exception:",
                     "frames": frames, "error": "KeyError: 'x'"})
    assert judged(evidence) == ([("AUX804", place(evidence, 5))], [])
    assert explained(evidence, "overlap on", evidence.deaths[0].events)


def test_a_death_of_a_hook_that_does_not_fit_its_call_is_aux804_at_the_hook(
        evidence: Evidence) -> None:
    """The TypeError is raised in SGLang's wrapper: no frame of the plugin's, but the probe
    saw it leave the hook."""
    error = "TypeError: hook() takes 2 positional arguments but 3 were given"
    death(evidence,
          {"event": "process-error", "message": "Scheduler hit an exception:",
           "frames": [["/sglang/srt/plugins/hook_registry.py", 378, "wrapper"]], "error": error},
          {"event": "hook-raised", "target": TARGET, "hook": hook(evidence), "error": error})
    found, _ = verdicts("0.5.23", evidence)
    assert [(f.code, f.location) for f in found] == [("AUX804", place(evidence, 4))]
    assert f"SGLang called the AFTER hook hook on {TARGET} and it raised: TypeError" in (
        found[0].message)


def test_a_death_in_a_stand_in_is_a_note(evidence: Evidence) -> None:
    death(evidence, {"event": "process-error", "message": "Scheduler hit an exception:",
                     "frames": [["/env/lib/python3.11/site-packages/sgl_kernel/__init__.py",
                                 20, "call"]], "error": "NotImplementedError: gone"})
    found, notes = judged(evidence)
    assert found == [] and "stands in for" in notes[0]


def applied(evidence: Evidence, kind: str = "function") -> None:
    evidence.events.append({"event": "hook-applied", "target": TARGET,
                            "hooks": [hook(evidence, kind)]})


@pytest.mark.parametrize(("served", "called", "kind", "expected"), [
    (["overlap on"], False, "function", [("AUX803", 4)]),
    (["overlap on"], True, "function", []),
    ([], False, "function", []),  # no scenario ran to its end: nothing to say of calls
    (["overlap on"], False, "class", []),  # a class REPLACE is not counted
])
def test_a_hook_applied_and_never_called_is_an_aux803_note_once_the_scenarios_ran(
        evidence: Evidence, served: list[str], called: bool, kind: str,
        expected: list[tuple[str, int]]) -> None:
    applied(evidence, kind)
    evidence.served += served
    if called:
        evidence.events.append({"event": "hook-called", "target": TARGET})
    found, _ = verdicts("0.5.23", evidence)
    assert [(f.code, f.location) for f in found] == [
        (code, place(evidence, line)) for code, line in expected]
    assert all(f.is_note for f in found)


def test_the_guards_finding_is_one_per_rule_and_class_at_the_class(evidence: Evidence) -> None:
    for mode in ("overlap on", "overlap off", "overlap on"):
        evidence.guard.append({"event": "finding", "code": "AUX112", "output_class":
                               "plug.hooks.Out", "message": "changed", "hint": "clone",
                               "server": mode})
    found, _ = verdicts("0.5.23", evidence)
    assert [(f.code, f.location, f.hint) for f in found] == [
        ("AUX112", place(evidence, 8), "clone")]
    assert "(overlap on and off)" in found[0].message


@pytest.mark.parametrize(("blamed", "location", "expected"), [
    (True, 5, "the plugin's code is on its path"),
    (False, None, "SGLang serves it without the plugin"),
])
def test_a_failed_request_is_aux805_at_the_plugins_frame_when_one_is_to_blame(
        evidence: Evidence, blamed: bool, location: int | None, expected: str) -> None:
    evidence.failures.append(Failure("overlap on", "grammar", "HTTP 500", Path("/l.log")))
    if blamed:
        evidence.events.append({"event": "process-error", "server": "overlap on", "frames": [
            [str(evidence.installed.site / "plug" / "hooks.py"), 5, "hook"]], "error": "E"})
    found, _ = verdicts("0.5.23", evidence)
    assert [(f.code, f.location) for f in found] == [
        ("AUX805", None if location is None else place(evidence, location))]
    assert expected in found[0].message


def test_an_import_error_when_a_requirement_could_not_be_installed_is_a_note(
        evidence: Evidence) -> None:
    """auxcheck did not install what the plugin needs: its import failing says nothing."""
    evidence.installed = Installed(evidence.installed.site, evidence.installed.entry_points,
                                   evidence.installed.sources, unmet=("lmcache>=0.3",))
    evidence.events.append({"event": "plugin-error", "message": "Failed to load plugin plug from "
                            "group sglang.srt.plugins", "error": "ModuleNotFoundError: No module "
                            "named 'lmcache'", "frames": []})
    found, notes = judged(evidence)
    assert found == [] and "requires lmcache>=0.3, which could not be installed" in notes[0]


def test_one_cause_that_killed_both_servers_is_one_finding_with_the_guards_aux202_in_it(
        evidence: Evidence) -> None:
    frames = [[str(evidence.installed.site / "plug" / "hooks.py"), 5, "consume"]]
    error = "TypeError: unsupported operand type(s) for -: 'int' and 'NoneType'"
    for mode in ("overlap on", "overlap off"):
        evidence.deaths.append(Death(mode, "during the abort scenario", Path(f"/l/{mode}.log"),
                                     "tail", "", ({"event": "process-error", "message":
                                                  "Scheduler hit an exception:", "frames": frames,
                                                  "error": error},)))
        evidence.guard.append({"event": "finding", "code": "AUX202", "server": mode,
                               "output_class": "plug.hooks.Out", "raised": "TypeError",
                               "message": "consume raised "
                               "TypeError in the running server, where request 'r' was aborted"})
    found, _ = verdicts("0.5.23", evidence)
    assert [(f.code, f.location) for f in found] == [("AUX804", place(evidence, 5))]
    assert "died during the abort scenario (overlap on and off): TypeError" in found[0].message
    assert found[0].detail is not None and "the live guard: AUX202 consume raised" in (
        found[0].detail)


def test_a_hook_registered_with_the_target_spelt_out_is_aux802_at_its_registration(
        evidence: Evidence) -> None:
    source = next(iter(evidence.installed.sources.values()))
    source.write_text(HOOKS + "\n\ndef register():\n    HookRegistry.register(\n"
                      f"        {TARGET + 'x'!r}, hook)\n")
    evidence.events.append({"event": "hook-failed", "target": TARGET + "x",
                            "hooks": [hook(evidence)], "error": "AttributeError: no initializex"})
    assert judged(evidence) == ([("AUX802", place(evidence, 13))], [])


def test_a_request_failing_alike_with_overlap_on_and_off_is_one_aux805(
        evidence: Evidence) -> None:
    for mode in ("overlap on", "overlap off"):
        evidence.failures.append(Failure(mode, "grammar", "HTTP 400", Path(f"/l/{mode}.log")))
    found, _ = verdicts("0.5.23", evidence)
    assert [f.code for f in found] == ["AUX805"]
    assert "the grammar scenario failed (overlap on and off): HTTP 400" in found[0].message


def test_what_followed_a_guard_finding_in_sglang_is_part_of_that_finding(
        evidence: Evidence) -> None:
    """A consume removing requests from batch.reqs (AUX203) hangs requests with overlap on and
    leaks SGLang's memory pool with it off: no line of the plugin's is in either, and the
    guard's finding says what the plugin did."""
    evidence.guard.append({"event": "finding", "code": "AUX203", "server": "overlap on",
                           "output_class": "plug.hooks.Out", "message": "consume removed 1"})
    evidence.failures.append(Failure("overlap on", "concurrent", "no answer in 60 s",
                                     Path("/l/on.log"), hung=True))
    evidence.deaths.append(Death("overlap off", "during the concurrent scenario",
                                 Path("/l/off.log"), "tail", "", ({
                                     "event": "process-error", "message": "Scheduler hit an "
                                     "exception:", "frames": [["/sglang/x.py", 1, "f"]],
                                     "error": "ValueError: pool memory leak detected!"},)))
    found, _ = verdicts("0.5.23", evidence)
    assert [(f.code, f.location) for f in found] == [("AUX203", place(evidence, 8))]
    assert found[0].detail is not None
    assert "then in SGLang's real server: AUX804" in found[0].detail
    assert "then in SGLang's real server: AUX805" in found[0].detail


@pytest.mark.parametrize(("frames", "error"), [
    ([["/env/lib/python3.11/site-packages/sglang/srt/mem_cache/pool_host/common.py", 147, "r"],
      ["/env/lib/python3.11/site-packages/torch/cuda/__init__.py", 522, "_lazy_init"]],
     "AssertionError: Torch not compiled with CUDA enabled"),
    ([], "RuntimeError: No CUDA GPUs are available"),
], ids=["torch.cuda-frame", "no-gpu-message"])
def test_a_death_on_a_path_that_needs_cuda_is_a_note_never_the_plugins_failure(
        evidence: Evidence, frames: list[list[Any]], error: str) -> None:
    """A plugin switching on a GPU feature (HiCache's pinned host pool) is not wrong for it."""
    death(evidence, {"event": "process-error", "message": "Scheduler hit an exception:",
                     "frames": frames, "error": error})
    found, notes = judged(evidence)
    assert found == [] and "a path that needs CUDA, which a CPU server cannot take" in notes[0]
