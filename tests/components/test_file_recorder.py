import os

import pytest
from haystack import Document

from haystack_integrations.components.writers.needle.file_recorder import FileRecorder
from needle.core.file_records import UNREAD, FileRecords, FileStat


def stat_of(path) -> dict:
    return FileStat.of(os.stat(path)).as_dict()


def read(collection: str, path: str, checksum: str) -> Document:
    return Document(content="x", meta={"collection": collection, "path": path, "content_hash": checksum})


class TestFileRecorder:
    def test_init_defaults_and_custom(self, tmp_path):
        assert FileRecorder(records_path=None).records_path is None
        # Left out: the index's record, from Needle's settings (not written back).
        assert FileRecorder().records_path == os.path.join(os.environ["NEEDLE_DATA_DIR"], "index", "files.sqlite")
        assert FileRecorder().to_dict()["init_parameters"] == {}
        assert FileRecorder(records_path=str(tmp_path / "f.sqlite")).records_path == str(tmp_path / "f.sqlite")

    @pytest.mark.parametrize("bad", ["", "  ", 3])
    def test_bad_path_raises(self, bad):
        with pytest.raises(ValueError, match="records_path"):
            FileRecorder(records_path=bad)

    def test_to_dict_and_from_dict(self, tmp_path):
        data = FileRecorder(records_path=str(tmp_path / "f.sqlite")).to_dict()
        assert data == {
            "type": "haystack_integrations.components.writers.needle.file_recorder.FileRecorder",
            "init_parameters": {"records_path": str(tmp_path / "f.sqlite")},
        }
        assert FileRecorder.from_dict(data).records_path == str(tmp_path / "f.sqlite")

    def test_records_the_files_read_and_forgets_the_removed(self, tmp_path):
        for name in ("a.md", "b.md"):
            (tmp_path / name).write_text(name)
        db = tmp_path / "index" / "files.sqlite"
        records = FileRecords(db)
        records.put([("n", "gone.md", FileStat(1, 2, 3, 4), "old")])
        out = FileRecorder(records_path=str(db)).run(
            file_stats={"n:a.md": stat_of(tmp_path / "a.md"), "n:b.md": stat_of(tmp_path / "b.md")},
            files=[read("n", "a.md", "sum-a")],  # b.md was not read: no row
            done=[2, 1],
            gone=["n:gone.md"],
            listed=["n"],
        )
        assert out == {"recorded": 1, "forgotten": 1}
        loaded = records.load("n")
        assert set(loaded) == {"a.md", "b.md"}
        assert loaded["a.md"].checksum == "sum-a" and loaded["a.md"].stat == FileStat.of(os.stat(tmp_path / "a.md"))
        assert loaded["b.md"].stat == UNREAD and loaded["b.md"].checksum is None  # known, never matching
        assert records.listed("n") and not records.listed("other")

    def test_without_a_path_records_nothing(self, tmp_path):
        out = FileRecorder(records_path=None).run(
            file_stats={"n:a.md": {"size": 1, "mtime_ns": 2, "ctime_ns": 3, "inode": 4}},
            files=[read("n", "a.md", "s")],
            done=[1],
        )
        assert out == {"recorded": 0, "forgotten": 0}


class TestFileRecords:
    def test_a_damaged_record_is_started_afresh(self, tmp_path):
        db = tmp_path / "files.sqlite"
        db.write_bytes(b"this is not a database" * 100)
        records = FileRecords(db)
        assert records.load("n") == {}
        records.put([("n", "a.md", FileStat(1, 2, 3, 4), "sum")])
        assert records.count() == 1
