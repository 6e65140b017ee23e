"""Findings and the reports that collect them, shared by every checker."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from auxcheck._core.errors import ContractViolation
from auxcheck._core.escape import one_line, printable
from auxcheck._core.rules import get_rule
from auxcheck._core.text import plural

__all__ = ["Finding", "Report", "describe", "printable"]


_PLAIN = (int, float, complex, bool, type(None))
_ITEMS = 6


def describe(obj: Any, *, limit: int = 80) -> str:
    """Returns a short, never-raising description of ``obj`` for messages.

    Plugin code never runs here: a ``__repr__`` may hang, return a gigabyte, raise
    ``SystemExit`` or print a device tensor (a device sync). Values of plain builtin
    types (numbers, text, short tuples and lists of them) show as their repr; a
    function or class by its qualified name; anything else as ``<module.Type object at
    0x...>``, the type and identity, which is enough to find it.
    """
    text = _safe_text(obj, depth=0)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _safe_text(obj: Any, *, depth: int) -> str:
    kind = type(obj)  # compared by identity: `in` would run a metaclass's __eq__
    if any(kind is k for k in _PLAIN):
        return repr(obj) if kind is not int or abs(obj) < 10**60 else "<a very large int>"
    if kind is str or kind is bytes:
        return repr(obj[:200])  # slice first: the repr of a huge text is huge
    if (kind is tuple or kind is list) and depth < 2:
        items = [_safe_text(x, depth=depth + 1) for x in obj[:_ITEMS]]
        more = ", ..." if len(obj) > _ITEMS else ""
        body = ", ".join(items) + ("," if kind is tuple and len(obj) == 1 else "") + more
        return f"({body})" if kind is tuple else f"[{body}]"
    from auxcheck._core.plugin_calls import type_name

    if issubclass(kind, BaseException) and depth < 2:  # args read past any override
        args = _BASE_ARGS.__get__(obj)
        shown = ", ".join(_safe_text(a, depth=depth + 1) for a in args[:_ITEMS])
        label = type_name(obj).removeprefix("builtins.")
        return f"{label}({shown}{', ...' if len(args) > _ITEMS else ''})"
    name = _own_name(obj)
    if name is not None:
        return name
    return f"<{type_name(obj)} object at {id(obj):#x}>"


_BASE_ARGS: Any = BaseException.__dict__["args"]
"""The ``args`` slot of every exception, read without a subclass's own property."""


def _own_name(obj: Any) -> str | None:
    """Returns ``function mod.f`` or ``class mod.C`` for functions and classes, read without their code."""
    import types

    from auxcheck._core.plugin_calls import attempt

    if issubclass(type(obj), type):  # read the slots: a metaclass may define properties
        got = attempt(lambda: (type.__dict__["__module__"].__get__(obj),
                             type.__dict__["__qualname__"].__get__(obj)))
        label = "class"
    elif type(obj) is types.FunctionType:
        got = attempt(lambda: (types.FunctionType.__dict__["__module__"].__get__(obj),
                             types.FunctionType.__dict__["__qualname__"].__get__(obj)))
        label = "function"
    else:
        return None
    if got.error is not None or not all(type(n) is str for n in got.value):
        return None
    module, qualname = got.value
    return f"<{label} {module}.{qualname}>"


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule violation: its code, the offending object, what was seen and the fix.

    ``message`` reads *what was seen; what was expected*; ``hint`` says how to
    fix it (from the rule table). ``location`` is ``path:line:col`` for source
    findings and ``detail`` holds a short traceback summary when plugin code raised.
    ``heading`` replaces the rule's title where it would not describe what happened
    (a target that could not even be loaded is reported under AUX101). ``seen`` and
    ``expected`` keep the two halves of ``message`` as :meth:`of` received them, so a
    reader never splits the text back (None for a finding built from a message alone).
    """

    code: str
    message: str
    obj: Any = field(default=None, compare=False)
    hint: str = ""
    location: str | None = None
    detail: str | None = None
    heading: str | None = None
    seen: str | None = field(default=None, compare=False, repr=False)
    expected: str | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        code: str,
        seen: str,
        expected: str,
        obj: Any = None,
        *,
        location: str | None = None,
        detail: str | None = None,
        heading: str | None = None,
    ) -> Finding:
        """Returns a finding for rule ``code`` with the hint taken from the rule table."""
        rule = get_rule(code)
        return cls(code, f"{seen}; {expected}", obj, rule.hint, location, detail, heading,
                   seen, expected)

    @property
    def summary(self) -> str:
        """Returns what was seen (the whole message when the finding has no halves)."""
        return self.message if self.seen is None else self.seen

    @property
    def title(self) -> str:
        """Returns the finding's heading when it has one, else its rule's title."""
        return self.heading or get_rule(self.code).title

    @property
    def is_note(self) -> bool:
        """Returns True when the finding's rule is a note: reported, never a failure."""
        return get_rule(self.code).severity == "note"

    def to_text(self) -> str:
        """Returns the finding as one line (plus the detail, indented, if any), every
        character printable (see :func:`printable`): a newline in the location, the
        message or the hint shows as ``\\n``, so no text can start a line of its own."""
        where = f"{self.location}: " if self.location else ""
        text = one_line(f"{where}{self.code} {self.message}; fix: {self.hint}")
        if self.detail:
            text += "\n" + "\n".join("    " + printable(line) for line in self.detail.split("\n"))
        return text

    def to_dict(self) -> dict[str, Any]:
        """Returns the finding as JSON-ready data (the object as a short repr)."""
        return {
            "code": self.code,
            "title": self.title,
            "message": self.message,
            "hint": self.hint,
            "object": None if self.obj is None else describe(self.obj),
            "location": self.location,
            "detail": self.detail,
        }


@dataclass(slots=True)
class Report:
    """Every finding of one check, in the order found; falsy when clean.

    Findings whose rule is a note (AUX106) go to ``notes``: they are shown, never counted
    as failures. Iterating, ``len`` and truth look at ``findings`` only.
    """

    subject: str
    findings: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def __bool__(self) -> bool:
        return bool(self.findings)

    @property
    def ok(self) -> bool:
        """Returns True when the report holds no finding."""
        return not self.findings

    @property
    def codes(self) -> list[str]:
        """Returns the codes of the findings, in order, without repeats."""
        return list(dict.fromkeys(f.code for f in self.findings))

    def add(self, finding: Finding) -> None:
        """Appends one finding (to ``notes`` when its rule is a note)."""
        (self.notes if finding.is_note else self.findings).append(finding)

    def extend(self, findings: Iterable[Finding]) -> None:
        """Appends every finding of ``findings`` (a report, its notes included, or any iterable)."""
        if isinstance(findings, Report):
            self.notes.extend(findings.notes)
        for finding in findings:
            self.add(finding)

    def without(self, codes: Iterable[str]) -> Report:
        """Returns a copy of this report without the findings whose code is in ``codes``."""
        drop = frozenset(codes)
        return Report(self.subject, [f for f in self.findings if f.code not in drop],
                      [f for f in self.notes if f.code not in drop])

    def to_text(self) -> str:
        """Returns the report as text: a heading line, then one line per finding and note."""
        subject = one_line(self.subject)
        heading = (f"{subject}: {plural(len(self.findings), 'finding')}" if self.findings
                   else f"{subject}: ok")
        if self.notes:
            heading += f" ({plural(len(self.notes), 'note')})"
        lines = [heading]
        lines += ["  " + f.to_text().replace("\n", "\n  ") for f in self.findings]
        lines += ["  note: " + f.to_text().replace("\n", "\n  ") for f in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Returns the report as JSON-ready data."""
        return {"subject": self.subject, "ok": self.ok,
                "findings": [f.to_dict() for f in self.findings],
                "notes": [f.to_dict() for f in self.notes]}

    def to_json(self, *, indent: int | None = 2) -> str:
        """Returns the report as a JSON document."""
        return json.dumps(self.to_dict(), indent=indent)

    def raise_for_findings(self) -> None:
        """Raises ContractViolation carrying this report when it holds any finding."""
        if self.findings:
            raise ContractViolation(self)
