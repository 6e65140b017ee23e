"""One cell of the release matrix: a stage's result on one release, and how it is built."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from auxcheck._core.report import Finding

__all__ = ["Judgement", "ReleaseStage", "StageBuilder"]

Verdict = Literal["ok", "fail", "note"]


@dataclass(frozen=True, slots=True)
class Judgement:
    """One thing a stage judged: where, what, the verdict and why."""

    location: str
    subject: str
    verdict: Verdict
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        """Returns the judgement as JSON-ready data."""
        return {"location": self.location, "subject": self.subject, "verdict": self.verdict,
                "detail": self.detail}


@dataclass(frozen=True, slots=True)
class ReleaseStage:
    """One cell of the release matrix: a stage's result on one release."""

    stage: str
    result: str
    checked: int = 0
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    judged: tuple[Judgement, ...] = ()

    @property
    def failed(self) -> bool:
        """Returns True when the stage found a problem."""
        return self.result == "fail"

    def cell(self) -> str:
        """Returns the matrix cell: ``ok (3)``, ``ok (3), 2 not judged``, ``2 not judged``,
        ``FAIL 2 AUX503``, ``-`` when nothing to check.

        Only what was judged is counted ``ok``: a note (auxcheck cannot tell) is "not
        judged", never part of an ``ok``."""
        if self.result == "fail":
            codes: dict[str, int] = {}
            for finding in self.findings:
                codes[finding.code] = codes.get(finding.code, 0) + 1
            return "FAIL " + ", ".join(f"{n} {code}" for code, n in sorted(codes.items()))
        if not self.judged:
            return f"ok ({self.checked})" if self.checked else "-"
        judged = sum(j.verdict == "ok" for j in self.judged)
        unjudged = sum(j.verdict == "note" for j in self.judged)
        parts = ([f"ok ({judged})"] if judged else []) + (
            [f"{unjudged} not judged"] if unjudged else [])
        return ", ".join(parts) or "-"

    def to_dict(self) -> dict[str, Any]:
        """Returns the stage as JSON-ready data, each judgement included."""
        return {"stage": self.stage, "result": self.result, "checked": self.checked,
                "findings": [f.to_dict() for f in self.findings], "notes": list(self.notes),
                "judged": [j.to_dict() for j in self.judged]}


@dataclass(slots=True)
class StageBuilder:
    """Collects a stage's judgements, findings and notes while it runs."""

    name: str
    checked: int = 0
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    judged: list[Judgement] = field(default_factory=list)

    def fail(self, code: str, location: str, seen: str, expected: str, hint: str = "", *,
             obj: Any = None) -> None:
        """Adds a finding of ``code`` at ``location`` (the rule's fix unless ``hint``) about
        ``obj`` (what it judged, e.g. the import, kept as an object for ``auxcheck check``)."""
        finding = Finding.of(code, seen, expected, obj, location=location)
        if hint:
            finding = Finding(code, finding.message, obj, hint, location)
        self.findings.append(finding)

    def judge(self, location: str, subject: str, verdict: Verdict, detail: str = "", *,
              quiet: bool = False) -> None:
        """Records one judgement; a ``note`` verdict's detail is also a note of the stage,
        unless ``quiet`` (the JSON still carries it)."""
        self.judged.append(Judgement(location, subject, verdict, detail))
        if verdict == "note" and not quiet:
            self.notes.append(f"{location}: {detail}")

    def done(self) -> ReleaseStage:
        """Returns the finished stage: ``fail`` when it has a finding."""
        result = "fail" if self.findings else "ok"
        return ReleaseStage(self.name, result, self.checked, tuple(self.findings),
                            tuple(self.notes), tuple(self.judged))
