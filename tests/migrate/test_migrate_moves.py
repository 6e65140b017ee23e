"""Tests for the moves table: the built-in entry, user tables, and whole error messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from auxcheck.cli.migrate import main as migrate_main
from auxcheck.errors import AuxcheckError, MovesTableError
from auxcheck.migrate.moves import Move, MoveTable, builtin_moves, load_moves, parse_moves


def test_builtin_table_holds_the_0_5_20_move() -> None:
    """The packaged TOML file records the three names SGLang 0.5.20 moved."""
    assert builtin_moves().moves == (Move(
        "sglang.srt.sampling.sampling_observer", "sglang.srt.managers.auxiliary_output",
        ("CommittedTokens", "DeviceAuxiliaryOutput", "HostAuxiliaryOutput"), "0.5.20"),)


def test_prefilter_needles_cover_relative_and_module_forms() -> None:
    """The byte needle is the old module's last name, present in every form of use."""
    assert builtin_moves().needles() == (b"sampling_observer",)


def test_pyproject_and_moves_file_entries_are_added(tmp_path: Path) -> None:
    """Moves from [tool.auxcheck.migrate] and from --moves FILE join the built-in ones."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.auxcheck.migrate]\nmove = [{old = "a.b", new = "a.c", '
                         'names = ["X"]}]\n')
    extra = tmp_path / "moves.toml"
    extra.write_text('[[move]]\nold = "p.q"\nnew = "p.r"\nnames = ["Y", "Z"]\nsince = "2"\n')
    table = load_moves(moves_file=extra, pyproject=pyproject)
    assert table.moves[1:] == (Move("a.b", "a.c", ("X",)), Move("p.q", "p.r", ("Y", "Z"), "2"))
    assert table.needles() == (b"b", b"q", b"sampling_observer")


def test_pyproject_without_a_migrate_section_adds_nothing(tmp_path: Path) -> None:
    """A project without [tool.auxcheck.migrate] uses the built-in table alone."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "plugin"\n')
    assert load_moves(pyproject=pyproject) == builtin_moves()


BAD = {
    "not a table": (["a.b"], "moves entry #1: expected a table, got str"),
    "unknown key": ([{"old": "a.b", "new": "a.c", "names": ["X"], "to": 1}],
                    ("moves entry #1 (old = 'a.b'): unknown key(s) to; expected old, new, "
                    "names and optionally since")),
    "missing new": ([{"old": "a.b", "names": ["X"]}],
                    ("moves entry #1 (old = 'a.b'): 'new' must be a dotted module path such "
                    "as 'pkg.module', got None")),
    "bad old path": ([{"old": "a..b", "new": "a.c", "names": ["X"]}],
                     ("moves entry #1 (old = 'a..b'): 'old' must be a dotted module path such "
                     "as 'pkg.module', got 'a..b'")),
    "empty names": ([{"old": "a.b", "new": "a.c", "names": []}],
                    ("moves entry #1 (old = 'a.b'): 'names' must be a non-empty list of "
                    "identifiers, got []")),
    "names not identifiers": ([{"old": "a.b", "new": "a.c", "names": ["X-1"]}],
                              ("moves entry #1 (old = 'a.b'): 'names' must be a non-empty list "
                              "of identifiers, got ['X-1']")),
    "same module": ([{"old": "a.b", "new": "a.b", "names": ["X"]}],
                    "moves entry #1 (old = 'a.b'): 'old' and 'new' are the same module"),
    "since not a string": ([{"old": "a.b", "new": "a.c", "names": ["X"], "since": 1}],
                           "moves entry #1 (old = 'a.b'): 'since' must be a string, got 1"),
    "conflicting targets": ([{"old": "a.b", "new": "a.c", "names": ["X"]},
                             {"old": "a.b", "new": "a.d", "names": ["X"]}],
                            ("moves entry #2 (old = 'a.b'): 'X' is already moved to 'a.c'; "
                            "a name can move to one module")),
    "not a list": ({"old": "a.b"}, "moves entry move: expected a list of tables, got dict"),
    "keyword in new": ([{"old": "sglang.srt.a", "new": "sglang.srt.kw.class", "names": ["X"]}],
                       ("moves entry #1 (old = 'sglang.srt.a'): 'new' must be a dotted module "
                        "path such as 'pkg.module', got 'sglang.srt.kw.class'; 'class' is a "
                        "Python keyword, so no import statement can name the module (rename it, "
                        "or leave this entry out)")),
    "keyword in old": ([{"old": "a.import", "new": "a.c", "names": ["X"]}],
                       ("moves entry #1 (old = 'a.import'): 'old' must be a dotted module path "
                        "such as 'pkg.module', got 'a.import'; 'import' is a Python keyword, so "
                        "no import statement can name the module (rename it, or leave this "
                        "entry out)")),
    "keyword name": ([{"old": "a.b", "new": "a.c", "names": ["X", "None"]}],
                     ("moves entry #1 (old = 'a.b'): 'names' must be a non-empty list of "
                      "identifiers, got ['X', 'None']; 'None' is a Python keyword, which no "
                      "import can name")),
    "cycle": ([{"old": "a.b", "new": "a.c", "names": ["X"]},
               {"old": "a.c", "new": "a.b", "names": ["X"]}],
              ("moves entry #2 (old = 'a.c'): 'X' moves in a cycle: a.b -> a.c -> a.b; each "
               "run would undo the last; remove the move that points back")),
    "longer cycle": ([{"old": "a.b", "new": "a.c", "names": ["X"]},
                      {"old": "a.c", "new": "a.d", "names": ["X"]},
                      {"old": "a.d", "new": "a.b", "names": ["X", "Y"]}],
                     ("moves entry #3 (old = 'a.d'): 'X' moves in a cycle: a.b -> a.c -> a.d -> "
                      "a.b; each run would undo the last; remove the move that points back")),
}


@pytest.mark.parametrize(("entries", "message"), BAD.values(), ids=BAD.keys())
def test_malformed_entries_name_the_file_the_entry_and_the_problem(entries: object,
                                                                   message: str) -> None:
    """Each malformed entry raises MovesTableError with the whole message asserted."""
    with pytest.raises(MovesTableError) as caught:
        parse_moves(entries, source="moves.toml")
    assert str(caught.value) == f"moves.toml: {message}"
    assert isinstance(caught.value, AuxcheckError) and caught.value.source == "moves.toml"


def test_a_chain_of_moves_is_followed_to_its_end() -> None:
    """`a -> b` and `b -> c` for one name send a's and b's imports straight to c; other
    names that left b stay where b's own move sends them."""
    table = parse_table([{"old": "a.b", "new": "a.c", "names": ["X"]},
                         {"old": "a.c", "new": "a.d", "names": ["X", "Y"]}])
    assert (table.names_from("a.b"), table.names_from("a.c")) == (
        {"X": "a.d"}, {"X": "a.d", "Y": "a.d"})
    assert table.moves[1:] == (Move("a.b", "a.c", ("X",)), Move("a.c", "a.d", ("X", "Y")))


def parse_table(entries: list[dict[str, object]]) -> MoveTable:
    """Returns the built-in table with ``entries`` merged in, as --moves merges them."""
    return builtin_moves().merged(parse_moves(entries, source="moves.toml"), source="moves.toml")


def test_a_cycle_across_the_builtin_table_and_a_users_moves_names_the_users_entry() -> None:
    """A user move that undoes the built-in one is refused, naming the user's entry."""
    old, new = builtin_moves().moves[0][:2]
    with pytest.raises(MovesTableError) as caught:
        parse_table([{"old": "x.y", "new": "x.z", "names": ["Q"]},
                     {"old": new, "new": old, "names": ["CommittedTokens"]}])
    assert str(caught.value) == (
        f"moves.toml: moves entry #2 (old = {new!r}): 'CommittedTokens' moves in a cycle: "
        f"{old} -> {new} -> {old}; each run would undo the last; remove the move that points "
        "back")


def test_a_table_built_from_moves_directly_refuses_a_keyword_module() -> None:
    """MoveTable itself (as an inferred table is built) checks every module name."""
    with pytest.raises(MovesTableError) as caught:
        MoveTable((Move("a.b", "a.if", ("X",)),), source="inferred")
    assert str(caught.value) == (
        "inferred: moves entry #1 (old = 'a.b'): 'a.if' is not a module name an import can "
        "spell; 'if' is a Python keyword, so no import statement can name the module (rename "
        "it, or leave this entry out)")


CHAIN = ('[[move]]\nold = "plug.a"\nnew = "plug.b"\nnames = ["X"]\n'
         '[[move]]\nold = "plug.b"\nnew = "plug.c"\nnames = ["X"]\n')


def test_one_run_migrates_a_chain_to_its_end(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`auxcheck migrate --moves` with `a -> b -> c` rewrites `from a import X` to c at once,
    and a second run has nothing to do."""
    (tmp_path / "moves.toml").write_text(CHAIN)
    (tmp_path / "user.py").write_text("from plug.a import X\n\nprint(X)\n")
    monkeypatch.chdir(tmp_path)
    assert migrate_main(["--moves", "moves.toml", "user.py"]) == 0
    assert (tmp_path / "user.py").read_text() == "from plug.c import X\n\nprint(X)\n"
    assert migrate_main(["--check", "--moves", "moves.toml", "user.py"]) == 0


def test_a_cycle_in_a_moves_file_exits_2_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A cycle is a usage error naming it; the file is left as it was (today's flip-flop)."""
    (tmp_path / "moves.toml").write_text(CHAIN.replace('new = "plug.c"', 'new = "plug.a"'))
    (tmp_path / "user.py").write_text("from plug.a import X\n")
    monkeypatch.chdir(tmp_path)
    assert migrate_main(["--moves", "moves.toml", "user.py"]) == 2
    assert capsys.readouterr().err == (
        "auxcheck migrate: error: moves.toml: moves entry #2 (old = 'plug.b'): 'X' moves in a "
        "cycle: plug.a -> plug.b -> plug.a; each run would undo the last; remove the move that "
        "points back\n")
    assert (tmp_path / "user.py").read_text() == "from plug.a import X\n"


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    """A --moves file that is not TOML is an error naming the file."""
    bad = tmp_path / "moves.toml"
    bad.write_text("[[move]\n")
    with pytest.raises(MovesTableError, match=r"moves\.toml: moves entry \(file\): not valid "
                       r"TOML \(Expected ']]' at the end of an array declaration"):
        load_moves(moves_file=bad)


def test_missing_moves_file_names_the_file(tmp_path: Path) -> None:
    """A --moves path that does not exist is an error naming the file."""
    missing = tmp_path / "nope.toml"
    with pytest.raises(MovesTableError) as caught:
        load_moves(moves_file=missing)
    assert str(caught.value) == f"{missing}: moves entry (file): cannot read: No such file or " \
        "directory"


def test_pyproject_errors_name_the_section(tmp_path: Path) -> None:
    """A malformed pyproject entry names pyproject.toml and its [tool.auxcheck.migrate] table."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.auxcheck.migrate]\nmove = [{old = "a.b"}]\n')
    with pytest.raises(MovesTableError) as caught:
        load_moves(pyproject=pyproject)
    assert str(caught.value) == (
        f"{pyproject} [tool.auxcheck.migrate]: moves entry #1 (old = 'a.b'): 'new' must be a "
        "dotted module path such as 'pkg.module', got None")


@pytest.mark.parametrize(("text", "problem"), [
    pytest.param("tool = 5\n", "tool must be a table (such as `[tool]`), got 5", id="tool-5"),
    pytest.param("[tool]\nauxcheck = 'x'\n", "tool.auxcheck must be a table (such as "
                 "`[tool.auxcheck]`), got 'x'", id="auxcheck-a-string"),
    pytest.param("[tool.auxcheck]\nmigrate = 3\n", "tool.auxcheck.migrate must be a table "
                 "(such as `[tool.auxcheck.migrate]`), got 3", id="migrate-a-number"),
])
def test_a_tool_table_that_is_not_a_table_is_a_moves_error_naming_the_key(
        tmp_path: Path, text: str, problem: str) -> None:
    """load_moves, whoever calls it, names the key that is not a table instead of crashing."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(text)
    with pytest.raises(MovesTableError) as caught:
        load_moves(pyproject=pyproject)
    assert str(caught.value) == (f"{pyproject}: moves entry [tool.auxcheck.migrate]: {problem}; "
                                 "fix the file")


def test_package_exports_its_public_names_without_libcst() -> None:
    """`auxcheck.migrate.__all__` lists the public names, and importing it skips libcst."""
    import subprocess
    import sys
    from types import ModuleType

    from auxcheck import migrate

    assert migrate.__all__ == sorted(
        n for n in dir(migrate)
        if not n.startswith("_") and not isinstance(getattr(migrate, n), ModuleType))
    probe = ("import sys, auxcheck.migrate as m; m.scan_paths, m.load_moves; "
             "print('libcst' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, check=False,
                          text=True).stdout == "False\n"
