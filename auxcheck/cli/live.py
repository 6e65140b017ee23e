"""``auxcheck live PATH``: the plugin in SGLang's real server on CPU, per release, and what SGLang made of it.

Builds (once, into auxcheck's cache) a CPU SGLang environment per release, installs the
plugin beside it, serves a tiny random model with only this plugin and the live guard
loaded, overlap scheduling on and off, runs the documented scenarios and reports, in text,
JSON or SARIF: a plugin that did not load (AUX801), a hook SGLang could not apply (AUX802),
a hook never called (AUX803, a note), a server that died (AUX804), a request that failed or
hung (AUX805), and every finding of the live guard. Exit status: 0 when every release that
could run served every scenario with no finding but notes; 1 on a finding; 2 on usage
errors; 3 when no release could run here (each says why), the time limit cut a run short,
or no server of a release served the scenarios and nothing is the plugin's to answer for.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auxcheck._core.errors import UsageError
from auxcheck._core.escape import one_line, printable
from auxcheck.cli._common import (
    CommandParser,
    add_format,
    add_quiet,
    byte_size,
    positive_int,
    releases_of,
    run_command,
    say,
    seconds,
)

if TYPE_CHECKING:
    from auxcheck._sglang_cpu.live import ReleaseRun

__all__ = ["DESCRIPTION", "NOTHING_RAN", "main"]

DESCRIPTION = ("Run a plugin inside SGLang's real server on CPU, per release: install it beside "
               "a CPU SGLang built once into auxcheck's cache, serve a tiny random model with "
               "the plugin and the live guard, overlap scheduling on and off, send the "
               "documented scenarios, and report what SGLang did with the plugin.")
PROG = "auxcheck live"
NOTHING_RAN = 3
"""The exit status when no requested release could run on this machine."""
DEFAULT_RELEASE = "0.5.23"


def _parser() -> CommandParser:
    parser = CommandParser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("path", metavar="PATH", help="the plugin project's folder (pip "
                        "installs it from there; it declares a sglang.srt.plugins entry point)")
    parser.add_argument("--sglang", action="append", default=[], metavar="VERSIONS",
                        help="releases to run on, comma-separated (repeatable); default: "
                             f"[tool.auxcheck] sglang, else {DEFAULT_RELEASE}")
    parser.add_argument("--env", action="append", type=_variable, default=[],
                        metavar="NAME=VALUE", help="an environment variable for the server's "
                        "processes, such as the one that switches the plugin on (repeatable)")
    parser.add_argument("--model", type=Path, default=None, metavar="DIR",
                        help="a small Hugging Face model folder (config, weights, tokenizer) "
                             "to serve instead of the tiny random Llama")
    parser.add_argument("--overlap", choices=("both", "on", "off"), default="both",
                        help="overlap scheduling: a server with it and one without (default), "
                             "or only one of them")
    parser.add_argument("--timeout", type=seconds, default=1800.0, metavar="SECONDS",
                        help="time limit for the whole run, environment builds included "
                             "(default: 1800; 0: no limit)")
    parser.add_argument("--scenario-timeout", type=seconds, default=60.0, metavar="SECONDS",
                        help="time limit for each request of a scenario (default: 60; after a "
                             "request hangs, that server's later scenarios are not run)")
    parser.add_argument("--start-timeout", type=seconds, default=300.0, metavar="SECONDS",
                        help="time limit for a server to answer after it was started "
                             "(default: 300)")
    parser.add_argument("--max-memory", type=byte_size, default=8 << 30, metavar="SIZE",
                        help="the server's processes are stopped past this much private "
                             "memory together (default: 8GB; 0: no limit)")
    parser.add_argument("--environment", type=Path, action="append", default=[],
                        metavar="DIR", help="a CPU SGLang environment already built, used for "
                        "the release it was built for (repeatable), e.g. the one `make "
                        "sglang-cpu` builds; default: one per release in the cache")
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR",
                        help="where environments and run logs are kept (default: "
                             "$AUXCHECK_CACHE_DIR or ~/.cache/auxcheck/sglang)")
    parser.add_argument("--keep-runs", type=positive_int, default=10, metavar="N",
                        help="run folders (logs) kept in the cache (default: 10)")
    add_format(parser, ("text", "json", "sarif"), help="text (default), json or sarif")
    add_quiet(parser)
    return parser


def _variable(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name or not name.replace("_", "a").isalnum() or name[0].isdigit():
        raise argparse.ArgumentTypeError(f"invalid variable {text!r}; expected NAME=VALUE, such "
                                         "as MY_PLUGIN_ENABLED=1")
    return name, value


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    path = Path(args.path)
    if not path.is_dir():
        raise UsageError(f"PATH {args.path!r} is not a folder; expected a plugin project's "
                         "folder (where pyproject.toml or setup.py is)")
    if not any((path / name).is_file() for name in ("pyproject.toml", "setup.py", "setup.cfg")):
        raise UsageError(f"{args.path} has no pyproject.toml, setup.py or setup.cfg: pip cannot "
                         "install it, so SGLang could not load it; pass the plugin project's "
                         "folder")
    if args.model is not None and not (args.model / "config.json").is_file():
        raise UsageError(f"--model: {args.model} holds no config.json; expected a Hugging Face "
                         "model folder (config.json, weights, tokenizer files)")
    releases = releases_of(args.sglang, path) or (DEFAULT_RELEASE,)
    from auxcheck._core.progress import reporting
    from auxcheck._core.progress import say as progress
    from auxcheck._sglang_cpu.live import LiveOptions, remove_old_runs, run_live
    from auxcheck.releases import cache_dir

    root = (args.cache or cache_dir()).resolve()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    runs = root / "live" / f"{path.resolve().name}-{stamp}"
    overlap = {"both": (True, False), "on": (True,), "off": (False,)}[args.overlap]
    options = LiveOptions(releases, runs, root, model=args.model.resolve() if args.model
                          else None, overlap=overlap, scenario_timeout=args.scenario_timeout
                          or 3600.0, start_timeout=args.start_timeout or 3600.0,
                          timeout=args.timeout, memory_limit=args.max_memory,
                          environments_given=tuple(args.environment),
                          variables=dict(args.env))
    with reporting(PROG, enabled=not args.quiet):
        results = run_live(path.resolve(), options, progress)
    remove_old_runs(root / "live", keep=args.keep_runs)
    status = exit_status(results)
    if args.format == "json":
        print(json.dumps(to_json(path, runs, results, status), indent=2))
    elif args.format == "sarif":
        say(to_sarif(path.resolve(), results, status))
    else:
        say(to_text(path, runs, results))
    return status


def exit_status(results: Sequence[ReleaseRun]) -> int:
    """Returns 1 when a release has a finding that is not a note; 3 when none could run, the
    time limit cut a run short, or a release's servers served no scenario set to its end with
    nothing to blame on the plugin (nothing proven there); else 0."""
    if any(not f.is_note for run in results for f in run.findings):
        return 1
    if all(run.skipped for run in results) or any(
            run.cut or not (run.skipped or run.served) for run in results):
        return NOTHING_RAN
    return 0


def _modes_text(run: ReleaseRun) -> str:
    parts = []
    for mode in run.modes:
        if mode.started is None:
            parts.append(f"{mode.mode}: did not start")
            continue
        ok = sum(o.ok for o in mode.outcomes)
        parts.append(f"{mode.mode}: up in {mode.started:.0f} s, {ok} of {len(mode.outcomes)} "
                     "scenarios ok")
    return "; ".join(parts)


def to_text(path: Path, runs: Path, results: Sequence[ReleaseRun]) -> str:
    """Returns the report for a reader: per release what ran, its findings, its notes."""
    lines = []
    for run in results:
        errors = [f for f in run.findings if not f.is_note]
        if run.skipped:
            lines.append(f"sglang {run.release}: not run: cannot run release {run.release} here: "
                         f"{printable(run.skipped)}")
            continue
        verdict = (f"FAIL ({len(errors)} finding{'s' * (len(errors) != 1)})" if errors
                   else "INCOMPLETE" if run.cut else "ok" if run.served else "NOT JUDGED")
        lines.append(f"sglang {run.release}: {verdict}: {_modes_text(run) or 'no server'} "
                     f"({run.seconds:.0f} s)")
        lines += ["  " + f.to_text().replace("\n", "\n  ") for f in run.findings]
        if run.cut:
            lines.append(f"  not finished: {run.cut} (--timeout)")
        lines += [f"  note: {one_line(note)}" for note in run.notes]  # may quote plugin text
    if any(not run.skipped for run in results):
        lines.append(f"logs: {runs}")
    return "\n".join(lines)


def to_json(path: Path, runs: Path, results: Sequence[ReleaseRun], status: int) -> dict[str, Any]:
    """Returns the report as JSON-ready data: per release its servers, scenarios, findings, notes."""
    return {
        "path": str(path),
        "exit": status,
        "logs": str(runs),
        "releases": [{
            "release": run.release,
            "ran": run.skipped is None,
            "skipped": run.skipped,
            "cut": run.cut,
            "served": run.served,
            "seconds": round(run.seconds, 1),
            "servers": [{"mode": m.mode, "log": str(m.log),
                         "started": None if m.started is None else round(m.started, 1),
                         "scenarios": [{"name": o.scenario, "ok": o.ok, "hung": o.hung,
                                        "message": o.message, "seconds": round(o.seconds, 2)}
                                       for o in m.outcomes]} for m in run.modes],
            "findings": [f.to_dict() for f in run.findings],
            "notes": run.notes,
        } for run in results],
    }


def to_sarif(root: Path, results: Sequence[ReleaseRun], status: int) -> str:
    """Returns the SARIF log: each finding a result, each release that could not run and
    each note a notification."""
    from auxcheck.cli._sarif import Notice, findings_log

    notices = [Notice(f"sglang {run.release}: cannot run release {run.release} here: "
                      f"{run.skipped}", "note") for run in results if run.skipped]
    notices += [Notice(f"sglang {run.release}: not finished: {run.cut}", "warning")
                for run in results if run.cut]
    notices += [Notice(f"sglang {run.release}: {note}", "note") for run in results
                for note in run.notes]
    return findings_log([f for run in results for f in run.findings], root=root,
                        exit_code=status, notices=notices)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``auxcheck live``; returns 0, 1 on a finding, 2 on usage, 3 when nothing could run."""
    return run_command(PROG, _run, sys.argv[1:] if argv is None else argv, stoppable=True)
