"""Every exception auxcheck defines, in one place.

The public ones (re-exported by :mod:`auxcheck.errors`) derive from :class:`AuxcheckError`,
but :class:`Stopped`, which is a KeyboardInterrupt. The rest are the capabilities' own:
configuration and source files that cannot be read, a release that cannot be found, a
rewrite refused, a command line that cannot be used, the CPU server, and the signals the
checks raise through plugin code (:class:`Interrupted`, :class:`PluginCallFailed`,
:class:`LeafRaised`), which never reach a user.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from torch import Tensor

    from auxcheck._core.report import Finding, Report
    from auxcheck._runtime.static_buffers import Overlap

__all__ = [
    "AuxcheckError",
    "ConfigFileError",
    "ContractViolation",
    "CpuEnvironmentError",
    "CudaGraphAliasError",
    "DrawFailed",
    "FileTooLarge",
    "GuardError",
    "IniFileError",
    "Interrupted",
    "InvalidArgument",
    "LeafRaised",
    "LibcstUnavailable",
    "MovesTableError",
    "NotARegularFile",
    "OutOfFiles",
    "PluginCallFailed",
    "PluginInstallError",
    "ReleaseError",
    "RequestFailed",
    "ResultsFileError",
    "ScenarioFailed",
    "SchedulerError",
    "ServerFailed",
    "SettingError",
    "Stopped",
    "StyleConfigError",
    "TomlFileError",
    "UndecodableFile",
    "UndecodableSource",
    "UsageError",
    "WriteRefused",
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

    def __init__(self, message: str, *, code: str, tensor: Tensor,
                 overlaps: Sequence[Overlap]) -> None:
        self.code = code
        self.tensor = tensor
        self.overlaps = overlaps
        super().__init__(message)


class GuardError(AuxcheckError, AssertionError):
    """The live-server guard (``AUXCHECK_GUARD=raise``) saw findings in one call it checked.

    ``findings`` keeps every finding of that call, each with its rule code, and
    ``output_classes`` the output class each one was charged to.
    """

    def __init__(self, findings: Iterable[Finding], output_classes: Iterable[str]) -> None:
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


class ConfigFileError(Exception):
    """A configuration file cannot be read or parsed: ``problem`` says which and why, ``fix``
    (when given) the cure. The one error of both readers; each caller turns it into its own
    error or verdict, naming the setting it was reading."""

    def __init__(self, path: Path, problem: str, fix: str = "") -> None:
        self.path = path
        self.problem = problem
        self.fix = fix
        super().__init__(f"{path}: {problem}" + (f"; {fix}" if fix else ""))


class TomlFileError(ConfigFileError):
    """A TOML file cannot be read or parsed."""


class IniFileError(ConfigFileError):
    """An INI file cannot be read or parsed."""


class UndecodableFile(Exception):
    """A file could not be read or decoded; ``reason`` says why, ``line`` and ``col`` where.

    ``stage`` is ``read`` or ``decode`` and ``detail`` the system's or codec's message;
    ``reason`` reads ``cannot <stage>: <detail>``.
    """

    def __init__(self, path: str, stage: Literal["read", "decode"], detail: str, *,
                 line: int = 1, col: int = 1) -> None:
        self.path = path
        self.stage = stage
        self.detail = detail
        self.reason = f"cannot {stage}: {detail}"
        self.line = line
        self.col = col
        super().__init__(f"{path}: {self.reason}")


class FileTooLarge(Exception):
    """A file is larger than the size limit; ``size`` and ``limit`` are in bytes."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        self.path = path
        self.size = size
        self.limit = limit
        super().__init__(f"{path}: {size} bytes, over the limit of {limit}")


class NotARegularFile(OSError):
    """The path names a FIFO, a device, a socket or a folder; ``kind`` says which.

    The one error for a path that is not a regular file, wherever it is met: reading a
    configuration file, a Python source file, or the prefilter's bytes.
    """

    def __init__(self, path: str, kind: str) -> None:
        self.kind = kind
        code = errno.EISDIR if kind == "a folder" else errno.EINVAL
        super().__init__(code, f"it is {kind}, not a regular file", path)


class OutOfFiles(OSError):
    """``what`` failed because the process (EMFILE) or the system (ENFILE) may open no more
    files; an OSError with the errno and text of the one that was raised."""

    def __init__(self, what: str, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror)
        self.what = what


class Interrupted(BaseException):
    """pytest stopped plugin code (pytest-timeout's ``Failed``) while a check ran it.

    Raised by :func:`attempt` in place of the outcome, it is a ``BaseException`` no attempt,
    no check and no Hypothesis run catches (Hypothesis would shrink a ``Failed`` and run
    the hanging code again): it reaches the top of the check, which reports
    :meth:`finding` under ``code``, the rule of the call that was running.
    """

    def __init__(self, outcome: BaseException, code: str, what: str) -> None:
        super().__init__(code, what)
        self.outcome = outcome
        self.code = code
        self.what = what


class ReleaseError(AuxcheckError, ValueError):
    """A release cannot be found, downloaded or read; the message says what to do instead."""


class UndecodableSource(ReleaseError):
    """A Python file of a release is not text in its declared encoding (UTF-8 unless a PEP 263
    cookie says otherwise): Python cannot import it either. ``path`` is the file's path."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path

    def __reduce__(self) -> tuple[type[UndecodableSource], tuple[str, str]]:
        return type(self), (str(self), self.path)


class StyleConfigError(AuxcheckError, ValueError):
    """An import-sorter configuration value cannot be read.

    ``path`` is the configuration file, ``key`` the setting and ``problem`` what
    was wrong with it.
    """

    def __init__(self, path: str, key: str, problem: str, fix: str) -> None:
        self.path = path
        self.key = key
        self.problem = problem
        super().__init__(f"{path}: {key}: {problem}; {fix}")


class WriteRefused(Exception):
    """A rewrite was not written, on purpose; ``reason`` says why and what to do."""

    def __init__(self, path: str, reason: str, *, kept: bool = True) -> None:
        self.path = path
        self.reason = reason
        self.kept = kept
        """The file is exactly as it was (False: it was deleted meanwhile)."""
        super().__init__(f"{path}: {reason}")


class UsageError(AuxcheckError):
    """A command line that cannot be used: exit status 2, the message says which part and why.

    ``usage`` is the command's usage line, printed first when argparse found the problem.
    """

    def __init__(self, message: str, *, usage: str = "") -> None:
        self.message = message
        self.usage = usage
        super().__init__(message)


class CpuEnvironmentError(AuxcheckError):
    """The CPU SGLang environment could not be built; the message says which step and why."""


class PluginInstallError(AuxcheckError):
    """The plugin could not be installed; the message says why and what pip printed."""


class ServerFailed(AuxcheckError):
    """The server did not come up: it exited (``exited`` is True) or did not answer in time."""

    def __init__(self, message: str, *, exited: bool) -> None:
        super().__init__(message)
        self.exited = exited


class RequestFailed(AuxcheckError):
    """A request got an error answer, no answer in time (``hung``), or the connection broke."""

    def __init__(self, message: str, *, hung: bool = False) -> None:
        super().__init__(message)
        self.hung = hung


class SettingError(ValueError):
    """An ``AUXCHECK_GUARD*`` variable holds a value the guard cannot use."""


class LeafRaised(Exception):
    """A user's wrapped output raised on its own: the fault is the leaf's, not the composite's.

    ``code`` is AUX103 (its ``copy_to_host`` raised) or AUX202 (its ``consume`` raised);
    ``leaf`` is the user's object and ``error`` what it raised.
    """

    def __init__(self, code: str, method: str, leaf: Any, error: BaseException) -> None:
        self.code = code
        self.method = method
        self.leaf = leaf
        self.error = error
        super().__init__(f"{code}: the wrapped output's {method} failed")  # no plugin code runs


class PluginCallFailed(Exception):
    """A call into plugin code (an implementation, an observer hook, a factory) failed;
    carries the finding that says so."""

    def __init__(self, finding: Finding) -> None:
        self.finding = finding
        super().__init__(finding.message)


class ResultsFileError(ValueError):
    """The results file is missing, not JSON, of another version, or not of this schema."""


class LibcstUnavailable(AuxcheckError, ImportError):
    """Rewriting needs libcst, which cannot be imported here; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"rewriting imports needs libcst, which cannot be imported here "
                         f"({reason}); install it with pip install 'libcst>=1.1' (a "
                         "requirement of auxcheck: reinstalling auxcheck brings it), or use "
                         "--check, which does not need it")


class DrawFailed(ContractViolation):
    """Drawing from a user's strategy raised (AUX103) or gave None (AUX101)."""


class ScenarioFailed(RequestFailed):
    """A request ended in a way the scenario did not ask for."""
