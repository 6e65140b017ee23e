"""The guard's reporter: logs, counts and writes its findings, and raises them in raise mode."""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auxcheck._core.errors import GuardError
from auxcheck._core.report import Finding
from auxcheck._guard.settings import REPORT_ENV, GuardSettings

__all__ = ["Reporter", "open_report"]

logger = logging.getLogger("auxcheck.guard")


@dataclass(slots=True)
class _Tally:
    count: int = 0


class Reporter:
    """Logs, counts, writes and (in raise mode) raises the guard's findings; thread-safe."""

    def __init__(self, settings: GuardSettings) -> None:
        self.mode = settings.mode
        self.path = settings.report
        self.tallies: dict[tuple[str, str], _Tally] = {}
        self.lock = threading.Lock()
        self.fd = None if self.path is None else open_report(self.path)

    def findings(self, found: Sequence[tuple[Finding, str]], *,
                 raised: str | None = None) -> None:
        """Counts each (finding, output class); logs and writes the first and each 10**k-th.

        ``raised`` names the exception the plugin's call raised (a ``consume``'s, AUX202): the
        event carries it as a field, so a reader matches it to a death by data, never by
        reading the message (which quotes plugin and request text).
        """
        extra: dict[str, Any] = {} if raised is None else {"raised": raised}
        for finding, owner in found:
            with self.lock:
                tally = self.tallies.setdefault((finding.code, owner), _Tally())
                tally.count += 1
                count = tally.count
            if count == 1:
                logger.warning("auxcheck guard: %s in %s (first of its kind in pid %d; later "
                               "ones are counted): %s", finding.code, owner, os.getpid(),
                               finding.to_text())
                self.write("finding", code=finding.code, title=finding.title,
                           output_class=owner, count=1, message=finding.message,
                           hint=finding.hint, **extra)
            elif _round(count):
                logger.warning("auxcheck guard: %s in %s seen %d times in pid %d",
                               finding.code, owner, count, os.getpid())
                self.write("count", code=finding.code, output_class=owner, count=count)

    def raise_for(self, found: Sequence[tuple[Finding, str]]) -> None:
        """Raises GuardError for ``found`` in raise mode; does nothing in warn mode."""
        if found and self.mode == "raise":
            raise GuardError([f for f, _ in found], [o for _, o in found])

    def counts(self) -> dict[tuple[str, str], int]:
        """Returns how many times each (rule, output class) was seen."""
        with self.lock:
            return {key: tally.count for key, tally in self.tallies.items()}

    def write(self, event: str, **fields: Any) -> None:
        """Appends one JSON line to the report file, when there is one."""
        if self.fd is None:
            return
        record = {"event": event, "pid": os.getpid(), "time": round(time.time(), 3),
                  "mode": self.mode, **fields}
        try:
            os.write(self.fd, (json.dumps(record, default=str) + "\n").encode())
        except OSError as exc:
            logger.error("auxcheck guard: writing %s failed (%s); the report stops here, "
                         "findings are still logged", self.path, exc.strerror or exc)
            self.fd = None

    def summary(self) -> None:
        """Logs and writes how often each (rule, output class) was seen in this process."""
        counts = self.counts()
        if not counts:
            return
        text = "; ".join(f"{code} in {owner}: {n}" for (code, owner), n in sorted(counts.items()))
        logger.warning("auxcheck guard summary for pid %d: %s", os.getpid(), text)
        self.write("summary", counts=[{"code": c, "output_class": o, "count": n}
                                      for (c, o), n in sorted(counts.items())])


def open_report(path: Path) -> int | None:
    """Returns a descriptor appending to the regular file ``path`` (created when missing), or None.

    SGLang loads the guard in every process it starts, so opening the report must never
    block nor write through someone else's link: the last component of ``path`` is never
    followed (``O_NOFOLLOW``) and the open does not wait (``O_NONBLOCK``, so a named pipe
    with no reader fails at once instead of hanging the server's start); anything but a
    regular file is refused. The folders above are followed: they are the operator's
    choice of place (``/tmp`` itself is a link on macOS). A refusal or failure is logged
    in one line naming the path and what it is, and the guard runs on without its report.
    """
    flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_NONBLOCK", 0))
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        kind = _kind(path)
        _refuse(path, f"it is {kind}, not a regular file" if kind else exc.strerror or str(exc))
        return None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        _refuse(path, f"it is {_KINDS.get(stat.S_IFMT(mode), 'something else')}, not a "
                      f"regular file")
        return None
    if flags & getattr(os, "O_NONBLOCK", 0):
        os.set_blocking(fd, True)
    return fd


def _refuse(path: Path, why: str) -> None:
    logger.error("auxcheck guard: cannot open %s=%s (%s); findings are logged only. Point it "
                 "at a writable regular file (it is created when missing).", REPORT_ENV, path,
                 why)


_KINDS = {stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFLNK: "a symbolic link",
          stat.S_IFDIR: "a directory", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


def _kind(path: Path) -> str | None:
    """Says what ``path`` is when it is not a regular file (a link: and where it points)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        try:
            return f"a symbolic link to {os.readlink(path)}"
        except OSError:
            return "a symbolic link"
    return _KINDS.get(stat.S_IFMT(mode))


def _round(count: int) -> bool:
    while count % 10 == 0 and count > 1:
        count //= 10
    return count == 1
