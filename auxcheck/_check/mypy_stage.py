"""The mypy stage of ``auxcheck check``: the plugin's packages against the shipped stubs.

With the project's own mypy configuration mypy runs by it, nothing added, and every error
counts. Without one it runs with mypy's defaults and judges the plugin's use of SGLang: a
second run with SGLang's stubs left out finds the errors of the plugin's own code (a note,
not counted). An import mypy cannot resolve where auxcheck runs is a note either way.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from auxcheck._check.base import (
    CheckOptions,
    StageResult,
    ended,
    not_installed,
    plugin_packages,
    prepended,
    source_root,
    stage_links,
)
from auxcheck._check.findings import (
    Causes,
    StageFinding,
    mypy_subjects,
    parse_mypy,
    unresolved_module,
)
from auxcheck._core.paths import is_dir, is_file
from auxcheck._core.text import plural

if TYPE_CHECKING:
    from auxcheck._isolation.bounded import Bounded

__all__ = ["DEFAULTS_LABEL", "MYPY_CONFIG_FILES", "WITHOUT_SGLANG", "mypy_config", "mypy_stage"]

MYPY_CONFIG_FILES = ("mypy.ini", ".mypy.ini", "pyproject.toml", "setup.cfg")
"""Where a project configures mypy, in the order mypy itself looks in a folder."""

DEFAULTS_LABEL = "mypy's defaults"
"""How the summary names a run without the project's configuration: mypy's own defaults,
no strictness the user did not ask for."""


def mypy_config(folder: Path) -> Path | None:
    """Returns the mypy configuration of the project in ``folder``, looked for as mypy does:
    ``mypy.ini``, ``.mypy.ini``, ``pyproject.toml`` with ``[tool.mypy]``, ``setup.cfg``
    with ``[mypy]``; None when there is none (a file that does not parse does not count,
    as mypy skips it too)."""
    for name in MYPY_CONFIG_FILES:
        candidate = folder / name
        if is_file(candidate) and _configures_mypy(candidate):
            return candidate
    return None


def _configures_mypy(path: Path) -> bool:
    if path.name == "pyproject.toml":
        from auxcheck._core.config import load_toml
        from auxcheck._core.errors import TomlFileError

        try:
            tool = load_toml(path).get("tool", {})
        except TomlFileError:
            return False
        return isinstance(tool, dict) and "mypy" in tool
    if path.name == "setup.cfg":
        from auxcheck._core.config import load_ini
        from auxcheck._core.errors import IniFileError

        try:  # strict, as mypy reads it: a section given twice is no configuration to mypy
            return load_ini(path, strict=True).has_section("mypy")
        except IniFileError:
            return False
    return True  # mypy.ini and .mypy.ini are mypy's whatever they hold


@dataclass(frozen=True, slots=True)
class _MypyRun:
    """How the mypy stage runs: in ``cwd``, with ``options``, on ``targets``."""

    cwd: Path
    config: Path | None
    targets: tuple[str, ...]
    excluded: tuple[str, ...] = ()
    """The links under the targets, relative to ``cwd``: mypy is told not to enter them."""

    @property
    def options(self) -> tuple[str, ...]:
        """Returns the project's config file, or none at all (discovery turned off: mypy's
        defaults), and an ``--exclude`` for each link (added to the project's own excludes)."""
        excludes = tuple(f"--exclude=^{re.escape(link)}/?$" for link in self.excluded)
        if self.config is not None:
            return ("--config-file", self.config.name, *excludes)
        return ("--config-file=", *excludes)

    @property
    def label(self) -> str:
        """Returns what the run was judged by: ``config: pyproject.toml`` or mypy's defaults."""
        return f"config: {self.config.name}" if self.config else DEFAULTS_LABEL

    def own_module(self, module: str) -> bool:
        """Returns True when ``module`` is the project's own (its top package or module is
        beside the packages checked, or under ``src/``)."""
        top = module.partition(".")[0]
        return any(is_dir(base / top) or is_file(base / f"{top}.py")
                   for base in (self.cwd, self.cwd / "src"))


def _mypy_run(path: Path, packages: Sequence[Path], links: Sequence[Path]) -> _MypyRun:
    cwd = path.parent if list(packages) == [path] else path
    excluded = tuple(link.relative_to(cwd).as_posix() for link in links
                     if any(link.is_relative_to(p) for p in packages))
    return _MypyRun(cwd, mypy_config(cwd),
                    tuple(str(p.relative_to(cwd)) for p in packages), excluded)


def mypy_stage(options: CheckOptions) -> StageResult:
    """Returns mypy's result on the plugin's packages (skipped when mypy is not installed).

    With the project's own mypy configuration, mypy runs by it, adding nothing, and every
    error counts. Without one, it runs with mypy's defaults and no configuration file at
    all (neither a parent folder's nor the user's), and judges the plugin's use of SGLang:
    a second run with SGLang's stubs left out (:data:`WITHOUT_SGLANG`) finds the errors
    of the plugin's own code, which a note lists and which are not counted. Either way an
    import of a module outside the project that mypy cannot resolve here (an SGLang
    module the stubs do not cover, a dependency not installed where auxcheck runs) is
    listed in a note, not counted.
    """
    from auxcheck._core.extras import install_note, missing_modules

    if missing_modules(["mypy"]):
        return StageResult("mypy", "skipped", not_run=not_installed(["mypy"]),
                           summary=install_note(["mypy"], needed_by="this stage"))
    packages = plugin_packages(options.path)
    if not packages:
        return StageResult("mypy", "skipped", summary="no package (folder with __init__.py, "
                                                      "or under src/)")
    run = _mypy_run(options.path, packages, stage_links(options))
    done = _run_mypy(run.options, run, options)
    data = {"config": run.config.name if run.config else None, "options": list(run.options)}
    errors = _mypy_errors(done.output)
    counts = {"packages": len(packages), "errors": errors}
    parsed = parse_mypy(done.output, options.path, run.cwd)
    if _unfinished(done):
        return StageResult("mypy", "error", counts, 0.0,
                           f"mypy {ended(done, options.timeout)} ({run.label})",
                           done.output, data, findings=parsed.errors)
    counts["files"] = _mypy_files(done.output)
    own, referred = Causes(options.causes, table=options.moves).refer(parsed.errors,
                                                                      mypy_subjects)
    unresolved = [f for f in own if (module := unresolved_module(f)) is not None
                  and not run.own_module(module)]
    own = [f for f in own if f not in unresolved]
    theirs: list[StageFinding] = []
    if run.config is None and own:
        with tempfile.TemporaryDirectory(prefix="auxcheck-mypy-") as tmp:
            config = Path(tmp) / "without-sglang.ini"
            config.write_text(WITHOUT_SGLANG, encoding="utf-8")
            # A cache of its own, or each run would invalidate the other's.
            without = _run_mypy((f"--config-file={config}", f"--cache-dir={_SHADOW_CACHE}",
                                 *run.options[1:]), run, options)
        if _unfinished(without):
            return StageResult("mypy", "error", counts, 0.0,
                               f"mypy without SGLang's stubs {ended(without, options.timeout)}"
                               f" ({run.label}): which errors are the plugin's own code's "
                               "cannot be told", without.output, data, findings=tuple(own))
        plain = {_same(f) for f in parse_mypy(without.output, options.path, run.cwd).errors}
        theirs = [f for f in own if _same(f) in plain]
        own = [f for f in own if _same(f) not in plain]
    # mypy's own count, less the errors another stage's finding caused, the imports it
    # could not resolve here and, without a configuration, the errors of the plugin's own
    # code (an error whose line was cut from the output kept is counted).
    counts["errors"] = errors = errors - len(referred) - len(unresolved) - len(theirs)
    summary = f"{plural(errors, 'error')} in {', '.join(p.name for p in packages)} ({run.label})"
    if referred:
        counts["referred"] = len(referred)
        summary += f"; {plural(len(referred), 'error')} not counted (see imports)"
    notes = []
    uncounted = []
    if unresolved:
        counts["unresolved"] = len(unresolved)
        uncounted.append(plural(len(unresolved), "unresolved import"))
    if theirs:
        counts["plugin_code"] = len(theirs)
        uncounted.append(f"{plural(len(theirs), 'error')} of the plugin's own code")
        targets = " ".join(run.targets)
        notes.append(f"note: {plural(len(theirs), 'error')} of mypy's defaults "
                     f"{'is' if len(theirs) == 1 else 'are'} in the plugin's own code, not in "
                     "its use of SGLang (mypy gives them with SGLang's stubs left out too): "
                     "not counted, as the project has no "
                     "mypy configuration; add one (`[tool.mypy]` in pyproject.toml) to have "
                     f"them judged, or run `mypy {targets}` to see them")
    if uncounted:
        summary += f"; {' and '.join(uncounted)} not counted (notes)"
    return StageResult("mypy", "fail" if errors else "ok", counts, 0.0, summary,
                       parsed.text(referred, unresolved, theirs, notes), data,
                       findings=tuple(own), referred=tuple(referred),
                       always_shown=bool(unresolved or theirs))


WITHOUT_SGLANG = """[mypy]
[mypy-sglang]
follow_imports = skip
follow_imports_for_stubs = True
[mypy-sglang.*]
follow_imports = skip
follow_imports_for_stubs = True
"""
"""mypy's defaults with every SGLang module, stubbed or not, taken as ``Any``: what mypy
says of a plugin's code without SGLang's types."""

_SHADOW_CACHE = ".mypy_cache/auxcheck-without-sglang"


def _run_mypy(flags: Sequence[str], run: _MypyRun, options: CheckOptions) -> Bounded:
    from auxcheck._isolation.bounded import run_bounded

    command = [sys.executable, "-m", "mypy", *flags, *run.targets]
    # Bounded: a project's mypy plugins are its own code, and may hang.
    return run_bounded(command, cwd=run.cwd, env=_mypy_env(run.cwd), timeout=options.timeout,
                       memory=options.memory, progress="mypy")


def _unfinished(done: Bounded) -> bool:
    return bool(done.timed_out or done.memory_limit or done.returncode not in (0, 1))


def _same(finding: StageFinding) -> tuple[str | None, int | None, str, str]:
    """Returns what makes two mypy errors the same: place, code and message."""
    return finding.path, finding.line, finding.code, finding.message


def _mypy_errors(output: str) -> int:
    """Returns the errors mypy reports: its closing count (the output kept may be only its
    tail), else the error lines counted."""
    match = re.search(r"^Found (\d+) errors? in \d+ files?", output, re.MULTILINE)
    return int(match.group(1)) if match else len(re.findall(r": error: ", output))


def _mypy_env(cwd: Path) -> dict[str, str]:
    """Returns the environment of the mypy run: ``src`` first on MYPYPATH in a src layout,
    and no forced colours (the output is parsed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MYPY_FORCE_COLOR", "FORCE_COLOR")}
    src = source_root(cwd)
    if src is not None:
        env["MYPYPATH"] = prepended(str(src), env.get("MYPYPATH"))
    return env


def _mypy_files(stdout: str) -> int:
    match = re.search(r"(?:checked|no issues found in) (\d+) source files?", stdout)
    return int(match.group(1)) if match else 0
