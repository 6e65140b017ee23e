"""Property tests: on generated files mixing every form, the migration is safe and complete."""

from __future__ import annotations

import ast
from textwrap import indent

from helpers.migration import MOVES
from helpers.plugin_sources import MOVED, NEW, OLD
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from auxcheck.migrate.scan import scan_source
from auxcheck.migrate.transform import migrate_source

NAMES = (*MOVED, "SamplingObserver")


def _aliased(name: str, alias: bool) -> str:
    return f"{name} as {name[:4]}_" if alias else name


def import_lists() -> st.SearchStrategy[str]:
    """Returns a strategy which generates `name[ as alias], ...` lists of old-module names."""
    items = st.tuples(st.sampled_from(NAMES), st.booleans())
    return st.lists(items, min_size=1, max_size=4, unique_by=lambda t: t[0]).map(
        lambda xs: ", ".join(_aliased(n, a) for n, a in xs))


def fragments() -> st.SearchStrategy[str]:
    """Returns a strategy which generates one snippet using the old module in some form."""
    name = st.sampled_from(NAMES)
    return st.one_of(
        import_lists().map(lambda names: f"from {OLD} import {names}\n"),
        import_lists().map(lambda names: f"from {OLD} import (\n    {names},\n)\n"),
        name.map(lambda n: f"import {OLD} as so\nvalue = so.{n}\n"),
        name.map(lambda n: f"import {OLD}\nvalue = {OLD}.{n}\n"),
        name.map(lambda n: f"from sglang.srt.sampling import sampling_observer\n"
                           f"value = sampling_observer.{n}\n"),
        name.map(lambda n: f'patch("{OLD}.{n}")\n'),
        name.map(lambda n: f"from {OLD} import *\nvalue = {n}\n"),
        name.map(lambda n: f"from {NEW} import {n}\n" if n in MOVED else "import os\n"),
        st.sampled_from(MOVED).map(
            lambda n: f"try:\n    from {NEW} import {n}\nexcept ImportError:\n"
                      f"    from {OLD} import {n}\n"),
        st.just("import os\nfrom sglang.srt.utils import get_bool_env_var\n"),
    )


def compiles(source: str) -> bool:
    """Returns True when Python compiles ``source`` (``import *`` in a function it rejects)."""
    try:
        compile(source, "<generated>", "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return True


def nested(snippet: str, where: str) -> str:
    """Returns ``snippet`` at top level, under `if TYPE_CHECKING:` or inside a function."""
    if where == "top":
        return snippet
    head = "if TYPE_CHECKING:\n" if where == "if" else "def f():\n"
    return head + indent(snippet, "    ")


def modules() -> st.SearchStrategy[str]:
    """Returns a strategy which generates whole modules mixing the fragments."""
    placed = st.tuples(fragments(), st.sampled_from(["top", "top", "if", "def"]))
    return st.lists(placed, min_size=1, max_size=6).map(
        lambda parts: "".join(nested(s, w) + ("\n" if i % 2 else "")
                              for i, (s, w) in enumerate(parts)))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(), st.booleans())
def test_migration_parses_is_idempotent_and_leaves_no_fixable_use(source: str,
                                                                  compat: bool) -> None:
    """On any mix of forms the output parses, a second run changes nothing, and no AUX501 is left."""
    assume(compiles(source))
    first = migrate_source(source, moves=MOVES, compat=compat)
    assert first.status in ("changed", "unchanged"), first.reason
    ast.parse(first.text)
    second = migrate_source(first.text, moves=MOVES, compat=compat)
    assert second.text == first.text
    assert [f for f in scan_source(first.text, moves=MOVES) if f.code == "AUX501"] == []


@settings(max_examples=30, deadline=None)
@given(modules())
def test_names_that_did_not_move_are_still_imported_from_the_old_module(source: str) -> None:
    """Every SamplingObserver import from the old module survives the migration."""
    after = migrate_source(source, moves=MOVES).text
    assert after.count("SamplingObserver") == source.count("SamplingObserver")
