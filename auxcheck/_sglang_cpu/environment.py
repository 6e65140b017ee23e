"""A virtual environment where one SGLang release's real code runs on a CPU: built once, pinned, reused.

SGLang's wheel asks for CUDA torch and CUDA-only kernels, none of which a CPU machine can
use. The recipe here installs the CPU build of torch, then SGLang and torchvision from
their wheels without their dependencies, then the part of SGLang's requirements that imports
on a CPU (``requirements-<release>.txt``), every version held by ``constraints-<release>.txt``
(one ``pip freeze`` of a working build: SGLang's own requirements are unpinned and drift).
Each release of :data:`RELEASES` has its two files; the stand-ins are the same for all.
Two stand-ins from ``site/`` go into its site-packages: an ``sgl_kernel`` without compiled
kernels and a start-up module (``_auxcheck_sglang_cpu.pth``) that selects SGLang's CPU engine
and defines what PyPI's CUDA-linked torchvision needs (no SGLang code is changed).

The environment is the folder given; it is usable once its stamp file names this release
and this recipe's digest. A change to the recipe builds it anew; an interrupted build
leaves no stamp, so the next one starts over. Nothing is installed into the caller's
environment.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from auxcheck._core.errors import CpuEnvironmentError

__all__ = [
    "RELEASE",
    "RELEASES",
    "TORCH_PIN",
    "CpuEnvironmentError",
    "Environment",
    "build",
    "recipe_digest",
]

RELEASES = ("0.5.19", "0.5.20", "0.5.23")
"""The SGLang releases a CPU environment can be built for (each measured serving here)."""
RELEASE = "0.5.23"
"""The release built by default (``make sglang-cpu``, the suite's real-SGLang tiers)."""
TORCH_PIN = "torch==2.13.0"
"""The CPU build of torch (SGLang 0.5.23 asks for CUDA torch 2.14.1; 0.5.19 and 0.5.20 for
2.13.0 itself)."""
TORCHVISION_PIN = "torchvision==0.28.0"
STAMP = "auxcheck-sglang-cpu.json"
_HERE = Path(__file__).resolve().parent
_SITE = _HERE / "site"
_SHIM = "_auxcheck_sglang_cpu"
_NO_DEPS = ("xgrammar",)
"""Installed without their requirements (xgrammar's pull in the 1 GB triton wheel)."""


def _recipe_files(release: str) -> list[Path]:
    return [_HERE / f"requirements-{release}.txt", _HERE / f"constraints-{release}.txt",
            _HERE / "site" / f"{_SHIM}.py", _HERE / "site" / "sgl_kernel" / "__init__.py",
            _HERE / "tiny_model.py"]


def recipe_digest(release: str = RELEASE) -> str:
    """Returns the digest of everything ``release``'s environment is built from (files, pins,
    release); raises CpuEnvironmentError for a release with no recipe."""
    if release not in RELEASES:
        raise CpuEnvironmentError(f"auxcheck has no recipe for SGLang {release}'s CPU server "
                                  f"(it has one for {', '.join(RELEASES)})")
    digest = hashlib.sha256(f"{release} {TORCH_PIN} {TORCHVISION_PIN} {sys.version_info[:2]}"
                            .encode())
    for path in _recipe_files(release):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Environment:
    """A built environment: its interpreter and the variables SGLang needs in it."""

    path: Path

    @property
    def python(self) -> Path:
        """Returns the environment's interpreter (an absolute path: commands run elsewhere)."""
        return Path(os.path.abspath(self.path)) / "bin" / "python"

    @property
    def model(self) -> Path:
        """Returns the tiny random Llama built with the environment (``tiny_model.py``)."""
        return self.path / "tiny-llama"

    @property
    def constraints(self) -> Path | None:
        """Returns the pins the environment was built with (None when it has no stamp)."""
        release = self.release
        return None if release is None else _HERE / f"constraints-{release}.txt"

    @property
    def release(self) -> str | None:
        """Returns the release the environment was built for (None when it has no stamp)."""
        try:
            stamp = json.loads((self.path / STAMP).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        release = stamp.get("release") if isinstance(stamp, dict) else None
        return release if isinstance(release, str) else None

    def ready(self, release: str | None = None) -> bool:
        """Returns True when the environment was built by this recipe for ``release`` (any
        release when None) and is complete."""
        try:
            stamp = json.loads((self.path / STAMP).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        built = stamp.get("release") if isinstance(stamp, dict) else None
        if built not in RELEASES or (release is not None and built != release):
            return False
        return stamp.get("recipe") == recipe_digest(built) and self.python.exists()

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """Returns ``base`` (default: this process's environment) set up to run SGLang on CPU.

        The start-up module sets ``SGLANG_USE_CPU_ENGINE`` too; it is set here for the
        processes SGLang starts with a clean environment. Variables of the caller's
        virtual environment are dropped so they cannot leak into this one.
        """
        env = dict(os.environ if base is None else base)
        for name in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH", "PIP_CONSTRAINT"):
            env.pop(name, None)
        env["SGLANG_USE_CPU_ENGINE"] = "1"
        return env


def build(path: Path, *, release: str = RELEASE, wheel: Path | None = None,
          say: Callable[[str], None] = lambda text: None) -> Environment:
    """Returns ``release``'s environment at ``path``, building it first unless it is ready.

    ``wheel`` is SGLang's wheel when the caller has it (auxcheck's wheel cache); otherwise
    pip downloads it. ``say`` gets one line per step, with the seconds so far. Raises
    CpuEnvironmentError naming the step that failed and pip's last lines, or that auxcheck
    has no recipe for ``release``.
    """
    recipe_digest(release)  # no recipe: say so before anything is written
    env = Environment(path.resolve())
    if env.ready(release):
        return env
    env.path.parent.mkdir(parents=True, exist_ok=True)
    with _lock(env.path.parent / f".{env.path.name}.lock"):
        if env.ready(release):  # another build finished while this one waited
            return env
        _build(env, release, wheel, say)
    return env


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    with open(path, "w", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(env: Environment, release: str, wheel: Path | None,
           say: Callable[[str], None]) -> None:
    start = time.monotonic()

    def run(command: list[str], what: str, environ: Mapping[str, str]) -> None:
        _run(command, what, environ, release)

    def step(text: str) -> None:
        say(f"[{time.monotonic() - start:4.0f} s] {text}")

    if env.path.exists():
        shutil.rmtree(env.path)
    constraints = _HERE / f"constraints-{release}.txt"
    pip_env = {k: v for k, v in os.environ.items()
               if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PIP_CONSTRAINT", "PIP_REQUIRE_VIRTUALENV")}
    pip_env.setdefault("PIP_CACHE_DIR", str(env.path.parent / "pip"))  # beside it, not in ~
    step(f"creating {env.path}")
    run([sys.executable, "-m", "venv", str(env.path)], "creating the virtual environment",
         pip_env)
    pip = [str(env.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
           "-c", str(constraints)]
    step(f"installing numpy and {TORCH_PIN} (CPU)")
    run([*pip, "numpy", TORCH_PIN], f"installing {TORCH_PIN}", pip_env)
    step(f"installing sglang {release} and {TORCHVISION_PIN} without their dependencies")
    run([*pip, "--no-deps", str(wheel) if wheel else f"sglang=={release}", TORCHVISION_PIN],
         f"installing sglang {release}", pip_env)
    requirements = _HERE / f"requirements-{release}.txt"
    step(f"installing SGLang's CPU requirements ({requirements.name})")
    run([*pip, "-r", str(requirements)], "installing SGLang's requirements", pip_env)
    run([*pip, "--no-deps", *_NO_DEPS], "installing " + ", ".join(_NO_DEPS), pip_env)
    site = Path(subprocess.run(
        [str(env.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, env=pip_env).stdout.strip())
    shutil.copy2(_SITE / f"{_SHIM}.py", site / f"{_SHIM}.py")
    shutil.copytree(_SITE / "sgl_kernel", site / "sgl_kernel",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (site / f"{_SHIM}.pth").write_text(f"import {_SHIM}\n", encoding="utf-8")
    step("writing a tiny random Llama for SGLang to serve")
    run([str(env.python), str(_HERE / "tiny_model.py"), str(env.model)],
         "writing the tiny model", env.environ(pip_env))
    step("checking that SGLang's scheduler imports")
    run([str(env.python), "-c", ("import sglang.srt.managers.scheduler_components."
          "batch_result_processor")], "importing SGLang's scheduler", env.environ(pip_env))
    stamp = {"release": release, "recipe": recipe_digest(release)}
    (env.path / STAMP).write_text(json.dumps(stamp), encoding="utf-8")
    step("ready")


def _run(command: list[str], what: str, env: Mapping[str, str], release: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, env=dict(env), check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise CpuEnvironmentError(
            f"building the CPU SGLang {release} environment failed while {what} "
            f"(exit {done.returncode}):\n{tail}\nFix the cause above (a network or disk "
            "problem, a package no longer on PyPI) and run it again; the environment is "
            "rebuilt from the start")
