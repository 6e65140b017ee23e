"""Tests that the help texts say what the commands do: the command list of ``auxcheck --help``
and each subcommand's description and arguments."""

from __future__ import annotations

import importlib

import pytest

from auxcheck.cli import SUBCOMMANDS, main

COMMANDS = """\
commands:
  migrate    rewrite imports of names SGLang moved (--check: only report them)
  validate   check objects (MODULE:ATTR, one or more) against the contract
  check      check a plugin project: imports, mypy, contract suite, releases
  rules      print the rule table
  stubcheck  compare the sglang stubs with SGLang's source (or the reference)
  moves      print the names SGLang moved between two releases
"""


def test_the_command_list_says_what_each_command_does(capsys: pytest.CaptureFixture[str]) -> None:
    """`auxcheck --help` lists every command with a summary true to it (validate takes several
    objects), aligned."""
    assert main(["--help"]) == 0
    assert COMMANDS in capsys.readouterr().out


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_each_summary_opens_with_the_verb_of_its_commands_description(name: str) -> None:
    """The one-line summary and the command's own description say the same action, so they
    cannot drift apart unseen."""
    module, summary = SUBCOMMANDS[name]
    description: str = importlib.import_module(module).DESCRIPTION
    assert summary.split()[0] == description.split()[0].lower()


@pytest.mark.parametrize(("name", "said"), [
    pytest.param("validate", "MODULE:ATTR [MODULE:ATTR ...]", id="validate-repeatable-target"),
    pytest.param("validate", "objects to check, one or more", id="validate-several-objects"),
    pytest.param("validate", "when it has is_active, before_grammar or after_sample",
                 id="validate-what-makes-an-observer"),
    pytest.param("stubcheck", "or with auxcheck's reference contract", id="stubcheck-reference"),
    pytest.param("moves", "from their wheels or source trees", id="moves-source-trees"),
    pytest.param("moves", "or JSON with --format json", id="moves-json"),
])
def test_each_commands_help_says_what_it_takes_and_does(
        capsys: pytest.CaptureFixture[str], name: str, said: str) -> None:
    """What `auxcheck COMMAND --help` says matches the command's parser and behaviour."""
    assert main([name, "--help"]) == 0
    assert said in " ".join(capsys.readouterr().out.split())
