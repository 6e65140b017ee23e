"""Re-export chains and base-class chains hundreds of links deep, in a release or a plugin:
auxcheck says it cannot tell past its depth limit, never a traceback and never a failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.releases import write_release

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import check_release
from auxcheck.releases import Release

DEEP = 800
"""Far past both Python's recursion limit and auxcheck's depth limit."""

SHALLOW = 20
"""Deeper than any real release's chain, well within the limit."""


def reexports(depth: int) -> dict[str, str]:
    """Returns a release where ``sglang.srt.chain.m0`` re-exports X through ``depth`` modules."""
    files = {"sglang/version.py": "__version__ = '0.0.1'\n"}
    for at in range(depth):
        files[f"sglang/srt/chain/m{at}.py"] = f"from .m{at + 1} import X\n"
    files[f"sglang/srt/chain/m{depth}.py"] = "class X:\n    def hook(self): ...\n"
    return files


def bases(depth: int) -> dict[str, str]:
    """Returns a release where class ``C0`` reaches ``hook`` through ``depth`` base classes."""
    body = "".join(f"class C{at}(C{at + 1}): ...\n" for at in reversed(range(depth)))
    return {"sglang/version.py": "__version__ = '0.0.1'\n",
            "sglang/srt/deep.py": f"class C{depth}:\n    def hook(self): ...\n" + body}


def index_of(tmp_path: Path, files: dict[str, str]) -> ReleaseIndex:
    """Returns the index of the release of ``files``, written as a folder."""
    return ReleaseIndex(Release.from_source(write_release(tmp_path / "release", files)))


CHAINS = {
    "re-exported name": (reexports, "sglang.srt.chain.m0.X", "class"),
    "method through re-exports": (reexports, "sglang.srt.chain.m0.X.hook", "function"),
    "missing method through re-exports": (reexports, "sglang.srt.chain.m0.X.nope", None),
    "method through bases": (bases, "sglang.srt.deep.C0.hook", "function"),
    "missing method through bases": (bases, "sglang.srt.deep.C0.nope", None),
}


@pytest.mark.parametrize(("files", "dotted", "kind"), CHAINS.values(), ids=CHAINS.keys())
def test_a_chain_past_the_depth_limit_cannot_be_told_and_never_raises(
        tmp_path: Path, files: type, dotted: str, kind: str | None) -> None:
    """A chain 800 deep resolves to "cannot tell" with a reason, never a RecursionError."""
    found = index_of(tmp_path, files(DEEP)).resolve(dotted)
    assert (found.ok, found.certain) == (True, False)
    assert "deep" in found.reason


@pytest.mark.parametrize(("files", "dotted", "kind"), CHAINS.values(), ids=CHAINS.keys())
def test_a_chain_within_the_depth_limit_is_still_followed_to_its_end(
        tmp_path: Path, files: type, dotted: str, kind: str | None) -> None:
    """A chain 20 deep is answered for certain, as before the limit existed."""
    found = index_of(tmp_path, files(SHALLOW)).resolve(dotted)
    assert found.certain
    assert found.ok == (kind is not None)
    if kind is not None:
        assert found.kind == kind


PLUGIN_USE = (
    "from unittest import mock\n"
    "from sglang.srt.chain.m0 import X\n"
    "from plug.chain.p0 import Base\n"
    "\n"
    "class Mine(Base):\n"
    "    def hook(self):\n"
    "        return super().hook()\n"
    "\n"
    "def f():\n"
    "    X().hook()\n"
    "    with mock.patch('sglang.srt.chain.m0.X.hook'):\n"
    "        pass\n"
)


def write_plugin(root: Path, depth: int) -> Path:
    """Writes a plugin whose ``Base`` reaches SGLang's X through ``depth`` of its own modules."""
    chain = root / "plug" / "chain"
    chain.mkdir(parents=True)
    for folder in (root / "plug", chain):
        (folder / "__init__.py").write_text("")
    for at in range(depth):
        (chain / f"p{at}.py").write_text(f"from .p{at + 1} import Base\n")
    (chain / f"p{depth}.py").write_text("from sglang.srt.chain.m0 import X as Base\n")
    (root / "plug" / "use.py").write_text(PLUGIN_USE)
    return root


def test_a_plugin_and_release_with_deep_chains_get_notes_and_no_failure(tmp_path: Path) -> None:
    """The release check of a plugin reaching SGLang through 800-deep chains on both sides
    finishes with notes at most: no traceback, no failure."""
    index = index_of(tmp_path, reexports(DEEP))
    result = check_release(scan_project(write_plugin(tmp_path / "plugin", DEEP)), index)
    assert result.error is None
    assert not result.failed, [f.to_text() for s in result.stages for f in s.findings]


def test_a_plugin_class_chain_past_python_s_stack_is_a_note_and_no_failure(tmp_path: Path) -> None:
    """A plugin class reaching SGLang's X through 800 of its own classes is not judged, with a
    note: no traceback, no failure."""
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "__init__.py").write_text("")
    lines = ["from sglang.srt.chain.m1 import X\n", f"class P{DEEP}(X): ...\n"]
    lines += [f"class P{at}(P{at + 1}): ...\n" for at in reversed(range(DEEP))]
    lines.append("class Mine(P0):\n    def hook(self, extra):\n        return super().hook(1)\n")
    (plugin / "plug" / "deep.py").write_text("".join(lines))
    result = check_release(scan_project(plugin), index_of(tmp_path, reexports(1)))
    assert result.error is None
    assert not result.failed, [f.to_text() for s in result.stages for f in s.findings]
    classes = next(s for s in result.stages if s.stage == "classes")
    assert any(j.verdict == "note" and "deep" in j.detail for j in classes.judged)
