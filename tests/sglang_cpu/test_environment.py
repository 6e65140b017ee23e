"""The CPU SGLang environment's builder: when an environment counts as built, and how a failed build reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers.sglang_cpu import environment

from auxcheck._core.errors import CpuEnvironmentError
from auxcheck._sglang_cpu import environment as builder
from auxcheck._sglang_cpu.__main__ import main
from auxcheck._sglang_cpu.environment import STAMP, Environment


def made(tmp_path: Path, stamp: str | None) -> Environment:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").touch()
    if stamp is not None:
        (tmp_path / STAMP).write_text(stamp)
    return Environment(tmp_path)


STAMPS = {
    "no stamp (an interrupted build)": (None, False),
    "a garbled stamp": ("{not json", False),
    "the stamp of another recipe": (json.dumps({"release": "0.5.23", "recipe": "0" * 16}), False),
    "a stamp that is no object": ("[1, 2]", False),
    "a stamp without its release": (json.dumps({"recipe": builder.recipe_digest()}), False),
    "a stamp of a release without a recipe": (
        json.dumps({"release": "0.5.2", "recipe": "0" * 16}), False),
    "the stamp of this recipe": (
        json.dumps({"release": "0.5.23", "recipe": builder.recipe_digest()}), True),
}


@pytest.mark.parametrize(("stamp", "ready"), list(STAMPS.values()), ids=list(STAMPS))
def test_an_environment_is_ready_only_with(tmp_path: Path, stamp: str | None, ready: bool) -> None:
    assert made(tmp_path, stamp).ready() is ready


def test_an_environment_is_ready_for_the_release_it_was_built_for_only(tmp_path: Path) -> None:
    stamp = json.dumps({"release": "0.5.20", "recipe": builder.recipe_digest("0.5.20")})
    env = made(tmp_path, stamp)
    assert (env.release, env.ready("0.5.20"), env.ready("0.5.23"), env.ready()) == (
        "0.5.20", True, False, True)


@pytest.mark.parametrize("release", builder.RELEASES)
def test_each_release_has_its_own_pins_and_the_same_cpu_torch(release: str) -> None:
    """Each recipe's constraints pin the CPU torch every build installs, and no two
    releases share a digest."""
    pins = (Path(builder.__file__).with_name(f"constraints-{release}.txt")).read_text()
    assert f"{builder.TORCH_PIN}\n" in pins and f"{builder.TORCHVISION_PIN}\n" in pins
    others = {builder.recipe_digest(r) for r in builder.RELEASES if r != release}
    assert builder.recipe_digest(release) not in others


def test_a_release_without_a_recipe_is_refused_before_anything_is_written(
        tmp_path: Path) -> None:
    with pytest.raises(CpuEnvironmentError, match=r"no recipe for SGLang 0\.5\.2's CPU server"):
        builder.build(tmp_path / "env", release="0.5.2")
    assert list(tmp_path.iterdir()) == []


def test_its_variables_select_the_cpu_engine_and_drop_the_caller_s_environment() -> None:
    env = Environment(Path("/nowhere")).environ({"VIRTUAL_ENV": "/v", "PYTHONPATH": "/p",
                                                  "PIP_CONSTRAINT": "/c", "HOME": "/h"})
    assert env == {"HOME": "/h", "SGLANG_USE_CPU_ENGINE": "1"}


def test_a_failed_step_names_the_step_and_pip_s_last_lines() -> None:
    with pytest.raises(CpuEnvironmentError) as raised:
        script = "import sys; print('no matching distribution'); sys.exit(3)"
        builder._run([sys.executable, "-c", script], "installing SGLang's requirements", {},
                     "0.5.20")
    text = str(raised.value)
    assert ("building the CPU SGLang 0.5.20 environment failed while installing SGLang's "
            "requirements (exit 3)") in text
    assert "no matching distribution" in text
    assert "rebuilt from the start" in text


@pytest.mark.slow
def test_building_a_ready_environment_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    env = environment()
    stamp = (env.path / STAMP).stat().st_mtime_ns
    assert main([str(env.path)]) == 0
    assert capsys.readouterr().out == f"CPU SGLang 0.5.23 environment: {env.path}\n"
    assert (env.path / STAMP).stat().st_mtime_ns == stamp
