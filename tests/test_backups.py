"""Backups: a consistent copy of the embedded index, server snapshots, restoring, and the schedule."""

import json
import re
import threading
import time
from pathlib import Path

import pytest

from needle.core.requests import BackupRequest, IndexRequest, RestoreRequest, SearchRequest
from needle.facade.api import Needle
from needle.lifecycle import backups
from needle.lifecycle import provenance as index_info
from needle.lifecycle.backups import BackupError, BackupScheduler, parse_interval

NOTES = {
    "ops/restic.md": "# Restic\n\nBack the laptop up every night with restic to the NAS; prune weekly.\n",
    "sourdough.md": "# Sourdough\n\nFeed the starter twice a day with equal weights of flour and water.\n",
    "training.txt": "Marathon training: long runs on Sunday, intervals on Tuesday.\n",
}


class TestParseInterval:
    @pytest.mark.parametrize(
        ("text", "seconds"), [("90", 90), ("90s", 90), ("30m", 1800), ("6h", 21600), ("1d", 86400), ("0.5h", 1800)]
    )
    def test_reads_units(self, text, seconds):
        assert parse_interval(text) == seconds

    @pytest.mark.parametrize("text", ["", "6x", "-1h", "0", "h"])
    def test_refuses_what_is_not_an_interval(self, text):
        with pytest.raises(ValueError, match="interval"):
            parse_interval(text)


class TestBackupScheduler:
    def test_bad_params_raise(self, tmp_path):
        with pytest.raises(ValueError, match="every must be > 0"):
            BackupScheduler(lambda p: None, lambda p: None, tmp_path, every=0, keep=1)
        with pytest.raises(ValueError, match="keep must be >= 1"):
            BackupScheduler(lambda p: None, lambda p: None, tmp_path, every=1, keep=0)

    def test_keeps_the_newest_backups(self, tmp_path):
        dropped = []
        scheduler = BackupScheduler(
            make=lambda folder: folder.mkdir(),
            drop=lambda folder: dropped.append(folder.name) or folder.rmdir(),
            directory=tmp_path,
            every=3600,
            keep=2,
        )
        made = [scheduler.run_once().name for _ in range(4)]
        assert [p.name for p in scheduler.backups()] == made[2:]
        assert dropped == made[:2]
        (tmp_path / "something-else").mkdir()  # not the scheduler's: left alone
        scheduler.run_once()
        assert (tmp_path / "something-else").exists()

    def test_runs_every_interval_in_the_background_and_outlives_a_failure(self, tmp_path):
        calls = []

        def make(folder: Path) -> None:
            calls.append(folder)
            if len(calls) == 1:
                raise RuntimeError("disk full")
            folder.mkdir()

        scheduler = BackupScheduler(make, lambda p: None, tmp_path, every=0.05, keep=10)
        scheduler.start()
        deadline = time.monotonic() + 10
        while len(scheduler.backups()) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        scheduler.stop(timeout=5)
        assert len(calls) >= 3 and len(scheduler.backups()) >= 2


class FakeServerStore:
    """A server collection's snapshot API, recorded."""

    def __init__(self, index: str, count: int) -> None:
        self.index, self.count = index, count
        self.restored, self.deleted = [], []

    def count_documents(self) -> int:
        return self.count

    def snapshot(self) -> dict:
        return {"name": f"{self.index}-1.snapshot", "creation_time": "2026-01-01T00:00:00", "size": 10}

    def restore_snapshot(self, name: str) -> None:
        self.restored.append(name)

    def delete_snapshot(self, name: str) -> None:
        self.deleted.append(name)

    def close(self) -> None:
        pass

    def writes_paused(self):
        """A server keeps writes consistent itself (`QdrantServerDocumentStore.writes_paused`)."""
        from contextlib import nullcontext

        return nullcontext()


class TestServerBackups:
    def test_a_server_backup_is_a_snapshot_per_collection(self, tmp_path, settings):
        from needle.core.settings import load_settings

        server = load_settings(
            env={"NEEDLE_DATA_DIR": str(tmp_path / "data"), "NEEDLE_STORE__URL": "http://qdrant:6333"}
        )
        needle = Needle(server)
        stores = {"chunks": FakeServerStore("needle", 12), "files": FakeServerStore("needle_files", 3)}
        needle.environment._stores.update(stores)
        index_info._write(
            server, {"fingerprint": index_info.fingerprint(server, needle.ingest_graph()), "layout": None}
        )

        made = needle.backup(BackupRequest(path=str(tmp_path / "b1")))
        assert made.kind == "server" and (made.chunks, made.files) == (12, 3)
        assert made.snapshots["files"] == {
            "collection": "needle_files",
            "name": "needle_files-1.snapshot",
            "creation_time": "2026-01-01T00:00:00",
            "size": 10,
        }
        restored = needle.restore(RestoreRequest(path=str(tmp_path / "b1")))
        assert restored.restored == {"chunks": 12, "files": 3}
        assert stores["chunks"].restored == ["needle-1.snapshot"]
        backups.drop(needle, tmp_path / "b1")
        assert stores["files"].deleted == ["needle_files-1.snapshot"] and not (tmp_path / "b1").exists()

        embedded = Needle(settings)
        with pytest.raises(BackupError, match="configured store is embedded"):
            backups.check_restorable(settings, embedded.ingest_graph(), made.model_dump())


def on_disk(folder: Path) -> int:
    """Bytes the files under `folder` take on disk (holes take none)."""
    return sum(path.stat().st_blocks * 512 for path in folder.rglob("*") if path.is_file())


@pytest.mark.integration
class TestEmbeddedBackups:
    @pytest.fixture
    def needle(self, settings, tmp_path) -> Needle:
        root = tmp_path / "notes"
        for name, text in NOTES.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        n = Needle(settings)
        n.collections.add(root, "notes")
        n.index(IndexRequest())
        yield n
        n.close()

    def results(self, needle: Needle, query: str) -> list[tuple[str, int]]:
        return [
            (hit.path, hit.start_line) for hit in needle.search(SearchRequest(query=query), pipeline="query").results
        ]

    def test_restore_brings_back_the_counts_and_the_results(self, needle, tmp_path):
        before = self.results(needle, "nightly laptop backups")
        counts = (needle.store.count_documents(), needle.file_store.count_documents())
        made = needle.backup(BackupRequest(path=str(tmp_path / "backup")))
        assert (made.chunks, made.files) == counts
        assert made.collections == ["notes"]
        assert {p.name for p in (tmp_path / "backup").iterdir()} == {
            "index",
            "needle_backup.json",
            "needle_index.json",
            "collections.yml",
        }
        assert needle.status().last_backup["path"] == str(tmp_path / "backup")
        # The engine's page files are mostly holes: a copy keeps them holes instead of writing them whole.
        index_dir = needle.settings.index_dir
        assert on_disk(tmp_path / "backup" / "index") <= on_disk(index_dir) + 2**20

        (tmp_path / "notes" / "ops" / "restic.md").unlink()
        (tmp_path / "notes" / "new.md").write_text("# Borg\n\nBorg backs the desktop up to the NAS as well.\n")
        needle.index(IndexRequest())
        assert self.results(needle, "nightly laptop backups") != before

        restored = needle.restore(RestoreRequest(path=str(tmp_path / "backup")))
        assert restored.restored == {"chunks": counts[0], "files": counts[1]}
        assert needle.status().last_backup["path"] == str(tmp_path / "backup")
        assert (needle.store.count_documents(), needle.file_store.count_documents()) == counts
        assert self.results(needle, "nightly laptop backups") == before
        assert on_disk(index_dir) <= on_disk(tmp_path / "backup") + 2**20

    def test_backup_waits_for_an_index_run_and_writes_wait_for_it(self, needle, tmp_path):
        with needle.writes_paused():
            other = threading.Thread(target=needle.index, args=(IndexRequest(),))
            other.start()
            other.join(timeout=0.5)
            assert other.is_alive()  # the index run waits for the pause
        other.join(timeout=120)
        assert not other.is_alive()

    def test_restore_refuses_another_models_backup(self, needle, tmp_path):
        needle.backup(BackupRequest(path=str(tmp_path / "backup")))
        manifest = tmp_path / "backup" / "needle_backup.json"
        data = json.loads(manifest.read_text())
        data["fingerprint"]["embedding_model"] = "BAAI/bge-small-en-v1.5"
        manifest.write_text(json.dumps(data))
        with pytest.raises(
            index_info.IndexMismatchError, match=re.escape("embedding_model: backup has 'BAAI/bge-small-en-v1.5'")
        ):
            needle.restore(RestoreRequest(path=str(tmp_path / "backup")))
        assert needle.store.count_documents() > 0  # the index was left as it was

    def test_backup_refuses_a_folder_in_use_and_restore_a_folder_that_is_no_backup(self, needle, tmp_path):
        (tmp_path / "full").mkdir()
        (tmp_path / "full" / "x").write_text("x")
        with pytest.raises(BackupError, match="not an empty folder"):
            needle.backup(BackupRequest(path=str(tmp_path / "full")))
        with pytest.raises(BackupError, match="not a Needle backup"):
            needle.restore(RestoreRequest(path=str(tmp_path / "full")))

    def test_cli_backup_and_restore(self, needle, tmp_path, monkeypatch, capsys):
        from needle.shells.cli import main

        monkeypatch.setenv("NEEDLE_DATA_DIR", str(needle.settings.data_dir))
        monkeypatch.setenv("NEEDLE_MODEL_DIR", str(needle.settings.model_dir))
        needle.close()
        assert main(["backup", str(tmp_path / "b")]) == 0
        assert capsys.readouterr().out.startswith(f"backed up {needle.store.count_documents()} chunks")
        needle.close()
        assert main(["status"]) == 0
        assert f"-> {tmp_path / 'b'}".replace("->", "→") in capsys.readouterr().out
        assert main(["restore", str(tmp_path / "b")]) == 0
        assert capsys.readouterr().out.startswith("restored ")
        assert main(["restore", str(tmp_path / "nowhere")]) == 2
        assert "is not a Needle backup" in capsys.readouterr().err
