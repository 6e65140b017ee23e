"""Real SGLang releases for the tests, read from their wheels (never installed), and small fake ones.

The wheels live in ``$AUXCHECK_CACHE_DIR`` (``make test`` points it at ``.cache/sglang``
and fetches 0.5.19, 0.5.20 and 0.5.23 there once). A test that needs a release gets it
from there, downloading it when missing: it never skips for lack of SGLang.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping
from pathlib import Path

from auxcheck.releases import CACHE_ENV, Release, find_release, unpack
from helpers.paths import REPO

REAL_CACHE = Path(os.environ.get(CACHE_ENV) or REPO / ".cache" / "sglang")
"""Where the real wheels are cached for the tests."""

REAL_RELEASES = ("0.5.19", "0.5.20", "0.5.23")
"""The releases the tests read (``make wheels`` fetches exactly these)."""

_LOADED: dict[str, Release] = {}

def real_release(version: str) -> Release:
    """Returns the real SGLang release ``version`` from the test cache (downloaded once)."""
    if version not in _LOADED:
        _LOADED[version] = find_release(version, cache=REAL_CACHE)
    return _LOADED[version]


def real_tree(version: str) -> Path:
    """Returns a folder holding the unpacked ``sglang/`` Python files of release ``version``."""
    return unpack(real_release(version), cache=REAL_CACHE)


def write_release(root: Path, files: Mapping[str, str], *, wheel: bool = False) -> Path:
    """Writes a release of ``files`` (paths under ``sglang/``) under ``root``; returns it.

    A folder holding ``sglang/``, or with ``wheel`` a zip wheel of those files.
    """
    root.mkdir(parents=True, exist_ok=True)
    if wheel:
        path = root / "sglang-0-py3-none-any.whl"
        with zipfile.ZipFile(path, "w") as archive:
            for name, text in files.items():
                archive.writestr(name, text)
        return path
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root

