"""Tests for the libcst codemod: before/after tables, files that must not change, --compat."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path
from textwrap import dedent

import pytest
from helpers.migration import MOVES
from helpers.paths import RUFF
from helpers.plugin_sources import NEW, OLD

from auxcheck.migrate.scan import scan_source
from auxcheck.migrate.transform import MigrateImportsCommand, migrate_source


def migrate(text: str, **options: object) -> str:
    """Returns ``text`` migrated with the built-in moves (dedented first)."""
    result = migrate_source(dedent(text), moves=MOVES, **options)  # type: ignore[arg-type]
    assert result.status in ("changed", "unchanged"), result.reason
    return result.text


CHANGES = {
    "plain from-import": (
        f"from {OLD} import CommittedTokens\n",
        f"from {NEW} import CommittedTokens\n",
    ),
    "alias kept": (
        f"from {OLD} import CommittedTokens as CT\n",
        f"from {NEW} import CommittedTokens as CT\n",
    ),
    "explicit re-export alias kept": (
        f"from {OLD} import CommittedTokens as CommittedTokens\n",
        f"from {NEW} import CommittedTokens as CommittedTokens\n",
    ),
    "mixed statement split, new import sorted first": (
        f"""\
        import os

        from sglang.srt.managers.schedule_batch import ScheduleBatch
        from {OLD} import CommittedTokens, SamplingObserver
        from sglang.srt.utils import get_bool_env_var

        x = 1
        """,
        f"""\
        import os

        from {NEW} import CommittedTokens
        from sglang.srt.managers.schedule_batch import ScheduleBatch
        from {OLD} import SamplingObserver
        from sglang.srt.utils import get_bool_env_var

        x = 1
        """,
    ),
    "several moved names in one statement, wrapped past 88 columns": (
        f"from {OLD} import HostAuxiliaryOutput, DeviceAuxiliaryOutput, CommittedTokens\n",
        f"""\
        from {NEW} import (
            CommittedTokens,
            DeviceAuxiliaryOutput,
            HostAuxiliaryOutput,
        )
        """,
    ),
    "one name left of a parenthesised statement goes on one line": (
        f"""\
        from {OLD} import (
            CommittedTokens,
            SamplingObserver,
        )
        """,
        f"""\
        from {NEW} import CommittedTokens
        from {OLD} import SamplingObserver
        """,
    ),
    "parenthesised statement keeps its magic trailing comma": (
        f"""\
        from {OLD} import (
            CommittedTokens,
            SamplingObserver,
            get_observer,
        )
        """,
        f"""\
        from {NEW} import CommittedTokens
        from {OLD} import (
            SamplingObserver,
            get_observer,
        )
        """,
    ),
    "inside TYPE_CHECKING": (
        f"""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from {OLD} import DeviceAuxiliaryOutput
        """,
        f"""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from {NEW} import DeviceAuxiliaryOutput
        """,
    ),
    "inside a function and a class": (
        f"""\
        def f():
            from {OLD} import CommittedTokens
            return CommittedTokens


        class C:
            from {OLD} import HostAuxiliaryOutput as H
        """,
        f"""\
        def f():
            from {NEW} import CommittedTokens
            return CommittedTokens


        class C:
            from {NEW} import HostAuxiliaryOutput as H
        """,
    ),
    "inside try/except ImportError": (
        f"""\
        try:
            from {OLD} import CommittedTokens
        except ImportError:
            CommittedTokens = None
        """,
        f"""\
        try:
            from {NEW} import CommittedTokens
        except ImportError:
            CommittedTokens = None
        """,
    ),
    "import old as m used only for moved names keeps its alias": (
        f"""\
        import {OLD} as so

        x = so.CommittedTokens
        """,
        f"""\
        import {NEW} as so

        x = so.CommittedTokens
        """,
    ),
    "import old as m also used for a staying name gets a from-import of the new module": (
        f"""\
        import {OLD} as so

        x = so.CommittedTokens, so.SamplingObserver
        """,
        f"""\
        import {OLD} as so
        from sglang.srt.managers import auxiliary_output

        x = auxiliary_output.CommittedTokens, so.SamplingObserver
        """,
    ),
    "import old with dotted uses, staying name keeps the import": (
        f"""\
        import {OLD}

        a = {OLD}.DeviceAuxiliaryOutput
        b = {OLD}.SamplingObserver
        """,
        f"""\
        import {NEW}
        import {OLD}

        a = {NEW}.DeviceAuxiliaryOutput
        b = {OLD}.SamplingObserver
        """,
    ),
    "from pkg import module with attribute uses": (
        """\
        from sglang.srt.sampling import sampling_observer

        def f(out: sampling_observer.HostAuxiliaryOutput) -> None: ...
        """,
        """\
        from sglang.srt.managers import auxiliary_output

        def f(out: auxiliary_output.HostAuxiliaryOutput) -> None: ...
        """,
    ),
    "mock.patch dotted target": (
        f'mock.patch("{OLD}.CommittedTokens")\n',
        f'mock.patch("{NEW}.CommittedTokens")\n',
    ),
    "hook registry module:attr target": (
        f"hooks = [{{'hook_factory': '{OLD}:HostAuxiliaryOutput'}}]\n",
        f"hooks = [{{'hook_factory': '{NEW}:HostAuxiliaryOutput'}}]\n",
    ),
    "string annotation through a module alias": (
        f"""\
        import {OLD} as so

        def f(x: "so.CommittedTokens") -> "list[so.CommittedTokens]": ...
        """,
        f"""\
        import {NEW} as so

        def f(x: "so.CommittedTokens") -> "list[so.CommittedTokens]": ...
        """,
    ),
    "string annotation through a module alias also used for a staying name": (
        f"""\
        import {OLD} as so

        def f(x: "so.CommittedTokens") -> "so.SamplingObserver": ...
        """,
        f"""\
        import {OLD} as so
        from sglang.srt.managers import auxiliary_output

        def f(x: "auxiliary_output.CommittedTokens") -> "so.SamplingObserver": ...
        """,
    ),
    "__all__ entries stay valid": (
        f"""\
        from {OLD} import CommittedTokens

        __all__ = ["CommittedTokens"]
        """,
        f"""\
        from {NEW} import CommittedTokens

        __all__ = ["CommittedTokens"]
        """,
    ),
    "star import gains explicit imports of the names it uses": (
        f"""\
        from {OLD} import *

        x = CommittedTokens
        """,
        f"""\
        from {NEW} import CommittedTokens
        from {OLD} import *

        x = CommittedTokens
        """,
    ),
    "merged into an existing import of the new module": (
        f"""\
        from {NEW} import HostAuxiliaryOutput
        from {OLD} import CommittedTokens
        """,
        f"""\
        from {NEW} import CommittedTokens, HostAuxiliaryOutput
        """,
    ),
    "never duplicated when already imported from the new module": (
        f"""\
        from {NEW} import CommittedTokens
        from {OLD} import CommittedTokens, SamplingObserver
        """,
        f"""\
        from {NEW} import CommittedTokens
        from {OLD} import SamplingObserver
        """,
    ),
    "comment inside a split statement kept, closing parenthesis in place": (
        f"""\
        from {OLD} import (
            SamplingObserver,  # stays
            CommittedTokens,
        )
        """,
        f"""\
        from {NEW} import CommittedTokens
        from {OLD} import (
            SamplingObserver,  # stays
        )
        """,
    ),
    "comments kept, section comment stays on top": (
        f"""\
        # third party
        from {OLD} import CommittedTokens  # noqa: F401
        from zzz import z  # keep me
        """,
        f"""\
        # third party
        from {NEW} import CommittedTokens  # noqa: F401
        from zzz import z  # keep me
        """,
    ),
    "import sharing a line with another statement": (
        f"""\
        import os; from {OLD} import CommittedTokens, SamplingObserver  # c
        x = CommittedTokens, SamplingObserver, os
        """,
        f"""\
        import os
        from {NEW} import CommittedTokens
        from {OLD} import SamplingObserver  # c
        x = CommittedTokens, SamplingObserver, os
        """,
    ),
    "module alias imported on a shared line, its new import defined": (
        f"""\
        import {OLD} as so; import os
        x = so.CommittedTokens, os
        """,
        f"""\
        import os
        import {NEW} as so
        x = so.CommittedTokens, os
        """,
    ),
    "import in a one-line suite": (
        f"""\
        if True: import {OLD} as so  # type: ignore
        x = so.CommittedTokens
        """,
        f"""\
        if True:
            import {NEW} as so  # type: ignore
        x = so.CommittedTokens
        """,
    ),
    "new module alias avoids a parameter and a def of that name": (
        """\
        from sglang.srt.sampling import sampling_observer


        def f(auxiliary_output=None):
            return sampling_observer.CommittedTokens


        def auxiliary_output_(): ...
        """,
        """\
        from sglang.srt.managers import auxiliary_output as auxiliary_output__


        def f(auxiliary_output=None):
            return auxiliary_output__.CommittedTokens


        def auxiliary_output_(): ...
        """,
    ),
    "merged into a commented parenthesised import, indentation and comments kept": (
        f"""\
        from {NEW} import (  # ours
            CommittedTokens,  # first
            HostAuxiliaryOutput,  # last
        )
        from {OLD} import DeviceAuxiliaryOutput, HostAuxiliaryOutput as H
        """,
        f"""\
        from {NEW} import (  # ours
            CommittedTokens,  # first
            DeviceAuxiliaryOutput,
            HostAuxiliaryOutput,  # last
        )
        from {NEW} import HostAuxiliaryOutput as H
        """,
    ),
    "new module alias not reused when the name is also bound to something else": (
        """\
        from sglang.srt.managers import auxiliary_output as ao
        from sglang.srt.sampling import sampling_observer

        auxiliary_output = 5
        x = sampling_observer.CommittedTokens, ao, auxiliary_output
        """,
        """\
        from sglang.srt.managers import auxiliary_output as ao
        from sglang.srt.managers import auxiliary_output as auxiliary_output_

        auxiliary_output = 5
        x = auxiliary_output_.CommittedTokens, ao, auxiliary_output
        """,
    ),
    "not merged into an import of the new module that runs later": (
        f"""\
        from {OLD} import CommittedTokens, HostAuxiliaryOutput
        x = CommittedTokens
        from {NEW} import HostAuxiliaryOutput
        """,
        f"""\
        from {NEW} import CommittedTokens, HostAuxiliaryOutput
        x = CommittedTokens
        from {NEW} import HostAuxiliaryOutput
        """,
    ),
    "a moved name's own comment goes with it": (
        f"""\
        from {OLD} import (
            SamplingObserver,  # stays
            CommittedTokens as CT,  # noqa: F401
            HostAuxiliaryOutput,  # second
        )
        """,
        f"""\
        from {NEW} import CommittedTokens as CT  # noqa: F401
        from {NEW} import HostAuxiliaryOutput  # second
        from {OLD} import (
            SamplingObserver,  # stays
        )
        """,
    ),
    "old module replaced by the new one imported just after it, not duplicated": (
        """\
        from sglang.srt.sampling import sampling_observer
        from sglang.srt.managers import auxiliary_output
        x = sampling_observer.CommittedTokens, auxiliary_output.HostAuxiliaryOutput
        """,
        """\
        from sglang.srt.managers import auxiliary_output
        x = auxiliary_output.CommittedTokens, auxiliary_output.HostAuxiliaryOutput
        """,
    ),
    "statement moving whole keeps the comments inside its parentheses": (
        f"""\
        from {OLD} import (  # head
            CommittedTokens,  # one
            HostAuxiliaryOutput as H,  # two
        )
        """,
        f"""\
        from {NEW} import (  # head
            CommittedTokens,  # one
            HostAuxiliaryOutput as H,  # two
        )
        """,
    ),
    "star import gains the moved names __all__ exports": (
        f"""\
        from {OLD} import *

        __all__ = ["DeviceAuxiliaryOutput", "SamplingObserver"]
        """,
        f"""\
        from {NEW} import DeviceAuxiliaryOutput
        from {OLD} import *

        __all__ = ["DeviceAuxiliaryOutput", "SamplingObserver"]
        """,
    ),
}

UNCHANGED = {
    "names that did not move": f"from {OLD} import SamplingObserver\n",
    "the new module already": f"from {NEW} import CommittedTokens\n",
    "a similarly named module": "from sglang.srt.sampling.sampling_observer_pp import x\n",
    "new-then-old compat fallback": f"""\
        try:
            from {NEW} import CommittedTokens
        except ImportError:
            from {OLD} import CommittedTokens
        """,
    "an attribute of a staying name": f"import {OLD} as so\nx = so.SamplingObserver\n",
    "a string naming only the module": f'importlib.import_module("{OLD}")\n',
    "a prose mention of the bare name": '"""CommittedTokens moved; see sampling_observer."""\n',
    "an unrelated module alias attribute": "import os as so\nx = so.CommittedTokens\n",
    "a module alias a function rebinds (AUX502, for a human)": f"""\
        import {OLD} as so


        def g(so):
            return so.CommittedTokens
        """,
    "an import of a staying name sharing a line": f"import os; from {OLD} import SamplingObserver\n",
}


@pytest.mark.parametrize(("before", "after"), CHANGES.values(), ids=CHANGES.keys())
def test_each_form_of_use_is_rewritten(before: str, after: str) -> None:
    """Every supported form of an old-module use becomes its new-module equivalent."""
    assert migrate(before) == dedent(after)


@pytest.mark.parametrize("source", UNCHANGED.values(), ids=UNCHANGED.keys())
def test_files_without_moved_uses_are_not_changed(source: str) -> None:
    """Files that use no moved name through an old module come back identical."""
    assert migrate(source) == dedent(source)


@pytest.mark.parametrize(("before", "after"), CHANGES.values(), ids=CHANGES.keys())
def test_running_twice_changes_nothing_more(before: str, after: str) -> None:
    """A migrated file is a fixed point of the migration."""
    once = migrate(before)
    assert migrate(once) == once


@pytest.mark.parametrize("compat", [False, True], ids=["replace", "compat"])
@pytest.mark.parametrize("before", [b for b, _ in CHANGES.values()], ids=CHANGES.keys())
def test_output_parses_and_leaves_only_star_imports_behind(before: str, compat: bool) -> None:
    """The result parses and the scanner finds no fixable use (AUX501) left."""
    after = migrate(before, compat=compat)
    ast.parse(after)
    assert [f.code for f in scan_source(after, moves=MOVES) if f.code == "AUX501"] == []


COMPAT = {
    "top-level import block": (
        f"""\
        import os

        from {OLD} import CommittedTokens, SamplingObserver

        x = 1
        """,
        f"""\
        import os
        from typing import TYPE_CHECKING

        from {OLD} import SamplingObserver

        if TYPE_CHECKING:
            from {NEW} import CommittedTokens
        else:
            try:
                from {NEW} import CommittedTokens
            except ImportError:
                from {OLD} import CommittedTokens

        x = 1
        """,
    ),
    "module alias": (
        f"""\
        import {OLD} as so

        x = so.CommittedTokens
        """,
        f"""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            import {NEW} as so
        else:
            try:
                import {NEW} as so
            except ImportError:
                import {OLD} as so

        x = so.CommittedTokens
        """,
    ),
    "module imported from its package, the old one standing in for the new": (
        """\
        from sglang.srt.sampling import sampling_observer

        x = sampling_observer.CommittedTokens
        """,
        """\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from sglang.srt.managers import auxiliary_output
        else:
            try:
                from sglang.srt.managers import auxiliary_output
            except ImportError:
                from sglang.srt.sampling import sampling_observer as auxiliary_output

        x = auxiliary_output.CommittedTokens
        """,
    ),
    "wrapped names inside a function": (
        f"""\
        def f():
            from {OLD} import CommittedTokens as CT, HostAuxiliaryOutput, DeviceAuxiliaryOutput
        """,
        f"""\
        from typing import TYPE_CHECKING


        def f():
            if TYPE_CHECKING:
                from {NEW} import CommittedTokens as CT
                from {NEW} import (
                    DeviceAuxiliaryOutput,
                    HostAuxiliaryOutput,
                )
            else:
                try:
                    from {NEW} import CommittedTokens as CT
                    from {NEW} import (
                        DeviceAuxiliaryOutput,
                        HostAuxiliaryOutput,
                    )
                except ImportError:
                    from {OLD} import CommittedTokens as CT
                    from {OLD} import (
                        DeviceAuxiliaryOutput,
                        HostAuxiliaryOutput,
                    )
        """,
    ),
    "an import under TYPE_CHECKING is rewritten plainly, its noqa kept": (
        f"""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from {OLD} import CommittedTokens  # noqa: F401
        """,
        f"""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from {NEW} import CommittedTokens  # noqa: F401
        """,
    ),
    "a mock.patch target names the module found at import time": (
        f"""\
        from unittest import mock


        @mock.patch("{OLD}.CommittedTokens")
        def test(m): ...
        """,
        f"""\
        from unittest import mock

        try:
            __import__("{NEW}")
            _AUXILIARY_OUTPUT_MODULE = "{NEW}"
        except ImportError:
            _AUXILIARY_OUTPUT_MODULE = "{OLD}"


        @mock.patch(f"{{_AUXILIARY_OUTPUT_MODULE}}.CommittedTokens")
        def test(m): ...
        """,
    ),
}


@pytest.mark.parametrize(("before", "after"), COMPAT.values(), ids=COMPAT.keys())
def test_compat_writes_a_new_then_old_fallback(before: str, after: str) -> None:
    """--compat keeps older SGLang working with try: new / except ImportError: old."""
    once = migrate(before, compat=True)
    assert once == dedent(after)
    assert migrate(once, compat=True) == once


def _fake_sglang(root: Path) -> Path:
    srt = root / "sglang" / "srt"
    for folder in ("sampling", "managers"):
        (srt / folder).mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("")
    return srt


RELATIVE = {
    "sibling package": (
        "managers/scheduler.py",
        "from ..sampling.sampling_observer import CommittedTokens, SamplingObserver\n",
        ("from ..sampling.sampling_observer import SamplingObserver\n"
        "from .auxiliary_output import CommittedTokens\n"),
    ),
    "same package as the old module": (
        "sampling/penalty.py",
        "from .sampling_observer import HostAuxiliaryOutput\n",
        "from ..managers.auxiliary_output import HostAuxiliaryOutput\n",
    ),
    "module imported relatively": (
        "sampling/penalty.py",
        "from . import sampling_observer\n\nx = sampling_observer.CommittedTokens\n",
        "from ..managers import auxiliary_output\n\nx = auxiliary_output.CommittedTokens\n",
    ),
}


@pytest.mark.parametrize(("where", "before", "after"), RELATIVE.values(), ids=RELATIVE.keys())
def test_relative_imports_inside_the_owning_package_stay_relative(
    tmp_path: Path, where: str, before: str, after: str
) -> None:
    """A relative import of the old module becomes the relative import of the new one."""
    from auxcheck._core.python_files import module_name_of

    path = _fake_sglang(tmp_path) / where
    module = module_name_of(str(path), anchors={"sglang"})
    assert migrate_source(before, moves=MOVES, module=module).text == after


@pytest.mark.parametrize("module", [OLD, NEW], ids=["old module", "new module"])
def test_modules_that_define_the_names_are_never_rewritten(module: str) -> None:
    """The defining modules are skipped even when they mention the old module."""
    text = f"from {OLD} import CommittedTokens\n"
    result = migrate_source(text, moves=MOVES, module=module)
    assert (result.status, result.text) == ("skipped", text)


def test_unparsable_text_fails_with_the_reason_and_keeps_the_text() -> None:
    """A syntax error is a failure naming the line, never an exception."""
    text = f"from {OLD} import (CommittedTokens\n"
    result = migrate_source(text, moves=MOVES)
    assert (result.status, result.text) == ("failed", text)
    assert result.reason.startswith("does not parse:") and "line 1" in result.reason


def test_command_class_describes_itself() -> None:
    """The codemod class carries a DESCRIPTION, as libcst commands do."""
    assert "new module" in MigrateImportsCommand.DESCRIPTION


def test_ruff_import_sorting_still_passes_after_migration(tmp_path: Path) -> None:
    """Files that passed `ruff check --select I` still pass after migration (and --compat)."""
    if not RUFF.exists():
        pytest.skip("ruff is not installed next to the interpreter")
    befores = {k: dedent(b) for k, (b, _) in {**CHANGES, **COMPAT}.items()}
    sorted_ok = _ruff_clean(tmp_path / "before", befores)
    assert sorted_ok, "no fixture passes ruff's import sorting to begin with"
    afters = {f"{k}-{c}": migrate(befores[k], compat=c) for k in sorted_ok
              for c in (False, True)}
    assert _ruff_clean(tmp_path / "after", afters) == set(afters)


def _ruff_clean(folder: Path, files: dict[str, str]) -> set[str]:
    folder.mkdir()
    names = {f"f{i}.py": key for i, key in enumerate(files)}
    for name, key in names.items():
        (folder / name).write_text(files[key])
    out = subprocess.run([str(RUFF), "check", "--isolated", "--select", "I",
                          "--output-format", "concise", "."], cwd=folder,
                         capture_output=True, check=False, text=True).stdout
    return {key for name, key in names.items() if f"{name}:" not in out}


def test_a_module_alias_rebound_in_a_function_is_reported_for_a_human() -> None:
    """``def g(so): so.X`` is not the module: the alias is left alone and reported AUX502."""
    source = f"import {OLD} as so\n\n\ndef g(so):\n    return so.CommittedTokens\n"
    assert [(f.code, f.location) for f in scan_source(source, moves=MOVES)] == [
        ("AUX502", "<string>:1:1")]
