"""Needle as its own processes, for the benchmarks that time it that way: `needle` commands, `needle serve`, owners.

`cli_env` is the environment of a `needle` command against one data folder (the user's `NEEDLE_*` variables
left out, the checkout whose code runs on `PYTHONPATH`); `needle_cli` runs one and `timed_cli` times one.
`start_serve` starts `needle serve` on a free loopback port and returns once it answers; `wait_for_owner`
waits until a `needle watch` (or a background owner) answers its routes, caught up with its first index run
when asked. Servers bind 127.0.0.1 only.

Nothing heavy is imported at the top (httpx only where a server is called): a child's peak memory as `wait4`
reads it includes its parent's resident memory at the spawn, so a benchmark that times commands this way must
stay small itself (`python -m eval.client` reads 10 MB for a bare interpreter).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eval.demo_data import REPO
from needle.evaluation.memory import Timed, run_timed

CLI = [sys.executable, "-m", "needle.shells.cli"]


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def auth_headers(token: str | None = None) -> dict[str, str]:
    """The bearer header of `token`, else of `NEEDLE_API_TOKEN` when set (what a served Needle may ask for)."""
    token = token or os.environ.get("NEEDLE_API_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


def cli_env(data: Path, autostart: bool = False, repo: Path = REPO, **extra: str) -> dict[str, str]:
    """
    The environment of a `needle` command on the data folder `data`: the user's `NEEDLE_*` variables left out,
    an owner started on demand only with `autostart`, the code of the checkout `repo` first on the import path.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    env.update(NEEDLE_DATA_DIR=str(data), NEEDLE_OWNER__AUTOSTART=str(autostart).lower(), **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH", "")]))
    return env


def needle_cli(
    args: list[str], env: dict[str, str], check: bool = True, repo: Path = REPO
) -> subprocess.CompletedProcess:
    """
    Run `needle ARGS` (the code of the checkout `repo`) to its end, its output captured.

    :raises SystemExit: When it fails and `check` is on, with its error output.
    """
    done = subprocess.run([*CLI, *args], cwd=repo, env=env, capture_output=True, text=True)
    if check and done.returncode:
        raise SystemExit(f"needle {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def timed_cli(args: list[str], env: dict[str, str], repo: Path = REPO) -> Timed:
    """`needle ARGS` as a process of its own (the code of the checkout `repo`): its wall time and peak memory."""
    return run_timed([*CLI, *args], env=env, cwd=repo)


def stop_owner(data: Path, repo: Path = REPO) -> None:
    """Stop the owner of the data folder `data`, if one runs."""
    needle_cli(["owner", "stop"], cli_env(data, repo=repo), check=False, repo=repo)


def start_serve(data_dir: Path, timeout: float = 300, instances: int | None = None) -> tuple[subprocess.Popen, str]:
    """
    Start `needle serve` on a free port of 127.0.0.1 against `data_dir`.

    :param instances: Warmed instances of each graph (`serve.graph_instances`); the configuration's when `None`.
    :returns: The process and its URL, once it answers.
    :raises SystemExit: When it exits or does not answer within `timeout` seconds.
    """
    import httpx

    port = free_port()
    env = {**os.environ, "NEEDLE_DATA_DIR": str(data_dir)}
    if instances is not None:
        env["NEEDLE_SERVE__GRAPH_INSTANCES"] = str(instances)
    # The server logs every request: to a file, never to a pipe nobody reads (a full pipe blocks the server
    # mid-request). It keeps its own descriptor of the log; the file stays (delete=False) for reading after.
    with tempfile.NamedTemporaryFile(prefix="needle-serve-", suffix=".log", delete=False) as log:
        process = subprocess.Popen(
            [*CLI, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = Path(log.name).read_text(errors="replace")[-2000:]
            raise SystemExit(f"the server exited with {process.returncode}: {tail}")
        try:
            if httpx.get(f"{url}/status", timeout=2, headers=auth_headers()).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(1)
    stop(process)
    raise SystemExit(f"the server did not answer within {timeout:.0f} s")


def stop(process: subprocess.Popen, timeout: float = 30) -> None:
    """Ask a process to end, and kill it when it has not after `timeout` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_for_owner(data: Path, process: subprocess.Popen, timeout: float, caught_up: bool = False) -> dict[str, Any]:
    """
    The owner record of the data folder `data` once its routes answer (and, with `caught_up`, once its watcher
    finished its first index run).

    :param process: The owner's process (`needle watch`): its end stops the wait.
    :raises SystemExit: When the process ends or the owner does not answer within `timeout` seconds.
    """
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the owner exited with {process.returncode}")
        try:
            record = json.loads((data / "owner.json").read_text())
            headers = auth_headers(record["token"])
            if not caught_up:
                if httpx.get(f"{record['address']}/status", headers=headers, timeout=2).status_code == 200:
                    return record
            else:
                status = httpx.post(f"{record['address']}/status/run", json={}, headers=headers, timeout=30)
                if status.json()["result"]["watcher"]["last_update"] is not None:
                    return record
        except (OSError, ValueError, KeyError, httpx.HTTPError):
            pass
        time.sleep(0.2 if not caught_up else 0.5)
    raise SystemExit(f"the owner did not answer within {timeout:.0f} s")
