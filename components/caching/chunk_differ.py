"""Incremental indexing: decide which chunks need embedding and which leave the index."""

from pathlib import Path
from typing import Any

from haystack import Document, component, default_to_dict, logging

from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.document_stores.needle.access import searchable
from needle.core.schema import FILE_ID

logger = logging.getLogger(__name__)


@component
class ChunkDiffer:
    """
    Compares freshly chunked files with what the index holds, so that unchanged chunks are never re-embedded.

    A chunk's id is a hash of its file, heading path, position and normalised text, so an id already in the
    store means the same text is already embedded there. The differ passes on only the chunks whose id
    is new, and lists the ids to delete: chunks of re-chunked files that no longer exist, and every chunk
    of a file that left a scanned collection. Files that could not be read this time (present in `sources`
    but without chunks) keep what the index has, so a transient read error loses nothing; collections whose
    root folder is missing are left alone for the same reason. Haystack's `DocumentWriter` with an
    OVERWRITE policy would re-embed everything and never delete.

    A file's metadata (frontmatter, tags, date...) is not part of a chunk id: a frontmatter edit or a
    touched file keeps every id. Such a file's indexed `meta_checksum` differs from the fresh one, and its
    first chunk goes to `refreshed`, for `MetadataRefresher` to rewrite the stored metadata of the whole
    file without embedding anything again.

    New chunks come out sorted by length: the embedders batch them in that order, and batches of
    similar length pad less.

    Usage example:
    ```python
    differ = ChunkDiffer(document_store=store)
    out = differ.run(documents=chunks, sources=sources, collections=[{"name": "notes", "root": "~/notes"}])
    out["documents"], out["stale_ids"], out["refreshed"], out["stats"]
    ```
    """

    def __init__(self, document_store: Any) -> None:
        """
        Create the differ.

        :param document_store: A Needle document store (or qdrant-haystack's `QdrantDocumentStore`); its `list_documents_meta()` is called.
        :raises ValueError: When the store is not one Needle's components can search (`searchable`).
        """
        self._store = searchable(document_store)
        self.document_store = document_store

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, document_store=self.document_store.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ChunkDiffer":
        """Deserialise the component."""
        return cls(**with_document_store(data)["init_parameters"])

    @component.output_types(
        documents=list[Document], stale_ids=list[str], refreshed=list[Document], removed=list[str], stats=dict
    )
    def run(
        self,
        documents: list[Document],
        sources: list[dict[str, Any]],
        collections: list[dict[str, Any]],
        scope: list[str] | None = None,
    ) -> dict[str, Any]:
        """
        Diff the chunks of one index run against the store.

        :param documents: Chunks of the files read in this run (meta `collection` and the file id).
        :param sources: Every file found in the scanned collections, read or not (`collection`, `path`).
        :param collections: The collections scanned (`name`, `root`).
        :param scope: Compare only the indexed chunks of these files (`collection:path`): a run over some
            files, or one batch of a run. A file in scope but not in `sources` leaves the index; indexed
            files outside it are left alone. `None` compares every indexed file of the collections.
        :returns: A dictionary with:
            - `documents`: chunks to embed and write (new ids), shortest first.
            - `stale_ids`: ids of indexed chunks to delete once the new ones are written.
            - `refreshed`: one chunk per indexed file whose file metadata changed (`meta_checksum`), whatever
              its chunks did.
            - `removed`: `collection:path` of the indexed files that left the index (deleted on disk).
            - `stats`: counts of files and chunks (new, changed, unchanged, removed, metadata refreshed).
        """
        scanned = [c["name"] for c in collections if Path(str(c["root"])).expanduser().is_dir()]
        indexed: dict[str, set[str]] = {}
        checksums: dict[str, set[Any]] = {}
        if scope is not None:
            scanned_names = set(scanned)
            scope = sorted({s for s in scope if s.partition(":")[0] in scanned_names})
        if scanned and (scope is None or scope):
            where: dict[str, Any] = {"field": "meta.collection", "operator": "in", "value": scanned}
            if scope is not None:
                where = {"field": f"meta.{FILE_ID}", "operator": "in", "value": scope}
            rows = self._store.list_documents_meta(filters=where, fields=[FILE_ID, "meta_checksum"])
            for row in rows:
                file_id = row["meta"].get(FILE_ID, "")
                indexed.setdefault(file_id, set()).add(row["id"])
                checksums.setdefault(file_id, set()).add(row["meta"].get("meta_checksum"))

        present = {f"{s['collection']}:{s['path']}" for s in sources}
        fresh: dict[str, set[str]] = {}
        refreshed: dict[str, Document] = {}
        for doc in documents:
            file_id = doc.meta[FILE_ID]
            fresh.setdefault(file_id, set()).add(doc.id)
            if file_id in checksums and checksums[file_id] != {doc.meta.get("meta_checksum")}:
                refreshed.setdefault(file_id, doc)

        all_indexed = set().union(*indexed.values()) if indexed else set()
        new_chunks = [doc for doc in documents if doc.id not in all_indexed]
        stale: list[str] = []
        removed: list[str] = []
        for file_id, ids in indexed.items():
            if file_id not in present:
                stale.extend(sorted(ids))
                removed.append(file_id)
            elif file_id in fresh:
                stale.extend(sorted(ids - fresh[file_id]))
        changed = sum(1 for s, ids in fresh.items() if s in indexed and ids != indexed[s])
        stats = {
            "files_new": sum(1 for s in fresh if s not in indexed),
            "files_changed": changed,
            "files_unchanged": sum(1 for s, ids in fresh.items() if s in indexed and ids == indexed[s]),
            "files_removed": len(removed),
            "chunks_total": len(documents),
            "chunks_new": len(new_chunks),
            "chunks_unchanged": len(documents) - len(new_chunks),
            "chunks_stale": len(stale),
            "files_refreshed": len(refreshed),
        }
        new_chunks.sort(key=lambda d: len(d.content or ""))
        return {
            "documents": new_chunks,
            "stale_ids": stale,
            "refreshed": list(refreshed.values()),
            "removed": sorted(removed),
            "stats": stats,
        }
