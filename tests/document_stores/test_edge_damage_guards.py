"""What guards the embedded store: the clean-close seal, the child-process probe, free space, the log reader.

Real Qdrant Edge shards in temporary folders, a few tiny documents, no models.
"""

from __future__ import annotations

import glob
import os
import struct
from pathlib import Path

import pytest
from haystack import Document

from haystack_integrations.document_stores.needle.edge import shards
from haystack_integrations.document_stores.needle.edge.document_store import EdgeDocumentStore
from haystack_integrations.document_stores.needle.edge.seal import SEAL_FILE_NAME
from haystack_integrations.document_stores.needle.edge.wal import read_wal
from haystack_integrations.document_stores.needle.protocol import IndexDamagedError
from needle.core import disk

DIM = 4


def _store(path: Path) -> EdgeDocumentStore:
    # Indexed from the start: the index creations are entries of the write-ahead log these tests read.
    return EdgeDocumentStore(path=str(path), embedding_dim=DIM, use_sparse_embeddings=False, payload_indexes_from=0)


def _filled(path: Path) -> Path:
    store = _store(path)
    store.write_documents(
        [Document(id=f"d{i}", content=f"note {i}", embedding=[1.0, float(i), 0.5, 0.25]) for i in range(3)]
    )
    store.close()
    return path


def wild_id(folder: Path) -> None:
    """Flip the internal id of the first point in the id tracker: the engine then asks for tens of GB and aborts."""
    mappings = glob.glob(str(folder / "segments" / "*" / "mutable_id_tracker.mappings"))[0]
    data = bytearray(Path(mappings).read_bytes())
    for i in range(17, 21):  # change byte, 16-byte UUID, then the u32 internal id
        data[i] ^= 0xFF
    Path(mappings).write_bytes(bytes(data))


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders probed in a child process, in order (the real probe still runs)."""
    seen: list[str] = []
    real = shards.probe

    def counting(path: str, read_all: bool = False) -> str | None:
        seen.append(path)
        return real(path, read_all)

    monkeypatch.setattr(shards, "probe", counting)
    return seen


class TestCleanCloseSeal:
    def test_a_cleanly_closed_store_reopens_without_a_probe(self, tmp_path, probes):
        folder = _filled(tmp_path / "edge")
        assert (folder / SEAL_FILE_NAME).is_file()
        for _ in range(2):
            store = _store(folder)
            assert store.count_documents() == 3
            store.close()
        assert probes == []

    def test_a_store_left_open_or_changed_since_its_close_is_probed_first(self, tmp_path, probes):
        folder = _filled(tmp_path / "edge")
        (folder / SEAL_FILE_NAME).unlink()  # as a process killed with the store open leaves it
        store = _store(folder)
        assert store.count_documents() == 3
        store.close()
        assert len(probes) == 1
        mappings = glob.glob(str(folder / "segments" / "*" / "mutable_id_tracker.mappings"))[0]
        os.utime(mappings, ns=(1, 1))  # written behind the store's back
        store = _store(folder)
        assert store.count_documents() == 3
        store.close()
        assert len(probes) == 2

    def test_the_seal_is_broken_while_the_store_is_open(self, tmp_path):
        folder = _filled(tmp_path / "edge")
        store = _store(folder)
        store.count_documents()
        assert not (folder / SEAL_FILE_NAME).exists()
        store.close()
        assert (folder / SEAL_FILE_NAME).exists()

    def test_the_seal_records_what_a_walk_of_the_folder_finds(self, tmp_path):
        from haystack_integrations.document_stores.needle.edge.seal import _state

        folder = _filled(tmp_path / "edge")
        (folder / "deep" / "deeper").mkdir(parents=True)
        (folder / "deep" / "deeper" / "pages.dat").write_bytes(b"x" * 10)
        (folder / "lock").write_text("")
        (folder / "linked.dat").symlink_to(folder / "deep" / "deeper" / "pages.dat")
        (folder / "linked-folder").symlink_to(folder / "deep", target_is_directory=True)
        (folder / "dangling").symlink_to(folder / "missing")
        walked = {}
        for root, _, names in os.walk(folder):
            for name in names:
                relative = os.path.relpath(os.path.join(root, name), folder)
                if relative not in {SEAL_FILE_NAME, "lock"}:
                    info = os.lstat(os.path.join(root, name))
                    walked[relative] = [info.st_size, info.st_mtime_ns]
        state = _state(str(folder), frozenset({"lock"}))
        assert state == walked
        assert "deep/deeper/pages.dat" in state and "dangling" in state and "linked-folder" not in state
        assert not any(name.startswith("linked-folder/") for name in state)


class TestProbe:
    def test_damage_the_engine_aborts_on_is_an_index_damaged_error_not_a_dead_process(self, tmp_path):
        folder = _filled(tmp_path / "edge")
        wild_id(folder)
        with pytest.raises(IndexDamagedError, match=r"SIGABRT.*needle index --rebuild"):
            _store(folder).count_documents()

    def test_recreating_moves_a_store_the_engine_aborts_on_aside_unopened(self, tmp_path):
        folder = _filled(tmp_path / "edge")
        wild_id(folder)
        store = _store(folder)
        store.delete_all_documents(recreate_index=True)
        assert store.count_documents() == 0
        store.write_documents([Document(id="new", content="new", embedding=[1.0, 0.0, 0.0, 0.0])])
        assert store.count_documents() == 1
        store.close()
        assert len(glob.glob(f"{folder}.damaged-*")) == 1

    def test_verify_reads_every_point_in_a_child_process_first(self, tmp_path, monkeypatch):
        folder = _filled(tmp_path / "edge")
        seen: list[bool] = []
        real = shards.probe
        monkeypatch.setattr(shards, "probe", lambda path, read_all=False: seen.append(read_all) or real(path, read_all))
        store = _store(folder)
        assert store.verify()["points"] == 3
        store.close()
        assert seen == [True]


class TestFreeSpace:
    def test_opening_and_writing_refuse_a_disk_without_the_margin(self, tmp_path, monkeypatch):
        folder = _filled(tmp_path / "edge")
        monkeypatch.setattr(disk, "free_mb", lambda _folder: 12)
        with pytest.raises(disk.DiskFullError, match=r"no space left on .* \(12 MB free\)"):
            _store(folder).count_documents()

    def test_a_write_is_refused_before_the_engine_is_asked(self, tmp_path, monkeypatch):
        folder = _filled(tmp_path / "edge")
        store = _store(folder)
        assert store.count_documents() == 3
        monkeypatch.setattr(disk, "free_mb", lambda _folder: disk.MIN_FREE_MB)
        with pytest.raises(disk.DiskFullError):
            store.write_documents([Document(id="more", content="more", embedding=[1.0, 0.0, 0.0, 0.0])])
        monkeypatch.undo()
        assert store.count_documents() == 3
        store.close()

    def test_disk_full_errors_are_recognised_from_the_os_and_sqlite(self):
        import errno
        import sqlite3

        assert disk.is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
        assert disk.is_disk_full(sqlite3.OperationalError("database or disk is full"))
        assert not disk.is_disk_full(OSError(errno.EACCES, "Permission denied"))


def garble_second_wal_entry(folder: Path) -> None:
    """Flip 64 bytes from the data of the log's second entry on (its CRC and the next header may go too)."""
    segment = folder / "wal" / "open-1"
    data = bytearray(segment.read_bytes())
    (length,) = struct.unpack_from("<Q", data, 8)
    second = 8 + 8 + length + ((4 - length) & 7) + 4
    for i in range(second + 16, second + 80):
        data[i] ^= 0xFF
    segment.write_bytes(bytes(data))


class TestWriteAheadLog:
    def test_a_sound_log_reads_to_its_end(self, tmp_path):
        folder = _filled(tmp_path / "edge")
        log = read_wal(str(folder))
        assert log.entries >= 2 and log.unreadable == 0

    def test_entries_past_garbled_bytes_are_found_though_the_engine_drops_them_silently(self, tmp_path):
        folder = _filled(tmp_path / "edge")
        store = _store(folder)
        store.write_documents([Document(id="late", content="late", embedding=[0.0, 1.0, 0.0, 0.0])])
        store.close()
        garble_second_wal_entry(folder)
        log = read_wal(str(folder))
        assert log.unreadable >= 1 and log.damaged_segments == ("open-1",)
        store = _store(folder)
        assert store.verify()["wal_unreadable"] == log.unreadable
        store.close()

    def test_a_torn_last_write_is_not_damage(self, tmp_path):
        folder = _filled(tmp_path / "edge")
        segment = folder / "wal" / "open-1"
        data = bytearray(segment.read_bytes())
        offset, last = 8, 8
        while (length := struct.unpack_from("<Q", data, offset)[0]) != 0:
            last, offset = offset, offset + 8 + length + ((4 - length) & 7) + 4
        data[last + 9] ^= 0xFF
        segment.write_bytes(bytes(data))
        assert read_wal(str(folder)).unreadable == 0
