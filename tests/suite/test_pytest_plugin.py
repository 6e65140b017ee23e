"""Tests for ``pytest --auxcheck`` (auxcheck/pytest_plugin.py), run with pytester."""

from __future__ import annotations

import glob
import re
import sys
import textwrap

# In-process pytester runs drop the modules they imported afterwards, and torch cannot
# be imported twice in one process: import every heavy module the suite uses up front.
import pytest
import torch  # noqa: F401
from helpers.broken_files import BROKEN, Broken, write_broken
from helpers.releases import REAL_CACHE

import auxcheck._suite.item_runs
import auxcheck.machine
import auxcheck.migrate.scan  # noqa: F401
from auxcheck import __version__
from auxcheck.pytest_plugin import DEVICE_CHECKS
from auxcheck.releases import CACHE_ENV
from auxcheck.rules import RULES

pytest_plugins = ["pytester"]

OUTPUTS = textwrap.dedent("""
    import torch

    class Host:
        def __init__(self, rows):
            self.rows = rows

        def consume(self, batch, commits):
            return None

    class Good:
        def __init__(self, n=2):
            self.rows = torch.zeros(n, 2)

        def copy_to_host(self, copy_tensor):
            return Host(copy_tensor(self.rows))

    class DoubleCopy(Good):
        def copy_to_host(self, copy_tensor):
            copy_tensor(self.rows)
            return Host(copy_tensor(self.rows))

    class Returns(Host):
        def consume(self, batch, commits):
            return len(commits)

    class ReturnsOutput(Good):
        def copy_to_host(self, copy_tensor):
            return Returns(copy_tensor(self.rows))

    class PP(Good):
        def to_pp_tensors(self):
            return {}

    class Exits(Good):
        def copy_to_host(self, copy_tensor):
            raise SystemExit(0)

    class Sparse(Good):
        def __init__(self):
            self.rows = torch.eye(2).to_sparse()

    BUFFER = torch.zeros(4, 2)

    class Aliasing:
        def __init__(self):
            self.rows = BUFFER[:2]

        def copy_to_host(self, copy_tensor):
            return Host(copy_tensor(self.rows))
""")

TINY = textwrap.dedent("""
    from hypothesis import settings
    settings.register_profile("tiny", max_examples=3, deadline=None, database=None)
""")
"""A conftest preamble: a small Hypothesis profile the runs select, to stay fast."""

FAST = ("--auxcheck", "--auxcheck-profile=tiny", "-p", "no:randomly")
NON_STATIC = [name for _, name, codes in DEVICE_CHECKS if not set(codes) & {"AUX110", "AUX111"}]
IMPL_ITEMS = 8  # seven properties and the state machine


def conftest(body: str) -> str:
    """Returns a conftest: the tiny profile, then ``body``."""
    return TINY + "import pytest\nimport auxout\n" + textwrap.dedent(body)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """Returns a pytester project holding the output classes as module ``auxout``."""
    pytester.makepyfile(auxout=OUTPUTS)
    pytester.syspathinsert()
    return pytester


def ids_of(result: pytest.RunResult) -> list[str]:
    """Returns the item ids a ``--co -q`` run printed."""
    return [line for line in result.outlines if "::" in line and " " not in line]


# ---------------------------------------------------------------- off by default


def test_plain_run_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    """Without --auxcheck an installed auxcheck leaves torch, hypothesis and libcst unimported.

    Hypothesis's own pytest plugin imports hypothesis, so it is turned off here.
    """
    pytester.makeconftest("""
        import sys
        def pytest_unconfigure(config):
            heavy = [m for m in ("torch", "hypothesis", "libcst") if m in sys.modules]
            print("HEAVY", heavy, "AUXCHECK", "auxcheck.pytest_plugin" in sys.modules)
    """)
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:hypothesispytest")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["HEAVY [] AUXCHECK True"])


def test_without_the_flag_no_auxcheck_item_is_collected(project: pytest.Pytester) -> None:
    """A conftest with the fixture adds nothing unless --auxcheck is given."""
    project.makeconftest(conftest("""
        @pytest.fixture
        def auxcheck_device_output():
            return auxout.Good()
    """))
    project.makepyfile(test_mine="def test_one():\n    pass\n")
    result = project.runpytest_inprocess("--co", "-q")
    assert ids_of(result) == ["test_mine.py::test_one"]
    assert "auxcheck " not in result.stdout.str()


# ---------------------------------------------------------------- collection


def test_items_have_readable_ids_and_are_counted(project: pytest.Pytester) -> None:
    """Each device-output group, impl property and the import scan is a collected item."""
    project.makeconftest(conftest("""
        @pytest.fixture(name="auxcheck_device_output")
        def capture_output():
            return auxout.Good()
    """))
    result = project.runpytest_inprocess(*FAST, "--co", "-q")
    ids = ids_of(result)
    expected = [f"auxcheck::capture_output::{name}" for name in NON_STATIC]
    assert ids[: len(expected)] == expected
    assert ids[-1] == "auxcheck::imports"
    assert sum(i.startswith("auxcheck::impl::") and i.endswith("[reference]")
               for i in ids) == IMPL_ITEMS
    result.stdout.fnmatch_lines([f"{len(ids)} tests collected*"])


def test_parametrised_fixture_gives_items_per_value(project: pytest.Pytester) -> None:
    """Each fixture value gets its items, its id last; pytest.param ids and marks apply."""
    project.makeconftest(conftest("""
        @pytest.fixture(name="auxcheck_device_output", params=[
            1, pytest.param(2, id="two"), pytest.param(3, marks=pytest.mark.skip("why"))])
        def capture_output(request):
            return auxout.Good(request.param)
    """))
    result = project.runpytest_inprocess(*FAST, "-k", "AUX104-single-copy and not impl")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*3 device outputs*"])
    ids = ids_of(project.runpytest_inprocess(*FAST, "--co", "-q", "-k", "AUX104-single"))
    assert ids == [f"auxcheck::capture_output::AUX104-single-copy[{p}]" for p in (1, "two", 3)]


def test_fixture_in_a_subfolder_conftest_gets_its_own_suite(project: pytest.Pytester) -> None:
    """A fixture defined in sub/conftest.py is collected under sub, where it is visible."""
    project.mkpydir("sub")
    (project.path / "sub" / "conftest.py").write_text(conftest("""
        @pytest.fixture
        def auxcheck_device_output():
            return auxout.Good()
    """))
    project.makeconftest(TINY)
    result = project.runpytest_inprocess(*FAST, "-k", "AUX104-single-copy")
    result.assert_outcomes(passed=1)
    ids = ids_of(project.runpytest_inprocess(*FAST, "--co", "-q", "-k", "AUX104-single"))
    assert ids == ["sub::auxcheck::auxcheck_device_output::AUX104-single-copy"]


@pytest.mark.parametrize("value", [
    pytest.param("auxout.Good()", id="instance"),
    pytest.param("auxout.Good", id="factory"),
    pytest.param("st.integers(1, 3).map(auxout.Good)", id="strategy"),
])
def test_each_fixture_form_passes_for_a_good_output(project: pytest.Pytester, value: str) -> None:
    """An instance, a zero-argument factory and a Hypothesis strategy all run the checks."""
    project.makeconftest(conftest(f"""
        from hypothesis import strategies as st
        @pytest.fixture
        def auxcheck_device_output():
            return {value}
    """))
    result = project.runpytest_inprocess(*FAST, "-k", "not impl and not imports")
    result.assert_outcomes(passed=len(NON_STATIC) - 3, skipped=3)


@pytest.mark.parametrize("value", [
    pytest.param("auxout.DoubleCopy()", id="instance"),
    pytest.param("auxout.DoubleCopy", id="factory"),
    pytest.param("st.integers(1, 3).map(auxout.DoubleCopy)", id="strategy"),
])
def test_each_fixture_form_reports_a_planted_bug(project: pytest.Pytester, value: str) -> None:
    """A double copy fails the AUX104 item with the finding's seen, expected and fix."""
    project.makeconftest(conftest(f"""
        from hypothesis import strategies as st
        @pytest.fixture
        def auxcheck_device_output():
            return {value}
    """))
    result = project.runpytest_inprocess(*FAST, "-k", "AUX104-single-copy")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "AUX104 one copy passed the same tensor bytes to `copy_tensor` more than once",
        "  seen: *", "  expected: *", "  fix: *pass each distinct tensor*",
    ])


def test_a_strategy_failure_shows_the_shrunk_example(project: pytest.Pytester) -> None:
    """Hypothesis's falsifying example (shrunk to the smallest failing draw) is in the failure."""
    project.makeconftest(conftest("""
        from hypothesis import strategies as st
        @pytest.fixture
        def auxcheck_device_output():
            return st.integers(1, 50).map(
                lambda n: auxout.ReturnsOutput(n) if n >= 7 else auxout.Good(n))
    """))
    result = project.runpytest_inprocess(
        "--auxcheck", "-p", "no:randomly", "--auxcheck-profile=auxcheck-ci",
        "-k", "AUX204-consume-returns-none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["AUX204 `consume` returned a value", "*auxcheck_example(",
                                 ("*output=(lambda n: auxout.ReturnsOutput(n) if n >= 7 else "
                                 "auxout.Good(n))(7),")])


def test_static_buffers_fixture_adds_the_aliasing_items(project: pytest.Pytester) -> None:
    """AUX110/AUX111 items exist only with auxcheck_static_buffers, and find an alias."""
    project.makeconftest(conftest("""
        @pytest.fixture
        def auxcheck_device_output():
            return auxout.Aliasing()
        @pytest.fixture
        def auxcheck_static_buffers():
            return [auxout.BUFFER]
    """))
    result = project.runpytest_inprocess(*FAST, "-k", "AUX110 or AUX111")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["FAILED auxcheck::auxcheck_device_output::AUX110-*"])


@pytest.mark.parametrize(("value", "outcomes"), [
    pytest.param("auxout.Exits()", {"passed": 2, "skipped": 1}, id="copy-to-host-calls-sys-exit"),
    pytest.param("auxout.Sparse()", {"passed": 3}, id="sparse-tensor"),
    pytest.param("auxout.Aliasing()", {"passed": 2, "failed": 1}, id="aliasing"),
])
def test_aliasing_and_value_items_leave_copy_failures_to_aux103(
    project: pytest.Pytester, value: str, outcomes: dict[str, int]
) -> None:
    """AUX110/111 judge only their codes; AUX112 is skipped when the copy itself fails."""
    project.makeconftest(conftest(f"""
        @pytest.fixture
        def auxcheck_device_output():
            return {value}
        @pytest.fixture
        def auxcheck_static_buffers():
            return [auxout.BUFFER]
    """))
    result = project.runpytest_inprocess(*FAST, "-k", "AUX110 or AUX111 or AUX112")
    result.assert_outcomes(**outcomes)


def test_pp_items_skip_for_an_output_without_pp_support(project: pytest.Pytester) -> None:
    """The PP items skip, saying why, when there is no to_pp_tensors and no observer."""
    project.makeconftest(conftest("""
        @pytest.fixture
        def auxcheck_device_output():
            return auxout.Good()
    """))
    result = project.runpytest_inprocess(*FAST, "-k", "AUX4", "-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["*not a pipeline-parallel output*"])


def test_pp_items_run_for_an_output_with_to_pp_tensors(project: pytest.Pytester) -> None:
    """An output whose to_pp_tensors returns an empty mapping fails AUX402."""
    project.makeconftest(conftest("""
        @pytest.fixture
        def auxcheck_device_output():
            return auxout.PP()
    """))
    result = project.runpytest_inprocess(*FAST, "-k", "AUX402")
    result.assert_outcomes(failed=1)


MUTATING_HOSTS = """
    import dataclasses
    import torch

    class Host:
        def __init__(self, rows):
            self.rows = rows

    class Truncates(Host):
        def consume(self, batch, commits):
            for req in batch.reqs:
                del req.output_ids[:]

    class EditsFrozenCommit(Host):
        def consume(self, batch, commits):
            for commit in commits:
                if commit is not None:
                    object.__setattr__(commit, "output_index", commit.output_index + 1)

    class Output:
        host = Host

        def copy_to_host(self, copy_tensor):
            return self.host(copy_tensor(torch.zeros(3, 2)))
"""


@pytest.mark.parametrize("host", ["Truncates", "EditsFrozenCommit"])
def test_the_suite_and_the_validator_judge_consume_by_one_rule(
    pytester: pytest.Pytester, host: str
) -> None:
    """A consume that edits request output or a commit in place is AUX203 in both, alike."""
    import importlib
    import sys

    pytester.makepyfile(mutating=MUTATING_HOSTS)
    pytester.syspathinsert()
    pytester.makeconftest(TINY + textwrap.dedent(f"""
        import pytest
        import mutating

        class Mine(mutating.Output):
            host = mutating.{host}

        @pytest.fixture
        def auxcheck_device_output():
            return Mine()
    """))
    result = pytester.runpytest_inprocess(*FAST, "-k", "AUX20")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*AUX203-consume-read-only*", "AUX203 `consume` mutated*"])

    from auxcheck.validate import check_host_output

    module = importlib.import_module("mutating")
    try:
        report = check_host_output(getattr(module, host)(None), batch_size=3)
    finally:
        sys.modules.pop("mutating", None)
    assert report.codes == ["AUX203"]


# ---------------------------------------------------------------- implementation


def test_a_dotted_impl_module_is_proved(project: pytest.Pytester) -> None:
    """--auxcheck-impl=module runs the properties on that module's append (here: reversed)."""
    project.makepyfile(reversed_impl="""
        from auxcheck.protocols import (CompositeDeviceAuxiliaryOutput,
                                        CompositeHostAuxiliaryOutput)
        def append_auxiliary_output(current, output):
            if current is None or output is None:
                return output if current is None else current
            return CompositeDeviceAuxiliaryOutput((output, current))
    """)
    project.makeconftest(TINY)
    result = project.runpytest_inprocess(*FAST, "--auxcheck-impl=reversed_impl",
                                         "-k", "AUX302-order")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*impl=reversed_impl*", "AUX302 append or composite broke*"])


NESTS_COMPOSITES = """
    from auxcheck.protocols import (CompositeDeviceAuxiliaryOutput,
                                    CompositeHostAuxiliaryOutput)
    def append_auxiliary_output(current, output):
        if current is None or output is None:
            return output if current is None else current
        return CompositeDeviceAuxiliaryOutput((current, output))  # nests a composite operand
"""


@pytest.mark.slow
@pytest.mark.parametrize(("profile", "outcome"), [
    pytest.param("mine-generates", {"failed": 1}, id="a-profile-that-generates-kills-it"),
    pytest.param("mine-explicit-only", {"passed": 1}, id="explicit-phase-only-runs-no-draws"),
])
def test_every_setting_of_a_users_profile_applies_to_the_impl_items(
    project: pytest.Pytester, profile: str, outcome: dict[str, int]
) -> None:
    """--auxcheck-profile=<the user's> applies its phases too, not only its example count.

    An append that nests composite operands is flat on two leaves (the explicit
    example) and caught by generated examples; a profile running the explicit phase
    alone draws none.
    """
    project.makepyfile(nests_composites=NESTS_COMPOSITES)
    project.makeconftest(TINY + textwrap.dedent("""
        from hypothesis import Phase, settings
        settings.register_profile("mine-generates", max_examples=60, database=None)
        settings.register_profile("mine-explicit-only", max_examples=60, database=None,
                                  phases=[Phase.explicit])
    """))
    result = project.runpytest_inprocess("--auxcheck", f"--auxcheck-profile={profile}",
                                         "-p", "no:randomly", "--auxcheck-impl=nests_composites",
                                         "-k", "impl and flattening")
    result.assert_outcomes(**outcome)


def test_the_reference_impl_passes_every_property(project: pytest.Pytester) -> None:
    """The impl group (properties and machine) passes on auxcheck's reference."""
    project.makeconftest(TINY)
    result = project.runpytest_inprocess(*FAST, "--auxcheck-impl=reference", "-k", "impl")
    result.assert_outcomes(passed=IMPL_ITEMS)


def test_a_real_release_is_proved_straight_from_its_wheel(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--auxcheck-impl=sglang==0.5.23 runs the properties and machine on that release's code."""
    monkeypatch.setenv(CACHE_ENV, str(REAL_CACHE))
    pytester.makeconftest(TINY)
    result = pytester.runpytest_inprocess(*FAST, "--auxcheck-impl=sglang==0.5.23", "-k", "impl",
                                          "-v")
    result.assert_outcomes(passed=IMPL_ITEMS)
    result.stdout.fnmatch_lines([
        f"auxcheck {__version__}: impl=sglang==0.5.23, nothing to check, profile=tiny, *",
        "*auxcheck::impl::AUX303-none-identity[[]sglang==0.5.23[]] PASSED*"])


def test_the_ini_setting_names_a_release_too(pytester: pytest.Pytester,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """auxcheck_impl = sglang==0.5.20 in the ini file proves that release."""
    monkeypatch.setenv(CACHE_ENV, str(REAL_CACHE))
    pytester.makeini("[pytest]\nauxcheck_impl = sglang==0.5.20\n")
    pytester.makeconftest(TINY)
    result = pytester.runpytest_inprocess(*FAST, "--co", "-q")
    result.stdout.fnmatch_lines(["auxcheck *: impl=sglang==0.5.20, nothing to check, *",
                                 "auxcheck::impl::AUX301-flattening[[]sglang==0.5.20[]]"])


def test_a_release_before_the_composites_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sglang==0.5.19 has no auxiliary_output module: the error says 0.5.20 brought it."""
    monkeypatch.setenv(CACHE_ENV, str(REAL_CACHE))
    result = pytester.runpytest_inprocess("--auxcheck", "--auxcheck-impl=sglang==0.5.19")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([(
        "*--auxcheck-impl: implementation 'sglang==0.5.19': sglang 0.5.19 has no "
        "sglang.srt.managers.auxiliary_output; append and the composites arrived in sglang "
        "0.5.20, so prove 0.5.20 or later")])


def test_a_release_that_cannot_be_downloaded_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, offline_pip: None
) -> None:
    """A failed download stops the run with the release, pip's reason and the offline ways."""
    monkeypatch.setenv(CACHE_ENV, str(pytester.path / "empty-cache"))
    result = pytester.runpytest_inprocess("--auxcheck", "--auxcheck-impl=sglang==0.5.23")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([(
        "*--auxcheck-impl: cannot get sglang 0.5.23: pip download failed: ERROR: No matching "
        "distribution found for sglang==0.5.23. When offline, pass --wheel PATH (from "
        "`pip download --no-deps sglang==0.5.23` on a connected machine) or --source DIR (an "
        f"unpacked sglang 0.5.23), or put sglang-0.5.23-*.whl in {pytester.path}/empty-cache")])


def test_naming_a_release_without_the_flag_imports_nothing_heavy(
    pytester: pytest.Pytester
) -> None:
    """Without --auxcheck a release spec is only spell-checked: no torch, no download."""
    pytester.makeconftest("""
        import sys
        def pytest_unconfigure(config):
            print("HEAVY", [m for m in ("torch", "hypothesis", "sglang", "auxcheck.properties")
                            if m in sys.modules])
    """)
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:hypothesispytest",
                                           "--auxcheck-impl=sglang==0.5.23")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["HEAVY []"])


# ---------------------------------------------------------------- import scan


def test_the_import_scan_item_reports_old_imports(project: pytest.Pytester) -> None:
    """Old-module imports under the rootdir fail the imports item with their location."""
    project.makeconftest(TINY)
    project.makepyfile(legacy="from sglang.srt.sampling.sampling_observer import "
                              "CommittedTokens\n")
    result = project.runpytest_inprocess(*FAST, "--auxcheck-impl=reference", "-k", "imports")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["AUX501 import of a moved name*", "  at: *legacy.py:1:1"])


@pytest.mark.parametrize("case", BROKEN)
def test_the_import_scan_item_reports_a_broken_file_as_aux504(
        project: pytest.Pytester, case: Broken) -> None:
    """A source file the scan cannot read, decode or parse fails the imports item as AUX504,
    with where the parser stopped and what it said."""
    project.makeconftest(TINY)
    write_broken(project.path, case)
    result = project.runpytest_inprocess(*FAST, "--auxcheck-impl=reference", "-k", "imports")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "AUX504 a Python file that cannot be read, decoded or parsed",
        f"  at: *broken.py:{case.where}",
        f"  seen: *{glob.escape(case.seen)}",
        "  expected: *",
        f"  fix: *{RULES['AUX504'].hint[:40]}*",
    ])


def test_ignoring_aux504_keeps_the_imports_item_for_the_other_codes(
        project: pytest.Pytester) -> None:
    """With AUX504 ignored a broken file is left out of the imports item's findings, which
    still fails on an old import."""
    project.makeconftest(TINY)
    project.makepyfile(broken="from sglang.srt.sampling.sampling_observer import (\n",
                       legacy="from sglang.srt.sampling.sampling_observer import "
                              "CommittedTokens\n")
    result = project.runpytest_inprocess(*FAST, "--auxcheck-impl=reference", "-k", "imports",
                                         "--auxcheck-ignore=AUX504")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["AUX501 import of a moved name*", "  at: *legacy.py:1:1"])
    shown = result.stdout.str().replace("AUX501, AUX502, AUX504", "")
    assert "AUX504" not in shown.replace("--auxcheck-ignore=AUX504", "")


def test_auxcheck_paths_limits_the_scan(project: pytest.Pytester) -> None:
    """With ini auxcheck_paths, files outside those paths are not scanned."""
    project.makeconftest(TINY)
    project.makeini("[pytest]\nauxcheck_paths = src\n")
    project.mkpydir("src")
    project.makepyfile(legacy="from sglang.srt.sampling.sampling_observer import "
                              "CommittedTokens\n")
    result = project.runpytest_inprocess(*FAST, "--auxcheck-impl=reference", "-k", "imports")
    result.assert_outcomes(passed=1)


def test_auxcheck_ignore_removes_items(project: pytest.Pytester) -> None:
    """Ignored codes (ini and command line, families included) get no items."""
    project.makeconftest(conftest("""
        @pytest.fixture
        def auxcheck_device_output():
            return auxout.Good()
    """))
    project.makeini("[pytest]\nauxcheck_ignore = AUX5 AUX104\n")
    ids = ids_of(project.runpytest_inprocess(*FAST, "--auxcheck-ignore=AUX3", "--co", "-q"))
    assert "auxcheck::imports" not in ids
    assert not [i for i in ids if "AUX104" in i or "::AUX3" in i]
    assert "auxcheck::auxcheck_device_output::AUX105-no-copy-bypass" in ids


def test_pyproject_tool_auxcheck_ignore_removes_items(project: pytest.Pytester) -> None:
    """`ignore = [...]` in `[tool.auxcheck]` of the rootdir's pyproject.toml is honoured."""
    project.makeconftest(conftest("""
        @pytest.fixture
        def auxcheck_device_output():
            return auxout.Good()
    """))
    project.makepyprojecttoml('[tool.auxcheck]\nignore = ["AUX104", "AUX5"]\n')
    ids = ids_of(project.runpytest_inprocess(*FAST, "--co", "-q"))
    assert "auxcheck::imports" not in ids
    assert not [i for i in ids if "AUX104" in i]
    assert "auxcheck::auxcheck_device_output::AUX105-no-copy-bypass" in ids


@pytest.mark.parametrize(("body", "message"), [
    pytest.param('[tool.auxcheck]\nignore = "AUX104"\n',
                 "*pyproject.toml: ?tool.auxcheck? ignore must be a list of rule codes such as*got 'AUX104'",
                 id="not-a-list"),
    pytest.param('[tool.auxcheck]\nignore = ["AUX999"]\n', "*unknown rule code 'AUX999'*",
                 id="unknown-code"),
])
def test_a_bad_pyproject_ignore_is_a_usage_error(project: pytest.Pytester, body: str,
                                                 message: str) -> None:
    """A malformed `[tool.auxcheck] ignore` stops the run with an error naming the problem."""
    project.makepyprojecttoml(body)
    result = project.runpytest_inprocess("--auxcheck")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


# ---------------------------------------------------------------- options


@pytest.mark.parametrize(("args", "ini", "message"), [
    pytest.param(["--auxcheck-impl=not a module"], "",
                 "*argument --auxcheck-impl: invalid value 'not a module'; expected auto, "
                 "reference, sglang, sglang==X.Y.Z (a release such as sglang==0.5.23) or a "
                 "dotted module path such as my_plugin.aux_impl", id="impl-bad-form"),
    pytest.param(["--auxcheck-impl=sglang==banana"], "",
                 "*argument --auxcheck-impl: invalid value 'sglang==banana': 'banana' is not an "
                 "SGLang release version; expected sglang==X.Y.Z such as sglang==0.5.23",
                 id="impl-release-not-a-version"),
    pytest.param(["--auxcheck-impl=sglang==0.5.20,0.5.23"], "",
                 "*argument --auxcheck-impl: invalid value 'sglang==0.5.20,0.5.23': "
                 "'0.5.20,0.5.23' is not an SGLang release version; expected sglang==X.Y.Z such "
                 "as sglang==0.5.23", id="impl-release-list"),
    pytest.param(["--auxcheck-impl=no_such_module_xyz"], "",
                 "*--auxcheck-impl: implementation 'no_such_module_xyz': cannot import*",
                 id="impl-missing-module"),
    pytest.param(["--auxcheck-profile=nope"], "",
                 "*--auxcheck-profile: unknown Hypothesis settings profile 'nope'; expected one "
                 "of auxcheck-default, auxcheck-ci*", id="profile-unknown"),
    pytest.param(["--auxcheck-profile="], "",
                 "*argument --auxcheck-profile: invalid value ''*", id="profile-empty"),
    pytest.param(["--auxcheck-ignore=XYZ1"], "",
                 "*argument --auxcheck-ignore: unknown rule code 'XYZ1'*", id="ignore-bad"),
    pytest.param([], "auxcheck_impl = 1bad", "*ini option auxcheck_impl: invalid value '1bad'*",
                 id="ini-impl-bad"),
    pytest.param([], "auxcheck_impl = sglang==latest", "*ini option auxcheck_impl: invalid value "
                 "'sglang==latest': 'latest' is not an SGLang release version*",
                 id="ini-impl-release-bad"),
    pytest.param([], "auxcheck_ignore = AUX999", "*ini option auxcheck_ignore: unknown rule "
                 "code 'AUX999'*", id="ini-ignore-bad"),
])
def test_bad_option_values_are_usage_errors(pytester: pytest.Pytester, args: list[str],
                                            ini: str, message: str) -> None:
    """A bad value stops the run with an error naming the option and the accepted values."""
    pytester.makeini(f"[pytest]\n{ini}\n")
    result = pytester.runpytest_inprocess("--auxcheck", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_every_option_has_help(pytester: pytest.Pytester) -> None:
    """--help lists each command-line option and ini setting with its help text."""
    result = pytester.runpytest_inprocess("--help")
    for name in ("--auxcheck ", "--auxcheck-impl=IMPL", "--auxcheck-profile=NAME",
                 "--auxcheck-ignore=CODES", "auxcheck_impl ", "auxcheck_profile ",
                 "auxcheck_ignore ", "auxcheck_paths "):
        assert name in result.stdout.str(), name
    assert "sglang==X.Y.Z (that release, read from its wheel" in " ".join(
        result.stdout.str().split())


def test_header_line_names_impl_device_outputs_and_profile(project: pytest.Pytester) -> None:
    """One header line: version, implementation, device outputs, profile."""
    project.makeconftest(conftest("""
        @pytest.fixture(params=[1, 2])
        def auxcheck_device_output(request):
            return auxout.Good(request.param)
    """))
    result = project.runpytest_inprocess(*FAST, "--co", "-q", "--auxcheck-impl=reference")
    lines = [line for line in result.outlines if line.startswith("auxcheck ")]
    assert len(lines) == 1 and re.match(
        f"auxcheck {re.escape(__version__)}: impl=reference, 2 device outputs, profile=tiny, "
        r"(seed=\d+|derandomized); steps: ", lines[0])


def test_proving_only_an_implementation_needs_no_fixture(pytester: pytest.Pytester) -> None:
    """With --auxcheck-impl named, the impl and import items run alone; the header says so."""
    pytester.makeconftest(TINY)
    result = pytester.runpytest_inprocess(*FAST, "--auxcheck-impl=reference", "--co", "-q")
    result.stdout.fnmatch_lines(["auxcheck *: impl=reference, nothing to check, profile=tiny, *"])
    assert len(ids_of(result)) == IMPL_ITEMS + 1


# ---------------------------------------------------------------- selection and runners


def test_marker_selects_only_the_suite(project: pytest.Pytester) -> None:
    """-m auxcheck runs the suite's items; -m 'not auxcheck' runs only the user's tests."""
    project.makeconftest(conftest("""
        @pytest.fixture
        def auxcheck_device_output():
            return auxout.Good()
    """))
    project.makepyfile("def test_mine():\n    pass\n")
    mine = project.runpytest_inprocess(*FAST, "--strict-markers", "-m", "not auxcheck")
    mine.assert_outcomes(passed=1)
    suite = ids_of(project.runpytest_inprocess(*FAST, "-m", "auxcheck", "--co", "-q"))
    assert suite and all(i.startswith("auxcheck::") for i in suite)


def test_works_without_the_cacheprovider_and_with_user_settings(project: pytest.Pytester) -> None:
    """-p no:cacheprovider and a project's own loaded Hypothesis profile do not interfere."""
    project.makeconftest(conftest("""
        from hypothesis import settings
        settings.register_profile("mine", max_examples=1000)
        settings.load_profile("mine")
        @pytest.fixture
        def auxcheck_device_output():
            return auxout.Good()
    """))
    result = project.runpytest_inprocess(*FAST, "-p", "no:cacheprovider",
                                         "-k", "(AUX10 or AUX20) and not impl")
    result.assert_outcomes(passed=9)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="xdist subprocess spawning differs")
def test_runs_under_xdist(project: pytest.Pytester) -> None:
    """-n 2 collects the same items on both workers and prints the header once."""
    project.makeconftest(conftest("""
        @pytest.fixture(params=[1, 2])
        def auxcheck_device_output(request):
            return auxout.Good(request.param)
    """))
    result = project.runpytest_subprocess(*FAST, "-n", "2", "-k", "(AUX1 or imports) and not impl")
    result.assert_outcomes(passed=15)
    header = [line for line in result.outlines if re.match(r"auxcheck \S+: impl=", line)]
    assert [re.sub(r", (seed=\d+|derandomized)", "", line) for line in header] == [(
        f"auxcheck {__version__}: impl=reference (auto, 1/5 of the examples), "
        "2 device outputs, profile=tiny; steps: chunked prefill, decode, finish, abort, retract, "
        "sampling delayed by a grammar request")]


# ---------------------------------------------------------------- as SGLang runs a plugin

ENTROPY = textwrap.dedent("""
    import torch

    class EntropyHost:
        def __init__(self, entropy, top):
            self.entropy, self.top = entropy, top

        def consume(self, batch, commits):
            for i, (req, commit) in enumerate(zip(batch.reqs, commits)):
                if commit is None:
                    continue
                if req.customized_info is None:
                    req.customized_info = {}
                req.customized_info.setdefault("entropy", []).append(float(self.entropy[i]))
                req.customized_info.setdefault("top", []).append(self.top[i].tolist())

    class EntropyOutput:
        def __init__(self, batch_size=3, k=4):
            logits = torch.randn(batch_size, 32)
            probs = logits.softmax(-1)
            self.entropy = -(probs * probs.clamp_min(1e-9).log()).sum(-1)
            self.top = probs.topk(k, dim=-1).indices

        def copy_to_host(self, copy_tensor):
            return EntropyHost(copy_tensor(self.entropy), copy_tensor(self.top))

    class EntropyObserver:
        def is_active(self, sampling_info):
            return True

        def before_grammar(self, logits, sampling_info):
            return logits.clone()

        def after_sample(self, logits, token_ids):
            probs = logits.softmax(-1)
            out = EntropyOutput.__new__(EntropyOutput)
            out.entropy = -(probs * probs.clamp_min(1e-9).log()).sum(-1)
            out.top = probs.topk(4, dim=-1).indices
            return out
""")
"""A plugin written from the README: a token-entropy observer with [batch] and [batch, k] tensors."""


@pytest.fixture
def entropy(pytester: pytest.Pytester) -> pytest.Pytester:
    """Returns a pytester project holding the entropy plugin as module ``entropy``."""
    pytester.makepyfile(entropy=ENTROPY)
    pytester.syspathinsert()
    pytester.makeconftest(TINY + textwrap.dedent("""
        import pytest
        from hypothesis import strategies as st
        import entropy

        @pytest.fixture(params=["instance", "factory", "strategy"])
        def auxcheck_device_output(request):
            if request.param == "instance":
                return entropy.EntropyOutput()
            if request.param == "factory":
                return entropy.EntropyOutput
            return st.integers(1, 8).map(entropy.EntropyOutput)

        @pytest.fixture
        def auxcheck_sampling_observer():
            return entropy.EntropyObserver()
    """))
    return pytester


@pytest.mark.slow
def test_a_correct_plugin_from_the_readme_passes_in_five_runs_with_fresh_seeds(
    entropy: pytest.Pytester,
) -> None:
    """No drawn batch is mixed with an output built for another: 5 fresh seeds, 0 failures."""
    import random

    # Never derandomized (the profile in force is under CI=true), which would beat the seed.
    entropy.makeconftest(entropy.path.joinpath("conftest.py").read_text() + textwrap.dedent("""
        settings.register_profile("fresh", max_examples=3, deadline=None, database=None,
                                  derandomize=False)
    """))
    for _ in range(5):
        seed = random.SystemRandom().randrange(2**32)
        result = entropy.runpytest_inprocess(
            "--auxcheck", "--auxcheck-profile=fresh", "-p", "no:randomly",
            f"--hypothesis-seed={seed}", "-k", "not imports and not impl")  # no user output
        outcomes = result.parseoutcomes()
        assert outcomes.get("failed", 0) == 0, (seed, result.stdout.str()[-3000:])
        assert outcomes["passed"] > 50  # the output's and the observer's items, judged


def test_a_misnamed_fixture_is_an_error_naming_the_closest_names(project: pytest.Pytester) -> None:
    """`auxcheck_device_outputs` (one letter off) never reads as a pass: usage error, exit 4."""
    project.makeconftest(conftest("""
        @pytest.fixture
        def auxcheck_device_outputs():
            return auxout.Good()
    """))
    result = project.runpytest_inprocess(*FAST)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        ("*--auxcheck found nothing to check*auxcheck_device_output, auxcheck_sampling_observer, "
         "auxcheck_forward_observer*closest fixture names seen: auxcheck_device_outputs*")])


@pytest.mark.parametrize(("files", "message"), [
    pytest.param({"conftest.py": TINY,
                  "test_x.py": "import pytest\nimport auxout\n@pytest.fixture\n"
                               "def auxcheck_device_output():\n    return auxout.Good()\n"
                               "def test_x():\n    pass\n"},
                 "*nothing to check: auxcheck_device_output is defined in *test_x.py:3, a test "
                 "module; auxcheck reads it from conftest.py files only: move it to the "
                 "conftest.py of that folder", id="defined-in-a-test-module"),
    pytest.param({"conftest.py": conftest("""
                      @pytest.fixture(params=[])
                      def auxcheck_device_output(request):
                          return auxout.Good()
                  """)},
                 "*nothing to check: auxcheck_device_output at *conftest.py:7 has params=[], so "
                 "it gives no value to check; give it at least one", id="no-params"),
])
def test_a_fixture_that_gives_nothing_to_check_is_named_with_why(
        project: pytest.Pytester, files: dict[str, str], message: str) -> None:
    """The right name in the wrong place, or with no values: the error says where and why."""
    for name, text in files.items():
        (project.path / name).write_text(text)
    result = project.runpytest_inprocess(*FAST)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_results_file_that_cannot_be_written_is_a_usage_error(project: pytest.Pytester) -> None:
    """--auxcheck-results in a folder that does not exist stops the run before it starts."""
    project.makeconftest(conftest("""
        @pytest.fixture
        def auxcheck_device_output():
            return auxout.Good()
    """))
    missing = project.path / "no-such-folder" / "results.json"
    result = project.runpytest_inprocess(*FAST, f"--auxcheck-results={missing}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([(f"ERROR: --auxcheck-results: cannot write {missing}: the folder "
                                 f"{missing.parent} does not exist")])


SLOW_STRATEGY = """
    import time
    from hypothesis import Phase, settings, strategies as st
    # The deadline is explicit: under CI=true Hypothesis's default profile has none to inherit.
    settings.register_profile("replay", phases=[Phase.explicit, Phase.reuse], deadline=200,
                              database=None)
    settings.register_profile("strict", deadline=1, max_examples=5, database=None)
    class Slow(auxout.Good):
        def copy_to_host(self, copy_tensor):
            time.sleep(0.01)
            return super().copy_to_host(copy_tensor)
    @pytest.fixture(params=["slow", "double"])
    def auxcheck_device_output(request):
        return st.builds(Slow if request.param == "slow" else auxout.DoubleCopy)
"""


@pytest.mark.parametrize(("profile", "header"), [
    pytest.param("replay", "profile=replay (deadline ignored, generate phase added for your "
                           "outputs)", id="no-generate-phase"),
    pytest.param("strict", "profile=strict (deadline ignored)", id="a-1ms-deadline"),
])
def test_a_users_profile_judges_every_strategy_value_and_says_what_it_set_aside(
        project: pytest.Pytester, profile: str, header: str) -> None:
    """A profile that never generates, or whose deadline the step loop exceeds, still judges
    the drawn outputs (the planted AUX104 fails, the slow output passes), and the header says
    which of its settings auxcheck overrode."""
    project.makeconftest(conftest(SLOW_STRATEGY))
    result = project.runpytest_inprocess("--auxcheck", f"--auxcheck-profile={profile}", "-p",
                                         "no:randomly", "-rf", "-k", "AUX104-single-copy")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines([f"auxcheck *{header}, *",
                                 "FAILED auxcheck::*::AUX104-single-copy[[]double[]]*"])


def test_a_strategy_hypothesis_refuses_to_draw_fails_one_item_with_its_message(
        project: pytest.Pytester) -> None:
    """A strategy whose smallest value is a megabyte fails Hypothesis's health check at once:
    the AUX103 item says so, the other items are skipped naming it."""
    project.makeconftest(conftest("""
        from hypothesis import strategies as st
        @pytest.fixture
        def auxcheck_device_output():
            return st.binary(min_size=10**6).map(lambda data: auxout.DoubleCopy())
    """))
    result = project.runpytest_inprocess(*FAST, "-rfs", "-k", "not impl and not imports")
    result.assert_outcomes(failed=1, skipped=19)
    result.stdout.fnmatch_lines([
        "FAILED auxcheck::*::AUX103-copy-to-host-result*",
        ("*AUX104: not judged, item AUX103-copy-to-host-result fails (AUX103 Hypothesis could not "
        "draw device outputs from the fixture's strategy: FailedHealthCheck: *")])


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="xdist subprocess spawning differs")
def test_under_xdist_finding_nothing_to_check_fails_one_item(project: pytest.Pytester) -> None:
    """With -n 2 the workers cannot end the run: one item fails with the same message."""
    project.makeconftest(conftest("""
        @pytest.fixture
        def auxcheck_device_outputs():
            return auxout.Good()
    """))
    result = project.runpytest_subprocess(*FAST, "-n", "2")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([("*found nothing to check*closest fixture names seen: "
                                  "auxcheck_device_outputs*")])


def test_a_planted_arity_bug_fails_one_item_and_skips_what_depends_on_it(
    project: pytest.Pytester,
) -> None:
    """One cause, one failure: the AUX102 item fails, items needing a copy skip naming it."""
    project.makepyfile(arity=textwrap.dedent("""
        import torch
        class WrongArity:
            def __init__(self):
                self.rows = torch.zeros(3, 2)
            def copy_to_host(self):
                return None
    """))
    project.makeconftest(conftest("""
        import arity
        @pytest.fixture
        def auxcheck_device_output():
            return arity.WrongArity()
    """))
    result = project.runpytest_inprocess(*FAST, "-rfs", "-k", "not impl and not imports")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1
    result.stdout.fnmatch_lines(["FAILED *AUX102-copy-to-host-arity*"])
    result.stdout.fnmatch_lines([("SKIPPED *AUX202: not judged*item AUX102-copy-to-host-arity "
                                  "fails*")])


def test_observer_fixtures_get_their_own_items_run_through_the_step_loop(
    project: pytest.Pytester,
) -> None:
    """A reusing sampling observer fails AUX112; a forward observer's graph view fails AUX110."""
    project.makepyfile(observers=textwrap.dedent("""
        import torch
        import auxout

        class Reusing:
            def __init__(self):
                self.buffer = torch.zeros(16, 2)
            def is_active(self, info):
                return True
            def before_grammar(self, logits, info):
                return logits.shape[0]
            def after_sample(self, n, token_ids):
                self.buffer[:n, 0] = token_ids.float()
                return auxout.Good.__new__(auxout.Good).__class__ and Published(self.buffer[:n])

        class Published(auxout.Good):
            def __init__(self, rows):
                self.rows = rows

        class GraphView:
            def after_forward(self, batch, forward_batch, logits_output, *, can_run_graph):
                return Published(logits_output.hidden_states)
    """))
    project.makeconftest(conftest("""
        import observers
        @pytest.fixture
        def auxcheck_sampling_observer():
            return observers.Reusing
        @pytest.fixture
        def auxcheck_forward_observer():
            return observers.GraphView()
    """))
    result = project.runpytest_inprocess(*FAST, "-k", "not impl and not imports")
    failed = sorted(line.split(" ")[1] for line in result.outlines if line.startswith("FAILED"))
    assert failed == ["auxcheck::auxcheck_forward_observer::AUX110-static-buffer-alias",
                      "auxcheck::auxcheck_sampling_observer::AUX112-values-at-copy"]


@pytest.mark.parametrize(("size", "outcome"), [
    pytest.param(5, {"failed": 0}, id="declared-right"),
    pytest.param(2, {"failed": 1}, id="declared-wrong"),
])
def test_auxcheck_batch_size_declares_the_batch_an_output_is_built_for(
    project: pytest.Pytester, size: int, outcome: dict[str, int],
) -> None:
    """A lone [layers, batch, h] tensor: the declared size is used, never a guess."""
    project.makepyfile(layers=textwrap.dedent("""
        import torch
        class Host:
            def __init__(self, hidden):
                self.hidden = hidden
            def consume(self, batch, commits):
                assert self.hidden.shape[1] == len(batch.reqs)
        class LayersFirst:
            def __init__(self):
                self.hidden = torch.zeros(2, 5, 4)
            def copy_to_host(self, copy_tensor):
                return Host(copy_tensor(self.hidden))
    """))
    project.makeconftest(conftest(f"""
        import layers
        @pytest.fixture
        def auxcheck_device_output():
            return layers.LayersFirst()
        @pytest.fixture
        def auxcheck_batch_size():
            return {size}
    """))
    result = project.runpytest_inprocess(*FAST, "-k", "AUX202-consume")
    assert result.parseoutcomes().get("failed", 0) == outcome["failed"]


@pytest.mark.slow
def test_a_factory_taking_the_batch_is_given_each_step_s_batch(project: pytest.Pytester) -> None:
    """`def make(batch)` as the fixture value: every output is built for, and consumed with, its batch."""
    project.makepyfile(built=textwrap.dedent("""
        import torch
        class Host:
            def __init__(self, rids):
                self.rids = rids
            def consume(self, batch, commits):
                assert [r.rid for r in batch.reqs] == self.rids
        class Built:
            def __init__(self, batch):
                self.rids = [r.rid for r in batch.reqs]
                self.rows = torch.zeros(len(batch.reqs), 2)
            def copy_to_host(self, copy_tensor):
                copy_tensor(self.rows)
                return Host(self.rids)
    """))
    project.makeconftest(conftest("""
        import built
        @pytest.fixture
        def auxcheck_device_output():
            def make(batch):
                return built.Built(batch)
            return make
    """))
    result = project.runpytest_inprocess(*FAST, "-k", "not impl and not imports")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes["passed"] > 10


def test_device_publication_passes_and_is_listed_as_a_note(project: pytest.Pytester) -> None:
    """An output keeping its device tensors passes AUX105; the summary lists the AUX106 note."""
    project.makepyfile(publish=textwrap.dedent("""
        import torch
        import auxout
        class Publishes(auxout.Good):
            def copy_to_host(self, copy_tensor):
                return auxout.Host(self.rows)
    """))
    project.makeconftest(conftest("""
        import publish
        @pytest.fixture
        def auxcheck_device_output():
            return publish.Publishes()
    """))
    result = project.runpytest_inprocess(*FAST, "-k", "AUX105")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*auxcheck notes*", "*AUX105-no-copy-bypass: AUX106 *"])
