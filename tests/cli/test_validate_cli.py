"""Tests for ``auxcheck validate`` (in-process through auxcheck.cli.main) and ``auxcheck rules``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.paths import EXAMPLES
from helpers.progress import show_progress, shown_environment, without_timed_lines

from auxcheck._core import progress
from auxcheck.cli import main
from auxcheck.rules import RULES

CAPTURE = str(EXAMPLES / "capture_plugin")
BROKEN = str(EXAMPLES / "broken_plugin")

PLUGIN_SOURCE = textwrap.dedent("""
    import torch

    class Host:
        def consume(self, batch, commits):
            return None

    class Output:
        def __init__(self):
            self.rows = torch.ones(2, 3)

        def copy_to_host(self, copy_tensor):
            copy_tensor(self.rows)
            return Host()

    class TwiceOutput(Output):
        def copy_to_host(self, copy_tensor):
            copy_tensor(self.rows)
            copy_tensor(self.rows)
            return Host()

    INSTANCE = Output()
    TWICE = TwiceOutput()

    def make_output():
        return Output()

    def make_with_args(size):
        return Output()

    def make_raising():
        raise RuntimeError("no GPU here")

    def make_exiting():
        raise SystemExit(0)

    class Namespace:
        instance = Output()

    NAMED_BUFFERS = {"graph_out": INSTANCE.rows}

    class LayersHost:
        def __init__(self, hidden):
            self.hidden = hidden

        def consume(self, batch, commits):
            assert self.hidden.shape[1] == len(batch.reqs)

    class LayersFirst:
        def __init__(self):
            self.hidden = torch.zeros(2, 5, 4)

        def copy_to_host(self, copy_tensor):
            return LayersHost(copy_tensor(self.hidden))

    class GraphView:
        def after_forward(self, batch, forward_batch, logits_output, *, can_run_graph):
            return View(logits_output.hidden_states)

    class View(Output):
        def __init__(self, rows):
            self.rows = rows

    def make_registry():
        from auxcheck.aliasing import StaticBufferRegistry

        registry = StaticBufferRegistry()
        registry.register(INSTANCE.rows, name="graph_out")
        return registry
""")


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Iterator[str]:
    """Returns a directory holding the module ``tmp_plugin_mod`` with outputs and factories."""
    (tmp_path / "tmp_plugin_mod.py").write_text(PLUGIN_SOURCE)
    yield str(tmp_path)
    sys.modules.pop("tmp_plugin_mod", None)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["validate", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.slow
@pytest.mark.parametrize("target", [
    pytest.param("tmp_plugin_mod:INSTANCE", id="instance"),
    pytest.param("tmp_plugin_mod:make_output", id="factory-function"),
    pytest.param("tmp_plugin_mod:Output", id="class-as-factory"),
    pytest.param("tmp_plugin_mod:Namespace.instance", id="dotted-attribute"),
])
def test_a_clean_object_exits_zero(
    capsys: pytest.CaptureFixture[str], plugin_dir: str, target: str
) -> None:
    """Instances, factories, classes and dotted attributes load and validate clean."""
    status, out, err = run(capsys, "--path", plugin_dir, target)
    assert (status, err) == (0, "")
    assert out == f"{target}: ok\n\n0 findings in 1 object\n"


def test_findings_exit_one_and_are_printed(
    capsys: pytest.CaptureFixture[str], plugin_dir: str
) -> None:
    """An object with findings exits 1 and prints each finding with its code."""
    status, out, _ = run(capsys, "--path", plugin_dir, "tmp_plugin_mod:TWICE",
                         "tmp_plugin_mod:INSTANCE")
    assert status == 1
    lines = out.splitlines()
    assert lines[0] == "tmp_plugin_mod:TWICE: 1 finding"
    assert lines[1].startswith("  AUX104 copy_tensor argument #2 [2, 3] float32")
    assert lines[2] == "tmp_plugin_mod:INSTANCE: ok"
    assert lines[-1] == "1 finding in 2 objects"


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["no_such_pkg.outputs:X"],
                 "cannot import module 'no_such_pkg.outputs': No module named 'no_such_pkg'",
                 id="missing-module"),
    pytest.param(["tmp_plugin_mod:Missing"],
                 "module 'tmp_plugin_mod' has no attribute 'Missing'", id="missing-attribute"),
    pytest.param(["tmp_plugin_mod:Namespace.gone"],
                 "'tmp_plugin_mod:Namespace' has no attribute 'gone'", id="missing-nested"),
    pytest.param(["tmp_plugin_mod"],
                 "expected MODULE:ATTR, got 'tmp_plugin_mod' (e.g. mypkg.outputs:make_output)",
                 id="no-colon"),
    pytest.param(["tmp_plugin_mod:make_with_args"],
                 "'tmp_plugin_mod:make_with_args' is a factory that needs arguments (missing a "
                 "required argument: 'size'); point at an instance or a zero-argument factory",
                 id="factory-with-arguments"),
    pytest.param(["--ignore", "AUX9", "tmp_plugin_mod:INSTANCE"],
                 "--ignore: unknown rule code 'AUX9'; expected a code such as AUX104 or a "
                 "family prefix such as AUX1 (see `auxcheck rules`)", id="bad-ignore"),
    pytest.param(["--static-buffers", "tmp_plugin_mod:make_output", "tmp_plugin_mod:INSTANCE"],
                 "--static-buffers 'tmp_plugin_mod:make_output' is a Output; expected a "
                 "tensor or an iterable of tensors", id="static-buffers-not-iterable"),
])
def test_usage_errors_exit_two_with_the_reason(
    capsys: pytest.CaptureFixture[str], plugin_dir: str, args: list[str], message: str
) -> None:
    """A target or option that cannot be used exits 2 naming what failed and why."""
    status, out, err = run(capsys, "--path", plugin_dir, *args)
    assert (status, out) == (2, "")
    assert err == f"auxcheck validate: error: {message}\n"


LOADING_RAISES = {
    "import-raises": ("raise RuntimeError('no GPU here')",
                      ("importing module 'tmp_load_mod' (tmp_load_mod:T) raised "
                      "RuntimeError('no GPU here')")),
    "import-calls-sys-exit-0": ("import sys\nsys.exit(0)",
                                ("importing module 'tmp_load_mod' (tmp_load_mod:T) raised "
                                "SystemExit(0)")),
    "import-calls-sys-exit-3": ("raise SystemExit(3)", "raised SystemExit(3)"),
    "import-of-a-missing-dependency": ("import no_such_dependency_of_the_plugin",
                                       ("raised ModuleNotFoundError(\"No module named "
                                       "'no_such_dependency_of_the_plugin'\")")),
    "trace-function-exits": (("import sys, threading\n"
                             "def trace(*args):\n    raise SystemExit(8)\n"
                             "sys.settrace(trace); threading.settrace(trace)"),
                             "raised SystemExit(8)"),
    "module-getattr-exits": ("def __getattr__(name):\n    raise SystemExit(4)",
                             "reading 'T' of module 'tmp_load_mod' raised SystemExit(4)"),
    "factory-raises": ("def T():\n    raise RuntimeError('no GPU here')",
                       "the factory tmp_load_mod:T raised RuntimeError('no GPU here')"),
    "factory-calls-sys-exit": ("def T():\n    raise SystemExit(0)",
                               "the factory tmp_load_mod:T raised SystemExit(0)"),
    "exception-str-exits": (("class E(Exception):\n    def __str__(self):\n"
                            "        raise SystemExit(1)\n"
                            "def T():\n    raise E()"), "raised tmp_load_mod.E()"),
}


@pytest.mark.slow
@pytest.mark.parametrize(("source", "seen"), [
    pytest.param(*case, id=name) for name, case in LOADING_RAISES.items()])
def test_plugin_code_that_raises_while_a_target_loads_is_a_finding_and_the_run_goes_on(
    capsys: pytest.CaptureFixture[str], plugin_dir: str, source: str, seen: str
) -> None:
    """An import, attribute or factory that raises (SystemExit too) is AUX101, exit 1, not a
    usage error: the JSON stays whole and the next target is still checked."""
    (Path(plugin_dir) / "tmp_load_mod.py").write_text(source + "\n")
    status, out, err = run(capsys, "--path", plugin_dir, "--format", "json", "tmp_load_mod:T",
                           "tmp_plugin_mod:INSTANCE")
    sys.modules.pop("tmp_load_mod", None)
    hostile, clean = json.loads(out)
    [finding] = hostile["findings"]
    assert (status, finding["code"], clean["ok"]) == (1, "AUX101", True), err
    assert seen in finding["message"]
    assert finding["title"].startswith("the target could not be loaded")
    assert "Traceback" not in err


def test_a_factory_whose_signature_cannot_be_read_is_called_all_the_same(
    capsys: pytest.CaptureFixture[str], plugin_dir: str
) -> None:
    """A hostile __signature__ says nothing about the arguments: the factory is just called."""
    (Path(plugin_dir) / "tmp_load_mod.py").write_text(
        "from tmp_plugin_mod import Output\n"
        "def T():\n    return Output()\n"
        "T.__signature__ = property(lambda self: None)\n")
    status, out, err = run(capsys, "--path", plugin_dir, "tmp_load_mod:T")
    sys.modules.pop("tmp_load_mod", None)
    assert (status, out.splitlines()[0], err) == (0, "tmp_load_mod:T: ok", "")


def test_text_output_escapes_what_plugin_code_raised_and_never_fails_to_encode(
    capsys: pytest.CaptureFixture[str], plugin_dir: str
) -> None:
    """A lone surrogate or an escape sequence in a plugin's error shows escaped, no traceback."""
    (Path(plugin_dir) / "tmp_load_mod.py").write_text(
        "from tmp_plugin_mod import Output\n"
        "class T(Output):\n    def copy_to_host(self, copy_tensor):\n"
        "        raise RuntimeError('bad \\ud800 \\x1b[2J\\r\\n0 findings in 1 object')\n")
    status, out, err = run(capsys, "--path", plugin_dir, "tmp_load_mod:T")
    sys.modules.pop("tmp_load_mod", None)
    assert (status, err) == (1, "")
    assert "RuntimeError: bad \\ud800 \\x1b[2J\\r\n" in out
    assert out.endswith("\n\n1 finding in 1 object\n")


def test_an_error_python_ignores_in_plugin_code_is_one_line_not_a_traceback(
    capsys: pytest.CaptureFixture[str], plugin_dir: str
) -> None:
    """A __del__ raising SystemExit (Python ignores it) is said once, in one line, on stderr."""
    (Path(plugin_dir) / "tmp_load_mod.py").write_text(
        "from tmp_plugin_mod import Host, Output\n"
        "class Dying(Host):\n    def __del__(self):\n        raise SystemExit(1)\n"
        "class T(Output):\n    def copy_to_host(self, copy_tensor):\n"
        "        copy_tensor(self.rows)\n        return Dying()\n")
    status, out, err = run(capsys, "--path", plugin_dir, "tmp_load_mod:T")
    sys.modules.pop("tmp_load_mod", None)
    assert (status, out.splitlines()[0]) == (0, "tmp_load_mod:T: ok")
    assert err == ("auxcheck: plugin code raised SystemExit(1) in <function "
                   "tmp_load_mod.Dying.__del__>, where Python ignores it\n")


@pytest.mark.parametrize("buffers", [
    pytest.param("tmp_plugin_mod:NAMED_BUFFERS", id="name-to-tensor-mapping"),
    pytest.param("tmp_plugin_mod:make_registry", id="registry-factory"),
])
def test_static_buffers_may_be_named(
    capsys: pytest.CaptureFixture[str], plugin_dir: str, buffers: str
) -> None:
    """--static-buffers takes what check_device_output takes; findings name the buffer."""
    status, out, err = run(capsys, "--path", plugin_dir, "--static-buffers", buffers,
                           "tmp_plugin_mod:INSTANCE", "tmp_plugin_mod:make_output")
    assert (status, err) == (1, "")
    assert out.splitlines()[0] == "tmp_plugin_mod:INSTANCE: 1 finding"
    assert "AUX110" in out and "'graph_out'" in out
    assert "tmp_plugin_mod:make_output: ok" in out


def test_json_format_holds_one_report_per_target(
    capsys: pytest.CaptureFixture[str], plugin_dir: str
) -> None:
    """--format json prints a list of reports with their findings."""
    status, out, _ = run(capsys, "--path", plugin_dir, "--format", "json",
                         "tmp_plugin_mod:TWICE", "tmp_plugin_mod:INSTANCE")
    data = json.loads(out)
    assert status == 1
    assert [(r["subject"], r["ok"]) for r in data] == [
        ("tmp_plugin_mod:TWICE", False), ("tmp_plugin_mod:INSTANCE", True)]
    assert [f["code"] for f in data[0]["findings"]] == ["AUX104"]


@pytest.mark.parametrize("ignore", ["AUX104", "aux1", "AUX203,AUX104"])
def test_ignored_codes_are_dropped(
    capsys: pytest.CaptureFixture[str], plugin_dir: str, ignore: str
) -> None:
    """--ignore drops findings by code or family, and the exit status follows."""
    status, out, _ = run(capsys, "--path", plugin_dir, "--ignore", ignore, "tmp_plugin_mod:TWICE")
    assert status == 0
    assert out.startswith("tmp_plugin_mod:TWICE: ok\n")


def test_the_example_plugin_validates_clean_in_every_role(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """The capture plugin's device output, host output and observer are clean, PP included."""
    status, out, _ = run(capsys, "--path", CAPTURE,
                         "--pp-observer", "capture_plugin.outputs:make_observer",
                         "--static-buffers", "capture_plugin.outputs:static_buffers",
                         "capture_plugin.outputs:make_device_output",
                         "capture_plugin.outputs:make_host_output",
                         "capture_plugin.outputs:make_observer")
    assert status == 0, out
    assert out.endswith("0 findings in 3 objects\n")


@pytest.mark.slow
def test_every_planted_bug_is_reported_with_its_code(capsys: pytest.CaptureFixture[str]) -> None:
    """Each class of the broken plugin yields exactly its documented code."""
    sys.path.insert(0, BROKEN)
    try:
        from broken_plugin.outputs import PLANTED_BUGS, PLANTED_OBSERVER_BUGS
    finally:
        sys.path.remove(BROKEN)
    # Observers too: one with a second, unplanted bug made `make demo` fail unnoticed.
    planted = {**PLANTED_BUGS, **PLANTED_OBSERVER_BUGS}
    targets = [f"broken_plugin.outputs:{name}" for name in planted]
    status, out, _ = run(capsys, "--path", BROKEN, "--format", "json",
                         "--static-buffers", "broken_plugin.outputs:static_buffers", *targets)
    found = {r["subject"].partition(":")[2]: sorted({f["code"] for f in r["findings"]})
             for r in json.loads(out)}
    assert status == 1
    assert found == {name: [code] for name, code in planted.items()}


def test_pp_observer_enables_the_pipeline_parallel_checks(
    capsys: pytest.CaptureFixture[str], plugin_dir: str
) -> None:
    """--pp-observer makes an output without to_pp_tensors an AUX401 finding."""
    status, out, _ = run(capsys, "--path", plugin_dir, "--path", CAPTURE,
                         "--pp-observer", "capture_plugin.outputs:make_observer",
                         "tmp_plugin_mod:INSTANCE")
    assert status == 1
    assert out.splitlines()[1].startswith("  AUX401 pipeline-parallel transport needs")


def test_the_path_option_does_not_leak_into_sys_path(
    capsys: pytest.CaptureFixture[str], plugin_dir: str
) -> None:
    """sys.path is restored after the command ran."""
    before = list(sys.path)
    run(capsys, "--path", plugin_dir, "tmp_plugin_mod:INSTANCE")
    assert sys.path == before


def test_rules_prints_every_code(capsys: pytest.CaptureFixture[str]) -> None:
    """`auxcheck rules` prints each code with its title and fix, in table order."""
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    heads = [line.split("  ", 1)[0] for line in out.splitlines() if line.startswith("AUX")]
    assert heads == list(RULES)
    assert f"AUX104  {RULES['AUX104'].title}\n        fix: {RULES['AUX104'].hint}" in out


@pytest.mark.slow
def test_the_installed_command_validates_in_a_subprocess(plugin_dir: str) -> None:
    """The installed `auxcheck` script runs validate end to end with the documented exit codes."""
    script = shutil.which("auxcheck") or str(Path(sys.executable).parent / "auxcheck")
    result = subprocess.run(
        [script, "validate", "--path", plugin_dir, "tmp_plugin_mod:TWICE"],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[0] == "tmp_plugin_mod:TWICE: 1 finding"
    assert result.stderr == ""


_DONE = re.compile(r"auxcheck validate: checking: done, (\d+ of \d+ targets) in \d+\.\d s")
"""The end line of ``validate``'s progress, its count captured."""


@pytest.mark.parametrize(("module", "targets"), [
    pytest.param("T = 1\nU = 2\n", ["T", "U"], id="each-target-run"),
    pytest.param("import os\n\nos._exit(3)\n", ["A", "B"], id="the-second-sharing-its-ending"),
])
def test_the_last_progress_line_counts_every_target_checked(
        module: str, targets: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Once every target is checked (run, or ended as the one before it did), the end line
    says so: ``done, 2 of 2 targets``, never the count before the last target ran."""
    (tmp_path / "tmp_counted_mod.py").write_text(module)
    show_progress(monkeypatch, delay=0.0)
    try:
        _, _, err = run(capsys, "--path", str(tmp_path), *(f"tmp_counted_mod:{t}" for t in targets))
    finally:
        sys.modules.pop("tmp_counted_mod", None)
    lines = [line for line in err.splitlines() if line.startswith("auxcheck validate: ")]
    last = _DONE.fullmatch(lines[-1]) if lines else None
    assert last is not None, err
    assert last.group(1) == "2 of 2 targets"
    assert lines[0].startswith("auxcheck validate: checking: 0 of 2 targets (")


@pytest.mark.slow
def test_the_installed_command_ends_its_progress_with_every_target_counted(
        tmp_path: Path) -> None:
    """A real run whose target outlasts the delay prints a progress line, and its end line
    counts the target checked: ``done, 1 of 1 targets``."""
    (tmp_path / "tmp_slow_mod.py").write_text(
        f"import time\n\ndef make_slowly():\n    time.sleep({progress.DELAY + 1})\n"
        "    return 1\n")
    script = shutil.which("auxcheck") or str(Path(sys.executable).parent / "auxcheck")
    result = subprocess.run(
        [script, "validate", "--path", str(tmp_path), "tmp_slow_mod:make_slowly"],
        capture_output=True, text=True, timeout=120, check=False, env=shown_environment())
    lines = result.stderr.splitlines()
    assert without_timed_lines(result.stderr) == [], result.stderr
    last = _DONE.fullmatch(lines[-1]) if lines else None
    assert last is not None, result.stderr
    assert last.group(1) == "1 of 1 targets"


@pytest.mark.parametrize(("size", "status"), [
    pytest.param("5", 0, id="the-batch-it-was-built-for"),
    pytest.param("2", 1, id="another-batch"),
])
def test_batch_size_declares_the_batch_an_output_is_built_for(
    capsys: pytest.CaptureFixture[str], plugin_dir: str, size: str, status: int
) -> None:
    """--batch-size N is used as given: a [layers, batch, h] output consumed with N requests."""
    code, out, _ = run(capsys, "--path", plugin_dir, "--batch-size", size,
                       "tmp_plugin_mod:LayersFirst")
    assert code == status
    assert ("AUX202" in out) == (status == 1)


def test_a_forward_observer_is_run_through_the_step_loop(
    capsys: pytest.CaptureFixture[str], plugin_dir: str
) -> None:
    """An object with after_forward is a forward observer: a graph view it publishes is AUX110."""
    code, out, _ = run(capsys, "--path", plugin_dir, "tmp_plugin_mod:GraphView")
    assert code == 1
    assert "AUX110" in out and "CUDA-graph output hidden_states" in out


MASKING_SOURCE = textwrap.dedent("""
    import torch

    class Host:
        def consume(self, batch, commits):
            return None

    class Rows:
        def __init__(self, rows):
            self.rows = rows

        def copy_to_host(self, copy_tensor):
            copy_tensor(self.rows)
            return Host()

    class Masking:
        def is_active(self, info):
            return True

        def before_grammar(self, logits, info):
            kth = logits.topk(5, dim=-1).values[:, -1:]
            logits.masked_fill_(logits < kth, float("-inf"))
            return logits.topk(2, dim=-1).values.clone()

        def after_sample(self, state, token_ids):
            return Rows(state)

    class MasksAClone(Masking):
        def before_grammar(self, logits, info):
            return super().before_grammar(logits.clone(), info)
""")


@pytest.mark.parametrize(("target", "status"), [
    pytest.param("tmp_masking_mod:Masking", 1, id="masks-the-logits-in-place"),
    pytest.param("tmp_masking_mod:MasksAClone", 0, id="masks-a-clone"),
])
def test_an_observer_writing_to_the_logits_it_was_handed_is_aux113(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str, status: int
) -> None:
    """validate runs the observer's hooks: masking the logits in place is AUX113, a clone is not."""
    (tmp_path / "tmp_masking_mod.py").write_text(MASKING_SOURCE)
    try:
        code, out, _ = run(capsys, "--path", str(tmp_path), target)
    finally:
        sys.modules.pop("tmp_masking_mod", None)
    assert code == status
    if status:
        assert out.splitlines()[1].startswith(
            "  AUX113 before_grammar at step 1 wrote to `logits` [3, 32] float32: 81 of 96 "
            "values changed; expected the observer to leave what SGLang handed it as it was")
    else:
        assert out == f"{target}: ok\n\n0 findings in 1 object\n"
