"""Project settings from ``[tool.auxcheck]`` in ``pyproject.toml``."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from auxcheck.errors import InvalidArgument

# tomllib is stdlib from 3.11; 3.10 uses the tomli backport (a conditional dependency).
_TOML = "tomllib" if sys.version_info >= (3, 11) else "tomli"


def project_ignore(root: Path) -> list[str]:
    """Returns ``[tool.auxcheck] ignore`` of ``root/pyproject.toml`` ([] when absent).

    Raises InvalidArgument naming the file when it is not valid TOML or ``ignore``
    is not a list of strings.
    """
    path = root / "pyproject.toml"
    if not path.is_file():
        return []
    tomllib: Any = importlib.import_module(_TOML)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"{path}: not valid TOML ({exc}); fix the file") from None
    value = data.get("tool", {}).get("auxcheck", {}).get("ignore", [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidArgument(
            f"{path}: [tool.auxcheck] ignore must be a list of rule codes such as "
            f'["AUX104", "AUX5"], got {value!r}'
        )
    return value
