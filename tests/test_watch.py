"""`needle watch` as a real process on real folders: it owns the index, other commands run through it with the
same output, edits become searchable, a killed watcher leaves a stale record that the next command cleans, and a
restarted one catches up."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from needle.core.collections import Collection
from needle.core.globs import CollectionRules
from needle.lifecycle.watch import Watcher, _served

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "needle" / "demo" / "notes" / "howto"
NOTES = ["certbot-tls-renewal.md", "sqlite-wal-mode.md", "git-rebase-onto.md"]
BOUND = 60.0  # seconds an edit may take to become searchable on a loaded test machine


def env_for(data: Path, model_dir: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NEEDLE_", "HAYHOOKS_")) or k == "NEEDLE_OWNER__AUTOSTART"
    }
    return {**env, "NEEDLE_DATA_DIR": str(data), "NEEDLE_MODEL_DIR": str(model_dir), "NEEDLE_WATCH__DEBOUNCE_MS": "200"}


def needle(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def poll(check: Callable[[], bool], timeout: float = BOUND, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    pytest.fail(f"not within {timeout} s: {what}")


class Watching:
    """A `needle watch` subprocess and the owner record it writes."""

    def __init__(self, env: dict[str, str], data: Path, log: Path) -> None:
        self.record_path = data / "owner.json"
        self.log = log
        self.process = subprocess.Popen(
            [sys.executable, "-m", "needle.shells.cli", "watch"],
            env=env,
            cwd=REPO,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        poll(self.ready, 240, "needle watch did not start")

    def ready(self) -> bool:
        if self.process.poll() is not None:
            pytest.fail(f"needle watch exited with {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
        try:
            record = json.loads(self.record_path.read_text())
            return httpx.get(f"{record['address']}/status", headers=self.headers(record), timeout=2).status_code == 200
        except (OSError, ValueError, httpx.HTTPError):
            return False

    @property
    def record(self) -> dict:
        return json.loads(self.record_path.read_text())

    @staticmethod
    def headers(record: dict) -> dict[str, str]:
        return {"Authorization": f"Bearer {record['token']}"}

    def post(self, route: str, payload: dict) -> object:
        record = self.record
        response = httpx.post(
            f"{record['address']}/{route}/run", json=payload, headers=self.headers(record), timeout=120
        )
        response.raise_for_status()
        return response.json()["result"]

    def paths(self) -> set[str]:
        return {f["path"] for f in self.post("ls", {})}

    def finds(self, word: str) -> bool:
        return any(word in hit["text"] for hit in self.post("search", {"query": word})["results"])


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[dict]:
    base = tmp_path_factory.mktemp("watch")
    notes, data = base / "notes", base / "data"
    notes.mkdir()
    for name in NOTES:
        (notes / name).write_text((DEMO / name).read_text())
    env = env_for(data, model_dir)
    assert needle(env, "collection", "add", str(notes), "--name", "notes").returncode == 0
    yield {"notes": notes, "data": data, "env": env, "base": base}


@pytest.fixture(scope="module")
def watching(folders: dict) -> Iterator[Watching]:
    """One watcher for the module; the catch-up run at its start builds the index."""
    watcher = Watching(folders["env"], folders["data"], folders["base"] / "watch.log")
    poll(lambda: len(watcher.paths()) == len(NOTES), BOUND, "the catch-up run did not index the notes")
    yield watcher
    if watcher.process.poll() is None:
        watcher.process.kill()
        watcher.process.wait()


@pytest.mark.integration
class TestNeedleWatch:
    def test_the_owner_record_names_the_watcher_for_its_user_only(self, watching):
        assert watching.record["pid"] == watching.process.pid
        assert stat.S_IMODE(watching.record_path.stat().st_mode) == 0o600
        assert httpx.get(f"{watching.record['address']}/status", timeout=5).status_code == 401  # the token guards it

    def test_a_command_runs_through_the_owner_with_the_output_it_has_locally(self, watching, folders, tmp_path):
        remote = needle(folders["env"], "query", "renew the TLS certificate", "-n", "3")
        missing = needle(folders["env"], "get", "notes/no-such-note.md")
        status = needle(folders["env"], "status")
        assert remote.returncode == 0, remote.stderr
        assert "certbot-tls-renewal.md" in remote.stdout
        assert (
            missing.returncode == 2
            and missing.stderr.strip() == "error: no file 'no-such-note.md' in collection 'notes'"
        )
        assert "watcher: running" in status.stdout
        log = watching.log.read_text()
        assert "renew the TLS certificate" not in log and "Running component" not in log  # requests stay quiet
        # The same commands on a copy of the index that nobody holds: the same output, the same failure.
        copy = tmp_path / "data"
        subprocess.run(["cp", "-r", str(folders["data"]), str(copy)], check=True)
        (copy / "owner.json").unlink()
        local_env = {**folders["env"], "NEEDLE_DATA_DIR": str(copy)}
        local = needle(local_env, "query", "renew the TLS certificate", "-n", "3")
        local_missing = needle(local_env, "get", "notes/no-such-note.md")
        assert local.returncode == 0, local.stderr
        assert remote.stdout == local.stdout
        assert (local_missing.returncode, local_missing.stderr) == (missing.returncode, missing.stderr)

    def test_index_of_one_path_runs_through_the_owner_and_reads_only_that_file(self, watching, folders):
        ran = needle(folders["env"], "index", "--path", str(folders["notes"] / NOTES[1]), "--json")
        assert ran.returncode == 0, ran.stderr
        report = json.loads(ran.stdout)
        assert report["files_seen"] == 1 and report["texts_embedded"] == 0
        outside = needle(folders["env"], "index", "--path", "/no/such/place.md")
        assert outside.returncode == 2 and "in no collection" in outside.stderr

    def test_check_reads_the_whole_index_through_the_owner(self, watching, folders):
        ran = needle(folders["env"], "check", "--json")
        assert ran.returncode == 0, ran.stderr
        report = json.loads(ran.stdout)
        chunks = sum(c["chunks"] for c in watching.post("status", {})["collections"])
        assert report["problems"] == [] and report["stores"]["chunks"]["points"] == chunks > 0
        assert report["stores"]["files"]["points"] == len(watching.paths())
        optimized = needle(folders["env"], "optimize")  # runs inside the owner, which keeps serving
        assert optimized.returncode == 0, optimized.stderr
        refused = needle(folders["env"], "restore", "/no/such/backup")  # runs inside the owner too, in its turn
        assert (refused.returncode, refused.stderr) == (
            2,
            "error: /no/such/backup is not a Needle backup (no needle_backup.json)\n",
        )

    def test_migrate_runs_in_the_owner_in_its_turn(self, watching, folders):
        failed = needle(folders["env"], "migrate", "--to", "http://127.0.0.1:9")  # no server there: its own failure
        assert failed.returncode == 1 and failed.stderr.startswith(
            "error: cannot reach the Qdrant server at http://127.0.0.1:9"
        )
        assert failed.stderr.count("\n") == 1

    def test_backup_runs_through_the_owner_into_a_folder_relative_to_the_shell(self, watching, folders, tmp_path):
        ran = subprocess.run(
            [sys.executable, "-m", "needle.shells.cli", "backup", "nightly", "--json"],
            env=folders["env"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ran.returncode == 0, ran.stderr
        assert (tmp_path / "nightly" / "needle_backup.json").is_file()
        again = needle(folders["env"], "backup", str(tmp_path / "nightly"))
        assert again.returncode == 2 and "nightly" in again.stderr  # a folder that is not new is refused

    def test_an_edit_becomes_searchable_and_a_deleted_note_leaves(self, watching, folders):
        note = folders["notes"] / "zebra.md"
        note.write_text("# Zebra migrations\n\nThe quokkafrobnicator schedules zebra migrations every spring.\n")
        poll(lambda: watching.finds("quokkafrobnicator"), BOUND, "the new note is not searchable")
        note.unlink()
        poll(lambda: not watching.finds("quokkafrobnicator"), BOUND, "the deleted note is still found")
        assert watching.post("status", {})["watcher"]["last_error"] is None

    def test_a_bad_frontmatter_value_saved_with_a_good_edit_costs_only_its_field(self, watching, folders):
        (folders["notes"] / "bad-date.md").write_text("---\ndate: 2024-13-45\n---\n# Otters\n\nottersbadword sleep.\n")
        (folders["notes"] / "good.md").write_text("# Herons\n\nheronsgoodword fish.\n")
        poll(lambda: watching.finds("heronsgoodword") and watching.finds("ottersbadword"), BOUND, "not both indexed")
        status = watching.post("status", {})
        assert status["watcher"]["last_error"] is None
        assert {
            "collection": "notes",
            "path": "bad-date.md",
            "kind": "warning",
            "reason": "frontmatter field date left out: month must be in 1..12",
        } in status["problems"]
        shown = needle(folders["env"], "status")
        assert "warning notes/bad-date.md: frontmatter field date left out: month must be in 1..12" in shown.stdout

    def test_a_burst_of_fifty_files_is_all_indexed(self, watching, folders):
        burst = folders["notes"] / "burst"
        burst.mkdir()
        for i in range(50):
            (burst / f"note-{i:02d}.md").write_text(f"# Burst {i}\n\nburstword{i} is in this note only.\n")
        poll(lambda: sum(p.startswith("burst/") for p in watching.paths()) == 50, 2 * BOUND, "not all 50 indexed")
        assert watching.finds("burstword37")

    def test_files_outside_the_include_globs_are_not_indexed(self, watching, folders):
        (folders["notes"] / "image.png").write_bytes(b"\x89PNG notindexedword")
        (folders["notes"] / "later.md").write_text("# Later\n\nlaterword marks this note.\n")
        poll(lambda: watching.finds("laterword"), BOUND, "the note is not searchable")
        assert "image.png" not in watching.paths()

    def test_a_collection_added_is_indexed_and_one_removed_through_the_owner_leaves(self, watching, folders):
        extra = folders["base"] / "extra"
        extra.mkdir()
        (extra / "tide.md").write_text("# Tides\n\ntidewordzz rises twice a day.\n")
        assert needle(folders["env"], "collection", "add", str(extra), "--name", "extra").returncode == 0
        poll(lambda: watching.finds("tidewordzz"), BOUND, "the added collection was not indexed")
        removed = needle(folders["env"], "collection", "remove", "extra")
        assert removed.returncode == 0, removed.stderr
        assert removed.stdout.startswith("removed collection 'extra' and ") and " 0 chunks" not in removed.stdout
        assert not watching.finds("tidewordzz")
        again = needle(folders["env"], "collection", "remove", "extra")
        assert (again.returncode, again.stderr.strip()) == (2, "error: no collection named 'extra'")

    def test_after_kill_9_the_stale_record_is_cleaned_and_a_new_watcher_catches_up(self, watching, folders):
        watching.process.send_signal(signal.SIGKILL)
        watching.process.wait()
        assert watching.record_path.exists()  # nobody removed it
        (folders["notes"] / "offline.md").write_text("# Offline\n\nofflineword was written while nobody watched.\n")
        local = needle(folders["env"], "search", "offlineword")
        assert local.returncode == 0 and "no results" in local.stdout  # ran locally: not indexed yet
        assert not watching.record_path.exists()
        restarted = Watching(folders["env"], folders["data"], folders["base"] / "watch2.log")
        try:
            poll(lambda: restarted.finds("offlineword"), BOUND, "the restarted watcher did not catch up")
            restarted.process.send_signal(signal.SIGTERM)
            assert restarted.process.wait(timeout=60) == 0
            assert not restarted.record_path.exists()  # a clean exit removes the record
        finally:
            if restarted.process.poll() is None:
                restarted.process.kill()


@pytest.mark.integration
def test_serve_with_watch_serves_what_was_saved_after_it_started(tmp_path, model_dir):
    notes, data = tmp_path / "notes", tmp_path / "data"
    notes.mkdir()
    (notes / NOTES[0]).write_text((DEMO / NOTES[0]).read_text())
    env = env_for(data, model_dir)
    assert needle(env, "collection", "add", str(notes), "--name", "notes").returncode == 0
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path / "serve.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "needle.shells.cli", "serve", "--watch", "--port", str(port)],
        env=env,
        cwd=REPO,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def search(word: str) -> list[dict]:
        if process.poll() is not None:
            pytest.fail(f"needle serve exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            response = httpx.post(f"{url}/search/run", json={"query": word}, timeout=30)
        except httpx.HTTPError:
            return []
        return response.json()["result"]["results"] if response.status_code == 200 else []

    try:
        poll(lambda: any("certbot" in hit["text"] for hit in search("certbot")), 240, "serve --watch did not catch up")
        (notes / "saved-later.md").write_text("# Saved later\n\nservewatchword arrived while the server ran.\n")
        poll(
            lambda: any("servewatchword" in hit["text"] for hit in search("servewatchword")),
            BOUND,
            "a note saved while serving was not indexed",
        )
        status = httpx.post(f"{url}/status/run", json={}, timeout=30).json()["result"]
        assert status["watcher"]["running"] is True
        through_owner = needle(env, "search", "servewatchword")  # a shell command goes through the server
        assert through_owner.returncode == 0 and "saved-later.md" in through_owner.stdout
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


class TestServed:
    """Which changed paths concern a collection (no watcher process needed)."""

    def collection(self, root: Path) -> tuple[Collection, CollectionRules]:
        collection = Collection(name="notes", root=str(root))
        return collection, CollectionRules(collection.include, collection.exclude)

    def test_notes_are_files_and_other_files_are_ignored(self, tmp_path):
        collection, rules = self.collection(tmp_path)
        assert _served(str(tmp_path / "a" / "b.md"), collection, rules) == "file"
        assert _served(str(tmp_path / "a" / "b.png"), collection, rules) is None
        assert _served(str(tmp_path / ".obsidian" / "b.md"), collection, rules) is None
        assert _served(str(tmp_path.parent / "elsewhere.md"), collection, rules) is None

    def test_a_folder_that_moved_or_vanished_means_the_whole_collection(self, tmp_path):
        collection, rules = self.collection(tmp_path)
        (tmp_path / "folder").mkdir()
        assert _served(str(tmp_path / "folder"), collection, rules) == "folder"
        assert _served(str(tmp_path / "gone"), collection, rules) == "folder"

    def test_bad_timings_are_refused(self):
        with pytest.raises(ValueError, match="debounce_ms must be > 0"):
            Watcher(needle=None, debounce_ms=0)
        with pytest.raises(ValueError, match="max_wait_ms must be >= debounce_ms"):
            Watcher(needle=None, debounce_ms=500, max_wait_ms=100)
