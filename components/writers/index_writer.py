"""Write new chunks, then retire stale ones, then make the index durable."""

from typing import Any

from haystack import Document, component, default_to_dict, logging
from haystack.document_stores.types import DuplicatePolicy

from haystack_integrations.components.needle._store_deserialization import with_document_store
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

    @component.output_types(written=int, deleted=int)
    def run(
        self, documents: list[Document], stale_ids: list[str] | None = None, optimize: bool | None = None
    ) -> dict[str, int]:
        """
        Write and retire chunks.

        :param documents: Embedded chunks to upsert.
        :param stale_ids: Ids of chunks to delete after the write.
        :param optimize: `False` leaves optimising to the caller (an index run of several batches optimises
            once, after the last); `None` follows the init parameter.
        :returns: A dictionary with `written` and `deleted` counts.
        """
        written = 0
        for start in range(0, len(documents), self.batch_size):
            batch = documents[start : start + self.batch_size]
            written += self._store.write_documents(batch, policy=DuplicatePolicy.OVERWRITE)
        stale_ids = list(stale_ids or [])
        if stale_ids:
            self._store.delete_documents(stale_ids)
        self._store.flush()
        if self.optimize and optimize is not False and (written or stale_ids):
            self._store.optimize()
        return {"written": written, "deleted": len(stale_ids)}
