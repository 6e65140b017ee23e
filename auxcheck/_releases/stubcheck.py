"""Compares the sglang stubs with SGLang's source, never importing it (``auxcheck stubcheck``).

Importing SGLang pulls its whole GPU stack, so both sides are parsed with ``ast``:
module names, classes (Protocol, dataclass and ``runtime_checkable`` flags, fields),
functions and methods (parameter names, kinds and defaults). A stub module or class
with a ``__getattr__`` is partial: only what it declares is checked, and its
``__setattr__`` and an ``__init__(self, *args, **kwargs)`` say only that it accepts what
SGLang's real class accepts (they are not compared). Names imported
from ``sglang`` at run time count as part of a module (they resolve there), so the
stubs must declare them or list them in ``ALLOWED_OMISSIONS`` with a reason.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auxcheck._core.config import load_toml
from auxcheck._core.errors import TomlFileError
from auxcheck._core.pyast import is_main_block, is_type_checking
from auxcheck._core.signatures import FunctionInfo, Param, decorator_name, parse_function
from auxcheck._releases.wheels import Release

__all__ = [
    "ALLOWED_OMISSIONS",
    "PINNED_SGLANG_VERSION",
    "REFERENCE_LAYOUT",
    "REFERENCE_ONLY",
    "ClassInfo",
    "Mismatch",
    "ModuleInfo",
    "StubCheckResult",
    "check_against_reference",
    "check_against_source",
    "compare_modules",
    "dataclass_options",
    "find_stubs_dir",
    "parse_module",
    "runtime_statements",
    "stubs_sglang_version",
]

PINNED_SGLANG_VERSION = "0.5.20"
"""The SGLang release the stubs describe; ``METADATA.toml`` in the stubs says the same."""

ALLOWED_OMISSIONS: Mapping[str, str] = {
    "sglang.srt.sampling.sampling_observer:DeviceAuxiliaryOutput": (
        "moved to sglang.srt.managers.auxiliary_output in 0.5.20; the module still imports "
        "it, the stubs omit it so that importing it from its old home is a mypy error"
    ),
    "sglang.srt.sampling.sampling_observer_pp:DeviceAuxiliaryOutput": (
        "imported for annotations only, not API; import it from "
        "sglang.srt.managers.auxiliary_output"
    ),
    "sglang.srt.plugins:envs": (
        "SGLang's environment-variable registry, imported for load_plugins' own use; "
        "not plugin API"
    ),
    "sglang.srt.sampling.sampling_observer_pp:SamplingObserver": (
        "imported for annotations only, not API; import it from "
        "sglang.srt.sampling.sampling_observer"
    ),
}
"""``module:name`` -> why the stubs deliberately leave out a name the source has."""

REFERENCE_LAYOUT: Mapping[str, tuple[str, ...]] = {
    "sglang.srt.managers.auxiliary_output": (
        "CommittedTokens",
        "CompositeDeviceAuxiliaryOutput",
        "CompositeHostAuxiliaryOutput",
        "DeviceAuxiliaryOutput",
        "HostAuxiliaryOutput",
        "append_auxiliary_output",
    ),
    "sglang.srt.sampling.sampling_observer": ("SamplingObserver",),
    "sglang.srt.model_executor.forward_observer": ("ForwardObserver",),
    "sglang.srt.sampling.sampling_observer_pp": (
        "PipelineParallelAuxiliaryOutput",
        "PipelineParallelSamplingObserver",
        "add_auxiliary_output_to_pp_tensors",
        "pop_auxiliary_output_from_pp_tensors",
    ),
}
"""Stub module -> the names of ``auxcheck.protocols`` that SGLang defines there."""

UNRELEASED_MODULES: Mapping[str, str] = {
    "sglang.srt.model_executor.forward_observer": (
        "SGLang main after 0.5.23 adds it; no release has it yet"
    ),
}
"""Stub modules describing SGLang main, not a release: a release without them is a note."""

REFERENCE_ONLY: Mapping[str, str] = {
    "PP_OUTPUT_PREFIX": "SGLang keeps the prefix private (_OUTPUT_PREFIX)",
    "ScheduleBatchLike": "stands in for ScheduleBatch so the reference needs no SGLang",
}
"""Public names of ``auxcheck.protocols`` that have no counterpart in SGLang, and why."""

# Dataclass options that change the type a checker sees; ``slots`` does not.
_DATACLASS_OPTIONS = {"init": "True", "eq": "True", "order": "False", "frozen": "False",
                      "kw_only": "False"}
_ANY_DEFAULT = "..."



@dataclass(frozen=True, slots=True)
class ClassInfo:
    """A class: its flags, methods, annotated fields (in order) and every attribute name."""

    name: str
    is_protocol: bool = False
    runtime_checkable: bool = False
    dataclass_options: Mapping[str, str] | None = None
    methods: Mapping[str, FunctionInfo] = field(default_factory=dict)
    fields: tuple[tuple[str, bool], ...] = ()
    attributes: frozenset[str] = frozenset()
    partial: bool = False


Symbol = ClassInfo | FunctionInfo | str


@dataclass(frozen=True, slots=True)
class ModuleInfo:
    """A module's names: ``str`` values are variables, or the module a name was imported from."""

    name: str
    symbols: Mapping[str, Symbol]
    imported: frozenset[str] = frozenset()
    partial: bool = False
    exists: bool = True


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One difference between the stubs and the source, at ``module:qualname``."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass(frozen=True, slots=True)
class StubCheckResult:
    """The outcome of one comparison: mismatches, allowed omissions and other notes."""

    mismatches: tuple[Mismatch, ...]
    notes: tuple[str, ...]
    modules: int

    @property
    def ok(self) -> bool:
        """Returns True when the stubs match the source."""
        return not self.mismatches


# ---------------------------------------------------------------- parsing


def parse_module(name: str, text: str, *, stub: bool) -> ModuleInfo:
    """Returns the names ``text`` defines, read as a stub (``.pyi``) or as run-time source."""
    symbols: dict[str, Symbol] = {}
    imported: set[str] = set()
    partial = False
    for node in runtime_statements(ast.parse(text, filename=name).body, stub=stub):
        if isinstance(node, ast.ClassDef):
            symbols[node.name] = _parse_class(node, stub=stub)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name == "__getattr__" and stub:
                partial = True
            else:
                symbols[node.name] = parse_function(node)
        elif isinstance(node, ast.ImportFrom):
            for alias, origin in _imported_names(node, stub=stub):
                symbols[alias] = origin
                imported.add(alias)
        else:
            for target in _assigned_names(node):
                symbols[target] = "variable"
    return ModuleInfo(name, symbols, frozenset(imported), partial)


def runtime_statements(body: Iterable[ast.stmt], *, stub: bool) -> Iterator[ast.stmt]:
    """Yields the statements of ``body`` that bind names, if/try blocks flattened."""
    # Flattens if/try blocks; skips `if TYPE_CHECKING:` in source (nothing there exists at
    # run time) but keeps it in stubs, where everything is for the type checker.
    for node in body:
        if isinstance(node, ast.If):
            # A script's `if __name__ == "__main__":` block binds nothing for importers.
            if stub or not (is_type_checking(node.test) or is_main_block(node.test)):
                yield from runtime_statements(node.body, stub=stub)
            yield from runtime_statements(node.orelse, stub=stub)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse):
                yield from runtime_statements(block, stub=stub)
        else:
            yield node


def _imported_names(node: ast.ImportFrom, *, stub: bool) -> Iterator[tuple[str, str]]:
    # Stubs re-export only `from m import X as X`; source exposes whatever SGLang itself
    # imports (third-party and stdlib imports are not the module's API).
    module = "." * node.level + (node.module or "")
    for alias in node.names:
        if stub and alias.asname != alias.name:
            continue
        if not stub and node.level == 0 and not module.startswith("sglang"):
            continue
        yield alias.asname or alias.name, module


def _assigned_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    return []


def _parse_class(node: ast.ClassDef, *, stub: bool = False) -> ClassInfo:
    methods: dict[str, FunctionInfo] = {}
    fields: list[tuple[str, bool]] = []
    attributes: set[str] = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            methods[item.name] = parse_function(item)
            attributes.update(_self_attributes(item))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            fields.append((item.target.id, item.value is not None))
        attributes.update(_assigned_names(item))
    # A class-level __getattr__ marks a partial class (typeshed's spelling for "incomplete").
    partial = methods.pop("__getattr__", None) is not None
    if partial and stub:
        # What a partial stub class accepts as the real class does: not compared.
        methods.pop("__setattr__", None)
        if _accepts_anything(methods.get("__init__")):
            del methods["__init__"]
    return ClassInfo(
        name=node.name,
        is_protocol=any(_is_protocol_base(base) for base in node.bases),
        runtime_checkable="runtime_checkable" in map(decorator_name, node.decorator_list),
        dataclass_options=dataclass_options(node.decorator_list),
        methods=methods,
        fields=tuple(fields),
        attributes=frozenset(attributes),
        partial=partial,
    )


def _accepts_anything(method: FunctionInfo | None) -> bool:
    """Returns True for ``(self, *args, **kwargs)``: a method that takes whatever it is given."""
    return method is not None and [p.kind for p in method.params] == [
        "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL", "VAR_KEYWORD"]


def _is_protocol_base(base: ast.expr) -> bool:
    target = base.value if isinstance(base, ast.Subscript) else base
    return ast.unparse(target) in ("Protocol", "typing.Protocol", "typing_extensions.Protocol")


def dataclass_options(decorators: Sequence[ast.expr]) -> dict[str, str] | None:
    """Returns a ``@dataclass(...)``'s options as written (defaults filled), None if none."""
    for decorator in decorators:
        if decorator_name(decorator) != "dataclass":
            continue
        options = dict(_DATACLASS_OPTIONS)
        if isinstance(decorator, ast.Call):
            for keyword in decorator.keywords:
                if keyword.arg in options:
                    options[keyword.arg] = ast.unparse(keyword.value)
        return options
    return None


def _self_attributes(method: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[str]:
    for node in ast.walk(method):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                yield target.attr


# ---------------------------------------------------------------- comparing


def compare_modules(
    stub: ModuleInfo,
    source: ModuleInfo,
    *,
    allowed: Mapping[str, str] = ALLOWED_OMISSIONS,
) -> tuple[list[Mismatch], list[str]]:
    """Returns the mismatches between a stub module and its source, and notes on allowances."""
    if not source.exists:
        return [Mismatch(stub.name, "the stubs describe a module the source does not have")], []
    mismatches: list[Mismatch] = []
    notes: list[str] = []
    for name in sorted(_public(source.symbols) - _public(stub.symbols)):
        key = f"{source.name}:{name}"
        if key in allowed:
            notes.append(f"note: {key} left out on purpose: {allowed[key]}")
        elif not stub.partial:
            mismatches.append(Mismatch(key, _missing_message(source, name)))
    for name in sorted(_public(stub.symbols)):
        where = f"{stub.name}:{name}"
        if name not in source.symbols:
            mismatches.append(Mismatch(where, "the stub declares a name the source lacks"))
        else:
            mismatches += _compare_symbol(where, stub.symbols[name], source.symbols[name])
    return mismatches, notes


def _public(symbols: Mapping[str, Symbol]) -> set[str]:
    return {name for name in symbols if not name.startswith("_")}


def _missing_message(source: ModuleInfo, name: str) -> str:
    symbol = source.symbols[name]
    if name in source.imported:
        return f"the source imports this name from {symbol} (so it resolves here); stub it"
    return f"missing from the stub: the source defines this {_kind(symbol)}"


def _kind(symbol: Symbol) -> str:
    if isinstance(symbol, ClassInfo):
        return "class"
    if isinstance(symbol, FunctionInfo):
        return "function"
    return "variable"


def _compare_symbol(where: str, stub: Symbol, source: Symbol) -> list[Mismatch]:
    # A stub may declare any run-time object as a typed variable (`X: type[C]`), so only
    # classes and functions in the stub must be the same kind of thing in the source.
    if _kind(stub) != _kind(source) and not isinstance(stub, str):
        return [Mismatch(where, f"a {_kind(stub)} in the stub, a {_kind(source)} in the source")]
    if isinstance(stub, ClassInfo) and isinstance(source, ClassInfo):
        return _compare_class(where, stub, source)
    if isinstance(stub, FunctionInfo) and isinstance(source, FunctionInfo):
        return _compare_function(where, stub, source)
    return []


def _compare_class(where: str, stub: ClassInfo, source: ClassInfo) -> list[Mismatch]:
    found = [Mismatch(where, message) for message in _class_flag_messages(stub, source)]
    found += _compare_methods(where, stub, source)
    found += _compare_fields(where, stub, source)
    return found


def _class_flag_messages(stub: ClassInfo, source: ClassInfo) -> Iterator[str]:
    flags = [
        ("a Protocol", stub.is_protocol, source.is_protocol),
        ("@runtime_checkable", stub.runtime_checkable, source.runtime_checkable),
    ]
    # A partial class cannot be a dataclass in a stub: its generated __init__ would take
    # only the stubbed fields. So dataclass-ness is compared for complete classes only.
    if not stub.partial:
        flags.append(
            ("a dataclass", stub.dataclass_options is not None,
             source.dataclass_options is not None)
        )
    for label, in_stub, in_source in flags:
        if in_stub != in_source:
            yield f"is {label} in the {'stub' if in_stub else 'source'} only"
    if stub.dataclass_options is not None and source.dataclass_options is not None:
        for option, value in stub.dataclass_options.items():
            if source.dataclass_options[option] != value:
                yield (f"dataclass {option}={value} in the stub, "
                       f"{option}={source.dataclass_options[option]} in the source")


def _compare_methods(where: str, stub: ClassInfo, source: ClassInfo) -> list[Mismatch]:
    found: list[Mismatch] = []
    for name in sorted(set(source.methods) - set(stub.methods)):
        if not stub.partial and not _is_private(name):
            found.append(Mismatch(f"{where}.{name}", "missing method: the source defines it"))
    for name in sorted(stub.methods):
        if name not in source.methods:
            found.append(Mismatch(f"{where}.{name}", "the stub declares a method the source lacks"))
        else:
            found += _compare_function(f"{where}.{name}", stub.methods[name], source.methods[name],
                                       protocol=stub.is_protocol and source.is_protocol)
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _compare_fields(where: str, stub: ClassInfo, source: ClassInfo) -> list[Mismatch]:
    if stub.dataclass_options is not None and source.dataclass_options is not None:
        if stub.fields != source.fields:
            return [Mismatch(where, f"dataclass fields {_fields(stub)} in the stub, "
                                    f"{_fields(source)} in the source")]
        return []
    found = [
        Mismatch(f"{where}.{name}", "the stub declares an attribute the source never sets")
        for name, _ in stub.fields
        if name not in source.attributes and name not in source.methods
    ]
    if not stub.partial:
        stubbed = {name for name, _ in stub.fields}
        found += [
            Mismatch(f"{where}.{name}", "missing attribute: the source declares it")
            for name, _ in source.fields
            if name not in stubbed and not name.startswith("_")
        ]
    return found


def _fields(info: ClassInfo) -> str:
    return "(" + ", ".join(name + ("=..." if default else "") for name, default in info.fields) + ")"


def _compare_function(where: str, stub: FunctionInfo, source: FunctionInfo, *,
                      protocol: bool = False) -> list[Mismatch]:
    found = [Mismatch(where, message) for message in _function_messages(stub, source)]
    for index in range(max(len(stub.params), len(source.params))):
        found += [
            Mismatch(where, message)
            for message in _param_messages(index, stub.params, source.params, protocol=protocol)
        ]
    return found


def _function_messages(stub: FunctionInfo, source: FunctionInfo) -> Iterator[str]:
    if stub.is_async != source.is_async:
        yield f"is async in the {'stub' if stub.is_async else 'source'} only"
    relevant = {"staticmethod", "classmethod", "property", "abstractmethod", "overload"}
    if stub.decorators & relevant != source.decorators & relevant:
        yield (f"decorated {sorted(stub.decorators & relevant)} in the stub, "
               f"{sorted(source.decorators & relevant)} in the source")


_POSITIONAL_NARROWING = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
"""(stub kind, source kind) a Protocol method's parameter may differ by: SGLang calls the
contract's methods positionally, and a positional-only stub parameter lets implementations
name theirs freely (pyright compares the names of positional-or-keyword parameters)."""


def _param_messages(
    index: int, stub: Sequence[Param], source: Sequence[Param], *, protocol: bool = False
) -> Iterator[str]:
    if index >= len(source):
        yield f"extra parameter {stub[index].name!r}: the source has no such parameter"
        return
    if index >= len(stub):
        yield f"missing parameter {source[index].name!r} ({source[index].kind})"
        return
    ours, theirs = stub[index], source[index]
    if ours.name != theirs.name:
        yield f"parameter {index + 1} is {ours.name!r} in the stub, {theirs.name!r} in the source"
    if ours.kind != theirs.kind and not (protocol and (ours.kind, theirs.kind) ==
                                         _POSITIONAL_NARROWING):
        yield f"parameter {ours.name!r} is {ours.kind} in the stub, {theirs.kind} in the source"
    yield from _default_messages(ours, theirs)


def _default_messages(ours: Param, theirs: Param) -> Iterator[str]:
    if ours.default is None and theirs.default is not None:
        yield f"parameter {ours.name!r} has no default in the stub; the source has ={theirs.default}"
    elif ours.default is not None and theirs.default is None:
        yield f"parameter {ours.name!r} has a default in the stub; the source has none"
    elif ours.default not in (None, _ANY_DEFAULT, theirs.default):
        yield (f"parameter {ours.name!r} defaults to {ours.default} in the stub, "
               f"{theirs.default} in the source")


# ---------------------------------------------------------------- stub and source trees


def find_stubs_dir(search: Sequence[str] | None = None) -> Path:
    """Returns the installed ``sglang-stubs`` directory, found on ``sys.path`` as mypy finds it.

    Raises FileNotFoundError naming the searched entries when it is not installed.
    """
    entries = list(sys.path if search is None else search)
    for entry in entries:
        candidate = Path(entry or ".") / "sglang-stubs"
        if (candidate / "__init__.pyi").is_file():
            return candidate
    raise FileNotFoundError(
        "no sglang-stubs directory on sys.path; install auxcheck (it ships the stubs) "
        "or pass --stubs DIR"
    )


def stubs_sglang_version(stubs_dir: Path) -> str:
    """Returns the SGLang release named by ``sglang_version`` in the stubs' ``METADATA.toml``.

    Raises ValueError naming the file when it cannot be read, is not TOML or lacks the key.
    """
    path = stubs_dir / "METADATA.toml"
    try:
        version = load_toml(path).get("sglang_version")
    except TomlFileError as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(version, str) or not version:
        raise ValueError(f"{path} has no sglang_version = \"X.Y.Z\" line")
    return version


def _stub_modules(stubs_dir: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(stubs_dir.rglob("*.pyi")):
        parts = path.relative_to(stubs_dir).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(("sglang", *parts)), path


def _source_paths(module: str, stub_path: Path) -> tuple[str, ...]:
    base = module.replace(".", "/")
    if stub_path.name == "__init__.pyi":
        return (f"{base}/__init__.py",)
    return (f"{base}.py", f"{base}/__init__.py")


def _read_source_module(module: str, stub_path: Path, release: Release) -> ModuleInfo:
    for path in _source_paths(module, stub_path):
        text = release.read(path)
        if text is not None:
            return parse_module(module, text, stub=False)
    if stub_path.name == "__init__.pyi":
        return ModuleInfo(module, {})  # a namespace package: no names of its own
    return ModuleInfo(module, {}, exists=False)


def check_against_source(stubs_dir: Path, release: Release) -> StubCheckResult:
    """Returns how every stub module differs from the source of ``release``."""
    mismatches: list[Mismatch] = []
    notes: list[str] = []
    count = 0
    for module, path in _stub_modules(stubs_dir):
        stub = parse_module(module, path.read_text(encoding="utf-8"), stub=True)
        source = _read_source_module(module, path, release)
        if not source.exists and module in UNRELEASED_MODULES:
            notes.append(f"note: {module}: not in this release: {UNRELEASED_MODULES[module]}")
            count += 1
            continue
        found, allowed = compare_modules(stub, source)
        mismatches += found
        notes += allowed
        count += 1
    return StubCheckResult(tuple(mismatches), tuple(notes), count)


def check_against_reference(stubs_dir: Path) -> StubCheckResult:
    """Returns how the contract stubs differ from ``auxcheck.protocols``, split by module."""
    text = (Path(__file__).parents[1] / "_core" / "protocols.py").read_text(encoding="utf-8")
    reference = parse_module("auxcheck.protocols", text, stub=False)
    placed = {name for names in REFERENCE_LAYOUT.values() for name in names}
    mismatches = [
        Mismatch(f"auxcheck.protocols:{name}", "not placed in REFERENCE_LAYOUT or REFERENCE_ONLY")
        for name in sorted(_public(reference.symbols) - placed - set(REFERENCE_ONLY))
        if name not in reference.imported
    ]
    notes = [f"note: auxcheck.protocols:{name} has no SGLang counterpart: {why}"
             for name, why in REFERENCE_ONLY.items()]
    for module, names in REFERENCE_LAYOUT.items():
        symbols = {name: reference.symbols[name] for name in names if name in reference.symbols}
        stub_path = stubs_dir.joinpath(*module.split(".")[1:]).with_suffix(".pyi")
        stub = parse_module(module, stub_path.read_text(encoding="utf-8"), stub=True)
        found, _ = compare_modules(stub, ModuleInfo(module, symbols))
        mismatches += found
    return StubCheckResult(tuple(mismatches), tuple(notes), len(REFERENCE_LAYOUT))
