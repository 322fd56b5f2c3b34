"""What the index holds (`status`, `ls`) and reading the collections' files (`get`, `multi-get`) within the ingest graph's limits."""

from __future__ import annotations

from typing import Any

from needle.core.file_formats import Extractor, Limits
from needle.core.files.multi_get import FileAccess
from needle.core.files.reading import DEFAULT_MAX_DOCUMENT_BYTES, DEFAULT_MAX_FILE_BYTES
from needle.core.schema import FILE_ID
from needle.facade.graph_loading import INGEST, Graphs
from needle.lifecycle import provenance as index_info
from needle.runtime.contract import GraphContract

# Most skipped files `status` lists (the count says how many there are in all).
STATUS_PROBLEMS = 50


class Inventory(Graphs):
    """`status`, `indexed_files` and `files`."""

    @property
    def files(self) -> FileAccess:
        """Reading the collections' files by reference or glob (`get`, `multi_get`), within each collection's rules."""
        if self._files is None:
            # The ingest graph's own limits (its contract's `parameters`), so that `get` reads what indexing reads.
            graph = self.ingest_graph()
            contract = GraphContract.from_dict(graph, INGEST)
            limits = Limits(
                **{
                    key: contract.parameter(graph, key)
                    for key in ("max_pages", "max_unpacked_bytes", "max_seconds", "max_memory_mb")
                    if contract.parameter(graph, key) is not None
                }
            )
            self._files = FileAccess(
                self.collections,
                self._indexed_source_ids,
                contract.parameter(graph, "max_file_bytes", DEFAULT_MAX_FILE_BYTES),
                contract.parameter(graph, "max_document_bytes", DEFAULT_MAX_DOCUMENT_BYTES),
                Extractor(limits),
            )
        return self._files

    def _indexed_source_ids(self) -> list[str]:
        """
        Every indexed file's `collection:path`: one whole-file document each (chunks for an index without them).

        `get #docid` asks on every call, and listing the store grows with the index (0.25 s for 2,600 files),
        so the list is kept until the stores' counts or the provenance (rewritten by every index run) change.
        """
        recorded = index_info.read(self.settings) or {}
        version = (_changes(self.file_store), _changes(self.store), recorded.get("updated"))
        cached = self._source_ids
        if cached is not None and cached[0] == version:
            return cached[1]
        found: list[str] = []
        for store in (self.file_store, self.store):
            ids = {row["meta"].get(FILE_ID, "") for row in store.list_documents_meta(fields=[FILE_ID])}
            if ids:
                found = sorted(ids)
                break
        self._source_ids = (version, found)
        return found

    def status(self) -> dict[str, Any]:
        """
        Collections with file and chunk counts, languages, frontmatter fields and tags; the models, where the
        index lives and the context annotations.

        Its cost does not grow with the index: the counts, languages, fields and tags are what the last index
        run recorded (`needle.lifecycle.field_summary`), as that run left them; a collection without a record (an index
        run that did not finish, an index built before records) is counted by the engine's facets instead.
        """
        for store in (self.store, self.file_store):  # damage the engine aborts on is named, not read past
            store.check_unopened()
        recorded = index_info.read(self.settings)
        summaries = (recorded or {}).get("summaries") or {}
        languages = (recorded or {}).get("languages") or {}
        listed = self.collections.load()
        counted: dict[str, dict[str, int]] | None = None  # the engine's counts, when a record lacks them

        def engine_counts() -> dict[str, dict[str, int]]:
            chunks = self.store.count_values("collection")
            return {"chunks": chunks, "files": self.file_store.count_values("collection") if chunks else {}}

        collections = []
        for collection in listed.values():
            name = collection.name
            summary = summaries.get(name) or {}
            if "chunks" in summary:
                chunks, files = int(summary["chunks"]), int(summary.get("files", 0))
            else:
                counted = counted or engine_counts()
                chunks, files = counted["chunks"].get(name, 0), counted["files"].get(name, 0)
            if chunks and not files:  # an index without whole-file documents: count its files' ids
                in_collection = {"field": "meta.collection", "operator": "==", "value": name}
                files = len(self.store.count_values(FILE_ID, in_collection))
            collections.append(
                {
                    "name": name,
                    "root": collection.root,
                    "files": files,
                    "chunks": chunks,
                    "languages": sorted(languages.get(name) or []),
                    "fields": summary.get("fields", {}),
                    "tags": summary.get("tags", []),
                }
            )
        if counted is not None:
            orphaned = {name: count for name, count in counted["chunks"].items() if name not in listed}
        else:
            orphaned = {
                name: int(s.get("chunks", 0)) for name, s in summaries.items() if name not in listed and s.get("chunks")
            }
        problems, problems_total = self.records.problems(limit=STATUS_PROBLEMS)
        return {
            "collections": collections,
            # Chunks of collections no longer listed: the next `needle index` (or `collection remove`) drops them.
            "orphaned": orphaned,
            "embedding_model": self.settings.embedding.model,
            "embedding_provider": self.settings.embedding.provider,
            "sparse_model": self.settings.sparse.model,
            "store": self.settings.store.url or str(self.settings.index_dir),
            "index_built_with": recorded["fingerprint"] if recorded else None,
            "index_layout": recorded.get("layout") if recorded else None,
            "layout_pending": index_info.pending_layout(self.settings),
            "last_backup": recorded.get("backup") if recorded else None,
            "contexts": self.contexts.load(),
            "data_dir": str(self.settings.data_dir),
            # Files the runs skipped or indexed with a problem, until a run reads them without one.
            "problems": problems,
            "problems_total": problems_total,
            **({"watcher": self.watcher.state()} if self.watcher is not None else {}),
            **({"index_run": dict(run)} if (run := self._run) is not None else {}),
        }

    def indexed_files(self, collection: str | None = None) -> list[dict[str, Any]]:
        """
        The files in the index (`needle ls`): collection, path, title and chunk count, sorted.

        :param collection: Only this collection's files.
        :raises CollectionError: When the collection is unknown.
        """
        names = [c.name for c in self.collections.select([collection] if collection else None)]
        files: dict[tuple[str, str], dict[str, Any]] = {}
        for row in self.store.list_documents_meta(fields=["collection", "path", "title"]):
            meta = row["meta"]
            if meta.get("collection") not in names:
                continue
            entry = files.setdefault(
                (meta.get("collection", ""), meta.get("path", "")),
                {
                    "collection": meta.get("collection", ""),
                    "path": meta.get("path", ""),
                    "title": meta.get("title", ""),
                    "chunks": 0,
                },
            )
            entry["chunks"] += 1
        return [files[key] for key in sorted(files)]


def _changes(store: Any) -> Any:
    """What changes when a store is written to (`ManagedStore.changes`)."""
    return store.changes()
