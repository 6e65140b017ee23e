"""The real ``auxcheck`` command run where some packages cannot be imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.processes import finish

_REFUSING = """
import sys

class Refused:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Refused())
from auxcheck.cli import main
sys.exit(main({args!r}))
"""
"""The child's program: a meta-path finder refusing the blocked packages, then the command."""


def auxcheck_without(blocked: set[str], args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Returns the status, stdout and stderr of ``auxcheck ARGS`` run in ``cwd`` by a child
    interpreter whose import of the packages ``blocked`` fails, as it does where they are not
    installed: a meta-path finder refuses them before any other finder is asked."""
    process = subprocess.Popen(
        [sys.executable, "-c", _REFUSING.format(blocked=blocked, args=args)], cwd=cwd,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = finish(process, f"auxcheck {' '.join(args)} without {sorted(blocked)}")
    return process.returncode, out, err
