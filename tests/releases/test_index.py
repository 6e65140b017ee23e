"""Tests for auxcheck._releases.index: what a release's modules provide, read with ``ast``, never imported.

Each rule is checked on a small release built in ``tmp_path``, once as a folder and once
as a zip wheel; the skeleton parse is checked against the whole-file parse on real SGLang.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from helpers.releases import real_release, write_release

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.summaries import module_of_path, skeleton, summarize
from auxcheck.releases import Release

FILES = {
    "sglang/version.py": "__version__ = '0.0.1'\n",
    # sglang/srt has no __init__.py: a namespace package, as in real releases.
    "sglang/srt/base.py": (
        "class Base:\n"
        "    def inherited(self):\n"
        "        return 1\n"
        "\n"
        "    class Nested:\n"
        "        pass\n"
    ),
    "sglang/srt/defs.py": (
        "from typing import TYPE_CHECKING\n"
        "\n"
        "import torch\n"
        "\n"
        "from sglang.srt.base import Base\n"
        "from .base import Base as AliasBase\n"
        "\n"
        "if TYPE_CHECKING:\n"
        "    from sglang.srt.hidden import OnlyTyped\n"
        "    TYPED_VAR = 1\n"
        "\n"
        "__all__ = ['Outer', 'func']\n"
        "\n"
        "\n"
        "class Outer:\n"
        "    class Inner:\n"
        "        def method(self):\n"
        "            from sglang.srt.late import used_late\n"
        "\n"
        "    def own(self):\n"
        "        pass\n"
        "\n"
        "\n"
        "class Child(Base):\n"
        "    def own(self):\n"
        "        pass\n"
        "\n"
        "\n"
        "@torch.no_grad()\n"
        "def func():\n"
        "    pass\n"
        "\n"
        "\n"
        "VALUE = 3\n"
    ),
    "sglang/srt/reexport/__init__.py": "from .impl import Thing\nfrom .impl import *\n",
    "sglang/srt/reexport/impl.py": (
        "__all__ = ['Thing', 'Starred']\n"
        "class Thing: ...\n"
        "class Starred: ...\n"
        "class NotExported: ...\n"
    ),
    "sglang/srt/star_noall.py": "from sglang.srt.plain import *\n",
    "sglang/srt/plain.py": "def public(): ...\ndef _private(): ...\n",
    "sglang/srt/dyn.py": "def __getattr__(name):\n    raise AttributeError(name)\n",
    "sglang/srt/pkg/__init__.py": "",
    "sglang/srt/pkg/sub.py": "X = 1\n",
    "sglang/srt/pkg_user.py": "from sglang.srt.pkg import sub\n",
    "sglang/srt/shape.py": "class Shape: ...\n",
    "sglang/srt/flat/__init__.py": "from .part import Flat\n",
    "sglang/srt/flat/part.py": "class Flat: ...\n",
}
"""A release holding one example of each resolution rule."""

AFTER = {
    "sglang/version.py": "__version__ = '0.0.2'\n",
    # The module became a package that does not re-export it; the package became a module.
    "sglang/srt/shape/__init__.py": "",
    "sglang/srt/shape/impl.py": "class Shape: ...\n",
    "sglang/srt/flat.py": "class Flat: ...\n",
}
"""The next release: shape.py became a package, flat/ became a module."""


def build(root: Path, files: Mapping[str, str], *, wheel: bool) -> Release:
    """Returns the release of ``files``, written as a folder or zipped as a wheel under ``root``."""
    path = write_release(root, files, wheel=wheel)
    return Release.from_wheel(path) if wheel else Release.from_source(path)


@pytest.fixture(params=["folder", "wheel"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> ReleaseIndex:
    """Returns the index of FILES, read from a folder and from a wheel."""
    return ReleaseIndex(build(tmp_path / "a", FILES, wheel=request.param == "wheel"))


PROVIDES = {
    "a class defined there": ("sglang.srt.defs", "Outer", True, "class", "sglang.srt.defs.Outer"),
    "a decorated function": ("sglang.srt.defs", "func", True, "function", "sglang.srt.defs.func"),
    "a variable": ("sglang.srt.defs", "VALUE", True, "variable", "sglang.srt.defs.VALUE"),
    "a name imported from SGLang": ("sglang.srt.defs", "Base", True, "class",
                                    "sglang.srt.base.Base"),
    "a relative import under an alias": ("sglang.srt.defs", "AliasBase", True, "class",
                                         "sglang.srt.base.Base"),
    "a third-party module": ("sglang.srt.defs", "torch", True, "module", "torch"),
    "a name missing from __all__ still imports": ("sglang.srt.defs", "Child", True, "class",
                                                  "sglang.srt.defs.Child"),
    "a re-export in a package": ("sglang.srt.reexport", "Thing", True, "class",
                                 "sglang.srt.reexport.impl.Thing"),
    "a star import honouring __all__": ("sglang.srt.reexport", "Starred", True, "class",
                                        "sglang.srt.reexport.impl.Starred"),
    "a submodule of a package": ("sglang.srt.reexport", "impl", True, "module",
                                 "sglang.srt.reexport.impl"),
    "a star import without __all__": ("sglang.srt.star_noall", "public", True, "function",
                                      "sglang.srt.plain.public"),
    "a package under a namespace package": ("sglang.srt", "pkg", True, "module",
                                            "sglang.srt.pkg"),
    "from pkg import submodule": ("sglang.srt.pkg", "sub", True, "module", "sglang.srt.pkg.sub"),
    "a submodule bound by an import": ("sglang.srt.pkg_user", "sub", True, "module",
                                       "sglang.srt.pkg.sub"),
}


@pytest.mark.parametrize(("module", "name", "ok", "kind", "where"), PROVIDES.values(),
                         ids=PROVIDES.keys())
def test_from_module_import_name_resolves_as_python_binds_it(
        index: ReleaseIndex, module: str, name: str, ok: bool, kind: str, where: str) -> None:
    """`from M import N` works for definitions, imports, star imports and submodules."""
    found = index.provides(module, name)
    assert (found.ok, found.kind, found.where, found.certain) == (ok, kind, where, True)


MISSING = {
    "a name bound only under TYPE_CHECKING": (
        "sglang.srt.defs", "OnlyTyped",
        "sglang.srt.defs imports OnlyTyped only under `if TYPE_CHECKING`"),
    "a variable assigned only under TYPE_CHECKING": (
        "sglang.srt.defs", "TYPED_VAR",
        "sglang.srt.defs imports TYPED_VAR only under `if TYPE_CHECKING`"),
    "a name imported inside a function body": (
        "sglang.srt.defs", "used_late", "sglang.srt.defs does not define or import used_late"),
    "a name the star import's __all__ leaves out": (
        "sglang.srt.reexport", "NotExported",
        "sglang.srt.reexport does not define or import NotExported"),
    "a private name a star import skips": (
        "sglang.srt.star_noall", "_private",
        "sglang.srt.star_noall does not define or import _private"),
    "a module that does not exist": ("sglang.srt.nope", "X", "module sglang.srt.nope does not exist"),
}


@pytest.mark.parametrize(("module", "name", "reason"), MISSING.values(), ids=MISSING.keys())
def test_names_absent_at_run_time_do_not_resolve_and_say_why(
        index: ReleaseIndex, module: str, name: str, reason: str) -> None:
    """Names bound only for type checkers, inside functions or outside __all__ are not importable."""
    assert index.provides(module, name).ok is False
    assert index.provides(module, name).reason == reason


def test_a_module_getattr_makes_any_name_possible_but_uncertain(index: ReleaseIndex) -> None:
    """A module-level `__getattr__` may provide anything: ok, but not certain."""
    found = index.provides("sglang.srt.dyn", "Anything")
    assert (found.ok, found.certain) == (True, False)
    assert found.reason.startswith("sglang.srt.dyn defines __getattr__")


RESOLVE = {
    "a method of a class nested in a class": ("sglang.srt.defs.Outer.Inner.method", True,
                                              "function"),
    "a nested class": ("sglang.srt.base.Base.Nested", True, "class"),
    "a method inherited from a base in another module": ("sglang.srt.defs.Child.inherited",
                                                         True, "function"),
    "an overriding method": ("sglang.srt.defs.Child.own", True, "function"),
    "a module": ("sglang.srt.pkg.sub", True, "module"),
    "a re-exported class's attribute": ("sglang.srt.reexport.Thing.__init__", True, "function"),
    "a method missing from class and bases": ("sglang.srt.defs.Child.nope", False, ""),
    "a method missing from a nested class": ("sglang.srt.defs.Outer.Inner.nope", False, ""),
    "a module that does not exist": ("sglang.srt.nope.X", False, ""),
}


@pytest.mark.parametrize(("dotted", "ok", "kind"), RESOLVE.values(), ids=RESOLVE.keys())
def test_dotted_targets_resolve_as_pkgutil_resolve_name_would(
        index: ReleaseIndex, dotted: str, ok: bool, kind: str) -> None:
    """Hook and mock.patch targets walk modules, then classes and their bases."""
    found = index.resolve(dotted)
    assert (found.ok, found.kind) == (ok, kind)


def test_a_missing_inherited_method_names_the_class_and_its_bases(index: ReleaseIndex) -> None:
    """The reason for a missing member says which class lacked it, bases included."""
    assert index.resolve("sglang.srt.defs.Child.nope").reason == (
        "class sglang.srt.defs.Child has no attribute nope (nor do its bases)")


def test_a_target_outside_sglang_is_refused_with_a_reason(index: ReleaseIndex) -> None:
    """Only dotted paths into sglang are resolved."""
    assert index.resolve("torch.nn.Module").reason == (
        "'torch.nn.Module' is not a dotted path into sglang")


@pytest.mark.parametrize("wheel", [False, True], ids=["folder", "wheel"])
def test_modules_that_became_packages_and_back_resolve_in_each_release(
        tmp_path: Path, wheel: bool) -> None:
    """A module turned package (and a package turned module) is read from its new file."""
    before = ReleaseIndex(build(tmp_path / "a", FILES, wheel=wheel))
    after = ReleaseIndex(build(tmp_path / "b", AFTER, wheel=wheel))
    summaries = {m: (before.summary(m), after.summary(m))
                 for m in ("sglang.srt.shape", "sglang.srt.flat")}
    assert {m: (a.package, b.package) for m, (a, b) in summaries.items() if a and b} == {
        "sglang.srt.shape": (False, True), "sglang.srt.flat": (True, False)}
    assert [before.provides("sglang.srt.shape", "Shape").ok,
            after.provides("sglang.srt.shape", "Shape").ok,
            after.provides("sglang.srt.shape.impl", "Shape").ok,
            before.provides("sglang.srt.flat", "Flat").where,
            after.provides("sglang.srt.flat", "Flat").where] == [
        True, False, True, "sglang.srt.flat.part.Flat", "sglang.srt.flat.Flat"]


def test_namespace_packages_exist_without_an_init_file(index: ReleaseIndex) -> None:
    """`sglang.srt` has no __init__.py yet imports, as Python's namespace packages do."""
    assert [index.module_exists(m) for m in ("sglang", "sglang.srt", "sglang.srt.pkg",
                                             "sglang.srt.nope", "torch")] == [
        True, True, True, False, False]


def test_uses_list_every_sglang_from_import_function_bodies_included(index: ReleaseIndex) -> None:
    """A summary's uses hold every `from sglang... import N` of the file, made absolute."""
    summary = index.summary("sglang.srt.defs")
    assert summary is not None
    assert sorted(summary.uses) == [("sglang.srt.base", "Base"), ("sglang.srt.base", "Base"),
                                    ("sglang.srt.hidden", "OnlyTyped"),
                                    ("sglang.srt.late", "used_late")]


def test_load_all_reads_every_module_and_the_cache_gives_the_same(tmp_path: Path) -> None:
    """The on-disk cache of summaries gives back exactly what parsing gave."""
    release = build(tmp_path / "a", FILES, wheel=True)
    parsed = ReleaseIndex(release, cache=tmp_path / "cache")
    parsed.load_all(jobs=1)
    cached = ReleaseIndex(release, cache=tmp_path / "cache")
    cached.load_all(jobs=1)
    assert list(cached.summaries()) == list(parsed.summaries())
    assert len(list(parsed.summaries())) == len(release.python_files())


def test_the_skeleton_replaces_bodies_but_keeps_top_level_statements() -> None:
    """Function and class bodies become `...`; imports, assignments and decorators' targets stay."""
    text = FILES["sglang/srt/defs.py"]
    assert "used_late" not in skeleton(text)
    assert "class Outer: ...\n" in skeleton(text)
    assert "def func(): ...\n" in skeleton(text)
    assert "VALUE = 3\n" in skeleton(text)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")
def test_the_skeleton_gives_the_whole_parse_on_a_sample_of_real_sglang() -> None:
    """On every 8th file of real SGLang 0.5.23 the skeleton binds what the whole file binds."""
    release = real_release("0.5.23")
    differ = []
    for path in release.python_files()[::8]:
        module, package = module_of_path(path)
        text = release.read(path) or ""
        try:
            whole = summarize(module, package, text, whole=True)
        except SyntaxError:
            continue
        fast = summarize(module, package, text)
        keys = ("defined", "imported", "stars", "exports", "type_checking", "dynamic")
        if any(getattr(fast, k) != getattr(whole, k) for k in keys):
            differ.append(path)
    assert differ == []
