"""Tests for where an inferred move points when several SGLang subsystems define the name.

SGLang's ``srt`` and ``multimodal_gen`` each define their own ``SamplingParams`` and
helpers; the larger tree's imports must not pull a move, a mock.patch target or a
``check --sglang`` hint across to the other one (issue 32).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.releases import write_release

from auxcheck._releases.index import ReleaseIndex
from auxcheck._releases.moves_infer import (
    Choice,
    Home,
    InferredMoves,
    infer_moves,
    render_json,
    render_toml,
    subsystem,
)
from auxcheck._releases.plugin_scan import scan_project
from auxcheck._releases.release_check import check_release
from auxcheck.migrate.moves import builtin_moves
from auxcheck.migrate.scan import rewrite_string
from auxcheck.releases import Release

SRT_PARAMS = "sglang.srt.sampling.sampling_params"
MM_PARAMS = "sglang.multimodal_gen.configs.sample.sampling_params"
MM_USERS = {f"sglang/multimodal_gen/user{i}.py": f"from {MM_PARAMS} import SamplingParams\n"
            for i in range(3)}
"""The larger subsystem imports its own SamplingParams more often than srt imports srt's."""

BEFORE = {
    "sglang/version.py": "__version__ = '0.0.1'\n",
    "sglang/srt/sampling/sampling_params.py": "class SamplingParams: ...\n",
    "sglang/srt/managers/scheduler_pp_mixin.py": f"from {SRT_PARAMS} import SamplingParams\n",
    "sglang/multimodal_gen/configs/sample/sampling_params.py": "class SamplingParams: ...\n",
    "sglang/multimodal_gen/runtime/helpers.py": "def set_seed(): ...\n",
    "sglang/srt/utils/common.py": "def set_seed(): ...\n",
    **MM_USERS,
}
AFTER = {
    **BEFORE,
    "sglang/version.py": "__version__ = '0.0.2'\n",
    "sglang/srt/managers/scheduler_pp_mixin.py": "",
    "sglang/multimodal_gen/runtime/helpers.py": "",
    "sglang/multimodal_gen/runtime/seeding.py": "def set_seed(): ...\n",
    "sglang/srt/user.py": "from sglang.srt.utils.common import set_seed\n",
    "sglang/srt/other.py": "from sglang.srt.utils.common import set_seed\n",
}
"""0.0.2: the pp mixin stops importing SamplingParams; multimodal_gen moves its set_seed,
which srt also defines (and imports more)."""


@pytest.fixture
def found(tmp_path: Path) -> InferredMoves:
    """Returns the moves inferred from BEFORE to AFTER."""
    before = ReleaseIndex(Release.from_source(write_release(tmp_path / "a", BEFORE)))
    after = ReleaseIndex(Release.from_source(write_release(tmp_path / "b", AFTER)))
    return infer_moves(before, after)


def _new(found: InferredMoves, old: str, name: str) -> str | None:
    return found.table().new_module_of(old, name)


def test_a_name_moves_to_its_own_subsystems_definer_not_the_most_imported_one(
        found: InferredMoves) -> None:
    """srt's SamplingParams stays in srt, though multimodal_gen imports its own one more."""
    assert _new(found, "sglang.srt.managers.scheduler_pp_mixin", "SamplingParams") == SRT_PARAMS


def test_a_mock_patch_target_stays_in_its_subsystem(found: InferredMoves) -> None:
    """A multimodal_gen target is rewritten to multimodal_gen's new home, not srt's function."""
    text = "sglang.multimodal_gen.runtime.helpers.set_seed"
    assert rewrite_string(text, found.table()) == "sglang.multimodal_gen.runtime.seeding.set_seed"


def test_a_home_chosen_among_several_says_so_in_toml_and_json(found: InferredMoves) -> None:
    """Each move whose home was one of several definers carries a comment and a JSON entry."""
    choice = Choice("sglang.multimodal_gen.runtime.helpers", "set_seed", Home(
        "sglang.multimodal_gen.runtime.seeding",
        ("sglang.multimodal_gen.runtime.seeding", "sglang.srt.utils.common"),
        "the only one in sglang.multimodal_gen"))
    assert choice in found.choices
    assert ("# set_seed: chosen among 2 modules defining it (the only one in "
            "sglang.multimodal_gen); also in sglang.srt.utils.common\n[[move]]\n"
            'old = "sglang.multimodal_gen.runtime.helpers"\n') in render_toml(found)
    assert {"old": "sglang.multimodal_gen.runtime.helpers", "name": "set_seed",
            "new": "sglang.multimodal_gen.runtime.seeding",
            "definers": ["sglang.multimodal_gen.runtime.seeding", "sglang.srt.utils.common"],
            "why": "the only one in sglang.multimodal_gen"} in json.loads(
                render_json(found))["chosen"]
    assert "chosen among several homes" in found.summary()


SUBSYSTEMS = {
    "a deep srt module": ("sglang.srt.managers.scheduler", "sglang.srt"),
    "a multimodal_gen module": ("sglang.multimodal_gen.configs.x", "sglang.multimodal_gen"),
    "a top-level module is its own": ("sglang.bench_one_batch", "sglang.bench_one_batch"),
    "a dotted definition place": (f"{SRT_PARAMS}.SamplingParams", "sglang.srt"),
}


@pytest.mark.parametrize(("module", "expected"), SUBSYSTEMS.values(), ids=SUBSYSTEMS.keys())
def test_the_subsystem_is_the_package_below_sglang(module: str, expected: str) -> None:
    """The boundary is SGLang's second level, the deepest one the 0.5.20 move stays inside."""
    assert subsystem(module) == expected


def test_the_check_hint_names_the_home_in_the_imports_subsystem(tmp_path: Path) -> None:
    """`check --sglang`'s hint for a name gone from an srt module names srt's definer and
    says it chose it among several."""
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "__init__.py").write_text(
        "from sglang.srt.managers.scheduler_pp_mixin import SamplingParams\n")
    release = Release.from_source(write_release(tmp_path / "b", AFTER))
    result = check_release(scan_project(plugin), ReleaseIndex(release), moves=builtin_moves())
    [finding] = result.stages[0].findings
    assert finding.hint.startswith(
        f"sglang 0.0.2 defines SamplingParams in {SRT_PARAMS} (chosen among 2 modules "
        "defining it: the only one in sglang.srt); import it from there"), finding.hint


def test_a_hook_fix_never_names_a_same_named_class_of_another_subsystem(tmp_path: Path) -> None:
    """A hook target gone from srt, whose name only multimodal_gen still defines, gets no
    home: hooking multimodal_gen's class would never reach the srt code the plugin meant."""
    files = {
        "sglang/version.py": "__version__ = '0.0.3'\n",
        "sglang/srt/__init__.py": "",
        "sglang/srt/plugins/hook_registry.py": "class HookRegistry: ...\n",
        "sglang/srt/distributed/parallel_state.py": "def init(): ...\n",
        "sglang/multimodal_gen/__init__.py": "",
        "sglang/multimodal_gen/runtime/parallel_state.py": "class GroupCoordinator:\n"
                                                           "    def all_reduce(self, x): ...\n",
    }
    plugin = tmp_path / "plugin"
    (plugin / "plug").mkdir(parents=True)
    (plugin / "plug" / "__init__.py").write_text(
        "from sglang.srt.plugins.hook_registry import HookRegistry\n"
        "def around(original_fn, *args, **kwargs):\n    return original_fn(*args, **kwargs)\n"
        "def register():\n    HookRegistry.register("
        "'sglang.srt.distributed.parallel_state.GroupCoordinator.all_reduce', around, 'AROUND')\n")
    release = write_release(tmp_path / "r", files)
    result = check_release(scan_project(plugin), ReleaseIndex(Release.from_source(release)))
    [finding] = next(s for s in result.stages if s.stage == "hooks").findings
    assert finding.code == "AUX701"
    assert "multimodal_gen" not in finding.hint, finding.hint
    # Where srt itself defines the class elsewhere, the hint sends the hook there.
    (release / "sglang/srt/distributed/coordinator.py").write_text(
        "class GroupCoordinator:\n    def all_reduce(self, x): ...\n")
    result = check_release(scan_project(plugin), ReleaseIndex(Release.from_source(release)))
    [finding] = next(s for s in result.stages if s.stage == "hooks").findings
    assert ("defines GroupCoordinator in sglang.srt.distributed.coordinator (chosen among 2 "
            "modules defining it: the only one in sglang.srt): hook sglang.srt.distributed."
            "coordinator.GroupCoordinator.all_reduce") in finding.hint, finding.hint
