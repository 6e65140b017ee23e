"""The import style a project asks for, and import statements written in it.

``auxcheck migrate`` rewrites import statements, and its output must pass the
project's own import sorter unchanged: ``ruff check --select I`` (rule I001) or
``isort --check``.  This package reads that tool's configuration
(:func:`find_style`), places a module in its section (:func:`section_of`), orders
members and statements as the tool does (:func:`member_key`,
:func:`statement_key`) and writes statements the way the tool would rewrite them
(:func:`render_from`, :func:`render_import`, :func:`sort_block`).

The rules mirror ruff's ``crates/ruff_linter/src/rules/isort`` (0.16/0.17) and
isort 9 (``sorting.py``, ``output.py``, ``wrap.py``, ``wrap_modes.py``).  Where the
two tools disagree each keeps its own rule: ruff compares names with ``natord``
(so ``a.b`` sorts before ``a1``) while isort splits out digit runs (``a1``
first); ruff gathers the plain members of a module into one statement and puts
each aliased member in its own, while isort also cuts the plain members at every
aliased one; ruff always honours a magic trailing comma, isort never does on an
aliased member.

Not mirrored (documented, not detected): custom sections, ``no_sections``,
``length_sort``, ``lexicographical``, ``force_alphabetical_sort``, ``group_by_package``,
``balanced_wrapping``, ``wrap_length``, the classes/constants/variables lists,
ruff's ``extend``, ``detect-same-package`` and user-level configuration, isort's
``.editorconfig`` and ``py_version``; isort wrap modes 6-11.  Standard-library
modules are those of :data:`sys.stdlib_module_names` for both tools.

Importing this package loads only the standard library.

Its modules: ``config`` finds and reads the configuration; ``ordering`` places a module
in its section and orders members and statements; ``rendering`` writes statements and
blocks through ``ruff_format`` and ``isort_format`` (which wraps with ``isort_wrap``);
``model`` holds the values.
"""

from __future__ import annotations

from auxcheck._core.errors import StyleConfigError
from auxcheck.migrate.style.config import find_style
from auxcheck.migrate.style.model import (
    FIRST_PARTY,
    FUTURE,
    LOCAL_FOLDER,
    STDLIB,
    THIRD_PARTY,
    ImportStatement,
    ImportStyle,
    Names,
)
from auxcheck.migrate.style.ordering import member_key, section_of, statement_key
from auxcheck.migrate.style.rendering import render_from, render_import, sort_block

__all__ = [
    "FIRST_PARTY",
    "FUTURE",
    "LOCAL_FOLDER",
    "STDLIB",
    "THIRD_PARTY",
    "ImportStatement",
    "ImportStyle",
    "Names",
    "StyleConfigError",
    "find_style",
    "member_key",
    "render_from",
    "render_import",
    "section_of",
    "sort_block",
    "statement_key",
]
