"""A real ``sglang.launch_server`` on CPU: started in a process group of its own, talked to over HTTP, always ended.

The server listens on the loopback interface only, on a port the system picked free. Its
output goes to a log file that is kept. Every wait has a deadline (the server answering,
a request's answer); nothing sleeps for a set time but the polling of its port. A watcher
ends the whole group when its private memory passes a limit. :meth:`Server.stop` ends every
process the server started (SGLang's scheduler and detokenizer are children of its group),
and is safe to call twice.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from auxcheck._core.errors import RequestFailed, ServerFailed
from auxcheck._core.stops import held
from auxcheck._isolation.bounded import memory_text
from auxcheck._isolation.processes import group_memory, group_running, kill_group, stop_group
from auxcheck._sglang_cpu.environment import Environment

__all__ = ["RUNNING", "RequestFailed", "Server", "ServerFailed", "free_port", "log_tail",
           "stop_all"]

_POLL = 0.25
"""Seconds between two looks at the port while the server starts (how often, not how long)."""


RUNNING: set[Server] = set()
"""The servers started and not stopped yet: :func:`stop_all` ends them, whatever a stop
(Ctrl-C) interrupted between a server's start and the code that would have stopped it."""


def stop_all() -> None:
    """Stops every server of :data:`RUNNING`."""
    for server in list(RUNNING):
        server.stop()


def log_tail(log: Path, lines: int) -> str:
    """Returns the last ``lines`` lines of a server's log ("" when it cannot be read)."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def free_port() -> int:
    """Returns a TCP port free on the loopback interface now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``sglang.launch_server`` serving ``model`` from ``env``, with ``path`` first on its import path.

    ``variables`` are added to its environment, ``args`` to its command line. The
    constructor returns once the server answers ``/health``; it raises ServerFailed (and
    leaves nothing running) when the server exits first or ``start_timeout`` passes.
    """

    def __init__(self, env: Environment, model: Path, log: Path, *, path: Sequence[Path] = (),
                 variables: Mapping[str, str] | None = None, args: Sequence[str] = (),
                 start_timeout: float = 300.0, memory_limit: int | None = None) -> None:
        self.port = free_port()
        self.log = log
        self.memory_limit = memory_limit
        self.over_memory = 0
        environ = env.environ()
        if path:
            environ["PYTHONPATH"] = os.pathsep.join(str(p) for p in path)
        environ.update(variables or {})
        command = [str(env.python), "-m", "sglang.launch_server", "--model-path", str(model),
                   "--device", "cpu", "--attention-backend", "torch_native", "--host",
                   "127.0.0.1", "--port", str(self.port), "--max-total-tokens", "2048",
                   "--skip-server-warmup", *args]
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w", encoding="utf-8") as out, held():  # a Ctrl-C waits for RUNNING
            out.write("$ " + " ".join(command) + "\n")
            out.flush()
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=environ,
                                            start_new_session=True)
            RUNNING.add(self)
        self._done = threading.Event()
        self._watch = threading.Thread(target=self._watch_memory, daemon=True)
        self._watch.start()
        try:
            self._wait_ready(start_timeout)
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        """Returns the server's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerFailed(f"the server exited while starting (exit {self.process.poll()})",
                                   exited=True)
            if self.over_memory:
                raise ServerFailed(self.memory_text(), exited=True)
            if self._answers():
                return
            time.sleep(_POLL)
        raise ServerFailed(f"the server did not answer in {timeout:g} s", exited=False)

    def _answers(self) -> bool:
        """Returns True when the server's HTTP front answers ``/model_info`` (what SGLang's
        own launcher waits for). ``/health`` is not asked: it sends a request through the
        scheduler, which a plugin may break without the server being down."""
        try:
            with urllib.request.urlopen(f"{self.url}/model_info", timeout=5) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def _watch_memory(self) -> None:
        while self.memory_limit and not self._done.wait(0.5):
            used = group_memory(self.process.pid)
            if used > self.memory_limit:
                self.over_memory = used
                stop_group(self.process.pid)
                return

    def memory_text(self) -> str:
        """Returns what the memory watcher did, in a sentence (empty when it did nothing)."""
        if not self.over_memory or self.memory_limit is None:
            return ""
        return (f"the server's processes used {memory_text(self.over_memory)}, more than the "
                f"limit of {memory_text(self.memory_limit)}, and were stopped")

    def tail(self, lines: int = 60) -> str:
        """Returns the end of the server's log."""
        return log_tail(self.log, lines)

    def _post(self, route: str, body: Mapping[str, Any], timeout: float) -> Any:
        request = urllib.request.Request(f"{self.url}{route}", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        try:
            return urllib.request.urlopen(request, timeout=timeout)
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")[:2000]
            raise RequestFailed(f"{route} answered HTTP {error.code}: {text.strip()}") from None
        except TimeoutError:
            raise RequestFailed(f"{route} gave no answer in {timeout:g} s", hung=True) from None
        except (urllib.error.URLError, OSError) as error:
            if "timed out" in str(error):
                raise RequestFailed(f"{route} gave no answer in {timeout:g} s",
                                    hung=True) from None
            raise RequestFailed(f"{route} failed: {error}") from None

    def generate(self, text: str, *, timeout: float, rid: str | None = None,
                 **sampling: Any) -> dict[str, Any]:
        """Returns ``/generate``'s answer for ``text``; raises RequestFailed."""
        body: dict[str, Any] = {"text": text, "sampling_params": sampling}
        if rid is not None:
            body["rid"] = rid
        try:
            with self._post("/generate", body, timeout) as answer:
                result: dict[str, Any] = json.loads(answer.read())
        except (TimeoutError, OSError) as error:
            raise RequestFailed(f"/generate gave no answer in {timeout:g} s ({error})",
                                hung=True) from None
        return result

    def stream(self, text: str, rid: str, *, timeout: float,
               **sampling: Any) -> Iterator[dict[str, Any]]:
        """Yields ``/generate``'s streamed chunks for ``text`` as request ``rid``; each chunk
        must come within ``timeout`` seconds of the one before."""
        body = {"text": text, "rid": rid, "stream": True, "sampling_params": sampling}
        try:
            with self._post("/generate", body, timeout) as answer:
                for line in answer:
                    if line.startswith(b"data: ") and line.strip() != b"data: [DONE]":
                        yield json.loads(line[len(b"data: "):])
        except (TimeoutError, OSError) as error:
            raise RequestFailed(f"the stream of {rid} broke off ({error})",
                                hung="timed out" in str(error)) from None

    def abort(self, rid: str, *, timeout: float) -> None:
        """Sends ``/abort_request`` for request ``rid``."""
        with self._post("/abort_request", {"rid": rid}, timeout):
            pass

    def alive(self, timeout: float = 30.0, *, settle: float = 0.0) -> bool:
        """Returns False once the server has exited (SGLang's launcher ends itself when one
        of its processes dies: ``settle`` seconds are given for that first), True as soon as
        it answers; a server that still runs without answering for ``timeout`` seconds (a
        busy machine) counts as alive."""
        try:
            self.process.wait(timeout=settle)
            return False
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if self._answers():
                return True
            time.sleep(_POLL)
        return self.process.poll() is None

    def stop(self) -> None:
        """Ends the server and every process of its group; returns once none of them runs
        (or 30 s passed, SIGKILL sent again meanwhile)."""
        with held():  # a Ctrl-C meanwhile waits for the server to end
            self._done.set()
            stop_group(self.process.pid)
            deadline = time.monotonic() + 30
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL was sent
                pass
            while group_running(self.process.pid) and time.monotonic() < deadline:
                kill_group(self.process.pid, signal.SIGKILL)
                time.sleep(_POLL)
            RUNNING.discard(self)
