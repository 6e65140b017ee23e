"""The guard's reporter: logs, counts and writes its findings, and raises them in raise mode."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from auxcheck._guard.settings import REPORT_ENV, GuardSettings
from auxcheck.errors import GuardError
from auxcheck.report import Finding

__all__ = ["Reporter"]

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
        self.fd: int | None = None
        if self.path is not None:
            try:
                self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                logger.error("auxcheck guard: cannot open %s=%s (%s); findings are logged "
                             "only. Point it at a writable file.", REPORT_ENV, self.path,
                             exc.strerror or exc)

    def findings(self, found: Sequence[tuple[Finding, str]]) -> None:
        """Counts each (finding, output class); logs and writes the first and each 10**k-th."""
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
                           hint=finding.hint)
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


def _round(count: int) -> bool:
    while count % 10 == 0 and count > 1:
        count //= 10
    return count == 1
