"""Calling plugin code safely: guarded calls, attribute lookups and shape checks of methods.

Every check that runs a plugin's code goes through :func:`guard`, so an Exception or a
``SystemExit`` raised by plugin code becomes an outcome (later a finding), never a crash
or the checker's exit status. Importing this module does not import torch.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from auxcheck.report import Finding

__all__ = [
    "MISSING",
    "Outcome",
    "arity_problem",
    "guard",
    "lookup",
    "method_findings",
    "shape_text",
    "summarize",
    "type_name",
]

MISSING: Any = object()
"""What :func:`lookup` returns for an attribute that does not exist."""


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
    """Calls plugin code; an Exception or SystemExit becomes an outcome.

    ``sys.exit()`` in plugin code is a plugin bug, never the checker's exit status;
    KeyboardInterrupt and the other BaseExceptions propagate.
    """
    try:
        return Outcome(func(*args, **kwargs))
    except (Exception, SystemExit) as exc:  # noqa: BLE001
        return Outcome(error=exc)


_OWN_FILES = frozenset({__file__})


def summarize(exc: BaseException, *, frames: int = 3) -> str:
    """Returns the last few frames outside auxcheck's harness as ``file:line in func``, and the error."""
    stack = [f for f in traceback.extract_tb(exc.__traceback__)
             if f.filename not in _OWN_FILES and "/auxcheck/_" not in f.filename]
    stack = stack[-frames:]
    lines = [f"{f.filename}:{f.lineno} in {f.name}" for f in stack]
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001
        text = "<str() of the exception raised>"
    lines.append(f"{type(exc).__name__}: {text}"[:300])
    return "\n".join(lines)


def lookup(obj: Any, name: str) -> Outcome:
    """Returns ``getattr(obj, name)`` as an outcome; a missing attribute gives MISSING."""
    try:
        return Outcome(getattr(obj, name))
    except AttributeError:
        return Outcome(MISSING)
    except Exception as exc:  # noqa: BLE001 - a hostile __getattr__ or property
        return Outcome(error=exc)


def arity_problem(func: Any, params: Sequence[str], keywords: Sequence[str] = ()) -> str | None:
    """Returns why ``func(*params, **keywords)`` cannot be called, or None when it can.

    Callables without an introspectable signature (some builtins) are given the
    benefit of the doubt.
    """
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*[object() for _ in params], **{k: object() for k in keywords})
    except TypeError as exc:
        shown = signature.replace(return_annotation=inspect.Signature.empty)
        wanted = f"{len(params)} positional argument(s)"
        if keywords:
            wanted += f" and the keyword(s) {', '.join(keywords)}"
        return f"its signature {shown} does not take {wanted} ({exc})"
    return None


def method_findings(
    obj: Any, name: str, params: Sequence[str], *, missing: str, arity: str,
    keywords: Sequence[str] = (),
) -> tuple[Any, list[Finding]]:
    """Returns the bound method ``obj.name`` (or None) and the findings about its shape."""
    shown = [*params, *(f"{k}=..." for k in keywords)]
    call = f"{name}({', '.join(shown)})"
    found = lookup(obj, name)
    if found.error is not None:
        return None, [Finding.of(missing, f"looking up `{name}` raised "
                                 f"{type(found.error).__name__}", f"expected a callable {call}",
                                 obj, detail=found.detail)]
    if found.value is MISSING or not callable(found.value):
        seen = "no attribute" if found.value is MISSING else f"a {type(found.value).__name__}"
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
    return f"{cls.__module__}.{cls.__qualname__}"


def shape_text(tensor: Any) -> str:
    """Returns ``[4, 16] float32`` for a tensor (``[nested]`` when it has no single shape)."""
    try:
        sizes = ", ".join(str(n) for n in tensor.shape)
    except Exception:  # noqa: BLE001 - a nested tensor has no single shape
        sizes = "nested"
    return f"[{sizes}] {str(tensor.dtype).removeprefix('torch.')}"
