"""The way back to a failure: auxcheck's item ids on the command line, and the command that re-runs one.

pytest refuses ``tests::auxcheck::...`` (a directory with ``::`` parts) and ``auxcheck::...``
(no such path) as arguments, though those are the ids it shows for the suite's items. With
``--auxcheck``, such an argument is taken here: the directory holding the item is collected
in its place, with nothing else in it, and only the items named run.

Light: the pytest plugin imports it whether or not the flag is on, so it imports nothing
heavier than pytest.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from auxcheck._suite.names import SUITE_NAME
from auxcheck._suite.options import OPTIONS

__all__ = [
    "SEED_INPUT",
    "Selection",
    "left_out",
    "rerun_command",
    "selected",
    "take_selection",
    "unmatched",
]

SEED_INPUT = "auxcheck_seed"
"""The key of the run's Hypothesis seed in a pytest-xdist worker's ``workerinput``."""


# ---------------------------------------------------------------- item ids as arguments


@dataclass(frozen=True, slots=True)
class Selection:
    """The auxcheck items named on the command line.

    ``ids`` are their node ids, ``args`` the arguments as given (in the same order),
    ``dirs`` the directories collected in their place (only for their auxcheck items)
    and ``others`` the paths of the other arguments, collected as usual.
    """

    ids: tuple[str, ...]
    args: tuple[str, ...]
    dirs: tuple[Path, ...]
    others: tuple[Path, ...]


def take_selection(config: pytest.Config) -> Selection | None:
    """Replaces each auxcheck item id among ``config.args`` by its directory; returns the ids.

    None when no argument names an auxcheck item (the arguments are left as they are).
    The session's suite comes with any collection: its ids need a directory (the rootdir)
    only when no other argument is left.
    """
    here = config.invocation_params.dir
    ids: list[str] = []
    args: list[str] = []
    dirs: list[Path] = []
    kept: list[str] = []
    for arg in config.args:
        found = _suite_item(arg, here, config.rootpath)
        if found is None:
            kept.append(arg)
            continue
        ids.append(found[0])
        args.append(arg)
        if found[1] is not None and found[1] not in dirs:
            dirs.append(found[1])
    if not ids:
        return None
    if not dirs and not kept:
        dirs.append(config.rootpath.resolve())
    config.args[:] = [*kept, *(str(d) for d in dirs)]
    others = tuple((here / arg.partition("::")[0]).resolve() for arg in kept)
    return Selection(tuple(ids), tuple(args), tuple(dirs), others)


def _suite_item(arg: str, here: Path, root: Path) -> tuple[str, Path | None] | None:
    """Returns the node id an argument names and the directory that holds it (None: the
    session), if it is one of the suite's (``DIR::auxcheck::...``, ``auxcheck::...``)."""
    path, *parts = arg.split("::")
    if not parts:
        return None
    where = (here / path).resolve()
    if parts[0] == SUITE_NAME and where.is_dir():
        try:
            relative = where.relative_to(root.resolve()).as_posix()
        except ValueError:
            return None
        if relative == ".":
            return "::".join(parts), None
        return "::".join([relative, *parts]), where
    if path == SUITE_NAME and not where.is_file():
        return arg, None
    return None


def selected(nodeid: str, selection: Selection) -> bool:
    """Returns True when ``nodeid`` is, or is inside, an item or collector the selection names.

    A name without its ``[...]`` part selects every parameter, as for any pytest test.
    """
    return any(_within(nodeid, wanted) for wanted in selection.ids)


def _within(nodeid: str, wanted: str) -> bool:
    if nodeid == wanted or nodeid.startswith(f"{wanted}::"):
        return True
    rest = nodeid.removeprefix(wanted)
    return rest != nodeid and rest.startswith("[") and "::" not in rest


def unmatched(nodeids: Sequence[str], selection: Selection) -> list[str]:
    """Returns the arguments of the selection that name no item among ``nodeids``."""
    return [arg for arg, wanted in zip(selection.args, selection.ids, strict=True)
            if not any(_within(nodeid, wanted) for nodeid in nodeids)]


def left_out(path: Path, selection: Selection) -> bool:
    """Returns True for a path inside a directory collected only for its auxcheck items."""
    return any(path.is_relative_to(d) for d in selection.dirs) and not any(
        path.is_relative_to(other) for other in selection.others)


# ---------------------------------------------------------------- the command


def rerun_command(item: pytest.Item) -> str:
    """Returns the shell command that re-runs exactly ``item``, drawing the examples it drew.

    The item's id as an argument from the directory pytest was run in, the run's
    Hypothesis seed, the command-line options that change what an item checks or draws
    (the ini settings are read again by the new run), the ``-p`` plugin arguments of the
    run, and pytest-randomly's seed when that plugin reseeded ``random`` before the item.
    """
    config = item.config
    options = config.stash[OPTIONS]
    words = ["pytest", "--auxcheck", _argument(item.nodeid, config)]
    if options.seed is not None:
        words.append(f"--hypothesis-seed={options.seed}")
    for dest in ("auxcheck_impl", "auxcheck_profile"):
        value = config.getoption(dest, None)
        if value is not None:
            words.append(f"--{dest.replace('_', '-')}={value}")
    words += [f"--auxcheck-ignore={codes}" for codes in config.getoption("auxcheck_ignore", [])]
    if config.getoption("auxcheck_speculative", None):
        words.append("--auxcheck-speculative")
    words += _plugin_words(config, seeded=options.seed is not None)
    randomly = config.getoption("randomly_seed", None)
    if config.pluginmanager.has_plugin("randomly") and type(randomly) is int:
        words.append(f"--randomly-seed={randomly}")
    return " ".join(shlex.quote(word) for word in words)


_HYPOTHESIS_PLUGIN = ("hypothesispytest", "_hypothesis_pytestplugin")
"""Hypothesis's pytest plugin, which owns ``--hypothesis-seed``: its entry point and module."""


def _plugin_words(config: pytest.Config, *, seeded: bool) -> list[str]:
    """Returns the run's ``-p`` arguments (plugins it turned off, or loaded by name).

    Hypothesis's plugin is never turned off, and is loaded by its module where the run
    lacked it (plugin autoloading off, or ini ``addopts`` turning it off):
    ``--hypothesis-seed`` is its option.
    """
    args = [str(arg) for arg in config.invocation_params.args]
    names = []
    for flag, arg in zip(["", *args], args, strict=False):
        if flag == "-p":
            names.append(arg)
        elif arg.startswith("-p") and len(arg) > 2:
            names.append(arg[2:])
    off = [f"no:{name}" for name in _HYPOTHESIS_PLUGIN]
    words = [word for name in names if name not in off for word in ("-p", name)]
    if seeded and not any(config.pluginmanager.has_plugin(n) for n in _HYPOTHESIS_PLUGIN) \
            and not set(off) & set(names):
        words += ["-p", _HYPOTHESIS_PLUGIN[1]]
    return words


def _argument(nodeid: str, config: pytest.Config) -> str:
    """Returns ``nodeid`` as an argument that selects it from the directory pytest was run in.

    An item of the session's suite run from below the rootdir is named from the rootdir
    (``..::auxcheck::...``), which keeps the rootdir of a project without an ini file.
    """
    path, sep, rest = nodeid.partition("::")
    if not sep:
        return nodeid
    if path == SUITE_NAME:
        path, rest = ".", nodeid
    try:
        where = Path(os.path.relpath(config.rootpath / path, config.invocation_params.dir))
    except ValueError:  # on another drive (Windows): only an absolute path reaches it
        where = config.rootpath / path
    return nodeid if where == Path(".") and path == "." else f"{where.as_posix()}::{rest}"
