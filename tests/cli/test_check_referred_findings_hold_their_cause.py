"""`auxcheck check`: a finding referred to another stage's finding holds that finding as its
cause, and every line or document naming the cause is made from the cause's fields, never
from a reference text split back (auxcheck/_check/findings.py, auxcheck/cli/_sarif.py)."""

from __future__ import annotations

from auxcheck._check.findings import Causes, StageFinding, caused_lines

CAUSE = StageFinding("imports", "AUX501", "CommittedTokens imported from ...",
                     "odd: dir/x.py", 3, 1)
"""An old import in a folder whose name holds ``: `` (the reference's own separator)."""
MYPY = StageFinding("mypy", "mypy:attr-defined",
                    'Module "sglang.srt.sampling.sampling_observer" has no attribute '
                    '"CommittedTokens"', "odd: dir/x.py", 3, 5)


def _subjects(finding: StageFinding) -> list[tuple[str, str | None]]:
    return [("sglang.srt.sampling.sampling_observer", "CommittedTokens")]


def test_a_referred_finding_holds_its_cause_itself() -> None:
    """The referred finding's ``cause`` is the imports stage's finding, and ``see`` names it."""
    own, referred = Causes([CAUSE]).refer([MYPY], _subjects)
    assert own == []
    assert [(f.cause, f.see) for f in referred] == [
        (CAUSE, "imports: AUX501 at odd: dir/x.py:3")]


def test_the_not_counted_line_is_made_from_the_cause_s_fields() -> None:
    """One line per cause, counting the findings it caused, whatever its path holds."""
    _, referred = Causes([CAUSE]).refer([MYPY, MYPY], _subjects)
    assert caused_lines(referred, "error") == [
        "2 errors caused by the imports stage's AUX501 at odd: dir/x.py:3 (not counted)"]


def test_the_json_of_a_referred_finding_names_its_cause_as_before() -> None:
    """``see`` in the JSON is the cause's reference; a finding of its own has none."""
    _, [referred] = Causes([CAUSE]).refer([MYPY], _subjects)
    assert referred.to_dict()["see"] == "imports: AUX501 at odd: dir/x.py:3"
    assert "see" not in MYPY.to_dict()
