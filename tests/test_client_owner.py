"""Commands through a real background owner: started by the first command that needs the index, the same
output and exit codes as in-process, no Haystack in the client, `needle owner` to see and stop it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from haystack_integrations.document_stores.needle.edge.shards import copy_keeping_holes

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parent.parent
HEAVY = ("haystack", "pydantic", "pydantic_settings", "httpx", "qdrant_edge", "fastembed", "onnxruntime", "numpy")
# OpenSSL's library, which `hashlib` and `hmac` load: about 4 ms of every command for hashes the interpreter has
HEAVY += ("_hashlib", "hmac")
COMMANDS = [
    ("search", "certbot renew", "-n", "3"),
    ("query", "git rebase onto another branch", "-n", "3", "--json"),
    ("vsearch", "encrypted laptop backups", "--format", "csv", "-n", "2"),
    ("search", "certbot", "--pipeline", "no-such-graph"),
    ("get", "notes/howto/certbot-tls-renewal.md:2:4"),
    ("get", "notes/no-such-note.md"),
    ("multi-get", "notes/howto/s*.md", "--max-bytes", "3000"),
    ("ls", "notes"),
    ("context", "list"),
]


def run(data: Path, *args: str, autostart: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    env.update(
        NEEDLE_DATA_DIR=str(data),
        NEEDLE_MODEL_DIR=os.environ.get("NEEDLE_MODEL_DIR", ""),
        NEEDLE_OWNER__AUTOSTART=str(autostart).lower(),
    )
    if not env["NEEDLE_MODEL_DIR"]:
        del env["NEEDLE_MODEL_DIR"]
    return subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def copies(demo_needle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Two copies of the demo index: one gets a background owner (started by its first command), one none."""
    demo_needle.close()
    base = tmp_path_factory.mktemp("client")
    folders = {name: base / name for name in ("owned", "local")}
    for folder in folders.values():
        shutil.copytree(
            demo_needle.settings.data_dir,
            folder,
            ignore=shutil.ignore_patterns("owner.json"),
            copy_function=copy_keeping_holes,
        )
    os.environ.setdefault("NEEDLE_MODEL_DIR", str(demo_needle.settings.model_dir))
    first = run(folders["owned"], "search", "certbot renew", "-n", "3", autostart=True)
    assert first.returncode == 0, first.stderr + (folders["owned"] / "owner.log").read_text()[-3000:]
    folders["first"] = first  # type: ignore[assignment]
    yield folders
    record = folders["owned"] / "owner.json"
    if record.exists():
        pid = json.loads(record.read_text())["pid"]
        subprocess.run(["kill", str(pid)], check=False)


def test_the_first_command_starts_a_background_owner(copies):
    record = json.loads((copies["owned"] / "owner.json").read_text())
    assert record["command"] == "background" and record["pid"] != os.getpid()
    shown = run(copies["owned"], "owner", autostart=True)
    assert shown.returncode == 0 and f"pid {record['pid']} (needle background)" in shown.stdout


def test_the_owner_a_command_starts_answers_it_first_then_warms_the_other_graphs(copies):
    log = copies["owned"] / "owner.log"
    deadline = time.monotonic() + 300
    while "warmed every graph in full" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    text = log.read_text()
    assert "answering with search warm" in text
    warmed = text.split("warmed every graph in full (", 1)[1].split(")", 1)[0].split(", ")
    # The ingest graph and its model are not kept: an index run loads them and lets them go after.
    assert sorted(warmed) == ["query", "related", "search", "vsearch"]


def test_the_owner_answers_before_building_its_http_api_then_serves_all_of_it(copies):
    import httpx

    log = copies["owned"] / "owner.log"
    deadline = time.monotonic() + 300
    while "every HTTP route answers" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    text = log.read_text()
    # The command that started it was answered by the owner routes alone; the HTTP API was built after.
    assert text.index("answering with search warm") < text.index("every HTTP route answers")
    record = json.loads((copies["owned"] / "owner.json").read_text())
    headers = {"Authorization": f"Bearer {record['token']}"}
    status = httpx.post(f"{record['address']}/status/run", json={}, headers=headers, timeout=60)
    assert status.status_code == 200 and status.json()["result"]["collections"][0]["files"] > 0
    found = httpx.post(
        f"{record['address']}/search/run", json={"query": "certbot renew", "limit": 1}, headers=headers, timeout=60
    )
    assert found.status_code == 200 and "certbot" in found.json()["result"]["results"][0]["path"]
    # Only needle commands reach a background owner: it serves no MCP transport (nor imports the MCP SDK for one).
    transport = httpx.post(f"{record['address']}/mcp", json={}, headers=headers, timeout=60)
    assert transport.status_code == 404


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c)[:40])
def test_output_and_exit_code_are_those_of_the_command_in_process(copies, command):
    through = run(copies["owned"], *command, autostart=True)
    local = run(copies["local"], *command, autostart=False)
    assert (through.returncode, through.stdout, through.stderr) == (local.returncode, local.stdout, local.stderr)
    assert not (copies["local"] / "owner.json").exists()  # autostart off: the command ran in its own process


def test_status_is_the_same_but_for_the_folder(copies):
    through = run(copies["owned"], "status", autostart=True)
    local = run(copies["local"], "status", autostart=False)
    assert through.returncode == local.returncode == 0
    assert through.stdout.replace(str(copies["owned"]), "DATA") == local.stdout.replace(str(copies["local"]), "DATA")


def test_the_first_call_prints_what_later_ones_print(copies):
    again = run(copies["owned"], "search", "certbot renew", "-n", "3", autostart=True)
    assert (again.returncode, again.stdout) == (copies["first"].returncode, copies["first"].stdout)


def test_a_command_through_the_owner_imports_no_haystack_models_or_store(copies):
    probe = (
        "import sys; from needle.shells.cli import main; code = main(['search', 'certbot renew', '-n', '1']); "
        f"print(code, sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})), file=sys.stderr)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "NEEDLE_DATA_DIR": str(copies["owned"]), "NEEDLE_OWNER__AUTOSTART": "true"},
    )
    assert done.stderr.strip().splitlines()[-1] == "0 []" and "certbot" in done.stdout


def test_index_runs_in_the_owner(copies):
    done = run(copies["owned"], "index", "--json", autostart=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files_unchanged"] > 0


def test_owner_stop_stops_it_and_the_record_goes(copies):
    record = json.loads((copies["owned"] / "owner.json").read_text())
    stopped = run(copies["owned"], "owner", "stop", autostart=True)
    assert stopped.returncode == 0 and stopped.stdout == f"stopped the owner (pid {record['pid']}, needle background)\n"
    assert not (copies["owned"] / "owner.json").exists()
    shown = run(copies["owned"], "owner", autostart=False)
    assert shown.stdout.startswith("no owner holds the index") and "autostart is off" in shown.stdout
