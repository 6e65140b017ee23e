"""Typed call sites: which receivers auxcheck knows reach a method, read from SGLang's code.

A call of ``x.put(...)`` is evidence against a hook or an override of ``Pool.put`` only
where ``x`` is known to be related to ``Pool`` by inheritance: an attribute every
assignment of which names one class (from an annotated parameter, a class built, a
function annotated to return it), a function's return annotation, an ``isinstance`` test
around the call, or a base of ``Pool`` (which may hold a ``Pool``). A receiver of unknown
type, of an unrelated class, or bound to two classes is never taken for a call of it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from helpers.releases import write_release

from auxcheck._releases.call_sites import call_sites
from auxcheck._releases.definitions import callee
from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import check_release
from auxcheck.releases import Release

POOLS = """
    from typing import Optional


    class Root:
        pass


    class Base(Root):
        def put(self, a, b=None):
            return a


    class Pool(Base):
        def put(self, a, b=None, extra=None):
            return a


    class Sub(Pool):
        pass


    class Other:
        def put(self, a, extra=None):
            return a


    def get_pool() -> Pool:
        return Pool()


    def get_maybe() -> Optional[Pool]:
        return Pool()


    def get_union() -> "Pool | None":
        return Pool()


    def get_other() -> Other:
        return Other()


    def get_missing() -> "Missing":
        return Pool()


    def get_plain():
        return Pool()
    """
"""``sglang.srt.pools``: the class whose ``put`` is the target, its relatives and factories."""

COUNTED = {
    "an-attribute-assigned-from-an-annotated-init-parameter": """
        class Holder:
            def __init__(self, pool: Pool):
                self.pool = pool

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-assigned-from-an-optional-parameter-and-none": """
        class Holder:
            def __init__(self, pool: Optional[Pool] = None):
                self.pool = None
                self.pool = pool

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-built-from-the-class": """
        class Holder:
            def __init__(self):
                self.pool = Pool()

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-annotated-with-the-class": """
        class Holder:
            def __init__(self, make):
                self.pool: Pool = make()

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-its-class-body-declares-assigned-an-unannotated-parameter": """
        class Holder:
            pool: Pool

            def __init__(self, pool):
                self.pool = pool

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-assigned-what-a-function-is-annotated-to-return": """
        class Holder:
            def setup(self):
                self.pool = get_pool()

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-assigned-in-a-base-class-s-init": """
        class Parent:
            def __init__(self, pool: Pool):
                self.pool = pool


        class Holder(Parent):
            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-a-base-s-init-assigns-otherwise-when-that-init-never-runs": """
        class Parent:
            def __init__(self):
                self.pool = Other()


        class Holder(Parent):
            def __init__(self):
                self.pool = Pool()

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "a-local-assigned-once-from-a-function-s-return-annotation": """
        def run():
            pool = get_pool()
            pool.put(1, extra=2)
        """,
    "a-call-on-a-function-s-result": """
        def run():
            get_pool().put(1, extra=2)
        """,
    "a-call-on-an-optional-return-annotation": """
        def run():
            get_maybe().put(1, extra=2)
        """,
    "a-call-on-a-string-union-with-none-return-annotation": """
        def run():
            get_union().put(1, extra=2)
        """,
    "a-name-narrowed-by-isinstance": """
        def run(pool, flag):
            if flag and isinstance(pool, Pool):
                pool.put(1, extra=2)
        """,
    "a-local-of-two-kinds-narrowed-by-isinstance": """
        class Holder:
            def run(self, flag):
                pool = self.a if flag else self.b
                if isinstance(pool, Pool):
                    pool.put(1, extra=2)
                else:
                    pool.put(1)
        """,
    "a-name-narrowed-by-a-negated-isinstance-that-raises": """
        def run(pool):
            if not isinstance(pool, Pool):
                raise TypeError("not a pool")
            pool.put(1, extra=2)
        """,
    "an-attribute-narrowed-by-isinstance": """
        class Holder:
            def run(self):
                if isinstance(self.pool, Pool):
                    self.pool.put(1, extra=2)
        """,
    "a-parameter-typed-as-a-base-of-the-class": """
        def run(pool: Base):
            pool.put(1, extra=2)
        """,
    "an-attribute-typed-as-a-base-of-the-class": """
        class Holder:
            def __init__(self, pool: Base):
                self.pool = pool

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "a-parameter-typed-as-a-subclass-keeping-the-method": """
        def run(pool: Sub):
            pool.put(1, extra=2)
        """,
}
"""Calls of ``Pool.put`` the typed reader counts: one in each ``sglang.srt.caller``."""

NOT_COUNTED = {
    "an-attribute-assigned-two-different-classes": """
        class Holder:
            def __init__(self):
                self.pool = Pool()

            def reset(self):
                self.pool = Other()

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-a-base-s-init-assigns-otherwise-when-super-runs-it": """
        class Parent:
            def __init__(self):
                self.pool = Other()


        class Holder(Parent):
            def __init__(self):
                super().__init__()
                self.pool = Pool()

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-assigned-the-class-and-something-unknown": """
        class Holder:
            def __init__(self, pool: Pool, make):
                if make:
                    self.pool = make()
                else:
                    self.pool = pool

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-declared-as-two-different-classes": """
        class Holder:
            pool: Pool

            def __init__(self, make):
                self.pool: Other = make()

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-assigned-in-a-tuple": """
        class Holder:
            def __init__(self, pair):
                self.pool = Pool()
                self.pool, self.other = pair

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-built-from-a-local-class-variable": """
        class Holder:
            def __init__(self, cls: type = Pool):
                Pool = cls
                self.pool = Pool()

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "an-attribute-of-an-unrelated-class": """
        class Holder:
            def __init__(self, pool: Other):
                self.pool = pool

            def run(self):
                self.pool.put(1, extra=2)
        """,
    "a-parameter-of-an-unrelated-class": """
        def run(pool: Other):
            pool.put(1, extra=2)
        """,
    "a-name-narrowed-to-an-unrelated-class": """
        def run(pool):
            if isinstance(pool, Other):
                pool.put(1, extra=2)
        """,
    "a-name-narrowed-then-bound-again": """
        def run(pool, make):
            if isinstance(pool, Pool):
                pool = make()
                pool.put(1, extra=2)
        """,
    "a-name-after-an-isinstance-that-does-not-exit": """
        def run(pool):
            if isinstance(pool, Pool):
                pass
            pool.put(1, extra=2)
        """,
    "a-name-narrowed-to-a-tuple-of-classes": """
        def run(pool):
            if isinstance(pool, (Pool, Other)):
                pool.put(1, extra=2)
        """,
    "a-name-after-a-negated-isinstance-that-falls-through": """
        def run(pool):
            if not isinstance(pool, Pool):
                print("not a pool")
            pool.put(1, extra=2)
        """,
    "a-name-before-a-negated-isinstance-that-raises": """
        def run(pool, other):
            if not isinstance(other, Other):
                return
            pool.put(1, extra=2)
            if not isinstance(pool, Pool):
                raise TypeError("not a pool")
        """,
    "a-string-return-annotation-naming-nothing": """
        def run():
            get_missing().put(1, extra=2)
        """,
    "a-function-without-a-return-annotation": """
        def run():
            pool = get_plain()
            pool.put(1, extra=2)
        """,
    "a-function-returning-an-unrelated-class": """
        def run():
            get_other().put(1, extra=2)
        """,
    "a-local-assigned-twice": """
        def run(flag):
            pool = get_pool()
            if flag:
                pool = get_other()
            pool.put(1, extra=2)
        """,
    "a-base-s-method-called-through-the-base-class": """
        def run(pool):
            Base.put(pool, 1, 2)
        """,
    "a-parameter-typed-as-a-base-without-the-method": """
        def run(pool: Root):
            pool.put(1, extra=2)
        """,
}
"""Calls auxcheck cannot tell reach ``Pool.put`` (or knows do not): never counted."""


def _release(tmp_path: Path, caller: str) -> ReleaseIndex:
    imports = "from sglang.srt.pools import Base, Other, Pool, Root, Sub, get_maybe, " \
              "get_missing, get_other, get_plain, get_pool, get_union\n" \
              "from typing import Optional\n\n\n"
    root = write_release(tmp_path / "release", {
        "sglang/__init__.py": "",
        "sglang/_version.py": '__version__ = "0.5.23"\n',
        "sglang/srt/__init__.py": "",
        "sglang/srt/pools.py": textwrap.dedent(POOLS),
        "sglang/srt/caller.py": imports + textwrap.dedent(caller),
    })
    return ReleaseIndex(Release.from_source(root))


def _sites_in_caller(index: ReleaseIndex) -> list[str]:
    target = callee(index, "sglang.srt.pools.Pool.put")
    assert target is not None
    return [s.where for s in call_sites(index, target, typed=True)
            if s.where and "caller.py" in s.where]


@pytest.mark.parametrize("caller", COUNTED.values(), ids=COUNTED.keys())
def test_a_receiver_known_to_reach_the_class_is_a_call_site(tmp_path: Path, caller: str) -> None:
    """A receiver whose class SGLang's code states, related to Pool, makes its call count."""
    index = _release(tmp_path, caller)
    assert len(_sites_in_caller(index)) == 1


@pytest.mark.parametrize("caller", NOT_COUNTED.values(), ids=NOT_COUNTED.keys())
def test_a_receiver_of_unknown_or_unrelated_class_is_no_call_site(
    tmp_path: Path, caller: str,
) -> None:
    """Two bindings that disagree, an unrelated class, an unreadable annotation: no evidence."""
    index = _release(tmp_path, caller)
    assert _sites_in_caller(index) == []


def test_an_override_missing_a_keyword_sglang_passes_through_a_typed_attribute_fails(
    tmp_path: Path,
) -> None:
    """The fs-linker shape: ``self.linker = linker`` from ``linker: Linker`` in ``__init__``,
    then ``self.linker.offload(t, session_id=...)``: an override without it is AUX705."""
    root = write_release(tmp_path / "release", {
        "sglang/__init__.py": "",
        "sglang/_version.py": '__version__ = "0.5.23"\n',
        "sglang/srt/__init__.py": "",
        "sglang/srt/linker.py": textwrap.dedent("""
            class Linker:
                def offload(self, transfers, session_id=None):
                    return transfers


            class Cache:
                def __init__(self, cache_linker: Linker):
                    self.cache_linker = cache_linker

                def flush(self, transfers, session):
                    self.cache_linker.offload(transfers, session_id=session)
            """),
    })
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "__init__.py").write_text("")
    (plugin / "plug" / "mine.py").write_text(
        "from sglang.srt.linker import Linker\n\n\n"
        "class Mine(Linker):\n    def offload(self, transfers):\n        return transfers\n")
    result = check_release(scan_project(plugin), ReleaseIndex(Release.from_source(root)))
    found = [f for s in result.stages for f in s.findings if f.code == "AUX705"]
    assert len(found) == 1, [f.message for s in result.stages for f in s.findings]
    assert "session_id" in found[0].message
    assert "sglang/srt/linker.py:12" in found[0].message
