"""The worker processes that index a release: a stop, a killed worker or a short file limit
never hangs the run, and never leaves a worker running.

concurrent.futures' pool cannot promise that on Python 3.11: a worker killed while its
call queue is full leaves the pool's threads waiting on each other forever, forked
workers run the parent's signal handlers, and a pool that cannot start its second worker
keeps the first one, which the interpreter then waits for at exit. So each worker here is
one process with one pipe back, handed its share of the work when it starts:
:func:`map_in_workers` reads what each sends as it comes, kills every worker on its way
out (a stop included: they only read files, there is nothing to finish), and does again
in this process whatever a worker did not send (it died, or raised).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from auxcheck._core.errors import OutOfFiles
from auxcheck._core.limits import is_out_of_files
from auxcheck._core.stops import as_worker, held_stops

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

__all__ = ["map_in_workers"]

T = TypeVar("T")
R = TypeVar("R")


class _Worker(Generic[T, R]):
    """One worker process and the pipe it sends its results on."""

    def __init__(self, process: BaseProcess, reader: Connection) -> None:
        self.process = process
        self.reader = reader


def map_in_workers(func: Callable[[T], R], items: Sequence[T], workers: int, *,
                   each: Callable[[int], object] = int) -> list[R]:
    """Returns ``[func(item) for item in items]``, computed on ``workers`` processes (``func``
    a module-level function); ``each(index)`` is called as each item's result comes.

    An item a worker did not send (the worker was killed, or ``func`` raised there) is done
    again here, so its exception, if any, is raised here. Leaving, by a result or by an
    exception (Ctrl-C, SIGTERM as :class:`~auxcheck.errors.Stopped`, or an ``OSError`` when
    the processes or pipes cannot be made: too many open files), every worker is killed and
    reaped first.
    """
    import multiprocessing

    context = multiprocessing.get_context()
    results: dict[int, R] = {}
    crew: list[_Worker[T, R]] = []
    try:
        for share in range(workers):
            jobs = [(i, items[i]) for i in range(share, len(items), workers)]
            # A stop between the fork and the record of the worker would leave it unknown,
            # never killed: the stop waits until it is in ``crew`` (and the worker starts
            # with both signals blocked, until it has set its own handlers).
            with held_stops():
                crew.append(_start(context, func, jobs))
        _collect(crew, results, each)
    except OSError as exc:
        if is_out_of_files(exc):
            raise OutOfFiles(f"cannot start {workers} worker processes to index a release",
                             exc) from exc
        raise
    finally:
        _end(crew)
    for index, item in enumerate(items):
        if index not in results:
            results[index] = func(item)
            each(index)
    return [results[i] for i in range(len(items))]


def _start(context: Any, func: Callable[[T], R], jobs: list[tuple[int, T]]) -> _Worker[T, R]:
    """Starts one worker on ``jobs``; its end of the pipe is closed here at once, so that the
    pipe ends (EOF) when the worker does, and no later worker inherits it."""
    reader, writer = context.Pipe(duplex=False)
    try:
        process = context.Process(target=_serve, args=(os.getpid(), func, jobs, writer),
                                  daemon=True)
        process.start()
    except BaseException:
        reader.close()
        raise
    finally:
        writer.close()
    return _Worker(process, reader)


def _serve(parent: int, func: Callable[[T], R], jobs: list[tuple[int, T]],
           writer: Connection) -> None:
    """A worker's body: sends ``(index, func(item))`` for each job; skips one that raises,
    which the parent then does again itself."""
    as_worker(parent)
    try:
        for index, item in jobs:
            try:
                result = func(item)
            except Exception:  # noqa: BLE001, S112 - done again in the parent, which raises it
                continue
            writer.send((index, result))
    finally:
        writer.close()


def _collect(crew: Sequence[_Worker[T, R]], results: dict[int, R],
             each: Callable[[int], object]) -> None:
    """Reads every result the workers send, until each worker's pipe has ended."""
    from multiprocessing.connection import wait

    open_pipes = {worker.reader: worker for worker in crew}
    while open_pipes:
        for ready in wait(list(open_pipes)):
            worker = open_pipes[ready]  # type: ignore[index]
            try:
                index, result = worker.reader.recv()
            except Exception:  # noqa: BLE001 - EOF, or a message cut by the worker's death
                del open_pipes[worker.reader]
                continue
            results[index] = result
            each(index)


def _end(crew: Sequence[_Worker[T, R]]) -> None:
    """Kills and reaps every worker (one that finished is already on its way out); a stop
    that comes meanwhile waits until none is left."""
    with held_stops():
        for worker in crew:
            if worker.process.is_alive():
                worker.process.kill()
        for worker in crew:
            worker.process.join()
            worker.reader.close()
