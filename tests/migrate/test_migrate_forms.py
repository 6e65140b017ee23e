"""A table-driven specification of ``auxcheck migrate`` over the import forms plugins use.

Each row is one form: its input, the expected output and, for plain import rows, the
expected ``--compat`` output. A plain output must be ``ast``-equal to the expectation,
keep its comments and stay clean under ruff's import sorting; every output must run in
a fake SGLang of the matching layout (old and new for ``--compat``), patch what it
patches, and type-check against the shipped stubs without ``attr-defined`` or
``no-redef``. ruff, mypy and the fake layouts run once each, over every row together.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from textwrap import dedent

import pytest
from helpers.migration import MOVES
from helpers.paths import RUFF, TORCH_STANDIN
from helpers.plugin_sources import MOVED_CLASSES, NEW, OLD

from auxcheck.migrate.moves import Move, MoveTable
from auxcheck.migrate.scan import scan_source
from auxcheck.migrate.transform import MigrationResult, migrate_source

USER_MOVES = MoveTable((Move("mylib.legacy", "mylib.a", ("A",)),
                        Move("mylib.legacy", "mylib.b", ("B",))))
USER = MOVES.merged(USER_MOVES.moves, source="test")
RELATIVE_MODULE = "sglang.srt.foo.bar"
"""The module name relative rows are migrated as; they run from sglang/srt/foo/."""

RUFF_SELECT = "I,F401,F811,F821,PLR0402"
"""ruff's import sorting, unused, redefined and undefined names, and ``import a.b as b`` (which
ruff and pylint would have written ``from a import b``)."""
MYPY_ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):\d+: error: .*\[(?P<code>[a-z-]+)\]$")
FORBIDDEN_MYPY_CODES = {"attr-defined", "no-redef"}


@dataclass(frozen=True, slots=True)
class Form:
    """One import form: the input, what the rewrite must give, and how to check it."""

    id: str
    before: str
    after: str
    compat: str | None = None
    """The exact ``--compat`` output, given for plain import rows only."""
    exact: bool = False
    """Compare the plain output as text, not as an AST (the row is about layout)."""
    moves: MoveTable = MOVES
    module: str | None = None
    runs_on_old: bool = True
    """The input itself runs in the old layout (false when it already imports the new module)."""
    typed: bool = True
    """Include the outputs in the mypy run (false for rows whose typing is the user's own)."""
    ruff_clean: bool = True
    """The input passes ruff (false for rows about inputs ruff would change: an `a; b` line, a
    name imported twice); checked against ruff itself."""

    @property
    def relative(self) -> bool:
        """Returns whether the row is migrated (and run) as a module inside SGLang."""
        return self.module is not None


def _form(id: str, before: str, after: str, compat: str | None = None, *, exact: bool = False,
          moves: MoveTable = MOVES, module: str | None = None, runs_on_old: bool = True,
          typed: bool = True, ruff_clean: bool = True) -> Form:
    return Form(id, dedent(before), dedent(after), None if compat is None else dedent(compat),
                exact=exact, moves=moves, module=module, runs_on_old=runs_on_old, typed=typed,
                ruff_clean=ruff_clean)


def _unchanged(id: str, source: str, *, typed: bool = True) -> Form:
    return _form(id, source, source, source, exact=True, typed=typed)


def _fallback(body: str, new: str = NEW, old: str = OLD, guard: str = "TYPE_CHECKING") -> str:
    """Returns the --compat block of ``from new import body`` at the top level."""
    return (f"if {guard}:\n    from {new} import {body}\nelse:\n    try:\n"
            f"        from {new} import {body}\n    except ImportError:\n"
            f"        from {old} import {body}\n")


WRAPPED_THREE = "(\n    CommittedTokens,\n    DeviceAuxiliaryOutput,\n    HostAuxiliaryOutput,\n)"
WRAPPED_THREE_COMPAT = f"""\
if TYPE_CHECKING:
    from {NEW} import (
        CommittedTokens,
        DeviceAuxiliaryOutput,
        HostAuxiliaryOutput,
    )
else:
    try:
        from {NEW} import (
            CommittedTokens,
            DeviceAuxiliaryOutput,
            HostAuxiliaryOutput,
        )
    except ImportError:
        from {OLD} import (
            CommittedTokens,
            DeviceAuxiliaryOutput,
            HostAuxiliaryOutput,
        )
"""

FORMS = [
    # 1. from-imports: renamed, split and sorted where ruff's isort puts them.
    _form(
        "a from-import of a moved name points at the new module",
        f"from {OLD} import CommittedTokens\n\nVALUE = CommittedTokens\n",
        f"from {NEW} import CommittedTokens\n\nVALUE = CommittedTokens\n",
        "from typing import TYPE_CHECKING\n\n" + _fallback("CommittedTokens")
        + "\nVALUE = CommittedTokens\n",
        exact=True,
    ),
    _form(
        "an as-import of a moved name keeps its alias",
        f"from {OLD} import CommittedTokens as Commits\n\nVALUE = Commits\n",
        f"from {NEW} import CommittedTokens as Commits\n\nVALUE = Commits\n",
        "from typing import TYPE_CHECKING\n\n" + _fallback("CommittedTokens as Commits")
        + "\nVALUE = Commits\n",
        exact=True,
    ),
    _form(
        "a wrapped statement of three moved names keeps its magic trailing comma",
        f"from {OLD} import {WRAPPED_THREE}\n\n"
        "VALUE = CommittedTokens, DeviceAuxiliaryOutput, HostAuxiliaryOutput\n",
        f"from {NEW} import {WRAPPED_THREE}\n\n"
        "VALUE = CommittedTokens, DeviceAuxiliaryOutput, HostAuxiliaryOutput\n",
        "from typing import TYPE_CHECKING\n\n" + WRAPPED_THREE_COMPAT
        + "\nVALUE = CommittedTokens, DeviceAuxiliaryOutput, HostAuxiliaryOutput\n",
        exact=True,
    ),
    _form(
        "a statement mixing moved and staying names is split and each part sorted into place",
        f"""\
        import os

        from sglang.srt.managers.schedule_batch import ScheduleBatch
        from {OLD} import CommittedTokens, SamplingObserver
        from sglang.srt.utils import get_bool_env_var

        USED = [os, ScheduleBatch, CommittedTokens, SamplingObserver, get_bool_env_var]
        """,
        f"""\
        import os

        from {NEW} import CommittedTokens
        from sglang.srt.managers.schedule_batch import ScheduleBatch
        from {OLD} import SamplingObserver
        from sglang.srt.utils import get_bool_env_var

        USED = [os, ScheduleBatch, CommittedTokens, SamplingObserver, get_bool_env_var]
        """,
        # The fallback goes after the import block, which stays one sorted block.
        f"""\
        import os
        from typing import TYPE_CHECKING

        from sglang.srt.managers.schedule_batch import ScheduleBatch
        from {OLD} import SamplingObserver
        from sglang.srt.utils import get_bool_env_var

        if TYPE_CHECKING:
            from {NEW} import CommittedTokens
        else:
            try:
                from {NEW} import CommittedTokens
            except ImportError:
                from {OLD} import CommittedTokens

        USED = [os, ScheduleBatch, CommittedTokens, SamplingObserver, get_bool_env_var]
        """,
    ),
    _form(
        "a staying name left alone in parentheses is written on one line",
        f"from {OLD} import (\n    CommittedTokens,\n    SamplingObserver,\n)\n\n"
        "VALUE = CommittedTokens, SamplingObserver\n",
        f"from {NEW} import CommittedTokens\nfrom {OLD} import SamplingObserver\n\n"
        "VALUE = CommittedTokens, SamplingObserver\n",
        f"from typing import TYPE_CHECKING\n\nfrom {OLD} import SamplingObserver\n\n"
        + _fallback("CommittedTokens") + "\nVALUE = CommittedTokens, SamplingObserver\n",
        exact=True,
    ),
    _form(
        "a moved import merged into an existing new-module import wraps past 88 columns",
        f"from {NEW} import HostAuxiliaryOutput\n"
        f"from {OLD} import CommittedTokens, DeviceAuxiliaryOutput\n\n"
        "VALUE = CommittedTokens, DeviceAuxiliaryOutput, HostAuxiliaryOutput\n",
        f"from {NEW} import {WRAPPED_THREE}\n\n"
        "VALUE = CommittedTokens, DeviceAuxiliaryOutput, HostAuxiliaryOutput\n",
        exact=True, runs_on_old=False,
    ),
    _form(
        "a moved name already imported from the new module is not imported twice",
        f"from {NEW} import CommittedTokens\n"
        f"from {OLD} import CommittedTokens, SamplingObserver\n\n"
        "VALUE = CommittedTokens, SamplingObserver\n",
        f"from {NEW} import CommittedTokens\nfrom {OLD} import SamplingObserver\n\n"
        "VALUE = CommittedTokens, SamplingObserver\n",
        runs_on_old=False, ruff_clean=False,
    ),
    # 2. The user's import form is kept.
    _form(
        "a dotted import of the old module used only for moved names becomes one of the new",
        f"import {OLD}\n\nVALUE = {OLD}.CommittedTokens\n",
        f"import {NEW}\n\nVALUE = {NEW}.CommittedTokens\n",
    ),
    _form(
        "a dotted import of the old module also used for a staying name gains one of the new",
        f"import {OLD}\n\nMOVED = {OLD}.CommittedTokens\nSTAYING = {OLD}.SamplingObserver\n",
        f"import {NEW}\nimport {OLD}\n\n"
        f"MOVED = {NEW}.CommittedTokens\nSTAYING = {OLD}.SamplingObserver\n",
    ),
    _form(
        "an as import of the old module used only for moved names keeps its alias",
        f"import {OLD} as so\n\nVALUE = so.CommittedTokens, so.HostAuxiliaryOutput\n",
        f"import {NEW} as so\n\nVALUE = so.CommittedTokens, so.HostAuxiliaryOutput\n",
    ),
    _form(
        "an as import of the old module named as the new module's last name becomes a from-import",
        f"import {OLD} as auxiliary_output\n\nVALUE = auxiliary_output.CommittedTokens\n",
        "from sglang.srt.managers import auxiliary_output\n\n"
        "VALUE = auxiliary_output.CommittedTokens\n",
        exact=True,
    ),
    _form(
        "an as import of the old module named as its own last name stays an as import",
        f"import {OLD} as sampling_observer\n\nVALUE = sampling_observer.CommittedTokens\n",
        f"import {NEW} as sampling_observer\n\nVALUE = sampling_observer.CommittedTokens\n",
        exact=True, ruff_clean=False,
    ),
    _form(
        "an as import of the old module also used for a staying name gains the new module",
        f"import {OLD} as so\n\nMOVED = so.CommittedTokens\nSTAYING = so.SamplingObserver\n",
        f"import {OLD} as so\nfrom sglang.srt.managers import auxiliary_output\n\n"
        "MOVED = auxiliary_output.CommittedTokens\nSTAYING = so.SamplingObserver\n",
    ),
    _form(
        "a from-import of the old module from its package imports the new module from its own",
        "from sglang.srt.sampling import sampling_observer\n\n"
        "VALUE = sampling_observer.CommittedTokens\n",
        "from sglang.srt.managers import auxiliary_output\n\n"
        "VALUE = auxiliary_output.CommittedTokens\n",
    ),
    _form(
        "a from-import of the old module under an alias used only for moved names keeps it",
        "from sglang.srt.sampling import sampling_observer as so\n\nVALUE = so.CommittedTokens\n",
        "from sglang.srt.managers import auxiliary_output as so\n\nVALUE = so.CommittedTokens\n",
    ),
    _form(
        "a from-import of the old module also used for a staying name stays beside the new one",
        "from sglang.srt.sampling import sampling_observer\n\n"
        "MOVED = sampling_observer.CommittedTokens\n"
        "STAYING = sampling_observer.SamplingObserver\n",
        "from sglang.srt.managers import auxiliary_output\n"
        "from sglang.srt.sampling import sampling_observer\n\n"
        "MOVED = auxiliary_output.CommittedTokens\n"
        "STAYING = sampling_observer.SamplingObserver\n",
    ),
    _form(
        "an aliased from-import of the old module also used for a staying name gains the new one",
        "from sglang.srt.sampling import sampling_observer as so\n\n"
        "MOVED = so.CommittedTokens\nSTAYING = so.SamplingObserver\n",
        "from sglang.srt.managers import auxiliary_output\n"
        "from sglang.srt.sampling import sampling_observer as so\n\n"
        "MOVED = auxiliary_output.CommittedTokens\nSTAYING = so.SamplingObserver\n",
    ),
    _form(
        "string annotations through a kept alias are left as they are",
        f"""\
        import typing

        import {OLD} as so


        def observe(commits: "so.CommittedTokens") -> "list[so.CommittedTokens]":
            return [commits]


        if __name__ == "__main__":
            typing.get_type_hints(observe)
        """,
        f"""\
        import typing

        import {NEW} as so


        def observe(commits: "so.CommittedTokens") -> "list[so.CommittedTokens]":
            return [commits]


        if __name__ == "__main__":
            typing.get_type_hints(observe)
        """,
    ),
    _form(
        "string annotations follow the uses of a split alias to the new module",
        f"""\
        import typing

        import {OLD} as so


        def observe(commits: "so.CommittedTokens") -> "list[so.SamplingObserver]":
            return []


        if __name__ == "__main__":
            typing.get_type_hints(observe)
        """,
        f"""\
        import typing

        import {OLD} as so
        from sglang.srt.managers import auxiliary_output


        def observe(commits: "auxiliary_output.CommittedTokens") -> "list[so.SamplingObserver]":
            return []


        if __name__ == "__main__":
            typing.get_type_hints(observe)
        """,
    ),
    # 3. Comments are kept.
    _form(
        "a noqa comment on a moved import stays on it",
        f"from {OLD} import CommittedTokens  # noqa: F401\n",
        f"from {NEW} import CommittedTokens  # noqa: F401\n",
    ),
    _form(
        "a noqa comment on a moved import under TYPE_CHECKING stays on it",
        f"""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from {OLD} import HostAuxiliaryOutput  # noqa: F401
        """,
        f"""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from {NEW} import HostAuxiliaryOutput  # noqa: F401
        """,
    ),
    _form(
        "a type-ignore comment on a moved import stays on it",
        f"from {OLD} import CommittedTokens  # type: ignore[attr-defined]\n\n"
        "VALUE = CommittedTokens\n",
        f"from {NEW} import CommittedTokens  # type: ignore[attr-defined]\n\n"
        "VALUE = CommittedTokens\n",
    ),
    _form(
        "comments on names inside parentheses go with their names",
        f"""\
        from {OLD} import (
            CommittedTokens,  # the commits
            SamplingObserver,  # stays
        )

        VALUE = CommittedTokens, SamplingObserver
        """,
        f"""\
        from {NEW} import CommittedTokens  # the commits
        from {OLD} import SamplingObserver  # stays

        VALUE = CommittedTokens, SamplingObserver
        """,
    ),
    _form(
        "a comment above a moved import stays above it",
        f"import os\n\n# Observer types for the plugin.\nfrom {OLD} import CommittedTokens\n\n"
        "VALUE = os.sep, CommittedTokens\n",
        f"import os\n\n# Observer types for the plugin.\nfrom {NEW} import CommittedTokens\n\n"
        "VALUE = os.sep, CommittedTokens\n",
    ),
    # 5. Relative imports inside SGLang stay relative.
    _form(
        "a relative from-import of the old module stays relative",
        "from ..sampling.sampling_observer import CommittedTokens\n\nVALUE = CommittedTokens\n",
        "from ..managers.auxiliary_output import CommittedTokens\n\nVALUE = CommittedTokens\n",
        module=RELATIVE_MODULE,
    ),
    _form(
        "a relative statement mixing moved and staying names is split, both parts relative",
        "from ..sampling.sampling_observer import CommittedTokens, SamplingObserver\n\n"
        "VALUE = CommittedTokens, SamplingObserver\n",
        "from ..managers.auxiliary_output import CommittedTokens\n"
        "from ..sampling.sampling_observer import SamplingObserver\n\n"
        "VALUE = CommittedTokens, SamplingObserver\n",
        module=RELATIVE_MODULE,
    ),
    _form(
        "a relative from-import of the old module from its package stays relative",
        "from ..sampling import sampling_observer\n\nVALUE = sampling_observer.CommittedTokens\n",
        "from ..managers import auxiliary_output\n\nVALUE = auxiliary_output.CommittedTokens\n",
        module=RELATIVE_MODULE,
    ),
    # 6. Dotted strings.
    _form(
        "a mock.patch target of a moved name points at the new module",
        f'from unittest import mock\n\nwith mock.patch("{OLD}.CommittedTokens"):\n    pass\n',
        f'from unittest import mock\n\nwith mock.patch("{NEW}.CommittedTokens"):\n    pass\n',
    ),
    _form(
        "a mock.patch decorator target of a moved name points at the new module",
        f"""\
        from unittest import mock


        @mock.patch("{OLD}.HostAuxiliaryOutput")
        def check(host: mock.MagicMock) -> None:
            assert isinstance(host, mock.MagicMock)


        if __name__ == "__main__":
            check()
        """,
        f"""\
        from unittest import mock


        @mock.patch("{NEW}.HostAuxiliaryOutput")
        def check(host: mock.MagicMock) -> None:
            assert isinstance(host, mock.MagicMock)


        if __name__ == "__main__":
            check()
        """,
    ),
    _form(
        "a module:attribute hook target of a moved name points at the new module",
        f"""\
        import importlib

        HOOK = "{OLD}:HostAuxiliaryOutput"

        if __name__ == "__main__":
            module, _, attr = HOOK.partition(":")
            getattr(importlib.import_module(module), attr)
        """,
        f"""\
        import importlib

        HOOK = "{NEW}:HostAuxiliaryOutput"

        if __name__ == "__main__":
            module, _, attr = HOOK.partition(":")
            getattr(importlib.import_module(module), attr)
        """,
    ),
    # 7. Imports wherever they are.
    _form(
        "an import inside a function is rewritten in place",
        f"""\
        def load() -> object:
            from {OLD} import CommittedTokens

            return CommittedTokens


        VALUE = load()
        """,
        f"""\
        def load() -> object:
            from {NEW} import CommittedTokens

            return CommittedTokens


        VALUE = load()
        """,
    ),
    _form(
        "an import inside a class body is rewritten in place",
        f"class Holder:\n    from {OLD} import HostAuxiliaryOutput as Host\n\n\n"
        "VALUE = Holder.Host\n",
        f"class Holder:\n    from {NEW} import HostAuxiliaryOutput as Host\n\n\n"
        "VALUE = Holder.Host\n",
    ),
    _form(
        "an import under TYPE_CHECKING is rewritten in place",
        f"""\
        from __future__ import annotations

        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from {OLD} import DeviceAuxiliaryOutput


        def first(outputs: list[DeviceAuxiliaryOutput]) -> DeviceAuxiliaryOutput:
            return outputs[0]
        """,
        f"""\
        from __future__ import annotations

        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from {NEW} import DeviceAuxiliaryOutput


        def first(outputs: list[DeviceAuxiliaryOutput]) -> DeviceAuxiliaryOutput:
            return outputs[0]
        """,
    ),
    _form(
        "an import inside try/except ImportError is rewritten in place",
        f"try:\n    from {OLD} import CommittedTokens\nexcept ImportError:\n"
        "    CommittedTokens = None\n\nVALUE = CommittedTokens\n",
        f"try:\n    from {NEW} import CommittedTokens\nexcept ImportError:\n"
        "    CommittedTokens = None\n\nVALUE = CommittedTokens\n",
    ),
    _form(
        "an import sharing a line with another statement is rewritten",
        f"import os; from {OLD} import CommittedTokens\n\nVALUE = os.sep, CommittedTokens\n",
        f"import os\n\nfrom {NEW} import CommittedTokens\n\nVALUE = os.sep, CommittedTokens\n",
        ruff_clean=False,
    ),
    _form(
        "a mixed import in a one-line if suite is split inside the suite",
        f"import sys\n\nif sys.platform: from {OLD} import CommittedTokens, SamplingObserver\n\n"
        "VALUE = CommittedTokens, SamplingObserver\n",
        f"import sys\n\nif sys.platform:\n    from {NEW} import CommittedTokens\n"
        f"    from {OLD} import SamplingObserver\n\nVALUE = CommittedTokens, SamplingObserver\n",
        ruff_clean=False,
    ),
    _unchanged(
        "a new-then-old fallback the user already wrote is left alone",
        f"try:\n    from {NEW} import CommittedTokens\nexcept ImportError:\n"
        f"    from {OLD} import CommittedTokens\n\nVALUE = CommittedTokens\n",
        typed=False,  # mypy rightly flags the user's own fallback
    ),
    _form(
        "a star import gains explicit imports of the moved names used and stays",
        f"from {OLD} import *\n\nVALUE = CommittedTokens, SamplingObserver\n",
        f"from {NEW} import CommittedTokens\nfrom {OLD} import *\n\n"
        "VALUE = CommittedTokens, SamplingObserver\n",
    ),
    # 9. How --compat spells TYPE_CHECKING.
    _form(
        "a file importing typing gets typing.TYPE_CHECKING in its fallback",
        f"import typing\n\nfrom {OLD} import CommittedTokens\n\n"
        "VALUE: typing.Any = CommittedTokens\n",
        f"import typing\n\nfrom {NEW} import CommittedTokens\n\n"
        "VALUE: typing.Any = CommittedTokens\n",
        "import typing\n\n" + _fallback("CommittedTokens", guard="typing.TYPE_CHECKING")
        + "\nVALUE: typing.Any = CommittedTokens\n",
        exact=True,
    ),
    _form(
        "a file already binding TYPE_CHECKING gains no second import of it",
        f"from typing import TYPE_CHECKING\n\nfrom {OLD} import CommittedTokens\n\n"
        "VALUE = CommittedTokens, TYPE_CHECKING\n",
        f"from typing import TYPE_CHECKING\n\nfrom {NEW} import CommittedTokens\n\n"
        "VALUE = CommittedTokens, TYPE_CHECKING\n",
        "from typing import TYPE_CHECKING\n\n" + _fallback("CommittedTokens")
        + "\nVALUE = CommittedTokens, TYPE_CHECKING\n",
        exact=True,
    ),
    # 8. User moves of one module's names to two modules.
    _form(
        "an as import of a module whose names went to two modules imports both from the package",
        "import mylib.legacy as m\n\nVALUE = m.A, m.B\n",
        "from mylib import a, b\n\nVALUE = a.A, b.B\n",
        moves=USER,
    ),
    _form(
        "an as import of a module named as its new module's last name becomes a from-import",
        "import mylib.legacy as a\n\nVALUE = a.A\n",
        "from mylib import a\n\nVALUE = a.A\n",
        moves=USER, exact=True,
    ),
    _form(
        "a dotted import of a module whose names went to two modules becomes two dotted imports",
        "import mylib.legacy\n\nVALUE = mylib.legacy.A, mylib.legacy.B\n",
        "import mylib.a\nimport mylib.b\n\nVALUE = mylib.a.A, mylib.b.B\n",
        moves=USER,
    ),
    _form(
        "a from-import of names that went to two modules is split by module",
        "from mylib.legacy import A, B\n\nVALUE = A, B\n",
        "from mylib.a import A\nfrom mylib.b import B\n\nVALUE = A, B\n",
        moves=USER,
    ),
    _form(
        "a from-import of a module whose names went to two modules imports both from the package",
        "from mylib import legacy\n\nVALUE = legacy.A, legacy.B\n",
        "from mylib import a, b\n\nVALUE = a.A, b.B\n",
        moves=USER,
    ),
    # Forms that must not change.
    _unchanged("an import of a staying name is left alone",
               f"from {OLD} import SamplingObserver\n\nVALUE = SamplingObserver\n"),
    _unchanged("a mock.patch target of a staying name is left alone",
               f'from unittest import mock\n\nwith mock.patch("{OLD}.SamplingObserver"):\n'
               "    pass\n"),
    _unchanged("an as import of the old module used only for a staying name is left alone",
               f"import {OLD} as so\n\nVALUE = so.SamplingObserver\n"),
]
IDS = [form.id for form in FORMS]
BY_ID = {form.id: form for form in FORMS}
MULTI_MODULE = [form for form in FORMS if form.moves is USER]
EXACT_COMPAT = [form for form in FORMS if form.compat is not None]
VARIANTS = ("plain", "compat")


def test_the_table_has_unique_ids_and_about_forty_forms() -> None:
    """Every row is named once, so each one's result is its own test."""
    assert len(BY_ID) == len(FORMS) >= 40


@cache
def migrated(form_id: str, compat: bool) -> MigrationResult:
    """Returns the migration of a row's input (``compat`` or not), computed once."""
    form = BY_ID[form_id]
    return _migrate(form.before, form, compat=compat)


def _migrate(text: str, form: Form, *, compat: bool) -> MigrationResult:
    try:
        return migrate_source(text, moves=form.moves, module=form.module, compat=compat)
    except Exception as exc:  # noqa: BLE001 - a crash is this row's failure, not the run's
        return MigrationResult("failed", text, f"raised {type(exc).__name__}: {exc}")


def output(form: Form, variant: str) -> str:
    """Returns a row's output text for ``variant`` ("plain" or "compat")."""
    return migrated(form.id, variant == "compat").text


def comments(text: str) -> list[str]:
    """Returns the comments of ``text`` in order."""
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [token.string for token in tokens if token.type == tokenize.COMMENT]


def normalized(text: str) -> str:
    """Returns ``text`` as ``ast.unparse`` writes it: equal exactly when the ASTs are."""
    return ast.unparse(ast.parse(text))


def _file_name(form: Form, kind: str) -> str:
    return f"row_{FORMS.index(form):02d}_{kind}"


# --- the rewrite itself -------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_each_form_is_rewritten_as_specified(form: Form) -> None:
    """The plain output has the expected statements (as an AST) and keeps every comment."""
    result = migrated(form.id, False)
    expected_status = "unchanged" if form.after == form.before else "changed"
    assert (result.status, result.reason) == (expected_status, "")
    assert normalized(result.text) == normalized(form.after)
    assert comments(result.text) == comments(form.after)
    if form.exact:
        assert result.text == form.after


@pytest.mark.parametrize("form", EXACT_COMPAT, ids=[form.id for form in EXACT_COMPAT])
def test_compat_writes_a_fallback_mypy_does_not_see(form: Form) -> None:
    """A plain import row's --compat output is exactly the if TYPE_CHECKING / try form."""
    assert output(form, "compat") == form.compat


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_compat_output_keeps_every_comment_of_the_input(form: Form) -> None:
    """No comment is lost to the try/except (``# noqa``, ``# type: ignore``, name comments)."""
    kept = comments(output(form, "compat"))
    assert [comment for comment in comments(form.before) if comment not in kept] == []


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_migrating_an_output_again_changes_nothing(form: Form, variant: str) -> None:
    """An output is a fixed point: migrating it again reports "unchanged"."""
    once = output(form, variant)
    again = _migrate(once, form, compat=variant == "compat")
    assert (again.status, again.text) == ("unchanged", once)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_no_fixable_use_is_left_behind(form: Form, variant: str) -> None:
    """The scanner finds no AUX501 in an output; a star import is still reported AUX502."""
    findings = scan_source(output(form, variant), moves=form.moves, module=form.module)
    codes = sorted({finding.code for finding in findings})
    assert codes == (["AUX502"] if "import *" in form.before else [])


# --- ruff is the oracle for layout ---------------------------------------------------------


@pytest.fixture(scope="module")
def ruff_codes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Returns {file stem: ruff codes} for every input, expectation and output, in one run."""
    if not RUFF.exists():
        pytest.skip("ruff is not installed next to the interpreter")
    folder = tmp_path_factory.mktemp("ruff")
    texts: dict[str, str] = {}
    for form in FORMS:
        texts[_file_name(form, "input")] = form.before
        texts[_file_name(form, "after")] = form.after
        if form.compat is not None:
            texts[_file_name(form, "compat_after")] = form.compat
        for variant in VARIANTS:
            texts[_file_name(form, variant)] = output(form, variant)
    for stem, text in texts.items():
        (folder / f"{stem}.py").write_text(text, encoding="utf-8")
    completed = subprocess.run(
        [str(RUFF), "check", "--isolated", "--no-cache", "--select", RUFF_SELECT,
         "--output-format", "json", "--exit-zero", "."],
        cwd=folder, capture_output=True, text=True, check=True,
    )
    codes: dict[str, set[str]] = {stem: set() for stem in texts}
    for finding in json.loads(completed.stdout):
        codes[Path(finding["filename"]).stem].add(finding["code"])
    return codes


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_expected_texts_pass_ruff(form: Form, ruff_codes: dict[str, set[str]]) -> None:
    """The table's own expectations are sorted and formatted as ruff's isort writes them."""
    kinds = ["after"] + (["compat_after"] if form.compat is not None else [])
    assert {kind: ruff_codes[_file_name(form, kind)] for kind in kinds} == {
        kind: set() for kind in kinds}


CLEAN = [form for form in FORMS if form.ruff_clean]


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_the_table_says_truly_which_inputs_ruff_accepts(
    form: Form, ruff_codes: dict[str, set[str]]
) -> None:
    """A row marked ruff-clean is clean, and a row marked otherwise is not."""
    assert (ruff_codes[_file_name(form, "input")] == set()) is form.ruff_clean


@pytest.mark.parametrize("form", CLEAN, ids=[form.id for form in CLEAN])
def test_plain_output_passes_ruff_when_the_input_did(
    form: Form, ruff_codes: dict[str, set[str]]
) -> None:
    """A file clean under ruff's I, F401, F811 and F821 stays clean after the rewrite."""
    assert ruff_codes[_file_name(form, "plain")] == set()


@pytest.mark.parametrize("form", CLEAN, ids=[form.id for form in CLEAN])
def test_compat_output_keeps_imports_sorted(
    form: Form, ruff_codes: dict[str, set[str]]
) -> None:
    """A --compat output of a ruff-clean file still passes ruff's import sorting, and writes
    no ``import a.b as b``."""
    assert ruff_codes[_file_name(form, "compat")] & {"I001", "F401", "F811", "PLR0402"} == set()


# --- behaviour in fake SGLang layouts -------------------------------------------------------

COMMON_TREE = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/foo/__init__.py": "",
    "sglang/srt/sampling/__init__.py": "",
    "sglang/srt/managers/__init__.py": "",
    "sglang/srt/managers/schedule_batch.py": "class ScheduleBatch: pass\n",
    "sglang/srt/utils.py": "def get_bool_env_var(name): return False\n",
    "mylib/__init__.py": "",
}
LAYOUTS = {
    "old": {
        **COMMON_TREE,
        "sglang/srt/sampling/sampling_observer.py": MOVED_CLASSES
        + "class SamplingObserver: pass\n",
        "mylib/legacy.py": "class A: pass\nclass B: pass\n",
    },
    "new": {
        **COMMON_TREE,
        "sglang/srt/sampling/sampling_observer.py": "class SamplingObserver: pass\n",
        "sglang/srt/managers/auxiliary_output.py": MOVED_CLASSES,
        "mylib/legacy.py": "",
        "mylib/a.py": "class A: pass\n",
        "mylib/b.py": "class B: pass\n",
    },
}

# Runs each named module as __main__ (so rows' `if __name__ == "__main__":` blocks run and
# patches are entered) and prints {module: "ok" or the error}.
DRIVER = """\
import json, runpy, sys
import sglang
results = {"sglang": sglang.__file__}
for name in sys.argv[1:]:
    try:
        runpy.run_module(name, run_name="__main__")
    except BaseException as exc:
        results[name] = f"{type(exc).__name__}: {exc}"
    else:
        results[name] = "ok"
print(json.dumps(results))
"""


def _module_of(form: Form, kind: str) -> str:
    stem = _file_name(form, kind)
    return f"sglang.srt.foo.{stem}" if form.relative else stem


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _runs(layout: str) -> Iterator[tuple[Form, str, str]]:
    """Yields (row, kind, text) for everything that runs in ``layout``."""
    for form in FORMS:
        if layout == "old":
            yield form, "input", form.before
        else:
            yield form, "plain", output(form, "plain")
        yield form, "compat", output(form, "compat")


@pytest.fixture(scope="module")
def run_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """Returns {layout: {module: outcome}}, each layout's modules run in one subprocess."""
    results = {}
    for layout, files in LAYOUTS.items():
        root = tmp_path_factory.mktemp(f"sglang-{layout}")
        rows = {}
        for form, kind, text in _runs(layout):
            folder = "sglang/srt/foo/" if form.relative else ""
            rows[f"{folder}{_file_name(form, kind)}.py"] = text
        _write_tree(root, {**files, **rows})
        env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
        modules = [_module_of(form, kind) for form, kind, _ in _runs(layout)]
        completed = subprocess.run([sys.executable, "-c", DRIVER, *modules], cwd=root, env=env,
                                   capture_output=True, text=True, check=True, timeout=120)
        results[layout] = json.loads(completed.stdout.splitlines()[-1])
        assert Path(results[layout]["sglang"]).is_relative_to(root)
    return results


OLD_LAYOUT = [form for form in FORMS if form.runs_on_old]
"""Rows whose input runs before the move (the others already import the new module)."""


@pytest.mark.parametrize("form", OLD_LAYOUT, ids=[form.id for form in OLD_LAYOUT])
def test_input_runs_in_the_old_layout(
    form: Form, run_results: dict[str, dict[str, str]]
) -> None:
    """Each row's input is a working program against SGLang before the move."""
    assert run_results["old"][_module_of(form, "input")] == "ok"


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_plain_output_runs_in_the_new_layout(
    form: Form, run_results: dict[str, dict[str, str]]
) -> None:
    """The rewritten file imports, resolves its moved names and patches its targets."""
    assert run_results["new"][_module_of(form, "plain")] == "ok"


@pytest.mark.parametrize(("form", "layout"), [
    *((form, "old") for form in OLD_LAYOUT), *((form, "new") for form in FORMS)],
    ids=[*(f"{form.id}-old" for form in OLD_LAYOUT), *(f"{form.id}-new" for form in FORMS)])
def test_compat_output_runs_in_both_layouts(
    form: Form, layout: str, run_results: dict[str, dict[str, str]]
) -> None:
    """The --compat file works whether the names live at their old or their new home."""
    assert run_results[layout][_module_of(form, "compat")] == "ok"


def test_the_layouts_tell_the_old_home_from_the_new() -> None:
    """The fake trees differ where SGLang 0.5.20 moved the names (so the runs prove something)."""
    assert "CommittedTokens" not in LAYOUTS["new"]["sglang/srt/sampling/sampling_observer.py"]
    assert "sglang/srt/managers/auxiliary_output.py" not in LAYOUTS["old"]


# --- mypy against the shipped stubs ---------------------------------------------------------

TYPED = [form for form in FORMS if form.typed and not form.relative]
# The new layout of mylib, for mypy (the SGLang stubs already describe the new layout).
MYLIB_TYPED = {
    "mylib/__init__.py": "",
    "mylib/legacy.py": "",
    "mylib/a.py": "class A: ...\n",
    "mylib/b.py": "class B: ...\n",
}


@pytest.fixture(scope="module")
def mypy_codes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Returns {file stem: mypy error codes} of every typed output, from one mypy --strict run."""
    root = tmp_path_factory.mktemp("mypy")
    lib = root / "lib"
    _write_tree(lib, MYLIB_TYPED)
    cases = root / "cases"
    stems = [_file_name(form, variant) for form in TYPED for variant in VARIANTS]
    _write_tree(cases, {f"{_file_name(form, variant)}.py": output(form, variant)
                        for form in TYPED for variant in VARIANTS})
    (root / "mypy.ini").write_text("[mypy]\n")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["MYPYPATH"] = os.pathsep.join([str(TORCH_STANDIN), str(lib)])
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
         "--python-version", "3.10", "--config-file", str(root / "mypy.ini"),
         "--show-error-codes", "--no-pretty", *(f"{stem}.py" for stem in stems)],
        cwd=cases, env=env, capture_output=True, text=True, check=False, timeout=300,
    )
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr
    codes: dict[str, set[str]] = {stem: set() for stem in stems}
    for line in completed.stdout.splitlines():
        if (match := MYPY_ERROR.match(line)) and Path(match["path"]).stem in codes:
            codes[Path(match["path"]).stem].add(match["code"])
    return codes


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("form", TYPED, ids=[form.id for form in TYPED])
def test_output_type_checks_against_the_new_layout(
    form: Form, variant: str, mypy_codes: dict[str, set[str]]
) -> None:
    """mypy --strict with the stubs finds no missing attribute and no redefinition."""
    assert mypy_codes[_file_name(form, variant)] & FORBIDDEN_MYPY_CODES == set()


def test_mypy_sees_the_old_home_of_a_moved_name_as_an_error(tmp_path: Path) -> None:
    """The stubs make an unmigrated import an attr-defined error, so the mypy check bites."""
    (tmp_path / "case.py").write_text(f"from {OLD} import CommittedTokens\n")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["MYPYPATH"] = str(TORCH_STANDIN)
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull,
         "--config-file", os.devnull, "--show-error-codes", "case.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=120,
    )
    assert "[attr-defined]" in completed.stdout


# --- the same result whatever the hash seed -------------------------------------------------

SEEDED = """\
import json, sys
from auxcheck.migrate.moves import Move, builtin_moves
from auxcheck.migrate.transform import migrate_source
user = [Move("mylib.legacy", "mylib.a", ("A",)), Move("mylib.legacy", "mylib.b", ("B",))]
table = builtin_moves().merged(user, source="test")
sources = json.load(sys.stdin)
print(json.dumps([[migrate_source(s, moves=table, compat=c).text for c in (False, True)]
                  for s in sources]))
"""


@pytest.mark.slow
def test_multi_module_moves_give_the_same_output_under_any_hash_seed(tmp_path: Path) -> None:
    """The rows moving one module's names to two modules migrate identically for seeds 0-2."""
    sources = json.dumps([form.before for form in MULTI_MODULE])
    processes = [  # cwd away from the checkout, so auxcheck comes from sys.path as here
        subprocess.Popen([sys.executable, "-c", SEEDED], cwd=tmp_path, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONHASHSEED": str(seed)})
        for seed in (0, 1, 2)
    ]
    outputs = []
    for process in processes:
        stdout, stderr = process.communicate(sources, timeout=120)
        assert process.returncode == 0, stderr
        outputs.append(json.loads(stdout))
    here = [[output(form, variant) for variant in VARIANTS] for form in MULTI_MODULE]
    assert dict(enumerate(outputs)) == dict.fromkeys(range(3), here)
