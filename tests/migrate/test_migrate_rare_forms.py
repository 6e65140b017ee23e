"""A table-driven specification of the rewrite over rarer valid forms: the user's own
new-then-old fallbacks, where the ``TYPE_CHECKING`` import goes, which strings are type
expressions, what else may bind a module alias, comments inside parentheses, and uses the scan
must report rather than miss (the common forms are in ``test_migrate_forms.py``).

Every output is migrated through :func:`migrate_source`, run on fake SGLang layouts (old,
new, absent) in one subprocess per layout, and checked by ruff and by mypy in one run each.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from textwrap import dedent
from typing import NamedTuple

import pytest
from helpers.migration import MOVES, codes, migrate
from helpers.paths import RUFF, TORCH_STANDIN
from helpers.plugin_sources import MOVED_CLASSES, NEW, OLD
from libcst.codemod import TransformSuccess

from auxcheck.migrate.transform import migrate_source
from auxcheck.migrate.transform.codemod import finish

VARIANTS = ("plain", "compat")


def src(text: str) -> str:
    """Returns ``text`` dedented, with ``$OLD`` and ``$NEW`` spelled out."""
    return dedent(text).replace("$OLD", OLD).replace("$NEW", NEW)




class Case(NamedTuple):
    """A valid input and what migrate writes for it, plainly and with --compat; ``checks``
    names the oracles the row is there for besides the text: ``runs`` (on the fake
    layouts), ``ruff``, ``mypy`` (nothing new), ``annotations`` (mypy resolves every
    rewritten type string), ``comments``."""

    before: str
    plain: str
    compat: str
    checks: frozenset[str] = frozenset()

    def output(self, variant: str) -> str:
        """Returns the expected output of ``variant`` (``plain`` or ``compat``)."""
        return self.plain if variant == "plain" else self.compat


CASES = {
    "a user's fallback importing an old name in its body": Case(
        src("""\
        try:
            from $NEW import CommittedTokens
            from $OLD import HostAuxiliaryOutput
        except ImportError:
            from $OLD import CommittedTokens, HostAuxiliaryOutput

        x = (CommittedTokens, HostAuxiliaryOutput)
        """),
        src("""\
        try:
            from $NEW import (
                CommittedTokens,
                HostAuxiliaryOutput,
            )
        except ImportError:
            from $OLD import CommittedTokens, HostAuxiliaryOutput

        x = (CommittedTokens, HostAuxiliaryOutput)
        """),
        src("""\
        from typing import TYPE_CHECKING

        try:
            from $NEW import CommittedTokens

            if TYPE_CHECKING:
                from $NEW import HostAuxiliaryOutput
            else:
                try:
                    from $NEW import HostAuxiliaryOutput
                except ImportError:
                    from $OLD import HostAuxiliaryOutput
        except ImportError:
            from $OLD import CommittedTokens, HostAuxiliaryOutput

        x = (CommittedTokens, HostAuxiliaryOutput)
        """),
        frozenset({'runs'})),
    "a user's fallback with except star": Case(
        src("""\
        import $OLD as so

        try:
            from $NEW import CommittedTokens
        except* ImportError:
            from $OLD import CommittedTokens

        x = (CommittedTokens, so.HostAuxiliaryOutput, so.SamplingObserver)
        """),
        src("""\
        import $OLD as so
        from sglang.srt.managers import auxiliary_output

        try:
            from $NEW import CommittedTokens
        except* ImportError:
            from $OLD import CommittedTokens

        x = (CommittedTokens, auxiliary_output.HostAuxiliaryOutput, so.SamplingObserver)
        """),
        src("""\
        from typing import TYPE_CHECKING

        import $OLD as so

        if TYPE_CHECKING:
            from sglang.srt.managers import auxiliary_output
        else:
            try:
                from sglang.srt.managers import auxiliary_output
            except ImportError:
                import $OLD as auxiliary_output

        try:
            from $NEW import CommittedTokens
        except* ImportError:
            from $OLD import CommittedTokens

        x = (CommittedTokens, auxiliary_output.HostAuxiliaryOutput, so.SamplingObserver)
        """),
        frozenset()),
    "a user's fallback on a line with a semicolon": Case(
        src("""\
        import $OLD as so

        try:
            import os; from $NEW import CommittedTokens
        except ImportError:
            from $OLD import CommittedTokens

        x = (os, CommittedTokens, so.HostAuxiliaryOutput, so.SamplingObserver)
        """),
        src("""\
        import $OLD as so
        from sglang.srt.managers import auxiliary_output

        try:
            import os; from $NEW import CommittedTokens
        except ImportError:
            from $OLD import CommittedTokens

        x = (os, CommittedTokens, auxiliary_output.HostAuxiliaryOutput, so.SamplingObserver)
        """),
        src("""\
        from typing import TYPE_CHECKING

        import $OLD as so

        if TYPE_CHECKING:
            from sglang.srt.managers import auxiliary_output
        else:
            try:
                from sglang.srt.managers import auxiliary_output
            except ImportError:
                import $OLD as auxiliary_output

        try:
            import os; from $NEW import CommittedTokens
        except ImportError:
            from $OLD import CommittedTokens

        x = (os, CommittedTokens, auxiliary_output.HostAuxiliaryOutput, so.SamplingObserver)
        """),
        frozenset()),
    "a user's fallback whose finally names an old target": Case(
        src("""\
        try:
            from $NEW import CommittedTokens
        except ImportError:
            from $OLD import CommittedTokens
        finally:
            TARGET = "$OLD.HostAuxiliaryOutput"

        x = CommittedTokens
        """),
        src("""\
        try:
            from $NEW import CommittedTokens
        except ImportError:
            from $OLD import CommittedTokens
        finally:
            TARGET = "$NEW.HostAuxiliaryOutput"

        x = CommittedTokens
        """),
        src("""\
        try:
            __import__("$NEW")
            _AUXILIARY_OUTPUT_MODULE = "$NEW"
        except ImportError:
            _AUXILIARY_OUTPUT_MODULE = "$OLD"

        try:
            from $NEW import CommittedTokens
        except ImportError:
            from $OLD import CommittedTokens
        finally:
            TARGET = f"{_AUXILIARY_OUTPUT_MODULE}.HostAuxiliaryOutput"

        x = CommittedTokens
        """),
        frozenset()),
    "two fallback aliases": Case(
        src("""\
        try:
            import $OLD as so
        except ImportError:
            import my_fallback as so
        try:
            import $OLD as so2
        except ImportError:
            so2 = None

        x = so.CommittedTokens
        y = so.SamplingObserver
        z = so2 and so2.HostAuxiliaryOutput
        w = so2 and so2.SamplingObserver
        assert x is not None
        """),
        src("""\
        from typing import TYPE_CHECKING

        try:
            import $OLD as so
            from sglang.srt.managers import auxiliary_output
        except ImportError:
            import my_fallback as so
            if TYPE_CHECKING:
                from sglang.srt.managers import auxiliary_output
            else:
                auxiliary_output = so
        try:
            import $NEW as auxiliary_output_
            import $OLD as so2
        except ImportError:
            so2 = None
            if TYPE_CHECKING:
                import $NEW as auxiliary_output_
            else:
                auxiliary_output_ = so2

        x = auxiliary_output.CommittedTokens
        y = so.SamplingObserver
        z = so2 and auxiliary_output_.HostAuxiliaryOutput
        w = so2 and so2.SamplingObserver
        assert x is not None
        """),
        src("""\
        from typing import TYPE_CHECKING

        try:
            import $OLD as so

            if TYPE_CHECKING:
                from sglang.srt.managers import auxiliary_output
            else:
                try:
                    from sglang.srt.managers import auxiliary_output
                except ImportError:
                    import $OLD as auxiliary_output
        except ImportError:
            import my_fallback as so
            if TYPE_CHECKING:
                from sglang.srt.managers import auxiliary_output
            else:
                auxiliary_output = so
        try:
            import $OLD as so2

            if TYPE_CHECKING:
                import $NEW as auxiliary_output_
            else:
                try:
                    import $NEW as auxiliary_output_
                except ImportError:
                    import $OLD as auxiliary_output_
        except ImportError:
            so2 = None
            if TYPE_CHECKING:
                import $NEW as auxiliary_output_
            else:
                auxiliary_output_ = so2

        x = auxiliary_output.CommittedTokens
        y = so.SamplingObserver
        z = so2 and auxiliary_output_.HostAuxiliaryOutput
        w = so2 and so2.SamplingObserver
        assert x is not None
        """),
        frozenset({'runs'})),
    "TYPE_CHECKING bound to the module's own value": Case(
        src("""\
        TYPE_CHECKING = "mine"
        try:
            import $OLD as so
        except ImportError:
            import my_fallback as so

        x = so.CommittedTokens
        y = so.SamplingObserver
        assert TYPE_CHECKING == "mine"
        """),
        src("""\
        import typing

        TYPE_CHECKING = "mine"
        try:
            import $OLD as so
            from sglang.srt.managers import auxiliary_output
        except ImportError:
            import my_fallback as so
            if typing.TYPE_CHECKING:
                from sglang.srt.managers import auxiliary_output
            else:
                auxiliary_output = so

        x = auxiliary_output.CommittedTokens
        y = so.SamplingObserver
        assert TYPE_CHECKING == "mine"
        """),
        src("""\
        import typing

        TYPE_CHECKING = "mine"
        try:
            import $OLD as so

            if typing.TYPE_CHECKING:
                from sglang.srt.managers import auxiliary_output
            else:
                try:
                    from sglang.srt.managers import auxiliary_output
                except ImportError:
                    import $OLD as auxiliary_output
        except ImportError:
            import my_fallback as so
            if typing.TYPE_CHECKING:
                from sglang.srt.managers import auxiliary_output
            else:
                auxiliary_output = so

        x = auxiliary_output.CommittedTokens
        y = so.SamplingObserver
        assert TYPE_CHECKING == "mine"
        """),
        frozenset({'mypy', 'ruff', 'runs'})),
    "TYPE_CHECKING used before the next import block": Case(
        src("""\
        from $OLD import CommittedTokens

        import os

        x = (os, CommittedTokens)
        """),
        src("""\
        from $NEW import CommittedTokens

        import os

        x = (os, CommittedTokens)
        """),
        src("""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from $NEW import CommittedTokens
        else:
            try:
                from $NEW import CommittedTokens
            except ImportError:
                from $OLD import CommittedTokens

        import os

        x = (os, CommittedTokens)
        """),
        frozenset({'ruff', 'runs'})),
    "TYPE_CHECKING used first in an isort off region": Case(
        src("""\
        import zlib
        # isort: off
        import sys
        from $OLD import CommittedTokens, SamplingObserver
        import os
        # isort: on
        from $OLD import HostAuxiliaryOutput
        import abc
        x = (os, sys, zlib, abc, SamplingObserver, CommittedTokens, HostAuxiliaryOutput)
        """),
        src("""\
        import zlib
        # isort: off
        import sys
        from $OLD import SamplingObserver
        from $NEW import CommittedTokens
        import os
        # isort: on
        import abc
        from $NEW import HostAuxiliaryOutput
        x = (os, sys, zlib, abc, SamplingObserver, CommittedTokens, HostAuxiliaryOutput)
        """),
        src("""\
        import zlib
        from typing import TYPE_CHECKING
        # isort: off
        import sys
        from $OLD import SamplingObserver

        if TYPE_CHECKING:
            from $NEW import CommittedTokens
        else:
            try:
                from $NEW import CommittedTokens
            except ImportError:
                from $OLD import CommittedTokens
        import os
        # isort: on
        import abc

        if TYPE_CHECKING:
            from $NEW import HostAuxiliaryOutput
        else:
            try:
                from $NEW import HostAuxiliaryOutput
            except ImportError:
                from $OLD import HostAuxiliaryOutput
        x = (os, sys, zlib, abc, SamplingObserver, CommittedTokens, HostAuxiliaryOutput)
        """),
        frozenset({'ruff', 'runs'})),
    "TYPE_CHECKING used first between isort splits": Case(
        src("""\
        from $OLD import SamplingObserver
        # isort: split
        import zlib
        from $OLD import CommittedTokens
        # isort: split
        import abc
        x = (abc, zlib, SamplingObserver, CommittedTokens)
        """),
        src("""\
        from $OLD import SamplingObserver
        # isort: split
        import zlib
        from $NEW import CommittedTokens
        # isort: split
        import abc
        x = (abc, zlib, SamplingObserver, CommittedTokens)
        """),
        src("""\
        from $OLD import SamplingObserver
        # isort: split
        import zlib
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from $NEW import CommittedTokens
        else:
            try:
                from $NEW import CommittedTokens
            except ImportError:
                from $OLD import CommittedTokens
        # isort: split
        import abc
        x = (abc, zlib, SamplingObserver, CommittedTokens)
        """),
        frozenset({'ruff', 'runs'})),
    "TYPE_CHECKING used first after a skipped module import": Case(
        src("""\
        import zlib
        import $OLD as so  # isort: skip
        import abc
        x = (zlib, abc, so.CommittedTokens, so.SamplingObserver)
        """),
        src("""\
        import zlib
        import $OLD as so  # isort: skip
        from sglang.srt.managers import auxiliary_output
        import abc
        x = (zlib, abc, auxiliary_output.CommittedTokens, so.SamplingObserver)
        """),
        src("""\
        import zlib
        from typing import TYPE_CHECKING
        import $OLD as so  # isort: skip

        if TYPE_CHECKING:
            from sglang.srt.managers import auxiliary_output
        else:
            try:
                from sglang.srt.managers import auxiliary_output
            except ImportError:
                import $OLD as auxiliary_output
        import abc
        x = (zlib, abc, auxiliary_output.CommittedTokens, so.SamplingObserver)
        """),
        frozenset({'ruff', 'runs'})),
    "TYPE_CHECKING imported by the function itself": Case(
        src("""\
        def f():
            from typing import TYPE_CHECKING
            from $OLD import CommittedTokens
            return TYPE_CHECKING, CommittedTokens


        f()
        """),
        src("""\
        def f():
            from typing import TYPE_CHECKING
            from $NEW import CommittedTokens
            return TYPE_CHECKING, CommittedTokens


        f()
        """),
        src("""\
        def f():
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from $NEW import CommittedTokens
            else:
                try:
                    from $NEW import CommittedTokens
                except ImportError:
                    from $OLD import CommittedTokens
            return TYPE_CHECKING, CommittedTokens


        f()
        """),
        frozenset({'ruff'})),
    "a named escape in a runtime target": Case(
        src("""\
        a = "caf\\N{LATIN SMALL LETTER E WITH ACUTE} $OLD.CommittedTokens"
        assert a.startswith("caf\\u00e9 ")
        """),
        src("""\
        a = "caf\\N{LATIN SMALL LETTER E WITH ACUTE} $NEW.CommittedTokens"
        assert a.startswith("caf\\u00e9 ")
        """),
        src("""\
        try:
            __import__("$NEW")
            _AUXILIARY_OUTPUT_MODULE = "$NEW"
        except ImportError:
            _AUXILIARY_OUTPUT_MODULE = "$OLD"

        a = f"caf\\N{LATIN SMALL LETTER E WITH ACUTE} {_AUXILIARY_OUTPUT_MODULE}.CommittedTokens"
        assert a.startswith("caf\\u00e9 ")
        """),
        frozenset()),
    "a case pattern": Case(
        src("""\
        def kind(t):
            match t:
                case "$OLD.CommittedTokens":
                    return 1
                case _:
                    return 0


        assert kind("x") == 0
        """),
        src("""\
        def kind(t):
            match t:
                case "$NEW.CommittedTokens":
                    return 1
                case _:
                    return 0


        assert kind("x") == 0
        """),
        src("""\
        def kind(t):
            match t:
                case "$NEW.CommittedTokens":
                    return 1
                case _:
                    return 0


        assert kind("x") == 0
        """),
        frozenset({'mypy', 'runs'})),
    "a mapping pattern key": Case(
        src("""\
        def kind(t):
            match t:
                case {"$OLD.CommittedTokens": v}:
                    return v
            return 0


        assert kind({}) == 0
        """),
        src("""\
        def kind(t):
            match t:
                case {"$NEW.CommittedTokens": v}:
                    return v
            return 0


        assert kind({}) == 0
        """),
        src("""\
        def kind(t):
            match t:
                case {"$NEW.CommittedTokens": v}:
                    return v
            return 0


        assert kind({}) == 0
        """),
        frozenset({'mypy', 'ruff', 'runs'})),
    "type expressions outside annotations": Case(
        src("""\
        import typing
        from typing import Annotated, Optional

        from typing_extensions import TypeAlias

        import $OLD

        X: TypeAlias = "$OLD.CommittedTokens"
        Y = Optional["$OLD.HostAuxiliaryOutput"]
        z: Annotated[int, "$OLD.DeviceAuxiliaryOutput"] = 1
        w = typing.cast("$OLD.CommittedTokens", None)
        keep = $OLD.SamplingObserver
        """),
        src("""\
        import typing
        from typing import Annotated, Optional

        from typing_extensions import TypeAlias

        import $NEW
        import $OLD

        X: TypeAlias = "$NEW.CommittedTokens"
        Y = Optional["$NEW.HostAuxiliaryOutput"]
        z: Annotated[int, "$NEW.DeviceAuxiliaryOutput"] = 1
        w = typing.cast("$NEW.CommittedTokens", None)
        keep = $OLD.SamplingObserver
        """),
        src("""\
        import typing
        from typing import Annotated, Optional

        from typing_extensions import TypeAlias

        import $OLD

        if typing.TYPE_CHECKING:
            from sglang.srt.managers import auxiliary_output
        else:
            try:
                from sglang.srt.managers import auxiliary_output
            except ImportError:
                import $OLD as auxiliary_output

        X: TypeAlias = "auxiliary_output.CommittedTokens"
        Y = Optional["auxiliary_output.HostAuxiliaryOutput"]
        z: Annotated[int, "$NEW.DeviceAuxiliaryOutput"] = 1
        w = typing.cast("auxiliary_output.CommittedTokens", None)
        keep = $OLD.SamplingObserver
        """),
        frozenset({'annotations', 'mypy', 'ruff'})),
    "a Literal": Case(
        src("""\
        from typing import Literal

        Target = Literal["$OLD.CommittedTokens"]
        """),
        src("""\
        from typing import Literal

        Target = Literal["$NEW.CommittedTokens"]
        """),
        src("""\
        from typing import Literal

        Target = Literal["$NEW.CommittedTokens"]
        """),
        frozenset({'mypy'})),
    "an alias in a data string": Case(
        src("""\
        import $OLD as so

        keep = so.SamplingObserver
        moved = so.CommittedTokens
        NAME = "so.CommittedTokens"
        assert NAME == "so.CommittedTokens"
        """),
        src("""\
        import $OLD as so
        from sglang.srt.managers import auxiliary_output

        keep = so.SamplingObserver
        moved = auxiliary_output.CommittedTokens
        NAME = "so.CommittedTokens"
        assert NAME == "so.CommittedTokens"
        """),
        src("""\
        from typing import TYPE_CHECKING

        import $OLD as so

        if TYPE_CHECKING:
            from sglang.srt.managers import auxiliary_output
        else:
            try:
                from sglang.srt.managers import auxiliary_output
            except ImportError:
                import $OLD as auxiliary_output

        keep = so.SamplingObserver
        moved = auxiliary_output.CommittedTokens
        NAME = "so.CommittedTokens"
        assert NAME == "so.CommittedTokens"
        """),
        frozenset()),
    "a target glued to an f-string field by concatenation": Case(
        src("""\
        from unittest import mock

        from $OLD import CommittedTokens

        suffix = ".__init__"
        t = mock.patch("$OLD.CommittedTokens" f"{suffix}", return_value=None)
        x = CommittedTokens
        """),
        src("""\
        from unittest import mock

        from $NEW import CommittedTokens

        suffix = ".__init__"
        t = mock.patch("$OLD.CommittedTokens" f"{suffix}", return_value=None)
        x = CommittedTokens
        """),
        src("""\
        from typing import TYPE_CHECKING
        from unittest import mock

        if TYPE_CHECKING:
            from $NEW import CommittedTokens
        else:
            try:
                from $NEW import CommittedTokens
            except ImportError:
                from $OLD import CommittedTokens

        suffix = ".__init__"
        t = mock.patch("$OLD.CommittedTokens" f"{suffix}", return_value=None)
        x = CommittedTokens
        """),
        frozenset()),
    "a staying string annotation keeps the old import": Case(
        src("""\
        import $OLD

        a: "$OLD.CommittedTokens | None" = None
        b: "$OLD.SamplingObserver | None" = None
        """),
        src("""\
        import $NEW
        import $OLD

        a: "$NEW.CommittedTokens | None" = None
        b: "$OLD.SamplingObserver | None" = None
        """),
        src("""\
        from typing import TYPE_CHECKING

        import $OLD

        if TYPE_CHECKING:
            from sglang.srt.managers import auxiliary_output
        else:
            try:
                from sglang.srt.managers import auxiliary_output
            except ImportError:
                import $OLD as auxiliary_output

        a: "auxiliary_output.CommittedTokens | None" = None
        b: "$OLD.SamplingObserver | None" = None
        """),
        frozenset({'annotations', 'ruff'})),
    "a dotted annotation with no import": Case(
        src("""\
        def f(x: "$OLD.CommittedTokens") -> None:
            return None
        """),
        src("""\
        import $NEW


        def f(x: "$NEW.CommittedTokens") -> None:
            return None
        """),
        src("""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            import $NEW


        def f(x: "$NEW.CommittedTokens") -> None:
            return None
        """),
        frozenset({'annotations'})),
    "a dotted annotation next to an alias import": Case(
        src("""\
        import $OLD as so


        def f(x: "$OLD.CommittedTokens") -> "so.SamplingObserver | None":
            return None
        """),
        src("""\
        import $NEW
        import $OLD as so


        def f(x: "$NEW.CommittedTokens") -> "so.SamplingObserver | None":
            return None
        """),
        src("""\
        from typing import TYPE_CHECKING

        import $OLD as so

        if TYPE_CHECKING:
            import $NEW


        def f(x: "$NEW.CommittedTokens") -> "so.SamplingObserver | None":
            return None
        """),
        frozenset({'annotations'})),
    "a dotted annotation next to a from-import": Case(
        src("""\
        from $OLD import SamplingObserver


        def f(x: "$OLD.CommittedTokens", y: SamplingObserver) -> None:
            return None
        """),
        src("""\
        import $NEW
        from $OLD import SamplingObserver


        def f(x: "$NEW.CommittedTokens", y: SamplingObserver) -> None:
            return None
        """),
        src("""\
        from typing import TYPE_CHECKING

        from $OLD import SamplingObserver

        if TYPE_CHECKING:
            import $NEW


        def f(x: "$NEW.CommittedTokens", y: SamplingObserver) -> None:
            return None
        """),
        frozenset({'annotations'})),
    "a module-level annotation, the import in the function": Case(
        src("""\
        def g() -> "$OLD.CommittedTokens | None":
            import $OLD  # noqa: F401

            return None
        """),
        src("""\
        import $NEW


        def g() -> "$NEW.CommittedTokens | None":
            import $OLD  # noqa: F401

            return None
        """),
        src("""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            import $NEW


        def g() -> "$NEW.CommittedTokens | None":
            import $OLD  # noqa: F401

            return None
        """),
        frozenset({'annotations'})),
    "a comment line inside parentheses": Case(
        src("""\
        # leading comment
        from $OLD import (  # opening
            CommittedTokens as CT,  # ct comment
            # a standalone comment
            SamplingObserver as SO,  # so comment
            HostAuxiliaryOutput,  # host comment
        )  # closing
        # trailing comment
        x = (CT, SO, HostAuxiliaryOutput)  # use
        """),
        src("""\
        # leading comment
        from $NEW import CommittedTokens as CT  # ct comment
        from $NEW import HostAuxiliaryOutput  # host comment
        from $OLD import (  # opening
            # a standalone comment
            SamplingObserver as SO,  # so comment
        )  # closing
        # trailing comment
        x = (CT, SO, HostAuxiliaryOutput)  # use
        """),
        src("""\
        # leading comment
        from typing import TYPE_CHECKING

        from $OLD import (  # opening
            # a standalone comment
            SamplingObserver as SO,  # so comment
        )  # closing

        if TYPE_CHECKING:
            from $NEW import CommittedTokens as CT  # ct comment
            from $NEW import HostAuxiliaryOutput  # host comment
        else:
            try:
                from $NEW import CommittedTokens as CT  # ct comment
                from $NEW import HostAuxiliaryOutput  # host comment
            except ImportError:
                from $OLD import CommittedTokens as CT  # ct comment
                from $OLD import HostAuxiliaryOutput  # host comment
        # trailing comment
        x = (CT, SO, HostAuxiliaryOutput)  # use
        """),
        frozenset({'comments'})),
    "comments inside parentheses of a statement moving whole": Case(
        src("""\
        from $OLD import (  # opening
            # standalone before first
            CommittedTokens,  # ct
            # standalone middle
            HostAuxiliaryOutput,
            # standalone last
        )  # closing

        import os

        x = (os, CommittedTokens, HostAuxiliaryOutput)
        """),
        src("""\
        from $NEW import (  # opening
            # standalone before first
            CommittedTokens,  # ct
            # standalone middle
            HostAuxiliaryOutput,
            # standalone last
        )  # closing

        import os

        x = (os, CommittedTokens, HostAuxiliaryOutput)
        """),
        src("""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from $NEW import (  # opening
                # standalone before first
                CommittedTokens,  # ct
                # standalone middle
                HostAuxiliaryOutput,
                # standalone last
            )  # closing
        else:
            try:
                from $NEW import (  # opening
                    # standalone before first
                    CommittedTokens,  # ct
                    # standalone middle
                    HostAuxiliaryOutput,
                    # standalone last
                )  # closing
            except ImportError:
                from $OLD import (  # opening
                    # standalone before first
                    CommittedTokens,  # ct
                    # standalone middle
                    HostAuxiliaryOutput,
                    # standalone last
                )  # closing

        import os

        x = (os, CommittedTokens, HostAuxiliaryOutput)
        """),
        frozenset({'comments', 'ruff', 'runs'})),
    "a comment inside the owner's parentheses": Case(
        src("""\
        import $OLD as so

        a = (so  # comment
             ).CommittedTokens
        keep = so.SamplingObserver
        """),
        src("""\
        import $OLD as so
        from sglang.srt.managers import auxiliary_output

        a = (auxiliary_output  # comment
             ).CommittedTokens
        keep = so.SamplingObserver
        """),
        src("""\
        from typing import TYPE_CHECKING

        import $OLD as so

        if TYPE_CHECKING:
            from sglang.srt.managers import auxiliary_output
        else:
            try:
                from sglang.srt.managers import auxiliary_output
            except ImportError:
                import $OLD as auxiliary_output

        a = (auxiliary_output  # comment
             ).CommittedTokens
        keep = so.SamplingObserver
        """),
        frozenset({'comments'})),
    "isort skip without spaces": Case(
        src("""\
        import sys
        import os
        from $OLD import CommittedTokens  #isort:skip
        x = (os, sys, CommittedTokens)
        """),
        src("""\
        import sys
        import os
        from $NEW import CommittedTokens  #isort:skip
        x = (os, sys, CommittedTokens)
        """),
        src("""\
        import sys
        import os
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from $NEW import CommittedTokens  #isort:skip
        else:
            try:
                from $NEW import CommittedTokens  #isort:skip
            except ImportError:
                from $OLD import CommittedTokens  #isort:skip
        x = (os, sys, CommittedTokens)
        """),
        frozenset({'comments'})),
    "fmt skip on a statement of two lines": Case(
        src("""\
        import sys
        from $OLD import (CommittedTokens,
                      SamplingObserver)  # fmt: skip
        x = (sys, SamplingObserver, CommittedTokens)
        """),
        src("""\
        import sys
        from $OLD import (
                      SamplingObserver)  # fmt: skip
        from $NEW import CommittedTokens
        x = (sys, SamplingObserver, CommittedTokens)
        """),
        src("""\
        import sys
        from typing import TYPE_CHECKING
        from $OLD import (
                      SamplingObserver)  # fmt: skip

        if TYPE_CHECKING:
            from $NEW import CommittedTokens
        else:
            try:
                from $NEW import CommittedTokens
            except ImportError:
                from $OLD import CommittedTokens
        x = (sys, SamplingObserver, CommittedTokens)
        """),
        frozenset()),
    "isort split ending an import line": Case(
        src("""\
        import zlib
        from $OLD import CommittedTokens  # isort: split
        import abc

        x = (abc, zlib, CommittedTokens)
        """),
        src("""\
        import zlib
        from $NEW import CommittedTokens  # isort: split
        import abc

        x = (abc, zlib, CommittedTokens)
        """),
        src("""\
        import zlib
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from $NEW import CommittedTokens  # isort: split
        else:
            try:
                from $NEW import CommittedTokens  # isort: split
            except ImportError:
                from $OLD import CommittedTokens  # isort: split
        import abc

        x = (abc, zlib, CommittedTokens)
        """),
        frozenset()),
    "a star-imported name used only as a parameter": Case(
        src("""\
        from $OLD import *  # noqa: F403


        def f(CommittedTokens):
            return CommittedTokens


        x = SamplingObserver  # noqa: F405
        """),
        src("""\
        from $OLD import *  # noqa: F403


        def f(CommittedTokens):
            return CommittedTokens


        x = SamplingObserver  # noqa: F405
        """),
        src("""\
        from $OLD import *  # noqa: F403


        def f(CommittedTokens):
            return CommittedTokens


        x = SamplingObserver  # noqa: F405
        """),
        frozenset({'ruff'})),
    "an alias bound at module level for moved names and in a function for a staying one": Case(
        src("""\
        import $OLD as so


        def staying():
            import $OLD as so

            return so.SamplingObserver


        moved = so.CommittedTokens
        staying()
        """),
        src("""\
        from sglang.srt.managers import auxiliary_output


        def staying():
            import $OLD as so

            return so.SamplingObserver


        moved = auxiliary_output.CommittedTokens
        staying()
        """),
        src("""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from sglang.srt.managers import auxiliary_output
        else:
            try:
                from sglang.srt.managers import auxiliary_output
            except ImportError:
                import $OLD as auxiliary_output


        def staying():
            import $OLD as so

            return so.SamplingObserver


        moved = auxiliary_output.CommittedTokens
        staying()
        """),
        frozenset({'runs', 'ruff', 'mypy'})),
    "an alias bound at module level for a staying name and in a function for moved ones": Case(
        src("""\
        import $OLD as so


        def moved():
            import $OLD as so

            return so.CommittedTokens


        staying = so.SamplingObserver
        moved()
        """),
        src("""\
        import $OLD as so


        def moved():
            from sglang.srt.managers import auxiliary_output

            return auxiliary_output.CommittedTokens


        staying = so.SamplingObserver
        moved()
        """),
        src("""\
        from typing import TYPE_CHECKING

        import $OLD as so


        def moved():
            if TYPE_CHECKING:
                from sglang.srt.managers import auxiliary_output
            else:
                try:
                    from sglang.srt.managers import auxiliary_output
                except ImportError:
                    import $OLD as auxiliary_output

            return auxiliary_output.CommittedTokens


        staying = so.SamplingObserver
        moved()
        """),
        frozenset({'runs', 'ruff', 'mypy'})),
    "one alias bound in two functions, only one using moved names": Case(
        src("""\
        def moved():
            import $OLD as so

            return so.CommittedTokens


        def staying():
            import $OLD as so

            return so.SamplingObserver


        moved()
        staying()
        """),
        src("""\
        def moved():
            from sglang.srt.managers import auxiliary_output

            return auxiliary_output.CommittedTokens


        def staying():
            import $OLD as so

            return so.SamplingObserver


        moved()
        staying()
        """),
        src("""\
        from typing import TYPE_CHECKING


        def moved():
            if TYPE_CHECKING:
                from sglang.srt.managers import auxiliary_output
            else:
                try:
                    from sglang.srt.managers import auxiliary_output
                except ImportError:
                    import $OLD as auxiliary_output

            return auxiliary_output.CommittedTokens


        def staying():
            import $OLD as so

            return so.SamplingObserver


        moved()
        staying()
        """),
        frozenset({'runs', 'ruff', 'mypy'})),
    "a dotted import at module level for moved names and in a function for a staying one": Case(
        src("""\
        import $OLD


        def staying():
            import $OLD

            return $OLD.SamplingObserver


        moved = $OLD.CommittedTokens
        staying()
        """),
        src("""\
        import $NEW


        def staying():
            import $OLD

            return $OLD.SamplingObserver


        moved = $NEW.CommittedTokens
        staying()
        """),
        src("""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from sglang.srt.managers import auxiliary_output
        else:
            try:
                from sglang.srt.managers import auxiliary_output
            except ImportError:
                import $OLD as auxiliary_output


        def staying():
            import $OLD

            return $OLD.SamplingObserver


        moved = auxiliary_output.CommittedTokens
        staying()
        """),
        frozenset({'runs', 'ruff'})),
    "an alias bound at module level for moved names and in a class body for a staying one": Case(
        src("""\
        import $OLD as so


        class Holder:
            import $OLD as so

            staying = so.SamplingObserver


        moved = so.CommittedTokens
        """),
        src("""\
        from sglang.srt.managers import auxiliary_output


        class Holder:
            import $OLD as so

            staying = so.SamplingObserver


        moved = auxiliary_output.CommittedTokens
        """),
        src("""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from sglang.srt.managers import auxiliary_output
        else:
            try:
                from sglang.srt.managers import auxiliary_output
            except ImportError:
                import $OLD as auxiliary_output


        class Holder:
            import $OLD as so

            staying = so.SamplingObserver


        moved = auxiliary_output.CommittedTokens
        """),
        frozenset({'runs', 'ruff'})),
    "a star import's moved name that a class body binds before reading it": Case(
        src("""\
        from $OLD import *  # noqa: F403


        class Holder:
            CommittedTokens = 1
            own = CommittedTokens


        x = SamplingObserver  # noqa: F405
        """),
        src("""\
        from $OLD import *  # noqa: F403


        class Holder:
            CommittedTokens = 1
            own = CommittedTokens


        x = SamplingObserver  # noqa: F405
        """),
        src("""\
        from $OLD import *  # noqa: F403


        class Holder:
            CommittedTokens = 1
            own = CommittedTokens


        x = SamplingObserver  # noqa: F405
        """),
        frozenset({'runs', 'ruff'})),
    "a star import's moved name a class body reads before binding its own": Case(
        src("""\
        from $OLD import *  # noqa: F403


        class Holder:
            moved = CommittedTokens  # noqa: F405
            CommittedTokens = 1


        x = SamplingObserver  # noqa: F405
        """),
        src("""\
        from $NEW import CommittedTokens
        from $OLD import *  # noqa: F403


        class Holder:
            moved = CommittedTokens  # noqa: F405
            CommittedTokens = 1


        x = SamplingObserver  # noqa: F405
        """),
        src("""\
        from typing import TYPE_CHECKING

        from $OLD import *  # noqa: F403

        if TYPE_CHECKING:
            from $NEW import CommittedTokens
        else:
            try:
                from $NEW import CommittedTokens
            except ImportError:
                from $OLD import CommittedTokens


        class Holder:
            moved = CommittedTokens  # noqa: F405
            CommittedTokens = 1


        x = SamplingObserver  # noqa: F405
        """),
        frozenset({'runs', 'ruff'})),
}

HUMAN = {
    "alias rebound by a loop": src("""\
        import types

        import $OLD as so

        keep = so.SamplingObserver
        moved = so.CommittedTokens
        for so in [types.SimpleNamespace(CommittedTokens=42)]:
            assert so.CommittedTokens == 42
        """),
    "alias rebound by a walrus": src("""\
        import types

        import $OLD as so

        keep = so.SamplingObserver
        moved = so.CommittedTokens
        if (so := types.SimpleNamespace(CommittedTokens=7)) is not None:
            assert so.CommittedTokens == 7
        """),
    "alias rebound by with": src("""\
        import contextlib
        import types

        import $OLD as so

        keep = so.SamplingObserver
        moved = so.CommittedTokens
        with contextlib.nullcontext(types.SimpleNamespace(CommittedTokens=5)) as so:
            assert so.CommittedTokens == 5
        """),
    "alias rebound by except": src("""\
        import types

        import $OLD as so

        keep = so.SamplingObserver
        moved = so.CommittedTokens


        class E(Exception):
            CommittedTokens = 9


        try:
            raise E()
        except E as so:
            assert so.CommittedTokens == 9
        """),
    "alias rebound by a match capture": src("""\
        import types

        import $OLD as so

        keep = so.SamplingObserver
        moved = so.CommittedTokens


        class P:
            CommittedTokens = 8


        match P():
            case so:
                assert so.CommittedTokens == 8
        """),
    "alias rebound as a class attribute": src("""\
        import types

        import $OLD as so

        keep = so.SamplingObserver
        moved = so.CommittedTokens


        class C:
            so = types.SimpleNamespace(CommittedTokens=42)
            x = so.CommittedTokens


        assert C.x == 42
        """),
    "top package rebound by a parameter": src("""\
        import types

        import $OLD

        moved = $OLD.CommittedTokens
        ns = types.SimpleNamespace(srt=types.SimpleNamespace(sampling=types.SimpleNamespace(
            sampling_observer=types.SimpleNamespace(CommittedTokens=11))))


        def f(sglang):
            return $OLD.CommittedTokens


        assert f(ns) == 11
        """),
    "mock.patch.object on an alias": src("""\
        from unittest import mock

        import $OLD as so

        with mock.patch.object(so, "CommittedTokens"):
            pass
        """),
    "import_module by keyword": src("""\
        import importlib

        x = importlib.import_module(name="$OLD").CommittedTokens
        """),
    "sys.modules": src("""\
        import sys

        import $OLD as so

        x = sys.modules["$OLD"].CommittedTokens
        y = so.SamplingObserver
        """),
    "through the package above": src("""\
        import $OLD  # noqa: F401
        from sglang.srt import sampling

        x = sampling.sampling_observer.CommittedTokens
        """),
    "import_module of a constant": src("""\
        import importlib

        OLDNAME = "$OLD"
        x = importlib.import_module(OLDNAME).CommittedTokens
        """),
    "percent formatting": src("""\
        a = "%s.CommittedTokens" % "$OLD"
        """),
    "str.format": src("""\
        b = "{}.CommittedTokens".format("$OLD")
        """),
    "percent formatting of a constant": src("""\
        OLDNAME = "$OLD"
        c = "%s.%s" % (OLDNAME, "CommittedTokens")
        """),
    "alias imported under global in a function": src("""\
        so = None


        def load():
            global so
            import $OLD as so


        def use():
            return so.CommittedTokens
        """),
    "top package imported under global in a function": src("""\
        sglang = None


        def load():
            global sglang
            import $OLD


        def use():
            return $OLD.CommittedTokens
        """),
}



# --- each form is rewritten as written above, once and for all --------------------------


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_each_hostile_form_is_rewritten_as_specified(case: str) -> None:
    """Each output is the table's, leaves no AUX501, and a second run changes nothing."""
    for variant in VARIANTS:
        expected = CASES[case].output(variant)
        once = migrate(CASES[case].before, compat=variant == "compat")
        assert (once, "AUX501" in codes(once), migrate(once, compat=variant == "compat")) == (
            expected, False, expected), variant


@pytest.mark.parametrize("case", HUMAN, ids=list(HUMAN))
def test_a_use_the_rewrite_cannot_reach_is_reported_and_left_alone(case: str) -> None:
    """Such a use is AUX502 (never AUX501, never missed) and the file is left as it was."""
    source = HUMAN[case]
    assert (sorted(set(codes(source))), migrate(source), migrate(source, compat=True)) == (
        ["AUX502"], source, source)


COMMENTED = [case for case in CASES if "comments" in CASES[case].checks]


@pytest.mark.parametrize("case", COMMENTED, ids=COMMENTED)
def test_every_comment_is_kept_byte_for_byte(case: str) -> None:
    """Each comment of the input is in both outputs as written."""
    before = CASES[case].before
    for variant in VARIANTS:
        after = migrate(before, compat=variant == "compat")
        missing = [c for c in re.findall(r"#[^\n]*", before)
                   if c not in after and c.replace(OLD, NEW) not in after]
        assert missing == [], variant


def test_a_rewrite_python_would_reject_is_never_returned() -> None:
    """The post-check compiles the rewrite: a pattern holding an f-string fails, unwritten."""
    text = 'match x:\n    case "a":\n        pass\n'
    code = 'match x:\n    case f"{a}":\n        pass\n'
    result = finish(TransformSuccess(warning_messages=[], code=code), text, MOVES, None, "f.py")
    assert (result.status, result.text) == ("failed", text)
    assert "would not compile" in result.reason


def test_a_file_python_rejects_fails_as_its_own_fault() -> None:
    """An input the compiler rejects (``import *`` in a function) is never rewritten, and the
    reason says the file, not the rewrite, does not compile."""
    text = f"def f():\n    from {OLD} import *\n    value = CommittedTokens\n"
    result = migrate_source(text, moves=MOVES)
    assert (result.status, result.text, result.reason) == (
        "failed", text, "does not compile: import * only allowed at module level (line 2)")


# --- the outputs run where they should ------------------------------------------------------

FALLBACK = {"my_fallback.py": MOVED_CLASSES + "class SamplingObserver: pass\n"}
PACKAGES = {f"{path}/__init__.py": "" for path in (
    "sglang", "sglang/srt", "sglang/srt/sampling", "sglang/srt/managers")}
LAYOUTS = {
    "old": {**FALLBACK, **PACKAGES,
            f"{OLD.replace('.', '/')}.py": MOVED_CLASSES + "class SamplingObserver: pass\n"},
    "new": {**FALLBACK, **PACKAGES,
            f"{OLD.replace('.', '/')}.py": "class SamplingObserver: pass\n",
            f"{NEW.replace('.', '/')}.py": MOVED_CLASSES},
    "none": FALLBACK,
}
WITHOUT_SGLANG = ["two fallback aliases", "TYPE_CHECKING bound to the module's own value"]
"""Rows whose input runs where SGLang is absent (an ImportError fallback binds the names)."""
RUNS = {  # (layout, what runs there)
    "old": ("input", "compat"), "new": ("plain", "compat"),
    "none": ("input", "plain", "compat")}
DRIVER = """\
import json, runpy, sys
results = {}
for name in sys.argv[1:]:
    try:
        runpy.run_module(name, run_name="__main__")
    except BaseException as exc:
        results[name] = f"{type(exc).__name__}: {exc}"
    else:
        results[name] = "ok"
print(json.dumps(results))
"""


def _stem(kind: str, number: int, what: str) -> str:
    return f"{kind}_{number:02d}_{what}"


def _texts(what: str, case: Case) -> str:
    """Returns the input, or what migrate writes for it now (not the table's text)."""
    if what == "input":
        return case.before
    return migrate_source(case.before, moves=MOVES, compat=what == "compat").text


@pytest.fixture(scope="module")
def run_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """Returns {layout: {module: "ok" or the error}}, each layout's modules in one process."""
    results = {}
    for layout, whats in RUNS.items():
        root = tmp_path_factory.mktemp(f"layout-{layout}")
        rows = {f"{_stem('case', i, what)}.py": _texts(what, case)
                for i, (name, case) in enumerate(CASES.items()) for what in whats
                if "runs" in case.checks and (layout != "none" or name in WITHOUT_SGLANG)}
        for relative, text in {**LAYOUTS[layout], **rows}.items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text(text, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
        completed = subprocess.run(
            [sys.executable, "-c", DRIVER, *(Path(row).stem for row in rows)], cwd=root,
            env=env, capture_output=True, text=True, check=True, timeout=120)
        results[layout] = json.loads(completed.stdout.splitlines()[-1])
    return results


RUNNING = [case for case in CASES if "runs" in CASES[case].checks]


@pytest.mark.parametrize("case", RUNNING, ids=RUNNING)
def test_each_output_runs_where_it_should(
        case: str, run_results: dict[str, dict[str, str]]) -> None:
    """The input runs before the move, plain output after it, --compat output on both, and
    a fallback's input and outputs where SGLang is absent."""
    number = list(CASES).index(case)
    outcomes = {f"{what}@{layout}": run_results[layout][_stem("case", number, what)]
                for layout, whats in RUNS.items() for what in whats
                if layout != "none" or case in WITHOUT_SGLANG}
    assert outcomes == dict.fromkeys(outcomes, "ok")


# --- ruff and mypy see nothing new ------------------------------------------------------------

RUFF_CODES = "F401,F811,F821,I001,PLR0402"
NOTHING_NEW = {variant: Counter[str]() for variant in VARIANTS}


@pytest.fixture(scope="module")
def ruff_counts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Counter[str]]:
    """Returns {file stem: ruff codes counted} for every input and output, in one run."""
    if not RUFF.exists():
        pytest.skip("ruff is not installed next to the interpreter")
    folder = tmp_path_factory.mktemp("ruff")
    stems = []
    for i, case in enumerate(CASES.values()):
        for what in ("input", *VARIANTS):
            stems.append(_stem("case", i, what))
            (folder / f"{stems[-1]}.py").write_text(_texts(what, case), encoding="utf-8")
    completed = subprocess.run(
        [str(RUFF), "check", "--isolated", "--no-cache", "--select", RUFF_CODES,
         "--output-format", "json", "--exit-zero", "."],
        cwd=folder, capture_output=True, text=True, check=True)
    counts: dict[str, Counter[str]] = {stem: Counter() for stem in stems}
    for finding in json.loads(completed.stdout):
        counts[Path(finding["filename"]).stem][finding["code"]] += 1
    return counts


LINTED = [case for case in CASES if "ruff" in CASES[case].checks]


@pytest.mark.parametrize("case", LINTED, ids=LINTED)
def test_ruff_finds_no_new_unused_undefined_or_redefined_name(
        case: str, ruff_counts: dict[str, Counter[str]]) -> None:
    """Neither output has an F401, F811, F821, I001 or PLR0402 (``import a.b as b``) the
    input did not have."""
    number = list(CASES).index(case)
    before = ruff_counts[_stem("case", number, "input")]
    assert {variant: ruff_counts[_stem("case", number, variant)] - before
            for variant in VARIANTS} == NOTHING_NEW


MYPY_ERROR = re.compile(r"^(?P<path>[^:]+\.py):\d+: error: .*\[(?P<code>[a-z-]+)\]$")
MYPY_CODES = {"attr-defined", "name-defined", "no-redef", "valid-type", "misc"}


@pytest.fixture(scope="module")
def mypy_counts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Counter[str]]:
    """Returns {file stem: mypy --strict error codes counted} against the shipped stubs, for
    every input and output, from one run (``syntax`` for a file Python rejects)."""
    root = tmp_path_factory.mktemp("mypy")
    stems: list[str] = []
    counts: dict[str, Counter[str]] = {}
    for i, case in enumerate(CASES.values()):
        for what in ("input", *VARIANTS):
            stem, text = _stem("case", i, what), _texts(what, case)
            try:  # a file Python rejects would stop mypy checking any other
                compile(text, stem, "exec", dont_inherit=True)
            except SyntaxError:
                counts[stem] = Counter({"syntax": 1})
                continue
            stems.append(stem)
            (root / f"{stem}.py").write_text(text, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["MYPYPATH"] = str(TORCH_STANDIN)
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir",
         os.devnull, "--config-file", os.devnull, "--show-error-codes", "--no-pretty",
         *(f"{stem}.py" for stem in stems)],
        cwd=root, env=env, capture_output=True, text=True, check=False, timeout=300)
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr
    counts |= {stem: Counter() for stem in stems}
    for line in completed.stdout.splitlines():
        if (match := MYPY_ERROR.match(line)) and match["code"] in MYPY_CODES:
            counts[Path(match["path"]).stem][match["code"]] += 1
    return counts


TYPED = [case for case in CASES if "mypy" in CASES[case].checks]


@pytest.mark.parametrize("case", TYPED, ids=TYPED)
def test_mypy_finds_no_new_missing_name_or_redefinition(
        case: str, mypy_counts: dict[str, Counter[str]]) -> None:
    """Against the stubs (the new layout), neither output has an attr-defined,
    name-defined, no-redef or valid-type error the input did not have."""
    number = list(CASES).index(case)
    before = mypy_counts[_stem("case", number, "input")]
    assert {variant: mypy_counts[_stem("case", number, variant)] - before
            for variant in VARIANTS} == NOTHING_NEW


ANNOTATED = [case for case in CASES if "annotations" in CASES[case].checks]


@pytest.mark.parametrize("case", ANNOTATED, ids=ANNOTATED)
def test_a_rewritten_type_string_names_a_module_the_file_imports(
        case: str, mypy_counts: dict[str, Counter[str]]) -> None:
    """mypy resolves every module a rewritten type-expression string names (no
    name-defined), and reads each as a type (no valid-type)."""
    number = list(CASES).index(case)
    found = {variant: mypy_counts[_stem("case", number, variant)] for variant in VARIANTS}
    assert {variant: +Counter({code: count for code, count in counts.items()
                               if code in ("name-defined", "valid-type")})
            for variant, counts in found.items()} == NOTHING_NEW
