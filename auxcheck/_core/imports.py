"""What a failed import means: a module that does not exist, or one that exists and raised.

``auxcheck validate`` and the live-server guard both import a module a person named (a
target, SGLang's plugin hook registry); both must tell a name that is wrong (a typo: say
which names are close) from code that is there and failed (a missing dependency, an error
in the module: say which import failed and why). Nothing here imports a module to look for
one: near names are read from the finders (``pkgutil.iter_modules``), as the import system
itself would find them. Standard library only.
"""

from __future__ import annotations

import importlib.util
import pkgutil
import sys
import types
from typing import TypeGuard

from auxcheck._core.text import close_names, did_you_mean

__all__ = ["import_chain", "import_failure", "is_missing", "missing_module_hint", "near_modules"]

_TOP_LEVEL_CUTOFF = 0.8
"""difflib's ratio a top-level module name needs to be suggested: one letter off in five."""


def is_missing(exc: BaseException, module: str) -> TypeGuard[ModuleNotFoundError]:
    """Returns True when ``exc`` says ``module`` or a package above it does not exist.

    A ``ModuleNotFoundError`` naming any other module (a dependency ``module`` imports)
    means ``module`` exists and its import failed: False.
    """
    if type(exc) is not ModuleNotFoundError or type(exc.msg) is not str:
        return False
    name = exc.name
    return type(name) is str and (module == name or module.startswith(name + "."))


def near_modules(missing: str, *, limit: int = 3) -> list[str]:
    """Returns the dotted names of up to ``limit`` modules whose names are closest to ``missing``.

    For ``pkg.sub`` the candidates are the modules of ``pkg`` (which must be imported
    already, as it is once the import of ``pkg.sub`` got that far); for a top-level name,
    the top-level modules on ``sys.path`` and the built-in ones. None of them is imported.
    """
    parent, _, last = missing.rpartition(".")
    cutoff = 0.6
    if parent:
        package = sys.modules.get(parent)
        path = getattr(package, "__path__", None) if package is not None else None
        if path is None:
            return []
        names = _module_names(list(path))
    else:  # thousands of names (the standard library, site-packages): typos only
        names, cutoff = _module_names(None) | set(sys.builtin_module_names), _TOP_LEVEL_CUTOFF
    if not last.startswith("_"):
        names = {n for n in names if not n.startswith("_")}
    prefix = parent + "." if parent else ""
    return [prefix + name for name in close_names(last, names, limit=limit, cutoff=cutoff)]


def _module_names(path: list[str] | None) -> set[str]:
    try:
        return {info.name for info in pkgutil.iter_modules(path)}
    except Exception:  # noqa: BLE001 - a broken finder on sys.path: no suggestion, not a crash
        return set()


def import_chain(exc: BaseException) -> list[str]:
    """Returns the modules whose top-level code was running when ``exc`` was raised, outermost
    first: ``["sglang.srt.plugins", "sglang.srt.environ"]`` when the first imported the
    second and the second raised (or imported a module that does not exist)."""
    chain: list[str] = []
    trace: types.TracebackType | None = exc.__traceback__
    while trace is not None:
        frame = trace.tb_frame
        name = frame.f_globals.get("__name__")
        if frame.f_code.co_name == "<module>" and type(name) is str and name not in chain[-1:]:
            chain.append(name)
        trace = trace.tb_next
    return chain


def missing_module_hint(exc: ModuleNotFoundError, *, needed_by: str) -> str:
    """Returns what to do about the module ``exc`` says is missing, which ``needed_by`` imports.

    A top-level name is a dependency to install (``orjson``, usually ``pip install
    orjson``: a distribution may be named otherwise); a submodule of a
    package that is there is one that package lacks (with the close names it has).
    """
    name = exc.name
    if type(name) is not str or not name:
        return f"a module {needed_by} imports is missing"
    top = name.partition(".")[0]
    if top != name and _findable(top):
        return (f"{top} is there but has no module {name}"
                f"{did_you_mean(near_modules(name))}")
    return (f"a dependency of {needed_by} is missing: install the package that provides the "
            f"module {top} (usually `pip install {top}`)")


def _findable(module: str) -> bool:
    """Returns True when a top-level ``module`` can be found (it is not imported)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def import_failure(exc: BaseException, module: str, *, needed_by: str) -> str:
    """Returns one line saying why importing ``module`` raised ``exc``: the error, the modules
    being imported when it was raised, and for a missing dependency how to install it.

    ``importing sglang.srt.plugins.hook_registry failed: ModuleNotFoundError: No module named
    'orjson' (import chain: sglang.srt.plugins -> sglang.srt.environ -> orjson); a
    dependency of SGLang is missing: install the package that provides the module orjson
    (usually `pip install orjson`)`` (``needed_by`` names who needs it: SGLang)
    """
    chain = import_chain(exc)
    missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
    if type(missing) is str:
        chain.append(missing)
    text = f"importing {module} failed: {type(exc).__name__}: {_message(exc)}"
    if chain and chain != [module]:
        text += f" (import chain: {' -> '.join(chain)})"
    if isinstance(exc, ModuleNotFoundError) and type(missing) is str:
        text += f"; {missing_module_hint(exc, needed_by=needed_by)}"
    return text


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises still gets a line
        return f"<{type(exc).__name__} whose message cannot be read>"
