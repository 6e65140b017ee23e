"""The import style a project asks for, and import statements written in it.

``auxcheck migrate`` rewrites import statements, and its output must pass the
project's own import sorter unchanged: ``ruff check --select I`` (rule I001) or
``isort --check``.  This module reads that tool's configuration
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

Importing this module loads only the standard library.
"""

from __future__ import annotations

import configparser
import functools
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal

from auxcheck._core.paths import CONFIG_LIMIT, is_dir, is_file, read_regular_file
from auxcheck.errors import AuxcheckError

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
_WRAP_MODES: tuple[WrapMode, ...] = (
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


class StyleConfigError(AuxcheckError, ValueError):
    """An import-sorter configuration value cannot be read.

    ``path`` is the configuration file, ``key`` the setting and ``problem`` what
    was wrong with it.
    """

    def __init__(self, path: str, key: str, problem: str, fix: str) -> None:
        self.path = path
        self.key = key
        self.problem = problem
        super().__init__(f"{path}: {key}: {problem}; {fix}")


# --------------------------------------------------------------------------- config


_ISORT_SOURCES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (".isort.cfg", ("settings", "isort")),
    ("pyproject.toml", ("tool.isort",)),
    ("setup.cfg", ("isort", "tool:isort")),
    ("tox.ini", ("isort", "tool:isort")),
)
# isort stops looking this many folders up, and at a repository root.
_ISORT_MAX_DEPTH = 25

_ISORT_DEFAULTS: dict[str, object] = {
    "line_length": 79, "wrap": "grid", "trailing_comma": False, "use_parentheses": False,
    "split_on_trailing_comma": False,
}

_ISORT_PROFILES: dict[str, dict[str, object]] = {
    "black": {"multi_line_output": 3, "include_trailing_comma": True,
              "split_on_trailing_comma": True, "force_grid_wrap": 0, "use_parentheses": True,
              "line_length": 88},
    "django": {"combine_as_imports": True, "include_trailing_comma": True,
               "multi_line_output": 5, "line_length": 79},
    "pycharm": {"multi_line_output": 3, "force_grid_wrap": 2},
    "attrs": {"force_grid_wrap": 0, "include_trailing_comma": True, "lines_between_types": 1,
              "multi_line_output": 3, "use_parentheses": True},
    "hug": {"multi_line_output": 3, "include_trailing_comma": True, "force_grid_wrap": 0,
            "use_parentheses": True, "line_length": 100},
    "wemake": {"multi_line_output": 3, "include_trailing_comma": True, "use_parentheses": True,
               "line_length": 80},
}
# isort profiles that use settings this module does not mirror.
_ISORT_UNMIRRORED_PROFILES = ("google", "open_stack", "plone", "appnexus")

_TRUTH = {"y": True, "yes": True, "t": True, "on": True, "1": True, "true": True,
          "n": False, "no": False, "f": False, "off": False, "0": False, "false": False}


def find_style(start: str | os.PathLike[str] | None = None) -> ImportStyle:
    """Returns the import style for a file or folder (the working folder when None).

    Walks up from ``start`` one folder at a time.  In each folder ruff's files
    come first, in ruff's order (``.ruff.toml``, ``ruff.toml``, ``pyproject.toml``
    holding ``[tool.ruff]``), then isort's (``.isort.cfg`` [settings]/[isort],
    ``pyproject.toml`` [tool.isort], ``setup.cfg`` and ``tox.ini`` [isort]/[tool:isort]);
    the nearest folder holding either wins.  As in the tools, a ``pyproject.toml``
    (or ``.cfg``) without the tool's table, or with an empty isort table, does not
    count and the walk goes on; isort's files are not looked for above a folder
    holding ``.git`` or ``.hg`` nor more than 25 folders up, ruff's are.  With no
    configuration the style is ruff's defaults.  Results are cached per folder.

    Raises StyleConfigError naming the file and key when a value is malformed or
    a file cannot be parsed; unknown keys are ignored.
    """
    path = Path(os.path.abspath(start if start is not None else os.getcwd()))
    folder = path if is_dir(path) else path.parent
    return _style_for_folder(str(folder))


@functools.lru_cache(maxsize=256)
def _style_for_folder(folder: str) -> ImportStyle:
    isort_open = True
    here = Path(folder)
    for depth, directory in enumerate((here, *here.parents)):
        ruff = _ruff_config_in(directory)
        if ruff is not None:
            return _ruff_style(*ruff)
        if isort_open and depth < _ISORT_MAX_DEPTH:
            isort = _isort_config_in(directory)
            if isort is not None:
                return _isort_style(*isort)
            isort_open = not (is_dir(directory / ".git") or is_file(directory / ".git")
                              or is_dir(directory / ".hg"))
    return ImportStyle()


def _load_toml(path: Path) -> dict[str, Any]:
    from auxcheck._core.config import TomlFileError, load_toml

    try:
        return load_toml(path)
    except TomlFileError as exc:
        raise StyleConfigError(str(path), "(file)", exc.problem,
                               "fix the file (its syntax, or its permissions)") from None


def _ruff_config_in(directory: Path) -> tuple[Path, dict[str, Any], str] | None:
    for name in (".ruff.toml", "ruff.toml", "pyproject.toml"):
        path = directory / name
        table = _ruff_table(path) if is_file(path) else None
        if table is not None:
            return path, _ruff_extended(path, table, frozenset({path})), (
                "tool.ruff" if name == "pyproject.toml" else "")
    return None


def _ruff_table(path: Path) -> dict[str, Any] | None:
    """The ruff settings of one file (None for a pyproject.toml without [tool.ruff])."""
    data = _load_toml(path)
    if path.name != "pyproject.toml":
        return data
    tool = data.get("tool")
    ruff = tool.get("ruff") if isinstance(tool, dict) else None
    return ruff if isinstance(ruff, dict) else None


def _ruff_extended(path: Path, data: dict[str, Any], seen: frozenset[Path]) -> dict[str, Any]:
    """The settings with those of the file named by ``extend`` under them, as ruff merges."""
    base = data.get("extend")
    if base is None:
        return data
    parent = Path(os.path.abspath(path.parent / os.path.expanduser(str(base))))
    table = _ruff_table(parent) if is_file(parent) and parent not in seen else None
    if not isinstance(base, str) or table is None:
        raise StyleConfigError(str(path), "extend",
                               f"{base!r} is not a readable ruff configuration (or extends "
                               "itself)", "point extend at a ruff.toml or pyproject.toml")
    return _merged(_ruff_extended(parent, table, seen | {parent}), data)


def _merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        below = merged.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            value = _merged(below, value)
        merged[key] = value
    return merged


def _isort_config_in(directory: Path) -> tuple[Path, dict[str, Any], str] | None:
    for name, sections in _ISORT_SOURCES:
        path = directory / name
        if not is_file(path):
            continue
        if name.endswith(".toml"):
            tool = _load_toml(path).get("tool")
            table = tool.get("isort") if isinstance(tool, dict) else None
            if isinstance(table, dict) and table:
                return path, table, "tool.isort"
            continue
        found = _read_cfg(path, sections)
        if found is not None:
            return path, found[0], found[1]
    return None


def _read_cfg(path: Path, sections: tuple[str, ...]) -> tuple[dict[str, Any], str] | None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:  # configparser.read() would skip a file it cannot open, without a word
        data = read_regular_file(path, limit=CONFIG_LIMIT)
    except OSError as exc:
        raise StyleConfigError(str(path), "(file)", f"cannot read: {exc.strerror or exc}",
                               "fix the file's permissions, or remove it") from None
    try:
        parser.read_string(data.decode("utf-8"), source=str(path))
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise StyleConfigError(str(path), "(file)", f"not a valid INI file ({exc})",
                               "fix the file's syntax") from None
    settings: dict[str, Any] = {}
    used = []
    for section in sections:
        if parser.has_section(section) and parser.items(section):
            settings.update(parser.items(section))
            used.append(section)
    return (settings, used[-1]) if settings else None


class _Reader:
    """Reads typed values from one configuration table, naming it in errors."""

    def __init__(self, path: Path, table: str, data: Mapping[str, Any]) -> None:
        self.path, self.table, self.data = path, table, data

    def fail(self, key: str, problem: str, fix: str) -> StyleConfigError:
        where = f"[{self.table}] {key}" if self.table else key
        return StyleConfigError(str(self.path), where, problem, fix)

    def integer(self, key: str, low: int, high: int, *, strict: bool = False) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        try:
            number = None if isinstance(value, bool) or strict and not isinstance(
                value, int) else int(value)
        except (TypeError, ValueError):
            number = None
        if number is None or not low <= number <= high:
            raise self.fail(key, f"expected a whole number from {low} to {high}, got {value!r}",
                            f"set {key} to a number such as {max(low, min(high, 88))}")
        return number

    def boolean(self, key: str) -> bool | None:
        value = self.data.get(key)
        if value is None or isinstance(value, bool):
            return value
        truth = _TRUTH.get(str(value).strip().lower()) if isinstance(value, str) else None
        if truth is None:
            raise self.fail(key, f"expected true or false, got {value!r}",
                            f"set {key} to true or false")
        return truth

    def strict_boolean(self, key: str) -> bool | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, bool):
            raise self.fail(key, f"expected a TOML boolean, got {value!r}",
                            f"write {key} = true or {key} = false")
        return value

    def names(self, key: str) -> frozenset[str] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            items = [item.strip() for item in value.replace("\n", ",").split(",")]
            return frozenset(item for item in items if item)
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return frozenset(item.strip() for item in value)
        raise self.fail(key, f"expected a list of module names, got {value!r}",
                        f'write {key} = ["package"]')

    def strict_names(self, key: str) -> frozenset[str] | None:
        if isinstance(self.data.get(key), str):
            raise self.fail(key, f"expected a list of strings, got {self.data[key]!r}",
                            f'write {key} = ["package"]')
        return self.names(key)


def _ruff_style(path: Path, data: dict[str, Any], table: str) -> ImportStyle:
    top = _Reader(path, table, data)
    lint = data.get("lint") if isinstance(data.get("lint"), dict) else {}
    legacy, current = data.get("isort", {}), (lint or {}).get("isort", {})
    options = {**(legacy if isinstance(legacy, dict) else {}),
               **(current if isinstance(current, dict) else {})}
    isort_table = f"{table}.lint.isort" if table else "lint.isort"
    reader = _Reader(path, isort_table, options)
    settings: dict[str, Any] = {"source": f"{path} [{table or 'ruff.toml'}]"}
    _put(settings, "line_length", top.integer("line-length", 1, 320, strict=True))
    _put(settings, "tab_size", top.integer("indent-width", 1, 255, strict=True))
    settings["src"] = _ruff_src(top, path.parent)
    for key, name in (("force-wrap-aliases", "force_wrap_aliases"),
                      ("force-single-line", "force_single_line"),
                      ("combine-as-imports", "combine_as"),
                      ("split-on-trailing-comma", "split_on_trailing_comma"),
                      ("order-by-type", "order_by_type"),
                      ("force-sort-within-sections", "force_sort_within_sections"),
                      ("case-sensitive", "case_sensitive"), ("from-first", "from_first")):
        _put(settings, name, reader.strict_boolean(key))
    for key in ("force-to-top", "known-first-party", "known-third-party", "known-local-folder",
                "extra-standard-library", "single-line-exclusions"):
        _put(settings, key.replace("-", "_"), reader.strict_names(key))
    _put(settings, "lines_between_types",
         reader.integer("lines-between-types", 0, 1000, strict=True))
    order = options.get("relative-imports-order")
    if order is not None and order not in ("furthest-to-closest", "closest-to-furthest"):
        raise reader.fail("relative-imports-order", f"unknown value {order!r}",
                          'use "furthest-to-closest" or "closest-to-furthest"')
    _put(settings, "relative_order", order)
    return ImportStyle(**settings)


def _ruff_src(reader: _Reader, root: Path) -> tuple[str, ...]:
    value = reader.strict_names("src")
    folders = sorted(value) if value is not None else [".", "src"]
    return tuple(os.path.normpath(root / folder) for folder in folders)


def _put(settings: dict[str, Any], name: str, value: object) -> None:
    if value is not None:
        settings[name] = value


def _isort_style(path: Path, data: dict[str, Any], table: str) -> ImportStyle:
    reader = _Reader(path, table, data)
    profile = data.get("profile")
    if profile is not None:
        if profile in _ISORT_UNMIRRORED_PROFILES or profile not in _ISORT_PROFILES:
            problem = ("uses settings auxcheck does not mirror"
                       if profile in _ISORT_UNMIRRORED_PROFILES else "is not an isort profile")
            raise reader.fail("profile", f"profile {profile!r} {problem}",
                              f"use one of {', '.join(sorted(_ISORT_PROFILES))} or set the "
                              "options one by one")
        reader = _Reader(path, table, {**_ISORT_PROFILES[profile], **data})
    settings: dict[str, Any] = {**_ISORT_DEFAULTS, "tool": "isort",
                                "source": f"{path} [{table}]"}
    _put(settings, "line_length", reader.integer("line_length", 1, 100_000))
    _put(settings, "wrap", _isort_wrap(reader))
    _put(settings, "indent", _isort_indent(reader))
    _put(settings, "force_grid_wrap", _isort_grid_wrap(reader))
    _put(settings, "lines_between_types", reader.integer("lines_between_types", 0, 1000))
    for key, name in (("include_trailing_comma", "trailing_comma"),
                      ("use_parentheses", "use_parentheses"), ("combine_as_imports", "combine_as"),
                      ("force_single_line", "force_single_line"),
                      ("order_by_type", "order_by_type"), ("case_sensitive", "case_sensitive"),
                      ("force_sort_within_sections", "force_sort_within_sections"),
                      ("split_on_trailing_comma", "split_on_trailing_comma"),
                      ("from_first", "from_first")):
        _put(settings, name, reader.boolean(key))
    for key in ("known_first_party", "known_third_party", "known_local_folder",
                "extra_standard_library", "force_to_top", "single_line_exclusions"):
        _put(settings, key, reader.names(key))
    if reader.boolean("reverse_relative"):
        settings["relative_order"] = "closest-to-furthest"
    settings["src"] = _isort_src(reader, path.parent)
    return ImportStyle(**settings)


def _isort_wrap(reader: _Reader) -> WrapMode | None:
    value = reader.data.get("multi_line_output")
    if value is None:
        return None
    text = str(value).strip()
    names = [mode.upper().replace("-", "_") for mode in _WRAP_MODES]
    if text in ("6", "VERTICAL_GRID_GROUPED_NO_COMMA"):
        return "vertical-grid-grouped"  # isort's deprecated alias of mode 5
    if text.isdigit() and int(text) < len(_WRAP_MODES):
        return _WRAP_MODES[int(text)]
    if text in names:
        return _WRAP_MODES[names.index(text)]
    raise reader.fail("multi_line_output", f"unsupported wrap mode {value!r}",
                      "use one of 0-5 (GRID, VERTICAL, HANGING_INDENT, VERTICAL_HANGING_INDENT, "
                      "VERTICAL_GRID, VERTICAL_GRID_GROUPED)")


def _isort_indent(reader: _Reader) -> str | None:
    value = reader.data.get("indent")
    if value is None:
        return None
    text = str(value)
    if text.isdigit():
        return " " * int(text)
    text = text.strip("'").strip('"')
    return "\t" if text.lower() == "tab" else text


def _isort_grid_wrap(reader: _Reader) -> int | None:
    value = reader.data.get("force_grid_wrap")
    if isinstance(value, bool):
        return 2 if value else 0
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return 0 if value.strip().lower() == "false" else 2  # isort's old boolean spelling
    return reader.integer("force_grid_wrap", 0, 1000)


def _isort_src(reader: _Reader, root: Path) -> tuple[str, ...]:
    value = reader.data.get("src_paths")
    if value is None:
        return (str(root / "src"), str(root))
    folders = reader.names("src_paths") or frozenset()
    return tuple(sorted(os.path.normpath(root / folder) for folder in folders))


# ------------------------------------------------------------------------ sections


def section_of(style: ImportStyle, level: int, module: str) -> int:
    """Returns the section (FUTURE .. LOCAL_FOLDER) the tool puts a module in.

    Relative imports are local-folder; then ``__future__``; then the ``known_*``
    lists (most specific dotted prefix first; fnmatch patterns); then the
    standard library (:data:`sys.stdlib_module_names`); then modules found in the
    style's ``src`` folders are first-party; anything else is third-party.
    """
    if level > 0:
        return LOCAL_FOLDER
    base = module.split(".")[0]
    if base == "__future__":
        return FUTURE
    known = _known_section(style, module)
    if known is not None:
        return known
    if base in sys.stdlib_module_names:
        return STDLIB
    return FIRST_PARTY if _in_src(style, module) else THIRD_PARTY


def _known_section(style: ImportStyle, module: str) -> int | None:
    lists = [(FIRST_PARTY, style.known_first_party), (THIRD_PARTY, style.known_third_party),
             (LOCAL_FOLDER, style.known_local_folder), (STDLIB, style.extra_standard_library)]
    if style.tool == "isort":  # isort tries the later sections' patterns first
        lists = [lists[2], lists[0], lists[1], lists[3]]
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        for section, patterns in lists:
            if any(fnmatchcase(prefix, pattern) for pattern in patterns):
                return section
    return None


def _in_src(style: ImportStyle, module: str) -> bool:
    parts = module.split(".")
    for folder in map(Path, style.src):
        if style.tool == "isort":
            candidate = folder / parts[0]
            if (is_dir(candidate) or is_file(candidate.with_suffix(".py"))
                    or folder.name == parts[0] and is_dir(folder)):
                return True
            continue
        candidate = folder.joinpath(*parts)
        if is_dir(candidate) or any(is_file(candidate.with_suffix(s)) for s in (".py", ".pyi")):
            return True
    return False


# ------------------------------------------------------------------------ ordering


@functools.total_ordering
class _NatOrd:
    """A string compared as ruff compares names (the ``natord`` crate).

    Runs of digits compare by value, or digit by digit when either run starts
    with ``0``; every other character compares by code point, so ``.`` sorts
    before digits.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NatOrd) and _natord(self.text, other.text) == 0

    def __lt__(self, other: _NatOrd) -> bool:
        return _natord(self.text, other.text) < 0

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"_NatOrd({self.text!r})"


def _natord(left: str, right: str) -> int:
    i = j = 0
    while True:
        while i < len(left) and left[i].isspace():
            i += 1
        while j < len(right) and right[j].isspace():
            j += 1
        if i >= len(left) or j >= len(right):
            return (i < len(left)) - (j < len(right))
        a, b = left[i], right[j]
        if a in _DIGITS and b in _DIGITS:
            order, i, j = _natord_digits(left, i, right, j)
            if order:
                return order
            continue
        if a != b:
            return -1 if a < b else 1
        i, j = i + 1, j + 1


_DIGITS = frozenset("0123456789")


def _natord_digits(left: str, i: int, right: str, j: int) -> tuple[int, int, int]:
    fractional = left[i] == "0" or right[j] == "0"
    bias = 0
    while True:
        a = i < len(left) and left[i] in _DIGITS
        b = j < len(right) and right[j] in _DIGITS
        if not (a or b):
            return bias, i, j
        if a != b:
            return (1 if a else -1), i, j
        if left[i] != right[j] and (fractional or not bias):
            bias = -1 if left[i] < right[j] else 1
            if fractional:
                return bias, i, j
        i, j = i + 1, j + 1


def _natural(text: str) -> tuple[object, ...]:
    """isort's natural key: digit runs become numbers."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def _option(value: object | None) -> tuple[object, ...]:
    return (0,) if value is None else (1, value)


def _member_type(name: str) -> int:
    if len(name) > 1 and name.isupper():
        return 0  # CONSTANT
    return 1 if name[:1].isupper() else 2  # Class, variable


def member_key(style: ImportStyle, name: str, asname: str | None) -> tuple[object, ...]:
    """Returns the key that orders the members of a ``from`` import as the tool does.

    ruff: star first, then CONSTANT/Class/variable when ``order_by_type``, then
    the lower-cased name unless ``case_sensitive``, then the name and asname, all
    in natord order.  isort: ``force_to_top``, the type, the (lower-cased) name in
    natural order; a name's plain import comes before its aliases, which isort
    orders by their text.  isort keeps the input order of names that tie.
    """
    if style.tool == "isort":
        return (_natural(_isort_member_text(style, name)),
                *_option(None if asname is None else _natural(f"{name} as {asname}")))
    return (name != "*", _member_type(name) if style.order_by_type else 0,
            0 if style.case_sensitive else _NatOrd(name.lower()), _NatOrd(name),
            *_option(None if asname is None else _NatOrd(asname)))


def _isort_member_text(style: ImportStyle, name: str) -> str:
    prefix = ""
    if style.order_by_type:
        prefix = "ABC"[_member_type(name)]
    text = name if style.case_sensitive else name.lower()
    return f"{'A' if text in style.force_to_top else 'B'}{prefix}{text}"


def _isort_module_text(style: ImportStyle, module: str) -> str:
    match = re.match(r"^(\.+)\s*(.*)", module)
    if match:
        separator = " " if style.relative_order == "closest-to-furthest" else "_"
        module = separator.join(match.groups())
    text = module if style.case_sensitive else module.lower()
    return f"{'A' if text in style.force_to_top else 'B'}{text}"


def statement_key(style: ImportStyle, *, kind: Kind, level: int, module: str,
                  first: tuple[str, str | None] | None = None, asname: str | None = None,
                  names: Sequence[tuple[str, str | None]] | None = None) -> tuple[object, ...]:
    """Returns the key that orders statements inside one section as the tool does.

    ``kind="import"`` is ``import <module> [as <asname>]``; ``kind="from"`` is
    ``from <level dots><module> import ...`` whose first (sorted) member is
    ``first``.  Without ``force_sort_within_sections`` every ``import`` comes
    before every ``from`` (the reverse with ``from_first`` and in the future
    section).  ruff then compares the relative level, the module (lower-cased
    unless ``case_sensitive``, natord), the first member and the asname.  isort
    compares the module alone (natural order), so statements of one module keep
    the order :func:`render_from` gives them; with ``force_sort_within_sections``
    isort compares the whole statement text, which needs ``names`` (all members).
    """
    if style.tool == "isort":
        return _isort_statement_key(style, kind, level, module, asname,
                                    list(names) if names is not None else
                                    [first] if first is not None else [])
    module_key = _ruff_module_key(style, kind, level, module, first, asname)
    if style.force_sort_within_sections:
        return module_key
    return (_kind_rank(style, kind, level, module), *module_key)


def _kind_rank(style: ImportStyle, kind: Kind, level: int, module: str) -> int:
    from_first = style.from_first or section_of(style, level, module) == FUTURE
    return int((kind == "from") != from_first)


def _ruff_module_key(style: ImportStyle, kind: Kind, level: int, module: str,
                     first: tuple[str, str | None] | None,
                     asname: str | None) -> tuple[object, ...]:
    name = module or None
    if level == 0:
        distance: tuple[int, int] = (2, 0)
    elif style.relative_order == "closest-to-furthest":
        distance = (0, level)
    else:
        distance = (1, -level)
    lower = None if name is None or style.case_sensitive else _NatOrd(name.lower())
    alias = None if first is None or kind == "import" else member_key(style, *first)
    return (name not in style.force_to_top, distance, *_option(lower),
            *_option(None if name is None else _NatOrd(name)), *_option(alias),
            *_option(None if asname is None else _NatOrd(asname)))


def _isort_statement_key(style: ImportStyle, kind: Kind, level: int, module: str,
                         asname: str | None,
                         names: Sequence[tuple[str, str | None]]) -> tuple[object, ...]:
    dotted = "." * level + module
    # isort orders by module first; force_sort_within_sections re-sorts that, stably.
    normal = (_kind_rank(style, kind, level, module), _natural(_isort_module_text(style, dotted)))
    if not style.force_sort_within_sections:
        return normal
    if kind == "import":
        return (*_isort_line_key(style, f"import {dotted}{_as(asname)}"), *normal)
    members = ", ".join(f"{name}{_as(alias)}" for name, alias in names)
    return (*_isort_line_key(style, f"from {dotted} import {members}"), *normal)


def _isort_line_key(style: ImportStyle, text: str) -> tuple[object, ...]:
    """isort's force_sort_within_sections key of a rendered statement."""
    code = " ".join(part.split("#", 1)[0] for part in text.splitlines())
    line = " ".join(code.translate(str.maketrans("", "", "(),\\")).split())
    match = re.match(r"^from (\.+)\s*(.*)", line)
    if match and style.relative_order == "closest-to-furthest":  # isort's reverse_relative
        line = f"from {' '.join(match.groups())}"
    line = re.sub("^import ", "", re.sub("^from ", "", line))
    top = "A" if line.split(" ")[0] in style.force_to_top else "B"
    if not style.order_by_type:
        line = line.lower()
    return (_natural(top + line),)


def _as(asname: str | None) -> str:
    return "" if asname is None else f" as {asname}"


# ----------------------------------------------------------------------- rendering


def _comment_text(comment: str | None) -> str | None:
    """The comment's text without its ``#``, as isort stores it (None when empty)."""
    if comment is None:
        return None
    text = comment.split("#", 1)[1] if "#" in comment else comment
    return text.strip() or None


def render_import(style: ImportStyle, module: str, asname: str | None = None, *,
                  comment: str | None = None) -> str:
    """Returns ``import <module> [as <asname>]`` with its comment; neither tool wraps it."""
    text = _comment_text(comment)
    return f"import {module}{_as(asname)}" + (f"  # {text}" if text is not None else "")


def render_from(style: ImportStyle, level: int, module: str, names: Sequence[tuple[str, str | None]],
                *, indent: str = "", magic_comma: bool = False, sort: bool = True,
                comment: str | None = None) -> list[str]:
    """Returns the statements the tool writes for ``from <dots><module> import <names>``.

    The result is what the tool makes of that statement written on one line with
    ``comment`` after it (and a trailing comma inside parentheses when
    ``magic_comma``): one string per statement, lines joined by ``\\n`` and each
    prefixed by the block indentation ``indent``, which counts toward the line
    length.  Several statements come back under ``force_single_line``, or when
    aliased members are not combined: ruff gathers the plain members into one
    statement and gives each aliased member its own, ordered by first member;
    isort cuts the plain members at every aliased one.  The comment is kept
    where the tool keeps it: ruff after ``(`` of a wrapped statement (after the
    member when there is only one), isort as its wrap mode puts it, counted
    toward the line length except where isort itself does not count it.
    ``sort=False`` keeps the order of ``names``.
    """
    statement = ImportStatement("from", tuple(names), module, level, comment, magic_comma)
    if style.tool == "isort":
        state = _IsortFrom("." * level + module)
        state.take(style, statement)
        lines = _isort_from_lines(style, state, _isort_width(style, indent), sort)
        if sort and style.force_sort_within_sections:
            lines.sort(key=lambda line: _isort_line_key(style, line))
    else:
        entries: dict[tuple[object, ...], _RuffFrom] = {}
        _ruff_take(style, entries, statement, 0)
        ordered = sorted(entries.values(), key=lambda e: _ruff_from_key(style, e, sort))
        lines = [_ruff_format_from(style, entry, indent, sort) for entry in ordered]
    return [_indent(line, indent) for line in lines]


def _indent(text: str, indent: str) -> str:
    return "\n".join(indent + line if line else line for line in text.split("\n"))


# ruff ---------------------------------------------------------------------------


@dataclass(slots=True)
class _RuffFrom:
    """One statement ruff will write: the members it gathered and their comments."""

    level: int
    module: str
    index: int
    aliases: dict[tuple[str, str | None], list[str]] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)
    trailing_comma: bool = False


def _ruff_take(style: ImportStyle, entries: dict[tuple[object, ...], _RuffFrom],
               statement: ImportStatement, index: int) -> None:
    """Adds one statement to ruff's entries, as ruff's ``normalize_imports`` does."""
    level, module, names = statement.level, statement.module, statement.names
    text = _comment_text(statement.comment)
    comment = [f"# {text}"] if text is not None else []
    isolate = (style.force_single_line and module not in style.single_line_exclusions
               and names[0][0] != "*")

    def entry_of(name: str, asname: str | None) -> _RuffFrom:
        if name == "*":
            key: tuple[object, ...] = (level, module, "*")
        elif not isolate and (asname is None or style.combine_as):
            key = (level, module)
        else:
            key = (level, module, name, asname)
        return entries.setdefault(key, _RuffFrom(level, module, index))

    # A lone member's comment belongs to the member, several members' to the statement.
    single = len(names) == 1
    if not single:
        targets = [entry_of(*alias) for alias in names] if isolate else [entry_of(*names[0])]
        for target in targets:
            target.comments.extend(comment)
    for name, asname in names:
        entry = entry_of(name, asname)
        entry.aliases.setdefault((name, asname), []).extend(comment if single else [])
        if not isolate and statement.magic_comma and style.split_on_trailing_comma:
            entry.trailing_comma = True


def _ruff_members(style: ImportStyle, entry: _RuffFrom,
                  sort: bool) -> list[tuple[tuple[str, str | None], list[str]]]:
    members = list(entry.aliases.items())
    if sort:
        members.sort(key=lambda item: member_key(style, *item[0]))
    return members


def _ruff_from_key(style: ImportStyle, entry: _RuffFrom, sort: bool) -> tuple[object, ...]:
    first = _ruff_members(style, entry, sort)[0][0]
    return (*statement_key(style, kind="from", level=entry.level, module=entry.module,
                           first=first), entry.index)


def _ruff_format_from(style: ImportStyle, entry: _RuffFrom, indent: str, sort: bool) -> str:
    members = _ruff_members(style, entry, sort)
    start = f"from {'.' * entry.level}{entry.module} import "
    spelled = [f"{name}{_as(asname)}" for (name, asname), _ in members]
    star = any(name == "*" for (name, _), _ in members)
    if star or (not entry.trailing_comma
                and (len(members) == 1 or not any(comments for _, comments in members))
                and (not style.force_wrap_aliases or len(members) == 1
                     or all(asname is None for (_, asname), _ in members))):
        comments = entry.comments + [c for _, alias_comments in members for c in alias_comments]
        line = start + ", ".join(spelled) + "".join(f"  {c}" for c in comments)
        counted = start + ", ".join(spelled) + "".join(
            f"  {c}" for c in comments if not _is_pragma(c))
        if star or _ruff_width(style, indent + counted) <= style.line_length:
            return line
    head = start + "(" + "".join(f"  {c}" for c in entry.comments)
    body = [style.indent + text + "," + "".join(f"  {c}" for c in comments)
            for text, (_, comments) in zip(spelled, members)]
    return "\n".join([head, *body, ")"])


_PRAGMAS = ("isort", "type", "pyright", "pyrefly", "pylint", "flake8", "ruff", "ty")


def _is_pragma(comment: str) -> bool:
    """ruff's ``is_pragma_comment``: such comments do not count toward the line length."""
    if not comment.startswith("#"):
        return False
    text = comment[1:].lstrip()
    if text[:4].lower() == "noqa" or text.startswith("nosec"):
        return True
    head, colon, _ = text.partition(":")
    return bool(colon) and head in _PRAGMAS


def _ruff_width(style: ImportStyle, text: str) -> int:
    width = 0
    for char in text:
        if char == "\t":
            width += style.tab_size - width % style.tab_size
        elif unicodedata.combining(char):
            continue
        else:
            width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


# isort --------------------------------------------------------------------------


@dataclass(slots=True)
class _IsortFrom:
    """What isort's parser gathers about one module's ``from`` imports."""

    module: str
    names: dict[str, bool] = field(default_factory=dict)  # name -> imported without alias
    aliases: dict[str, list[str]] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)
    combined_comments: list[str] = field(default_factory=list)
    alias_comments: dict[str, list[str]] = field(default_factory=dict)
    nested: dict[str, str] = field(default_factory=dict)
    trailing_comma: bool = False

    def take(self, style: ImportStyle, statement: ImportStatement) -> None:
        """Adds one statement as isort parses it written on one line."""
        members = ", ".join(f"{name}{_as(asname)}" for name, asname in statement.names)
        if statement.magic_comma:
            members = f"({members},)"
        text = _comment_text(statement.comment)
        tail = f"  # {text}" if text is not None else ""
        self.take_text(style, f"from {self.module} import {members}{tail}")

    def take_text(self, style: ImportStyle, text: str) -> None:
        """Adds one written statement, as isort's ``parse.file_contents`` reads it."""
        first, *rest = text.split("\n")
        code, comments, nested = _isort_first_line(first)
        for line in rest:
            part, hashmark, comment = line.partition("#")
            code += "\n" + part
            if hashmark:
                comments.append(comment.strip())
                stripped = _strip_syntax(part).strip()
                if stripped and " " not in stripped.replace(" as ", ""):
                    nested[stripped] = comment.strip()
        code = _normalize_from(code)
        tokens = _strip_syntax(code).split()
        direct = tokens[1:]
        attach = self._take_aliases(style, tokens, direct, comments, nested)
        names = tokens[1:]
        for name in names:
            own = nested.get(name)
            if own is not None:
                self.nested[name] = own
                if own in comments:
                    comments.remove(own)
        if style.force_single_line and comments and attach is None and len(names) == 1:
            before = self.nested.get(names[0], "")
            self.nested[names[0]] = f"{before}{'; ' if before else ''}{'; '.join(comments)}"
            comments = []
        for name in names:
            self.names[name] = self.names.get(name, False) or name in direct
        (self.comments if attach is None else attach).extend(comments)
        if names and names[-1] and "," in code.split(names[-1])[-1]:
            self.trailing_comma = True

    def _take_aliases(self, style: ImportStyle, tokens: list[str], direct: list[str],
                      comments: list[str], nested: dict[str, str]) -> list[str] | None:
        """Reads the ``name as alias`` pairs out of ``tokens``; returns where comments go."""
        attach: list[str] | None = None
        if "as" not in tokens or tokens.index("as") + 1 >= len(tokens):
            return None
        while "as" in tokens:
            at = tokens.index("as")
            name, asname = tokens[at - 1], tokens[at + 1]
            for token in (name, asname, "as"):
                direct.remove(token)
            aliases = self.aliases.setdefault(name, [])
            if asname not in aliases:
                aliases.append(asname)
            spelled = f"{name} as {asname}"
            if spelled in nested:
                self.nested[spelled] = nested[spelled]
                if nested[spelled] in comments:
                    comments.remove(nested[spelled])
            if comments and attach is None:
                attach = (self.combined_comments if style.combine_as
                          else self.alias_comments.setdefault(name, []))
            del tokens[at:at + 2]
        return attach


def _isort_first_line(line: str) -> tuple[str, list[str], dict[str, str]]:
    """The code, comments and per-name comments of a statement's first line."""
    code, hashmark, comment = line.partition("#")
    comments = [comment.strip()] if hashmark else []
    parts = _strip_syntax(code).split()
    nested = {parts[-1]: comments[0]} if len(parts) == 2 and comments else {}
    return code, comments, nested


def _strip_syntax(text: str) -> str:
    """isort's ``strip_syntax``: the words of an import without its punctuation."""
    text = text.replace("_import", "[[i]]").replace("_cimport", "[[ci]]")
    for mark in "\\(),":
        text = text.replace(mark, " ")
    words = text.split()
    for keyword in ("from", "import", "cimport"):
        if keyword in words:
            words.remove(keyword)
    text = " ".join(words).replace("[[i]]", "_import").replace("[[ci]]", "_cimport")
    return text.replace("{ ", "{|").replace(" }", "|}")


def _normalize_from(text: str) -> str:
    """isort's ``normalize_from_import_string``."""
    text = text.replace("import(", "import (").replace("\\", " ").replace("\n", " ")
    head, *tail = text.split(" import ")
    words = head.split(" ")
    return " import ".join([words[0] + " " + "".join(words[1:]), *tail])


def _isort_width(style: ImportStyle, indent: str) -> int:
    # isort sorts an indented block with the line length less the indentation.
    return max(style.line_length - len(indent), 0)


def _with_comments(comments: Sequence[str], text: str) -> str:
    """isort's ``comments.add_to_line`` with its default ``  #`` prefix."""
    if not comments:
        return text
    joined = "; ".join(dict.fromkeys(comments))
    base, hashmark, _ = text.partition("#")
    base = base.rstrip() if hashmark else text
    return f"{base}  # {joined}" if joined else f"{base}  #"


def _isort_from_lines(style: ImportStyle, state: _IsortFrom, width: int,
                      sort: bool) -> list[str]:
    """The statements of one module that ``isort --check`` accepts.

    isort does not always accept its own output (a wrapped aliased member makes
    the module's next statement explode, a comment on the first line of a
    wrapped statement becomes that member's own comment), so the output is read
    back and written again until it stops changing, as repeated runs of isort do.
    """
    lines = _isort_emit(style, state, width, sort)
    for _ in range(_ISORT_ROUNDS if sort else 0):
        again = _IsortFrom(state.module)
        # The next run reads the statements in the order this one leaves them in.
        for text in (sorted(lines, key=lambda line: _isort_line_key(style, line))
                     if style.force_sort_within_sections else lines):
            again.take_text(style, text)
        latest = _isort_emit(style, again, width, sort)
        if latest == lines:
            break
        lines = latest
    return lines


_ISORT_ROUNDS = 8


def _isort_emit(style: ImportStyle, state: _IsortFrom, width: int, sort: bool) -> list[str]:
    """The statements isort writes for one module (``output._with_from_imports``)."""
    writer = _IsortWriter(style, width)
    start = f"from {state.module} import "
    names = list(state.names)
    if sort or style.force_single_line:
        names.sort(key=lambda name: _natural(_isort_member_text(style, name)))
    aliased = {name: [f"{name} as {a}" for a in state.aliases[name]]
               for name in names if name in state.aliases}
    nested = dict(state.nested)
    if style.combine_as:
        names = _isort_combine(state, names, aliased)
    comments, combined = list(state.comments), list(state.combined_comments)
    output: list[str] = []
    if "*" in names:  # a star import goes first, with only its own comment
        names.remove("*")
        own = nested.pop("*", None)
        output.append(writer.line(_with_comments([own] if own else [], start + "*")))
    if style.force_single_line and state.module not in style.single_line_exclusions:
        return output + _isort_single_lines(writer, state, start, names, aliased, nested,
                                            comments)
    while names:
        cut = False
        while names and names[0] in aliased:
            cut = True
            name = names.pop(0)
            output += _isort_aliases(writer, start, name, aliased[name],
                                     state.alias_comments.get(name, []), nested,
                                     state.names[name])
        comments = _isort_nested_singles(writer, start, names, aliased, nested, comments,
                                         output)
        group = []
        while names and names[0] not in aliased:
            group.append(names.pop(0))
        if style.combine_as:
            comments += combined
            combined = []
        text = writer.grouped(start, group, comments, state.trailing_comma and not cut, cut)
        if text:
            output.append(text)
        comments = []
    return output


def _isort_combine(state: _IsortFrom, names: list[str],
                   aliased: dict[str, list[str]]) -> list[str]:
    combined: list[str] = []
    for name in names:
        if name in aliased:
            spelled = sorted(aliased.pop(name), key=_natural)
            combined += [name, *spelled] if state.names[name] else spelled
        else:
            combined.append(name)
    return combined


def _isort_nested_singles(writer: _IsortWriter, start: str, names: list[str],
                          aliased: dict[str, list[str]], nested: dict[str, str],
                          comments: list[str], output: list[str]) -> list[str]:
    """Writes the names that carry their own comment, each on its own; returns the rest."""
    for name in list(names):
        comment = nested.get(name)
        if comment is None or name in aliased:
            continue
        del nested[name]
        if comment.lower().startswith("noqa") and writer.style.wrap == "hanging-indent":
            comments = [*comments, comment]
            continue
        names.remove(name)
        use, comments = ([], comments) if names else (comments, [])
        line = _with_comments(use, start + name)
        line += f"{';' if use else '  #'} {comment}"
        output.append(writer.line(line))
    return comments


def _isort_aliases(writer: _IsortWriter, start: str, name: str, spelled: list[str],
                   comments: list[str], nested: dict[str, str], plain: bool) -> list[str]:
    """isort's ``_build_as_imports``: a name's plain import, then its aliases."""
    comments = list(comments)
    output = []
    if plain:
        own = nested.pop(name, None)
        output.append(writer.line(_with_comments(comments + ([own] if own else []),
                                                 start + name)))
        comments = []
    for text in sorted(spelled, key=_natural):
        own = nested.pop(text, None)
        if comments and writer.style.use_parentheses:
            lines = writer.line(_with_comments([own] if own else [], start + text)).split("\n")
            lines[0] += _with_comments(comments, "")
            output.append("\n".join(lines))
        else:
            output.append(writer.line(_with_comments(comments + ([own] if own else []),
                                                     start + text)))
        comments = []
    return output


def _isort_single_lines(writer: _IsortWriter, state: _IsortFrom, start: str, names: list[str],
                        aliased: dict[str, list[str]], nested: dict[str, str],
                        comments: list[str]) -> list[str]:
    output: list[str] = []
    for name in names:
        if name in aliased:
            output += _isort_aliases(writer, start, name, aliased[name],
                                     [*comments, *state.alias_comments.get(name, [])], nested,
                                     state.names[name])
        else:
            own = nested.pop(name, None)
            output.append(writer.line(_with_comments(comments + ([own] if own else []),
                                                     start + name)))
        comments = []
    return output


class _IsortWriter:
    """isort's wrapping (``wrap.py`` and ``wrap_modes.py``) at one line length."""

    def __init__(self, style: ImportStyle, width: int) -> None:
        self.style = style
        self.width = width

    def grouped(self, start: str, names: list[str], comments: list[str], trailing_comma: bool,
                cut: bool) -> str:
        """``_build_grouped_from_imports``: the plain members of one statement."""
        if not names:
            return ""
        style, width = self.style, self.width
        text = _with_comments(comments, start + ", ".join(names))
        too_long = len(text) > width
        multiline = ((style.force_grid_wrap and len(names) >= style.force_grid_wrap)
                     or (too_long and len(names) > 1)
                     or (too_long and style.wrap not in ("grid", "vertical")))
        if style.split_on_trailing_comma and not cut and (
                trailing_comma or (style.trailing_comma and multiline)):
            return self.statement(start, names, comments, explode=True)
        if multiline:
            wrapped = self.statement(start, names, comments, style.wrap)
            if style.wrap == "grid" and max(map(len, wrapped.split("\n"))) > width:
                wrapped = self.statement(start, names, comments, "vertical-grid")
            return wrapped
        return self.line(text) if too_long else text

    def statement(self, start: str, names: list[str], comments: list[str],
                  mode: WrapMode = "vertical-hanging-indent", *, explode: bool = False) -> str:
        """``wrap.import_statement``: the members wrapped in one mode."""
        width, comma = (1, True) if explode else (self.width, self.style.trailing_comma)
        formatter = _FORMATTERS["vertical-hanging-indent" if explode else mode]
        text = formatter(_Wrap(start, list(names), " " * (len(start) + 1), self.style.indent,
                               width, list(comments), comma))
        return text if "\n" in text else self.line(text)

    def line(self, content: str) -> str:
        """``wrap.line``: one too-long statement broken at ``import``, ``.`` or ``as``."""
        style, width = self.style, self.width
        if len(content) <= width:
            return content
        code, hashmark, comment = content.partition("#")
        note = comment if hashmark else None
        vertical = style.wrap in ("vertical-hanging-indent", "vertical-grid-grouped")
        if code.rstrip().endswith("*"):
            if style.use_parentheses or vertical:
                return content
            prefix, keyword, _ = code.rstrip().rsplit(" ", 2)
            suffix = f"  #{note}" if note else ""
            return f"{prefix} {keyword} \\\n{style.indent}*{suffix}"
        for splitter in ("import ", "cimport ", ".", "as "):
            pattern = r"\b" + re.escape(splitter) + r"\b"
            if re.search(pattern, code) and not code.strip().startswith(splitter):
                return self._split(content, code, note, splitter, pattern, vertical)
        return content

    def _split(self, content: str, code: str, note: str | None, splitter: str, pattern: str,
               vertical: bool) -> str:
        style = self.style
        parts = re.split(pattern, code)
        hoist = bool(note) and ((style.use_parentheses and "noqa" in (note or ""))
                                or (vertical and not style.use_parentheses))
        if note and not hoist:
            comma = ("," if style.trailing_comma and style.use_parentheses
                     and not code.rstrip().endswith(",") else "")
            parts[-1] = f"{parts[-1].strip()}{comma}  #{note}"
        rest: list[str] = []
        while len(content) + 2 > self.width and parts:
            rest.append(parts.pop())
            content = splitter.join(parts)
        if not content:
            content = rest.pop()
        tail = self.line(style.indent + splitter.join(rest).lstrip())
        if not (style.use_parentheses or vertical):
            return f"{content}{splitter}\\\n{tail}"
        if splitter == "as ":
            return f"{content}{splitter}{tail.lstrip()}"
        comma = "," if style.trailing_comma and not note else ""
        opening = ""
        if hoist:
            opening, tail = f"  #{note}", tail.rstrip()
            comma = "," if style.trailing_comma else ""
        lines = f"{content}{splitter}({opening}\n{tail}{comma}{chr(10) if vertical else ''})"
        last = lines.split("\n")
        if "  #" in last[-1] and last[-1].endswith(")"):
            code_part, after = last[-1].split("  #", 1)
            last[-1] = f"{code_part})  #{after[:-1]}"
        return "\n".join(last)


@dataclass(slots=True)
class _Wrap:
    """The arguments isort passes to every wrap mode."""

    start: str
    names: list[str]
    white_space: str
    indent: str
    width: int
    comments: list[str]
    trailing_comma: bool


def _grid(w: _Wrap) -> str:
    if not w.names:
        return ""
    text = w.start + "(" + w.names.pop(0)
    while w.names:
        name = w.names.pop(0)
        candidate = _with_comments(w.comments, f"{text}, {name}")
        if len(candidate.split("\n")[-1]) + 1 > w.width:
            lines = [w.white_space + name.split(" ")[0]]
            for part in name.split(" ")[1:]:
                longer = f"{lines[-1]} {part}"
                if len(longer) + 1 > w.width:
                    lines.append(w.white_space + part)
                else:
                    lines[-1] = longer
            text = _with_comments(w.comments, f"{text},") + "\n" + "\n".join(lines)
            w.comments = []
        else:
            text += ", " + name
    return text + ("," if w.trailing_comma else "") + ")"


def _vertical(w: _Wrap) -> str:
    if not w.names:
        return ""
    first = _with_comments(w.comments, w.names.pop(0) + ",") + "\n" + w.white_space
    rest = (",\n" + w.white_space).join(w.names)
    return f"{w.start}({first}{rest}{',' if w.trailing_comma else ''})"


def _hanging_end(line: str) -> str:
    return (line if line.endswith(" ") else line + " ") + "\\"


def _hanging_indent(w: _Wrap) -> str:
    if not w.names:
        return ""
    limit = w.width - 3
    name = w.names.pop(0)
    text = w.start + name
    if len(text) > limit:
        text = _hanging_end(w.start) + "\n" + w.indent + name
    while w.names:
        name = w.names.pop(0)
        longer = f"{text}, {name}"
        if len(longer.split("\n")[-1]) > limit:
            longer = _hanging_end(text + ",") + "\n" + w.indent + name
        text = longer
    if w.comments:
        commented = _with_comments(w.comments, text)
        if len(commented.split("\n")[-1]) <= limit + 2:
            return commented
        joined = "; ".join(dict.fromkeys(w.comments))
        return _hanging_end(text) + "\n" + f"{w.indent}# {joined}"
    return text


def _vertical_hanging_indent(w: _Wrap) -> str:
    comment = _with_comments(w.comments, "")
    names = (",\n" + w.indent).join(w.names)
    comma = "," if w.trailing_comma else ""
    return f"{w.start}({comment}\n{w.indent}{names}{comma}\n)"


def _vertical_grid_common(w: _Wrap, closing_on_line: bool) -> str:
    if not w.names:
        return ""
    text = w.start + _with_comments(w.comments, "(") + "\n" + w.indent + w.names.pop(0)
    while w.names:
        name = w.names.pop(0)
        longer = f"{text}, {name}"
        length = len(longer.rsplit("\n", 1)[-1])
        if w.names or w.trailing_comma:
            length += 1
        if not w.names and closing_on_line:
            length += 1
        text = f"{text},\n{w.indent}{name}" if length > w.width else longer
    return text + ("," if w.trailing_comma else "")


def _vertical_grid(w: _Wrap) -> str:
    return _vertical_grid_common(w, True) + ")"


def _vertical_grid_grouped(w: _Wrap) -> str:
    return _vertical_grid_common(w, False) + "\n)"


_FORMATTERS: dict[str, Callable[[_Wrap], str]] = {
    "grid": _grid, "vertical": _vertical, "hanging-indent": _hanging_indent,
    "vertical-hanging-indent": _vertical_hanging_indent, "vertical-grid": _vertical_grid,
    "vertical-grid-grouped": _vertical_grid_grouped,
}


# -------------------------------------------------------------------------- blocks


def sort_block(style: ImportStyle, statements: Iterable[ImportStatement], *,
               indent: str = "") -> str:
    """Returns the block the tool writes for these statements, ending in a newline.

    Statements of one module are merged as the tool merges them; sections come
    in order with one blank line between them, each ordered by
    :func:`statement_key` (``lines_between_types`` blank lines between its
    ``import`` and ``from`` statements).  Every line is prefixed by ``indent``.
    """
    sections: dict[int, list[tuple[tuple[object, ...], Kind, str]]] = {}
    for section, key, kind, text in _block_statements(style, list(statements), indent):
        sections.setdefault(section, []).append((key, kind, text))
    chunks = []
    for section in sorted(sections):
        ordered = sorted(sections[section], key=lambda item: item[0])
        chunks.append(_join_kinds(style, ordered, indent))
    return "\n\n".join(chunks) + "\n" if chunks else ""


def _join_kinds(style: ImportStyle, ordered: list[tuple[tuple[object, ...], Kind, str]],
                indent: str) -> str:
    lines: list[str] = []
    for index, (_, kind, text) in enumerate(ordered):
        changed = index and kind != ordered[index - 1][1]
        if changed and not style.force_sort_within_sections:
            lines += [""] * style.lines_between_types
        lines.append(_indent(text, indent))
    return "\n".join(lines)


def _block_statements(style: ImportStyle, statements: list[ImportStatement],
                      indent: str) -> list[tuple[int, tuple[object, ...], Kind, str]]:
    if style.tool == "isort":
        return _isort_block(style, statements, indent)
    return _ruff_block(style, statements, indent)


def _ruff_block(style: ImportStyle, statements: list[ImportStatement],
                indent: str) -> list[tuple[int, tuple[object, ...], Kind, str]]:
    plain: dict[tuple[str, str | None], tuple[int, list[str]]] = {}
    entries: dict[tuple[object, ...], _RuffFrom] = {}
    for index, statement in enumerate(statements):
        if statement.kind == "from":
            _ruff_take(style, entries, statement, index)
            continue
        text = _comment_text(statement.comment)
        for position, alias in enumerate(statement.names):
            _, comments = plain.setdefault(alias, (index, []))
            if position == 0 and text is not None:
                comments.append(f"# {text}")
    out: list[tuple[int, tuple[object, ...], Kind, str]] = []
    for (module, asname), (index, comments) in plain.items():
        key = statement_key(style, kind="import", level=0, module=module, asname=asname)
        line = f"import {module}{_as(asname)}" + "".join(f"  {c}" for c in comments)
        out.append((section_of(style, 0, module), (*key, index), "import", line))
    for entry in entries.values():
        out.append((section_of(style, entry.level, entry.module),
                    _ruff_from_key(style, entry, True), "from",
                    _ruff_format_from(style, entry, indent, True)))
    return out


def _isort_block(style: ImportStyle, statements: list[ImportStatement],
                 indent: str) -> list[tuple[int, tuple[object, ...], Kind, str]]:
    plain: dict[str, dict[str | None, list[str]]] = {}
    modules: dict[str, tuple[int, str, _IsortFrom]] = {}
    for statement in statements:
        if statement.kind == "from":
            dotted = "." * statement.level + statement.module
            _, _, state = modules.setdefault(
                dotted, (statement.level, statement.module, _IsortFrom(dotted)))
            state.take(style, statement)
            continue
        text = _comment_text(statement.comment)
        # isort gives the comment to the first aliased module, else to the first module.
        owner = next((alias for alias in statement.names if alias[1] is not None),
                     statement.names[0])
        for module, asname in statement.names:
            comments = plain.setdefault(module, {}).setdefault(asname, [])
            if (module, asname) == owner and text is not None:
                comments[:] = [text] if asname is None else [*comments, text]
    out: list[tuple[int, tuple[object, ...], Kind, str]] = []
    for module, spellings in plain.items():
        ordered = sorted(spellings.items(), key=lambda item: item[0] is not None)
        for asname, comments in ordered:
            line = _with_comments(comments, f"import {module}{_as(asname)}")
            out.append((section_of(style, 0, module),
                        _isort_text_key(style, "import", 0, module, asname, line),
                        "import", line))
    for level, module, state in modules.values():
        for line in _isort_from_lines(style, state, _isort_width(style, indent), True):
            out.append((section_of(style, level, module),
                        _isort_text_key(style, "from", level, module, None, line), "from", line))
    return out


def _isort_text_key(style: ImportStyle, kind: Kind, level: int, module: str,
                    asname: str | None, line: str) -> tuple[object, ...]:
    key = statement_key(style, kind=kind, level=level, module=module, asname=asname)
    if style.force_sort_within_sections:
        return (*_isort_line_key(style, line), *key[-2:])
    return key
