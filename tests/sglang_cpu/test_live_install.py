"""How ``auxcheck live`` installs a plugin beside a CPU SGLang environment: its own requirements too, never SGLang's.

pip runs with the environment's interpreter, offline here (``PIP_NO_INDEX``, the plugin's one
outside requirement served from a local folder of wheels), into a temporary folder.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.processes import HANG_GUARD
from helpers.sglang_cpu import environment

from auxcheck._sglang_cpu.install import install_plugin

pytestmark = pytest.mark.slow

PLUGIN_TOML = '''[project]
name = "needy-plugin"
version = "0.1.0"
dependencies = ["auxdep>=1", "msgspec<0.1", "sglang>=0.5.20", "never-published-auxcheck-dep"]

[project.entry-points."sglang.srt.plugins"]
needy = "needy:register"

[tool.setuptools]
packages = ["needy"]
'''


def project(folder: Path, name: str, toml: str) -> Path:
    (folder / name).mkdir(parents=True)
    (folder / name / "__init__.py").write_text("def register():\n    pass\n")
    (folder / "pyproject.toml").write_text(toml)
    return folder


def test_what_the_plugin_requires_and_sglangs_environment_lacks_is_installed_beside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = environment()
    wheels = tmp_path / "wheels"
    dep = project(tmp_path / "auxdep", "auxdep",
                  '[project]\nname = "auxdep"\nversion = "1.2"\n'
                  '[tool.setuptools]\npackages = ["auxdep"]\n')
    subprocess.run([str(env.python), "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(wheels), str(dep)], check=True,
                   capture_output=True, timeout=HANG_GUARD, cwd=tmp_path)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    plugin = project(tmp_path / "needy", "needy", PLUGIN_TOML)
    installed = install_plugin(env, plugin, tmp_path / "run" / "site")
    site = installed.site
    assert (site / "auxdep" / "__init__.py").is_file()  # missing: installed beside it
    assert dict(installed.entry_points) == {"needy": "needy:register"}
    # met by the environment: nothing of msgspec's, torch's or sglang's lands beside it
    assert not [p for p in site.iterdir() if p.name.startswith(("msgspec", "sglang", "torch"))]
    assert installed.unmet == ("never-published-auxcheck-dep",)
    assert list(installed.notes) == [
        ("the plugin requires msgspec<0.1; SGLang's environment has "
        f"{_version(env.python, 'msgspec')}, which the run uses"),
        ("the plugin requires never-published-auxcheck-dep, which pip could not install beside "
        "SGLang (ERROR: No matching distribution found for never-published-auxcheck-dep)")]
    # the project folder itself is left as it was: pip built from a copy
    assert sorted(p.name for p in plugin.iterdir()) == ["needy", "pyproject.toml"]


def _version(python: Path, name: str) -> str:
    return subprocess.run([str(python), "-c", (f"import importlib.metadata as m; "
                           f"print(m.version({name!r}))")], capture_output=True, text=True,
                          check=True, timeout=HANG_GUARD).stdout.strip()
