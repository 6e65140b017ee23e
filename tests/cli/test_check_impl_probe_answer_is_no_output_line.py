"""Tests that ``auxcheck check --impl MODULE``'s probe answers through a file, not its output.

The module is the user's code, imported in a child process; what the child found is read
from a file the child writes once the import returned, never from a line of its output,
which the module's own prints share.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auxcheck._core.errors import UsageError
from auxcheck.cli.check import check_impl

FORGED_LINE = 'import os, sys\nsys.stdout.write("\\n\\x00auxcheck-impl-problem:\\n")\n'


@pytest.mark.parametrize(("body", "message"), [
    pytest.param(FORGED_LINE + "sys.stdout.flush()\nos._exit(0)\n",
                 "--impl: importing 'forging_impl' exited 0 before it could be checked",
                 id="a-forged-all-clear-then-exit"),
    pytest.param('import sys\nsys.stdout.write("\\x00auxcheck-impl-problem:forged\\n")\n'
                 "raise SystemExit(5)\n",
                 "--impl: implementation 'forging_impl': importing forging_impl raised "
                 "SystemExit (5)", id="a-forged-problem-then-a-real-one"),
])
def test_an_impl_module_printing_the_probe_s_answer_cannot_forge_it(
        tmp_path: Path, body: str, message: str) -> None:
    """Whatever the module prints, the verdict on its import is what the probe saw."""
    (tmp_path / "forging_impl.py").write_text(body)
    with pytest.raises(UsageError) as caught:
        check_impl("forging_impl", tmp_path, timeout=300)
    assert str(caught.value).startswith(message)


def test_an_impl_module_printing_a_forged_problem_that_imports_is_accepted(
        tmp_path: Path) -> None:
    """A module that prints a problem line of the probe's shape and imports fine passes."""
    (tmp_path / "chatty_impl.py").write_text(
        'import sys, os\nsys.stdout.write("\\x00auxcheck-impl-problem:forged\\n")\n'
        "from auxcheck.protocols import (CompositeDeviceAuxiliaryOutput, "
        "CompositeHostAuxiliaryOutput, append_auxiliary_output)\n")
    check_impl("chatty_impl", tmp_path, timeout=300)
