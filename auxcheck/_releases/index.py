"""What a release's modules provide, read with ``ast``: names, imports, ``__all__``, classes.

The rules follow Python's import system, since that is what a plugin meets:
``from M import N`` works when module M binds N at run time (a definition, an
import, a star import, ``__getattr__``) or when ``M.N`` is a submodule; names bound
only under ``if TYPE_CHECKING`` do not exist at run time. Dotted targets
(``HookRegistry.register``, ``mock.patch``) resolve as ``pkgutil.resolve_name``
does: the longest importable module, then attributes, following class bases
through SGLang's own modules.

Each module's names come from its summary (:mod:`auxcheck._releases.summaries`),
parsed on demand or for the whole tree at once, and cached on disk per release.
"""

from __future__ import annotations

import ast
import json
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

from auxcheck._core.errors import UndecodableSource
from auxcheck._core.progress import task
from auxcheck._releases.external import external_class
from auxcheck._releases.index_pool import map_in_workers
from auxcheck._releases.stars import star_source
from auxcheck._releases.summaries import (
    ClassSummary,
    ModuleSummary,
    Origin,
    class_summaries,
    module_of_path,
    summarize,
)
from auxcheck._releases.wheels import Release, cache_dir
from auxcheck.migrate.moves import importable_module

__all__ = [
    "Homes",
    "Lookup",
    "ReleaseIndex",
    "read_cached",
    "write_cached",
]

_T = TypeVar("_T")
_MISSING = object()

INDEX_FORMAT = 3
"""Bumped whenever the cached summaries change shape."""

MAX_CHAIN = 100
"""Links of a re-export or base-class chain auxcheck follows; past them it cannot tell. Python's
own import of a re-export chain runs out of stack not far beyond (about 150 links)."""

# Attributes every class has through ``object`` (and every module through its type).
_OBJECT_ATTRS = frozenset(dir(object)) | {"__init_subclass__", "__class_getitem__"}
# What every class has besides: type's attributes (``Cls.__dict__``, ``__mro__``, ``__name__``,
# ``mro``) and an instance's ``__dict__``/``__weakref__``.
_CLASS_ATTRS = _OBJECT_ATTRS | frozenset(dir(type)) | {"__dict__", "__weakref__"}
_MODULE_ATTRS = frozenset({"__name__", "__file__", "__doc__", "__path__", "__spec__",
                           "__loader__", "__package__", "__builtins__", "__dict__"})
# Bases whose members auxcheck knows: nothing beyond object's.
_PLAIN_BASES = frozenset({"object", "ABC", "abc.ABC", "Protocol", "typing.Protocol", "Generic",
                          "typing.Generic", "NamedTuple", "typing.NamedTuple", "TypedDict",
                          "typing.TypedDict", "Exception", "BaseException", "ValueError",
                          "RuntimeError", "TypeError", "KeyError"})


@dataclass(frozen=True, slots=True)
class Lookup:
    """The answer to "does this resolve?": what was found, or why not.

    ``certain`` is False when auxcheck cannot see far enough to say no (a base class
    outside SGLang, a module ``__getattr__``, a name from a third-party package).
    """

    ok: bool
    kind: str = ""
    where: str = ""
    reason: str = ""
    certain: bool = True


# ---------------------------------------------------------------- the index


def _summarize_path(job: tuple[Release, str]) -> ModuleSummary | None:
    release, path = job
    module, package = module_of_path(path)
    try:  # a damaged wheel raises ReleaseError: never taken for a file that does not parse
        text = release.read(path)
    except UndecodableSource:
        # Python cannot decode it, so cannot import it either: as for a file it cannot parse.
        return _unknown(module, package)
    if text is None:
        return None
    try:
        return summarize(module, package, text)
    except (SyntaxError, ValueError, RecursionError):
        # A file this Python cannot parse (newer syntax): any name may be there.
        return _unknown(module, package)


def _unknown(module: str, package: bool) -> ModuleSummary:
    return ModuleSummary(module, package, {}, {}, dynamic=True)


def _summarize_chunk(job: tuple[str, str, str, Sequence[str]]) -> list[dict[str, object]]:
    version, kind, where, paths = job
    release = (Release.from_wheel if kind == "wheel" else Release.from_source)(
        Path(where), version=version)
    found = (_summarize_path((release, p)) for p in paths)
    return [s.to_json() for s in found if s is not None]


class ReleaseIndex:
    """Answers what a release's modules provide; summaries are parsed on demand and kept."""

    def __init__(self, release: Release, *, cache: Path | None = None) -> None:
        self.release = release
        self.cache = cache
        self._summaries: dict[str, ModuleSummary | None] = {}
        self._classes: dict[str, dict[str, ClassSummary]] = {}
        self._trees: dict[str, ast.Module | None] = {}
        self._complete = False
        self._homes: Homes | None = None
        self.derived: dict[tuple[str, str], object] = {}
        """Answers computed from the release once per run (``("call_sites", where)``)."""
        self._resolved: dict[str, Lookup] = {}

    @property
    def version(self) -> str:
        """Returns the release's version."""
        return self.release.version

    # -- modules

    def module_file(self, module: str) -> str | None:
        """Returns the path of ``module``'s source (``.py`` or ``__init__.py``), or None."""
        base = module.replace(".", "/")
        for path in (f"{base}.py", f"{base}/__init__.py"):
            if path in self.release.names():
                return path
        return None

    def undecodable(self, module: str) -> str | None:
        """Returns why ``module``'s source is not text Python can read (so Python cannot import
        it either), naming the release and the file; None when it reads or is absent."""
        return self.derive("undecodable", module, lambda: self._undecodable(module))

    def _undecodable(self, module: str) -> str | None:
        path = self.module_file(module)
        if path is None:
            return None
        try:
            self.release.read(path)
        except UndecodableSource as exc:
            return str(exc)
        return None

    def module_exists(self, module: str) -> bool:
        """Returns True when ``module`` can be imported: a file or a namespace package."""
        if not (module == "sglang" or module.startswith("sglang.")):
            return False
        return self.module_file(module) is not None or self.release.exists(module.replace(".", "/"))

    def summary(self, module: str) -> ModuleSummary | None:
        """Returns ``module``'s summary (empty for a namespace package), None when absent."""
        if module not in self._summaries:
            self._summaries[module] = self._read_summary(module)
        return self._summaries[module]

    def _read_summary(self, module: str) -> ModuleSummary | None:
        path = self.module_file(module)
        if path is None:
            return ModuleSummary(module, True, {}, {}) if self.module_exists(module) else None
        return _summarize_path((self.release, path))

    def modules(self) -> list[str]:
        """Returns every module of the release that has a source file, sorted."""
        return sorted(module_of_path(p)[0] for p in self.release.python_files())

    def load_all(self, *, jobs: int | None = None, cache: Path | None = None) -> None:
        """Summarizes every module, from the on-disk cache when this release was read before."""
        if self._complete:
            return
        stored = self._cache_path(cache or self.cache)
        found = _read_cache(stored) if stored is not None else None
        if found is None:
            data = self._parse_all(jobs)
            if stored is not None:
                write_cached(stored, data)
            found = [ModuleSummary.from_json(entry) for entry in data]
        for summary in found:
            self._summaries[summary.name] = summary
        self._complete = True

    def _cache_path(self, cache: Path | None) -> Path | None:
        try:
            key = self.release.fingerprint()
        except OSError:
            return None
        folder = (cache or cache_dir()) / "index"
        return folder / f"sglang-{self.version}-{key}-f{INDEX_FORMAT}.json"

    def _parse_all(self, jobs: int | None) -> list[dict[str, object]]:
        paths = self.release.python_files()
        workers = max(1, min(jobs or os.cpu_count() or 1, 8))
        with task(f"indexing sglang {self.version}", unit="files", total=len(paths)) as job:
            if workers == 1 or len(paths) < 200:
                found = []
                for path in paths:
                    found.append(_summarize_path((self.release, path)))
                    job.advance()
                return [s.to_json() for s in found if s is not None]
            size = -(-len(paths) // (workers * 4))
            chunks = [(self.version, self.release.kind, str(self.release.path),
                       paths[i:i + size]) for i in range(0, len(paths), size)]
            # Worker processes a stop, a killed worker or a short file limit cannot hang.
            parts = map_in_workers(_summarize_chunk, chunks, workers,
                                   each=lambda i: job.advance(len(chunks[i][3])))
            return [entry for part in parts for entry in part]

    def summaries(self) -> Iterator[ModuleSummary]:
        """Yields every module's summary (call ``load_all`` first for the whole tree)."""
        for module in self.modules():
            found = self.summary(module)
            if found is not None:
                yield found

    # -- names

    def provides(self, module: str, name: str, *, _seen: frozenset[str] = frozenset()) -> Lookup:
        """Returns whether ``from module import name`` works in this release, and what it gives."""
        if len(_seen) >= MAX_CHAIN:
            return _too_deep(f"{module}.{name}", "re-export")
        summary = self.summary(module)
        if summary is None:
            return Lookup(False, reason=f"module {module} does not exist")
        if name in summary.defined:
            kind = summary.defined[name]
            return Lookup(True, kind, f"{module}.{name}")
        if name in summary.imported:
            return self._follow(summary.imported[name], _seen | {f"{module}.{name}"})
        if self.module_exists(f"{module}.{name}"):
            return Lookup(True, "module", f"{module}.{name}")
        found = self._star(module, name, _seen | {f"{module}.{name}"})
        if found is not None:
            return found
        if summary.dynamic:
            return Lookup(True, "unknown", f"{module}.{name}", certain=False,
                          reason=f"{module} defines __getattr__ or cannot be parsed")
        if name in _MODULE_ATTRS:
            return Lookup(True, "variable", f"{module}.{name}")
        if name in summary.type_checking:
            return Lookup(False, reason=f"{module} imports {name} only under `if TYPE_CHECKING`")
        return Lookup(False, reason=f"{module} does not define or import {name}")

    def _star(self, module: str, name: str, seen: frozenset[str]) -> Lookup | None:
        # Star chains are walked by a worklist (they can run thousands deep), then the
        # module at their end is asked for its own binding.
        star = star_source(self, module, name)
        if star is None:
            return None
        if star.kind != "binds":
            return Lookup(True, star.kind, f"{star.module}.{name}", certain=False,
                          reason=star.reason)
        found = self.provides(star.module, name, _seen=seen)
        return found if found.ok else None

    def _follow(self, origin: Origin, seen: frozenset[str]) -> Lookup:
        if origin.name is None:
            exists = self.module_exists(origin.module) or not origin.module.startswith("sglang")
            return Lookup(True, "module", origin.module, certain=exists)
        if not origin.module.startswith("sglang") or str(origin) in seen:
            return Lookup(True, "external", str(origin), certain=False)
        found = self.provides(origin.module, origin.name, _seen=seen)
        # A broken re-export still binds nothing: but the import that made it would have
        # failed first, so the module itself would not import. Trust the release here.
        return found if found.ok else Lookup(True, "unknown", str(origin), certain=False)

    def derive(self, kind: str, key: str, compute: Callable[[], _T]) -> _T:
        """Returns ``compute()``, computed once per index for (``kind``, ``key``): an answer
        that depends only on the release and that key (many hooks share a target)."""
        found = self.derived.get((kind, key), _MISSING)
        if found is _MISSING:
            found = self.derived[(kind, key)] = compute()
        return cast(_T, found)

    def cache_file(self, name: str) -> Path | None:
        """Returns where to cache ``name`` derived from this release (beside its index, keyed
        by the release's fingerprint), None when the release cannot be fingerprinted."""
        stored = self._cache_path(self.cache)
        return None if stored is None else stored.with_name(
            stored.name.replace(f"-f{INDEX_FORMAT}.json", f"-{name}.json"))

    def resolve(self, dotted: str) -> Lookup:
        """Returns what ``pkgutil.resolve_name(dotted)`` would find, without importing anything."""
        found = self._resolved.get(dotted)
        if found is None:
            found = self._resolved[dotted] = self._resolve(dotted)
        return found

    def _resolve(self, dotted: str) -> Lookup:
        parts = dotted.split(".")
        if not all(p.isidentifier() for p in parts) or parts[0] != "sglang":
            return Lookup(False, reason=f"{dotted!r} is not a dotted path into sglang")
        at = 1
        while at < len(parts) and self.module_exists(".".join(parts[: at + 1])):
            at += 1
        module = ".".join(parts[:at])
        if at == len(parts):
            return Lookup(True, "module", module)
        found = self.provides(module, parts[at])
        for attr in parts[at + 1:]:
            if not found.ok or not found.certain:
                break
            found = self.attribute(found, attr)
        return found

    def attribute(self, owner: Lookup, attr: str) -> Lookup:
        """Returns what ``getattr(owner, attr)`` finds, for a class or module ``owner``."""
        if owner.kind == "module":
            return self.provides(owner.where, attr)
        if owner.kind == "class":
            module, _, qualname = self._split_class(owner.where)
            return self.member(module, qualname, attr)
        if owner.kind == "function" and attr in _OBJECT_ATTRS:
            return Lookup(True, "variable", f"{owner.where}.{attr}")
        if owner.kind == "variable":
            found = self._instance_member(owner.where, attr)
            if found is not None:
                return found
        return Lookup(True, "unknown", f"{owner.where}.{attr}", certain=False,
                      reason=f"{owner.where} is a {owner.kind or 'value'}; auxcheck cannot see "
                             "its attributes")

    def _instance_member(self, where: str, attr: str) -> Lookup | None:
        """``getattr`` on a module-level instance (``ModelRegistry = _ModelRegistry()``): a
        member of its class's body (methods come ``bound``, their ``self`` given). None when
        the value is not one such call or the class lacks it (the instance may set it)."""
        module, _, name = where.rpartition(".")
        tree = self.tree(module) if self.module_file(module) else None
        if tree is None:
            return None
        calls = [n.value for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                 and n.value is not None
                 and any(isinstance(t, ast.Name) and t.id == name
                         for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
        if len(calls) != 1 or not isinstance(calls[0], ast.Call):
            return None  # bound twice, or not a call: which value it holds is not plain
        func = calls[0].func
        head = func.id if isinstance(func, ast.Name) else None
        cls = self.provides(module, head) if head is not None else None
        if cls is None or not (cls.ok and cls.certain and cls.kind == "class"):
            return None
        owner_module, _, qualname = self._split_class(cls.where)
        found = self.member(owner_module, qualname, attr)
        if not (found.ok and found.certain):
            return None
        return Lookup(True, "bound" if found.kind == "function" else found.kind, found.where,
                      found.reason)

    def split_where(self, where: str) -> tuple[str, str]:
        """Returns (module, qualname) of a dotted definition: the longest module with a file."""
        module, _, qualname = self._split_class(where)
        if not qualname:
            module, _, qualname = where.rpartition(".")
        return module, qualname

    def _split_class(self, where: str) -> tuple[str, str, str]:
        parts = where.split(".")
        for at in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:at])
            if self.module_file(module) is not None:
                return module, ".", ".".join(parts[at:])
        return where, ".", ""

    def classes(self, module: str) -> Mapping[str, ClassSummary]:
        """Returns the classes of ``module`` (nested ones as ``Outer.Inner``), by qualname."""
        if module not in self._classes:
            tree = self.tree(module)
            self._classes[module] = class_summaries(module, tree) if tree is not None else {}
        return self._classes[module]

    def tree(self, module: str) -> ast.Module | None:
        """Returns the whole ast of ``module`` (parsed once, kept), None when absent or broken."""
        if module not in self._trees:
            path = self.module_file(module)
            try:
                text = self.release.read(path) if path else None
            except UndecodableSource:
                text = None
            try:
                self._trees[module] = ast.parse(text) if text is not None else None
            except (SyntaxError, ValueError, RecursionError):
                self._trees[module] = None
        return self._trees[module]

    def member(self, module: str, qualname: str, attr: str, *,
               _seen: frozenset[str] = frozenset()) -> Lookup:
        """Returns whether class ``module.qualname`` has ``attr``, looking through its bases."""
        where = f"{module}.{qualname}"
        if len(_seen) >= MAX_CHAIN:
            return _too_deep(f"{where}.{attr}", "base-class")
        cls = self.classes(module).get(qualname)
        if cls is None or where in _seen:
            return Lookup(True, "unknown", f"{where}.{attr}", certain=False)
        if attr in cls.members:
            kind = cls.members[attr]
            return Lookup(True, kind, f"{where}.{attr}")
        unseen: list[str] = []
        for base in cls.bases:
            found = self._base_member(module, base, attr, _seen | {where})
            if found is None:
                continue
            if (found.ok and found.certain) or found.reason.startswith(_TOO_DEEP):
                return found
            unseen.append(base)
        if attr in _CLASS_ATTRS:
            return Lookup(True, "function" if attr in _OBJECT_ATTRS else "variable",
                          f"{where}.{attr}")
        if unseen:
            return Lookup(True, "unknown", f"{where}.{attr}", certain=False,
                          reason=f"{qualname} has bases auxcheck cannot read ({', '.join(unseen)})")
        outside = sorted({o for o in _outside_bases(self, module, cls.bases)})
        read = f"; {', '.join(outside)} read as installed here" if outside else ""
        return Lookup(False, reason=f"class {where} has no attribute {attr} (nor do its "
                                    f"bases{read})")

    def homes(self) -> Homes:
        """Returns where this release keeps each name (reads the whole release, once)."""
        if self._homes is None:
            self._homes = Homes(self)
        return self._homes

    def _base_member(self, module: str, base: str, attr: str, seen: frozenset[str]) -> Lookup | None:
        # None: the base has no such member for certain; else the (maybe uncertain) answer.
        if base in _PLAIN_BASES:
            return None
        head, *rest = base.split(".")
        if not head.isidentifier() or not all(p.isidentifier() for p in rest):
            return Lookup(True, "unknown", base, certain=False)
        found = self.provides(module, head)
        for at, part in enumerate(rest):
            if not found.ok or not found.certain:
                if found.kind == "external":
                    found = Lookup(True, "external", ".".join([found.where, *rest[at:]]),
                                   certain=False)
                break
            found = self.attribute(found, part)
        if found.kind == "external":
            return _outside_member(found.where, attr)
        if found.kind != "class" or not found.certain:
            return Lookup(True, "unknown", base, certain=False)
        owner_module, _, qualname = self._split_class(found.where)
        answer = self.member(owner_module, qualname, attr, _seen=seen)
        return answer if answer.ok else None


_TOO_DEEP = "reached through a "


def _too_deep(where: str, chain: str) -> Lookup:
    """The answer past :data:`MAX_CHAIN` links: cannot tell, saying why (never a failure)."""
    return Lookup(True, "unknown", where, certain=False,
                  reason=f"{_TOO_DEEP}{chain} chain over {MAX_CHAIN} links deep; auxcheck "
                         "follows no further, so cannot tell")


def _outside_bases(index: ReleaseIndex, module: str, bases: Sequence[str], *,
                   depth: int = 0) -> Iterator[str]:
    """Yields the bases outside sglang (``torch.nn.Module``) directly under these SGLang bases:
    what a "has no attribute" answer also read from the environment."""
    if depth > 20:  # a cycle of bases: member() answered "cannot tell" for it already
        return
    for base in bases:
        head, *rest = base.split(".")
        if base in _PLAIN_BASES or not head.isidentifier():
            continue
        found = index.provides(module, head)
        if found.kind == "external":
            yield ".".join([found.where, *rest])
        elif found.ok and found.certain and found.kind == "class":
            owner, _, qualname = index._split_class(found.where)
            cls = index.classes(owner).get(qualname)
            if cls is not None:
                yield from _outside_bases(index, owner, cls.bases, depth=depth + 1)


def _outside_member(dotted: str, attr: str) -> Lookup | None:
    """A base outside sglang (``torch.nn.Module``), read from the package installed here:
    None when it certainly lacks ``attr``; uncertain when it cannot be read."""
    found = external_class(dotted)
    if found is None:
        return Lookup(True, "unknown", dotted, certain=False)
    if attr in found.members:
        return Lookup(True, "unknown", f"{dotted}.{attr}", reason=f"{dotted} ({found.origin})")
    return None


def _read_cache(path: Path) -> list[ModuleSummary] | None:
    """Returns the summaries cached at ``path``; None when there are none, or when the file is
    not what :func:`write_cached` wrote (damaged, foreign, hostile): it is rebuilt, never trusted."""
    data = read_cached(path)
    if not isinstance(data, list):
        return None
    try:
        return [ModuleSummary.from_json(entry) for entry in data]
    except ValueError:
        return None


def read_cached(path: Path) -> object:
    """Returns the JSON document cached at ``path``, or None when there is none to read (no
    file, not JSON, nested deeper than the decoder's stack)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def write_cached(path: Path, data: object) -> None:
    """Caches ``data`` as JSON at ``path``, written to a temporary name and renamed (a reader
    never sees half a file); a cache that cannot be written costs time on the next run,
    nothing else."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        try:  # a full disk: no half-written file is left behind
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


class Homes:
    """Where the newer release keeps each name: who defines it, who SGLang imports it from."""

    def __init__(self, index: ReleaseIndex) -> None:
        index.load_all()
        self.index = index
        self.definers: dict[str, list[str]] = defaultdict(list)
        self.imports: dict[str, Counter[str]] = defaultdict(Counter)
        for summary in index.summaries():
            for name in summary.defined if importable_module(summary.name) else ():
                self.definers[name].append(summary.name)
            for module, name in summary.uses:
                self.imports[name][module] += 1

    def facade(self, module: str, name: str) -> str:
        """Returns the nearest package above ``module`` re-exporting its ``name``, else ``module``."""
        for package in _packages_above(module):
            found = self.index.provides(package, name)
            if found.ok and found.certain and found.where == f"{module}.{name}":
                return package
        return module


def _packages_above(module: str) -> Iterator[str]:
    """Yields the packages above ``module``, nearest first, down to (not including) ``sglang``."""
    parts = module.split(".")
    for end in range(len(parts) - 1, 1, -1):
        yield ".".join(parts[:end])

