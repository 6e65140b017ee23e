"""Asking what a path is without a crash: a folder on the way that cannot be searched is not an error.

``Path.is_file()`` and ``Path.is_dir()`` raise PermissionError when a folder above the
path cannot be searched (a process whose working folder sits under a folder it may not
enter, as after ``sudo -u``). Looking for configuration files upwards meets such folders
as a matter of course; to the search they hold nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["is_dir", "is_file"]


def is_file(path: Path) -> bool:
    """Returns True when ``path`` is a regular file (or a link to one) this process can see."""
    try:
        return path.is_file()
    except OSError:
        return False


def is_dir(path: Path | os.DirEntry[str]) -> bool:
    """Returns True when ``path`` is a folder (or a link to one) this process can see."""
    try:
        return path.is_dir()
    except OSError:
        return False
