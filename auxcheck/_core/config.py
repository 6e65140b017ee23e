"""The one reader of each configuration format (TOML, INI); the ``[tool.auxcheck]`` settings."""

from __future__ import annotations

import configparser
import importlib
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from auxcheck._core.errors import IniFileError, InvalidArgument, TomlFileError
from auxcheck._core.paths import CONFIG_LIMIT, is_file, read_regular_file

# tomllib is stdlib from 3.11; 3.10 uses the tomli backport (a conditional dependency).
_TOML = "tomllib" if sys.version_info >= (3, 11) else "tomli"


def load_toml(path: Path) -> dict[str, Any]:
    """Returns the parsed TOML file at ``path``: the one TOML reader of auxcheck.

    Raises TomlFileError (``cannot read: ...`` or ``not valid TOML (...)``); each caller
    turns it into its own error, naming the setting it was reading.
    """
    tomllib: Any = importlib.import_module(_TOML)  # on first use: it costs a no-work run
    try:
        raw = read_regular_file(path, limit=CONFIG_LIMIT)
    except OSError as exc:
        raise TomlFileError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        data: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TomlFileError(path, f"not valid TOML (not UTF-8: {exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise TomlFileError(path, f"not valid TOML ({exc})") from None
    except RecursionError:
        raise TomlFileError(path, "not valid TOML (nested too deeply to read)") from None
    return data


def load_ini(path: Path, *, strict: bool = False) -> configparser.ConfigParser:
    """Returns the parsed INI file at ``path`` (``setup.cfg``, ``tox.ini``, ``.isort.cfg``):
    the one INI reader of auxcheck. Values are raw (no interpolation).

    The file is read bounded (a regular file of at most CONFIG_LIMIT bytes), as UTF-8.
    ``strict`` refuses a section or option given twice, as mypy's reader does; otherwise
    the last one wins, as isort's does. Raises IniFileError (``cannot read: ...`` or
    ``not a valid INI file (...)``); each caller turns it into its own error or verdict.
    """
    parser = configparser.ConfigParser(strict=strict, interpolation=None)
    try:  # configparser.read() would skip a file it cannot open, without a word
        data = read_regular_file(path, limit=CONFIG_LIMIT)
    except OSError as exc:
        raise IniFileError(path, f"cannot read: {exc.strerror or exc}",
                           "fix the file's permissions, or remove it") from None
    try:
        parser.read_string(data.decode("utf-8"), source=str(path))
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise IniFileError(path, f"not a valid INI file ({exc})",
                           "fix the file's syntax") from None
    return parser


def read_pyproject(root: Path) -> dict[str, Any]:
    """Returns the parsed ``root/pyproject.toml`` ({} when there is none).

    Raises InvalidArgument naming the file when it cannot be read or is not valid TOML.
    """
    path = root / "pyproject.toml"
    if not is_file(path):
        return {}
    try:
        return load_toml(path)
    except TomlFileError as exc:
        raise InvalidArgument(f"{exc}; fix the file") from None


def _table(value: object, path: Path, key: str) -> dict[str, Any]:
    """Returns ``value`` when it is a TOML table (or absent: {}); raises InvalidArgument
    naming the file and the key otherwise."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidArgument(f"{path}: {key} must be a table (such as `[{key}]`), got "
                              f"{value!r}; fix the file")
    return value


def table_at(data: Mapping[str, Any], path: Path, *keys: str) -> dict[str, Any]:
    """Returns the table the ``keys`` name in ``data``, a TOML document read from ``path``
    (``"project", "entry-points"``: ``[project.entry-points]``); {} when one is absent.

    Raises InvalidArgument naming the file, the key and what it must be when a value on
    the way is not a table (``project = "x"``): every reader of ``pyproject.toml`` walks
    to the table it needs through here, so a wrong shape is an error, never a crash.
    """
    table: Mapping[str, Any] = data
    dotted = ""
    for key in keys:
        shown = key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else f'"{key}"'
        dotted = f"{dotted}.{shown}" if dotted else shown
        table = _table(table.get(key), path, dotted)
    return dict(table)


def auxcheck_table(pyproject: Path, *keys: str) -> dict[str, Any]:
    """Returns ``[tool.auxcheck]`` of the file ``pyproject`` (or the sub-table ``keys`` name,
    such as ``"migrate"``); {} when the file or the table is absent.

    Raises InvalidArgument naming the file and the key when the file is not valid TOML,
    or ``tool``, ``tool.auxcheck`` or a sub-table is not a table (``tool = 5``).
    """
    if not is_file(pyproject):
        return {}
    try:
        table: dict[str, Any] = load_toml(pyproject)
    except TomlFileError as exc:
        raise InvalidArgument(f"{exc}; fix the file") from None
    return table_at(table, pyproject, "tool", "auxcheck", *keys)


def _tool_setting(root: Path, key: str) -> object:
    return auxcheck_table(root / "pyproject.toml").get(key)


def _string_list(root: Path, key: str, what: str) -> list[str]:
    value = _tool_setting(root, key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidArgument(f"{root / 'pyproject.toml'}: [tool.auxcheck] {key} must be a list "
                              f"of {what}, got {value!r}")
    return value


def project_ignore(root: Path) -> list[str]:
    """Returns ``[tool.auxcheck] ignore`` of ``root/pyproject.toml`` ([] when absent).

    Raises InvalidArgument naming the file when it is not valid TOML or ``ignore``
    is not a list of strings.
    """
    return _string_list(root, "ignore", 'rule codes such as ["AUX104", "AUX5"]')


def project_sglang(root: Path) -> list[str]:
    """Returns ``[tool.auxcheck] sglang``: the SGLang releases the plugin supports ([] if absent).

    Raises InvalidArgument naming the file when the value is not a list of strings.
    """
    return _string_list(root, "sglang", 'SGLang releases such as ["0.5.20", "0.5.23"]')
