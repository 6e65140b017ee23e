"""`auxcheck check`: findings travel as objects and as the results file's fields, never parsed
back from their text (auxcheck/_check/, auxcheck/_suite/result_file.py)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from helpers.plugin_sources import CLEAN_OUTPUT

from auxcheck._check.findings import Causes, StageFinding, refer_release
from auxcheck._core.errors import ResultsFileError
from auxcheck._releases.release_check import ReleaseResult
from auxcheck._releases.stage import ReleaseStage
from auxcheck._suite.result_file import (
    RESULTS_VERSION,
    ItemResult,
    ResultFinding,
    ResultsFile,
    read_results,
)
from auxcheck.cli.check import main
from auxcheck.report import Finding

OLD_MODULE = "sglang.srt.sampling.sampling_observer"
"""The module CommittedTokens moved out of: an import of it from there is AUX501."""
OLD_IMPORT = f"from {OLD_MODULE} import CommittedTokens"
CAUSES = Causes([StageFinding("imports", "AUX501", "CommittedTokens imported from ...",
                              "plug/x.py", 3, 1)])
"""The imports stage's one finding: an old import of CommittedTokens at plug/x.py:3."""


def aux503(message: str, subject: object) -> Finding:
    """Returns a release's AUX503 at plug/x.py:3 with ``message`` about ``subject``."""
    return Finding("AUX503", message, subject, "fix it", "plug/x.py:3:1")


@pytest.mark.parametrize(("finding", "referred"), [
    pytest.param(aux503("`import plug.other` does not resolve", (OLD_MODULE, "CommittedTokens")),
                 True, id="the-old-import-as-its-object-whatever-its-text"),
    pytest.param(aux503(f"`{OLD_IMPORT}` does not resolve", None), False,
                 id="the-old-import-only-quoted-in-its-text"),
    pytest.param(aux503(f"`{OLD_IMPORT}` does not resolve", ("sglang.srt.elsewhere", "Thing")),
                 False, id="another-import-as-its-object-the-old-one-in-its-text"),
    pytest.param(aux503("AUX501 `import sglang.srt.sampling.sampling_observer`", None), False,
                 id="a-rule-code-and-an-import-statement-in-its-text"),
])
def test_a_release_finding_is_referred_by_the_import_it_judged_never_by_its_text(
        tmp_path: Path, finding: Finding, referred: bool) -> None:
    """A release's AUX503 is referred to the imports stage's finding only when the import it
    judged (its object) is the old one; an import statement in its message counts for nothing."""
    stage = ReleaseStage("imports", "fail", 1, (finding,))
    gone: list[StageFinding] = []
    result = refer_release(ReleaseResult("0.5.23", "0.5.23", (stage,)), CAUSES,
                           tmp_path / "plug", gone)
    assert [f.see for f in gone] == (["imports: AUX501 at plug/x.py:3"] if referred else [])
    assert [f.code for s in result.stages for f in s.findings] == ([] if referred else ["AUX503"])


def test_a_results_file_round_trips_every_field_through_its_schema() -> None:
    """What the writer records is what the reader gets back: codes, locations, messages and
    subjects as fields, however much their text looks like another rule or an import."""
    found = ResultFinding("AUX104", f"AUX501 seen: `{OLD_IMPORT}`; expected one copy",
                          "plug/x.py:3:1", "<plug.Output object at 0x1>")
    items = (ItemResult("conftest.py::auxcheck::AUX104-single-copy", "failed", "AUX999 text",
                        "output", ("AUX104",), "conftest.py", (found,)),
             ItemResult("conftest.py::auxcheck::imports", "passed", kind="imports",
                        codes=("AUX501", "AUX502", "AUX504")))
    text = ResultsFile(items).to_json()
    assert json.loads(text)["version"] == RESULTS_VERSION
    assert read_results(text).items == items


@pytest.mark.parametrize("text", [
    pytest.param('{"items": []}', id="no-version-the-old-schema"),
    pytest.param(f'{{"version": {RESULTS_VERSION + 1}, "items": []}}', id="a-newer-version"),
    pytest.param(f'{{"version": {RESULTS_VERSION}, "items": [{{"nodeid": "x"}}]}}',
                 id="an-item-without-its-fields"),
    pytest.param(f'{{"version": {RESULTS_VERSION}, "items": [{{"nodeid": "x", "outcome": '
                 '"failed", "message": "", "kind": "output", "codes": [], "path": null, '
                 '"findings": [["AUX104", null, "text"]]}]}', id="findings-as-lists"),
    pytest.param("{", id="not-json"),
])
def test_a_results_file_of_another_schema_is_refused_not_guessed(text: str) -> None:
    """A results file of another version or shape is an error naming what is wrong."""
    with pytest.raises(ResultsFileError):
        read_results(text)


RAISING_HOOK = "import pytest\nimport torch\n\n\n" + CLEAN_OUTPUT + textwrap.dedent(f"""

    @pytest.fixture
    def auxcheck_device_output():
        return Clean()


    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(item):
        pytest.fail("AUX501 seen: `{OLD_IMPORT}`", pytrace=False)
""")
"""A conftest whose hook makes every item fail with text naming another rule and an import."""


@pytest.mark.slow
def test_an_item_failing_with_text_that_names_another_rule_keeps_its_own_rule(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A contract item that fails without a ContractViolation (a conftest hook failed it, its
    text naming AUX501 and an old import) is a finding of the item's own rule, not AUX501."""
    (tmp_path / "conftest.py").write_text(RAISING_HOOK)
    status = main(["--format", "json", "-q", str(tmp_path), "--skip", "mypy", "--",
                   "-p", "no:randomly", "-k", "AUX104-single-copy"])
    document = json.loads(capsys.readouterr().out)
    contract = {s["stage"]: s for s in document["stages"]}["contract"]
    assert (status, contract["result"]) == (1, "fail"), contract["summary"]
    assert {f["code"] for f in contract["findings"]} == {"AUX104"}
    assert all("AUX501 seen" in f["message"] for f in contract["findings"])
