"""The live tier: a plugin of the project's own, loaded by SGLang's real ``load_plugins()`` in a real CPU server.

``live_plugin`` (a sampling observer, installed by hooking ``ModelRunner.initialize``) is
pip-installed beside the server, with auxcheck's live guard on. The server's real order of
calls must be the one auxcheck models, and for each planted bug the guard's finding,
``auxcheck validate``'s finding and what the server really did must agree. Two servers start
(about 15 s each on an idle 2-core machine): one for the scenarios that leave it running (a
bug a request asks for with ``custom_params``), one the abort scenario kills.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.processes import HANG_GUARD
from helpers.sglang_cpu import environment

from auxcheck._core.errors import RequestFailed
from auxcheck._sglang_cpu.install import Installed, install_plugin
from auxcheck._sglang_cpu.server import Server
from auxcheck.rules import RULES

pytestmark = pytest.mark.slow

PLUGIN = Path(__file__).with_name("live_plugin")
NOTES = {code for code, rule in RULES.items() if rule.severity == "note"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    installed: Installed = install_plugin(environment(), PLUGIN,
                                          tmp_path_factory.mktemp("live") / "site")
    return installed.site


def start(site: Path, tmp_path: Path, bug: str = "") -> Server:
    env = environment()
    return Server(env, env.model, tmp_path / "server.log", path=[site], variables={
        "LIVE_PLUGIN_BUG": bug, "LIVE_PLUGIN_LOG": str(tmp_path / "calls.jsonl"),
        "AUXCHECK_GUARD": "warn", "AUXCHECK_GUARD_REPORT": str(tmp_path / "guard.jsonl")},
        start_timeout=HANG_GUARD)


def events(path: Path) -> list[list[Any]]:
    """Returns the plugin's log of SGLang's calls, in order."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def guard_codes(path: Path) -> list[str]:
    """Returns the codes of the guard's findings, in order."""
    return [e["code"] for e in events(path) if isinstance(e, dict) and e["event"] == "finding"]


def validate(bug: str) -> dict[str, Any]:
    """Returns ``auxcheck validate``'s JSON report of the plugin's observer with ``bug`` planted."""
    done = subprocess.run(
        [sys.executable, "-m", "auxcheck", "validate", "--path", str(PLUGIN), "--format", "json",
         "live_plugin:Observer"], capture_output=True, text=True, timeout=HANG_GUARD,
        env={**os.environ, "LIVE_PLUGIN_BUG": bug}, check=False)
    assert done.returncode in (0, 1), done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def validate_codes(bug: str) -> list[str]:
    def walk(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            if "code" in node and "message" in node and node["code"] not in NOTES:
                yield node["code"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)
    return sorted(set(walk(validate(bug))))


def running(server: Server, rid: str, done: threading.Event, *, bug: str = "",
            tokens: int = 48, last: list[Any] | None = None) -> threading.Thread:
    """Streams request ``rid`` (``tokens`` long) in a thread; returns once its first token came.

    ``last``, when given, gets each chunk streamed (the last one says how the request ended).
    """
    started = threading.Event()
    params = {"custom_params": {"bug": bug}} if bug else {}

    def read() -> None:
        try:
            for chunk in server.stream("hello world", rid, timeout=HANG_GUARD,
                                       max_new_tokens=tokens, ignore_eos=True, **params):
                if last is not None:
                    last[:] = [chunk]
                started.set()
        except RequestFailed:
            pass
        finally:
            started.set()
            done.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    assert started.wait(HANG_GUARD), "hung: no first token streamed"
    return thread


def test_a_real_server_runs_the_plugin_as_modelled_and_a_reordering_consume_is_aux203(
        site: Path, tmp_path: Path) -> None:
    """One server (xdist would start one per worker for a shared fixture): both scenarios."""
    live = start(site, tmp_path)
    try:
        calls_are_in_the_order_auxcheck_models(live, tmp_path)
        a_consume_reordering_the_batch_is_aux203_for_the_guard_and_validate(live, tmp_path)
    finally:
        live.stop()


def calls_are_in_the_order_auxcheck_models(live: Server, folder: Path) -> None:
    """Overlap: step N is consumed after N+1 sampled; with a grammar request, before it."""
    first = len(events(folder / "calls.jsonl"))
    answer = live.generate("hello world", timeout=HANG_GUARD, max_new_tokens=6, ignore_eos=True)
    assert answer["meta_info"]["completion_tokens"] == 6
    plain = len(events(folder / "calls.jsonl"))
    answer = live.generate("hello", timeout=HANG_GUARD, max_new_tokens=5, regex="[a-z]{5}")
    assert answer["meta_info"]["completion_tokens"] == 5
    everything = [e[1:] for e in events(folder / "calls.jsonl")]
    # a grammar request delays sampling: each step is consumed before the next one samples
    grammar = [c[0] for c in everything[plain:] if c[0] != "before_grammar"]
    assert grammar == ["after_sample", "copy_to_host", "consume"] * 5
    calls = [c for c in everything[first:plain] if c[0] != "installed"]
    names = [c[0] for c in calls]
    samples = [i for i, n in enumerate(names) if n == "after_sample"]
    copies = [i for i, n in enumerate(names) if n == "copy_to_host"]
    consumes = [i for i, n in enumerate(names) if n == "consume"]
    # one copy right after each sample, one consume per copy (in order), never before its copy
    assert [i + 1 for i in samples] == copies
    assert len(consumes) == len(copies)
    assert all(copy < consume for copy, consume in zip(copies, consumes))
    # the server's own health checks are requests too (rid HEALTH_CHECK_...): left out here
    ours = [(copy, consume) for copy, consume in zip(copies, consumes)
            if not calls[consume][1][0].startswith("HEALTH_CHECK")]
    assert len(ours) == 6
    # overlap: step N is consumed after step N+1 sampled and copied
    assert all(ours[n + 1][0] < ours[n][1] for n in range(len(ours) - 1))
    # the commits: one token a step, aligned with the request, starting at 0; the last one
    # finishes it by length with the whole output visible
    commits = [calls[consume][2][0] for _, consume in ours]
    assert [c[0] for c in commits] == list(range(6))
    assert [calls[consume][3:] for _, consume in ours][-1] == [[True], [6]]
    assert guard_codes(folder / "guard.jsonl") == []


def a_consume_reordering_the_batch_is_aux203_for_the_guard_and_validate(
        live: Server, folder: Path) -> None:
    """Sorting batch.reqs in place (requests ask for the bug): SGLang goes on with the
    requests in another order."""
    for attempt in range(5):
        first, second = threading.Event(), threading.Event()
        running(live, f"zz-{attempt}", first, bug="reorder", tokens=400)
        running(live, f"aa-{attempt}", second, bug="reorder")
        assert first.wait(HANG_GUARD) and second.wait(HANG_GUARD)
        together = [e for e in events(folder / "calls.jsonl") if e[1] == "consume"
                    and {f"zz-{attempt}", f"aa-{attempt}"} <= set(e[2])]
        if together:  # both ran in one batch (a busy machine may finish one first: again)
            break
    assert together
    assert live.alive()
    assert "AUX203" in guard_codes(folder / "guard.jsonl")
    assert validate_codes("reorder") == ["AUX203"]


def test_an_abort_kills_the_scheduler_of_a_consume_computing_with_finished_len(
        site: Path, tmp_path: Path) -> None:
    """The crash auxcheck once passed: guard, validate and the real server now agree on it."""
    server = start(site, tmp_path, bug="finished_len")
    try:
        for attempt in range(5):
            done, last = threading.Event(), []
            running(server, f"doomed-{attempt}", done, tokens=400, last=last)
            server.abort(f"doomed-{attempt}", timeout=HANG_GUARD)
            assert done.wait(HANG_GUARD)
            # the stream ended: a dead scheduler takes SGLang's launcher down within seconds
            if not server.alive(settle=10):
                break
            # a busy machine let the request finish before the abort reached it: again
            assert last and last[0]["meta_info"]["finish_reason"]["type"] == "length", last
        assert not server.alive()
        assert "unsupported operand type(s) for -: 'NoneType' and 'int'" in server.tail(200)
    finally:
        server.stop()
    assert guard_codes(tmp_path / "guard.jsonl") == ["AUX202"]
    assert validate_codes("finished_len") == ["AUX202"]
