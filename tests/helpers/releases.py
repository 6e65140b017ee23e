"""Real SGLang releases for the tests, read from their wheels (never installed), and small fake ones.

The wheels live in ``$AUXCHECK_CACHE_DIR`` (``make test`` points it at ``.cache/sglang``
and fetches 0.5.19, 0.5.20 and 0.5.23 there once). A test that needs a release gets it
from there, downloading it when missing: it never skips for lack of SGLang.
"""

from __future__ import annotations

import os
import sys
import types
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
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



IMPL_MODULE = ("from auxcheck.protocols import (CompositeDeviceAuxiliaryOutput, "
               "CompositeHostAuxiliaryOutput, append_auxiliary_output)\n")
"""An ``auxiliary_output`` module with append and the composites (auxcheck's own)."""


def impl_release_files(version: str) -> dict[str, str]:
    """Returns the files of a tiny release whose ``auxiliary_output`` loads as an implementation."""
    return {
        "sglang/__init__.py": "raise RuntimeError('sglang/__init__.py must never run')\n",
        "sglang/version.py": f"__version__ = {version!r}\n",
        "sglang/srt/managers/auxiliary_output.py": IMPL_MODULE,
    }


def write_wheel(path: Path, members: Mapping[str, str | bytes], *,
                links: Mapping[str, str] | None = None,
                compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """Writes a zip wheel of ``members`` (names taken as they are, ``..`` and all) and of
    symbolic-link members ``links`` (name -> target); returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = (0o120777 << 16)  # S_IFLNK | 0777
            archive.writestr(info, target)
    return path


def real_registry_source() -> str:
    """Returns the text of the real 0.5.23 ``hook_registry.py``, for fake releases that apply
    hooks as SGLang does."""
    return (real_tree("0.5.23") / "sglang/srt/plugins/hook_registry.py").read_text()


@contextmanager
def sglang_from(release: Path, plugin: Path) -> Iterator[None]:
    """Imports ``sglang`` from the fake ``release`` (its ``__init__`` never runs) and the
    plugin package ``plug`` from ``plugin``; both leave ``sys.modules`` as they found it."""
    owned = [n for n in sys.modules if n.split(".")[0] in ("sglang", "plug")]
    saved = {n: sys.modules.pop(n) for n in owned}
    package = types.ModuleType("sglang")
    package.__path__ = [str(release / "sglang")]
    sys.modules["sglang"] = package
    sys.path.insert(0, str(plugin))
    try:
        yield
    finally:
        sys.path.remove(str(plugin))
        for name in [n for n in sys.modules if n.split(".")[0] in ("sglang", "plug")]:
            del sys.modules[name]
        sys.modules.update(saved)
