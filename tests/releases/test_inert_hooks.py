"""Hooks and patches that apply but never take effect (AUX706): auxcheck's verdict against what runs.

Each case is two tiny releases, ``0.5.19`` and ``0.5.23`` (each with the real 0.5.23
``hook_registry.py``), a plugin whose hook or patch records in ``EFFECT`` when it runs,
and SGLang's own code (``sglang.srt.caller.run``). auxcheck judges the plugin on each
release with the other as its peer; then, per release, the plugin's ``register()`` runs,
``HookRegistry.apply_hooks()`` applies its hooks and SGLang's code runs. The truth is
``runs`` (the hook or patch ran), ``inert`` (it applied and never ran) or ``crash``
(loading the plugin raised ModuleNotFoundError). An AUX706 must be ``inert`` there and an
AUX503 ``crash``; the table records the truth of what auxcheck leaves alone, too.

msgspec is not installed in the suite's environment, so the msgspec cases' truth on the
release whose class is a Struct is a recorded fact (:data:`MSGSPEC_FACT`); where msgspec
can be imported the case runs it for real instead.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import pytest
from helpers.releases import (
    real_registry_source,
    real_release,
    real_tree,
    sglang_from,
    write_release,
)

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import ReleaseResult, check_release, render_matrix
from auxcheck.migrate.moves import builtin_moves
from auxcheck.releases import Release

MSGSPEC_FACT = "inert"
"""What a wrapper set on a Struct class's ``__post_init__`` does, measured with msgspec 0.23.0 in
SGLang 0.5.23's CPU environment (``.cache/sglang-cpu``): the real ``HookRegistry`` replaced
``__post_init__`` (and, separately, ``__init__`` and ``__new__``) on a ``msgspec.Struct``
subclass, on a ``msgspec.defstruct`` class and on 0.5.23's own ``ServerArgs``; building the
class, ``msgspec.convert`` and ``msgspec.json.decode`` all ran the original and never the
wrapper. A wrapper of ``__setattr__``, ``__repr__``, ``__eq__``, ``__hash__`` or a plain
method was called."""

HAS_MSGSPEC = importlib.util.find_spec("msgspec") is not None

OLD, NEW = "0.5.19", "0.5.23"

PLUGIN_HEADER = ("import importlib\n"
                 "from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n"
                 "EFFECT = []\n\n\n")

CLASS_C = """
class C:
    def m(self):
        return 1

    def n(self):
        return 2

    def __repr__(self):
        return "C()"
"""


HANDLER = """
import logging


class M(logging.Handler):
    def emit(self, record):
        return None
"""
"""A logging handler: ``Handler.handle`` calls ``emit`` without SGLang's code naming it, as
torch's ``Module.__call__`` calls ``forward``."""


class Case(NamedTuple):
    old: Mapping[str, str]
    """The 0.5.19 release's modules (under ``sglang/srt/``) besides ``caller.py``."""
    new: Mapping[str, str]
    """The 0.5.23 release's modules besides ``caller.py``."""
    calls: tuple[str, str]
    """``run()``'s body in 0.5.19 and in 0.5.23: SGLang's own code."""
    plugin: str
    """The plugin after :data:`PLUGIN_HEADER`: defines ``register()``."""
    codes: tuple[tuple[str, ...], tuple[str, ...]]
    """The hooks stage's finding codes on 0.5.19 and on 0.5.23."""
    truth: tuple[str, str]
    """What really happens on 0.5.19 and on 0.5.23: runs, inert or crash."""


def _hook(target: str, body: str = "def HOOK(result, *args, **kwargs):\n"
          "    EFFECT.append(1)\n", kind: str = "AFTER") -> str:
    return (f"{body}\n\ndef register():\n"
            f"    HookRegistry.register('sglang.srt.{target}', HOOK, HookType.{kind})\n")


CASES = {
    "a-method-the-newer-release-no-longer-calls-is-inert-there": Case(
        {"oracle.py": CLASS_C}, {"oracle.py": CLASS_C},
        ("from sglang.srt.oracle import C\nC().m()", "from sglang.srt.oracle import C\nC().n()"),
        _hook("oracle.C.m"), ((), ("AUX706",)), ("runs", "inert")),
    "a-method-no-release-calls-is-left-alone": Case(
        {"oracle.py": CLASS_C}, {"oracle.py": CLASS_C},
        ("from sglang.srt.oracle import C\nC().n()",) * 2,
        _hook("oracle.C.m"), ((), ()), ("inert", "inert")),
    "a-module-function-still-called-through-a-string-is-not-inert": Case(
        {"oracle.py": "def f():\n    return 1\n"}, {"oracle.py": "def f():\n    return 1\n"},
        ("from sglang.srt.oracle import f\nf()",
         "import sglang.srt.oracle as o\ngetattr(o, 'f')()"),
        _hook("oracle.f"), ((), ()), ("runs", "runs")),
    "a-dunder-python-calls-implicitly-is-never-judged": Case(
        {"oracle.py": CLASS_C}, {"oracle.py": CLASS_C},
        ("from sglang.srt.oracle import C\nC().__repr__()",
         "from sglang.srt.oracle import C\nf'{C()!r}'"),
        _hook("oracle.C.__repr__", "def HOOK(self):\n    EFFECT.append(1)\n    return 'x'\n",
              "REPLACE"), ((), ()), ("runs", "runs")),
    "a-method-a-base-outside-sglang-calls-unnamed-is-never-judged": Case(
        {"oracle.py": HANDLER}, {"oracle.py": HANDLER},
        ("from sglang.srt.oracle import M\nM().emit(None)",
         ("import logging\nfrom sglang.srt.oracle import M\nlog = logging.getLogger('x')\n"
          "log.addHandler(M())\nlog.error('e')")),
        _hook("oracle.M.emit"), ((), ()), ("runs", "runs")),
    "a-public-api-users-call-is-never-judged-uncalled": Case(
        {"entrypoints/engine.py": CLASS_C}, {"entrypoints/engine.py": CLASS_C},
        ("from sglang.srt.entrypoints.engine import C\nC().m()",
         "from sglang.srt.entrypoints.engine import C\nC().n()"),
        _hook("entrypoints.engine.C.m"), ((), ()), ("runs", "inert")),
    "post-init-of-a-msgspec-struct-is-inert": Case(
        {"oracle.py": "import dataclasses\n\n@dataclasses.dataclass\nclass S:\n    a: int = 0\n\n"
                      "    def __post_init__(self):\n        pass\n"},
        {"oracle.py": "import msgspec\n\nclass S(msgspec.Struct):\n    a: int = 0\n\n"
                      "    def __post_init__(self):\n        pass\n"},
        ("from sglang.srt.oracle import S\nS()",) * 2,
        _hook("oracle.S.__post_init__", "def HOOK(self):\n    EFFECT.append(1)\n", "BEFORE"),
        ((), ("AUX706",)), ("runs", "inert")),
    "post-init-of-a-defstruct-class-through-an-sglang-base-is-inert": Case(
        {"oracle.py": "import dataclasses\n\n@dataclasses.dataclass\nclass Base:\n    a: int = 0\n\n"
                      "    def __post_init__(self):\n        pass\n\n\nclass S(Base):\n    pass\n"},
        {"base.py": "from msgspec import defstruct as make\n\n\ndef _post(self):\n    pass\n\n\n"
                    "Base = make('Base', [('a', int, 0)], namespace={'__post_init__': _post})\n",
         "oracle.py": "from sglang.srt.base import Base\n\n\nclass S(Base):\n    pass\n"},
        ("from sglang.srt.oracle import S\nS()",) * 2,
        _hook("oracle.S.__post_init__", "def HOOK(self):\n    EFFECT.append(1)\n", "BEFORE"),
        ((), ("AUX706",)), ("runs", "inert")),
    "a-guarded-importlib-patch-of-a-module-that-moved-stops-applying": Case(
        {"old_place.py": "def helper():\n    return 1\n"},
        {"new_place.py": "def helper():\n    return 1\n"},
        ("from sglang.srt import old_place\nold_place.helper()",
         "from sglang.srt import new_place\nnew_place.helper()"),
        "def _patched():\n    EFFECT.append(1)\n\n\ndef register():\n    try:\n"
        "        m = importlib.import_module('sglang.srt.old_place')\n"
        "    except ImportError:\n        return\n    m.helper = _patched\n",
        ((), ("AUX706",)), ("runs", "inert")),
    "an-unguarded-importlib-patch-of-a-module-that-moved-fails-to-load": Case(
        {"old_place.py": "def helper():\n    return 1\n"},
        {"new_place.py": "def helper():\n    return 1\n"},
        ("from sglang.srt import old_place\nold_place.helper()",
         "from sglang.srt import new_place\nnew_place.helper()"),
        "from importlib import import_module\n\n\ndef _patched():\n    EFFECT.append(1)\n\n\n"
        "def register():\n    m = import_module('sglang.srt.old_place')\n"
        "    setattr(m, 'helper', _patched)\n",
        ((), ("AUX503",)), ("runs", "crash")),
    "setattr-of-a-name-the-module-lost-makes-an-attribute-nobody-reads": Case(
        {"oracle.py": "def helper():\n    return 1\n\n\ndef other():\n    return 2\n"},
        {"oracle.py": "def other():\n    return 2\n"},
        ("from sglang.srt import oracle\noracle.helper()",
         "from sglang.srt import oracle\noracle.other()"),
        "from sglang.srt import oracle\n\n\ndef _patched():\n    EFFECT.append(1)\n\n\n"
        "def register():\n    setattr(oracle, 'helper', _patched)\n",
        ((), ("AUX706",)), ("runs", "inert")),
    "the-plugins-own-attribute-read-back-is-no-finding": Case(
        {"oracle.py": "def other():\n    return 2\n"},
        {"oracle.py": "def other():\n    return 2\n"},
        ("from sglang.srt import oracle\noracle.other()",) * 2,
        "import sglang.srt.oracle as oracle\n\n\ndef register():\n    oracle._plug_state = [1]\n"
        "    EFFECT.extend(state())\n\n\ndef state():\n    return oracle._plug_state\n",
        ((), ()), ("runs", "runs")),
}


@pytest.fixture(scope="module")
def registry_source() -> str:
    """Returns the text of the real 0.5.23 ``hook_registry.py``."""
    return real_registry_source()


def _release(root: Path, version: str, modules: Mapping[str, str], calls: str,
             registry: str) -> Path:
    files = {f"sglang/srt/{name}": textwrap.dedent(text) for name, text in modules.items()}
    return write_release(root, {
        **files,
        "sglang/_version.py": f'__version__ = "{version}"\n',
        "sglang/srt/plugins/__init__.py": "",
        "sglang/srt/plugins/hook_registry.py": registry,
        "sglang/srt/caller.py": "def run():\n" + textwrap.indent(calls, "    ") + "\n",
    })


def _build(tmp_path: Path, case: Case, registry: str) -> tuple[dict[str, Path], Path]:
    releases = {version: _release(tmp_path / version, version, modules, calls, registry)
                for version, modules, calls in zip((OLD, NEW), (case.old, case.new), case.calls)}
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "__init__.py").write_text("")
    (plugin / "plug" / "hooks.py").write_text(PLUGIN_HEADER + case.plugin)
    return releases, plugin


def auxcheck_results(releases: Mapping[str, Path], plugin: Path) -> dict[str, ReleaseResult]:
    """Returns the plugin's result on each release, the others as its peers (as the CLI does)."""
    scan = scan_project(plugin)
    indexes = {v: ReleaseIndex(Release.from_source(p, version=v)) for v, p in releases.items()}
    return {v: check_release(scan, index, moves=builtin_moves(),
                             peers=[i for i in indexes.values() if i is not index])
            for v, index in indexes.items()}


def hook_codes(result: ReleaseResult) -> tuple[str, ...]:
    """Returns the codes of the ``hooks`` stage's findings."""
    return tuple(f.code for s in result.stages if s.stage == "hooks" for f in s.findings)


def real_outcome(release: Path, plugin: Path) -> str:
    """Returns what happens when SGLang loads the plugin from ``release`` and runs its code."""
    if re.search(r"\bmsgspec\b", _sources(release)) and not HAS_MSGSPEC:
        return MSGSPEC_FACT
    with sglang_from(release, plugin):
        registry = importlib.import_module("sglang.srt.plugins.hook_registry").HookRegistry
        hooks = importlib.import_module("plug.hooks")
        try:
            hooks.register()
        except ModuleNotFoundError:
            return "crash"
        registry.apply_hooks()
        importlib.import_module("sglang.srt.caller").run()
        return "runs" if hooks.EFFECT else "inert"


def _sources(release: Path) -> str:
    return "".join(p.read_text() for p in (release / "sglang").rglob("*.py"))


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_each_hook_or_patch_is_judged_inert_only_where_it_never_runs(
    tmp_path: Path, registry_source: str, case: Case,
) -> None:
    """AUX706 means the hook or patch applied and never ran there, AUX503 that loading the
    plugin failed; the truth of each release is recorded, for what auxcheck leaves alone too."""
    releases, plugin = _build(tmp_path, case, registry_source)
    results = auxcheck_results(releases, plugin)
    codes = tuple(hook_codes(results[v]) for v in (OLD, NEW))
    truth = tuple(real_outcome(releases[v], plugin) for v in (OLD, NEW))
    assert truth == case.truth
    assert codes == case.codes, render_matrix(list(results.values()))
    for found, happened in zip(codes, truth):
        if "AUX706" in found:
            assert happened == "inert"
        if "AUX503" in found:
            assert happened == "crash"


def test_a_method_no_longer_called_names_the_release_and_the_call_that_still_made_it(
    tmp_path: Path, registry_source: str,
) -> None:
    """The finding names the release, the target's def there, the peer still calling it and
    that call."""
    case = CASES["a-method-the-newer-release-no-longer-calls-is-inert-there"]
    releases, plugin = _build(tmp_path, case, registry_source)
    [finding] = [f for s in auxcheck_results(releases, plugin)[NEW].stages for f in s.findings]
    assert finding.message.startswith(
        "hook on sglang.srt.oracle.C.m: nothing in sglang 0.5.23 refers to m any more: no call, "
        "attribute or string names it outside its own def (sglang/srt/oracle.py:3), so the hook "
        "applies but never runs; sglang 0.5.19 still calls it (sglang/srt/caller.py:3)")
    assert finding.hint.startswith("hook what sglang 0.5.23 calls in its place")


def test_a_guarded_patch_of_a_moved_module_names_where_the_name_lives_now(
    tmp_path: Path, registry_source: str,
) -> None:
    """The fix of a patch that silently stopped applying is the module defining the name now."""
    case = CASES["a-guarded-importlib-patch-of-a-module-that-moved-stops-applying"]
    releases, plugin = _build(tmp_path, case, registry_source)
    [finding] = [f for s in auxcheck_results(releases, plugin)[NEW].stages for f in s.findings]
    assert finding.message.startswith(
        "`m.helper = _patched` patches sglang.srt.old_place.helper, but sglang 0.5.23 has no "
        "sglang.srt.old_place")
    assert finding.hint.startswith("sglang 0.5.23 defines helper in sglang.srt.new_place: "
                                   "patch it there")


def test_without_peers_no_hook_is_judged_uncalled(tmp_path: Path, registry_source: str) -> None:
    """A single release is no evidence that SGLang ever called a target: nothing is said."""
    case = CASES["a-method-the-newer-release-no-longer-calls-is-inert-there"]
    releases, plugin = _build(tmp_path, case, registry_source)
    result = check_release(scan_project(plugin),
                           ReleaseIndex(Release.from_source(releases[NEW], version=NEW)))
    assert hook_codes(result) == ()


# ---------------------------------------------------------------- real releases

REAL = ("0.5.19", "0.5.20", "0.5.23")

REAL_PLUGIN = """\
import importlib
from sglang.srt.plugins.hook_registry import HookRegistry, HookType


def _after(result, *args, **kwargs):
    return result


def _before(self):
    return None


def register():
    HookRegistry.register(
        "sglang.srt.layers.logprob_processor.get_token_ids_logprobs_batch_optimized", _after,
        HookType.AFTER)
    HookRegistry.register("sglang.srt.server_args.ServerArgs.__post_init__", _before,
                          HookType.BEFORE)
    observer = importlib.import_module("sglang.srt.sampling.sampling_observer")
    setattr(observer, "HostAuxiliaryOutput", object)
"""


def _non_test_sources(version: str) -> dict[str, str]:
    root = real_tree(version)
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8", errors="replace")
            for p in (root / "sglang").rglob("*.py")
            if not ({"test", "tests"} & set(p.parts)) and not p.name.startswith("test_")}


@pytest.mark.slow
def test_real_releases_hooks_and_patches_that_stopped_taking_effect(tmp_path: Path) -> None:
    """On the real wheels: a function 0.5.23 no longer calls, ServerArgs becoming a msgspec
    Struct in 0.5.20, and a contract class that left ``sampling_observer`` in 0.5.20.

    The truth is read from the wheels' source here: ``get_token_ids_logprobs_batch_optimized``
    is called in ``logprob_processor.py`` by 0.5.19 and 0.5.20 and only defined by 0.5.23;
    0.5.19's ServerArgs is a dataclass and later ones are made by ``msgspec.defstruct`` (whose
    ``__post_init__`` no wrapper replaces: :data:`MSGSPEC_FACT`, measured on 0.5.23 itself);
    ``HostAuxiliaryOutput`` is defined in ``sampling_observer.py`` by 0.5.19 only."""
    word = "get_token_ids_logprobs_batch_optimized"
    truth: dict[str, list[str]] = {}
    for version in REAL:
        sources = _non_test_sources(version)
        mentions = sum(len(re.findall(rf"\b{word}\b", text)) for text in sources.values())
        server_args = sources["sglang/srt/server_args.py"]
        observer = sources["sglang/srt/sampling/sampling_observer.py"]
        truth[version] = [
            *(["AUX706"] if mentions == 1 else []),  # its def alone
            *(["AUX706"] if "ServerArgs = msgspec.defstruct(" in server_args else []),
            *(["AUX706"] if "class HostAuxiliaryOutput" not in observer else []),
        ]
    assert truth == {"0.5.19": [], "0.5.20": ["AUX706", "AUX706"],
                     "0.5.23": ["AUX706", "AUX706", "AUX706"]}
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "hooks.py").write_text(REAL_PLUGIN)
    scan = scan_project(plugin)
    indexes = {v: ReleaseIndex(real_release(v)) for v in REAL}
    results = {v: check_release(scan, i, moves=builtin_moves(),
                                peers=[p for p in indexes.values() if p is not i])
               for v, i in indexes.items()}
    assert {v: list(hook_codes(r)) for v, r in results.items()} == truth, render_matrix(
        list(results.values()))
    messages = [f.message for s in results["0.5.23"].stages for f in s.findings]
    assert any("sglang 0.5.19 still calls it (sglang/srt/layers/logprob_processor.py:865)" in m
               for m in messages)
    assert any("made by msgspec.defstruct at sglang/srt/server_args.py:551" in m
               for m in messages)
