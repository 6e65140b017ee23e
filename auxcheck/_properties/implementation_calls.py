"""Guarded calls into an implementation under test: each failure a finding, never a crash.

The implementation is plugin code: every call into it, and every attribute of what it
returns, goes through :func:`auxcheck._core.plugin_calls.attempt`, and its values are
type-tested by their type's MRO (never ``isinstance``, which reads a ``__class__``
property or runs a metaclass's ``__instancecheck__``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from auxcheck._core.errors import LeafRaised, PluginCallFailed
from auxcheck._core.plugin_calls import MISSING, announce, attempt, kind_name, lookup, summarize
from auxcheck._core.report import Finding, describe
from auxcheck._runtime.recording import Appended, Operand, build_operand

if TYPE_CHECKING:
    from auxcheck._properties.implementations import Implementation

__all__ = [
    "PluginCallFailed",
    "bound_method",
    "build_appended",
    "call_implementation",
    "checked_result",
    "children",
    "class_name",
    "findings_of",
    "is_a",
]

_MAX_CHILDREN = 10_000
"""The most children read from a composite whose ``outputs`` is not a tuple (it may never end)."""


def is_a(obj: Any, cls: Any) -> bool:
    """Returns True when ``cls`` is in the MRO of ``obj``'s type; no plugin code runs.

    ``isinstance`` would read a ``__class__`` property and run a metaclass's
    ``__instancecheck__``, either of which may raise; SGLang's composites are plain
    classes, so the nominal test is the one that matters.
    """
    mro = type.__dict__["__mro__"].__get__(type(obj))
    return any(kind is cls for kind in mro)


def class_name(cls: Any) -> str:
    """Returns a class's own short name, read from its slot (a metaclass property may raise)."""
    if not issubclass(type(cls), type):
        return kind_name(cls)
    got = attempt(type.__dict__["__name__"].__get__, cls)
    return got.value if type(got.value) is str else "<a class whose name cannot be read>"


def call_implementation(code: str, what: str, function: Callable[..., Any], *args: Any) -> Any:
    """Returns ``function(*args)``; raises PluginCallFailed (``code``) if it raised.

    The call runs under the one guard: ``SystemExit``, ``GeneratorExit`` and bare
    ``BaseException`` from the implementation become findings too. Only the error's
    type and a short summary are read, never its repr.
    """
    announce(code, what)
    outcome = attempt(function, *args)
    error = outcome.error
    if error is None:
        return outcome.value
    if type(error) is PluginCallFailed:  # a finding already, from a check inside ``function``
        raise error
    if type(error) is LeafRaised:  # the user's own output broke the contract, not the composite
        broke = (f"has no callable {error.method}" if error.code in ("AUX101", "AUX201")
                 else f"'s {error.method} raised {kind_name(error.error)}")
        raise PluginCallFailed(Finding.of(
            error.code, f"{what}: your output{broke}",
            f"expected {kind_name(error.leaf)}.{error.method} to honour the contract on its "
            "own (see its own items)", error.leaf, detail=summarize(error.error))) from None
    raise PluginCallFailed(Finding.of(code, f"{what} raised {kind_name(error)}",
                                          "expected it to succeed on valid outputs", function,
                                          detail=summarize(error))) from None


def bound_method(code: str, obj: Any, name: str, made_by: str) -> Any:
    """Returns the bound method ``obj.name``; raises PluginCallFailed (``code``) when it is
    not callable.

    ``made_by`` says what produced ``obj``, for the message.
    """
    found = lookup(obj, name)
    if found.error is None and found.value is not MISSING and callable(found.value):
        return found.value
    subject = f"{describe(obj)} ({made_by})"
    seen = (f"looking up `{name}` on {subject} raised {kind_name(found.error)}"
            if found.error is not None else f"{subject} has no `{name}`"
            if found.value is MISSING else f"`{name}` of {subject} is a {kind_name(found.value)}")
    raise PluginCallFailed(Finding.of(code, seen, f"expected a callable {name}", obj,
                                          detail=found.detail))


def build_appended(impl: Implementation, code: str, operands: Sequence[Operand]) -> Any:
    """Returns ``operands`` appended by ``impl``, each result checked (PluginCallFailed if not)."""
    def append(current: Any, output: Any) -> Any:
        result = call_implementation(code, "append_auxiliary_output(current, output)",
                                     impl.append, current, output)
        return checked_result(impl, result, current, output)

    return build_operand(append, Appended(tuple(operands)))


def checked_result(impl: Implementation, result: Any, current: Any, output: Any) -> Any:
    """Returns what ``append(current, output)`` returned; raises PluginCallFailed for a wrong
    result.

    With None on either side the result must be the other operand itself (AUX303),
    wherever the append happens: a broken None case would otherwise show up later as
    a miscounted composite. Otherwise an append returns a device output (a leaf with a
    callable ``copy_to_host``) or the implementation's composite; anything else would
    only crash later, where the composite is copied (AUX301).
    """
    if current is None or output is None:
        if result is not (output if current is None else current):
            raise PluginCallFailed(Finding.of(
                "AUX303", f"append_auxiliary_output({describe(current, limit=40)}, "
                f"{describe(output, limit=40)}) returned {describe(result, limit=40)}",
                "expected the other operand itself (None when both are None)", impl.append))
        return result
    if is_a(result, impl.device_composite):
        return result
    found = lookup(result, "copy_to_host")
    if found.error is None and found.value is not MISSING and callable(found.value):
        return result
    seen = ("" if found.error is None
            else f" (looking up its copy_to_host raised {kind_name(found.error)})")
    raise PluginCallFailed(Finding.of(
        "AUX301", f"append_auxiliary_output({describe(current, limit=40)}, "
        f"{describe(output, limit=40)}) returned a {kind_name(result)}, not a device output{seen}",
        f"expected None, one of the operands, or a {class_name(impl.device_composite)}",
        impl.append, detail=found.detail))


def children(impl: Implementation, output: Any, *, code: str = "AUX301") -> tuple[Any, ...]:
    """Returns the children of ``output`` when it is ``impl``'s composite, else ``(output,)``.

    Raises PluginCallFailed with a finding for ``code`` when reading ``outputs``
    raises, or when it is not a finite iterable (at most 10,000 children are read).
    """
    if not is_a(output, impl.device_composite):
        return (output,)
    name = kind_name(output)
    found = lookup(output, "outputs")
    if type(found.value) is tuple:
        return found.value
    if found.value is MISSING:
        raise PluginCallFailed(Finding.of(
            code, f"the composite {name} has no attribute `outputs`",
            "expected its children as a tuple in `outputs`", output))
    listed = found if found.error is not None else attempt(
        lambda: tuple(itertools.islice(iter(found.value), _MAX_CHILDREN + 1)))
    if listed.error is not None:
        raise PluginCallFailed(Finding.of(
            code, f"reading the children (`outputs`) of the composite {name} raised "
            f"{kind_name(listed.error)}", "expected its children as a tuple in `outputs`",
            output, detail=listed.detail))
    if len(listed.value) > _MAX_CHILDREN:
        raise PluginCallFailed(Finding.of(
            code, f"the composite {name}'s `outputs` yields more than {_MAX_CHILDREN} children",
            "expected a tuple holding one child per output appended", output))
    return listed.value  # type: ignore[no-any-return]


def findings_of(body: Callable[[], Sequence[Finding]]) -> list[Finding]:
    """Returns what ``body`` found, or the one finding of the guarded call that failed in it.

    The findings are returned, not raised inside the ``except``: a failure built from
    them carries no chained plugin exception whose ``__str__`` a reporter would run.
    """
    try:
        return list(body())
    except PluginCallFailed as raised:
        return [raised.finding]
