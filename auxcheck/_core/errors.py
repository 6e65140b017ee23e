"""The exceptions auxcheck raises; every one derives from :class:`AuxcheckError`, but
:class:`Stopped`, which is a KeyboardInterrupt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from auxcheck.report import Report

__all__ = [
    "AuxcheckError",
    "ContractViolation",
    "CudaGraphAliasError",
    "GuardError",
    "InvalidArgument",
    "MovesTableError",
    "SchedulerError",
    "Stopped",
]


class AuxcheckError(Exception):
    """Base class of every error auxcheck raises on purpose."""


class InvalidArgument(AuxcheckError, TypeError):
    """An auxcheck function was called with an argument it cannot use."""


class SchedulerError(AuxcheckError, RuntimeError):
    """The fake scheduler was driven into a state the real one rejects."""


class ContractViolation(AuxcheckError, AssertionError):
    """A report held findings; ``report`` keeps every one of them."""

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(report.to_text())


class CudaGraphAliasError(AuxcheckError, AssertionError):
    """A tensor shares bytes with a CUDA-graph static buffer (AUX110) or pool (AUX111).

    ``tensor`` is the offending tensor and ``overlaps`` what it overlapped.
    """

    def __init__(self, message: str, *, code: str, tensor: Any, overlaps: Any) -> None:
        self.code = code
        self.tensor = tensor
        self.overlaps = overlaps
        super().__init__(message)


class GuardError(AuxcheckError, AssertionError):
    """The live-server guard (``AUXCHECK_GUARD=raise``) saw findings in one call it checked.

    ``findings`` keeps every finding of that call, each with its rule code, and
    ``output_classes`` the output class each one was charged to.
    """

    def __init__(self, findings: Any, output_classes: Any) -> None:
        self.findings = tuple(findings)
        self.output_classes = tuple(output_classes)
        lines = [f"{owner}: {finding.to_text()}"
                 for finding, owner in zip(self.findings, self.output_classes)]
        super().__init__("auxcheck guard (AUXCHECK_GUARD=raise): " + "\n".join(lines))


class MovesTableError(AuxcheckError, ValueError):
    """A table of moved names is malformed; names the file, the entry and the problem."""

    def __init__(self, source: str, entry: str, problem: str) -> None:
        self.source = source
        self.entry = entry
        self.problem = problem
        super().__init__(f"{source}: moves entry {entry}: {problem}")


class Stopped(KeyboardInterrupt):
    """A command was asked to stop by signal ``signum`` (SIGINT, or SIGTERM handled as Ctrl-C
    is); a KeyboardInterrupt, so that code which lets Ctrl-C through lets it through too,
    and no AuxcheckError, which an ``except Exception`` would stop on its way out."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = int(signum)
        super().__init__(signal.Signals(signum).name)

    def __reduce__(self) -> tuple[type[Stopped], tuple[int]]:
        # Rebuilt from its number, not its message: it may cross a process boundary.
        return type(self), (self.signum,)
