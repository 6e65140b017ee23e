"""Tests for auxcheck/_isolation: plugin code that ends, signals or hangs the process, or writes
where it should not, is a finding of ``auxcheck validate`` and a failed ``auxcheck check`` stage."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.plugin_sources import CLEAN_OUTPUT
from helpers.processes import HANG_GUARD, alive, hang_guard, wait_until

from auxcheck._check.stages import CheckOptions, run_stages
from auxcheck._isolation.bounded import run_bounded
from auxcheck._isolation.runner import _close_idle
from auxcheck.cli import main

PRELUDE = "import os, signal, sys, threading, time\nimport torch\n\n\n" + CLEAN_OUTPUT

HOSTILE = {
    "exit0-in-copy": ("class T(Clean):\n def copy_to_host(self, c): os._exit(0)",
                      "AUX103", "exited with status 0 via os._exit"),
    "exit3-in-copy": ("class T(Clean):\n def copy_to_host(self, c): os._exit(3)",
                      "AUX103", "exited with status 3 via os._exit"),
    "exit-in-consume": ("class T:\n def consume(self, b, c): os._exit(0)",
                        "AUX202", "exited with status 0"),
    "exit-in-observer-hook": (("class T:\n def is_active(self, b): os._exit(0)\n"
                              " def before_grammar(self, *a): pass\n"
                              " def after_sample(self, *a): return None"),
                              "AUX102", "exited with status 0"),
    "exit-at-import": ("os._exit(0)\nT = Clean()", "AUX101", "during importing module"),
    "exit-in-factory": ("def T():\n os._exit(3)", "AUX101", "during the factory"),
    "system-exit-from-getattr": ("class T:\n def __getattr__(self, name): raise SystemExit(5)",
                                 "AUX10", "SystemExit(5)"),
    "abort-in-copy": ("class T(Clean):\n def copy_to_host(self, c): os.abort()",
                      "AUX103", "killed by SIGABRT"),
    "sleep-forever-in-copy": ("class T(Clean):\n def copy_to_host(self, c): time.sleep(1000)",
                              "AUX103", "did not return within 2 s (--timeout)"),
    "hang-at-import": ("time.sleep(1000)\nT = Clean()", "AUX101",
                       "importing module 'hostile_mod' (hostile_mod:T) did not return within 2 s"),
    "kills-its-parent": (("class T(Clean):\n def copy_to_host(self, c):\n"
                         "  os.kill(os.getppid(), signal.SIGKILL); time.sleep(100)"),
                         "AUX103", "took auxcheck's runner process down"),
    "closes-every-descriptor": (("class T(Clean):\n def copy_to_host(self, c):\n"
                                "  os.closerange(3, 65536); return Host()"),
                                "AUX103", "closed or replaced the pipe"),
    "closes-stdout-and-stderr": (("class T(Clean):\n def copy_to_host(self, c):\n"
                                 "  os.close(1); os.close(2); return None"),
                                 "AUX103", "returned None"),
    "forks": ("class T(Clean):\n def copy_to_host(self, c):\n  os.fork(); return None",
              "AUX103", "returned None"),
}


def write_module(folder: Path, body: str) -> None:
    """Writes ``hostile_mod.py``: the prelude's clean classes, then ``body``."""
    (folder / "hostile_mod.py").write_text(PRELUDE + textwrap.dedent(body) + "\n")


@pytest.mark.slow
@pytest.mark.parametrize(("body", "code", "seen"), [
    pytest.param(*case, id=name) for name, case in HOSTILE.items()])
def test_hostile_plugin_code_is_a_finding_and_the_next_target_still_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, code: str, seen: str
) -> None:
    """Exits, signals, hangs and stray descriptors end as a finding under the running call's
    rule (exit 1, JSON intact, no traceback); the clean target after it is still checked."""
    write_module(tmp_path, body)
    with hang_guard("validate of a hostile target with --timeout 2"):
        status = main(["validate", "--path", str(tmp_path), "--timeout", "2", "--format",
                       "json", "hostile_mod:T", "hostile_mod:Clean"])
    out, err = capsys.readouterr()
    sys.modules.pop("hostile_mod", None)
    hostile, clean = json.loads(out)
    assert status == 1
    assert [f["code"][:len(code)] for f in hostile["findings"]] == [code], hostile
    assert seen in hostile["findings"][0]["message"]
    assert (clean["subject"], clean["ok"]) == ("hostile_mod:Clean", True) or \
        body.startswith(("os._exit", "time.sleep"))  # a broken import breaks both targets
    assert "Traceback" not in out + err


def test_a_print_at_import_goes_to_stderr_and_json_still_parses(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """What plugin code prints lands on stderr: stdout holds only the JSON document."""
    write_module(tmp_path, "print('hello from the plugin')\nT = Clean()")
    status = main(["validate", "--path", str(tmp_path), "--format", "json", "hostile_mod:T"])
    out, err = capsys.readouterr()
    sys.modules.pop("hostile_mod", None)
    assert (status, [r["ok"] for r in json.loads(out)]) == (0, [True])
    assert "hello from the plugin" in err


def test_a_hanging_repr_is_never_run_so_json_output_is_prompt_and_complete(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """With --format json a __repr__ that never returns is not called: objects show by type."""
    write_module(tmp_path, "class T(Clean):\n def __repr__(self): time.sleep(1000)\n"
                           " def copy_to_host(self, c): c(self.rows); c(self.rows); return Host()")
    with hang_guard("validate of a target whose repr never returns"):
        status = main(["validate", "--path", str(tmp_path), "--timeout", "20", "--format",
                       "json", "hostile_mod:T"])
    out, _ = capsys.readouterr()
    sys.modules.pop("hostile_mod", None)
    [report] = json.loads(out)
    assert status == 1
    assert [f["code"] for f in report["findings"]] == ["AUX104"]
    assert report["findings"][0]["object"].startswith("<hostile_mod.T object at 0x")


@pytest.mark.slow
def test_a_thread_that_never_ends_cannot_hang_the_command(tmp_path: Path) -> None:
    """A non-daemon thread that mutates the output's tensors forever ends with its worker."""
    write_module(tmp_path, textwrap.dedent("""
        def T():
            out = Clean()
            def spin():
                while True:
                    out.rows.add_(1)
            threading.Thread(target=spin).start()
            return out
    """))
    done = subprocess.run([sys.executable, "-m", "auxcheck", "validate", "--timeout", "5",
                           "--path", str(tmp_path), "hostile_mod:T"],
                          capture_output=True, text=True, timeout=HANG_GUARD, check=False)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "soon"])
def test_a_bad_timeout_is_a_usage_error(capsys: pytest.CaptureFixture[str], value: str) -> None:
    """--timeout takes a number of seconds >= 0 and says so."""
    assert main(["validate", "--timeout", value, "m:X"]) == 2
    assert (f"argument --timeout: invalid value {value!r}; expected a number of seconds >= 0"
            in capsys.readouterr().err)


CONFTEST_ENDINGS = {
    "os-exit-0-in-a-fixture": ("os._exit(0)", 120, "before writing its results"),
    "abort-in-a-fixture": ("os.abort()", 120, "killed by SIGABRT"),
    "hang-in-a-fixture": ("time.sleep(1000)", 8, "did not finish within 8 s (--timeout)"),
}


@pytest.mark.slow
@pytest.mark.parametrize(("statement", "timeout", "summary"), [
    pytest.param(*case, id=name) for name, case in CONFTEST_ENDINGS.items()])
def test_a_contract_run_that_crashes_or_hangs_fails_the_stage(
    tmp_path: Path, statement: str, timeout: float, summary: str
) -> None:
    """A pytest run that a fixture ends (even with status 0), signals or hangs is an error."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""
        import os, time
        import pytest

        @pytest.fixture
        def auxcheck_device_output():
            {statement}
    """))
    options = CheckOptions(tmp_path, frozenset({"imports", "mypy", "sglang"}), stream=False,
                           pytest_args=("-p", "no:randomly"), timeout=timeout)
    [contract] = [r for r in run_stages(options) if r.stage == "contract"]
    assert (contract.result, summary in contract.summary) == ("error", True), contract.summary


@pytest.mark.slow
def test_a_bounded_command_that_outlives_its_limit_is_killed_with_its_group() -> None:
    """run_bounded kills the command and the processes it started when the time is up."""
    with hang_guard("run_bounded of a command that outlives its 1 s limit"):
        done = run_bounded([sys.executable, "-c", (
            "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(100)']); print(p.pid, flush=True); time.sleep(100)")],
            timeout=1)
    assert done.timed_out, done.output
    grandchild = int(done.output)
    wait_until(lambda: not alive(grandchild), "the command's own child, after the kill")


FORGER = textwrap.dedent("""
    import json, os, stat

    def _forge():
        lines = [{"t": "start", "i": 0, "pid": 0},
                 {"t": "report", "data": {"subject": "forger:T", "ok": True, "findings": [],
                                          "notes": []}},
                 {"t": "finished"}, {"t": "ended", "i": 0, "status": 0}]
        data = "".join(json.dumps(m) + "\\n" for m in lines).encode()
        for name in os.listdir("/proc/self/fd"):
            try:
                if stat.S_ISFIFO(os.fstat(int(name)).st_mode):
                    os.write(int(name), data)
            except OSError:
                pass

    class T(Clean):
        def copy_to_host(self, c):
            _forge()
            time.sleep(1000)
""")

PATCHER = textwrap.dedent("""
    os._exit = lambda status: print("os._exit", status, "intercepted")
    threading.Thread(target=time.sleep, args=(1000,)).start()

    class T(Clean):
        def copy_to_host(self, c):
            return None
""")


@pytest.mark.slow
def test_plugin_code_cannot_make_auxcheck_signal_a_process_it_did_not_start(
    tmp_path: Path
) -> None:
    """A plugin that replaces os._exit and leaves a thread running, or writes the runner's
    messages (a worker "started" as pid 0, a clean report) to every pipe it holds, ends as
    a finding; auxcheck, the shell that runs it and that shell's other jobs live on."""
    (tmp_path / "patcher.py").write_text(PRELUDE + PATCHER)
    (tmp_path / "forger.py").write_text(PRELUDE + FORGER)
    script = (f"sleep 60 & canary=$!; {sys.executable} -m auxcheck validate --timeout 2 "
              f"--format json --path {tmp_path} patcher:T forger:T > out.json; echo rc=$?; "
              "kill -0 $canary && echo canary alive; kill $canary")
    done = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False, start_new_session=True)
    assert (done.returncode, done.stdout) == (0, "rc=1\ncanary alive\n"), done.stderr
    patched, forged = json.loads((tmp_path / "out.json").read_text())
    assert [f["code"] for f in patched["findings"]] == ["AUX103"]
    assert "returned None" in patched["findings"][0]["message"]
    assert [f["code"] for f in forged["findings"]] == ["AUX103"]
    assert "did not return within 2 s" in forged["findings"][0]["message"]


@pytest.mark.slow
def test_a_project_module_named_like_the_standard_library_leaves_the_runner_alone(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """select.py and signal.py in the current folder do not replace the runner's own imports."""
    (tmp_path / "select.py").write_text("raise RuntimeError('the project select')\n")
    (tmp_path / "signal.py").write_text("import time\ntime.sleep(1000)\n")
    write_module(tmp_path, "T = Clean()")
    monkeypatch.chdir(tmp_path)
    _close_idle()  # a fresh runner, started from this folder
    status = main(["validate", "--timeout", "5", "hostile_mod:T"])
    sys.modules.pop("hostile_mod", None)
    assert (status, capsys.readouterr().out) == (0, "hostile_mod:T: ok\n\n0 findings in 1 object\n")


@pytest.mark.slow
def test_a_runner_that_cannot_start_in_time_is_one_finding_for_every_target(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A Python environment that hangs at start (a sitecustomize) is reported within the time
    limit, once, naming the environment, not the plugin; no target is tried again."""
    (tmp_path / "sitecustomize.py").write_text("import time\ntime.sleep(1000)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr("auxcheck._isolation.runner._BOOT_LIMIT", 1.0)
    _close_idle()
    with hang_guard("validate with a runner that never starts"):
        status = main(["validate", "--timeout", "1", "--format", "json", "m:A", "m:B"])
    reports = json.loads(capsys.readouterr().out)
    assert status == 1
    messages = [f["message"] for r in reports for f in r["findings"]]
    assert messages[0].startswith("auxcheck's runner process could not run m:A: it did not "
                                   "start Python within 1 s")
    assert "(not tried again: it failed for m:A first)" in messages[1]
    assert {f["title"] for r in reports for f in r["findings"]} == {
        "auxcheck could not run the checks: its runner process failed"}


BROKEN_OUTPUT = textwrap.dedent("""
    import pytest
    import torch

    class Broken:
        def __init__(self):
            self.rows = torch.ones(2, 3)

        def copy_to_host(self, copy_tensor):
            return None  # AUX103
""")

NOTHING_JUDGED = {
    "an-autouse-skip-of-every-item": (
        ("@pytest.fixture(autouse=True)\ndef _needs_cuda():\n    pytest.skip('needs CUDA')\n"
        "@pytest.fixture\ndef auxcheck_device_output():\n    return Broken()\n"),
        "error", ("every contract item of the plugin's objects was skipped or xfailed: nothing "
        "was judged")),
    "pytest-exit-0-in-the-fixture": (
        "@pytest.fixture\ndef auxcheck_device_output():\n    pytest.exit('done', returncode=0)\n",
        "error", "no contract item of the plugin's objects ran: nothing was judged"),
    "an-xfail-mark-on-every-item": (
        ("def pytest_collection_modifyitems(items):\n    for item in items:\n"
        "        item.add_marker(pytest.mark.xfail(reason='flaky on CPU'))\n"
        "@pytest.fixture\ndef auxcheck_device_output():\n    return Broken()\n"),
        "fail", "1 failed"),
}


@pytest.mark.slow
@pytest.mark.parametrize(("conftest", "result", "summary"), [
    pytest.param(*case, id=name) for name, case in NOTHING_JUDGED.items()])
def test_a_contract_run_that_judged_nothing_or_hid_a_failure_does_not_pass(
    tmp_path: Path, conftest: str, result: str, summary: str
) -> None:
    """Skips of every item, a clean pytest.exit and xfail marks cannot pass a broken plugin."""
    (tmp_path / "conftest.py").write_text(BROKEN_OUTPUT + conftest)
    options = CheckOptions(tmp_path, frozenset({"imports", "mypy", "sglang"}), stream=False,
                           pytest_args=("-p", "no:randomly", "-k", "AUX103 or imports"),
                           timeout=120)
    [contract] = [r for r in run_stages(options) if r.stage == "contract"]
    assert (contract.result, summary in contract.summary) == (result, True), contract.summary


ESCAPES = ("import subprocess, sys\n"
           "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
           " start_new_session=True)\n"
           "print(p.pid, flush=True)\n")


def test_a_streamed_command_hands_no_descriptor_of_ours_to_a_process_it_leaves_behind() -> None:
    """A process the command starts in a session of its own (a fixture's server) does not hold
    the caller's stream: whoever reads it sees its end as soon as the command ended."""
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as stream:
        done = run_bounded([sys.executable, "-c", ESCAPES], timeout=HANG_GUARD, stream=stream)
    try:
        ready, _, _ = select.select([read_end], [], [], 10)
        relayed = os.read(read_end, 1024).decode() if ready else ""
        ready, _, _ = select.select([read_end], [], [], 10)
        assert (done.returncode, ready != [], os.read(read_end, 1)) == (0, True, b"")
    finally:
        os.close(read_end)
        for pid in relayed.split():
            os.kill(int(pid), signal.SIGKILL)
