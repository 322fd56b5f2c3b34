"""A real background owner that is stopped (SIGSTOP, as a debugger or a hung process would leave it) is
reported within `owner.answer_timeout` by every command, in one line naming its pid and `kill -CONT PID`:
stopped before the call, and stopped while it starts for the command that started it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from haystack_integrations.document_stores.needle.edge.shards import copy_keeping_holes

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parent.parent
ANSWER_TIMEOUT = 4.0


def environment(data: Path, model_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    env.update(
        NEEDLE_DATA_DIR=str(data),
        NEEDLE_MODEL_DIR=str(model_dir),
        NEEDLE_OWNER__AUTOSTART="true",
        NEEDLE_OWNER__ANSWER_TIMEOUT=f"{ANSWER_TIMEOUT:g}",
    )
    return env


def needle(env: dict[str, str], *args: str, timeout: float = 600) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done, time.monotonic() - started


@pytest.fixture
def started_owners() -> list[int]:
    """Owners a test found: the `data` fixture resumes and ends them."""
    return []


@pytest.fixture
def data(demo_needle, tmp_path: Path, started_owners: list[int]) -> Iterator[Path]:
    """A copy of the demo index; whatever owner a test leaves is resumed and ended."""
    demo_needle.close()
    folder = tmp_path / "data"
    shutil.copytree(
        demo_needle.settings.data_dir,
        folder,
        ignore=shutil.ignore_patterns("owner.json"),
        copy_function=copy_keeping_holes,
    )
    pids = started_owners
    yield folder
    record = folder / "owner.json"
    if record.exists():
        pids.append(json.loads(record.read_text())["pid"])
    for line in (folder / "owner.log").read_text().splitlines() if (folder / "owner.log").exists() else []:
        if "(pid " in line:
            pids.append(int(line.split("(pid ", 1)[1].split(")", 1)[0]))
    for pid in set(pids):
        for sent in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, sent)
            except ProcessLookupError:
                break


def test_a_stopped_owner_is_named_at_once_by_search_and_status(data, demo_needle):
    env = environment(data, demo_needle.settings.model_dir)
    started, _ = needle(env, "owner", "start")
    assert started.returncode == 0, started.stderr + (data / "owner.log").read_text()[-2000:]
    pid = json.loads((data / "owner.json").read_text())["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        for command in (["search", "certbot renew"], ["status"]):
            done, took = needle(env, *command, timeout=120)
            assert done.returncode == 1 and done.stdout == "", done.stderr
            assert done.stderr.count("\n") == 1 and f"pid {pid}" in done.stderr, done.stderr
            assert f"`kill -CONT {pid}`" in done.stderr
            assert took < ANSWER_TIMEOUT, (command, took)
    finally:
        os.kill(pid, signal.SIGCONT)
    done, _ = needle(env, "search", "certbot renew", "-n", "1", timeout=120)
    assert done.returncode == 0 and "certbot" in done.stdout  # resumed, it answers again


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_an_owner_stopped_while_it_starts_is_named_by_the_command_that_started_it(data, demo_needle, started_owners):
    env = environment(data, demo_needle.settings.model_dir)
    client = subprocess.Popen(
        [sys.executable, "-m", "needle.shells.cli", "search", "certbot renew"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (owners := [pid for pid in _children(client.pid) if b"owner\0run" in _command_line(pid)]):
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.01)
    owner_pid = owners[0]
    os.kill(owner_pid, signal.SIGSTOP)
    started_owners.append(owner_pid)
    stopped_at = time.monotonic()
    try:
        out, err = client.communicate(timeout=120)
        took = time.monotonic() - stopped_at
    finally:
        os.kill(owner_pid, signal.SIGCONT)
    assert client.returncode == 1 and out == "", err
    assert err.count("\n") == 1 and f"pid {owner_pid}" in err and f"`kill -CONT {owner_pid}`" in err, err
    assert took < ANSWER_TIMEOUT + 1.0
