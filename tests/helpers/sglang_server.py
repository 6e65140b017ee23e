"""A real SGLang 0.5.23 server on CPU for the live tier: the tiny model, a plugin installed beside it.

The plugin is installed with pip into a folder of its own (``pip install --target``) and put
on the server's path, so the cached environment is never changed; auxcheck is put there the
same way an install puts it (its package on the path, its ``sglang.srt.plugins`` entry point
in a ``.dist-info``), so SGLang's real ``load_plugins()`` loads both, in every process.
Waits are for events (the server answering, a first streamed token), bounded by the hang
guard; nothing sleeps for a set time.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from auxcheck import __version__
from auxcheck._sglang_cpu.environment import Environment
from helpers.paths import REPO
from helpers.processes import HANG_GUARD


def install_plugin(env: Environment, project: Path, target: Path) -> None:
    """Installs the plugin ``project`` with the environment's pip into ``target``, and auxcheck beside it."""
    done = subprocess.run(
        [str(env.python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(target), str(project)],
        capture_output=True, text=True, env=env.environ(), check=False, timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr[-3000:]
    info = target / f"auxcheck-{__version__}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: auxcheck\nVersion: {__version__}\n")
    (info / "entry_points.txt").write_text(
        "[sglang.srt.plugins]\nauxcheck = auxcheck.sglang_plugin:register\n")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``sglang.launch_server`` serving the environment's tiny model, with ``site`` on its path."""

    def __init__(self, env: Environment, site: Path, log: Path, *,
                 variables: Mapping[str, str] = (), args: tuple[str, ...] = ()) -> None:
        self.port = _free_port()
        self.log = log
        environ = env.environ()
        environ.update({"PYTHONPATH": f"{site}{os.pathsep}{REPO}", **dict(variables)})
        with open(log, "w", encoding="utf-8") as out:
            self.process = subprocess.Popen(
                [str(env.python), "-m", "sglang.launch_server", "--model-path", str(env.model),
                 "--device", "cpu", "--attention-backend", "torch_native", "--host",
                 "127.0.0.1", "--port", str(self.port), "--max-total-tokens", "2048",
                 "--skip-server-warmup", *args],
                stdout=out, stderr=subprocess.STDOUT, env=environ, start_new_session=True)
        self._wait_ready()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + HANG_GUARD
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited while starting:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=5) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)  # polling the port: how often, not how long, is set here
        self.stop()
        raise AssertionError(f"hung: the server did not answer in {HANG_GUARD:g} s\n{self.tail()}")

    def tail(self, lines: int = 60) -> str:
        """Returns the end of the server's log."""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def generate(self, text: str, **sampling: Any) -> dict[str, Any]:
        """Returns ``/generate``'s answer for ``text``."""
        body = json.dumps({"text": text, "sampling_params": sampling}).encode()
        request = urllib.request.Request(f"{self.url}/generate", body,
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=HANG_GUARD) as answer:
            result: dict[str, Any] = json.loads(answer.read())
        return result

    def stream(self, text: str, rid: str, **sampling: Any) -> Iterator[dict[str, Any]]:
        """Yields ``/generate``'s streamed chunks for ``text`` as request ``rid``."""
        body = json.dumps({"text": text, "rid": rid, "stream": True,
                           "sampling_params": sampling}).encode()
        request = urllib.request.Request(f"{self.url}/generate", body,
                                          {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=HANG_GUARD) as answer:
            for line in answer:
                if line.startswith(b"data: ") and line.strip() != b"data: [DONE]":
                    yield json.loads(line[len(b"data: "):])

    def abort(self, rid: str) -> None:
        """Sends ``/abort_request`` for request ``rid``."""
        request = urllib.request.Request(f"{self.url}/abort_request",
                                         json.dumps({"rid": rid}).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=HANG_GUARD):
            pass

    def alive(self) -> bool:
        """Returns True while the server answers ``/health`` (False once its scheduler died)."""
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=30) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        """Ends the server and every process it started."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=HANG_GUARD)
