"""The contract stage's pytest plugin that follows no symbolic link, and says which it skipped.

``auxcheck check`` walks the project without following links; its contract stage loads this
module into pytest (``-p auxcheck._check.pytest_links``) so that pytest does not either:
pytest enters folders the walk skips (``env/``, ``site-packages/``, those a project's
``norecursedirs`` does not name), and a ``..`` link there would have it collect the
project again at every level. Each link skipped is appended, one path a line, to the file
:data:`SKIPPED_LINKS_ENV` names (every pytest-xdist worker appends to the same file), which
the stage reads back for its note.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["SKIPPED_LINKS_ENV", "pytest_ignore_collect", "read_skipped"]

SKIPPED_LINKS_ENV = "AUXCHECK_SKIPPED_LINKS"
"""The environment variable naming the file the skipped links are appended to."""


def _is_link(path: Path) -> bool:
    try:
        return path.is_symlink()
    except OSError:  # a name too long to stat: not a link pytest could follow either
        return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Returns True for a symbolic link (to a folder or a Python file), recording it; None
    for anything else, left to pytest and other plugins."""
    if not _is_link(collection_path):
        return None
    if not (collection_path.suffix in (".py", ".pyi") or os.path.isdir(collection_path)):
        return None  # a link to a data file or a dangling one: pytest collects nothing there
    target = os.environ.get(SKIPPED_LINKS_ENV)
    if target:
        line = os.fsencode(str(collection_path)).replace(b"\n", b"?") + b"\n"
        try:
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)  # one write in append mode: workers' lines never interleave
            finally:
                os.close(fd)
        except OSError:
            pass  # the note is lost, never the run: the link is skipped all the same
    return True


def read_skipped(path: Path, root: Path) -> tuple[str, ...]:
    """Returns the links the plugin skipped, as recorded in ``path``, relative to ``root``
    (POSIX), each once, sorted; none when nothing was recorded."""
    try:
        data = path.read_bytes()
    except OSError:
        return ()
    names = set()
    for raw in data.splitlines():
        full = Path(os.fsdecode(raw))
        names.add(full.relative_to(root).as_posix() if full.is_relative_to(root)
                  else full.as_posix())
    return tuple(sorted(names))
