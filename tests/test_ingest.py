"""The ingestion graph end to end: real models, a real embedded Qdrant in a temporary folder."""

import copy
import os
from pathlib import Path
from typing import ClassVar

import pytest

from needle.core.requests import CollectionRemoveRequest, IndexRequest, SearchRequest
from needle.facade.api import Needle
from needle.lifecycle import provenance as index_info
from needle.runtime.loader import apply_overrides
from tests.components.test_markdown_chunker import ALIAS_BOMB

pytestmark = pytest.mark.integration

NOTE_A = """---
title: Replication
tags: [postgres, ops]
---
# Logical replication

## Slots

A replication slot keeps WAL until the subscriber confirms it. Watch `pg_replication_slots` for lag.

## Publications

Create a publication per table group.
"""
NOTE_B = "# Sourdough\n\nFeed the starter twice a day with equal weights of flour and water.\n"
NOTE_C = "Plain text note about marathon training: long runs on Sunday, intervals on Tuesday.\n"


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "replication.md").write_text(NOTE_A)
    (root / "sourdough.md").write_text(NOTE_B)
    (root / "training.txt").write_text(NOTE_C)
    return root


@pytest.fixture
def needle(settings, notes) -> Needle:
    n = Needle(settings)
    n.collections.add(notes, "notes")
    return n


def indexed(needle: Needle, files: bool = False) -> dict[str, set[str]]:
    store = needle.file_store if files else needle.store
    rows = store.list_documents_meta(fields=["path"])
    out: dict[str, set[str]] = {}
    for row in rows:
        out.setdefault(row["meta"]["path"], set()).add(row["id"])
    return out


class TestIngest:
    def test_first_run_indexes_every_file(self, needle):
        report = needle.index(IndexRequest())
        assert report.files_seen == 3 and report.files_new == 3
        assert report.chunks_embedded == report.chunks > 0
        assert set(indexed(needle)) == {"ops/replication.md", "sourdough.md", "training.txt"}
        assert report.files_embedded == 3
        assert {path: len(ids) for path, ids in indexed(needle, files=True).items()} == {
            "ops/replication.md": 1,
            "sourdough.md": 1,
            "training.txt": 1,
        }

    def test_whole_file_documents_span_the_body_with_its_lines(self, needle, notes):
        needle.index(IndexRequest())
        (doc,) = needle.file_store.filter_documents(
            {"field": "meta.path", "operator": "==", "value": "ops/replication.md"}
        )
        lines = (notes / "ops" / "replication.md").read_text().split("\n")
        assert doc.meta["kind"] == "file" and doc.meta["title"] == "Replication"
        assert doc.meta["tags"] == ["postgres", "ops"] and doc.meta["heading_path"] == []
        assert doc.meta["start_line"] == 5  # the frontmatter is left out
        assert doc.content.split("\n") == lines[doc.meta["start_line"] - 1 : doc.meta["end_line"]]
        assert doc.embedding is not None and doc.sparse_embedding is not None

    def test_reindexing_an_unchanged_folder_changes_nothing(self, needle):
        needle.index(IndexRequest())
        before = indexed(needle)
        report = needle.index(IndexRequest())
        assert report.chunks_embedded == 0 and report.chunks_deleted == 0
        assert report.files_unchanged == 3 and report.files_embedded == 0
        assert indexed(needle) == before

    def test_a_run_with_nothing_to_embed_loads_no_embedding_model(self, needle, settings):
        needle.index(IndexRequest())
        needle.close()
        again = Needle(settings)
        try:
            assert again.index(IndexRequest()).files_unchanged == 3
            graph = again.pipeline("ingest")
            assert graph.get_component("dense_embedder").embedder.embedding_backend is None
            assert graph.get_component("sparse_embedder").embedding_backend is None
        finally:
            again.close()

    def test_warming_the_ingest_graph_loads_its_models(self, needle):
        graph = needle.warm("ingest")
        assert graph.get_component("dense_embedder").embedder.embedding_backend is not None
        assert graph.get_component("sparse_embedder").embedding_backend is not None

    def test_an_edit_re_embeds_only_that_file(self, needle, notes):
        needle.index(IndexRequest())
        before = indexed(needle)
        (notes / "sourdough.md").write_text(NOTE_B + "\nIn summer, feed it three times.\n")
        report = needle.index(IndexRequest())
        after = indexed(needle)
        assert report.files_changed == 1 and report.files_unchanged == 2
        assert after["ops/replication.md"] == before["ops/replication.md"]
        assert after["sourdough.md"] != before["sourdough.md"]
        assert report.chunks_embedded == len(after["sourdough.md"] - before["sourdough.md"])
        assert report.files_embedded == 1
        assert {path: len(ids) for path, ids in indexed(needle, files=True).items()}["sourdough.md"] == 1

    def test_a_frontmatter_edit_or_a_touch_refreshes_the_metadata_without_embedding(self, needle, notes):
        needle.index(IndexRequest())
        before = indexed(needle)
        (notes / "ops" / "replication.md").write_text(
            NOTE_A.replace("tags: [postgres, ops]", "tags: [postgres, kestrel]\nstatus: done")
        )
        os.utime(notes / "sourdough.md", (1_700_000_000, 1_700_000_000))
        report = needle.index(IndexRequest())
        assert report.chunks_embedded == 0 and report.files_embedded == 0 and indexed(needle) == before
        for store in (needle.store, needle.file_store):
            rows = {
                r["meta"]["path"]: r["meta"]
                for r in store.list_documents_meta(fields=["path", "tags", "frontmatter", "date"])
            }
            assert rows["ops/replication.md"]["tags"] == ["postgres", "kestrel"]
            assert rows["ops/replication.md"]["frontmatter"]["status"] == "done"
            assert rows["sourdough.md"]["date"] == "2023-11-14T22:13:20Z"
        tagged = needle.search(
            SearchRequest(query="replication slot", tags=["kestrel"], where=["status=done"]), pipeline="search"
        )
        assert [h.path for h in tagged.results] == ["ops/replication.md"]

    def test_a_note_with_an_alias_bomb_is_indexed_without_its_frontmatter(self, needle, notes):
        bomb = ALIAS_BOMB.replace("The body is still indexed.", "The bomb's body about zebras is still indexed.")
        (notes / "bomb.md").write_text(bomb)
        report = needle.index(IndexRequest())
        assert {
            "collection": "notes",
            "path": "bomb.md",
            "reason": "frontmatter left out: over 10000 values once its aliases are expanded",
        } in [w.model_dump() for w in report.warnings]
        assert [h.path for h in needle.search(SearchRequest(query="zebras"), pipeline="search").results] == ["bomb.md"]

    def test_a_removed_file_leaves_the_index(self, needle, notes):
        needle.index(IndexRequest())
        (notes / "training.txt").unlink()
        report = needle.index(IndexRequest())
        assert report.files_removed == 1
        assert "training.txt" not in indexed(needle)
        assert "training.txt" not in indexed(needle, files=True)

    def test_an_unreadable_file_keeps_what_the_index_has(self, needle, notes, monkeypatch):
        needle.index(IndexRequest())
        before = indexed(needle)["sourdough.md"]
        from haystack_integrations.components.converters.needle import markdown_file_reader

        real_open = open

        def failing_open(path, *args, **kwargs):
            if str(path).endswith("sourdough.md"):
                raise PermissionError("denied")
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(markdown_file_reader, "open", failing_open, raising=False)
        monkeypatch.setattr("builtins.open", failing_open)
        os.utime(notes / "sourdough.md", (1_700_000_000, 1_700_000_000))  # its stat changed: it is read again
        report = needle.index(IndexRequest())
        monkeypatch.undo()
        assert any(s.path == "sourdough.md" for s in report.skipped)
        assert indexed(needle)["sourdough.md"] == before

    def test_chunk_lines_match_the_file_on_disk(self, needle, notes):
        needle.index(IndexRequest())
        docs = needle.store.filter_documents({"field": "meta.path", "operator": "==", "value": "ops/replication.md"})
        lines = (notes / "ops" / "replication.md").read_text().split("\n")
        assert docs
        for doc in docs:
            on_disk = "\n".join(lines[doc.meta["start_line"] - 1 : doc.meta["end_line"]])
            assert doc.content.strip() == on_disk.strip()
        slot = next(d for d in docs if "replication slot" in d.content)
        assert slot.meta["heading_path"][-1] == "Slots"
        assert slot.meta["title"] == "Replication"
        assert slot.meta["tags"] == ["postgres", "ops"]
        assert slot.meta["source_doc_id"] == "notes:ops/replication.md"

    def test_bad_input_is_skipped_with_reasons_and_the_rest_indexed(self, needle, notes):
        (notes / "binary.md").write_bytes(b"\x00\x01\x02PNG\x00" * 100)
        (notes / "latin1.md").write_bytes("# Café\n\nna\xefve text\n".encode("latin-1"))
        (notes / "empty.md").write_text("")
        with open(notes / "huge.md", "wb") as handle:
            handle.truncate(50 * 1024 * 1024)
        loop = notes / "loop"
        loop.mkdir()
        os.symlink(loop, loop / "again")
        report = needle.index(IndexRequest())
        reasons = {s.path: s.reason for s in report.skipped}
        assert "binary.md" in reasons and "huge.md" in reasons and "empty.md" in reasons
        assert any(w.path == "latin1.md" for w in report.warnings)
        assert {"ops/replication.md", "sourdough.md", "training.txt", "latin1.md"} <= set(indexed(needle))

    def test_index_records_and_enforces_its_model(self, needle, settings):
        needle.index(IndexRequest())
        recorded = index_info.read(settings)["fingerprint"]
        assert recorded["embedding_model"] == settings.embedding.model
        assert recorded["query_prefix"] == "" and recorded["embedding_dim"] == 384
        other = settings.model_copy(
            update={"embedding": settings.embedding.model_copy(update={"query_prefix": "query: "})}
        )
        with pytest.raises(index_info.IndexMismatchError, match="needle index --rebuild"):
            index_info.check(other, needle.ingest_graph())

    def test_fingerprint_tells_pooled_file_vectors_from_embedded_ones(self, needle, settings):
        needle.index(IndexRequest())
        assert index_info.read(settings)["fingerprint"]["file_vectors"] == "pooled"
        rewired = copy.deepcopy(needle.ingest_graph())
        del rewired["components"]["file_pool"]
        assert index_info.fingerprint(settings, rewired)["file_vectors"] == "embedded"
        index_info.check(settings, rewired)  # the next run embeds new files' texts: no rebuild needed

    def test_new_chunking_needs_no_rebuild_and_reembeds_only_changed_chunks(self, needle, settings, notes):
        paragraph = "Checkpoints flush dirty pages to disk and bound the time that crash recovery takes. " * 3
        (notes / "ops" / "checkpoints.md").write_text("# Checkpoints\n\n" + "\n\n".join([paragraph] * 6) + "\n")
        first = needle.index(IndexRequest())
        smaller = {"chunker.target_chars": 400, "chunker.min_chars": 50}
        resized = apply_overrides(copy.deepcopy(needle.ingest_graph()), smaller)
        index_info.check(settings, resized)  # searching the old chunks is fine until the next run
        report = needle.index(IndexRequest(set=smaller))
        assert index_info.read(settings)["fingerprint"]["chunking"]["target_chars"] == 400
        assert report.chunks > first.chunks  # smaller chunks, more of them
        assert 0 < report.chunks_embedded < report.chunks  # chunks already that small keep their vectors
        assert report.chunks_deleted > 0 and needle.store.count_documents() == report.chunks
        assert needle.index(IndexRequest(set=smaller)).chunks_embedded == 0

    def test_removing_a_collection_deletes_its_chunks(self, needle):
        needle.index(IndexRequest())
        assert needle.remove_collection(CollectionRemoveRequest(name="notes")) > 0
        assert indexed(needle) == {} and indexed(needle, files=True) == {}

    def test_every_graph_shares_the_needles_one_store_object_per_folder(self, needle):
        needle.index(IndexRequest())
        ingest = needle.pipeline("ingest")
        from haystack_integrations.document_stores.needle import searchable

        for name in ("differ", "writer"):
            assert searchable(ingest.get_component(name).document_store) is needle.store
        for name in ("file_differ", "file_writer"):
            assert searchable(ingest.get_component(name).document_store) is needle.file_store
        ranker = needle.pipeline("query").get_component("rerank").ranker  # a component wrapped by another
        assert searchable(ranker.document_store) is needle.store
        assert searchable(ranker.file_document_store) is needle.file_store
        assert Needle(environment=needle.environment.derive(needle.settings)).store is needle.store

    def test_close_releases_both_index_folders(self, needle, settings):
        from haystack_integrations.document_stores.needle import EdgeDocumentStore, StoreLockedError

        needle.index(IndexRequest())
        folders = [str(settings.index_dir / "edge"), str(settings.index_dir / "edge_files")]
        for folder in folders:
            with pytest.raises(StoreLockedError, match="already open in this process"):
                EdgeDocumentStore(path=folder, embedding_dim=384).count_documents()
        needle.close()
        for folder in folders:
            other = EdgeDocumentStore(path=folder, embedding_dim=384)
            assert other.count_documents() > 0
            other.close()
        assert needle.store.count_documents() > 0  # a closed Needle reopens on next use


def points(needle: Needle) -> dict[str, dict[str, set[str]]]:
    """Every stored point id by path, in both stores."""
    return {"chunks": indexed(needle), "files": indexed(needle, files=True)}


class TestIncrementalIngest:
    def test_a_path_scoped_run_indexes_only_that_file_and_deletes_only_its_stale_chunks(self, needle, notes):
        needle.index(IndexRequest())
        before = points(needle)
        (notes / "sourdough.md").write_text(NOTE_B + "\nIn summer, feed it three times.\n")
        (notes / "training.txt").write_text(NOTE_C + "Taper the last two weeks.\n")
        report = needle.index(IndexRequest(paths=[str(notes / "sourdough.md")]))
        after = points(needle)
        assert (report.files_seen, report.files_read, report.files_changed) == (1, 1, 1)
        assert after["chunks"]["sourdough.md"].isdisjoint(before["chunks"]["sourdough.md"])
        assert after["files"]["sourdough.md"] != before["files"]["sourdough.md"]
        assert report.chunks_deleted == len(before["chunks"]["sourdough.md"]) and report.file_points_deleted == 1
        assert report.deleted == report.chunks_deleted + 1
        for path in ("training.txt", "ops/replication.md"):  # not named: untouched, even the edited one
            assert after["chunks"][path] == before["chunks"][path] and after["files"][path] == before["files"][path]
        assert needle.index(IndexRequest()).files_read == 1  # the full run then reads the other edited file only

    def test_a_deleted_path_takes_its_chunks_out_of_both_stores(self, needle, notes):
        needle.index(IndexRequest())
        (notes / "training.txt").unlink()
        report = needle.index(IndexRequest(paths=["training.txt"]))
        assert report.files_removed == 1 and report.files_read == 0
        assert "training.txt" not in indexed(needle) and "training.txt" not in indexed(needle, files=True)
        assert set(indexed(needle)) == {"ops/replication.md", "sourdough.md"}
        assert needle.index(IndexRequest()).files_removed == 0  # the record forgot it too

    def test_a_path_in_no_collection_is_refused_and_changes_nothing(self, needle, notes, tmp_path):
        needle.index(IndexRequest())
        before = points(needle)
        outside = tmp_path / "elsewhere.md"
        outside.write_text("# Elsewhere\n")
        with pytest.raises(ValueError, match="is in no collection being indexed"):
            needle.index(IndexRequest(paths=[str(outside)]))
        with pytest.raises(ValueError, match="paths must hold 1 to 1000 items, got 0"):
            needle.index(IndexRequest(paths=[]))
        assert points(needle) == before

    def test_a_file_whose_stat_matches_the_record_is_not_read(self, needle, notes):
        first = needle.index(IndexRequest())
        assert first.files_read == 3 and first.files_skipped_by_stat == 0
        again = needle.index(IndexRequest())
        assert (again.files_read, again.files_skipped_by_stat, again.texts_embedded) == (0, 3, 0)
        assert again.files_unchanged == 3

    def test_a_touched_file_is_read_and_hashed_but_nothing_is_embedded(self, needle, notes):
        needle.index(IndexRequest())
        before = points(needle)
        os.utime(notes / "sourdough.md", (1_700_000_000, 1_700_000_000))
        report = needle.index(IndexRequest())
        assert (report.files_read, report.files_skipped_by_stat) == (1, 2)
        assert report.texts_embedded == 0 and report.deleted == 0 and points(needle) == before
        assert needle.index(IndexRequest()).files_read == 0  # recorded with its new stat

    def test_a_deleted_record_is_rebuilt_by_reading_everything_once(self, needle, settings):
        needle.index(IndexRequest())
        (settings.index_dir / "files.sqlite").unlink()
        report = needle.index(IndexRequest())
        assert report.files_read == 3 and report.texts_embedded == 0
        assert needle.index(IndexRequest()).files_read == 0

    def test_a_renamed_file_reuses_its_vectors(self, needle, notes):
        needle.index(IndexRequest())
        old = needle.store.filter_documents({"field": "meta.path", "operator": "==", "value": "ops/replication.md"})
        (notes / "archive").mkdir()
        (notes / "ops" / "replication.md").rename(notes / "archive" / "replication.md")
        report = needle.index(IndexRequest())
        assert report.texts_embedded == 0 and report.chunks_reused == len(old) > 0
        assert report.files_reused == 1 and report.files_removed == 1
        assert report.deleted == len(old) + 1
        moved = needle.store.filter_documents(
            {"field": "meta.path", "operator": "==", "value": "archive/replication.md"}
        )
        vectors = {d.meta["content_checksum"]: d.embedding for d in moved}
        assert sorted(vectors) == sorted(d.meta["content_checksum"] for d in old)
        for doc in old:
            assert vectors[doc.meta["content_checksum"]] == pytest.approx(doc.embedding)
        assert "ops/replication.md" not in indexed(needle) and "ops/replication.md" not in indexed(needle, files=True)
        assert (
            needle.search(SearchRequest(query="replication slot keeps WAL")).results[0].path == "archive/replication.md"
        )

    def test_a_section_moved_within_a_file_is_not_embedded_again(self, needle, notes):
        first = "## Boilers\n\n" + "The boiler heats water for the radiators and keeps the pressure steady. " * 8
        second = (
            "## Gutters\n\n" + "Clear the gutters in autumn so that rain runs off instead of soaking the walls. " * 8
        )
        third = "## Locks\n\n" + "Oil the door locks once a year with graphite, never with a greasy oil. " * 8
        (notes / "house.md").write_text(f"# House\n\n{first}\n\n{second}\n\n{third}\n")
        needle.index(IndexRequest())
        (notes / "house.md").write_text(f"# House\n\n{first}\n\n{third}\n\n{second}\n")
        report = needle.index(IndexRequest())
        assert report.files_changed == 1 and report.chunks_reused == 2
        # The whole file's text changed, its chunks' texts did not: its vector is pooled from theirs.
        assert report.texts_embedded == 0 and report.files_pooled == 1

    def test_batches_write_as_they_go_and_report_them(self, needle, notes):
        for i in range(7):
            (notes / f"extra-{i}.md").write_text(f"# Extra {i}\n\nA short extra note number {i} about gardening.\n")
        seen = []
        report = needle.index(IndexRequest(set={"scanner.batch_files": 4}), lambda r: seen.append(r.batches))
        assert report.batches == 3 and seen == [1, 2, 3]
        assert report.files_read == 10 and len(indexed(needle)) == 10 and len(indexed(needle, files=True)) == 10
        assert needle.store.count_documents() == report.chunks


KILLED_NOTES = 60


def test_a_killed_run_keeps_its_finished_batches_and_the_next_run_converges(settings, tmp_path):
    """`needle index` killed (SIGKILL) after its first batch is recorded; the rerun finishes the job."""
    import signal
    import subprocess
    import sys
    import time

    from needle.core.file_records import FileRecords

    root = tmp_path / "many"
    root.mkdir()
    for i in range(KILLED_NOTES):
        (root / f"note-{i:03d}.md").write_text(
            f"# Note {i}\n\nNote {i} talks about subject {i * 37 % 101} and nothing else.\n"
        )
    needle = Needle(settings)
    needle.collections.add(root, "many")
    env = {**os.environ, "NEEDLE_DATA_DIR": str(settings.data_dir), "NEEDLE_MODEL_DIR": str(settings.model_dir)}
    process = subprocess.Popen(
        [sys.executable, "-m", "needle.shells.cli", "index", "--set", "scanner.batch_files=5"],
        env=env,
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    records = FileRecords(settings.index_dir / "files.sqlite")
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if records.count() >= 5:
                    break
            except Exception:  # the record is being created
                pass
            time.sleep(0.02)
        assert process.poll() is None, "the run ended before it could be killed"
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    killed_at = records.count()
    assert 5 <= killed_at < KILLED_NOTES

    report = needle.index(IndexRequest(set={"scanner.batch_files": 5}))
    assert report.files_skipped_by_stat >= killed_at
    assert report.texts_embedded < 2 * KILLED_NOTES  # a full run embeds a chunk and a whole file per note
    ids = [row["id"] for row in needle.store.list_documents_meta(fields=["path"])]
    assert len(ids) == len(set(ids)) == KILLED_NOTES  # one chunk per note, none twice
    assert {row["meta"]["path"] for row in needle.file_store.list_documents_meta(fields=["path"])} == {
        f"note-{i:03d}.md" for i in range(KILLED_NOTES)
    }
    assert needle.index(IndexRequest()).files_read == 0 and records.count() == KILLED_NOTES


class TestDocumentsIngest:
    """A folder of markdown, PDF, DOCX and HTML indexes in one run; results are anchored by page and section."""

    @pytest.fixture
    def mixed(self, notes: Path) -> Path:
        from needle.evaluation import sample_documents as make

        make.write(
            notes / "papers" / "raft.pdf",
            make.pdf_bytes(
                [
                    "# Raft consensus\n\nA cluster of five servers tolerates two failures.",
                    "## Leader election\n\nA follower that hears no heartbeat within the election timeout becomes a "
                    "candidate, votes for itself and asks the others for their votes.",
                ],
                title="Raft consensus",
            ),
        )
        make.write(
            notes / "specs" / "deploy.docx",
            make.docx_bytes(
                "# Deploy spec\n\nHow the billing service ships.\n\n## Canary rollout\n\nFive percent of the traffic "
                "goes to the canary for one hour before the fleet is upgraded."
            ),
        )
        make.write(
            notes / "saved" / "stampede.html",
            make.html_bytes(
                "# Cache stampede\n\nWhen a hot key expired, every worker recomputed it at once.\n\n## Request "
                "coalescing\n\nOne worker recomputes the value while the others wait for its result."
            ),
        )
        make.write(notes / "papers" / "scan.pdf", make.scanned_pdf_bytes())
        make.write(notes / "specs" / "locked.pdf", make.pdf_bytes(["secret"], user_password="pw"))
        return notes

    @pytest.fixture
    def docs_needle(self, settings, mixed) -> Needle:
        from needle.core.file_formats import DOCUMENT_INCLUDE
        from needle.core.globs import DEFAULT_INCLUDE

        n = Needle(settings)
        n.collections.add(mixed, "notes", include=[*DEFAULT_INCLUDE, *DOCUMENT_INCLUDE])
        return n

    def test_mixed_folder_indexes_in_one_run_and_reports_bad_documents(self, docs_needle):
        report = docs_needle.index(IndexRequest())
        assert report.files_read == 6 and report.files_new == 6
        assert {s.path: s.reason.split(":")[0] for s in report.skipped} == {
            "papers/scan.pdf": "no text layer (a scanned PDF? OCR is not supported)",
            "specs/locked.pdf": "encrypted PDF",
        }
        assert set(report.documents) == {"pdf", "docx", "html"} and report.documents["pdf"]["pages"] == 2
        assert {"papers/scan.pdf", "specs/locked.pdf"}.isdisjoint(indexed(docs_needle))
        again = docs_needle.index(IndexRequest())
        assert (again.chunks_embedded, again.files_embedded, again.files_unchanged) == (0, 0, 6)

    def test_search_returns_page_and_section_anchored_results(self, docs_needle):
        docs_needle.index(IndexRequest())
        for mode in ("search", "vsearch", "query"):
            top = docs_needle.search(
                SearchRequest(query="follower election timeout heartbeat candidate", limit=3), pipeline=mode
            ).results[0]
            assert (top.path, top.format, top.page) == ("papers/raft.pdf", "pdf", 2), mode
            assert top.snippet.startswith("@@ page 2 -1,")
        top = docs_needle.search(SearchRequest(query="canary rollout five percent of the traffic", limit=3)).results[0]
        assert (top.path, top.heading_path, top.anchor) == (
            "specs/deploy.docx",
            ["Deploy spec", "Canary rollout"],
            "notes/specs/deploy.docx#section=Deploy spec › Canary rollout",
        )
        assert top.snippet.startswith('@@ section "Deploy spec › Canary rollout" -')
        assert "Five percent" in docs_needle.files.read(top.anchor.split("#")[0] + "#section=Canary rollout").text
        top = docs_needle.search(SearchRequest(query="one worker recomputes while others wait", limit=3)).results[0]
        assert (top.path, top.format) == ("saved/stampede.html", "html") and "coalescing" in top.anchor

    def test_an_anchor_reads_back_the_chunks_place(self, docs_needle):
        from needle.core.files.references import parse_ref

        docs_needle.index(IndexRequest())
        hit = docs_needle.search(SearchRequest(query="follower election timeout heartbeat candidate", limit=1)).results[
            0
        ]
        ref, line, count = parse_ref(hit.anchor)
        assert docs_needle.files.read(ref, line, count).text == hit.text
        note = docs_needle.search(SearchRequest(query="starter flour water", limit=1)).results[0]
        ref, line, count = parse_ref(note.anchor)
        assert (note.format, docs_needle.files.read(ref, line, count).text) == ("markdown", note.text)

    def test_an_edited_document_re_embeds_only_its_changed_chunks(self, docs_needle, mixed):
        from needle.evaluation import sample_documents as make

        docs_needle.index(IndexRequest())
        make.write(
            mixed / "papers" / "raft.pdf",
            make.pdf_bytes(
                [
                    "# Raft consensus\n\nA cluster of five servers tolerates two failures.",
                    "## Log replication\n\nThe leader appends entries and waits for a majority.",
                ],
                title="Raft consensus",
            ),
        )
        report = docs_needle.index(IndexRequest())
        assert report.files_changed == 1 and report.chunks_embedded == 1


class TestEveryFileAccountedFor:
    def test_files_that_vanish_between_batches_are_counted_as_such(self, needle, notes):
        def delete_the_rest(report):
            if report.batches == 1:
                (notes / "sourdough.md").unlink()
                (notes / "training.txt").unlink()

        report = needle.index(IndexRequest(set={"scanner.batch_files": 1}), delete_the_rest)
        assert (report.files_seen, report.files_read, report.files_not_read, report.files_vanished) == (
            3,
            1,
            0,
            2,
        )
        assert report.files_seen == (
            report.files_read + report.files_skipped_by_stat + report.files_not_read + report.files_vanished
        )

    def test_files_that_appear_between_batches_are_seen_and_read(self, needle, notes):
        def add_one(report):
            if report.batches == 1:
                (notes / "zebra.md").write_text("# Zebra\n\nStripes.\n")

        report = needle.index(IndexRequest(set={"scanner.batch_files": 1}), add_one)
        assert (report.files_seen, report.files_read, report.files_vanished) == (4, 4, 0)


class TestBadValues:
    BAD: ClassVar[dict[str, str]] = {
        "bad-date.md": "date: 2024-13-45",
        "prio.md": "prio: !!int high",
        "digits.md": "count: " + "9" * 5000,
        "clock.md": "date: 2024-01-01 25:61:61",
    }

    def test_one_bad_value_costs_its_field_and_the_run_goes_on(self, needle, notes):
        for name, line in self.BAD.items():
            (notes / name).write_text(
                f"---\ntitle: Otter {name}\n{line}\n---\n# Otters\n\nOtters hold hands while sleeping.\n"
            )
        report = needle.index(IndexRequest())
        assert report.files_read == 3 + len(self.BAD) and report.skipped == []
        warned = {w.path: w.reason for w in report.warnings}
        for name, line in self.BAD.items():
            assert warned[name].startswith(f"frontmatter field {line.split(':')[0]} left out: ")
        assert set(self.BAD) <= set(indexed(needle))

    def test_status_lists_the_files_skipped_or_with_a_problem_until_they_are_mended(self, needle, notes):
        (notes / "bad-date.md").write_text("---\ndate: 2024-13-45\n---\nOtters.\n")
        (notes / "empty.md").write_text("")
        needle.index(IndexRequest())
        problems = {(p.path, p.kind): p.reason for p in needle.status().problems}
        assert problems == {
            ("bad-date.md", "warning"): "frontmatter field date left out: month must be in 1..12",
            ("empty.md", "skipped"): "empty file",
        }
        (notes / "bad-date.md").write_text("---\ndate: 2024-12-25\n---\nOtters.\n")
        (notes / "empty.md").unlink()
        needle.index(IndexRequest())
        assert needle.status().problems == []
