"""Tests for `auxcheck moves` and auxcheck._releases.moves_infer: the names SGLang moved between releases.

The rules are checked on two small releases built in ``tmp_path`` (folders, and one zip
wheel); the CLI runs in-process and once as a real subprocess; one test reads the real
0.5.19 and 0.5.23 wheels.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.releases import REAL_CACHE, real_release, write_release

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.moves_infer import (
    Gone,
    InferredMoves,
    LeftOut,
    infer_moves,
    moves_between,
    render_json,
    render_toml,
)
from auxcheck.cli import SUBCOMMANDS
from auxcheck.cli.moves import main
from auxcheck.migrate.moves import Move, MoveTable, load_moves
from auxcheck.migrate.scan import rewrite_string
from auxcheck.releases import Release

BEFORE = {
    "sglang/version.py": "__version__ = '0.0.1'\n",
    "sglang/srt/old.py": (
        "from typing import TYPE_CHECKING\n"
        "import torch\n"
        "from torch import Tensor\n"
        "from sglang.srt import util as util_mod\n"
        "from sglang.srt.util import helper\n"
        "if TYPE_CHECKING:\n"
        "    from sglang.srt.typing_only import TypedOnly\n"
        "_private = 1\n"
        "class Moved:\n"
        "    def method(self): ...\n"
        "class Ambiguous: ...\n"
        "class Popular: ...\n"
        "class Gone: ...\n"
        "class Hidden: ...\n"
        "class Scripted: ...\n"
        "def stays(): ...\n"
    ),
    "sglang/srt/util.py": "def helper(): ...\n",
    "sglang/srt/typing_only.py": "class TypedOnly: ...\n",
    "sglang/srt/facade/__init__.py": "from .core import Api\n",
    "sglang/srt/facade/core.py": "class Api: ...\n",
    "sglang/srt/shape.py": "class Shape: ...\n",
    "sglang/srt/flat/__init__.py": "from .part import Flat\n",
    "sglang/srt/flat/part.py": "class Flat: ...\n",
}
"""Release 0.0.1: one example of each kind of name that can leave a module."""

AFTER = {
    "sglang/version.py": "__version__ = '0.0.2'\n",
    "sglang/srt/old.py": "import torch\ndef stays(): ...\n",
    "sglang/srt/util.py": "def helper(): ...\n",
    "sglang/srt/typing_only.py": "class TypedOnly: ...\n",
    "sglang/srt/new_home.py": "class Moved:\n    def method(self): ...\n",
    "sglang/srt/a1.py": "class Ambiguous: ...\n",
    "sglang/srt/a2.py": "class Ambiguous: ...\n",
    "sglang/srt/p1.py": "class Popular: ...\n",
    "sglang/srt/p2.py": "class Popular: ...\n",
    "sglang/srt/consumer.py": "def use():\n    from sglang.srt.p2 import Popular\n",
    "sglang/srt/hid.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    class Hidden: ...\n",
    "sglang/srt/.agents/my-script.py": "class Scripted: ...\n",
    "sglang/srt/api/__init__.py": "from .impl import Api\n",
    "sglang/srt/api/impl.py": "class Api: ...\n",
    "sglang/srt/shape/__init__.py": "",
    "sglang/srt/shape/impl.py": "class Shape: ...\n",
    "sglang/srt/flat.py": "class Flat: ...\n",
}
"""Release 0.0.2: names moved, split between modules, gone; a module and a package swapped."""

EXPECTED_MOVES = (
    Move("sglang.srt.facade", "sglang.srt.api", ("Api",), "0.0.2"),
    Move("sglang.srt.facade.core", "sglang.srt.api.impl", ("Api",), "0.0.2"),
    Move("sglang.srt.flat.part", "sglang.srt.flat", ("Flat",), "0.0.2"),
    Move("sglang.srt.old", "sglang.srt.new_home", ("Moved",), "0.0.2"),
    Move("sglang.srt.old", "sglang.srt.p2", ("Popular",), "0.0.2"),
    Move("sglang.srt.old", "sglang.srt.util", ("helper",), "0.0.2"),
    Move("sglang.srt.shape", "sglang.srt.shape.impl", ("Shape",), "0.0.2"),
)


write = write_release


@pytest.fixture
def found(tmp_path: Path) -> InferredMoves:
    """Returns the moves inferred from BEFORE (a folder) to AFTER (a wheel)."""
    before = ReleaseIndex(Release.from_source(write(tmp_path / "a", BEFORE)))
    after = ReleaseIndex(Release.from_wheel(write(tmp_path / "b", AFTER, wheel=True)))
    return infer_moves(before, after)


@pytest.fixture
def trees(tmp_path: Path) -> list[str]:
    """Returns the --source options naming both small releases, and an empty cache."""
    return ["--source", str(write(tmp_path / "a", BEFORE)), "--source",
            str(write(tmp_path / "b", AFTER)), "--offline", "--cache", str(tmp_path / "cache")]


# ---------------------------------------------------------------- inference


def test_names_defined_in_exactly_one_new_module_move_there(found: InferredMoves) -> None:
    """Each moved name points at its one new definition; a facade package at the new facade."""
    assert found.moves == EXPECTED_MOVES


def test_names_with_several_homes_that_sglang_does_not_prefer_are_left_out(
        found: InferredMoves) -> None:
    """A name two modules define, and SGLang imports from neither, is left out with both."""
    assert found.left_out == (
        LeftOut("sglang.srt.old", "Ambiguous", ("sglang.srt.a1", "sglang.srt.a2")),)


def test_names_without_an_importable_run_time_definition_are_gone(found: InferredMoves) -> None:
    """Names defined nowhere, only under TYPE_CHECKING, or in a file no import can reach, are gone."""
    assert found.gone == (Gone("sglang.srt.old", "Gone"), Gone("sglang.srt.old", "Hidden"),
                          Gone("sglang.srt.old", "Scripted"))


def test_a_module_named_by_a_keyword_is_no_home(tmp_path: Path) -> None:
    """A name whose only new definition is in `sglang/srt/kw/class.py` is gone, not moved
    there (no import can name that module), and the table builds."""
    before = {"sglang/version.py": "__version__ = '1'\n", "sglang/srt/a.py": "class K: ...\n"}
    after = {"sglang/version.py": "__version__ = '2'\n", "sglang/srt/a.py": "",
             "sglang/srt/kw/__init__.py": "", "sglang/srt/kw/class.py": "class K: ...\n"}
    found = infer_moves(ReleaseIndex(Release.from_source(write(tmp_path / "a", before))),
                        ReleaseIndex(Release.from_source(write(tmp_path / "b", after))))
    assert (found.moves, found.gone) == ((), (Gone("sglang.srt.a", "K"),))
    assert found.table().moves == ()


@pytest.mark.parametrize("name", ["torch", "Tensor", "util_mod", "_private", "TypedOnly",
                                  "stays"])
def test_modules_third_party_private_and_staying_names_are_not_moves(
        found: InferredMoves, name: str) -> None:
    """Only public SGLang names that stopped resolving are considered."""
    considered = [*(n for m in found.moves for n in m.names), *(x.name for x in found.left_out),
                  *(x.name for x in found.gone)]
    assert name not in considered


def test_every_move_resolves_in_the_newer_release(found: InferredMoves, tmp_path: Path) -> None:
    """`from new import name` works in the newer release for every printed move."""
    after = ReleaseIndex(Release.from_wheel(tmp_path / "b" / "sglang-0-py3-none-any.whl"))
    assert all(after.provides(m.new, n).ok for m in found.moves for n in m.names)


def test_the_summary_counts_moves_left_out_and_gone_names(found: InferredMoves) -> None:
    """The one-line summary says what was found, between which releases."""
    assert found.summary() == ("auxcheck moves: sglang 0.0.1 -> 0.0.2: 7 names moved (7 moves; "
                               "1 chosen among several homes), 1 left out (several homes), 3 "
                               "gone (no home in 0.0.2)")


def test_the_toml_round_trips_through_the_moves_file_reader(
        found: InferredMoves, tmp_path: Path) -> None:
    """`--moves` reads back exactly the inferred moves (plus the built-in table)."""
    path = tmp_path / "moves.toml"
    path.write_text(render_toml(found))
    table = load_moves(moves_file=path)
    assert table.moves[1:] == EXPECTED_MOVES


def test_the_toml_lists_left_out_names_as_comments(found: InferredMoves) -> None:
    """Left-out names follow the tables as `#` comments naming their candidates."""
    text = render_toml(found)
    assert text.endswith("# sglang.srt.old:Ambiguous: sglang.srt.a1, sglang.srt.a2\n")
    assert text.startswith("# Names SGLang moved between 0.0.1 and 0.0.2, inferred by "
                           "`auxcheck moves --from 0.0.1 --to 0.0.2`.\n")


def test_json_holds_moves_left_out_and_gone_names(found: InferredMoves) -> None:
    """The JSON document has every part, in the same order as the TOML."""
    data = json.loads(render_json(found))
    assert (data["from"], data["to"]) == ("0.0.1", "0.0.2")
    assert [(m["old"], m["new"], tuple(m["names"])) for m in data["moves"]] == [
        (m.old, m.new, m.names) for m in EXPECTED_MOVES]
    assert data["left_out"] == [{"old": "sglang.srt.old", "name": "Ambiguous",
                                 "candidates": ["sglang.srt.a1", "sglang.srt.a2"]}]
    assert [g["name"] for g in data["gone"]] == ["Gone", "Hidden", "Scripted"]


STRINGS = {
    "a hook target on a moved class's method": (
        "sglang.srt.old.Moved.method", "sglang.srt.new_home.Moved.method"),
    "a mock.patch target": ("sglang.srt.old.helper", "sglang.srt.util.helper"),
    "a colon-separated target": ("sglang.srt.old:Moved", "sglang.srt.new_home:Moved"),
    "a name that stayed": ("sglang.srt.old.stays", None),
    "a longer module sharing the prefix": ("sglang.srt.old_other.Moved", None),
    "a module turned package": ("sglang.srt.shape.Shape", "sglang.srt.shape.impl.Shape"),
}


@pytest.mark.parametrize(("text", "expected"), STRINGS.values(), ids=STRINGS.keys())
def test_inferred_moves_rewrite_hook_and_mock_patch_strings(
        found: InferredMoves, text: str, expected: str | None) -> None:
    """Dotted string targets of moved names point at the new module; others stay."""
    assert rewrite_string(text, found.table()) == expected


def test_the_output_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """Two real `auxcheck moves` runs with different PYTHONHASHSEED print the same bytes."""
    args = [sys.executable, "-m", "auxcheck", "moves", "--from", "0.0.1", "--to", "0.0.2",
            "--source", str(write(tmp_path / "a", BEFORE)), "--wheel",
            str(write(tmp_path / "b", AFTER, wheel=True)), "--offline",
            "--cache", str(tmp_path / "cache"), "--jobs", "1"]
    outputs = [subprocess.run(args, capture_output=True, text=True, check=False,
                              env={**os.environ, "PYTHONHASHSEED": seed}) for seed in ("1", "2")]
    assert [o.returncode for o in outputs] == [0, 0]
    assert outputs[0].stdout == outputs[1].stdout
    assert '[[move]]\nold = "sglang.srt.old"\nnew = "sglang.srt.new_home"' in outputs[0].stdout
    assert outputs[0].stderr.startswith("auxcheck moves: sglang 0.0.1 -> 0.0.2: 7 names moved")


# ---------------------------------------------------------------- command line


def test_the_command_is_registered() -> None:
    """`auxcheck moves` is a subcommand of `auxcheck`."""
    assert SUBCOMMANDS["moves"][0] == "auxcheck.cli.moves"


def test_the_command_prints_toml_and_a_summary(
        trees: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """stdout is the moves file; stderr the one-line summary."""
    assert main(["--from", "0.0.1", "--to", "0.0.2", *trees]) == 0
    out, err = capsys.readouterr()
    assert '[[move]]\nold = "sglang.srt.facade"\nnew = "sglang.srt.api"\nnames = ["Api"]\n' \
           'since = "0.0.2"\n' in out
    assert err == ("auxcheck moves: sglang 0.0.1 -> 0.0.2: 7 names moved (7 moves; 1 chosen "
                   "among several homes), 1 left out (several homes), 3 gone (no home in "
                   "0.0.2)\n")


def test_output_and_json_format_write_the_document_to_a_file(
        trees: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-o writes the document (here JSON) to the file and nothing to stdout."""
    target = tmp_path / "moves.json"
    assert main(["--from", "0.0.1", "--to", "0.0.2", "--format", "json", "-o", str(target),
                 "-j", "1", *trees]) == 0
    assert capsys.readouterr().out == ""
    assert len(json.loads(target.read_text())["moves"]) == 7


def test_moves_between_matches_releases_by_their_declared_version(tmp_path: Path) -> None:
    """Given wheels and trees are matched to --from and --to by the version they declare."""
    found = moves_between("0.0.1", "0.0.2", wheels=[write(tmp_path / "b", AFTER, wheel=True)],
                          sources=[write(tmp_path / "a", BEFORE)], download=False,
                          cache=tmp_path / "cache")
    assert found.table() == MoveTable(EXPECTED_MOVES)


USAGE = {
    "not a version": (["--from", "zero", "--to", "0.0.2"],
                      ("argument --from: 'zero' is not an SGLang release version; expected "
                      "versions such as 0.5.19,0.5.20,0.5.23")),
    "two versions": (["--from", "0.0.1,0.0.3", "--to", "0.0.2"],
                     ("argument --from: expected one release version such as 0.5.23, got "
                     "'0.0.1,0.0.3'")),
    "same release": (["--from", "0.0.2", "--to", "0.0.2"],
                     ("auxcheck moves: error: --from and --to are the same release (0.0.2); pass "
                     "the older release to --from and the newer one to --to")),
    "missing --to": (["--from", "0.0.1"], "the following arguments are required: --to"),
    "bad jobs": (["--from", "0.0.1", "--to", "0.0.2", "-j", "0"],
                 "argument --jobs/-j: invalid value '0'; expected a whole number >= 1"),
    "bad format": (["--from", "0.0.1", "--to", "0.0.2", "--format", "yaml"],
                   "argument --format: invalid choice: 'yaml'"),
}


@pytest.mark.parametrize(("argv", "message"), USAGE.values(), ids=USAGE.keys())
def test_usage_errors_exit_2_naming_the_problem(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Bad options exit 2 and say what was wrong and what is expected."""
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_release_missing_offline_exits_2_saying_what_to_pass(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A release that is in neither the options nor the cache names itself and the options."""
    argv = ["--from", "0.0.1", "--to", "0.0.9", "--source", str(write(tmp_path / "a", BEFORE)),
            "--offline", "--cache", str(tmp_path / "cache")]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "auxcheck moves: error: cannot get sglang 0.0.9: it is not in the cache. When offline, "
        "pass --wheel PATH (from `pip download --no-deps sglang==0.0.9` on a connected machine) "
        "or --source DIR (an unpacked sglang 0.0.9), or put sglang-0.0.9-*.whl in "
        f"{tmp_path / 'cache'}\n")


def test_a_missing_wheel_exits_2_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A --wheel that is not there is named, with how to get one."""
    assert main(["--from", "0.0.1", "--to", "0.0.2", "--wheel", str(tmp_path / "no.whl")]) == 2
    assert capsys.readouterr().err == (
        f"auxcheck moves: error: no wheel at {tmp_path / 'no.whl'}; download one with "
        "`pip download --no-deps sglang==VERSION`\n")


def test_an_unwritable_output_exits_2_naming_it(
        trees: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-o into a folder that does not exist is a usage error naming the file."""
    target = tmp_path / "no" / "such" / "moves.toml"
    assert main(["--from", "0.0.1", "--to", "0.0.2", "-o", str(target), *trees]) == 2
    assert capsys.readouterr().err == (
        f"auxcheck moves: error: -o/--output: cannot write {target}: No such file or directory; "
        "pass a writable file\n")


# ---------------------------------------------------------------- real releases


@pytest.mark.slow
def test_real_moves_from_0_5_19_to_0_5_23_include_the_contract_and_runner_utils() -> None:
    """The real wheels give the auxiliary-output move and runner_utils' split, all valid in 0.5.23."""
    found = moves_between("0.5.19", "0.5.23", cache=REAL_CACHE)
    table = found.table()
    old = "sglang.srt.sampling.sampling_observer"
    assert [table.new_module_of(old, n) for n in ("CommittedTokens", "HostAuxiliaryOutput")] == [
        "sglang.srt.managers.auxiliary_output"] * 2
    # Still importable there in 0.5.23 (by accident of an internal import): not a move.
    assert table.new_module_of(old, "DeviceAuxiliaryOutput") is None
    assert table.new_module_of("sglang.srt.model_executor.runner_utils",
                               "DecodeInputBuffers") == "sglang.srt.model_executor.runner_utils.buffers"
    after = ReleaseIndex(real_release("0.5.23"), cache=REAL_CACHE)
    assert [(m.new, n) for m in found.moves for n in m.names
            if not after.provides(m.new, n).ok] == []
