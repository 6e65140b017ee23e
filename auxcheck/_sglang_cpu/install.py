"""A plugin installed beside a CPU SGLang environment, never into it: one folder the server's import path starts with.

``pip install --target`` (the environment's own pip, without dependencies: the plugin's
must already be SGLang's) puts the plugin and its ``.dist-info`` into a folder of the run,
so SGLang's ``load_plugins()`` finds its ``sglang.srt.plugins`` entry points. auxcheck goes
there too, the way an install puts it: a link to its package and a ``.dist-info`` naming its
own entry point (the live guard). A ``sitecustomize`` there starts the probe
(:mod:`auxcheck._sglang_cpu.probe`) in every process. The cached environment is never
changed, so one environment serves every plugin.

Installed files are mapped back to the project's by their bytes, so a traceback through
the installed copy names the file the author edits.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from auxcheck import __version__
from auxcheck._core.errors import PluginInstallError
from auxcheck._core.python_files import SKIPPED_DIRS, iter_python_files
from auxcheck._sglang_cpu.environment import Environment

__all__ = ["GROUP", "Installed", "PluginInstallError", "install_plugin"]

GROUP = "sglang.srt.plugins"
_SITECUSTOMIZE = (
    '"""Written by auxcheck live: starts its probe in every process of the server."""\n'
    "import os\n"
    "if os.environ.get('AUXCHECK_LIVE_EVENTS'):\n"
    "    try:\n"
    "        from auxcheck._sglang_cpu.probe import install\n"
    "        install()\n"
    "    except Exception as exc:  # never stop a server for the probe\n"
    "        print(f'auxcheck live: the probe could not start: {exc!r}')\n"
)


_REQUIREMENTS = """
import json, sys
from importlib import metadata
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
sys.path.insert(0, sys.argv[1])
found = {"missing": [], "conflicts": []}
for name in json.loads(sys.argv[2]):
    try:
        requires = metadata.requires(name) or []
    except metadata.PackageNotFoundError:
        continue
    for text in requires:
        try:
            wanted = Requirement(text)
        except Exception:
            continue
        if wanted.marker is not None and not wanted.marker.evaluate({"extra": ""}):
            continue
        try:
            have = metadata.version(wanted.name)
        except metadata.PackageNotFoundError:
            found["missing"].append(str(wanted))
            continue
        if wanted.specifier and not wanted.specifier.contains(have, prereleases=True):
            found["conflicts"].append([str(wanted), have])
print(json.dumps(found))
"""
"""Run by the environment's interpreter with the site first on its path: which requirements of
the named distributions no installed distribution meets (missing), and which one meets at
another version (conflicts)."""
_ROUNDS = 8
"""Rounds of installing missing requirements (each round the requirements of the last)."""


@dataclass(frozen=True, slots=True)
class Installed:
    """A plugin installed into ``site``: its ``sglang.srt.plugins`` entry points (name ->
    ``module:attr``), the project file of each installed Python file, the requirements that
    could not be installed (``unmet``), and what was said about the others (``notes``)."""

    site: Path
    entry_points: Mapping[str, str]
    sources: Mapping[str, Path] = field(default_factory=dict)
    unmet: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def source_of(self, path: str) -> Path | None:
        """Returns the project file an installed (or project) file path stands for, or None
        when the path is no file of the plugin's."""
        return self.sources.get(os.path.realpath(path))


def install_plugin(env: Environment, project: Path, site: Path, *,
                   timeout: float = 600.0) -> Installed:
    """Installs ``project`` into ``site`` with ``env``'s pip, and auxcheck beside it.

    pip builds from a copy of the project next to ``site`` (setuptools writes ``build/``
    and ``*.egg-info`` where it builds: never into the author's folder). It tries without
    build isolation first (setuptools projects build with the environment's own setuptools,
    offline); a project whose build backend is elsewhere is built with pip's isolation.
    Raises PluginInstallError with pip's last lines when both fail.
    """
    site.mkdir(parents=True, exist_ok=True)
    copy = site.parent / f"{site.name}-source"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(project, copy, symlinks=True,
                    ignore=shutil.ignore_patterns(*SKIPPED_DIRS, "*.egg-info"))
    base = [str(env.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            "--no-deps", "--no-warn-script-location", "--target", str(site)]
    attempts = [[*base, "--no-build-isolation", str(copy)], [*base, str(copy)]]
    errors = []
    for command in attempts:
        try:
            done = subprocess.run(command, capture_output=True, text=True, env=_pip_environ(env, site),
                                  check=False, timeout=timeout, cwd=copy)
        except subprocess.TimeoutExpired:
            raise PluginInstallError(f"installing {project} with pip took more than "
                                     f"{timeout:g} s") from None
        if done.returncode == 0:
            break
        errors.append("\n".join((done.stdout + done.stderr).strip().splitlines()[-12:]))
    else:
        raise PluginInstallError(
            f"pip could not install {project} (the project's folder, with --no-deps):\n"
            f"{errors[-1]}\nFix the project's build (pyproject.toml or setup.py) so that "
            "`pip install --no-deps .` works in it")
    own = [info.name.split("-")[0] for info in site.glob("*.dist-info")]
    unmet, notes = _dependencies(env, site, own, timeout)
    _add_auxcheck(site)
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
    return Installed(site, _entry_points(site), _sources(site, project), tuple(unmet),
                     tuple(notes))


def _pip_environ(env: Environment, site: Path) -> dict[str, str]:
    """Returns the environment pip runs in: its downloads cached in the run's temporary
    folder, never in the user's home (unless PIP_CACHE_DIR says where)."""
    environ = env.environ()
    environ.setdefault("PIP_CACHE_DIR", str(site.parent / "pip"))
    return environ


def _requirements(env: Environment, site: Path, names: list[str],
                  timeout: float) -> dict[str, Any]:
    done = subprocess.run([str(env.python), "-c", _REQUIREMENTS, str(site), json.dumps(names)],
                          capture_output=True, text=True, env=_pip_environ(env, site), check=False,
                          timeout=timeout)
    try:
        found: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise PluginInstallError(f"reading the plugin's requirements failed:\n"
                                 f"{done.stderr.strip()[-2000:]}") from None
    return found


def _dependencies(env: Environment, site: Path, own: list[str],
                  timeout: float) -> tuple[list[str], list[str]]:
    """Installs what the plugin requires and the environment lacks (and what those require),
    with the environment's pins and without replacing anything SGLang's environment has;
    returns the requirements that could not be installed, and notes on those and on the
    requirements the environment meets at another version."""
    unmet: list[str] = []
    notes: list[str] = []
    tried: set[str] = set()
    names = own
    for _ in range(_ROUNDS):
        if not names:
            break
        found = _requirements(env, site, names, timeout)
        notes += [f"the plugin requires {want}; SGLang's environment has {have}, which the run "
                  "uses" for want, have in found["conflicts"] if names is own]
        missing = [m for m in found["missing"] if m not in tried]
        tried.update(missing)
        before = {p.name for p in site.glob("*.dist-info")}
        for requirement in missing:
            done = subprocess.run(
                [str(env.python), "-m", "pip", "install", "--quiet", "--no-deps",
                 "--disable-pip-version-check", "--no-warn-script-location", "--target",
                 str(site), *(["-c", str(env.constraints)] if env.constraints else []),
                 requirement], capture_output=True, text=True, env=_pip_environ(env, site), check=False,
                timeout=timeout)
            if done.returncode != 0:
                unmet.append(requirement)
                last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
                notes.append(f"the plugin requires {requirement}, which pip could not install "
                             f"beside SGLang ({last})")
        names = [p.name.split("-")[0] for p in site.glob("*.dist-info") if p.name not in before]
    return unmet, notes


def _add_auxcheck(site: Path) -> None:
    package = Path(__file__).resolve().parent.parent
    link = site / "auxcheck"
    if not link.exists():
        link.symlink_to(package, target_is_directory=True)
    info = site / f"auxcheck-{__version__}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: auxcheck\nVersion: {__version__}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        f"[{GROUP}]\nauxcheck = auxcheck.sglang_plugin:register\n", encoding="utf-8")


def _entry_points(site: Path) -> dict[str, str]:
    """Returns the ``sglang.srt.plugins`` entry points installed into ``site`` but auxcheck's,
    read as SGLang's ``load_plugins()`` reads them (``importlib.metadata``), names kept."""
    return {point.name: point.value for dist in metadata.distributions(path=[str(site)])
            if dist.metadata["Name"] != "auxcheck"
            for point in dist.entry_points.select(group=GROUP)}


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _sources(site: Path, project: Path) -> dict[str, Path]:
    """Maps each installed .py file (and each project file) to the project file with its bytes."""
    by_digest: dict[str, Path] = {}
    mapping: dict[str, Path] = {}
    for name in iter_python_files([str(project)]):
        path = Path(name).resolve()
        digest = _digest(path)
        if digest is not None:
            by_digest.setdefault(digest, path)
            mapping[str(path)] = path
    for path in site.rglob("*.py"):
        relative = path.relative_to(site).parts
        if relative[0] in ("auxcheck", "sitecustomize.py") or relative[0].endswith(".dist-info"):
            continue
        digest = _digest(path)
        if digest is not None and digest in by_digest:
            mapping[os.path.realpath(path)] = by_digest[digest]
    return mapping
