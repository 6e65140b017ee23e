"""Too many open files: the one error line a command prints when it cannot open one more.

A process at its open-file limit (``ulimit -n``) fails wherever it next opens a file, a pipe
or a process; the step that knows what it was doing raises :class:`OutOfFiles` naming it,
and the command prints :func:`out_of_files_line` instead of a traceback. This module is
imported before a command runs, not when the limit is hit: importing then needs a file.
"""

from __future__ import annotations

import errno

from auxcheck._core.errors import OutOfFiles

try:
    import resource
except ImportError:  # not Unix: the limit cannot be told
    resource = None  # type: ignore[assignment]

__all__ = ["OutOfFiles", "is_out_of_files", "out_of_files_line"]

_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE})


def is_out_of_files(exc: BaseException) -> bool:
    """Returns True when ``exc`` says no more files could be opened."""
    return isinstance(exc, OSError) and exc.errno in _ERRNOS


def out_of_files_line(exc: OSError) -> str:
    """Returns what failed, the limit, and how to fix it, on one line."""
    what = getattr(exc, "what", None) or (
        f"cannot open {exc.filename}" if exc.filename else "cannot open one more file")
    limit = ""
    if resource is not None:
        try:
            limit = f" of {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}"
        except (OSError, ValueError):
            pass
    return (f"{what}: {exc.strerror or 'too many open files'} (the open-file limit{limit} is "
            "too low); raise the open-file limit (ulimit -n), e.g. to 1024, and run again")
