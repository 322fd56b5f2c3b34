"""Write new chunks, then retire stale ones, then make the index durable."""

from typing import Any

from haystack import Document, component, default_to_dict, logging
from haystack.document_stores.types import DuplicatePolicy

from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.components.needle._vector_checks import vector_problem
from haystack_integrations.document_stores.needle.access import searchable

logger = logging.getLogger(__name__)


@component
class IndexWriter:
    """
    Upserts embedded chunks, deletes the chunks they replace, flushes the store and lets it optimise
    (build its vector index) when anything changed.

    The order matters: new chunks are written before stale ones are deleted, so a search during an index
    run, or a run that stops half-way, sees the old or the new version of a file, never neither. Haystack's
    `DocumentWriter` writes but cannot delete, and knows nothing of flushing.

    Every dense vector is checked at the door (`_vector_checks`): a file with one that is not finite, all zeros
    or of another size than the index's is left out whole (its new points unwritten, its stored ones kept), and
    named in `skipped` with the reason (which names the server or model the vector came from) and in
    `unwritten`, so that the stat record leaves it to be read again by the next run.

    Usage example:
    ```python
    writer = IndexWriter(document_store=store)
    writer.run(documents=embedded_chunks, stale_ids=["3f2a..."])
    ```
    """

    def __init__(self, document_store: Any, batch_size: int = 256, optimize: bool = True) -> None:
        """
        Create the writer.

        :param document_store: A Needle document store (or qdrant-haystack's `QdrantDocumentStore`).
        :param batch_size: Documents per write call.
        :param optimize: Let the store optimise (build its vector index) after a run that changed anything.
        :raises ValueError: When `batch_size` is below 1, or the store is not one Needle's components can search (`searchable`).
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be > 0, got {batch_size}")
        self._store = searchable(document_store)
        self.document_store = document_store
        self.batch_size = batch_size
        self.optimize = optimize

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self, document_store=self.document_store.to_dict(), batch_size=self.batch_size, optimize=self.optimize
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "IndexWriter":
        """Deserialise the component."""
        return cls(**with_document_store(data)["init_parameters"])

    @component.output_types(written=int, deleted=int, skipped=list[dict[str, str]], unwritten=list[str])
    def run(
        self, documents: list[Document], stale_ids: list[str] | None = None, optimize: bool | None = None
    ) -> dict[str, Any]:
        """
        Write and retire chunks.

        :param documents: Embedded chunks to upsert.
        :param stale_ids: Ids of chunks to delete after the write.
        :param optimize: `False` leaves optimising to the caller (an index run of several batches optimises
            once, after the last); `None` follows the init parameter.
        :returns: A dictionary with `written` and `deleted` counts, the files left out for their vectors
            (`skipped`: collection, path, reason) and their `collection:path` keys (`unwritten`).
        """
        documents, skipped = self._spoiled_files_left_out(documents)
        stale_ids = self._kept_for(skipped, list(stale_ids or []))
        written = 0
        for start in range(0, len(documents), self.batch_size):
            batch = documents[start : start + self.batch_size]
            written += self._store.write_documents(batch, policy=DuplicatePolicy.OVERWRITE)
        if stale_ids:
            self._store.delete_documents(stale_ids)
        self._store.flush()
        if self.optimize and optimize is not False and (written or stale_ids):
            self._store.optimize()
        unwritten = [f"{note['collection']}:{note['path']}" for note in skipped]
        return {"written": written, "deleted": len(stale_ids), "skipped": skipped, "unwritten": unwritten}

    def _spoiled_files_left_out(self, documents: list[Document]) -> tuple[list[Document], list[dict[str, str]]]:
        """The documents of files whose vectors all pass the check, and a note for each file left out."""
        dim = getattr(self.document_store, "embedding_dim", None)
        problems: dict[tuple[str, str], str] = {}
        for doc in documents:
            problem = vector_problem(doc.embedding, dim)
            key = (str(doc.meta.get("collection", "")), str(doc.meta.get("path", "")))
            if problem is not None and key not in problems:
                problems[key] = problem
        if not problems:
            return documents, []
        kept = [
            d for d in documents if (str(d.meta.get("collection", "")), str(d.meta.get("path", ""))) not in problems
        ]
        skipped = [
            {"collection": c, "path": p, "reason": f"not indexed: {problem}; the next `needle index` tries it again"}
            for (c, p), problem in problems.items()
        ]
        for note in skipped:
            logger.warning("{where} {reason}", where=f"{note['collection']}:{note['path']}", reason=note["reason"])
        return kept, skipped

    def _kept_for(self, skipped: list[dict[str, str]], stale_ids: list[str]) -> list[str]:
        """`stale_ids` without the stored points of the files left out: they keep their last good version."""
        if not skipped or not stale_ids:
            return stale_ids
        keep: set[str] = set()
        for note in skipped:
            filters = {
                "operator": "AND",
                "conditions": [
                    {"field": "meta.collection", "operator": "==", "value": note["collection"]},
                    {"field": "meta.path", "operator": "==", "value": note["path"]},
                ],
            }
            keep.update(doc.id for doc in self.document_store.filter_documents(filters))
        return [i for i in stale_ids if i not in keep]
