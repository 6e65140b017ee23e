"""SGLang releases as files to read: wheels fetched into a cache, read as zips, never installed.

SGLang cannot be installed on a machine without its GPU stack, but every release's
wheel can be downloaded and read. A :class:`Release` gives the text of the release's
``sglang/...`` files from a wheel or an unpacked tree; :func:`find_release` finds one
by version (a ``--wheel`` or ``--source`` given by the user, the cache, or
``pip download --no-deps``). :func:`import_modules` imports a few of its
dependency-light modules (the contract modules need only torch) without running
``sglang/__init__.py`` and without leaving ``sglang`` in ``sys.modules``.
"""

from auxcheck._core.errors import ReleaseError, UndecodableSource
from auxcheck._releases.wheels import (
    CACHE_ENV,
    Release,
    cache_dir,
    fetch_wheel,
    find_release,
    import_modules,
    local_releases,
    parse_versions,
    same_version,
    unpack,
)

__all__ = [
    "CACHE_ENV",
    "Release",
    "ReleaseError",
    "UndecodableSource",
    "cache_dir",
    "fetch_wheel",
    "find_release",
    "import_modules",
    "local_releases",
    "parse_versions",
    "same_version",
    "unpack",
]
