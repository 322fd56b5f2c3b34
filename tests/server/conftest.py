"""Real servers for the session: a demo index built once, then `needle serve` processes on free loopback ports.

The embedded index serves one process at a time, so each process gets its own copy of the built data folder:
one open server, one server with a token and a generator at a closed port, and one for `needle mcp` (stdio).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from haystack_integrations.document_stores.needle.edge.shards import copy_keeping_holes

REPO = Path(__file__).resolve().parents[2]
DEMO_NOTES = REPO / "needle" / "demo" / "notes"
NOTES = [
    "howto/certbot-tls-renewal.md",
    "howto/sqlite-wal-mode.md",
    "howto/git-rebase-onto.md",
    "howto/postgres-logical-replication.md",
    "howto/restic-laptop-backups.md",
    "runbooks/k8s-oomkilled-debugging.md",
]
TOKEN = "test-token-3f9a"
BIG_FILE_BYTES = 30_000
SECRET = "TOP-SECRET-CONTENT\n"
ALLOWED_ORIGIN = "https://notes.example.org"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(data_dir: Path, model_dir: Path, **extra: str) -> dict[str, str]:
    """The environment without the user's Needle and hayhooks settings, pointing at `data_dir`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NEEDLE_", "HAYHOOKS_")) or k == "NEEDLE_OWNER__AUTOSTART"
    }
    return {**env, "NEEDLE_DATA_DIR": str(data_dir), "NEEDLE_MODEL_DIR": str(model_dir), **extra}


@dataclass
class Server:
    """A running `needle serve`."""

    url: str
    process: subprocess.Popen
    log: Path
    data_dir: Path

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> dict[str, Path]:
    """A few demo notes indexed once by the CLI (in its own process, which then lets go of the index)."""
    base = tmp_path_factory.mktemp("server")
    notes = base / "notes"
    for rel in NOTES:
        (notes / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DEMO_NOTES / rel, notes / rel)
    data = base / "data"
    env = clean_env(data, model_dir)
    for args in (["collection", "add", str(notes), "--name", "notes"], ["index"]):
        subprocess.run(
            [sys.executable, "-m", "needle.shells.cli", *args], env=env, check=True, capture_output=True, timeout=600
        )
    # Added after indexing: a large file that is not a note, and a link that leads out of the collection.
    (notes / "logs").mkdir()
    (notes / "logs" / "big.log").write_text("x" * (BIG_FILE_BYTES - 1) + "\n")
    (base / "secret.txt").write_text(SECRET)
    (notes / "howto" / "escape.md").symlink_to(base / "secret.txt")
    (notes / "logs" / "outside").symlink_to(base, target_is_directory=True)
    return {"base": base, "notes": notes, "data": data}


def copy_data(demo_index: dict[str, Path], name: str) -> Path:
    target = demo_index["base"] / name
    shutil.copytree(demo_index["data"], target, copy_function=copy_keeping_holes)
    return target


def start_server(data_dir: Path, model_dir: Path, log: Path, *args: str, **env: str) -> Server:
    port = free_port()
    handle = log.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "needle.shells.cli", "serve", "--port", str(port), *args],
        env=clean_env(data_dir, model_dir, **env),
        stdout=handle,
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    return Server(f"http://127.0.0.1:{port}", process, log, data_dir)


def wait_ready(server: Server, token: str | None = None, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"server exited with {server.process.returncode}:\n{server.log.read_text()[-3000:]}")
        try:
            with server.client(token) as http:
                if http.get("/status", timeout=2).status_code == 200:
                    return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"server did not start within {timeout} s:\n{server.log.read_text()[-3000:]}")


def stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.process.kill()


@pytest.fixture(scope="session")
def closed_port() -> int:
    """A loopback port nothing listens on (the generator endpoint that cannot be reached)."""
    return free_port()


@pytest.fixture(scope="session")
def servers(demo_index: dict[str, Path], model_dir: Path, closed_port: int):
    """Both servers, started side by side: `open` (no token) and `locked` (token, an LLM key); both name an
    LLM server at a closed port."""
    base = demo_index["base"]
    llm = {"NEEDLE_LLM__URL": f"http://127.0.0.1:{closed_port}/v1", "NEEDLE_LLM__MODEL": "tiny"}
    started = {
        "open": start_server(copy_data(demo_index, "data-open"), model_dir, base / "open.log", **llm),
        "locked": start_server(
            copy_data(demo_index, "data-locked"),
            model_dir,
            base / "locked.log",
            NEEDLE_API_TOKEN=TOKEN,
            OPENAI_API_KEY="sk-local",
            NEEDLE_SERVE__ALLOWED_ORIGINS=f'["{ALLOWED_ORIGIN}"]',
            **llm,
        ),
    }
    try:
        wait_ready(started["open"])
        wait_ready(started["locked"], TOKEN)
        yield started
    finally:
        for server in started.values():
            stop(server)


@pytest.fixture(scope="session")
def server(servers: dict[str, Server]) -> Server:
    """The server without a token."""
    return servers["open"]


@pytest.fixture(scope="session")
def locked_server(servers: dict[str, Server]) -> Server:
    """The server that requires `Authorization: Bearer <TOKEN>` (its LLM is at a closed port)."""
    return servers["locked"]


@pytest.fixture
def http(server: Server):
    """An HTTP client of the open server."""
    with server.client() as client:
        yield client
