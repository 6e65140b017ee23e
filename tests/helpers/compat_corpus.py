"""Old-layout imports injected into real files, and a check that a rewrite imports on both layouts.

:data:`FORMS` are the ways a plugin imports the moved names (module top, after code, inside a
function, aliased, dotted, with the file's own ``TYPE_CHECKING`` bound late or in a ``try``,
with a statement-level ``# noqa``, one alias at module level and in a function); :func:`inject` writes one into a real file. :func:`bound_uses`
runs the import-bearing module-level statements of a text (imports, ``try``/``if`` blocks
holding imports, ``TYPE_CHECKING`` bindings) in a fake SGLang of either layout, every other
module a permissive stand-in, and returns what the injected use statements evaluate to.
"""

from __future__ import annotations

import ast
import builtins
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from helpers.plugin_sources import MOVED, NEW, OLD

__all__ = ["FORMS", "LAYOUTS", "SCOPED_ALIAS", "USES", "CorpusForm", "LayoutRun", "Piece",
           "bound_uses", "inject"]

Place = Literal["top", "after_code", "end", "function"]
LAYOUTS = ("old", "new")

USES = "_auxcheck_uses"
"""The name the injected use statement binds (at module level or in the function)."""


@dataclass(frozen=True, slots=True)
class Piece:
    """Lines to inject at one place, and the expressions (with the class each must be)
    the use statement after them evaluates; ``None`` for a value not checked."""

    place: Place
    text: str
    uses: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class CorpusForm:
    """One old-layout import form: the pieces injected into a real file."""

    id: str
    pieces: tuple[Piece, ...]


SCOPED_ALIAS = CorpusForm("module-and-function-alias", (
    Piece("top", f"import {OLD} as _so\n", (("_so.CommittedTokens", "CommittedTokens"),)),
    Piece("function", f"import {OLD} as _so\n", (("_so.SamplingObserver", "SamplingObserver"),))))
"""One alias bound at module level for moved names and in a function for a staying one: each
body's imports bind what that body's uses read (none added to the function)."""

_FROM = f"from {OLD} import"
FORMS: tuple[CorpusForm, ...] = (
    CorpusForm("from-top", (Piece("top", f"{_FROM} CommittedTokens, DeviceAuxiliaryOutput\n",
                                  (("CommittedTokens", "CommittedTokens"),
                                   ("DeviceAuxiliaryOutput", "DeviceAuxiliaryOutput"))),)),
    CorpusForm("from-mixed-aliased", (Piece(
        "top", f"{_FROM} HostAuxiliaryOutput as _Host, SamplingObserver\n",
        (("_Host", "HostAuxiliaryOutput"), ("SamplingObserver", "SamplingObserver"))),)),
    CorpusForm("import-as", (Piece("top", f"import {OLD} as _so\n", (
        ("_so.DeviceAuxiliaryOutput", "DeviceAuxiliaryOutput"),
        ("_so.SamplingObserver", "SamplingObserver"))),)),
    CorpusForm("import-dotted", (Piece("top", f"import {OLD}\n", (
        (f"{OLD}.HostAuxiliaryOutput", "HostAuxiliaryOutput"),)),)),
    CorpusForm("import-dotted-and-package", (Piece("top", f"import sglang\nimport {OLD}\n", (
        (f"{OLD}.CommittedTokens", "CommittedTokens"),)),)),
    CorpusForm("from-package", (Piece("top", "from sglang.srt.sampling import sampling_observer\n",
                                      (("sampling_observer.CommittedTokens", "CommittedTokens"),
                                       )),)),
    CorpusForm("after-code", (Piece("after_code", f"{_FROM} CommittedTokens  # noqa: E402\n",
                                    (("CommittedTokens", "CommittedTokens"),)),)),
    CorpusForm("late-from-typing", (
        Piece("top", f"{_FROM} CommittedTokens\n", (("CommittedTokens", "CommittedTokens"),)),
        Piece("end", "from typing import TYPE_CHECKING  # noqa: E402\n",
              (("TYPE_CHECKING", None),)))),
    CorpusForm("late-import-typing", (
        Piece("top", f"{_FROM} DeviceAuxiliaryOutput\n",
              (("DeviceAuxiliaryOutput", "DeviceAuxiliaryOutput"),)),
        Piece("end", "import typing  # noqa: E402\n", (("typing.TYPE_CHECKING", None),)))),
    CorpusForm("late-aliased-typing", (
        Piece("after_code", f"{_FROM} HostAuxiliaryOutput  # noqa: E402\n",
              (("HostAuxiliaryOutput", "HostAuxiliaryOutput"),)),
        Piece("end", "from typing import TYPE_CHECKING as _TC  # noqa: E402\n",
              (("_TC", None),)))),
    CorpusForm("typing-in-try", (Piece("top", "try:\n    from typing import TYPE_CHECKING\n"
                                              "except ImportError:\n    TYPE_CHECKING = False\n"
                                              f"{_FROM} CommittedTokens\n",
                                       (("CommittedTokens", "CommittedTokens"),
                                        ("TYPE_CHECKING", None))),)),
    CorpusForm("in-function", (Piece("function", f"{_FROM} CommittedTokens\n",
                                     (("CommittedTokens", "CommittedTokens"),)),)),
    CorpusForm("in-function-import-as", (Piece("function", f"import {OLD} as _so\n",
                                               (("_so.HostAuxiliaryOutput",
                                                 "HostAuxiliaryOutput"),)),)),
    CorpusForm("in-function-late-typing", (Piece(
        "function", f"{_FROM} CommittedTokens\nfrom typing import TYPE_CHECKING\n",
        (("CommittedTokens", "CommittedTokens"), ("TYPE_CHECKING", None))),)),
    CorpusForm("noqa-wrapped-split", (Piece(
        "top", f"{_FROM} (  # noqa: F401\n    CommittedTokens,\n    SamplingObserver,\n)\n"),)),
    CorpusForm("noqa-trailing-split", (Piece(
        "top", f"{_FROM} DeviceAuxiliaryOutput, SamplingObserver  # noqa: F401\n"),)),
    SCOPED_ALIAS,
)


# -- injection ----------------------------------------------------------------------------------


def inject(text: str, form: CorpusForm) -> str | None:
    """Returns ``text`` with ``form`` injected (and a use statement after each piece's
    names: in the function, or at the module's end); None when ``text`` has no place
    for it (no top-level function whose body starts on a line of its own)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    inserts: list[tuple[int, str]] = []  # (line index, text), applied bottom up
    module_uses: list[tuple[str, str | None]] = []
    for piece in form.pieces:
        if piece.place == "function":
            spot = _function_spot(tree, lines)
            if spot is None:
                return None
            at, indent = spot
            body = piece.text + f"{USES} = ({', '.join(u for u, _ in piece.uses)},)\n"
            inserts.append((at, "".join(indent + line for line in body.splitlines(True))))
            continue
        module_uses += piece.uses
        inserts.append((_module_spot(tree, lines, piece.place), piece.text))
    if module_uses:
        inserts.append((len(lines) + 1, f"{USES} = ({', '.join(u for u, _ in module_uses)},)\n"))
    for at, chunk in sorted(inserts, key=lambda item: item[0], reverse=True):
        lines[at:at] = [chunk]
    return "".join(lines)


def _module_spot(tree: ast.Module, lines: Sequence[str], place: Place) -> int:
    body = tree.body
    first = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        first = 1
    while first < len(body) and isinstance(body[first], ast.ImportFrom) and \
            body[first].module == "__future__":  # type: ignore[attr-defined]
        first += 1
    top = (body[first - 1].end_lineno or 0) if first else 0
    if place == "top":
        return top
    if place == "end":
        return len(lines)
    for i, stmt in enumerate(body[first:], first):
        if not isinstance(stmt, (ast.Import, ast.ImportFrom)) and (
                i + 1 == len(body) or body[i + 1].lineno > (stmt.end_lineno or 0)):
            return stmt.end_lineno or 0
    return len(lines)


def _function_spot(tree: ast.Module, lines: Sequence[str]) -> tuple[int, str] | None:
    """Returns (line index, indentation) at the start of the first top-level function's
    body (after its docstring)."""
    for stmt in tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = stmt.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(
                stmt.body) > 1:
            at, anchor = first.end_lineno or 0, stmt.body[1]
        else:
            at, anchor = first.lineno - 1, first
        line = lines[anchor.lineno - 1]
        if anchor.lineno <= stmt.lineno or line[:anchor.col_offset].strip():
            continue
        return at, line[:anchor.col_offset]
    return None


# -- running the imports in a fake SGLang ---------------------------------------------------------


class _Anything:
    """A permissive stand-in: every attribute, call, item and operation gives another."""

    def __getattr__(self, name: str) -> _Anything:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Anything()

    def __call__(self, *args: object, **kwargs: object) -> _Anything:
        return _Anything()

    def __getitem__(self, key: object) -> _Anything:
        return _Anything()

    def __or__(self, other: object) -> _Anything:
        return _Anything()

    __ror__ = __or__

    def __iter__(self) -> Iterator[object]:
        return iter(())


class _StandIn(types.ModuleType):
    """A module every attribute of which is a stand-in."""

    def __getattr__(self, name: str) -> object:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Anything()


_REAL = ("typing", "typing_extensions", "__future__")
"""Modules imported for real (what binds ``TYPE_CHECKING`` must be the real flag)."""
_PACKAGES = ("sglang", "sglang.srt", "sglang.srt.sampling", "sglang.srt.managers")
PACKAGE = "corpus_pkg.a.b.c"
"""The package relative imports of the executed statements resolve against (stand-ins)."""


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the fake SGLang of one layout and a stand-in for every other module."""

    def __init__(self, layout: str) -> None:
        self.classes = {name: type(name, (), {})
                        for name in (*MOVED, "SamplingObserver", "append_auxiliary_output")}
        self.contents = {
            OLD: ("SamplingObserver",) if layout == "new" else (*MOVED, "SamplingObserver"),
            NEW: (*MOVED, "append_auxiliary_output") if layout == "new" else None,
        }

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] in _REAL:
            return None
        if self.contents.get(fullname, ()) is None:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname not in
                                              self.contents)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        name = spec.name
        if name in self.contents or name in _PACKAGES:
            module = types.ModuleType(name)
            for attribute in self.contents.get(name) or ():
                setattr(module, attribute, self.classes[attribute])
        else:
            module = _StandIn(name)
            module.__all__ = []  # type: ignore[attr-defined]
        if name not in self.contents:
            module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing runs: the module is made whole by create_module."""


@contextmanager
def _fake_sglang(layout: str) -> Iterator[_Finder]:
    """Installs the fake SGLang of ``layout`` (and stand-ins) for the block; removes every
    module imported meanwhile."""
    finder = _Finder(layout)
    before = set(sys.modules)
    hidden = {name: sys.modules.pop(name) for name in list(sys.modules)
              if name == "sglang" or name.startswith("sglang.")}
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        sys.meta_path.remove(finder)
        for name in set(sys.modules) - before:
            del sys.modules[name]
        sys.modules.update(hidden)


@dataclass(frozen=True, slots=True)
class LayoutRun:
    """What running a text's imports in one layout gave: each use statement's values
    (module-level first, then the function's), as class names or None, and the errors of
    statements that import the moved names."""

    uses: tuple[tuple[str | None, ...], ...]
    errors: tuple[str, ...]


_MIGRATED = ("sampling_observer", "auxiliary_output", "TYPE_CHECKING", "typing")


def bound_uses(text: str, layout: str, *, function: bool) -> LayoutRun:
    """Returns what the use statements of ``text`` evaluate to after its import-bearing
    statements run in the fake SGLang of ``layout`` (and, with ``function``, those of the
    first top-level function holding a use statement, with the module's names global)."""
    tree = ast.parse(text)
    namespace: dict[str, object] = {"__name__": f"{PACKAGE}.corpus", "__package__": PACKAGE,
                                    "__builtins__": builtins}
    errors: list[str] = []
    uses: list[tuple[str | None, ...]] = []
    with _fake_sglang(layout) as finder:
        names = {cls: name for name, cls in finder.classes.items()}
        for stmt in tree.body:
            _run(stmt, text, namespace, namespace, errors, uses, names)
        if function:
            body = next(s.body for s in tree.body if isinstance(
                s, (ast.FunctionDef, ast.AsyncFunctionDef)) and _binds_uses(s.body))
            local: dict[str, object] = {}
            for stmt in body:
                _run(stmt, text, namespace, local, errors, uses, names)
    return LayoutRun(tuple(uses), tuple(errors))


def _binds_uses(body: Sequence[ast.stmt]) -> bool:
    return any(isinstance(s, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == USES for t in s.targets) for s in body)


def _run(stmt: ast.stmt, text: str, globals_: dict[str, object], locals_: dict[str, object],
         errors: list[str], uses: list[tuple[str | None, ...]],
         names: dict[type, str]) -> None:
    is_use = _binds_uses([stmt])
    imports = any(isinstance(node, (ast.Import, ast.ImportFrom)) for node in ast.walk(stmt))
    guard = isinstance(stmt, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "TYPE_CHECKING" for t in stmt.targets)
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not (
            is_use or imports or guard):
        return
    source = ast.unparse(stmt)
    try:
        exec(compile(ast.Module([stmt], []), "<corpus>", "exec"), globals_, locals_)  # noqa: S102
    except Exception as exc:  # noqa: BLE001 - an unrelated statement may need what never ran
        if is_use or any(word in source for word in _MIGRATED):
            errors.append(f"{type(exc).__name__}: {exc} in {source.splitlines()[0]!r}")
        return
    if is_use:
        values = locals_[USES]
        assert isinstance(values, tuple)
        uses.append(tuple(names.get(value) if isinstance(value, type) else None
                          for value in values))
