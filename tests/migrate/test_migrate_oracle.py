"""ruff and isort as oracles for ``auxcheck migrate``: sorted files stay sorted.

Legacy plugin files are generated (seeded) from the import forms plugins use, sorted by
the real tool under a project configuration, migrated (plain and ``--compat``) in the
style :func:`~auxcheck.migrate.style.find_style` reads from that configuration, and
checked by the same tool again: ``ruff check --select I`` must pass and isort must leave
the text as it is. Each configuration is one ruff run (or one in-process isort pass)
over every generated file together. The ``--compat`` rewrite of a legacy observer is then
run on the real sources of SGLang 0.5.19 and 0.5.23 from their wheels.
"""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
from pathlib import Path

import isort
import pytest
from helpers.migration import MOVES
from helpers.paths import RUFF
from helpers.plugin_sources import MOVED, NEW, OLD

from auxcheck.migrate.scan import scan_source
from auxcheck.migrate.style import find_style
from auxcheck.migrate.transform import migrate_source

FILES = 40

CONFIGS = {
    "ruff defaults": ("ruff.toml", ""),
    "ruff line length 100, as-imports combined, case-sensitive, first party known": (
        "ruff.toml",
        ('line-length = 100\n[lint.isort]\ncombine-as-imports = true\ncase-sensitive = true\n'
         'known-first-party = ["myplugin"]\norder-by-type = false\n')),
    "ruff force-single-line": ("ruff.toml", "[lint.isort]\nforce-single-line = true\n"),
    "ruff in pyproject, line length 79": (
        "pyproject.toml",
        ('[tool.ruff]\nline-length = 79\n[tool.ruff.lint.isort]\nknown-first-party = ["myplugin"]\n')),
    # isort reads no config file without a setting in it: name one, at its default value.
    "isort defaults": (".isort.cfg", "[settings]\nline_length = 79\n"),
    "isort profile black": ("pyproject.toml", '[tool.isort]\nprofile = "black"\n'),
    "isort vertical hanging indent, as-imports combined, line length 100": (
        ".isort.cfg",
        ("[settings]\nmulti_line_output = 3\ninclude_trailing_comma = true\n"
         "combine_as_imports = true\nline_length = 100\nknown_first_party = myplugin\n")),
    "isort force_single_line": ("setup.cfg", "[isort]\nforce_single_line = true\n"),
}

STDLIB = ["import os", "import sys", "from typing import Any", "from unittest import mock",
          "from collections import OrderedDict as OD", "from dataclasses import dataclass, field",
          "import logging"]
THIRD = ["import torch", "from torch import nn", "import numpy as np",
         "from sglang.srt.managers.schedule_batch import ScheduleBatch",
         "from sglang.srt.utils import get_bool_env_var", "import sglang.srt.utils"]
FIRST = ["from myplugin.util import helper", "import myplugin"]


def _bound(line: str) -> list[str]:
    """Returns the expressions that use what ``line`` binds (so nothing is unused)."""
    tree = ast.parse(line).body[0]
    assert isinstance(tree, (ast.Import, ast.ImportFrom))
    if isinstance(tree, ast.Import):
        return [a.asname or a.name for a in tree.names]
    return [a.asname or a.name for a in tree.names]


def legacy_file(rng: random.Random) -> str:
    """Returns one generated legacy plugin file (imports unsorted; the tool sorts them)."""
    lines = rng.sample(STDLIB, rng.randint(0, 3)) + rng.sample(THIRD, rng.randint(0, 3))
    lines += rng.sample(FIRST, rng.randint(0, 1))
    uses: list[str] = []
    form = rng.choice(["from", "from", "alias", "dotted", "package", "mixed"])
    names = rng.sample(MOVED, rng.randint(1, 3)) + ["SamplingObserver"] * (rng.random() < 0.4)
    rng.shuffle(names)
    if form in ("from", "mixed"):
        items = [f"{n} as {n[:4]}{i}" if rng.random() < 0.3 else n for i, n in enumerate(names)]
        lines.append(f"from {OLD} import {', '.join(items)}")
    if form in ("alias", "mixed"):
        lines.append(f"import {OLD} as so")
        uses += [f"so.{n}" for n in names]
    if form == "dotted":
        lines.append(f"import {OLD}")
        uses += [f"{OLD}.{n}" for n in names]
    if form == "package":
        lines.append("from sglang.srt.sampling import sampling_observer")
        uses += [f"sampling_observer.{n}" for n in names]
    if rng.random() < 0.3:
        lines.append(f"from {NEW} import DeviceAuxiliaryOutput")
    rng.shuffle(lines)
    for line in lines:
        if not line.startswith(f"import {OLD}") and "sampling_observer\n" not in line + "\n":
            uses += [] if line.startswith(("import sglang", "import myplugin")) else _bound(line)
    header = '"""A generated legacy plugin."""\n\n' if rng.random() < 0.5 else ""
    if rng.random() < 0.3:
        header += "from __future__ import annotations\n\n"
    body = f"\n\nUSED = [{', '.join(dict.fromkeys(uses))}]\n"
    if rng.random() < 0.4:
        body += f'TARGET = "{OLD}.CommittedTokens"\n'
    if rng.random() < 0.4:
        body += (f"\n\ndef load() -> object:\n    from {OLD} import HostAuxiliaryOutput"
                 "  # noqa: F401\n\n    return HostAuxiliaryOutput\n")
    return header + "\n".join(lines) + "\n" + body


def generated(seed: int) -> dict[str, str]:
    """Returns ``FILES`` generated legacy files by name."""
    rng = random.Random(seed)
    return {f"plugin_{i:02d}.py": legacy_file(rng) for i in range(FILES)}


def _ruff(folder: Path, *, fix: bool) -> subprocess.CompletedProcess[str]:
    command = [str(RUFF), "check", "--no-cache", "--select", "I", "--output-format",
               "concise", *(["--fix"] if fix else []), "."]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)


def _sorted_by_tool(folder: Path, files: dict[str, str], tool: str) -> dict[str, str]:
    """Writes ``files`` into ``folder`` sorted by ``tool``; returns the sorted texts."""
    for name, text in files.items():
        (folder / name).write_text(text)
    if tool == "ruff":
        _ruff(folder, fix=True)
        return {name: (folder / name).read_text() for name in files}
    config = isort.Config(settings_path=str(folder))
    return {name: isort.code(text, config=config) for name, text in files.items()}


def _unsorted_by_tool(folder: Path, files: dict[str, str], tool: str) -> list[str]:
    """Returns the names of the ``files`` that ``tool`` would sort differently."""
    for name, text in files.items():
        (folder / name).write_text(text)
    if tool == "ruff":
        report = _ruff(folder, fix=False)
        return sorted({line.split(":", 1)[0].removeprefix("./") for line in
                       report.stdout.splitlines() if "I001" in line})
    config = isort.Config(settings_path=str(folder))
    return [name for name, text in files.items() if isort.code(text, config=config) != text]


@pytest.mark.slow
@pytest.mark.parametrize("compat", [False, True], ids=["migrate", "compat"])
@pytest.mark.parametrize(("config_file", "config"), CONFIGS.values(), ids=CONFIGS.keys())
def test_files_the_tool_sorted_stay_sorted_after_migration(
        tmp_path: Path, config_file: str, config: str, compat: bool) -> None:
    """Generated legacy files, sorted by ruff or isort under a project configuration,
    still pass that tool after `auxcheck migrate` (and `--compat`) in the style read
    from the same configuration."""
    tool = "ruff" if config_file == "ruff.toml" or "[tool.ruff" in config else "isort"
    before, after = tmp_path / "before", tmp_path / "after"
    for folder in (before, after):
        folder.mkdir()
        (folder / config_file).write_text(config)
    seed = sum(map(ord, config_file + config)) + compat
    legacy = _sorted_by_tool(before, generated(seed), tool)
    style = find_style(str(before))
    assert style.tool == tool
    migrated = {}
    for name, text in legacy.items():
        result = migrate_source(text, moves=MOVES, compat=compat, style=style, path=name)
        assert result.status == "changed", (name, result.reason, text)
        assert [f.code for f in scan_source(result.text, moves=MOVES) if f.code == "AUX501"] \
            == [], result.text
        migrated[name] = result.text
    unsorted = _unsorted_by_tool(after, migrated, tool)
    shown = "\n\n".join(f"# {name}\n{legacy[name]}\n# became\n{migrated[name]}"
                        for name in unsorted[:2])
    assert unsorted == [], f"{len(unsorted)} of {FILES} files unsorted, e.g.:\n{shown}"


def test_the_generated_inputs_cover_every_form() -> None:
    """The generator writes each import form somewhere (else the oracle tests prove less)."""
    texts = "\n".join(text for seed in range(3) for text in generated(seed).values())
    for needle in (f"from {OLD} import", f"import {OLD} as so", f"import {OLD}\n",
                   "from sglang.srt.sampling import sampling_observer", " as ",
                   f"from {NEW} import", "# noqa: F401", f'"{OLD}.CommittedTokens"'):
        assert needle in texts, needle


LEGACY_OBSERVER = f'''\
"""A legacy observer and its test, as plugins wrote them before SGLang 0.5.20."""

from unittest import mock

import sglang.srt.sampling.sampling_observer as api
from sglang.srt.sampling import sampling_observer
from sglang.srt.sampling.sampling_observer import CommittedTokens, SamplingObserver


def commit(index: int) -> CommittedTokens:
    return CommittedTokens(index, ())


@mock.patch("{OLD}.HostAuxiliaryOutput")
def patched(host: mock.MagicMock) -> object:
    return sampling_observer.HostAuxiliaryOutput


RESULT = {{
    "commit": type(commit(0)).__module__,
    "device": api.DeviceAuxiliaryOutput.__module__,
    "observer": SamplingObserver.__module__,
    "patched": patched() is not None and isinstance(patched(), mock.MagicMock),
}}
'''

RUN_IN_RELEASE = """\
import json, sys, types
tree, path = sys.argv[1], sys.argv[2]
package = types.ModuleType("sglang")  # sglang/__init__.py needs the whole GPU stack
package.__path__ = [tree + "/sglang"]
sys.modules["sglang"] = package
namespace = {"__name__": "legacy"}
exec(compile(open(path).read(), path, "exec"), namespace)
print(json.dumps(namespace["RESULT"]))
"""


@pytest.mark.slow
@pytest.mark.parametrize(("version", "home"), [("0.5.19", OLD), ("0.5.23", NEW)])
def test_compat_output_runs_on_a_real_release_of_either_layout(
        tmp_path: Path, version: str, home: str) -> None:
    """The --compat rewrite of a legacy observer imports, patches and resolves every moved
    name in real SGLang 0.5.19 (old layout) and 0.5.23 (new), run from the wheels'
    sources with torch; the plain rewrite would fail on 0.5.19."""
    from helpers.releases import real_tree

    result = migrate_source(LEGACY_OBSERVER, moves=MOVES, compat=True)
    assert result.status == "changed", result.reason
    path = tmp_path / "legacy.py"
    path.write_text(result.text)
    completed = subprocess.run([sys.executable, "-c", RUN_IN_RELEASE, str(real_tree(version)),
                                str(path)], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert json.loads(completed.stdout) == {"commit": home, "device": home, "observer": OLD,
                                            "patched": True}


def test_the_plain_rewrite_needs_the_new_layout(tmp_path: Path) -> None:
    """Without --compat the rewrite of the same observer fails on real 0.5.19 (so the runs
    above tell a fallback that works from one that is never taken)."""
    from helpers.releases import real_tree

    path = tmp_path / "legacy.py"
    path.write_text(migrate_source(LEGACY_OBSERVER, moves=MOVES).text)
    completed = subprocess.run([sys.executable, "-c", RUN_IN_RELEASE, str(real_tree("0.5.19")),
                                str(path)], capture_output=True, text=True, check=False)
    assert completed.returncode != 0
    assert "auxiliary_output" in completed.stderr
