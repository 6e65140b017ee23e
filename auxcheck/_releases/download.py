"""``pip download`` run with its progress read: the bytes of a wheel as they arrive.

pip stays the downloader, so its configuration (index URLs, find-links, certificates,
proxies, ``pip.conf``) applies as the user set it. pip 24.1 and later print
``Progress DONE of TOTAL`` lines with ``--progress-bar raw``; they feed a progress task
(:mod:`auxcheck._core.progress`). An older pip runs ``--quiet`` as before, and the task
says only how long it has been waiting.
"""

from __future__ import annotations

import os
import re
import selectors
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from auxcheck._core.progress import Task, task

__all__ = ["PipRun", "pip_download", "raw_progress"]

_PROGRESS = re.compile(rb"^Progress (\d+) of (\d+)\s*$", re.MULTILINE)
_RAW_SINCE = (24, 1)
"""The first pip with ``--progress-bar raw``."""
_TICK = 0.25
"""Seconds between two looks at pip's output: the progress line's heartbeat."""


@dataclass(frozen=True, slots=True)
class PipRun:
    """How ``pip download`` ended: its exit status and what it wrote to stderr."""

    returncode: int
    stderr: str


def raw_progress(version: str | None = None) -> bool:
    """Returns True when pip ``version`` (default: this interpreter's) prints raw progress."""
    if version is None:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as installed

        try:
            version = installed("pip")
        except PackageNotFoundError:
            return False
    match = re.match(r"(\d+)\.(\d+)", version)
    return match is not None and (int(match[1]), int(match[2])) >= _RAW_SINCE


def pip_download(arguments: Sequence[str], *, what: str) -> PipRun:
    """Runs ``python -m pip download ARGUMENTS``, reported as the progress task ``what``
    (bytes of total, read from pip's raw progress); returns its status and stderr."""
    raw = raw_progress()
    command = [sys.executable, "-m", "pip", "download",
               *(("--progress-bar", "raw") if raw else ("--quiet",)), *arguments]
    with task(what, unit="bytes") as job:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            stderr = _pump(proc, job)
            returncode = proc.wait()
        finally:
            if proc.poll() is None:  # stopped (Ctrl-C): pip goes too
                proc.kill()
                proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
    return PipRun(returncode, stderr.decode(errors="replace"))


def _pump(proc: subprocess.Popen[bytes], job: Task) -> bytes:
    """Reads pip's stdout (its progress lines, fed to ``job``) and stderr (kept) until both
    end, looking every :data:`_TICK` seconds even when pip is silent."""
    stderr = bytearray()
    pending = b""
    with selectors.DefaultSelector() as selector:
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in selector.select(_TICK):
                data = os.read(key.fd, 1 << 16)
                if not data:
                    selector.unregister(key.fileobj)
                elif key.fileobj is proc.stderr:
                    stderr += data
                else:
                    pending = _progress(pending + data, job)
            job.update()
    return bytes(stderr)


def _progress(data: bytes, job: Task) -> bytes:
    """Feeds the last ``Progress DONE of TOTAL`` line of ``data`` to ``job``; returns the
    unfinished line, to be read with what comes next."""
    complete, _, rest = data.rpartition(b"\n")
    found = _PROGRESS.findall(complete)
    if found:
        done, total = found[-1]
        job.update(int(done), total=int(total) or None)
    return rest[-4096:]  # pip ends its lines; a line without end is not progress
