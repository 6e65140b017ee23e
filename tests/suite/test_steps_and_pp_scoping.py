"""Tests for what ``pytest --auxcheck`` judges an output on: the steps its publisher can see,
which outputs cross pipeline-parallel stages, and skips that name an item that failed."""

from __future__ import annotations

import textwrap

# In-process pytester runs drop the modules they imported afterwards, and torch cannot
# be imported twice in one process: import every heavy module the suite uses up front.
import pytest
import torch  # noqa: F401

import auxcheck._suite.item_runs
import auxcheck.machine
import auxcheck.migrate.scan  # noqa: F401

pytest_plugins = ["pytester"]

PLUGIN = textwrap.dedent("""
    import torch
    from auxcheck.protocols import append_auxiliary_output

    class OneTokenHost:
        '''Reads one token per commit, as a plugin written for stock SGLang may.'''

        def __init__(self, logprobs):
            self.logprobs = logprobs

        def consume(self, batch, commits):
            for req, commit in zip(batch.reqs, commits):
                if commit is not None:
                    (token,) = commit.token_ids

    class LogprobOutput:
        def __init__(self, logprobs):
            self.logprobs = logprobs

        def copy_to_host(self, copy_tensor):
            return OneTokenHost(copy_tensor(self.logprobs))

    class LogprobObserver:
        def is_active(self, sampling_info):
            return True

        def before_grammar(self, logits, sampling_info):
            return torch.log_softmax(logits.float(), dim=-1)

        def after_sample(self, state, token_ids):
            return LogprobOutput(state.gather(1, token_ids.view(-1, 1)).view(-1))

    def for_batch(batch):
        return LogprobOutput(torch.zeros(len(batch.reqs)))

    class Rows:
        def __init__(self, rows):
            self.rows = rows

        def consume(self, batch, commits):
            return None

    class Child:
        def __init__(self, rows):
            self.rows = rows

        def copy_to_host(self, copy_tensor):
            return Rows(copy_tensor(self.rows))

    class Crossing(Child):
        def to_pp_tensors(self):
            return {"rows": self.rows}

    class Receiver:
        def from_pp_tensors(self, tensors):
            return Crossing(tensors["rows"])

    def shared_children():
        rows = torch.zeros(3, 2)
        return append_auxiliary_output(Child(rows), Child(rows))

    def composite():
        return append_auxiliary_output(Crossing(torch.zeros(3, 2)), Child(torch.ones(3, 2)))
""")

TINY = textwrap.dedent("""
    from hypothesis import settings
    settings.register_profile("tiny", max_examples=3, deadline=None, database=None)
    import pytest
    import torch
    import plugin
""")

FAST = ("--auxcheck", "--auxcheck-profile=tiny", "-p", "no:randomly", "-rs")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """Returns a pytester project holding the plugin's classes as module ``plugin``."""
    pytester.makepyfile(plugin=PLUGIN)
    pytester.syspathinsert()
    return pytester


def write_conftest(project: pytest.Pytester, body: str) -> None:
    """Writes a conftest: the tiny profile and the plugin's import, then ``body``."""
    project.makeconftest(TINY + textwrap.dedent(body))


OBSERVER = """
    @pytest.fixture
    def auxcheck_sampling_observer():
        return plugin.LogprobObserver()
"""
OUTPUT = """
    @pytest.fixture
    def auxcheck_device_output():
        return plugin.for_batch
"""


# ---------------------------------------------------------------- steps follow the publisher


@pytest.mark.parametrize("body", [pytest.param(OBSERVER, id="sampling-observer"),
                                  pytest.param(OUTPUT, id="device-output")])
def test_a_consume_reading_one_token_per_commit_passes_as_stock_sglang_runs_it(
        project: pytest.Pytester, body: str) -> None:
    """Stock SGLang runs no sampling observer under speculative decoding: one token a step."""
    write_conftest(project, body)
    result = project.runpytest_inprocess(*FAST, "-k", "AUX202 and not impl")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("body", [pytest.param(OBSERVER, id="sampling-observer"),
                                  pytest.param(OUTPUT, id="device-output")])
@pytest.mark.parametrize("declared", [
    pytest.param(("--auxcheck-speculative",), id="option"),
    pytest.param(("-o", "auxcheck_speculative=true"), id="ini"),
])
def test_a_plugin_declaring_speculative_decoding_gets_multi_token_commits(
        project: pytest.Pytester, body: str, declared: tuple[str, ...]) -> None:
    """Declared, steps commit several tokens: the one-token unpacking fails AUX202."""
    write_conftest(project, body)
    result = project.runpytest_inprocess(*FAST, *declared, "-k", "AUX202 and not impl")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*seen:*consume raised ValueError*speculative decode*"])


@pytest.mark.parametrize(("declared", "kinds"), [
    pytest.param((), "chunked prefill, decode, finish, abort, retract", id="stock"),
    pytest.param(("--auxcheck-speculative",),
                 "chunked prefill, decode, speculative decode, finish, abort, retract",
                 id="speculative"),
])
def test_the_header_names_the_step_kinds_that_run(
        project: pytest.Pytester, declared: tuple[str, ...], kinds: str) -> None:
    """The header says which kinds of step the outputs are judged on."""
    write_conftest(project, OBSERVER)
    result = project.runpytest_inprocess(*FAST, *declared, "--co", "-q")
    result.stdout.fnmatch_lines([f"auxcheck *steps: {kinds}*"])


def test_an_unreadable_speculative_ini_value_is_a_usage_error_naming_it(
        project: pytest.Pytester) -> None:
    """A value pytest cannot read as a bool names the ini option and the values it takes."""
    write_conftest(project, OBSERVER)
    result = project.runpytest_inprocess(*FAST, "-o", "auxcheck_speculative=maybe")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([("*ini option auxcheck_speculative: *maybe*expected true or "
                                 "false*")])


# ---------------------------------------------------------------- skips name a failing item


def test_a_composite_whose_children_share_a_tensor_is_judged_by_the_composite_items(
        project: pytest.Pytester) -> None:
    """Children sharing a tensor is legal: no AUX3 item is skipped blaming AUX104, which passes."""
    write_conftest(project, """
        @pytest.fixture(params=[plugin.shared_children], ids=["shared_children"])
        def auxcheck_device_output(request):
            return request.param
    """)
    result = project.runpytest_inprocess(*FAST, "-k", "(AUX104 or AUX3) and not impl")
    assert "AUX104" not in "".join(line for line in result.outlines if "SKIPPED" in line)
    result.assert_outcomes(passed=7)


PP_FIXTURES = """
    @pytest.fixture(params=[{params}])
    def auxcheck_device_output(request):
        return request.param

    @pytest.fixture
    def auxcheck_pp_observer():
        return plugin.Receiver()
"""


def test_pp_items_that_have_nothing_to_judge_are_skipped_naming_the_failing_item(
        project: pytest.Pytester) -> None:
    """A composite has no to_pp_tensors: AUX401 fails; AUX402 and AUX403 judge nothing."""
    write_conftest(project, PP_FIXTURES.format(
        params='pytest.param(plugin.composite, id="composite")'))
    result = project.runpytest_inprocess(*FAST, "-k", "AUX4")
    result.assert_outcomes(failed=1, skipped=2)
    for code in ("AUX402", "AUX403"):
        result.stdout.fnmatch_lines([(f"SKIPPED*{code}: not judged*item AUX401-pp-transport"
                                     "[[]composite[]] fails (AUX401*")])


def test_a_value_marked_as_never_crossing_pp_stages_is_not_pp_checked(
        project: pytest.Pytester) -> None:
    """auxcheck_pp(False) on the composite keeps it out; the crossing output is still checked."""
    write_conftest(project, PP_FIXTURES.format(params="""
        pytest.param(plugin.Crossing(torch.zeros(3, 2)), id="crossing"),
        pytest.param(plugin.composite, id="composite", marks=pytest.mark.auxcheck_pp(False))"""))
    result = project.runpytest_inprocess(*FAST, "-k", "AUX4")
    result.assert_outcomes(passed=3, skipped=3)
    result.stdout.fnmatch_lines([("SKIPPED*AUX401: not judged, the value is marked "
                                 "auxcheck_pp(False)*")])


def test_a_value_marked_as_crossing_pp_stages_needs_to_pp_tensors(
        project: pytest.Pytester) -> None:
    """auxcheck_pp(True) with no PP observer still judges AUX401 on what the value has."""
    write_conftest(project, """
        @pytest.fixture(params=[pytest.param(plugin.composite, id="composite",
                                             marks=pytest.mark.auxcheck_pp(True))])
        def auxcheck_device_output(request):
            return request.param
    """)
    result = project.runpytest_inprocess(*FAST, "-k", "AUX4")
    result.assert_outcomes(failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*AUX401*needs `to_pp_tensors`*"])


@pytest.mark.parametrize("mark", ['auxcheck_pp("no")', "auxcheck_pp(True, False)",
                                  "auxcheck_pp(cross=False)"])
def test_an_unreadable_pp_mark_fails_one_item_naming_the_form(
        project: pytest.Pytester, mark: str) -> None:
    """A mark auxcheck cannot read is one failure saying what it takes, never a guess."""
    write_conftest(project, f"""
        @pytest.fixture(params=[pytest.param(plugin.Crossing(torch.zeros(3, 2)), id="v",
                                             marks=pytest.mark.{mark})])
        def auxcheck_device_output(request):
            return request.param
    """)
    result = project.runpytest_inprocess(*FAST, "-k", "not impl and not imports")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 1 and not outcomes.get("passed")
    result.stdout.fnmatch_lines([("*the mark auxcheck_pp(*) on this fixture value cannot be "
                                 "read; expected auxcheck_pp(True)*")])
