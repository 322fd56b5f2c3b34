"""The inventory: what the index holds (`status`, `ls`), and reading the collections' files within the ingest graph's limits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from needle.core.file_formats import Extractor, Limits
from needle.core.files.batches import FileAccess, FileBatch
from needle.core.files.reading import DEFAULT_MAX_DOCUMENT_BYTES, DEFAULT_MAX_FILE_BYTES, FileNotServed, FileText
from needle.core.index_results import CollectionStatus, FileProblem, IndexedFile, Status
from needle.core.link_results import LinkEntry, LinkReport, RelatedNote, RelatedReport
from needle.core.link_table import LinkTable, ResolvedLink
from needle.core.requests import GetRequest, LinksRequest, ListRequest, MultiGetRequest, RelatedRequest
from needle.core.schema import FILE_ID
from needle.facade.graph_loading import INGEST, GraphRuntime
from needle.facade.index_handle import IndexHandle
from needle.lifecycle import provenance as index_info
from needle.runtime.contract import GraphContract

# Most skipped files `status` lists (the count says how many there are in all).
STATUS_PROBLEMS = 50


class Inventory:
    """
    `status`, `ls`, and reading the collections' files (`read`, `read_many`).

    Usage example:
    ```python
    inventory = Inventory(index, runtime, lambda: None)
    inventory.status().collections[0].files
    inventory.read(GetRequest(ref="notes/howto/git.md", max_lines=20)).text
    ```
    """

    def __init__(
        self, index: IndexHandle, runtime: GraphRuntime, index_run: Callable[[], dict[str, Any] | None]
    ) -> None:
        """
        :param index: The index listed and read.
        :param runtime: The graphs: the ingest graph's file limits are what reading uses.
        :param index_run: The index run under way, as `status` shows it (`Indexer.index_run`).
        """
        self.index = index
        self.runtime = runtime
        self.index_run = index_run
        # The watcher keeping the index live (`needle.lifecycle.watch`), shown by `status` (`Needle.attach_watcher`).
        self.watcher: Any = None
        self._files: FileAccess | None = None
        self._source_ids: tuple[tuple[Any, ...], list[str]] | None = None

    def read(self, request: GetRequest) -> FileText:
        """A note, or a range of its lines (`needle.core.files.reading.FileReader.read`), with its backlink count."""
        text = self.files.read(request.ref, from_line=request.from_line, max_lines=request.max_lines)
        text.backlinks = self.link_table.backlink_count(text.collection, text.path)
        return text

    @property
    def link_table(self) -> LinkTable:
        """The notes' links and aliases, in the stat record's file (`needle.core.link_table`)."""
        return LinkTable(self.index.records.path)

    def links(self, request: LinksRequest) -> LinkReport:
        """
        A note's outgoing links and its backlinks, each with its line (`needle links`).

        :param request: The note: a reference `get` takes, or a note's name or alias (resolved as a link is).
        :raises FileNotServed: When no indexed note answers to the reference.
        """
        table = self.link_table
        collection, path = self._note(request.ref)
        resolver = table.resolver(collection)
        related = self.related(RelatedRequest(ref=request.ref, limit=request.related)) if request.related else None
        return LinkReport(
            collection=collection,
            path=path,
            outgoing=[_entry(link) for link in table.outgoing(collection, path, resolver)],
            backlinks=[_entry(link) for link in table.backlinks(collection, path, resolver)],
            related=related.related if related else [],
        )

    def related(self, request: RelatedRequest, pipeline: str = "related") -> RelatedReport:
        """
        The notes related to one note by links and by meaning, with reasons (`needle related`, `pipelines/related.yml`).

        :param request: The note (as `links` takes it) and how many related notes.
        :param pipeline: The graph: `related` or a YAML path with its inputs and outputs.
        :raises FileNotServed: When no indexed note answers to the reference.
        """
        collection, path = self._note(request.ref)
        pool = self.runtime.pool(pipeline)
        contract = GraphContract.of(pool.first, str(pipeline)).require("related")
        with pool.lend() as graph:
            output = graph.run(
                contract.feed({"file_id": f"{collection}:{path}", "limit": request.limit}),
                include_outputs_from=contract.stages,
            )
        documents = contract.read(output)["documents"]
        related = [
            RelatedNote(
                collection=str(doc.meta.get("collection", "")),
                path=str(doc.meta.get("path", "")),
                title=str(doc.meta.get("title") or ""),
                score=round(float(doc.score or 0.0), 4),
                reasons=list(doc.meta.get("reasons") or []),
                similarity=round(float(doc.meta.get("similarity") or 0.0), 4),
            )
            for doc in documents
        ]
        return RelatedReport(collection=collection, path=path, related=related)

    def _note(self, ref: str) -> tuple[str, str]:
        """The collection and path of the note a reference, file name or alias names."""
        table = self.link_table
        try:
            served = self.files.resolve(ref)
            collection, path = served.collection.name, served.rel
        except FileNotServed:
            found = next(
                (
                    (name, target)
                    for name in [c.name for c in self.index.collections.select(None)]
                    if (target := table.resolver(name).find(ref)) is not None
                ),
                None,
            )
            if found is None:
                raise FileNotServed(
                    f"no indexed note {ref!r}: give its path (collection/path), #docid, file name or alias"
                ) from None
            collection, path = found
        return collection, path

    def read_many(self, request: MultiGetRequest) -> FileBatch:
        """The notes a glob or a list of references names, within budgets (`FileAccess.read_many`)."""
        return self.files.read_many(pattern=request.pattern, refs=request.refs, max_bytes=request.max_bytes)

    @property
    def files(self) -> FileAccess:
        """Reading the collections' files by reference or glob (`get`, multi-get), within each collection's rules."""
        if self._files is None:
            # The ingest graph's own limits (its contract's `parameters`), so that `get` reads what indexing reads.
            graph = self.runtime.ingest_graph()
            contract = GraphContract.from_dict(graph, INGEST)
            limits = Limits(
                **{
                    key: contract.parameter(graph, key)
                    for key in ("max_pages", "max_unpacked_bytes", "max_seconds", "max_memory_mb")
                    if contract.parameter(graph, key) is not None
                }
            )
            self._files = FileAccess(
                self.index.collections,
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
        recorded = index_info.read(self.index.settings) or {}
        version = (_changes(self.index.file_store), _changes(self.index.store), recorded.get("updated"))
        cached = self._source_ids
        if cached is not None and cached[0] == version:
            return cached[1]
        found: list[str] = []
        for store in (self.index.file_store, self.index.store):
            ids = {row["meta"].get(FILE_ID, "") for row in store.list_documents_meta(fields=[FILE_ID])}
            if ids:
                found = sorted(ids)
                break
        self._source_ids = (version, found)
        return found

    def status(self) -> Status:
        """
        Collections with file and chunk counts, languages, frontmatter fields and tags; the models, where the
        index lives and the context annotations.

        Its cost does not grow with the index: the counts, languages, fields and tags are what the last index
        run recorded (`needle.lifecycle.field_summary`), as that run left them; a collection without a record (an index
        run that did not finish, an index built before records) is counted by the engine's facets instead.
        """
        store, file_store = self.index.stores
        settings = self.index.settings
        for each in (store, file_store):  # damage the engine aborts on is named, not read past
            each.check_unopened()
        recorded = index_info.read(settings)
        summaries = (recorded or {}).get("summaries") or {}
        languages = (recorded or {}).get("languages") or {}
        listed = self.index.collections.load()
        counted: dict[str, dict[str, int]] | None = None  # the engine's counts, when a record lacks them

        def engine_counts() -> dict[str, dict[str, int]]:
            chunks = store.count_values("collection")
            return {"chunks": chunks, "files": file_store.count_values("collection") if chunks else {}}

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
                files = len(store.count_values(FILE_ID, in_collection))
            collections.append(
                CollectionStatus(
                    name=name,
                    root=collection.root,
                    files=files,
                    chunks=chunks,
                    languages=sorted(languages.get(name) or []),
                    fields=summary.get("fields", {}),
                    tags=summary.get("tags", []),
                )
            )
        if counted is not None:
            orphaned = {name: count for name, count in counted["chunks"].items() if name not in listed}
        else:
            orphaned = {
                name: int(s.get("chunks", 0)) for name, s in summaries.items() if name not in listed and s.get("chunks")
            }
        problems, problems_total = self.index.records.problems(limit=STATUS_PROBLEMS)
        return Status(
            collections=collections,
            orphaned=orphaned,
            embedding_model=settings.embedding.model,
            embedding_provider=settings.embedding.provider,
            sparse_model=settings.sparse.model,
            store=settings.store.url or str(settings.index_dir),
            index_built_with=recorded["fingerprint"] if recorded else None,
            index_layout=recorded.get("layout") if recorded else None,
            layout_pending=index_info.pending_layout(settings),
            last_backup=recorded.get("backup") if recorded else None,
            contexts=self.index.contexts.load(),
            data_dir=str(settings.data_dir),
            # Files the runs skipped or indexed with a problem, until a run reads them without one.
            problems=[FileProblem.model_validate(p) for p in problems],
            problems_total=problems_total,
            watcher=self.watcher.state() if self.watcher is not None else None,
            index_run=self.index_run(),
        )

    def ls(self, request: ListRequest) -> list[IndexedFile]:
        """
        The files in the index (`needle ls`): collection, path, title and chunk count, sorted.

        :param request: Only this `collection`'s files, when it names one.
        :raises CollectionError: When the collection is unknown.
        """
        wanted = request.collection
        names = [c.name for c in self.index.collections.select([wanted] if wanted else None)]
        files: dict[tuple[str, str], IndexedFile] = {}
        for row in self.index.store.list_documents_meta(fields=["collection", "path", "title"]):
            meta = row["meta"]
            if meta.get("collection") not in names:
                continue
            key = (meta.get("collection", ""), meta.get("path", ""))
            entry = files.get(key)
            if entry is None:
                entry = files[key] = IndexedFile(collection=key[0], path=key[1], title=meta.get("title", ""), chunks=0)
            entry.chunks += 1
        return [files[key] for key in sorted(files)]


def _entry(link: ResolvedLink) -> LinkEntry:
    return LinkEntry.model_validate(link.as_dict())


def _changes(store: Any) -> Any:
    """What changes when a store is written to (`ManagedStore.changes`)."""
    return store.changes()
