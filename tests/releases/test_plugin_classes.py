"""Plugin classes deriving from SGLang's (AUX705, AUX503, AUX704): auxcheck's verdict against real Python.

Each case is a tiny release (an SGLang base class and the calls SGLang's code makes on
an instance of it) and a plugin class deriving from it. auxcheck judges it from source;
then the release and the plugin are imported, the class is instantiated and SGLang's
calls run. A ``fail`` must be a TypeError or AttributeError there and an ``ok`` must not;
a ``note`` is auxcheck saying it cannot tell, and the case records what really happens.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest
from helpers.processes import HANG_GUARD
from helpers.releases import real_release, sglang_from, write_release
from helpers.sglang_cpu import environment

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_classes import collect_classes
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import ReleaseResult, check_release, render_matrix
from auxcheck._releases.stage import ReleaseStage
from auxcheck.releases import Release

ABC_BASE = """
    from abc import ABC, abstractmethod

    class Base(ABC):
        @abstractmethod
        def get(self, key): ...

        @abstractmethod
        def put(self, key, value): ...
    """
"""An ABC whose subclasses must define ``get`` and ``put``."""

PREFILL_BASE = """
    class Base:
        def prefill(self, batch, *, eager=False):
            return batch

        def flush(self, *, force=False):
            return force
    """
"""A plain base whose ``prefill`` SGLang calls (``eager`` is keyword-only)."""

FILTER_BASE = """
    class Info:
        def filter_batch(self, keep, drop):
            return keep

    class Base:
        def __init__(self):
            self.info = Info()

        def filter_batch(self, keep, drop=None):
            return keep

        def step(self):
            return self.info.filter_batch([1], [2])
    """
"""A base whose own code calls ``filter_batch`` on another object (``self.info``), as
ScheduleBatch calls ``self.sampling_info.filter_batch(...)``."""

HOLDER = """
    class Holder:
        backend: Base

        def __init__(self, backend):
            self.backend = backend

        def go(self):
            return self.backend.prefill([1], eager=True)
    """
"""SGLang code holding the object in an attribute its class body annotates ``Base``."""


class Case(NamedTuple):
    base: str
    """``sglang/srt/base.py``: the SGLang base class ``Base``."""
    plugin: str
    """``plug/impl.py``: the plugin, importing ``Base`` (``PLUGIN`` names the class judged)."""
    verdict: str
    code: str | None
    raises: bool
    calls: str = ""
    """Statements of ``run(obj)`` in ``sglang/srt/caller.py``: SGLang's own calls on the object."""
    use: str = ""
    """A method of its own the plugin calls on the object, with no arguments."""
    other: str = ""
    """``sglang/srt/other.py``: a second SGLang module, for chains across modules."""
    mixins: str = ""
    """``plug/mixins.py``: a second module of the plugin."""
    name: str = "Plugin"
    typed: bool = True
    """Whether ``run``'s ``obj`` is annotated ``Base`` (auxcheck knows the calls reach it)."""


CASES = {
    "abstract-method-missing-on-an-abc-base": Case(
        ABC_BASE, "class Plugin(Base):\n    def get(self, key): ...", "fail", "AUX705", True),
    "every-abstract-method-defined": Case(
        ABC_BASE, "class Plugin(Base):\n    def get(self, key): ...\n"
        "    def put(self, key, value): ...", "ok", None, False),
    "abstract-method-on-a-base-without-abcmeta": Case(
        "from abc import abstractmethod\nclass Base:\n    @abstractmethod\n"
        "    def put(self, key, value): ...", "class Plugin(Base):\n    pass", "ok", None, False),
    "abstract-method-declared-through-a-base-in-another-module": Case(
        ABC_BASE, "from sglang.srt.other import Middle\nclass Plugin(Middle):\n"
        "    def put(self, key, value): ...", "fail", "AUX705", True,
        other="from sglang.srt.base import Base\nclass Middle(Base):\n    pass"),
    "abstract-method-an-sglang-intermediate-defines": Case(
        ABC_BASE, "from sglang.srt.other import Middle\nclass Plugin(Middle):\n"
        "    def put(self, key, value): ...", "ok", None, False,
        other="from sglang.srt.base import Base\nclass Middle(Base):\n"
        "    def get(self, key): ..."),
    "abstract-base-by-metaclass-keyword": Case(
        "from abc import ABCMeta, abstractmethod\nclass Base(metaclass=ABCMeta):\n"
        "    @abstractmethod\n    def put(self, key, value): ...", "class Plugin(Base):\n    pass",
        "fail", "AUX705", True),
    "class-named-as-a-base-is-a-note": Case(
        ABC_BASE, "class StorageBase(Base):\n    def get(self, key): ...\n"
        "class Plugin(Base):\n    def get(self, key): ...\n    def put(self, key, value): ...",
        "note", None, False),
    "intermediate-abstract-plugin-class-is-not-judged": Case(
        ABC_BASE, "from abc import abstractmethod\nclass Partial(Base):\n"
        "    @abstractmethod\n    def extra(self): ...\n"
        "class Plugin(Partial):\n    def get(self, key): ...\n    def put(self, key, value): ...\n"
        "    def extra(self): ...", "ok", None, False),
    "method-supplied-by-a-plugin-mixin": Case(
        ABC_BASE, "class Mixin:\n    def put(self, key, value): ...\n"
        "class Plugin(Mixin, Base):\n    def get(self, key): ...", "ok", None, False),
    "method-supplied-by-a-mixin-in-another-plugin-module": Case(
        ABC_BASE, "from .mixins import StoreMixin\nclass Plugin(StoreMixin, Base):\n"
        "    def get(self, key): ...", "ok", None, False,
        mixins="class StoreMixin:\n    def put(self, key, value): ..."),
    "abstract-method-missing-below-a-plugin-base-in-another-module": Case(
        ABC_BASE, "from plug.mixins import Partial\nclass Plugin(Partial):\n    pass", "fail",
        "AUX705", True, mixins="from sglang.srt.base import Base\nclass Partial(Base):\n"
        "    def get(self, key): ..."),
    "base-with-a-stand-in-for-older-releases": Case(
        ABC_BASE, "try:\n    from sglang.srt.base import Base as Root\nexcept ImportError:\n"
        "    class Root:\n        pass\nclass Plugin(Root):\n    def get(self, key): ...",
        "fail", "AUX705", True),
    "class-defined-twice-under-a-condition": Case(
        ABC_BASE, "if hasattr(Base, 'put'):\n    class Plugin(Base):\n"
        "        def get(self, key): ...\n        def put(self, key, value): ...\n"
        "else:\n    class Plugin(Base):\n        def get(self, key): ...", "note", None, False),
    "mixin-after-the-sglang-base-supplies-nothing": Case(
        ABC_BASE, "class Mixin:\n    def put(self, key, value): ...\n"
        "class Plugin(Base, Mixin):\n    def get(self, key): ...", "fail", "AUX705", True),
    "method-supplied-by-a-class-level-name": Case(
        ABC_BASE, "def _put(self, key, value): ...\n"
        "class Plugin(Base):\n    def get(self, key): ...\n    put = _put", "ok", None, False),
    "method-maybe-supplied-by-an-outside-base": Case(
        ABC_BASE, "from collections import UserDict\nclass Plugin(UserDict, Base):\n"
        "    def put(self, key, value): ...", "note", None, False),
    "override-lacking-a-keyword-sglang-passes": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def prefill(self, batch):\n        return batch",
        "fail", "AUX705", True, calls="obj.prefill([1], eager=True)"),
    "override-lacking-a-keyword-sglang-never-passes": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def prefill(self, batch):\n        return batch",
        "note", None, False, calls="obj.prefill([1])"),
    "override-lacking-a-keyword-sglang-passes-to-an-untyped-receiver": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def prefill(self, batch):\n        return batch",
        "note", None, True, calls="obj.prefill([1], eager=True)", typed=False),
    "override-unlike-a-call-of-the-same-name-on-another-object": Case(
        FILTER_BASE, "class Plugin(Base):\n    def filter_batch(self, keep):\n        return keep",
        "note", None, False, calls="obj.step()"),
    "override-lacking-a-keyword-sglang-passes-through-an-annotated-attribute": Case(
        PREFILL_BASE + HOLDER, "class Plugin(Base):\n    def prefill(self, batch):\n"
        "        return batch", "fail", "AUX705", True, calls="srt_base.Holder(obj).go()", typed=False),
    "override-taking-kwargs": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def prefill(self, batch, **kwargs):\n"
        "        return batch", "ok", None, False, calls="obj.prefill([1], eager=True)"),
    "override-renaming-a-parameter-sglang-passes-by-keyword": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def prefill(self, items, *, eager=False):\n"
        "        return items", "fail", "AUX705", True, calls="obj.prefill(batch=[1])"),
    "override-requiring-a-parameter-the-base-does-not-declare": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def prefill(self, batch, prefix, *, eager=False):\n"
        "        return batch", "note", None, True, calls="obj.prefill([1])"),
    "override-under-an-unknown-decorator": Case(
        PREFILL_BASE, "import functools\ndef traced(fn):\n    @functools.wraps(fn)\n"
        "    def inner(*a, **k):\n        return fn(*a, **k)\n    return inner\n"
        "class Plugin(Base):\n    @traced\n    def prefill(self, batch):\n        return batch",
        "note", None, True, calls="obj.prefill([1], eager=True)"),
    "self-helper-missing-in-the-base": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def work(self):\n        return self.prefil([1])",
        "fail", "AUX503", True, use="work"),
    "self-helper-guarded-by-hasattr": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def work(self):\n"
        "        if hasattr(self, 'warm'):\n            self.warm()", "note", None, False,
        use="work"),
    "self-attribute-set-in-the-base-init": Case(
        "class Base:\n    def __init__(self):\n        self.hook = lambda: None",
        "class Plugin(Base):\n    def work(self):\n        return self.hook()", "ok", None, False,
        use="work"),
    "self-helper-set-on-the-class-after-its-body": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def work(self):\n        return self.helper()\n"
        "Plugin.helper = lambda self: None", "ok", None, False, use="work"),
    "self-helper-a-plugin-subclass-defines": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def work(self):\n        return self.helper()\n"
        "class Child(Plugin):\n    def helper(self): ...", "ok", None, False, use="work",
        name="Child"),
    "self-helper-behind-a-base-getattr": Case(
        "class Base:\n    def __getattr__(self, name):\n        return lambda: None",
        "class Plugin(Base):\n    def work(self):\n        return self.helper()", "note", None,
        False, use="work"),
    "super-helper-behind-a-base-getattr-is-missing-all-the-same": Case(
        "class Base:\n    def __init__(self):\n        setattr(self, 'hel' + 'per', print)\n"
        "    def __getattr__(self, name):\n        return lambda: None",
        "class Plugin(Base):\n    def work(self):\n        return super().helper()", "fail",
        "AUX503", True, use="work"),
    "self-call-that-does-not-bind": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def work(self):\n        return self.prefill([1], True)",
        "fail", "AUX704", True, use="work"),
    "super-call-with-a-wrong-keyword": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def flush(self, *, force=False):\n"
        "        return super().flush(forced=force)", "fail", "AUX704", True, use="flush"),
    "super-call-that-binds": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def flush(self, *, force=False):\n"
        "        return super(Plugin, self).flush(force=force)", "ok", None, False,
        use="flush"),
    "super-call-in-an-override-the-release-does-not-have": Case(
        PREFILL_BASE, "class Plugin(Base):\n    def on_ready(self):\n        super().on_ready()",
        "note", None, False, calls="obj.prefill([1])"),
    "super-init-with-arguments-the-base-does-not-take": Case(
        "class Base:\n    def __init__(self, capacity):\n        self.capacity = capacity",
        "class Plugin(Base):\n    def __init__(self):\n        super().__init__(size=8)",
        "fail", "AUX704", True),
    "class-outside-sglang-only-is-not-judged": Case(
        PREFILL_BASE, "class Plugin(dict):\n    def work(self):\n        return self.missing()",
        "ok", None, False),
}


def _build(tmp_path: Path, case: Case) -> tuple[Path, Path]:
    obj = "obj: Base" if case.typed else "obj"
    caller = (f"import sglang.srt.base as srt_base\nfrom sglang.srt.base import Base\n\n\n"
              f"def run({obj}):\n"
              f"{textwrap.indent(case.calls or 'pass', '    ')}\n")
    release = write_release(tmp_path / "release", {
        "sglang/_version.py": '__version__ = "0.5.23"\n',
        "sglang/srt/base.py": textwrap.dedent(case.base),
        "sglang/srt/other.py": case.other,
        "sglang/srt/caller.py": caller,
    })
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "__init__.py").write_text("")
    (plugin / "plug" / "mixins.py").write_text(case.mixins + "\n")
    (plugin / "plug" / "impl.py").write_text(
        "from sglang.srt.base import Base\n" + case.plugin + "\n")
    return release, plugin


def classes_stage(release: Path, plugin: Path) -> ReleaseStage:
    """Returns the ``classes`` stage of the plugin's result on the release."""
    result = check_release(scan_project(plugin), ReleaseIndex(Release.from_source(release)))
    return next(s for s in result.stages if s.stage == "classes")


def auxcheck_verdict(stage: ReleaseStage) -> tuple[str, str]:
    """Returns the stage's verdict (fail, note or ok) and the text that explains it."""
    if stage.findings:
        return "fail", "\n".join(f.to_text() for f in stage.findings)
    notes = [j for j in stage.judged if j.verdict == "note"]
    if notes:
        return "note", "\n".join(j.detail for j in notes)
    return "ok", "\n".join(f"{j.subject}: {j.detail}" for j in stage.judged)


def real_outcome(release: Path, plugin: Path, case: Case) -> str | None:
    """Returns the TypeError or AttributeError that building the class and running SGLang's
    calls (then the plugin's own) raises, or None."""
    with sglang_from(release, plugin):
        cls = getattr(importlib.import_module("plug.impl"), case.name)
        run = importlib.import_module("sglang.srt.caller").run
        try:
            obj = cls()
            run(obj)
            if case.use:
                getattr(obj, case.use)()
        except (TypeError, AttributeError) as exc:
            return f"{type(exc).__name__}: {exc}"
        return None


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_each_class_shape_is_judged_as_python_runs_it(tmp_path: Path, case: Case) -> None:
    """fail means Python raises TypeError or AttributeError building the class or on SGLang's
    calls; ok means it does not; note is auxcheck saying it cannot tell."""
    release, plugin = _build(tmp_path, case)
    stage = classes_stage(release, plugin)
    verdict, why = auxcheck_verdict(stage)
    raised = real_outcome(release, plugin, case)
    assert (raised is not None) == case.raises, raised
    assert verdict == case.verdict, why
    if verdict == "fail":
        assert {f.code for f in stage.findings} == {case.code}, why
        assert raised is not None
    if verdict == "ok":
        assert raised is None


def test_the_missing_abstract_method_finding_names_the_base_and_the_fix(tmp_path: Path) -> None:
    """The message names the class, the release, the base declaring the method and where,
    and Python's error; the fix gives the declaration to copy."""
    release, plugin = _build(tmp_path, CASES["abstract-method-missing-on-an-abc-base"])
    [finding] = classes_stage(release, plugin).findings
    assert finding.location == "plug/impl.py:2:1"
    assert finding.message == (
        "`Plugin` cannot be instantiated on sglang 0.5.23: its base sglang.srt.base.Base "
        "declares abstract method put (sglang/srt/base.py:9) that it does not define; Python "
        "raises TypeError: Can't instantiate abstract class Plugin; expected `Plugin` to define "
        "every abstract method of its SGLang bases in sglang 0.5.23")
    assert finding.hint == ("define put(self, key, value) in Plugin (a definition does no harm "
                            "on releases that do not declare it)")


def test_the_override_finding_names_the_call_sglang_makes(tmp_path: Path) -> None:
    """An override's failure says which call SGLang makes, where, and Python's TypeError."""
    release, plugin = _build(tmp_path, CASES["override-lacking-a-keyword-sglang-passes"])
    [finding] = classes_stage(release, plugin).findings
    assert finding.message.startswith(
        "`Plugin.prefill` cannot take every call its base's "
        "sglang.srt.base.Base.prefill(self, batch, *, eager=...) (sglang/srt/base.py:3) takes in "
        "sglang 0.5.23: `obj.prefill(a1, eager=...)` raises TypeError: got an unexpected keyword "
        "argument "
        "'eager'; SGLang's own code makes that call (sglang/srt/caller.py:6)")


def test_a_call_of_the_name_on_an_untyped_receiver_is_a_note_that_says_so(
        tmp_path: Path) -> None:
    """SGLang's ``obj.prefill(..., eager=True)`` on an ``obj`` of unknown type is no failure:
    the note names the call and says no receiver of it is known to reach the class."""
    case = CASES["override-lacking-a-keyword-sglang-passes-to-an-untyped-receiver"]
    release, plugin = _build(tmp_path, case)
    [note] = [j for j in classes_stage(release, plugin).judged if j.verdict == "note"]
    assert note.detail.endswith(
        "SGLang's own code makes that call (sglang/srt/caller.py:6) (SGLang calls .prefill(...) "
        "on other objects too, and no receiver of those calls is known to reach this class)")


def test_a_missing_helper_finding_offers_the_close_names(tmp_path: Path) -> None:
    """`self.prefil(...)` on a base that has `prefill` suggests `prefill`."""
    release, plugin = _build(tmp_path, CASES["self-helper-missing-in-the-base"])
    [finding] = classes_stage(release, plugin).findings
    assert finding.message.startswith(
        "`self.prefil([1])`: sglang 0.5.23's base sglang.srt.base.Base has no method prefil")
    assert finding.hint.startswith("the closest names on Plugin and its bases: prefill")


def test_an_intermediate_abstract_plugin_class_gets_no_abstract_verdict(tmp_path: Path) -> None:
    """Only the concrete class is judged for abstract methods: the one a subclass extends is not."""
    release, plugin = _build(tmp_path, CASES["intermediate-abstract-plugin-class-is-not-judged"])
    stage = classes_stage(release, plugin)
    assert [j.subject for j in stage.judged if j.subject in ("Partial", "Plugin")] == ["Plugin"]
    assert stage.checked == 2


def test_classes_are_collected_with_absolute_bases_and_what_they_define() -> None:
    """Bases resolve through the file's imports and its own classes; methods, names, instance
    attributes, abstract methods and calls on self/super() are read in one walk."""
    source = textwrap.dedent("""
        import torch.nn as nn
        from abc import abstractmethod
        from sglang.srt.mem_cache.hicache_storage import HiCacheStorage as Storage

        class Local:
            pass

        class Backend(Storage, Local, nn.Module, make_base()):
            forward = _impl

            def __init__(self):
                self.pool = None
                setattr(self, "ready", True)

            @abstractmethod
            def extra(self): ...

            def get(self, key, *args):
                return super().get(key, target_location=None, *args)

            def work(self):
                try:
                    self.helper(1, k=2)
                except AttributeError:
                    pass

        Backend.late = None
        """)
    bindings = {"nn": "torch.nn", "abstractmethod": "abc.abstractmethod",
                "Storage": "sglang.srt.mem_cache.hicache_storage.HiCacheStorage"}
    local, backend = collect_classes(ast.parse(source), shown="plug/b.py", module="plug.b",
                                     bindings=bindings)
    assert local.dotted == "plug.b.Local"
    assert backend.bases == ("sglang.srt.mem_cache.hicache_storage.HiCacheStorage",
                             "plug.b.Local", "torch.nn.Module", "make_base()")
    assert backend.unknown == ("make_base()",)
    assert set(backend.methods) == {"__init__", "extra", "get", "work"}
    assert backend.names == {"forward", "__init__", "extra", "get", "work"}
    assert backend.instance == {"pool", "ready"}
    assert backend.patched == {"late"}
    assert dict(backend.abstract) == {"extra": "plug/b.py:17:5"}
    assert [(c.via, c.method, c.positional, c.keywords, c.splat, c.guard is not None)
            for c in backend.calls] == [("super", "get", 2, ("target_location",), True, False),
                                        ("self", "helper", 1, ("k",), False, True)]


# ---------------------------------------------------------------- real releases

REAL = ("0.5.19", "0.5.20", "0.5.23")

ENGINE = """
    from sglang.srt.entrypoints.EngineBase import EngineBase


    class RemoteEngine(EngineBase):
        # Written against 0.5.19's EngineBase: 0.5.23 adds two abstract methods.
        def generate(self, *args, **kwargs):
            return {}

        def flush_cache(self):
            pass

        def update_weights_from_tensor(self, named_tensors, load_format=None,
                                       flush_cache=True):
            pass

        def release_memory_occupation(self):
            pass

        def resume_memory_occupation(self):
            pass

        def shutdown(self):
            pass
    """

PREFIX_CACHE = """
    from sglang.srt.mem_cache.base_prefix_cache import BasePrefixCache


    class LruPrefixCache(BasePrefixCache):
        # Written against 0.5.19's BasePrefixCache: 0.5.23 declares checkpoint abstract.
        def reset(self):
            pass

        def match_prefix(self, params):
            return None

        def cache_finished_req(self, req, is_insert=True, **kwargs):
            pass

        def cache_unfinished_req(self, req, **kwargs):
            pass

        def evict(self, params):
            return None

        def inc_lock_ref(self, node):
            return None

        def dec_lock_ref(self, node, params=None):
            return None
    """

STORAGE = """
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage


    class LifeboatStorage(HiCacheStorage):
        def __init__(self):
            self.store = {}

        def get(self, key, target_location=None, target_sizes=None):
            return self.store.get(key)

        def batch_get(self, keys, target_locations=None, target_sizes=None):
            return [self.get(k) for k in keys]

        def set(self, key, value=None, target_location=None, target_sizes=None):
            self.store[key] = value
            return True

        def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
            return all(self.set(k, v) for k, v in zip(keys, values))

        def exists(self, key):
            return key in self.store

        def batch_exists(self, keys):
            # Lacks extra_info: SGLang passes it (HiCacheStorageFailureInjector wraps any backend).
            return sum(1 for k in keys if self.exists(k))

        def on_host_pools_registered(self):
            # 0.5.23 adds this hook; before, nothing calls it, so the super() call never runs.
            super().on_host_pools_registered()

        def register_mem_pool_host(self, mem_pool_host):
            super().register_mem_pool_host(mem_pool_host)
            self.batch_get_v1([], None, extra=None)
    """


def real_results(tmp_path: Path, source: str) -> dict[str, ReleaseResult]:
    """Returns the plugin's result on each real release (wheels from the test cache)."""
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "__init__.py").write_text("")
    (plugin / "plug" / "impl.py").write_text(textwrap.dedent(source))
    scan = scan_project(plugin)
    return {v: check_release(scan, ReleaseIndex(real_release(v))) for v in REAL}


def class_codes(results: dict[str, ReleaseResult]) -> dict[str, list[str]]:
    """Returns the ``classes`` stage's finding codes on each release."""
    return {v: [f.code for s in r.stages if s.stage == "classes" for f in s.findings]
            for v, r in results.items()}


@pytest.mark.slow
def test_an_engine_written_for_0_5_19_cannot_be_built_on_0_5_23(tmp_path: Path) -> None:
    """0.5.23's EngineBase declares begin_weight_update and end_weight_update abstract: an
    EngineBase subclass from 0.5.19's days fails there and only there."""
    results = real_results(tmp_path, ENGINE)
    assert class_codes(results) == {"0.5.19": [], "0.5.20": [], "0.5.23": ["AUX705"]}, \
        render_matrix(list(results.values()))
    [finding] = [f for s in results["0.5.23"].stages for f in s.findings]
    assert finding.message.startswith(
        "`RemoteEngine` cannot be instantiated on sglang 0.5.23: its base "
        "sglang.srt.entrypoints.EngineBase.EngineBase declares abstract methods "
        "begin_weight_update (sglang/srt/entrypoints/EngineBase.py:49) and end_weight_update "
        "(sglang/srt/entrypoints/EngineBase.py:54) that it does not define")


@pytest.mark.slow
def test_a_prefix_cache_written_for_0_5_19_lacks_checkpoint_on_0_5_23(tmp_path: Path) -> None:
    """0.5.23's BasePrefixCache trades cache_finished_req/cache_unfinished_req for an abstract
    checkpoint: a 0.5.19 prefix cache cannot be built there."""
    results = real_results(tmp_path, PREFIX_CACHE)
    assert class_codes(results) == {"0.5.19": [], "0.5.20": [], "0.5.23": ["AUX705"]}, \
        render_matrix(list(results.values()))
    [finding] = [f for s in results["0.5.23"].stages for f in s.findings]
    assert "declares abstract method checkpoint (sglang/srt/mem_cache/" in finding.message
    assert finding.hint.startswith("define checkpoint(self, req, *, up_to, **kwargs) in ")


@pytest.mark.slow
def test_a_hicache_backend_is_judged_on_each_real_release(tmp_path: Path) -> None:
    """The backend defines every abstract method everywhere and its batch_get_v1 call names a
    keyword the base lacks (AUX704) on every release. Its batch_exists cannot take the
    extra_info SGLang passes: 0.5.23's HiCacheStorageFailureInjector makes that call on any
    backend (AUX705); before, only cache_controller does, which auxcheck does not see reach
    the class (a note; SGLang's own backends calling ``self.batch_exists`` are no evidence).
    The super() call in its own on_host_pools_registered is no failure where the base has no
    such method (nothing calls it there)."""
    results = real_results(tmp_path, STORAGE)
    assert class_codes(results) == {"0.5.19": ["AUX704"], "0.5.20": ["AUX704"],
                                    "0.5.23": ["AUX705", "AUX704"]}, \
        render_matrix(list(results.values()))
    for version, result in results.items():
        stage = next(s for s in result.stages if s.stage == "classes")
        verdicts = {j.subject: j.verdict for j in stage.judged}
        assert verdicts["LifeboatStorage"] == "ok", version
        assert verdicts["LifeboatStorage.batch_exists"] == (
            "fail" if version == "0.5.23" else "note"), version
        assert verdicts["super().on_host_pools_registered()"] == (
            "ok" if version == "0.5.23" else "note"), version


_REAL_RUN = """
import json, sys
sys.path.insert(0, sys.argv[1])
import plug.impl as impl
out = {}
for name in ("RemoteEngine", "LruPrefixCache", "LifeboatStorage"):
    try:
        obj = getattr(impl, name)()
    except TypeError as exc:
        out[name] = "TypeError: " + str(exc)
        continue
    out[name] = "ok"
store = impl.LifeboatStorage()
for label, call in (("batch_exists", lambda: store.batch_exists(["k"], None)),
                    ("batch_get_v1", lambda: store.register_mem_pool_host(None)),
                    ("on_host_pools_registered", store.on_host_pools_registered)):
    try:
        call()
        out[label] = "ok"
    except (TypeError, AttributeError) as exc:
        out[label] = type(exc).__name__
print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_real_0_5_23_agrees_with_each_verdict(tmp_path: Path) -> None:
    """The installed SGLang 0.5.23 (CPU environment) refuses to build what auxcheck says cannot
    be built, and raises where auxcheck says SGLang's calls do not fit."""
    env = environment()
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "__init__.py").write_text("")
    (plugin / "plug" / "impl.py").write_text(
        "\n".join(textwrap.dedent(s) for s in (ENGINE, PREFIX_CACHE, STORAGE)))
    done = subprocess.run([str(env.python), "-c", _REAL_RUN, str(plugin)], capture_output=True,
                          text=True, env=env.environ(), timeout=HANG_GUARD, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    real = json.loads(done.stdout.strip().splitlines()[-1])
    assert real["RemoteEngine"].startswith("TypeError: Can't instantiate abstract class "
                                           "RemoteEngine")
    assert "checkpoint" in real["LruPrefixCache"]
    assert real["LifeboatStorage"] == "ok"
    assert (real["batch_exists"], real["batch_get_v1"], real["on_host_pools_registered"]) == (
        "TypeError", "TypeError", "ok")


@pytest.mark.parametrize("where", ["tests/test_backend.py", "plug/test_backend.py",
                                   "plug/backend_test.py", "conftest.py"])
def test_a_class_in_the_plugins_tests_is_never_judged(tmp_path: Path, where: str) -> None:
    """A test's stand-in deriving from an SGLang base is not what SGLang builds or calls:
    no AUX705 for the abstract method it leaves out, though the same class in the package
    is one."""
    case = CASES["abstract-method-missing-on-an-abc-base"]
    release, plugin = _build(tmp_path, case)
    source = (plugin / "plug" / "impl.py").read_text()
    assert classes_stage(release, plugin).findings  # in the package: AUX705
    (plugin / "plug" / "impl.py").write_text("")
    (plugin / where).parent.mkdir(parents=True, exist_ok=True)
    (plugin / where).write_text(source)
    stage = classes_stage(release, plugin)
    assert not stage.findings and not stage.judged, stage
