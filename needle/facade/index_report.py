"""An index run's report, added up over its batches from the ingest graph's named outputs, and the problems it keeps for `status`."""

from __future__ import annotations

from typing import Any

from needle.core.file_records import FileRecords, split_key
from needle.core.index_results import FileNote, IndexReport


class RunTally:
    """An index run's counts, added up over its batches from the ingest graph's named outputs; `report()` shapes them."""

    def __init__(self, collections: list[str]) -> None:
        self.collections = collections
        self.first: dict[str, Any] | None = None
        self.batches = 0
        self.totals: dict[str, int] = {}
        self.skipped: list[dict[str, Any]] = []
        self.warnings: list[dict[str, Any]] = []
        self.documents: dict[str, Any] = {}
        # Files the first batch found to read (a run of several batches), those no batch has handed on yet, and
        # at the end those that vanished (never handed on) or appeared (handed on, unknown to the first batch).
        self.expected: frozenset[str] = frozenset()
        self.unread: set[str] = set()
        self.vanished = 0
        self.appeared = 0

    def _count(self, key: str, value: int) -> None:
        self.totals[key] = self.totals.get(key, 0) + int(value)

    def add(self, output: dict[str, Any]) -> None:
        """Add one batch's outputs (the ingest graph's contract names, `pipelines/ingest.yml`)."""
        sources = output.get("sources") or []
        if self.first is None:
            self.first = output
            self.skipped.extend(output["scan_skipped"])
            self.expected = frozenset(output.get("pending") or [])
            self.unread = set(self.expected)
        elif self.expected:
            keys = {f"{s['collection']}:{s['path']}" for s in sources}
            self.appeared += len(keys - self.expected)
        self.batches += 1
        self.unread.difference_update(f"{s['collection']}:{s['path']}" for s in sources)
        if output.get("next") is None:
            self.vanished = len(self.unread)
        converted_documents = output.get("converted_documents") or []
        converted_skipped = output.get("converted_skipped") or []
        unchunked = output.get("chunk_skipped") or []
        stats = output["diff_stats"]
        for key in ("files_new", "files_changed", "files_unchanged", "files_removed"):
            self._count(key, stats[key])
        self._count("files_read", len(output["read_documents"]) + len(converted_documents) - len(unchunked))
        self._count("files_unread", len(output["read_skipped"]) + len(converted_skipped) + len(unchunked))
        self._count("chunks", stats["chunks_total"])
        reused = len(output.get("chunks_reused") or [])
        file_reused = len(output.get("files_reused") or [])
        self._count("chunks_written", output["chunks_written"])
        self._count("chunks_reused", reused)
        self._count("chunks_embedded", output["chunks_written"] - reused)
        self._count("files_embedded", output["file_points_written"] - file_reused)
        self._count("files_reused", file_reused)
        pooled = len(output.get("files_pooled") or [])
        self._count("files_pooled", pooled)
        self._count(
            "texts_embedded",
            len(output.get("chunks_to_embed") or []) + len(output.get("files_to_embed") or []) - pooled,
        )
        self._count("chunks_deleted", output["chunks_deleted"])
        self._count("file_points_deleted", output["file_points_deleted"])
        self.skipped.extend(output["read_skipped"] + converted_skipped + unchunked)
        self.warnings.extend(
            (output.get("read_warnings") or [])
            + (output.get("converted_warnings") or [])
            + (output.get("chunk_warnings") or [])
        )
        for key, value in (output.get("converted_stats") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.documents[key] = self.documents.get(key, 0) + value
            else:
                self.documents.setdefault(key, value)

    @property
    def changed(self) -> bool:
        """Whether any batch wrote or deleted anything."""
        return any(
            self.totals.get(k)
            for k in ("chunks_written", "chunks_deleted", "files_embedded", "files_reused", "file_points_deleted")
        )

    def report(self, seconds: float) -> IndexReport:
        """The report so far."""
        counts = (self.first or {}).get("counts", {})
        totals = self.totals
        by_stat = int(counts.get("files_skipped_by_stat", 0))
        return IndexReport(
            collections=self.collections,
            files_seen=int(counts.get("files_found", 0)) + self.appeared,
            files_read=totals.get("files_read", 0),
            files_skipped_by_stat=by_stat,
            files_not_read=totals.get("files_unread", 0),
            files_vanished=self.vanished,
            files_pending=int(counts.get("files_pending", 0)),
            files_new=totals.get("files_new", 0),
            files_changed=totals.get("files_changed", 0),
            files_unchanged=totals.get("files_unchanged", 0) + by_stat,
            files_removed=totals.get("files_removed", 0),
            skipped=[FileNote.model_validate(item) for item in self.skipped],
            warnings=[FileNote.model_validate(item) for item in self.warnings],
            documents=dict(self.documents),
            chunks=totals.get("chunks", 0),
            chunks_embedded=totals.get("chunks_embedded", 0),
            chunks_reused=totals.get("chunks_reused", 0),
            chunks_deleted=totals.get("chunks_deleted", 0),
            files_embedded=totals.get("files_embedded", 0),
            files_pooled=totals.get("files_pooled", 0),
            files_reused=totals.get("files_reused", 0),
            file_points_deleted=totals.get("file_points_deleted", 0),
            deleted=totals.get("chunks_deleted", 0) + totals.get("file_points_deleted", 0),
            texts_embedded=totals.get("texts_embedded", 0),
            batches=self.batches,
            seconds=round(seconds, 2),
        )


def note_problems(records: FileRecords, output: dict[str, Any], listed: list[str]) -> None:
    """
    Keep, for `status`, why the files of a batch were skipped or indexed with a problem (their earlier
    problems forgotten), and, given the collections a full run listed, what their listing left out.

    :param output: A batch's outputs by the ingest graph's contract names.
    """
    handled = [(s["collection"], s["path"]) for s in output.get("sources") or []]
    handled += [split_key(key) for key in output.get("gone") or []]
    found = [
        (item.get("collection", ""), item.get("path", ""), kind, str(item.get("reason", "")))
        for step in ("read", "converted", "chunk")
        for kind, socket in (("skipped", "skipped"), ("warning", "warnings"))
        for item in output.get(f"{step}_{socket}") or []
    ]
    if listed:
        found += [(i["collection"], i["path"], "listed", str(i["reason"])) for i in output["scan_skipped"]]
    records.note_problems(handled, found, listed)
