"""What ``auxcheck live`` learns inside each process of a real SGLang server, written as JSON lines.

The run's ``sitecustomize`` calls :func:`install` at interpreter start-up in every process
the server starts (launcher, scheduler, detokenizer) when ``AUXCHECK_LIVE_EVENTS`` names a
file. It records, without changing what SGLang does:

- ``plugin-error``: an error SGLang's plugin loader logged with its exception (an entry
  point that failed to import, a ``register()`` that raised, a target ``apply_hooks()``
  could not patch): SGLang only logs these and serves on;
- ``process-error``: a process of the server logged that it hit an exception and is
  going down (``Scheduler hit an exception: Traceback ...``), with its traceback;
- ``hook-applied`` / ``hook-failed``: each target ``HookRegistry`` patched, with where each
  hook is defined; ``hook-called``: the first call of a patched target in this process;
  ``hook-raised``: an exception that left a hook (a hook that does not fit its call raises
  TypeError before its first line runs), each distinct one once.

Calls are counted by wrapping the wrapper ``HookRegistry`` builds for a function hook (its
``_wrap_fn``), so the plugin's own functions and the registry's records stay as they were. A
class REPLACE hook is not wrapped (its identity matters): it is applied, never counted.
Nothing here imports SGLang: the patch is made when SGLang's ``hook_registry`` module has
been imported, by an import hook. Each line is one ``os.write`` on a file opened to append,
so processes never interleave within a line. Nothing here ever raises into SGLang.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import json
import logging
import os
import re
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from types import ModuleType, TracebackType
from typing import Any

__all__ = ["EVENTS_ENV", "FRAME", "install"]

EVENTS_ENV = "AUXCHECK_LIVE_EVENTS"
"""The file the events are appended to; the probe does nothing when it is unset."""
REGISTRY = "sglang.srt.plugins.hook_registry"
FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>.+)$', re.MULTILINE)
"""One frame of a traceback as Python prints it."""
_RAISED_LIMIT = 50
"""At most this many ``hook-raised`` events per process (a hook raising on every step)."""


class _Writer:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.lock = threading.Lock()

    def write(self, event: str, **fields: Any) -> None:
        record = {"event": event, "pid": os.getpid(), **fields}
        data = (json.dumps(record, default=repr) + "\n").encode("utf-8", "backslashreplace")
        with self.lock:
            try:
                os.write(self.fd, data)
            except OSError:
                pass


def _frames(tb: TracebackType | None) -> list[list[Any]]:
    return [[f.filename, f.lineno, f.name] for f in traceback.extract_tb(tb)][-40:]


def _error(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()[:2000]


def _where(hook: Any) -> dict[str, Any]:
    """Returns the hook's name and where it is defined (file, first line), as far as known."""
    name = getattr(hook, "__qualname__", None) or repr(hook)
    module = getattr(hook, "__module__", None)
    code = getattr(getattr(hook, "__func__", hook), "__code__", None)
    if code is not None:
        return {"name": name, "module": module, "file": code.co_filename,
                "line": code.co_firstlineno, "kind": "function"}
    file, line = None, None
    if isinstance(hook, type):
        try:
            import inspect

            file = inspect.getsourcefile(hook)
            line = inspect.getsourcelines(hook)[1]
        except (OSError, TypeError):
            pass
    return {"name": name, "module": module, "file": file, "line": line,
            "kind": "class" if isinstance(hook, type) else "callable"}


class _LogHandler(logging.Handler):
    """Turns the errors SGLang logs about plugins and dying processes into events."""

    def __init__(self, writer: _Writer) -> None:
        super().__init__(logging.ERROR)
        self.writer = writer

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            exc = record.exc_info[1] if record.exc_info else None
            if record.name.startswith("sglang.srt.plugins") and exc is not None:
                self.writer.write("plugin-error", logger=record.name,
                                  message=message.splitlines()[0][:500], error=_error(exc),
                                  frames=_frames(exc.__traceback__))
            elif "hit an exception" in message or (exc is None and "Traceback" in message):
                head, _, rest = message.partition("Traceback (most recent call last):")
                self.writer.write("process-error", logger=record.name,
                                  message=head.strip()[:500],
                                  frames=[[m["file"], int(m["line"]), m["name"].strip()]
                                          for m in FRAME.finditer(rest)][-40:],
                                  error=(rest.strip().splitlines() or [""])[-1][:2000])
            elif exc is not None:
                self.writer.write("process-error", logger=record.name,
                                  message=message.splitlines()[0][:500] if message else "",
                                  frames=_frames(exc.__traceback__), error=_error(exc))
        except Exception:  # noqa: BLE001, S110  # the probe never fails a server
            pass


class _State(threading.local):
    target: str | None = None


def _patch_registry(module: ModuleType, writer: _Writer) -> None:
    registry = getattr(module, "HookRegistry", None)
    apply = None if registry is None else registry.__dict__.get("_apply_target")
    wrap = getattr(module, "_wrap_fn", None)
    if not isinstance(apply, classmethod) or not callable(wrap):
        writer.write("probe-off", why=f"{REGISTRY} has no HookRegistry._apply_target "
                     "classmethod and _wrap_fn: hooks are not counted in this release")
        return
    state = _State()
    raised = [0]

    def hooks_of(hooks: Sequence[Any]) -> list[dict[str, Any]]:
        described = []
        for entry in hooks:
            kind, hook = entry[0], entry[1]
            described.append({**_where(hook), "type": getattr(kind, "name", str(kind))})
        return described

    def apply_target(cls: Any, target: str, hooks: list[Any]) -> Any:
        state.target = target
        try:
            result = apply.__func__(cls, target, hooks)
        except Exception as exc:
            writer.write("hook-failed", target=target, hooks=hooks_of(hooks), error=_error(exc),
                         frames=_frames(exc.__traceback__))
            raise
        finally:
            state.target = None
        writer.write("hook-applied", target=target, hooks=hooks_of(hooks))
        return result

    def wrap_fn(original: Callable[..., Any], hook: Callable[..., Any], kind: Any) -> Any:
        wrapped = wrap(original, hook, kind)
        target = state.target
        if target is None or isinstance(hook, type) or not callable(wrapped):
            return wrapped
        called = [False]
        seen: set[str] = set()
        where = {**_where(hook), "type": getattr(kind, "name", str(kind))}

        @functools.wraps(wrapped)
        def counted(*args: Any, **kwargs: Any) -> Any:
            if not called[0]:
                called[0] = True
                writer.write("hook-called", target=target, hook=where)
            try:
                return wrapped(*args, **kwargs)
            except Exception as exc:
                text = _error(exc)
                if text not in seen and raised[0] < _RAISED_LIMIT:
                    seen.add(text)
                    raised[0] += 1
                    writer.write("hook-raised", target=target, hook=where, error=text,
                                 frames=_frames(exc.__traceback__))
                raise

        return counted

    setattr(registry, "_apply_target", classmethod(apply_target))  # noqa: B010
    setattr(module, "_wrap_fn", wrap_fn)  # noqa: B010


class _Loader(importlib.abc.Loader):
    """Runs a module's own loader, then a patch on the module it made."""

    def __init__(self, loader: Any, after: Callable[[ModuleType], None]) -> None:
        self.loader = loader
        self.after = after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        create = getattr(self.loader, "create_module", None)
        module: ModuleType | None = create(spec) if create else None
        return module

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        try:
            self.after(module)
        except Exception:  # noqa: BLE001, S110  # the probe never fails a server
            pass


class _AfterImport(importlib.abc.MetaPathFinder):
    """Patches ``REGISTRY`` once it is imported; otherwise out of the way."""

    def __init__(self, writer: _Writer) -> None:
        self.writer = writer
        self.done = False

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != REGISTRY or self.done:
            return None
        self.done = True
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader, lambda module: _patch_registry(module, self.writer))
        return spec


def install() -> None:
    """Starts recording into ``$AUXCHECK_LIVE_EVENTS``; does nothing when it is unset."""
    path = os.environ.get(EVENTS_ENV)
    if not path:
        return
    try:
        writer = _Writer(path)
    except OSError:
        return
    logging.getLogger("sglang").addHandler(_LogHandler(writer))
    sys.meta_path.insert(0, _AfterImport(writer))
    writer.write("process", argv=sys.argv[:3])
