"""Calling plugin code safely: guarded calls and attribute lookups, and the names of what they met.

Every check that runs a plugin's code goes through :func:`attempt` (or :func:`lookup`), so
whatever plugin code raises (``SystemExit``, ``GeneratorExit``, ``MemoryError`` included)
becomes an outcome (later a finding), never a crash or the checker's exit status. Only
KeyboardInterrupt passes through as itself. pytest's ``Failed`` raised inside plugin code
(pytest-timeout's signal method ends a hanging item that way) becomes
:class:`Interrupted`, which every attempt and every check lets through, Hypothesis
included, up to the check's top, where it is one finding of the rule whose call was
running. Importing this module does not import torch.
"""

from __future__ import annotations

import inspect
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from auxcheck._core.errors import Interrupted

__all__ = [
    "MISSING",
    "Interrupted",
    "Outcome",
    "announce",
    "arity_problem",
    "attempt",
    "kind_name",
    "lookup",
    "passes_through",
    "phase_code",
    "plain_torch",
    "set_phase_listener",
    "shape_text",
    "signature_text",
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
_phase_what: tuple[str, tuple[Any, ...]] = ("plugin code", ())


def announce(code: str, what: str, *subjects: Any) -> None:
    """Tells the phase listener, if any, that plugin code ``what`` runs next under rule ``code``.

    ``what`` is a ``str.format`` template filled with the type names of ``subjects``
    only when it is shown (a listener, an :class:`Interrupted`), so the common case
    costs two stores.
    """
    global _phase, _phase_what
    _phase, _phase_what = code, (what, subjects)
    if _listener is not None:
        _listener(code, _phase_text())


def _phase_text() -> str:
    what, subjects = _phase_what
    try:
        return what.format(*(s if type(s) is str else type_name(s) for s in subjects))
    except (IndexError, KeyError, ValueError):  # a template without its subjects
        return what


def phase_code(default: str) -> str:
    """Returns the rule of the plugin code announced last (``default`` when none), and forgets it."""
    global _phase
    code, _phase = _phase or default, ""
    return code


def passes_through(exc: BaseException) -> bool:
    """Returns True for what an attempt must re-raise: Ctrl-C, pytest's ``Failed``, Interrupted.

    pytest is never imported here: its outcome types are looked up only when loaded.
    """
    if issubclass(type(exc), (KeyboardInterrupt, Interrupted)):
        return True
    return _timed_out(exc)


def _timed_out(exc: BaseException) -> bool:
    """Returns True for pytest's ``Failed`` (not an xfail): pytest stopping the running code.

    ``Failed`` is what pytest-timeout's signal method raises inside the running code. A
    skip, an xfail or a ``pytest.exit`` raised inside plugin code is the plugin's own
    doing (``pytest.importorskip`` in ``copy_to_host``, say): a finding like any error,
    never an item skipped or a run ended with status 0.
    """
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


def attempt(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Outcome:
    """Calls plugin code; whatever it raises becomes an outcome.

    ``sys.exit()`` in plugin code is a plugin bug, never the checker's exit status.
    KeyboardInterrupt (and an Interrupted from an attempt inside) propagates; pytest's
    ``Failed`` propagates as :class:`Interrupted` (see its docstring). torch's global
    state the call changed
    (default device and dtype, a ``with torch.device(...)`` or a torch function or
    dispatch mode entered and never left) is put back, so the checker's own tensors
    stay where it makes them and no mode leaks into later checks.
    """
    before = _torch_state()
    try:
        return Outcome(func(*args, **kwargs))
    except BaseException as exc:  # everything plugin code raises is a finding
        if not passes_through(exc):
            return Outcome(error=exc)
        if not _timed_out(exc):
            raise
        raise Interrupted(exc, _phase or "AUX103", _phase_text()) from None
    finally:
        if before is not None and not before.same_as(_torch_state()):
            _restore_torch_state(before)


@dataclass(frozen=True, slots=True, eq=False)
class _TorchState:
    """torch's global state plugin code can leave changed (see :func:`_torch_state`)."""

    functions: tuple[Any, ...]
    dispatch: tuple[Any, ...]
    current_device: Any
    device_context: Any
    dtype: Any

    def same_as(self, other: _TorchState | None) -> bool:
        """Returns True when ``other`` holds the very same objects: no ``__eq__`` runs."""
        # Checked around every plugin call: plain comparisons, no generator.
        return (other is not None and self.current_device is other.current_device
                and self.device_context is other.device_context and self.dtype is other.dtype
                and _identical(self.functions, other.functions)
                and _identical(self.dispatch, other.dispatch))


def _identical(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and (not a or all(x is y for x, y in zip(a, b)))


def _torch_state() -> _TorchState | None:
    """Returns torch's global state plugin code can leave changed; None before torch is imported.

    An adapter over torch's private mode stacks, checked on torch 2.13: the function
    mode stack (``set_default_device`` and ``with torch.device`` push a DeviceContext
    there), the dispatch mode stack (FakeTensorMode included), the device a
    DeviceContext entered last, the global device context, and the default dtype.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    device = sys.modules.get("torch.utils._device")  # imported with the first DeviceContext
    try:
        c = torch._C
        functions, dispatch = c._len_torch_function_stack(), c._len_torch_dispatch_stack()
        return _TorchState(  # both stacks are empty nearly always: no generator then
            tuple(torch.overrides._get_function_stack_at(i) for i in range(functions))
            if functions else (),
            tuple(c._get_dispatch_stack_at(i) for i in range(dispatch)) if dispatch else (),
            None if device is None else device.CURRENT_DEVICE,
            getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None),
            torch.get_default_dtype())
    except Exception:  # noqa: BLE001 - another torch: nothing it can restore
        return None


@contextmanager
def plain_torch() -> Iterator[None]:
    """Runs the block on torch's defaults: the CPU as default device, no mode on either stack.

    The checker's own tensors (batches, graph outputs, copies) must be plain CPU
    tensors whatever a fixture or conftest set globally (``torch.set_default_device
    ("meta")``, a mode left entered); what was set is put back afterwards. The
    default dtype stays: tensors of any dtype work.
    """
    before = _torch_state()
    plain = None if before is None else _TorchState((), (), None, None, before.dtype)
    if before is None or plain is None or before.same_as(plain):
        yield
        return
    _restore_torch_state(plain)
    try:
        yield
    finally:
        _restore_torch_state(before)


def _restore_torch_state(before: _TorchState) -> None:
    """Puts back what :func:`_torch_state` read: both mode stacks, device globals, dtype."""
    import torch
    import torch.utils._device as device
    from torch.utils._python_dispatch import _push_mode

    c = torch._C
    while c._len_torch_function_stack():
        c._pop_torch_function_stack()
    for mode in before.functions:
        c._push_on_torch_function_stack(mode)
    while c._len_torch_dispatch_stack():
        c._pop_torch_dispatch_stack(None)
    for mode in before.dispatch:
        _push_mode(mode)
    device.CURRENT_DEVICE = before.current_device
    torch._GLOBAL_DEVICE_CONTEXT.device_context = before.device_context
    torch.set_default_dtype(before.dtype)


_OWN_FILES = frozenset({__file__})
_RUNNER_FILES = ("/_pytest/", "/pytest_timeout.py", "/hypothesis/")
"""Frames of the test runner: where pytest-timeout raised, not what was running."""


def summarize(exc: BaseException, *, frames: int = 3) -> str:
    """Returns the last few frames outside auxcheck's harness as ``file:line in func``, and the error."""
    stack = [f for f in traceback.extract_tb(exc.__traceback__)
             if f.filename not in _OWN_FILES and "/auxcheck/_" not in f.filename
             and not any(part in f.filename for part in _RUNNER_FILES)]
    stack = stack[-frames:]
    lines = [f"{f.filename}:{f.lineno} in {f.name}" for f in stack]
    outcome = attempt(str, exc)
    text = outcome.value if type(outcome.value) is str else "<str() of the exception raised>"
    lines.append(f"{kind_name(exc)}: {text}"[:300])
    return "\n".join(lines)


def lookup(obj: Any, name: str) -> Outcome:
    """Returns ``getattr(obj, name)`` as an outcome; a missing attribute gives MISSING."""
    found = attempt(getattr, obj, name)
    if type(found.error) is AttributeError:  # a subclass of it is the plugin's own error
        return Outcome(MISSING)
    return found


def arity_problem(func: Any, params: Sequence[str], keywords: Sequence[str] = ()) -> str | None:
    """Returns why ``func(*params, **keywords)`` cannot be called, or None when it can.

    Callables without an introspectable signature (some builtins) are given the
    benefit of the doubt.
    """
    found = attempt(inspect.signature, func)  # a raising __signature__, a __wrapped__ loop
    if found.error is not None or not isinstance(found.value, inspect.Signature):
        return None
    signature: inspect.Signature = found.value
    bound = attempt(signature.bind, *[object() for _ in params], **{k: object() for k in keywords})
    if not isinstance(bound.error, TypeError):
        return None
    wanted = f"{len(params)} positional argument(s)"
    if keywords:
        wanted += f" and the keyword(s) {', '.join(keywords)}"
    return f"its signature {signature_text(signature)} does not take {wanted} ({bound.error})"


def signature_text(signature: inspect.Signature) -> str:
    """Returns ``(self, a, b=..., *args)``: names and kinds only, never a default's repr.

    Positional-only parameters are written like the others: the wrapper of a hooked
    method passes ``self`` so, and a hook declares it plainly.
    """
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


def type_name(obj: Any) -> str:
    """Returns ``module.QualName`` of ``obj``'s type: cheap, unlike a repr of its tensors."""
    cls = type(obj)
    names = attempt(lambda: (type.__dict__["__module__"].__get__(cls),
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
    shape = attempt(lambda: ", ".join(str(int(n)) for n in tensor.shape))
    sizes = shape.value if shape.error is None else "nested"  # no single shape
    dtype = attempt(lambda: str(tensor.dtype).removeprefix("torch."))
    return f"[{sizes}] {dtype.value if dtype.error is None else 'unknown dtype'}"
