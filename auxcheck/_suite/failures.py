"""How a failed auxcheck item reads: a violation's findings, or an error and where it arose."""

from __future__ import annotations

from auxcheck._core.errors import ContractViolation
from auxcheck._core.report import Finding, describe

__all__ = ["item_failure_text", "violation_text"]

_FRAMES = 8
"""How many of the innermost frames a failure that is no finding shows."""


def item_failure_text(exc: BaseException, *, rerun: str | None = None) -> str:
    """Returns how an auxcheck item's failure reads: findings, or the error and where it arose.

    A failure that is no finding (pytest-timeout's message, an error inside auxcheck)
    shows its last frames as ``file:line in function`` and its message, read under the
    guard: no frame's locals or arguments, no repr of a plugin's object. ``rerun``, the
    command that re-runs the item, ends it on a line of its own.
    """
    text = _failure_text(exc)
    return text if rerun is None else f"{text}\n\nre-run: {rerun}"


def _failure_text(exc: BaseException) -> str:
    import traceback

    from auxcheck._core.plugin_calls import attempt, kind_name, lookup

    if issubclass(type(exc), ContractViolation):
        return violation_text(exc)  # type: ignore[arg-type]
    text = attempt(str, exc).value
    message = text if type(text) is str else "<str() of the error raised>"
    if lookup(exc, "pytrace").value is False:  # pytest.fail(..., pytrace=False)
        return message
    frames = traceback.extract_tb(exc.__traceback__)[-_FRAMES:]
    lines = [f"{f.filename}:{f.lineno} in {f.name}" for f in frames]
    return "\n".join([*lines, f"{kind_name(exc)}: {message}"])


def violation_text(exc: ContractViolation) -> str:
    """Returns a violation as an assertion message: per finding, code, seen, expected, fix."""
    blocks = [_finding_block(finding) for finding in exc.report]
    notes = [str(note) for note in getattr(exc, "__notes__", ())]
    return "\n\n".join(blocks + (["\n".join(notes)] if notes else []))


def _finding_block(finding: Finding) -> str:
    expected = finding.expected
    split = expected is not None and expected.startswith("expected")
    lines = [f"{finding.code} {finding.title}"]
    if finding.location:
        lines.append(f"  at:       {finding.location}")
    lines.append(f"  seen:     {finding.summary if split else finding.message}")
    if split and expected is not None:
        lines.append(f"  expected:{expected.removeprefix('expected')}")
    lines.append(f"  fix:      {finding.hint}")
    if finding.obj is not None:
        lines.append(f"  object:   {' '.join(describe(finding.obj).split())}")
    if finding.detail:
        lines += ["  " + line for line in finding.detail.splitlines()]
    return "\n".join(lines)
