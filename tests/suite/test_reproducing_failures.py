"""Tests for the way back to a ``pytest --auxcheck`` failure: the Hypothesis seed in the header,
and under each failing item the command that re-runs exactly it, drawing the same example."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import shlex
import sys
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

    class Host:
        def __init__(self, size):
            self.size = size

        def consume(self, batch, commits):
            if self.size % 4:
                raise ValueError(f"bad size {self.size}")

    class Sized:
        '''A device output whose consume breaks unless its size is a multiple of 4.'''

        def __init__(self, size):
            self.size = size
            self.rows = torch.zeros(2, 2)

        def copy_to_host(self, copy_tensor):
            copy_tensor(self.rows)
            return Host(self.size)

    class BadObserver:
        def is_active(self, sampling_info):
            return True

        def before_grammar(self, logits, sampling_info):
            return logits.clone()

        def after_sample(self, state, token_ids):
            return Sized(3)
""")

PROFILES = textwrap.dedent("""
    import pytest
    from hypothesis import Phase, settings, strategies as st
    from hypothesis.database import DirectoryBasedExampleDatabase

    import plugin

    # No shrinking: the failing example reported is the first one drawn, which only the seed
    # decides. The database is on, as in auxcheck's default profile.
    settings.register_profile("drawn", max_examples=50, deadline=None, derandomize=False,
                              phases=[Phase.reuse, Phase.generate],
                              database=DirectoryBasedExampleDatabase("examples-db"))
    settings.register_profile("fixed", max_examples=50, deadline=None, derandomize=True,
                              phases=[Phase.generate], database=None)
""")

STRATEGY = PROFILES + textwrap.dedent("""
    @pytest.fixture(params=[st.builds(plugin.Sized, st.integers(0, 10**6))],
                    ids=["sizes [0, 1e6]"])
    def auxcheck_device_output(request):
        return request.param
""")
"""A conftest whose strategy draws outputs of which only some (three in four) fail AUX202."""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """Returns a pytester project with module ``plugin``, an ini file and a ``tests`` folder
    whose conftest gives the strategy."""
    pytester.makepyfile(plugin=PLUGIN)
    pytester.syspathinsert()
    pytester.makeini("[pytest]\n")
    tests = pytester.mkdir("tests")
    tests.joinpath("conftest.py").write_text(STRATEGY)
    return pytester


def rerun_lines(result: pytest.RunResult) -> list[str]:
    """Returns the commands the run printed under its failing items, once each (under CI=true
    the short summary repeats every failure's whole text)."""
    return list(dict.fromkeys(line.removeprefix("re-run: ") for line in result.outlines
                              if line.startswith("re-run: ")))


def run_pasted(pytester: pytest.Pytester, command: str) -> pytest.RunResult:
    """Returns the run of ``command`` exactly as a shell would split it."""
    words = shlex.split(command)
    assert words[:2] == ["pytest", "--auxcheck"], command
    return pytester.runpytest_inprocess(*words[1:])


def failed_ids(result: pytest.RunResult) -> list[str]:
    """Returns the ids of the items the run's summary lists as failed."""
    return [line.removeprefix("FAILED ").partition(" - ")[0] for line in result.outlines
            if line.startswith("FAILED ")]


def examples_by_command(result: pytest.RunResult) -> dict[str, list[str]]:
    """Returns, for each command printed, what the failure it ends says of the example."""
    found: dict[str, list[str]] = {}
    block: list[str] = []
    for line in result.outlines:
        if line.startswith("re-run: "):
            found.setdefault(line.removeprefix("re-run: "), block)
            block = []
        elif match := re.search(r"bad size \d+|output=Sized\(\d+\)", line):
            block.append(match.group())
    return found


def example_of(result: pytest.RunResult) -> list[str]:
    """Returns what the failures say of their examples, once each: the sizes consume saw and
    the drawn calls."""
    return list(dict.fromkeys(m.group() for line in result.outlines
                              for m in [re.search(r"bad size \d+|output=Sized\(\d+\)", line)]
                              if m))


HEADER_SEEDS = [
    pytest.param("drawn", (), r"seed=\d+", id="a-fresh-seed"),
    pytest.param("drawn", ("--hypothesis-seed=1234",), "seed=1234", id="the-given-seed"),
    pytest.param("drawn", ("--hypothesis-seed=spam",), "seed=spam", id="a-seed-that-is-text"),
    pytest.param("fixed", ("--hypothesis-seed=1234",), "derandomized",
                 id="a-derandomized-profile-beats-the-seed"),
]


@pytest.mark.parametrize(("profile", "args", "shown"), HEADER_SEEDS)
def test_the_header_shows_the_seed_the_items_draw_from(
        project: pytest.Pytester, profile: str, args: tuple[str, ...], shown: str) -> None:
    """The header ends with the Hypothesis seed: the one given, else a fresh one; a derandomized
    profile says so instead."""
    result = project.runpytest_inprocess("--auxcheck", f"--auxcheck-profile={profile}", "--co",
                                         "-q", *args)
    header = [line for line in result.outlines if line.startswith("auxcheck ")]
    assert len(header) == 1 and re.search(f", profile={profile}, {shown}(, |; |$)", header[0])


def test_a_failing_strategy_item_re_runs_alone_drawing_the_same_example(
        project: pytest.Pytester) -> None:
    """The printed command, pasted, runs that one item and fails on the same drawn size; the
    example database (on in the profile) is neither read nor written by the seeded runs."""
    result = project.runpytest_inprocess("--auxcheck", "--auxcheck-profile=drawn",
                                         "-k", "AUX202 and not impl")
    result.assert_outcomes(failed=1)
    [command] = rerun_lines(result)
    [seed] = [m.group(1) for line in result.outlines
              for m in [re.match(r"auxcheck \S+: .*, seed=(\d+)(, |; |$)", line)] if m]
    assert command == ("pytest --auxcheck 'tests::auxcheck::auxcheck_device_output::"
                       f"AUX202-consume-valid-commits[sizes [0, 1e6]]' --hypothesis-seed={seed} "
                       "--auxcheck-profile=drawn")
    again = run_pasted(project, command)
    again.assert_outcomes(failed=1)
    assert failed_ids(again) == failed_ids(result)
    assert example_of(again) == example_of(result) != []
    assert not project.path.joinpath("examples-db").exists()


def test_a_derandomized_profile_re_runs_the_same_example_without_a_seed(
        project: pytest.Pytester) -> None:
    """Under a derandomized profile the command carries no seed and still draws the same size."""
    result = project.runpytest_inprocess("--auxcheck", "--auxcheck-profile=fixed",
                                         "-k", "AUX202 and not impl")
    [command] = rerun_lines(result)
    assert "--hypothesis-seed" not in command
    again = run_pasted(project, command)
    again.assert_outcomes(failed=1)
    assert example_of(again) == example_of(result) != []


OTHER_ITEMS = {
    "an-observer-item": ("""
        @pytest.fixture
        def auxcheck_sampling_observer():
            return plugin.BadObserver()
    """, ("-k", "AUX202"), "auxcheck::auxcheck_sampling_observer::AUX202-consume-valid-commits"),
    "an-instance-with-an-odd-id": ("""
        @pytest.fixture(params=[plugin.Sized(3)], ids=["odd [3], one"])
        def auxcheck_device_output(request):
            return request.param
    """, ("-k", "AUX202"),
        "auxcheck::auxcheck_device_output::AUX202-consume-valid-commits[odd [3], one]"),
    "an-impl-item": ("", ("--auxcheck-impl=reversed_impl", "-k", "AUX302-order"),
                     "auxcheck::impl::AUX302-order[reversed_impl]"),
    "the-imports-item": ("", ("--auxcheck-impl=reference", "-k", "imports"), "auxcheck::imports"),
}

REVERSED_IMPL = """
    from auxcheck.protocols import CompositeDeviceAuxiliaryOutput, CompositeHostAuxiliaryOutput
    def append_auxiliary_output(current, output):
        if current is None or output is None:
            return output if current is None else current
        return CompositeDeviceAuxiliaryOutput((output, current))
"""


@pytest.mark.parametrize(("fixtures", "args", "nodeid"), OTHER_ITEMS.values(), ids=OTHER_ITEMS)
def test_every_kind_of_failing_item_prints_a_command_that_re_runs_only_it(
        pytester: pytest.Pytester, fixtures: str, args: tuple[str, ...], nodeid: str) -> None:
    """Observer, device, implementation and import items: the command re-runs that item alone
    (the session's items are named from the rootdir) and it fails again."""
    pytester.makepyfile(plugin=PLUGIN, reversed_impl=REVERSED_IMPL,
                        legacy="from sglang.srt.sampling.sampling_observer import "
                               "CommittedTokens\n")
    pytester.syspathinsert()
    pytester.makeconftest(PROFILES + textwrap.dedent(fixtures))
    result = pytester.runpytest_inprocess("--auxcheck", "--auxcheck-profile=drawn", *args)
    result.assert_outcomes(failed=1)
    [command] = rerun_lines(result)
    assert shlex.split(command)[2] == nodeid == failed_ids(result)[0]
    again = run_pasted(pytester, command)
    again.assert_outcomes(failed=1)
    assert failed_ids(again) == [nodeid]


def test_the_command_repeats_only_the_options_given_on_the_command_line(
        project: pytest.Pytester) -> None:
    """Options that change what an item checks come back as given, and so do the plugins turned
    off, except Hypothesis's (it owns --hypothesis-seed); ini settings are read again by the new
    run, so they are left out."""
    project.makeini("[pytest]\nauxcheck_profile = drawn\n")
    result = project.runpytest_inprocess("--auxcheck", "--auxcheck-impl=reference",
                                         "--auxcheck-ignore=AUX104", "--auxcheck-ignore=AUX5",
                                         "-p", "no:cacheprovider", "-pno:hypothesispytest",
                                         "-k", "AUX202 and not impl")
    [command] = rerun_lines(result)
    assert shlex.split(command)[3:] == [
        re.search(r"--hypothesis-seed=\d+", command).group(),  # type: ignore[union-attr]
        "--auxcheck-impl=reference", "--auxcheck-ignore=AUX104", "--auxcheck-ignore=AUX5",
        "-p", "no:cacheprovider"]
    again = run_pasted(project, command)
    again.assert_outcomes(failed=1)
    assert example_of(again) == example_of(result) != []


def test_the_command_names_the_item_from_the_directory_pytest_ran_in(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from ``tests/``, the item's directory is ``.`` and the session's are ``..``; the
    command works from there."""
    project.makepyfile(reversed_impl=REVERSED_IMPL)
    monkeypatch.chdir(project.path / "tests")
    result = project.runpytest_inprocess("--auxcheck", "--auxcheck-profile=drawn",
                                         "--auxcheck-impl=reversed_impl", "-k",
                                         "AUX202-consume or AUX302-order")
    commands = sorted(shlex.split(c)[2] for c in rerun_lines(result))
    assert commands == [
        "..::auxcheck::impl::AUX302-order[reversed_impl]",
        ".::auxcheck::auxcheck_device_output::AUX202-consume-valid-commits[sizes [0, 1e6]]"]
    for command in rerun_lines(result):
        run_pasted(project, command).assert_outcomes(failed=1)


def test_an_item_id_leaves_the_rest_of_its_directory_uncollected(
        project: pytest.Pytester) -> None:
    """An auxcheck id collects its directory for that item only (the module that fails on
    import is not imported); other arguments are collected as usual."""
    project.makepyfile(test_other="def test_other():\n    pass\n")
    project.path.joinpath("tests", "test_unrelated.py").write_text(
        "raise ImportError('never collected')\n")
    result = project.runpytest_inprocess(
        "--auxcheck", "--auxcheck-profile=drawn", "test_other.py",
        "tests::auxcheck::auxcheck_device_output::AUX201-consume-callable",
        "auxcheck::impl::AUX302-order")
    result.assert_outcomes(passed=3)
    assert "never collected" not in result.stdout.str()


@pytest.mark.parametrize("nodeid", [
    "tests::auxcheck::auxcheck_device_output::AUX999-nothing",
    "auxcheck::impl::AUX302-order[no-such-impl]",
])
def test_an_id_that_names_no_item_is_a_usage_error(project: pytest.Pytester,
                                                   nodeid: str) -> None:
    """An auxcheck id that names no item is an error naming it, never a run of nothing."""
    result = project.runpytest_inprocess("--auxcheck", "--auxcheck-profile=drawn", nodeid)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: --auxcheck: not found: {nodeid} (no auxcheck item" in result.stderr.str()


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="xdist subprocess spawning differs")
def test_under_xdist_every_worker_draws_from_the_seed_the_header_shows(
        project: pytest.Pytester) -> None:
    """With -n 2 the workers use the controller's seed: the commands carry the header's seed,
    and re-run without xdist they fail on the same examples."""
    tests = project.path / "tests"
    tests.joinpath("conftest.py").write_text(STRATEGY.replace(
        'ids=["sizes [0, 1e6]"]', 'ids=["a", "b"]').replace(
        "params=[st.builds(plugin.Sized, st.integers(0, 10**6))]",
        "params=[st.builds(plugin.Sized, st.integers(0, 10**6))] * 2"))
    result = project.runpytest_subprocess("--auxcheck", "--auxcheck-profile=drawn", "-n", "2",
                                          "-k", "AUX202 and not impl")
    result.assert_outcomes(failed=2)
    [seed] = [m.group(1) for line in result.outlines
              for m in [re.match(r"auxcheck \S+: .*, seed=(\d+)(, |; |$)", line)] if m]
    drawn = examples_by_command(result)
    assert len(drawn) == 2 and all(f"--hypothesis-seed={seed} " in c for c in drawn)
    for command, examples in drawn.items():
        assert example_of(run_pasted(project, command)) == examples != []


def test_a_seeded_run_draws_the_same_examples_whatever_local_modules_the_process_imported(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hypothesis mixes the numbers written in every local module the process has imported
    into its draws: a re-run that imports other test modules (a single item, no xdist) drew
    other examples from the same seed. auxcheck's seeded runs draw from the seed alone."""
    from hypothesis import Phase, given, settings
    from hypothesis import strategies as st

    from auxcheck._suite.session import seeded

    def draws() -> list[int]:
        seen: list[int] = []

        @settings(max_examples=300, database=None, phases=[Phase.generate], deadline=None)
        @given(st.integers(0, 10**6))
        def record(number: int) -> None:
            seen.append(number)

        with seeded(1234):
            record()
        return seen

    before = draws()
    source = tmp_path / "numbers_of_another_test_module.py"
    source.write_text("NUMBERS = [" + ", ".join(str(7919 * k) for k in range(1, 120)) + "]\n")
    spec = importlib.util.spec_from_file_location(source.stem, source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, source.stem, module)
    assert draws() == before


COUNTED_FACTORY = PROFILES + textwrap.dedent("""
    def make():
        '''Returns a fresh output, counting the call in made.txt.'''
        with open("made.txt", "a") as made:
            made.write("x")
        return plugin.Sized(4)

    @pytest.fixture(params=[make], ids=["counted"])
    def auxcheck_device_output(request):
        return request.param
""")


def test_the_property_items_of_a_value_draw_each_example_once_whichever_are_selected(
        pytester: pytest.Pytester) -> None:
    """The six property items of a value share one search: run together they make as many
    outputs as one of them run alone, and every item still runs."""
    pytester.makepyfile(plugin=PLUGIN)
    pytester.syspathinsert()
    pytester.makeconftest(COUNTED_FACTORY)
    made = pytester.path / "made.txt"
    counts = []
    for selection, items in (("AUX30 and not impl", 6), ("AUX303 and not impl", 1)):
        made.unlink(missing_ok=True)
        result = pytester.runpytest_inprocess("--auxcheck", "--auxcheck-profile=drawn",
                                              "--hypothesis-seed=1234", "-k", selection)
        result.assert_outcomes(passed=items)
        counts.append(len(made.read_text()))
    assert counts[0] == counts[1] > 0


SOMETIMES_REVERSED_IMPL = """
    from auxcheck.protocols import CompositeDeviceAuxiliaryOutput, CompositeHostAuxiliaryOutput

    def _children(output):
        if isinstance(output, CompositeDeviceAuxiliaryOutput):
            return output.outputs
        return (output,)

    def append_auxiliary_output(current, output):
        '''Appends in order up to two children, and reverses the children from three on.'''
        if current is None or output is None:
            return output if current is None else current
        children = (*_children(current), *_children(output))
        return CompositeDeviceAuxiliaryOutput(children[::-1] if len(children) >= 3 else children)
"""


def falsifying_examples(result: pytest.RunResult) -> dict[str, list[str]]:
    """Returns, for each command printed, the lines of the example its failure shows."""
    found: dict[str, list[str]] = {}
    block: list[str] | None = None
    for line in result.outlines:
        if line.startswith("re-run: "):
            found.setdefault(line.removeprefix("re-run: "), block or [])
            block = None
        elif line.lstrip().startswith(("Falsifying example", "Failing test case", "Failing explicit example")):
            block = [line.strip()]
        elif block is not None and line.strip():
            block.append(line.strip())
    return found


@pytest.mark.slow
def test_a_property_item_failing_in_the_whole_run_fails_alone_on_the_same_example(
        pytester: pytest.Pytester) -> None:
    """An implementation that breaks append order only for three children or more: each
    property item that fails among all the others prints a command that, run alone, fails on
    the very example it showed."""
    pytester.makepyfile(plugin=PLUGIN, sometimes_impl=SOMETIMES_REVERSED_IMPL)
    pytester.syspathinsert()
    pytester.makeconftest(STRATEGY.replace("plugin.Sized, st.integers(0, 10**6)",
                                           "plugin.Sized, st.just(4)"))
    result = pytester.runpytest_inprocess("--auxcheck", "--auxcheck-profile=drawn",
                                          "--auxcheck-impl=sometimes_impl", "-k", "AUX30")
    shown = falsifying_examples(result)
    assert len(shown) >= 4 and all(shown.values()), result.stdout.str()
    for command, example in shown.items():
        again = run_pasted(pytester, command)
        again.assert_outcomes(failed=1)
        assert list(falsifying_examples(again).values()) == [example]


def test_a_seeded_run_registers_hypothesis_own_random_without_a_full_garbage_collection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread's first seeded run makes Hypothesis's global random and registers it for
    Hypothesis to seed and restore, never through ``register_random`` (whose check collects
    every object of the process)."""
    import threading

    from hypothesis import Phase, core, given, settings
    from hypothesis import strategies as st
    from hypothesis.internal import entropy

    from auxcheck._suite.session import seeded

    registered: list[object] = []
    monkeypatch.setattr(entropy, "register_random", registered.append)
    found: list[object] = []

    @settings(max_examples=3, database=None, phases=[Phase.generate], deadline=None)
    @given(st.integers())
    def drawn(number: int) -> None:
        pass

    def first_run_of_a_thread() -> None:
        with seeded(1234):
            drawn()
        found.append(core.threadlocal._hypothesis_global_random)

    thread = threading.Thread(target=first_run_of_a_thread)
    thread.start()
    thread.join()
    assert registered == [] and found[0] is not None
    assert any(managed is found[0] for managed in entropy.RANDOMS_TO_MANAGE.values())
