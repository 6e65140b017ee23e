"""Star re-exports in a release: followed to any depth as Python follows them, never guessed.

Python's rule for ``from M import *``: a literal ``__all__`` gives exactly its names;
without one, every public name M binds, including those M got by its own star imports.
Each case is a small release tree built in ``tmp_path``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from helpers.releases import write_release

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import check_release
from auxcheck._releases.stars import star_names
from auxcheck.releases import Release

DEPTH = 1200
"""Deeper than Python's default recursion limit."""

P = "sglang/srt/a"


def index_of(tmp_path: Path, files: dict[str, str]) -> ReleaseIndex:
    """Returns the index of a release holding ``files`` (paths under ``sglang/``)."""
    tree = {"sglang/version.py": '__version__ = "9.1.0"\n',
            **{path: textwrap.dedent(text) for path, text in files.items()}}
    return ReleaseIndex(Release.from_source(write_release(tmp_path / "release", tree)))


def chain(depth: int, *, exports: bool = False) -> dict[str, str]:
    """Returns modules m0 ... m<depth>, each star-importing the next; the last defines f."""
    line = "__all__ = ['f']\n" if exports else ""
    files = {f"{P}/m{i}.py": f"from .m{i + 1} import *\n{line}" for i in range(depth)}
    files[f"{P}/m{depth}.py"] = "def f(): ...\n"
    return files


TWO_LEVELS = {f"{P}/__init__.py": "from .b import *\n", f"{P}/b.py": "from .c import *\n",
              f"{P}/c.py": "def f(): ...\ndef _g(): ...\n"}


@pytest.mark.parametrize(("files", "module", "name", "where"), [
    pytest.param(TWO_LEVELS, "sglang.srt.a", "f", "sglang.srt.a.c.f",
                 id="two-levels-without-all"),
    pytest.param({**TWO_LEVELS, f"{P}/b.py": "from .c import *\n__all__ = ['f']\n"},
                 "sglang.srt.a", "f", "sglang.srt.a.c.f", id="middle-all-lists-the-starred-name"),
    pytest.param({**TWO_LEVELS, f"{P}/c.py": "from .d import *\n__all__ = ['f']\n",
                  f"{P}/d.py": "from .e import f\n", f"{P}/e.py": "class f: ...\n"},
                 "sglang.srt.a", "f", "sglang.srt.a.e.f", id="through-all-then-an-explicit-re-export"),
    pytest.param({**TWO_LEVELS, f"{P}/b.py": "from .c import *\nfrom .b import *\n"},
                 "sglang.srt.a", "f", "sglang.srt.a.c.f", id="a-module-star-importing-itself"),
    pytest.param({f"{P}/__init__.py": "from .b import *\n", f"{P}/b.py": "__all__ = ['sub']\n",
                  f"{P}/b/sub.py": ""}, "sglang.srt.a", "sub", "sglang.srt.a.b.sub",
                 id="all-naming-a-submodule"),
    pytest.param(chain(DEPTH), "sglang.srt.a.m0", "f", f"sglang.srt.a.m{DEPTH}.f",
                 id="chain-1200-deep"),
    pytest.param(chain(DEPTH, exports=True), "sglang.srt.a.m0", "f", f"sglang.srt.a.m{DEPTH}.f",
                 id="chain-1200-deep-with-all"),
])
def test_a_name_re_exported_through_star_imports_resolves_to_its_definition(
        tmp_path: Path, files: dict[str, str], module: str, name: str, where: str) -> None:
    """Each module re-exports every public name it got by star import, to any depth."""
    found = index_of(tmp_path, files).provides(module, name)
    assert (found.ok, found.certain, found.where) == (True, True, where)


@pytest.mark.parametrize(("files", "name", "reason"), [
    pytest.param(TWO_LEVELS, "_g", "sglang.srt.a does not define or import _g",
                 id="private-name-without-all"),
    pytest.param({**TWO_LEVELS, f"{P}/b.py": "from .c import *\n__all__ = ['other']\n"},
                 "f", "sglang.srt.a does not define or import f", id="all-leaves-the-name-out"),
    pytest.param({f"{P}/__init__.py": "from .b import *\n", f"{P}/b.py": "from . import *\n"},
                 "f", "sglang.srt.a does not define or import f", id="a-loop-without-the-name"),
])
def test_a_name_no_star_import_gives_is_aux503_material(
        tmp_path: Path, files: dict[str, str], name: str, reason: str) -> None:
    """Where Python's star rule gives no such name, auxcheck says so for certain."""
    found = index_of(tmp_path, files).provides("sglang.srt.a", name)
    assert (found.ok, found.certain, found.reason) == (False, True, reason)


@pytest.mark.parametrize(("middle", "reason"), [
    pytest.param("from .c import *\nfrom .c import __all__ as _c\n__all__ = list(_c)\n",
                 "sglang.srt.a.b computes its __all__ at run time, so auxcheck cannot tell "
                 "whether `from sglang.srt.a.b import *` gives f", id="computed-all"),
    pytest.param("from .c import *\n__all__ = ['x']\n__all__.append('f')\n",
                 "sglang.srt.a.b computes its __all__ at run time, so auxcheck cannot tell "
                 "whether `from sglang.srt.a.b import *` gives f", id="all-appended-to"),
    pytest.param("from .c import *\nprint 'python 2'\n", "sglang.srt.a.b defines __getattr__ "
                 "or cannot be parsed, so auxcheck cannot tell whether it gives f",
                 id="unparseable-module"),
])
def test_a_star_chain_auxcheck_cannot_follow_is_cannot_tell(
        tmp_path: Path, middle: str, reason: str) -> None:
    """A dynamic __all__ or an unreadable module on the way: a note, never a failure."""
    index = index_of(tmp_path, {**TWO_LEVELS, f"{P}/c.py": "__all__ = ['f']\ndef f(): ...\n",
                                f"{P}/b.py": middle})
    found = index.provides("sglang.srt.a", "f")
    assert (found.ok, found.certain, found.reason) == (True, False, reason)


def build_plugin(root: Path, source: str) -> Path:
    """Writes a plugin package ``plug`` with one module holding ``source``; returns ``root``."""
    (root / "plug").mkdir(parents=True)
    (root / "plug" / "__init__.py").write_text("")
    (root / "plug" / "hooks.py").write_text(source, encoding="utf-8")
    return root


@pytest.mark.parametrize(("files", "verdict"), [
    pytest.param(TWO_LEVELS, "ok", id="two-levels"),
    pytest.param(chain(DEPTH, exports=True) | {f"{P}/__init__.py": "from .m0 import *\n"}, "ok",
                 id="chain-1200-deep"),
    pytest.param({**TWO_LEVELS, f"{P}/b.py": "from .c import *\n__all__ = ['x'] + ['f']\n"},
                 "note", id="computed-all"),
])
def test_check_passes_a_plugin_importing_a_name_star_re_exported_by_a_package(
        tmp_path: Path, files: dict[str, str], verdict: str) -> None:
    """`check --sglang` on `from sglang.srt.a import f`: no AUX503, the judgement in the JSON."""
    index = index_of(tmp_path, files)
    plugin = build_plugin(tmp_path / "plugin", "from sglang.srt.a import f\n")
    result = check_release(scan_project(plugin), index)
    assert not result.failed
    imports = next(s for s in result.stages if s.stage == "imports")
    assert [j["verdict"] for j in imports.to_dict()["judged"]] == [verdict]


@pytest.mark.parametrize(("files", "expected"), [
    pytest.param(TWO_LEVELS, {"f"}, id="two-levels-without-all"),
    pytest.param({**TWO_LEVELS, f"{P}/b.py": "from .c import *\n__all__ = ['f', '_h']\n"},
                 {"f", "_h"}, id="all-gives-its-private-names-too"),
    pytest.param({**TWO_LEVELS, f"{P}/b.py": "from .c import *\n__all__ = list('f')\n"}, set(),
                 id="computed-all-adds-nothing"),
    pytest.param(chain(DEPTH) | {f"{P}/__init__.py": "from .m0 import *\n"},
                 {"f"}, id="chain-1200-deep"),
])
def test_star_names_are_every_name_the_star_imports_bind(
        tmp_path: Path, files: dict[str, str], expected: set[str]) -> None:
    """What `auxcheck moves` reads as a module's names: the same rule, to any depth."""
    assert star_names(index_of(tmp_path, files), "sglang.srt.a") == expected
