"""A wheel member Python cannot decode is never read as "ok": ``check --sglang`` names it in a note.

Each wheel is a real zip written in the test's folder, with a ``sglang/srt/latin.py`` member in
latin-1 and no PEP 263 cookie: Python cannot import that module, so auxcheck cannot tell what it
defines, and says so, naming the wheel and the member, instead of passing the plugin's import.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.releases import write_wheel

from auxcheck.cli.check import main as check_main

LATIN = "sglang/srt/latin.py"
WHY = (f"{LATIN} is not text Python can read ('utf-8' codec can't decode byte 0xe9 in position "
       "8: invalid continuation byte); Python cannot import it either, so auxcheck cannot tell "
       "what it defines")


def latin_wheel(folder: Path) -> Path:
    """Returns a wheel of sglang 9.9.1 whose ``sglang/srt/latin.py`` is latin-1 without a cookie."""
    return write_wheel(folder / "sglang-9.9.1-py3-none-any.whl", {
        "sglang/version.py": "__version__ = '9.9.1'\n",
        "sglang/srt/plugin_api.py": "class Hook:\n    pass\n",
        LATIN: "X = 'caf\xe9'\n".encode("latin-1"),
    })


def check_sglang(tmp_path: Path, plugin_source: str, *extra: str) -> tuple[int, str]:
    """Returns ``auxcheck check --sglang``'s exit status and output over the latin-1 wheel."""
    wheel = latin_wheel(tmp_path / "wheels")
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "uses.py").write_text(plugin_source, encoding="utf-8")
    status = check_main([str(tmp_path / "plugin"), "--sglang", "9.9.1", "--wheel", str(wheel),
                         "--offline", "--cache", str(tmp_path / "cache"), "--skip", "contract",
                         "--skip", "mypy", "--skip", "imports", *extra])
    return status, str(wheel)


@pytest.mark.parametrize(("source", "subject"), [
    ("from sglang.srt.latin import X\n", "from sglang.srt.latin import X"),
    ("from sglang.srt import latin\n", "from sglang.srt import latin"),
    ("import sglang.srt.latin\n", "import sglang.srt.latin"),
], ids=["a name from it", "it from its package", "it by its dotted name"])
def test_an_import_from_a_member_python_cannot_decode_is_a_note_naming_it_never_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, subject: str
) -> None:
    """The import is not judged ok: a note names the wheel, the member and why it cannot tell."""
    status, wheel = check_sglang(tmp_path, source)
    out = capsys.readouterr().out
    assert f"  note: uses.py:1:1: `{subject}` is not judged: {wheel}: {WHY}\n" in out
    assert "9.9.1    1 not judged" in out
    assert status == 0  # a note, never a failure: the release may still work for the plugin


def test_the_json_report_holds_the_note_and_the_unjudged_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--format json`` carries the same note, and the import's judgement is a note, not ok."""
    check_sglang(tmp_path, "from sglang.srt.latin import X\n", "--format", "json")
    report = json.loads(capsys.readouterr().out)
    [sglang] = [s for s in report["stages"] if s["stage"] == "sglang"]
    text = json.dumps(sglang)
    assert f"{LATIN} is not text Python can read" in text
    assert '"verdict": "ok"' not in text
