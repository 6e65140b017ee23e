"""The import style's values: the style, one import statement, the bad-setting error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from auxcheck._core.errors import StyleConfigError

__all__ = ["FIRST_PARTY", "FUTURE", "LOCAL_FOLDER", "STDLIB", "THIRD_PARTY", "WRAP_MODES",
           "ImportStatement", "ImportStyle", "Kind", "Names", "StyleConfigError", "WrapMode",
           "comment_text"]


Names = list[tuple[str, str | None]]
"""The members of a ``from`` import: ``(name, asname)`` pairs."""

WrapMode = Literal[
    "grid", "vertical", "hanging-indent", "vertical-hanging-indent", "vertical-grid",
    "vertical-grid-grouped",
]
Kind = Literal["import", "from"]

FUTURE = 0
STDLIB = 1
THIRD_PARTY = 2
FIRST_PARTY = 3
LOCAL_FOLDER = 4


# isort's multi_line_output numbers, in WrapModes order.
WRAP_MODES: tuple[WrapMode, ...] = (
    "grid", "vertical", "hanging-indent", "vertical-hanging-indent", "vertical-grid",
    "vertical-grid-grouped",
)


@dataclass(frozen=True, slots=True)
class ImportStyle:
    """How the project's import sorter writes and orders import statements.

    The defaults are ruff's.  ``indent`` is the indentation of wrapped members:
    isort's ``indent`` setting; ruff takes it from the file (four spaces where the
    file has no indented block).  ``tab_size`` is ruff's ``indent-width``, used to
    measure tabs.  ``src`` are the folders whose modules are first-party (ruff's
    ``src``, isort's ``src_paths``).
    """

    tool: Literal["ruff", "isort"] = "ruff"
    source: str = "ruff defaults"
    line_length: int = 88
    indent: str = "    "
    wrap: WrapMode = "vertical-hanging-indent"
    trailing_comma: bool = True
    use_parentheses: bool = True
    combine_as: bool = False
    force_single_line: bool = False
    order_by_type: bool = True
    case_sensitive: bool = False
    force_sort_within_sections: bool = False
    split_on_trailing_comma: bool = True
    known_first_party: frozenset[str] = frozenset()
    known_third_party: frozenset[str] = frozenset()
    known_local_folder: frozenset[str] = frozenset()
    extra_standard_library: frozenset[str] = frozenset()
    force_to_top: frozenset[str] = frozenset()
    single_line_exclusions: frozenset[str] = frozenset()
    force_wrap_aliases: bool = False
    force_grid_wrap: int = 0
    relative_order: Literal["furthest-to-closest", "closest-to-furthest"] = (
        "furthest-to-closest")
    from_first: bool = False
    lines_between_types: int = 0
    tab_size: int = 4
    src: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ImportStatement:
    """One import statement of a block, as if written on one line.

    ``kind="import"``: ``names`` are the imported modules with their asnames
    (``import a, b as c``) and ``module``/``level`` are unused.  ``kind="from"``:
    ``from <level dots><module> import <names>``.  ``comment`` is the trailing
    comment, ``magic_comma`` whether the members ended with a comma in parentheses.
    """

    kind: Kind
    names: tuple[tuple[str, str | None], ...]
    module: str = ""
    level: int = 0
    comment: str | None = None
    magic_comma: bool = False


def comment_text(comment: str | None) -> str | None:
    """The comment's text without its ``#``, as isort stores it (None when empty)."""
    if comment is None:
        return None
    text = comment.split("#", 1)[1] if "#" in comment else comment
    return text.strip() or None
