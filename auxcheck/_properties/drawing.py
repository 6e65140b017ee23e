"""Drawing from a user's Hypothesis strategy where Hypothesis never runs the user's code.

Values are held in :class:`Drawn`; what drawing raised is :class:`DrawFailed`; Hypothesis's own
exceptions are told apart from the strategy's.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from auxcheck._core.errors import DrawFailed
from auxcheck._core.plugin_calls import announce, attempt, summarize, type_name
from auxcheck._core.report import Finding, Report, describe

__all__ = [
    "Drawn",
    "hypothesis_control",
    "hypothesis_own",
    "user_outputs",
]


class Drawn:
    """One value drawn from a user's strategy, never shown by its own repr.

    Hypothesis prints a falsifying example with ``repr`` (or ``_repr_pretty_``), and
    its call-style printing runs the repr too: this holder is what it prints, as the
    call Hypothesis recorded building the value (``Out(7)``) when every part of it is
    a plain value, else by type and identity. A user's ``__repr__`` that raises
    ``SystemExit``, hangs or prints a device tensor never runs.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return describe(self.value)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        built = attempt(_construction, self.value, printer.known_object_printers, 0)
        printer.text(built.value if type(built.value) is str else repr(self))


_PLAIN = (int, float, complex, bool, str, bytes, type(None))
_MAX_CALL_DEPTH = 4


def _construction(value: Any, known: Any, depth: int) -> str | None:
    """Returns the call Hypothesis recorded building ``value``, when all of it is plain values.

    An adapter over Hypothesis's private record of calls (``known_object_printers``,
    filled by ``builds`` and ``map``: a printer function keeping the function in its
    ``_func`` default and the arguments in its closure), checked on Hypothesis 6.170;
    anything unexpected gives None, and the holder is shown by type instead.
    """
    if type(value) in _PLAIN:
        return describe(value, limit=60)
    printers = known.get(_id_key(value)) if depth < _MAX_CALL_DEPTH else None
    if not printers:
        return None
    printer = printers[0]
    cells = dict(zip(printer.__code__.co_freevars,
                     (cell.cell_contents for cell in printer.__closure__ or ())))
    name = _callable_text((printer.__kwdefaults__ or {}).get("_func"))
    args: Any = cells.get("args")
    kwargs: Any = cells.get("kwargs")
    if name is None or type(args) not in (list, tuple) or type(kwargs) is not dict:
        return None
    shown = [_construction(a, known, depth + 1) for a in args]
    shown += [None if type(k) is not str else _keyword(k, _construction(v, known, depth + 1))
              for k, v in kwargs.items()]
    texts = [text for text in shown if text is not None]
    return f"{name}({', '.join(texts)})" if len(texts) == len(shown) else None


def _keyword(name: str, text: str | None) -> str | None:
    return None if text is None else f"{name}={text}"


def _id_key(value: Any) -> Any:
    from hypothesis.vendor.pretty import IDKey

    return IDKey(value)


def _callable_text(func: Any) -> str | None:
    """Returns how a function or plain class reads in a call; None for anything else."""
    import types

    if type(func) is types.FunctionType:
        from hypothesis.internal.reflection import get_pretty_function_description

        text = get_pretty_function_description(func)
        return f"({text})" if text.startswith("lambda") else text
    if type(func) is type:  # a class with no metaclass of its own: its name is a slot
        return type.__dict__["__name__"].__get__(func)  # type: ignore[no-any-return]
    return None


def user_outputs(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Drawn]:
    """Returns a strategy which generates the values of a user's ``strategy``, each in a Drawn.

    The one way auxcheck draws from a user's strategy. Hypothesis never holds it where
    it computes a repr (the repr of ``st.just(obj)`` runs ``obj.__repr__``; a strategy
    passed as an argument is shown in the repr of every strategy built on it) or a
    validation (an ``st.deferred`` that raises): it is drawn inside a composite that
    takes no argument, under the guard. What drawing raises (``SystemExit`` and
    Hypothesis's own errors about the strategy included) is :class:`DrawFailed` with
    an AUX103 finding, a None value one with AUX101; only Hypothesis's control flow (a
    rejected filter or assume, an overrun) reaches Hypothesis as itself.
    """
    @st.composite
    def your_device_outputs(draw: st.DrawFn) -> Drawn:
        announce("AUX103", "drawing a device output from the fixture's strategy")
        drawn = attempt(draw, strategy)
        error = drawn.error
        if error is not None and hypothesis_control(error):
            raise error
        if error is not None:
            raise DrawFailed(Report("AUX103 drawing a device output", [Finding.of(
                "AUX103", f"drawing a device output from the strategy raised "
                f"{type_name(error).rpartition('.')[2]}", "expected the strategy to build "
                "device outputs (its constructors and map functions must not raise)", None,
                detail=summarize(error))])) from None
        if drawn.value is None:
            raise DrawFailed(Report("AUX101 drawing a device output", [Finding.of(
                "AUX101", "the strategy drew None", "expected it to draw device outputs, "
                "each with a callable copy_to_host", None)]))
        return Drawn(drawn.value)

    return your_device_outputs()


_CONTROL_NAMES = ("StopTest", "UnsatisfiedAssumption", "Frozen", "BackendCannotProceed", "Flaky")


def hypothesis_control(error: BaseException) -> bool:
    """Returns True for Hypothesis's own control flow (an assume, an overrun, a replay problem).

    It must reach Hypothesis as itself, never become a finding. Anything else raised
    while drawing, a ``hypothesis.errors.InvalidArgument`` about a user's strategy
    included, is the strategy's fault.
    """
    from hypothesis import errors

    kinds = tuple(k for k in (getattr(errors, n, None) for n in _CONTROL_NAMES)
                  if isinstance(k, type))
    return issubclass(type(error), kinds)


def hypothesis_own(error: BaseException) -> bool:
    """Returns True for any exception type Hypothesis defines (its usage errors included)."""
    module = type.__dict__["__module__"].__get__(type(error))
    return type(module) is str and (module == "hypothesis" or module.startswith("hypothesis."))
