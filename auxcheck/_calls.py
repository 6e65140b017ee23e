"""Calling plugin code safely: guarded calls, attribute lookups and shape checks of methods.

Every check that runs a plugin's code goes through :func:`guard` (or :func:`lookup`), so
whatever plugin code raises (``SystemExit``, ``GeneratorExit``, ``MemoryError`` included)
becomes an outcome (later a finding), never a crash or the checker's exit status. Only
KeyboardInterrupt and pytest's ``Failed`` pass through: pytest-timeout (signal method)
ends a hanging item by raising ``Failed`` inside the running code. Importing this module
does not import torch.
"""

from __future__ import annotations

import inspect
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from auxcheck.report import Finding

__all__ = [
    "MISSING",
    "Outcome",
    "announce",
    "arity_problem",
    "guard",
    "kind_name",
    "lookup",
    "method_findings",
    "passes_through",
    "phase_code",
    "set_phase_listener",
    "shape_text",
    "summarize",
    "type_name",
]

MISSING: Any = object()
"""What :func:`lookup` returns for an attribute that does not exist."""

PhaseListener = Callable[[str, str], None]
"""Told ``(code, what)`` before plugin code runs: the rule a crash or hang there breaks."""

_listener: PhaseListener | None = None


def set_phase_listener(listener: PhaseListener | None) -> PhaseListener | None:
    """Installs the listener :func:`announce` tells (None removes it); returns the previous one.

    The child process of ``auxcheck validate`` installs one that streams each phase to
    its parent, so an ``os._exit``, an abort or a hang inside plugin code is reported
    under the rule of the call that was running.
    """
    global _listener
    previous, _listener = _listener, listener
    return previous


_phase = ""


def announce(code: str, what: str, *subjects: Any) -> None:
    """Tells the phase listener, if any, that plugin code ``what`` runs next under rule ``code``.

    ``what`` is a ``str.format`` template filled with the type names of ``subjects``
    only when a listener is installed, so the common case costs one store.
    """
    global _phase
    _phase = code
    if _listener is not None:
        _listener(code, what.format(*(s if type(s) is str else type_name(s) for s in subjects)))


def phase_code(default: str) -> str:
    """Returns the rule of the plugin code announced last (``default`` when none), and forgets it."""
    global _phase
    code, _phase = _phase or default, ""
    return code


def passes_through(exc: BaseException) -> bool:
    """Returns True for what a guard must re-raise: KeyboardInterrupt and pytest's ``Failed``.

    ``Failed`` (not an xfail) is what pytest-timeout's signal method raises inside the
    running code. A skip, an xfail or a ``pytest.exit`` raised inside plugin code is the
    plugin's own doing (``pytest.importorskip`` in ``copy_to_host``, say): a finding like
    any error, never an item skipped or a run ended with status 0. pytest is never
    imported here: its outcome types are looked up only when loaded.
    """
    if isinstance(exc, KeyboardInterrupt):
        return True
    outcomes = sys.modules.get("_pytest.outcomes")
    failed, xfailed = (getattr(outcomes, name, None) for name in ("Failed", "XFailed"))
    kind = type(exc)
    return (isinstance(failed, type) and issubclass(kind, failed)
            and not (isinstance(xfailed, type) and issubclass(kind, xfailed)))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a guarded call returned, or the exception it raised."""

    value: Any = None
    error: BaseException | None = None

    @property
    def detail(self) -> str | None:
        """Returns the traceback summary of the error, if any."""
        return None if self.error is None else summarize(self.error)


def guard(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Outcome:
    """Calls plugin code; whatever it raises becomes an outcome.

    ``sys.exit()`` in plugin code is a plugin bug, never the checker's exit status.
    KeyboardInterrupt and pytest's outcomes propagate (see :func:`passes_through`). A
    default torch device or dtype the call set is put back, so the checker's own
    tensors stay where it makes them.
    """
    torch = sys.modules.get("torch")
    before = _torch_defaults(torch)
    try:
        return Outcome(func(*args, **kwargs))
    except BaseException as exc:  # everything plugin code raises is a finding
        if passes_through(exc):
            raise
        return Outcome(error=exc)
    finally:
        if before is not None and _torch_defaults(torch) != before:
            _restore_torch_defaults(torch, before)


def _torch_defaults(torch: Any) -> tuple[Any, Any] | None:
    if torch is None:
        return None
    try:
        return (torch.get_default_device(), torch.get_default_dtype())
    except Exception:  # noqa: BLE001 - an old or partly imported torch: nothing to restore
        return None


def _restore_torch_defaults(torch: Any, before: tuple[Any, Any]) -> None:
    device, dtype = before
    # None removes the device mode; the default device of a fresh process is the CPU.
    torch.set_default_device(None if device == torch.device("cpu") else device)
    torch.set_default_dtype(dtype)


_OWN_FILES = frozenset({__file__})


def summarize(exc: BaseException, *, frames: int = 3) -> str:
    """Returns the last few frames outside auxcheck's harness as ``file:line in func``, and the error."""
    stack = [f for f in traceback.extract_tb(exc.__traceback__)
             if f.filename not in _OWN_FILES and "/auxcheck/_" not in f.filename]
    stack = stack[-frames:]
    lines = [f"{f.filename}:{f.lineno} in {f.name}" for f in stack]
    outcome = guard(str, exc)
    text = outcome.value if type(outcome.value) is str else "<str() of the exception raised>"
    lines.append(f"{kind_name(exc)}: {text}"[:300])
    return "\n".join(lines)


def lookup(obj: Any, name: str) -> Outcome:
    """Returns ``getattr(obj, name)`` as an outcome; a missing attribute gives MISSING."""
    found = guard(getattr, obj, name)
    if type(found.error) is AttributeError:  # a subclass of it is the plugin's own error
        return Outcome(MISSING)
    return found


def arity_problem(func: Any, params: Sequence[str], keywords: Sequence[str] = ()) -> str | None:
    """Returns why ``func(*params, **keywords)`` cannot be called, or None when it can.

    Callables without an introspectable signature (some builtins) are given the
    benefit of the doubt.
    """
    found = guard(inspect.signature, func)  # a raising __signature__, a __wrapped__ loop
    if found.error is not None or not isinstance(found.value, inspect.Signature):
        return None
    signature: inspect.Signature = found.value
    bound = guard(signature.bind, *[object() for _ in params], **{k: object() for k in keywords})
    if not isinstance(bound.error, TypeError):
        return None
    wanted = f"{len(params)} positional argument(s)"
    if keywords:
        wanted += f" and the keyword(s) {', '.join(keywords)}"
    return f"its signature {_signature_text(signature)} does not take {wanted} ({bound.error})"


def _signature_text(signature: inspect.Signature) -> str:
    """Returns ``(self, a, b=..., *args)``: names and kinds only, never a default's repr."""
    parts, star = [], False
    for param in signature.parameters.values():
        kind = param.kind
        if kind is param.KEYWORD_ONLY and not star:
            parts.append("*")
        star = star or kind in (param.VAR_POSITIONAL, param.KEYWORD_ONLY)
        prefix = "*" if kind is param.VAR_POSITIONAL else "**" if kind is param.VAR_KEYWORD else ""
        default = "" if param.default is param.empty else "=..."
        parts.append(f"{prefix}{param.name}{default}")
    return f"({', '.join(parts)})"


def method_findings(
    obj: Any, name: str, params: Sequence[str], *, missing: str, arity: str,
    keywords: Sequence[str] = (),
) -> tuple[Any, list[Finding]]:
    """Returns the bound method ``obj.name`` (or None) and the findings about its shape."""
    shown = [*params, *(f"{k}=..." for k in keywords)]
    call = f"{name}({', '.join(shown)})"
    announce(missing, "looking up `" + name + "` on {}", obj)
    found = lookup(obj, name)
    if found.error is not None:
        return None, [Finding.of(missing, f"looking up `{name}` raised "
                                 f"{kind_name(found.error)}", f"expected a callable {call}",
                                 obj, detail=found.detail)]
    if found.value is MISSING or not callable(found.value):
        seen = "no attribute" if found.value is MISSING else f"a {kind_name(found.value)}"
        return None, [Finding.of(missing, f"`{name}` is {seen}", f"expected a callable {call}",
                                 obj)]
    problem = arity_problem(found.value, params, keywords)
    if problem is not None:
        return None, [Finding.of(arity, f"`{name}` cannot be called as {call}: {problem}",
                                 "SGLang passes the arguments positionally", obj)]
    return found.value, []


def type_name(obj: Any) -> str:
    """Returns ``module.QualName`` of ``obj``'s type: cheap, unlike a repr of its tensors."""
    cls = type(obj)
    names = guard(lambda: (type.__dict__["__module__"].__get__(cls),
                           type.__dict__["__qualname__"].__get__(cls)))
    if names.error is not None or not all(type(n) is str for n in names.value):
        return "<a type whose name cannot be read>"
    module, qualname = names.value
    return f"{module}.{qualname}"


def kind_name(obj: Any) -> str:
    """Returns the bare name of ``obj``'s type (``SystemExit``), read past any metaclass code."""
    return type_name(obj).rpartition(".")[2]


def shape_text(tensor: Any) -> str:
    """Returns ``[4, 16] float32`` for a tensor (``[nested]`` when it has no single shape)."""
    shape = guard(lambda: ", ".join(str(int(n)) for n in tensor.shape))
    sizes = shape.value if shape.error is None else "nested"  # no single shape
    dtype = guard(lambda: str(tensor.dtype).removeprefix("torch."))
    return f"[{sizes}] {dtype.value if dtype.error is None else 'unknown dtype'}"
