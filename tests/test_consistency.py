"""`needle.lifecycle.consistency`: the chunk store, the file store and the stat record compared, file by file.

Real Qdrant Edge stores with tiny vectors and a real SQLite record; no models.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from haystack import Document

from haystack_integrations.document_stores.needle.edge.document_store import EdgeDocumentStore
from needle.core.file_records import UNREAD, FileRecords, FileStat
from needle.lifecycle import consistency

STAT = FileStat(10, 1, 1, 1)


def _chunk(collection: str, path: str, index: int) -> Document:
    meta = {"collection": collection, "path": path, "source_doc_id": f"{collection}:{path}", "chunk_index": index}
    return Document(
        id=f"{collection}:{path}#{index}", content=f"chunk {index}", embedding=[1.0, 0.0, 0.0, float(index)], meta=meta
    )


def _file(collection: str, path: str) -> Document:
    meta = {"collection": collection, "path": path, "source_doc_id": f"{collection}:{path}", "kind": "file"}
    return Document(id=f"file {collection}:{path}", content="whole", embedding=[0.0, 1.0, 0.0, 0.0], meta=meta)


@pytest.fixture
def index(tmp_path: Path):
    """(chunk store, file store, record, notes folder) for a collection `notes`, closed afterwards."""
    notes = tmp_path / "notes"
    notes.mkdir()
    chunks = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4, use_sparse_embeddings=False)
    files = EdgeDocumentStore(path=str(tmp_path / "edge_files"), embedding_dim=4, use_sparse_embeddings=False)
    records = FileRecords(tmp_path / "files.sqlite")
    yield chunks, files, records, notes
    chunks.close()
    files.close()


def _indexed(index, path: str, chunks: int, text: str = "# A note\n\nwith a body\n") -> None:
    chunk_store, file_store, records, notes = index
    (notes / path).write_text(text, encoding="utf-8")
    chunk_store.write_documents([_chunk("notes", path, i) for i in range(chunks)])
    file_store.write_documents([_file("notes", path)])
    records.put([("notes", path, STAT, "checksum")])


def _compare(index) -> consistency.Findings:
    chunk_store, file_store, records, notes = index
    return consistency.compare(chunk_store, file_store, records, {"notes": str(notes)})


class TestCompare:
    def test_a_consistent_index_has_nothing_lost_or_orphaned(self, index):
        _indexed(index, "a.md", 3)
        _indexed(index, "b.md", 1)
        assert _compare(index) == consistency.Findings()

    def test_a_gap_in_a_files_chunks_is_loss(self, index):
        _indexed(index, "a.md", 3)
        index[0].delete_documents(["notes:a.md#1"])
        assert _compare(index).lost == {"notes:a.md": "1 of its chunks missing"}

    def test_a_file_with_no_chunk_left_or_no_whole_file_document_is_loss(self, index):
        _indexed(index, "a.md", 2)
        _indexed(index, "b.md", 2)
        index[0].delete_documents(["notes:a.md#0", "notes:a.md#1"])
        index[1].delete_documents(["file notes:b.md"])
        lost = _compare(index).lost
        assert lost == {"notes:a.md": "all its chunks missing", "notes:b.md": "its whole-file document missing"}

    def test_a_frontmatter_only_note_without_chunks_is_not_loss_but_a_note_with_a_body_is(self, index):
        _, _, records, notes = index
        (notes / "empty.md").write_text("---\ntitle: only frontmatter\n---\n\n", encoding="utf-8")
        (notes / "body.md").write_text("---\ntitle: t\n---\nA body.\n", encoding="utf-8")
        records.put([("notes", "empty.md", STAT, "x"), ("notes", "body.md", STAT, "y")])
        assert _compare(index).lost == {"notes:body.md": "none of its chunks nor its whole-file document in the index"}

    def test_a_file_seen_but_not_read_keeps_what_the_index_had(self, index):
        _indexed(index, "a.md", 2)
        index[2].put([("notes", "a.md", UNREAD, None)])
        index[0].delete_documents(["notes:a.md#0"])
        assert _compare(index) == consistency.Findings()

    def test_data_of_a_file_neither_recorded_nor_on_disk_is_orphaned(self, index):
        _indexed(index, "gone.md", 2)
        _indexed(index, "unrecorded.md", 1)
        _, _, records, notes = index
        (notes / "gone.md").unlink()
        records.forget([("notes", "gone.md"), ("notes", "unrecorded.md")])
        found = _compare(index)
        assert list(found.orphaned) == ["notes:gone.md"] and found.lost == {}  # on disk: the next run reads it

    def test_forget_makes_the_next_run_read_lost_files_and_compare_orphans_in_full(self, index):
        _indexed(index, "a.md", 2)
        _indexed(index, "gone.md", 1)
        _, _, records, notes = index
        records.mark_listed(["notes"])
        index[0].delete_documents(["notes:a.md#0", "notes:a.md#1"])
        (notes / "gone.md").unlink()
        records.forget([("notes", "gone.md")])
        consistency.forget(_compare(index), records)
        assert "a.md" not in records.load("notes") and not records.listed("notes")


def test_a_write_the_os_refuses_for_lack_of_space_is_one_line_naming_the_folder(tmp_path):
    import errno

    from needle.commands.failures import classify

    failure = classify(OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "index" / "needle_index.json")))
    assert failure.exit_code == 1 and failure.http_status == 507
    assert failure.message.startswith(f"no space left on {tmp_path / 'index'} (") and "\n" not in failure.message
