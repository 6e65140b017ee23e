"""Tests for the one stop every command shares: :class:`auxcheck.errors.Stopped`, raised by
:mod:`auxcheck._core.stops` for migrate and for the commands that start children alike."""

from __future__ import annotations

import importlib.util
import pickle
import signal

import pytest

from auxcheck.errors import Stopped


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_crosses_a_process_boundary_with_its_signal(signum: int) -> None:
    """A Stopped pickled (a worker's exception on its way to the parent) comes back the same
    stop: its signal and its message (rebuilt from its message, it once raised ValueError
    in the thread reading a pool's results, which then never ended)."""
    back = pickle.loads(pickle.dumps(Stopped(signum)))
    assert (type(back), back.signum, str(back)) == (Stopped, signum,
                                                    signal.Signals(signum).name)


def test_a_stop_is_let_through_by_code_that_lets_ctrl_c_through() -> None:
    """Stopped is a KeyboardInterrupt, and no Exception: ``except Exception`` never eats it."""
    assert issubclass(Stopped, KeyboardInterrupt) and not issubclass(Stopped, Exception)


@pytest.mark.parametrize("module", ["auxcheck._isolation.stops", "auxcheck.migrate.signals"])
def test_there_is_one_stop_mechanism_and_it_lives_in_core(module: str) -> None:
    """migrate and the isolation layer raise and hold stops through ``auxcheck._core.stops``:
    neither keeps a copy of its own (there were two identical exceptions and handlers)."""
    from auxcheck.migrate import runner

    assert importlib.util.find_spec(module) is None
    assert not [name for name, value in vars(runner).items() if isinstance(value, type)
                and issubclass(value, KeyboardInterrupt) and value is not Stopped]
