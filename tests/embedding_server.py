"""One embedding server (eval/embedding_server.py: the offline MiniLM behind OpenAI's and Ollama's APIs) per session.

A real process on 127.0.0.1, reached by the real OpenAI and Ollama clients. tests/conftest.py registers this
module as a plugin (`pytest_plugins`): a test asks for `embedding_server`, or for `served` (faults and statistics
cleared before and after it), and switches faults on with `served.faults(rate_limit=2)`. The server is a module-level singleton: the first
fixture instance starts it, the last to tear down stops it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.llm_server import free_port

REPO = Path(__file__).resolve().parent.parent
# The names the server answers to (MiniLM under each): a plain one, and one whose prefixes Needle knows.
MODEL = "minilm"
NOMIC = "nomic-embed-text"
STARTUP_TIMEOUT = 120.0
_server: dict[str, Any] = {"process": None, "handle": None, "users": 0}


@dataclass
class EmbeddingServer:
    """The running server: its root URL, and its fault and statistics endpoints."""

    root: str

    @property
    def openai_url(self) -> str:
        """The OpenAI-compatible base URL."""
        return f"{self.root}/v1"

    def _call(self, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.root + path, data=data, headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def faults(self, **faults: Any) -> None:
        """Switch faults on (see eval/embedding_server.py); `faults()` clears them."""
        self._call("/_faults", faults)

    def stats(self) -> dict[str, Any]:
        """Requests answered, texts embedded and each request's batch size, since the last reset."""
        return self._call("/_stats")

    def reset(self) -> None:
        """Clear faults and statistics."""
        self._call("/_faults", {})
        self._call("/_stats/reset", {})


def _start() -> EmbeddingServer:
    port = free_port()
    command = [
        sys.executable,
        str(REPO / "eval" / "embedding_server.py"),
        "--port",
        str(port),
        "--model",
        MODEL,
        "--model",
        NOMIC,
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    # The server keeps writing to its own descriptor of the log once this process's is closed (after start-up).
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        server = EmbeddingServer(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(
                    f"embedding server exited with {process.returncode}: {log.read().decode(errors='replace')[-2000:]}"
                )
            try:
                server._call("/health")
                _server.update(process=process, handle=server)
                return server
            except OSError:
                time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"embedding server not ready after {STARTUP_TIMEOUT:.0f} s")


@pytest.fixture(scope="session")
def embedding_server() -> Iterator[EmbeddingServer]:
    """The session's embedding server (started on first use)."""
    server = _server["handle"] or _start()
    _server["users"] += 1
    try:
        yield server
    finally:
        _server["users"] -= 1
        if _server["users"] == 0 and _server["process"] is not None:
            process = _server["process"]
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
            _server.update(process=None, handle=None)


@pytest.fixture
def served(embedding_server: EmbeddingServer) -> Iterator[EmbeddingServer]:
    """The server with no faults and fresh statistics, cleared again after the test."""
    embedding_server.reset()
    yield embedding_server
    embedding_server.reset()


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (a server that is down)."""
    return f"http://127.0.0.1:{free_port()}"
