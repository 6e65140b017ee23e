"""``migrate --compat`` over a corpus of real files with old-layout imports injected.

A few hundred files of SGLang 0.5.19's own source (read from its wheel in the test cache)
each get one form of :data:`helpers.compat_corpus.FORMS` injected: at the top, after other
code, inside a function, aliased, dotted, with the file's own ``TYPE_CHECKING`` bound late,
in a ``try`` or in the function, with a statement-level ``# noqa``, one alias bound at
module level and again in a function. Every ``--compat``
output must compile, add no ruff F401, F811, F821, F823 or PLR0402 (``import a.b as b``) the
input did not have (ruff runs
once per chunk of files), and import on both layouts: its import-bearing statements, run in
a fake SGLang of each layout, bind every name the injected uses read.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from helpers.compat_corpus import (
    FORMS,
    LAYOUTS,
    SCOPED_ALIAS,
    USES,
    CorpusForm,
    LayoutRun,
    bound_uses,
    inject,
)
from helpers.migration import MOVES
from helpers.paths import RUFF, TORCH_STANDIN
from helpers.plugin_sources import NEW, OLD
from helpers.pyright import run_pyright
from helpers.releases import REAL_CACHE, real_tree

from auxcheck.migrate.transform import migrate_source

USES_LINE = f"{USES} = (CommittedTokens,)\n"
CHUNKS = 4
CORPUS_SIZE = 320
RUFF_SELECT = "F401,F811,F821,F823,PLR0402"
_NAMED = re.compile(r"`([^`]*)`")
_QUOTED = re.compile(r'"([^"]*)"')


@cache
def corpus() -> tuple[tuple[str, str, CorpusForm], ...]:
    """Returns (file, injected text, form) for each file of the corpus, the forms in turn."""
    root = real_tree("0.5.19")
    files = sorted(path for path in (root / "sglang").rglob("*.py")
                   if 300 < path.stat().st_size < 12_000)
    files = [path for path in files[::max(1, len(files) // CORPUS_SIZE)]
             if "class CommittedTokens" not in path.read_text(encoding="utf-8")]
    chosen = []
    for index, path in enumerate(files[:CORPUS_SIZE]):
        text = path.read_text(encoding="utf-8")
        for turn in range(len(FORMS)):  # the next form when the file has no place for one
            form = FORMS[(index + turn) % len(FORMS)]
            injected = inject(text, form)
            if injected is not None:
                chosen.append((str(path.relative_to(root)), injected, form))
                break
    return tuple(chosen)


def _expected(form: CorpusForm) -> tuple[tuple[str | None, ...], ...]:
    module = tuple(cls for piece in form.pieces if piece.place != "function"
                   for _, cls in piece.uses)
    function = tuple(cls for piece in form.pieces if piece.place == "function"
                     for _, cls in piece.uses)
    return tuple(uses for uses in (module, function) if uses)


def _ruff(folder: Path) -> dict[str, Counter[tuple[str, str]]]:
    """Returns {file stem: (code, name) counts} for every file under ``folder``, one run."""
    completed = subprocess.run(
        [str(RUFF), "check", "--isolated", "--no-cache", "--select", RUFF_SELECT,
         "--output-format", "json", "--exit-zero", "."],
        cwd=folder, capture_output=True, text=True, check=True)
    found: dict[str, Counter[tuple[str, str]]] = {}
    for finding in json.loads(completed.stdout):
        named = _NAMED.search(finding["message"])
        name = named.group(1).rpartition(".")[2] if named else finding["message"]
        key = str(Path(finding["filename"]).relative_to(folder).with_suffix(""))
        found.setdefault(key, Counter())[(finding["code"], name)] += 1
    return found


def _pyright(folder: Path) -> dict[str, Counter[tuple[str, str]]]:
    """Returns {file stem: (rule, name) counts} of pyright's diagnostics for every file under
    ``folder``, one run in standard mode (SGLang's own imports unresolved alike in and out)."""
    files = sorted(folder.rglob("*.py"))
    run = run_pyright(files, root=folder / "pyright", settings={"stubPath": str(TORCH_STANDIN)})
    found: dict[str, Counter[tuple[str, str]]] = {}
    for item in run.diagnostics:
        named = _QUOTED.search(item.message)
        key = str(item.path.relative_to(folder.resolve()).with_suffix(""))
        found.setdefault(key, Counter())[(item.rule, named.group(1) if named else "")] += 1
    return found


def test_the_corpus_holds_a_few_hundred_files_and_every_form() -> None:
    """The corpus is a few hundred real files, and each form is injected into some."""
    chosen = corpus()
    assert len(chosen) >= 300
    assert {form.id for _, _, form in chosen} == {form.id for form in FORMS}


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_compat_output_imports_on_both_layouts_and_adds_no_lint(
        chunk: int, tmp_path: Path) -> None:
    """Each --compat output compiles, adds no ruff F401/F811/F821/F823/PLR0402 and no pyright
    diagnostic (standard mode: no name possibly unbound, no attribute the stubs lack), and
    binds every moved name on the old and the new layout."""
    if not RUFF.exists():
        pytest.skip("ruff is not installed next to the interpreter")
    problems: list[str] = []
    written: dict[str, tuple[str, str, CorpusForm]] = {}
    for index, (name, injected, form) in enumerate(corpus()[chunk::CHUNKS]):
        result = migrate_source(injected, moves=MOVES, compat=True, path=name)
        if result.status != "changed":
            problems.append(f"{name} [{form.id}]: {result.status} {result.reason}")
            continue
        compile(result.text, name, "exec", dont_inherit=True)
        for kind, text in (("in", injected), ("out", result.text)):
            (tmp_path / kind).mkdir(exist_ok=True)
            (tmp_path / kind / f"{index}.py").write_text(text, encoding="utf-8")
        written[str(index)] = (name, result.text, form)
    lint = _ruff(tmp_path)
    typed = _pyright(tmp_path)
    for stem, (name, text, form) in written.items():
        added = lint.get(f"out/{stem}", Counter()) - lint.get(f"in/{stem}", Counter())
        if added:
            problems.append(f"{name} [{form.id}]: ruff adds {sorted(added)}")
        added = typed.get(f"out/{stem}", Counter()) - typed.get(f"in/{stem}", Counter())
        if added:
            problems.append(f"{name} [{form.id}]: pyright adds {sorted(added)}")
        function = any(piece.place == "function" for piece in form.pieces)
        for layout in LAYOUTS:
            run = bound_uses(text, layout, function=function)
            if run.errors or run.uses != _expected(form):
                problems.append(f"{name} [{form.id}] on the {layout} layout: "
                                f"{run.errors or run.uses}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("form", FORMS, ids=[form.id for form in FORMS])
def test_the_fake_layouts_tell_the_layouts_apart(form: CorpusForm) -> None:
    """An injected input binds its names on the old layout and fails on the new one (the
    check is not vacuous); a plain rewrite binds them on the new one only."""
    text = next(injected for _, injected, chosen in corpus() if chosen is form)
    function = any(piece.place == "function" for piece in form.pieces)
    assert bound_uses(text, "old", function=function).uses == _expected(form)
    moved = OLD in text and any(piece.uses and any(
        cls not in (None, "SamplingObserver") for _, cls in piece.uses) for piece in form.pieces)
    if moved:
        assert bound_uses(text, "new", function=function).errors != ()
        plain = migrate_source(text, moves=MOVES).text
        package, _, last = NEW.rpartition(".")
        assert NEW in plain or f"from {package} import {last}" in plain
        assert bound_uses(plain, "new", function=function).uses == _expected(form)


LATE_GUARDS = {
    "late-from-typing": "from typing import TYPE_CHECKING  # noqa: E402\n",
    "late-import-typing": "import typing  # noqa: E402\n",
    "late-aliased-typing": "import typing as t  # noqa: E402\n",
    "late-from-typing-in-try": "try:\n    from typing import TYPE_CHECKING\nexcept ImportError:\n"
                               "    TYPE_CHECKING = False\n",
}


@pytest.mark.parametrize("late", LATE_GUARDS.values(), ids=LATE_GUARDS.keys())
def test_compat_output_imports_on_the_old_layout_when_the_files_type_checking_comes_late(
        late: str) -> None:
    """The issue's minimal file: ``TYPE_CHECKING`` bound after the import with code
    between, so the fallback cannot read it; the rewrite imports what it needs itself."""
    text = f"from {OLD} import CommittedTokens\nVERSION = 1\n{late}{USES_LINE}"
    result = migrate_source(text, moves=MOVES, compat=True)
    assert result.status == "changed"
    for layout in LAYOUTS:
        assert bound_uses(result.text, layout, function=False) == LayoutRun(
            (("CommittedTokens",),), ())


@pytest.mark.parametrize("compat", [False, True], ids=["plain", "compat"])
def test_migrate_adds_no_import_to_a_function_whose_own_alias_uses_no_moved_name(
        compat: bool, tmp_path: Path) -> None:
    """An alias bound at module level (moved names) and again in a function (a staying
    name): the function gains no import it does not use, and the module's alias goes."""
    root = real_tree("0.5.19")
    text = next(injected for name, _, form in corpus() if any(
        piece.place == "function" for piece in form.pieces)
        and (injected := inject((root / name).read_text(encoding="utf-8"), SCOPED_ALIAS)))
    result = migrate_source(text, moves=MOVES, compat=compat)
    assert result.status == "changed"
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "in" / "0.py").write_text(text, encoding="utf-8")
    (tmp_path / "out" / "0.py").write_text(result.text, encoding="utf-8")
    lint = _ruff(tmp_path)
    assert lint.get("out/0", Counter()) - lint.get("in/0", Counter()) == Counter()


SPLIT_NOQA = {
    "wrapped": f"from {OLD} import (  # noqa: F401\n    CommittedTokens,\n    SamplingObserver,\n)\n",
    "trailing": f"from {OLD} import DeviceAuxiliaryOutput, SamplingObserver  # noqa: F401\n",
    "all-moving": f"from {OLD} import (  # noqa: F401\n    CommittedTokens,\n"
                  "    DeviceAuxiliaryOutput,\n)\n",
    "merging-into-the-new-module": f"from {NEW} import HostAuxiliaryOutput\n"
                                   f"from {OLD} import CommittedTokens  # noqa: F401\n\n"
                                   "x = HostAuxiliaryOutput\n",
}


@pytest.mark.parametrize("compat", [False, True], ids=["plain", "compat"])
@pytest.mark.parametrize("text", SPLIT_NOQA.values(), ids=SPLIT_NOQA.keys())
def test_a_statement_level_noqa_goes_with_every_statement_a_split_makes(
        text: str, compat: bool, tmp_path: Path) -> None:
    """Names leaving a ``# noqa: F401`` statement keep the noqa in their new statement."""
    result = migrate_source(text, moves=MOVES, compat=compat)
    assert result.status == "changed"
    (tmp_path / "out.py").write_text(result.text, encoding="utf-8")
    assert _ruff(tmp_path) == {}


@pytest.mark.slow
def test_the_noqa_of_sglangs_runner_package_survives_the_moves_to_0_5_23(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SGLang 0.5.19's ``model_executor/runner/__init__.py`` re-exports names under
    ``# noqa: F401``; migrated with ``--sglang 0.5.19:0.5.23`` it gains no F401."""
    from auxcheck.cli import main

    source = real_tree("0.5.19") / "sglang/srt/model_executor/runner/__init__.py"
    for kind in ("in", "out"):
        (tmp_path / kind).mkdir()
        (tmp_path / kind / "runner.py").write_bytes(source.read_bytes())
    code = main(["migrate", "--offline", "--cache", str(REAL_CACHE), "--sglang", "0.5.19:0.5.23",
                 str(tmp_path / "out" / "runner.py")])
    capsys.readouterr()
    assert code == 0
    assert (tmp_path / "out" / "runner.py").read_bytes() != source.read_bytes()
    lint = _ruff(tmp_path)
    assert lint.get("out/runner", Counter()) - lint.get("in/runner", Counter()) == Counter()


def test_compat_drops_an_import_of_the_package_only_dotted_uses_read(tmp_path: Path) -> None:
    """``import sglang`` beside ``import sglang.srt...sampling_observer``: once --compat
    names the module by an alias, nothing reads ``sglang``, so the import goes (no F401);
    a file that still reads ``sglang`` keeps it."""
    uses = f"def f():\n    return {OLD}.CommittedTokens\n"
    text = f"import sglang\nimport {OLD}\n\n\n{uses}"
    kept = f"import sglang\nimport {OLD}\n\nV = sglang.__version__\n\n\n{uses}"
    dropped = migrate_source(text, moves=MOVES, compat=True).text
    assert "import sglang\n" not in dropped
    assert "import sglang\n" in migrate_source(kept, moves=MOVES, compat=True).text
    (tmp_path / "out.py").write_text(dropped, encoding="utf-8")
    assert _ruff(tmp_path) == {}
