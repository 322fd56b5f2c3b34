"""`needle serve` for people and scripts: one "ready at URL" line once it accepts requests, its log in
`DATA_DIR/serve.log` unless `-v`, and `--background`, which returns once the server answers (the README's
curl on the next line works) or with the one-line error it failed with."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from haystack_integrations.document_stores.needle.edge.shards import copy_keeping_holes

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def env(demo_needle, tmp_path: Path) -> dict[str, str]:
    demo_needle.close()
    data = tmp_path / "data"
    shutil.copytree(
        demo_needle.settings.data_dir,
        data,
        ignore=shutil.ignore_patterns("owner.json"),
        copy_function=copy_keeping_holes,
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    return {
        **clean,
        "NEEDLE_DATA_DIR": str(data),
        "NEEDLE_MODEL_DIR": str(demo_needle.settings.model_dir),
        "NEEDLE_OWNER__AUTOSTART": "false",
    }


def test_serve_prints_one_ready_line_and_logs_to_a_file(env):
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "needle.shells.cli", "serve", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        assert line == f"needle serve: ready at http://127.0.0.1:{port}\n"
        answer = httpx.post(f"http://127.0.0.1:{port}/search/run", json={"query": "certbot renew", "limit": 1})
        assert answer.status_code == 200 and "certbot" in answer.text
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=60)
    assert out == "" and err == ""  # the ready line was all the terminal got
    assert (Path(env["NEEDLE_DATA_DIR"]) / "serve.log").stat().st_size > 0


def test_serve_in_the_background_returns_once_it_answers(env):
    port = free_port()
    started = subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", "serve", "--background", "--port", str(port)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith(f"needle serve: ready at http://127.0.0.1:{port} (pid ")
    assert started.stdout.count("\n") == 1 and started.stderr == ""
    pid = int(started.stdout.split("(pid ", 1)[1].split(")", 1)[0])
    try:
        answer = httpx.post(f"http://127.0.0.1:{port}/status/run", json={}, timeout=30)  # at once, no retry
        assert answer.status_code == 200 and '"notes"' in answer.text
        again = subprocess.run(
            [sys.executable, "-m", "needle.shells.cli", "serve", "--background", "--port", str(free_port())],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert again.returncode == 1 and again.stdout == ""
        assert again.stderr.count("\n") == 1 and f"already open in process {pid}" in again.stderr
    finally:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
