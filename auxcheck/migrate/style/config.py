"""Finding the project's ruff or isort configuration and reading it into an ImportStyle."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from auxcheck._core.config import load_ini, load_toml
from auxcheck._core.errors import IniFileError, StyleConfigError, TomlFileError
from auxcheck._core.paths import is_dir, is_file
from auxcheck.migrate.style.model import WRAP_MODES, ImportStyle, WrapMode

__all__ = ["find_style"]


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
    try:
        parser = load_ini(path)
    except IniFileError as exc:
        raise StyleConfigError(str(path), "(file)", exc.problem, exc.fix) from None
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
    names = [mode.upper().replace("-", "_") for mode in WRAP_MODES]
    if text in ("6", "VERTICAL_GRID_GROUPED_NO_COMMA"):
        return "vertical-grid-grouped"  # isort's deprecated alias of mode 5
    if text.isdigit() and int(text) < len(WRAP_MODES):
        return WRAP_MODES[int(text)]
    if text in names:
        return WRAP_MODES[names.index(text)]
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
