"""Implementations of append and the composites: auxcheck's reference, SGLang's, or yours."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from auxcheck._core import protocols
from auxcheck._core.errors import InvalidArgument
from auxcheck._core.plugin_calls import MISSING, attempt, kind_name, lookup, type_name

__all__ = [
    "REFERENCE",
    "SGLANG_MODULE",
    "Implementation",
    "load_implementation",
    "release_implementation",
    "release_version",
]

SGLANG_MODULE = "sglang.srt.managers.auxiliary_output"
"""The module that holds SGLang's own append and composites."""

_NAMES = ("append_auxiliary_output", "CompositeDeviceAuxiliaryOutput",
          "CompositeHostAuxiliaryOutput")
_RELEASE_PREFIX = "sglang=="
_SGLANG_MODULE_FILE = "sglang/srt/managers/auxiliary_output.py"


def _text(exc: BaseException) -> str:
    """Returns ``str(exc)`` cut short, or a placeholder when it raises."""
    got = attempt(str, exc)
    return got.value[:200] if type(got.value) is str else "<str() of the exception raised>"


@dataclass(frozen=True, slots=True)
class Implementation:
    """An implementation of append and the composites: auxcheck's reference, SGLang's, or yours."""

    name: str
    append: Callable[[Any, Any], Any]
    device_composite: type
    host_composite: type

    def __post_init__(self) -> None:
        for attr in ("device_composite", "host_composite"):
            value = getattr(self, attr)
            if not issubclass(type(value), type):
                raise InvalidArgument(
                    f"implementation {self.name!r}: its {attr} is a value of type "
                    f"{kind_name(value)}, not a class; expected the composite classes "
                    "(SGLang's are frozen dataclasses)"
                )

    @classmethod
    def from_module(cls, module: Any, *, name: str | None = None) -> Implementation:
        """Returns the implementation a module (or any object) exposes under SGLang's names.

        Raises InvalidArgument naming what is missing, what raised when looked up, and
        a composite that is not a class.
        """
        label = name or _module_name(module)
        found = {attr: lookup(module, attr) for attr in _NAMES}
        for attr, got in found.items():
            if got.error is not None:
                raise InvalidArgument(
                    f"{label}: looking up {attr} raised {kind_name(got.error)} "
                    f"({_text(got.error)}); an implementation module must expose "
                    f"{', '.join(_NAMES)} as plain attributes"
                )
        missing = [attr for attr, got in found.items() if got.value is MISSING]
        if missing:
            raise InvalidArgument(
                f"{label} does not define {', '.join(missing)}; an implementation module "
                f"must expose {', '.join(_NAMES)}"
            )
        return cls(label, *(found[attr].value for attr in _NAMES))


def _module_name(module: Any) -> str:
    found = lookup(module, "__name__")
    return found.value if type(found.value) is str and found.value else type_name(module)


REFERENCE = Implementation.from_module(protocols, name="reference")
"""auxcheck's reference implementation (``auxcheck.protocols``)."""


def load_implementation(spec: str) -> Implementation:
    """Returns the implementation named by ``spec``: reference, sglang, sglang==X, auto, or a module.

    ``auto`` is SGLang's when it can be imported, else the reference. ``sglang==0.5.23``
    is that release's own code, read from its wheel (see :func:`release_implementation`).
    Raises InvalidArgument when the module cannot be imported or lacks a required name,
    and ReleaseError when the release cannot be downloaded or read.
    """
    if spec == "reference":
        return REFERENCE
    if spec == "auto":
        imported = attempt(importlib.import_module, SGLANG_MODULE)
        if issubclass(type(imported.error), ImportError):
            return REFERENCE
        if imported.error is not None:
            raise InvalidArgument(
                f"implementation 'auto': importing {SGLANG_MODULE} raised "
                f"{kind_name(imported.error)} ({_text(imported.error)}); repair the SGLang "
                "install, or choose 'reference' explicitly"
            )
        return Implementation.from_module(imported.value, name="sglang")
    version = _release_of(spec)
    if version is not None:
        return release_implementation(version)
    module_name = SGLANG_MODULE if spec == "sglang" else spec
    return Implementation.from_module(_import(spec, module_name), name=spec)


def _release_of(spec: str) -> str | None:
    try:
        return release_version(spec)
    except InvalidArgument as exc:
        raise InvalidArgument(f"implementation {spec!r}: {exc}") from None


def release_version(spec: str) -> str | None:
    """Returns ``X`` of an ``sglang==X`` spec, or None for any other spec.

    Raises InvalidArgument, saying what ``X`` should be, when it is not one release
    version such as ``0.5.23``.
    """
    if not spec.startswith(_RELEASE_PREFIX):
        return None
    from auxcheck._core.errors import ReleaseError
    from auxcheck._releases.wheels import parse_versions

    version = spec.removeprefix(_RELEASE_PREFIX)
    try:
        parsed = parse_versions(version)  # one version: a list such as 0.5.20,0.5.23 is refused
    except ReleaseError:
        parsed = ()
    if parsed != (version,):
        raise InvalidArgument(f"{version!r} is not an SGLang release version; expected "
                              "sglang==X.Y.Z such as sglang==0.5.23")
    return version


def release_implementation(version: str) -> Implementation:
    """Returns the append and composites of SGLang release ``version``, named ``sglang==X``.

    The release's wheel comes from the user's cache (downloaded there when missing) and
    its ``auxiliary_output`` module is imported from the unpacked files; SGLang is never
    installed. Raises ReleaseError when the wheel cannot be fetched, read or unpacked
    (naming the member or the cache folder), InvalidArgument when the release predates the
    composites (0.5.20) or its module raises on import.
    """
    from auxcheck._releases.wheels import find_release, import_modules, unpack

    release = find_release(version)
    name = f"{_RELEASE_PREFIX}{version}"
    if release.read(_SGLANG_MODULE_FILE) is None:
        raise InvalidArgument(
            f"implementation {name!r}: sglang {version} has no {SGLANG_MODULE}; append and the "
            "composites arrived in sglang 0.5.20, so prove 0.5.20 or later"
        )
    root = unpack(release)
    imported = attempt(import_modules, root, [SGLANG_MODULE])
    if imported.error is not None:  # the release's own code, run here: any error is possible
        raise InvalidArgument(
            f"implementation {name!r}: importing {SGLANG_MODULE} from {root} raised "
            f"{kind_name(imported.error)} ({_text(imported.error)}); delete that folder so that "
            f"auxcheck unpacks sglang {version} again, or choose 'reference'"
        ) from None
    return Implementation.from_module(imported.value[SGLANG_MODULE], name=name)


def _import(spec: str, module_name: str) -> ModuleType:
    if not module_name or not all(part.isidentifier() for part in module_name.split(".")):
        raise InvalidArgument(
            f"implementation {spec!r} is not 'reference', 'sglang', 'sglang==X.Y.Z', 'auto' or "
            "a dotted module path"
        )
    imported = attempt(importlib.import_module, module_name)
    error = imported.error
    if error is not None and issubclass(type(error), ImportError):
        raise InvalidArgument(
            f"implementation {spec!r}: cannot import {module_name} ({_text(error)}); install "
            "it, or use 'reference' or a dotted path to your own module"
        ) from None
    if error is not None:
        raise InvalidArgument(
            f"implementation {spec!r}: importing {module_name} raised {kind_name(error)} "
            f"({_text(error)}); fix the module so that it imports, or use 'reference'"
        ) from None
    return imported.value  # type: ignore[no-any-return]
