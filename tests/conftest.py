"""Shared fixtures: real SGLang releases, read from their wheels (never installed).

The wheels live in ``$AUXCHECK_CACHE_DIR`` (``make test`` points it at ``.cache/sglang``
and fetches 0.5.19, 0.5.20 and 0.5.23 there once). A test that needs a release gets it
from there, downloading it when missing: it never skips for lack of SGLang.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.paths import EXAMPLES
from helpers.releases import real_release
from hypothesis import HealthCheck, settings
from hypothesis import core as hypothesis_core
from hypothesis.configuration import set_hypothesis_home_dir

from auxcheck.releases import Release

# Progress lines appear once a wait passes 2 s, so on a busy machine they would appear in
# output a test reads: the whole suite, and every process it starts, runs with progress
# off. A test of progress turns it on for itself and drives a clock of its own.
os.environ["AUXCHECK_PROGRESS"] = "off"

SUITE_PROFILE = "auxcheck-tests"
"""The Hypothesis profile the suite runs under: the one in force (Hypothesis's ``ci`` under
CI=true) with no example database, so every test judges from its own draws and no
example saved by one test, or one run, is replayed by another; with no deadline and no
too-slow health check, which judge the machine's speed, not the code."""

settings.register_profile(
    SUITE_PROFILE, settings(), database=None, deadline=None,
    suppress_health_check=[*settings().suppress_health_check, HealthCheck.too_slow])
settings.load_profile(SUITE_PROFILE)


@pytest.fixture(autouse=True)
def _hypothesis_of_its_own(request: pytest.FixtureRequest,
                           tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Gives each test a Hypothesis storage folder of its own (made only when written), and
    puts the suite's profile back after a test that loaded another.

    Hypothesis keeps its storage under the folder the process started in: an example
    saved by a project that pytester runs in this process (its conftest may load a profile
    with a database) would land in the checkout and be replayed by another test, or run;
    the seed such a run forces is put back too.
    """
    digest = hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:16]
    set_hypothesis_home_dir(tmp_path_factory.getbasetemp() / "hypothesis" / digest)
    # --hypothesis-seed given to such a project sets this module global and never resets it
    # (Hypothesis 6.170): every later test in the process would draw from that one seed.
    seed = hypothesis_core.global_force_seed
    yield
    hypothesis_core.global_force_seed = seed
    if settings.get_current_profile_name() != SUITE_PROFILE:
        settings.load_profile(SUITE_PROFILE)


@pytest.fixture(scope="session")
def sglang_release() -> Callable[[str], Release]:
    """Returns a function giving the real release of a version, from the wheel cache."""
    return real_release


SLOW_SECONDS = 3.0
"""A test that takes longer than this (setup, call and teardown) should be marked ``slow``."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Adds ``--suite-shuffle=SEED``: the suite in an order shuffled by SEED."""
    parser.addoption(
        "--suite-shuffle", type=int, default=None, metavar="SEED",
        help="run the tests in an order shuffled by SEED, to find tests that pass only after "
             "others (docs/development.md, make test-busy)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Shuffles the tests by ``--suite-shuffle``'s seed; every xdist worker shuffles the same
    way, as it must (each collects the same order)."""
    seed = config.getoption("suite_shuffle")
    if seed is not None:
        random.Random(seed).shuffle(items)


def pytest_report_header(config: pytest.Config) -> str | None:
    """Says the shuffle's seed, so that a failing order can be run again."""
    seed = config.getoption("suite_shuffle")
    return None if seed is None else f"tests shuffled: --suite-shuffle={seed}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Names the tests that took over :data:`SLOW_SECONDS` without the ``slow`` mark, so that
    `make test-fast` stays the quick loop; a note for maintainers, never a failure."""
    spent: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if isinstance(report, pytest.TestReport) and "slow" not in report.keywords:
                spent[report.nodeid] = spent.get(report.nodeid, 0.0) + report.duration
    over = sorted((nodeid for nodeid, seconds in spent.items() if seconds > SLOW_SECONDS),
                  key=spent.__getitem__, reverse=True)
    if over:
        terminalreporter.write_sep("-", f"over {SLOW_SECONDS:g} s and not marked slow")
        for nodeid in over:
            terminalreporter.write_line(f"{spent[nodeid]:6.1f}s {nodeid}")
        terminalreporter.write_line("(on a busy machine any test may be slow: mark those that "
                                    "are slow on an idle one with @pytest.mark.slow)")


@pytest.fixture
def example(tmp_path: Path) -> Callable[[str], Path]:
    """Returns a function that copies ``examples/NAME`` into this test's ``tmp_path`` (caches
    left out) and returns the copy: what a run writes there stays with the test, never in
    the checkout, where another test would read it."""
    def copy(name: str) -> Path:
        target = tmp_path / "examples" / name
        shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns(
            ".hypothesis", ".mypy_cache", ".pytest_cache", "__pycache__"))
        return target
    return copy


@pytest.fixture(scope="session", autouse=True)
def _one_mypy_cache_per_process(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Points every mypy the suite runs (``MYPY_CACHE_DIR``) at one cache per test process.

    A cold mypy over a plugin that imports torch takes seconds, a warm one a fraction. Each
    xdist worker has a cache of its own and runs one test at a time, so no two mypy runs
    write one cache at once; mypy checks each entry against its source and options, so what
    one test cached never stands in for another's files.
    """
    os.environ["MYPY_CACHE_DIR"] = str(tmp_path_factory.getbasetemp() / "mypy-cache")


@pytest.fixture
def offline_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    """Points pip at no index at all, so any download fails at once, without the network."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_INDEX_URL", "file:///nonexistent")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)


_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2
_CAPABILITY_V3 = 0x20080522


def _file_capabilities(drop: bool) -> None:
    """Drops (or puts back) root's power to read and write past mode bits, for this thread.

    Linux keeps the two capabilities in the thread's permitted set, so they can be
    raised again; a process started meanwhile (a pool worker) inherits the drop.
    """
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    libc = ctypes.CDLL(None, use_errno=True)
    data = (Data * 2)()
    if libc.capget(ctypes.byref(Header(_CAPABILITY_V3, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    bits = (1 << _CAP_DAC_OVERRIDE) | (1 << _CAP_DAC_READ_SEARCH)
    if drop:
        data[0].effective &= ~bits
    else:
        data[0].effective |= data[0].permitted & bits
    if libc.capset(ctypes.byref(Header(_CAPABILITY_V3, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


@pytest.fixture(autouse=True)
def _mode_bits_bind_root(request: pytest.FixtureRequest) -> Iterator[None]:
    """For a test marked ``mode_bits``: mode bits bind even when the suite runs as root (as
    in CI), by dropping root's capabilities to bypass them while the test runs."""
    if request.node.get_closest_marker("mode_bits") is None or os.geteuid() != 0:
        yield
        return
    if not sys.platform.startswith("linux"):
        pytest.skip("root reads a file whatever its mode bits, and only Linux lets a test "
                    "drop that power")
    _file_capabilities(drop=True)
    try:
        yield
    finally:
        _file_capabilities(drop=False)
