"""The layer every ``auxcheck`` front-end shares: usage errors, argument types, shared options.

Each subcommand builds its parser with :class:`CommandParser` and runs its body through
:func:`run_command`, so that every command reports a usage error the same way
(``auxcheck COMMAND: error: ...``, exit status 2), returns its exit status instead of
raising ``SystemExit`` (``--help`` included), spells ``-j/--jobs`` and ``--format`` the
same, and stops quietly when the reader of its output goes away. This module imports
nothing heavy: ``auxcheck migrate`` and ``auxcheck --help`` load it.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, NoReturn

from auxcheck._core.errors import UsageError
from auxcheck._core.limits import is_out_of_files, out_of_files_line

__all__ = [
    "CommandParser",
    "UsageError",
    "add_format",
    "add_jobs",
    "add_quiet",
    "add_release_options",
    "add_timeout",
    "byte_size",
    "one_version",
    "positive_int",
    "releases_of",
    "run_command",
    "say",
    "seconds",
]


class _ParserExit(Exception):
    """argparse finished on purpose (``--help``): the command returns ``status``."""

    def __init__(self, status: int) -> None:
        self.status = status
        super().__init__(status)


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of exiting, so ``main`` returns its status."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, usage=self.format_usage())

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise _ParserExit(status)


def run_command(prog: str, body: Callable[[list[str]], int],
                argv: Sequence[str] | None, *, stoppable: bool = False) -> int:
    """Returns ``body(argv)`` (``sys.argv[1:]`` when None): 2 on a usage error, which is
    printed as ``PROG: error: ...``, and when no more files could be opened (the line says
    to raise ``ulimit -n``); 1 when stdout's reader went away.

    ``stoppable``: the body starts child processes, and SIGTERM is handled as Ctrl-C is
    (:func:`auxcheck._core.stops.stops_raised`): either ends the body, whose cleanups
    end its children and remove its temporary folders, and the command says so and returns
    128 + the signal's number.
    """
    words = list(sys.argv[1:] if argv is None else argv)
    if not _standard_streams(prog):
        return 2
    if stoppable:
        from auxcheck._core.stops import stops_raised

        try:
            with stops_raised():
                return run_command(prog, body, words)
        except KeyboardInterrupt as stop:
            signum = getattr(stop, "signum", signal.SIGINT)
            print(f"{prog}: stopped by {signal.Signals(signum).name}; the processes it started "
                  "were ended and its temporary files removed", file=sys.stderr)
            return 128 + signum
    try:
        _progress_setting()
        return body(words)
    except _ParserExit as done:
        return done.status
    except UsageError as exc:
        sys.stderr.write(exc.usage)
        print(f"{prog}: error: {exc.message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`auxcheck ... | head`): stop quietly, as grep and ruff do,
        # and keep Python from reporting the pipe again when it flushes stdout at exit.
        _silence(sys.stdout)
        return 1
    except OSError as exc:  # at the open-file limit: one line, not a traceback
        if not is_out_of_files(exc):
            raise
        print(f"{prog}: error: {out_of_files_line(exc)}", file=sys.stderr)
        return 2


def _standard_streams(prog: str) -> bool:
    """Returns False, having said so, when stdout was closed (``>&-``): the command's results
    go there. A closed stdin or stderr (``2>&-``) is opened on the null device first, so
    the command runs as with ``2>/dev/null``: Python leaves ``sys.stderr`` None then, on
    which a progress line or a warning would fail, and a file the command opens would
    take the free descriptor 2 and receive what its child processes write to stderr."""
    for fd, name, mode in ((0, "stdin", "r"), (2, "stderr", "w")):
        if getattr(sys, name) is None:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            # Kept open for the life of the process, as Python's own sys.stderr is.
            setattr(sys, name, open(fd, mode, errors="backslashreplace",  # noqa: SIM115
                                    closefd=False))
    if sys.stdout is not None:
        return True
    print(f"{prog}: error: stdout is closed; the command prints its results there: "
          "redirect it to a file, or to /dev/null to keep only the exit status",
          file=sys.stderr)
    return False


def _progress_setting() -> None:
    """Raises UsageError when ``AUXCHECK_PROGRESS`` holds no setting it takes, before the
    command starts (its first wait would otherwise be where it fails)."""
    from auxcheck._core.errors import InvalidArgument
    from auxcheck._core.progress import wanted

    try:
        wanted()
    except InvalidArgument as exc:
        raise UsageError(str(exc)) from None


def _silence(stream: IO[str]) -> None:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError):  # not a real file (a test's capture): nothing will flush
        pass


def say(text: str, *, stream: IO[str] | None = None, flush: bool = False) -> None:
    """Prints ``text`` to ``stream`` (stdout) so that any text can be written: what its
    encoding cannot hold (a lone surrogate, or any non-ASCII under ``LANG=C``) is written
    as a backslash escape, never a UnicodeEncodeError."""
    out = sys.stdout if stream is None else stream
    encoding = getattr(out, "encoding", None) or "utf-8"
    try:
        text = text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:  # a stream naming an encoding Python does not know
        text = text.encode("ascii", "backslashreplace").decode("ascii")
    print(text, file=out, flush=flush)


def positive_int(text: str) -> int:
    """Returns ``text`` as a whole number >= 1; raises ArgumentTypeError saying what it got."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}; expected a whole number >= 1")
    return value


def seconds(text: str) -> float:
    """Returns ``text`` as a number of seconds >= 0 (0: no limit); raises ArgumentTypeError
    saying what it got."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}; expected a number of seconds "
                                         ">= 0, such as 60 or 2.5 (0: no limit)")
    return value


_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "G": 1 << 30, "GB": 1 << 30}


def byte_size(text: str) -> int | None:
    """Returns ``2MB``, ``500KB``, ``8G`` or ``1048576`` in bytes (K, M, G are powers of 1024),
    None for ``0`` or ``none`` (no limit); raises ArgumentTypeError saying what it got."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?B?)\s*", text.upper())
    if text.strip().lower() == "none" or (match and int(match[1]) == 0):
        return None
    if match is None:
        raise argparse.ArgumentTypeError(f"invalid size {text!r}; expected bytes or a size "
                                         "such as 500KB, 2MB or 1GB (0 or none: no limit)")
    return int(match[1]) * _UNITS[match[2]]


def add_timeout(parser: argparse.ArgumentParser, *, default: float, help: str) -> None:
    """Adds ``--timeout SECONDS`` (a number >= 0, 0 meaning no limit) with ``default``."""
    parser.add_argument("--timeout", type=seconds, default=default, metavar="SECONDS",
                        help=f"{help} (default: {default:g}; 0: no limit)")


def add_jobs(parser: argparse.ArgumentParser, *, help: str,
             hidden: Sequence[str] = ()) -> None:
    """Adds ``-j/--jobs N`` (a whole number >= 1, default None); ``hidden`` spellings such
    as check's old ``-n`` still parse, without appearing in ``--help``."""
    parser.add_argument("--jobs", "-j", type=positive_int, default=None, metavar="N", help=help)
    for flag in hidden:
        parser.add_argument(flag, dest="jobs", type=positive_int, help=argparse.SUPPRESS)


QUIET_HELP = "no progress on stderr (warnings, errors and the results still print)"
"""What ``-q/--quiet`` means for every command with long waits (downloads, index building)."""


def add_quiet(parser: argparse._ActionsContainer, *, help: str = QUIET_HELP) -> None:
    """Adds ``-q/--quiet``: the command reports no progress (:mod:`auxcheck._core.progress`);
    its help names ``AUXCHECK_PROGRESS=off``, the same switch for every command at once."""
    parser.add_argument("-q", "--quiet", action="store_true",
                        help=f"{help}; AUXCHECK_PROGRESS=off in the environment does the same")


def add_format(parser: argparse.ArgumentParser, choices: Sequence[str], *, help: str) -> None:
    """Adds ``--format`` with ``choices``, the first being the default."""
    parser.add_argument("--format", choices=tuple(choices), default=choices[0], help=help)


def one_version(text: str) -> str:
    """Returns ``text`` as one release version; raises ArgumentTypeError saying what it got."""
    from auxcheck._core.errors import ReleaseError
    from auxcheck.releases import parse_versions

    try:
        versions = parse_versions(text)
    except ReleaseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if len(versions) != 1:
        raise argparse.ArgumentTypeError(f"expected one release version such as 0.5.23, "
                                         f"got {text!r}")
    return versions[0]


def add_release_options(parser: argparse.ArgumentParser, *, title: str,
                        checked: bool = False) -> argparse._ArgumentGroup:
    """Adds ``--wheel``, ``--source``, ``--cache`` and ``--offline`` under ``title``; returns
    the group. ``checked``: the release of each ``--wheel`` and ``--source`` is checked too."""
    also = "; its release is checked too" if checked else ""
    group = parser.add_argument_group(title)
    group.add_argument("--wheel", action="append", type=Path, default=[], metavar="WHEEL",
                       help="a downloaded sglang wheel to use instead of the cache, matched by "
                            f"its declared version (repeatable{also})")
    group.add_argument("--source", action="append", type=Path, default=[], metavar="DIR",
                       help="an unpacked sglang tree (the folder holding sglang/), matched by "
                            f"its declared version (repeatable{also})")
    group.add_argument("--cache", type=Path, default=None, metavar="DIR",
                       help="the wheel and index cache (default: $AUXCHECK_CACHE_DIR or "
                            "~/.cache/auxcheck/sglang)")
    group.add_argument("--offline", action="store_true",
                       help="never download: use --wheel, --source and the cache only")
    return group


def releases_of(sglang: Sequence[str], path: Path) -> tuple[str, ...]:
    """Returns the releases a command runs on: its ``--sglang`` values, else the project's
    ``[tool.auxcheck] sglang`` (empty when neither names one); raises UsageError naming
    the value that is no release."""
    from auxcheck._core.config import project_sglang
    from auxcheck._core.errors import InvalidArgument, ReleaseError
    from auxcheck.releases import parse_versions

    try:
        if sglang:
            return parse_versions(",".join(sglang))
        configured = project_sglang(path)
        return parse_versions(configured) if configured else ()
    except (ReleaseError, InvalidArgument) as exc:
        raise UsageError(f"--sglang: {exc}" if sglang else str(exc)) from None
