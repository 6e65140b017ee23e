"""Entry points of the ``sglang.srt.plugins`` group: can ``load_plugins`` call each one?

Read from the plugin's source, never imported: the module an entry point names must be in
the project, and what it names a module-level function (or class) taking no arguments.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from auxcheck._core.paths import is_file
from auxcheck._core.pyast import bound_names
from auxcheck._core.sources import parse_file

if TYPE_CHECKING:
    from auxcheck._releases.plugin_scan import EntryPoint

__all__ = ["entry_module", "entry_point_problem", "module_file"]


def entry_module(entry: EntryPoint, root: Path) -> Path | None:
    """Returns the resolved path of the plugin module ``entry`` names, None when it names none
    in the project (the scan keeps that module's tree for :func:`entry_point_problem`)."""
    module = entry.value.split("[", 1)[0].strip().partition(":")[0].strip()
    if not module or not all(p.isidentifier() for p in module.split(".")):
        return None
    path = module_file(root, module)
    return None if path is None else path.resolve()


def entry_point_problem(entry: EntryPoint, root: Path, *,
                        trees: Mapping[Path, ast.Module] | None = None) -> str | None:
    """Returns why ``load_plugins`` cannot call ``entry`` with no arguments, or None.

    ``trees`` are modules the plugin scan already parsed, by resolved path (read once)."""
    value = entry.value.split("[", 1)[0].strip()
    module, sep, attr = value.partition(":")
    module, attr = module.strip(), attr.strip()
    if not sep or not attr:
        return (f"{entry.value!r} names a module, not a callable: write "
                f'"{module or "package.module"}:register"')
    if not all(p.isidentifier() for p in (*module.split("."), *attr.split("."))):
        return f"{entry.value!r} is not of the form package.module:function"
    path = module_file(root, module)
    if path is None:
        return (f"module {module} is not in the project (looked for it under {root} and "
                f"{root / 'src'})")
    scanned = (trees or {}).get(path.resolve())
    tree = scanned if scanned is not None else parse_file(str(path),
                                                          shown=str(path.relative_to(root)))
    if not isinstance(tree, ast.Module):  # read, decoded and parsed as the plugin scan does
        seen = tree.message.partition("; ")[0]
        return f"module {module} cannot be checked: {tree.location}: AUX504 {seen}"
    return _callable_problem(tree, module, attr)


def module_file(root: Path, module: str) -> Path | None:
    parts = module.split(".")
    for base in (root, root / "src"):
        for candidate in (base.joinpath(*parts).with_suffix(".py"),
                          base.joinpath(*parts, "__init__.py")):
            if is_file(candidate):
                return candidate
    return None


def _callable_problem(tree: ast.Module, module: str, attr: str) -> str | None:
    head, _, rest = attr.partition(".")
    node = _top_level(tree.body, head)
    if node is None:
        return f"{module} has no module-level {head}"
    if rest:
        return None  # an attribute of an object: auxcheck cannot see it
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        required = _required(node.args)
        if required:
            return (f"{module}:{attr} takes {', '.join(required)}; load_plugins calls it with "
                    "no arguments")
        return None
    if isinstance(node, ast.ClassDef):
        init = _top_level(node.body, "__init__")
        if isinstance(init, (ast.FunctionDef, ast.AsyncFunctionDef)) and _required(init.args)[1:]:
            return (f"{module}:{attr} is a class whose __init__ takes "
                    f"{', '.join(_required(init.args)[1:])}; load_plugins calls it with none")
    return None


def _top_level(body: Iterable[ast.stmt], name: str) -> ast.stmt | None:
    found: ast.stmt | None = None
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                found = node
        elif isinstance(node, (ast.If, ast.Try)):
            inner = _top_level([*node.body, *node.orelse,
                                *(s for h in getattr(node, "handlers", []) for s in h.body)], name)
            found = inner or found
        elif (isinstance(node, (ast.Assign, ast.AnnAssign, ast.ImportFrom, ast.Import))
              and name in bound_names(node)):
            found = node
    return found


def _required(args: ast.arguments) -> list[str]:
    positional = [*args.posonlyargs, *args.args]
    with_default = len(args.defaults)
    required = [a.arg for a in positional[: len(positional) - with_default]]
    required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
    return required


# ---------------------------------------------------------------- contract
