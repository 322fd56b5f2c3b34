"""An owner that runs other code than the command (an upgrade, a `git pull`): real processes, one of them run
from a copy of the code (another checkout, so another code stamp, `needle.owner.code_stamp`)."""

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
from needle.owner.code_stamp import code_stamp

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parent.parent
CODE = ("needle", "pipelines", "server", "config", "components")


def environment(data: Path, code: Path, autostart: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    env.update(NEEDLE_DATA_DIR=str(data), NEEDLE_OWNER__AUTOSTART=str(autostart).lower(), PYTHONPATH=str(code))
    if os.environ.get("NEEDLE_MODEL_DIR"):
        env["NEEDLE_MODEL_DIR"] = os.environ["NEEDLE_MODEL_DIR"]
    return env


def run(data: Path, *args: str, code: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", *args],
        cwd=code,
        env=environment(data, code),
        capture_output=True,
        text=True,
        timeout=600,
    )


def record(data: Path) -> dict:
    return json.loads((data / "owner.json").read_text())


def gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def other_code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of Needle's code elsewhere: the same version, another checkout."""
    copy = tmp_path_factory.mktemp("other-checkout")
    for name in CODE:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.fixture
def data(demo_needle, tmp_path: Path) -> Iterator[Path]:
    """A copy of the demo index; any owner left on it is stopped afterwards."""
    demo_needle.close()
    os.environ.setdefault("NEEDLE_MODEL_DIR", str(demo_needle.settings.model_dir))
    folder = tmp_path / "data"
    shutil.copytree(
        demo_needle.settings.data_dir,
        folder,
        ignore=shutil.ignore_patterns("owner.json", "owner.log"),
        copy_function=copy_keeping_holes,
    )
    yield folder
    if (folder / "owner.json").exists():
        pid = record(folder)["pid"]
        os.kill(pid, signal.SIGTERM)
        gone(pid)


def test_the_owner_record_names_the_code_it_runs(data):
    started = run(data, "owner", "start")
    assert started.returncode == 0, started.stderr
    assert record(data)["code"] == code_stamp()


def test_an_idle_background_owner_of_other_code_is_replaced_by_one_of_this_code(data, other_code):
    started = run(data, "owner", "start", code=other_code)
    assert started.returncode == 0, started.stderr
    old = record(data)
    assert old["command"] == "background" and old["code"] != code_stamp()
    shown = run(data, "owner")
    assert shown.returncode == 0 and shown.stdout.rstrip().endswith(
        "it runs other code than this needle (started before Needle changed)"
    )
    done = run(data, "search", "certbot renew", "-n", "2")
    assert done.returncode == 0, done.stderr
    assert "certbot-tls-renewal.md" in done.stdout and done.stderr == ""
    assert gone(old["pid"], timeout=5)
    new = record(data)
    assert new["pid"] != old["pid"] and new["code"] == code_stamp() and new["command"] == "background"


def test_an_owner_the_user_started_is_used_with_one_line_on_restarting_it(data, other_code, tmp_path):
    log = tmp_path / "watch.log"
    with open(log, "w") as output:  # a file, not a pipe: a pipe nobody reads would stop the owner when full
        watch = subprocess.Popen(
            [sys.executable, "-m", "needle.shells.cli", "watch"],
            cwd=other_code,
            env=environment(data, other_code),
            stdout=subprocess.DEVNULL,
            stderr=output,
        )
    try:
        deadline = time.monotonic() + 300
        while (
            "watching the collections" not in log.read_text() and watch.poll() is None and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        assert "watching the collections" in log.read_text(), log.read_text()[-3000:]
        done = run(data, "search", "certbot renew", "-n", "2")
        assert done.returncode == 0, done.stderr
        assert "certbot-tls-renewal.md" in done.stdout
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and f"the owner (pid {watch.pid}, needle watch) runs other code" in lines[0]
        assert "restart it" in lines[0] and record(data)["pid"] == watch.pid  # still the owner
    finally:
        watch.send_signal(signal.SIGTERM)
        watch.wait(timeout=60)


def test_a_busy_background_owner_of_other_code_is_used_with_one_line_then_exits_once_idle(data, other_code):
    started = run(data, "owner", "start", code=other_code)
    assert started.returncode == 0, started.stderr
    old = record(data)
    indexing = subprocess.Popen(
        [sys.executable, "-m", "needle.shells.cli", "index", "--rebuild"],
        cwd=other_code,
        env=environment(data, other_code),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while indexing.poll() is None and time.monotonic() < deadline:
            status = run(data, "status", "--json", code=other_code)
            if status.returncode == 0 and json.loads(status.stdout).get("index_run"):
                break
        assert indexing.poll() is None, "the index run ended before the command came"
        done = run(data, "search", "certbot renew", "-n", "2")
        first = done.stderr.splitlines()[0]
        assert f"the owner (pid {old['pid']}, needle background) runs other code" in first
        assert "busy (1 request under way: index run under way" in first and "goes through it" in first
        assert record(data)["pid"] == old["pid"]  # not stopped mid-run
        assert indexing.wait(timeout=600) == 0
        assert gone(old["pid"], timeout=30)  # it made way once idle
    finally:
        if indexing.poll() is None:
            indexing.kill()
