"""Rewrite the stored file metadata of files whose chunks did not change."""

from typing import Any

from haystack import Document, component, default_to_dict, logging

from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.document_stores.needle.access import searchable
from needle.core.schema import FILE_ID, FILE_META_KEYS

logger = logging.getLogger(__name__)


@component
class MetadataRefresher:
    """
    Sets the file metadata (tags, frontmatter, folders, date, identifiers) of every stored document of a file.

    A file whose text is unchanged keeps its chunk ids, so nothing is embedded or written for it; when only
    its frontmatter or its modification time changed, the stored tags, fields and date would go stale and
    filters would answer from old values. `ChunkDiffer` lists such files (`refreshed`, one chunk each);
    this component merges that chunk's file metadata into every stored document of the file, with one
    `update_by_filter` per file, vectors untouched. Haystack's `DocumentWriter` can only rewrite whole
    documents, vectors included.

    Usage example:
    ```python
    refresher = MetadataRefresher(document_store=store)
    refresher.run(documents=differ_output["refreshed"])  # {"refreshed": 1}
    ```
    """

    def __init__(self, document_store: Any) -> None:
        """
        Create the refresher.

        :param document_store: A Needle document store (or qdrant-haystack's `QdrantDocumentStore`); its `update_by_filter()` is called.
        :raises ValueError: When the store is not one Needle's components can search (`searchable`).
        """
        self._store = searchable(document_store)
        self.document_store = document_store

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, document_store=self.document_store.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MetadataRefresher":
        """Deserialise the component."""
        return cls(**with_document_store(data)["init_parameters"])

    @component.output_types(refreshed=int)
    def run(self, documents: list[Document]) -> dict[str, int]:
        """
        Refresh the stored metadata of the documents' files.

        :param documents: One chunk per file (its file id, the `FILE_META_KEYS` and `meta_checksum`).
        :returns: A dictionary with `refreshed`: the number of stored documents updated.
        """
        if not documents:
            return {"refreshed": 0}
        updated = 0
        # The embedded store flushes after every update (about 250 ms on SciFact's index): the updates are
        # written first, then made durable with one flush.
        with self._store.deferred_flush():
            for doc in documents:
                meta = {key: doc.meta[key] for key in (*FILE_META_KEYS, "meta_checksum") if key in doc.meta}
                where = {"field": f"meta.{FILE_ID}", "operator": "==", "value": doc.meta[FILE_ID]}
                updated += int(self._store.update_by_filter(where, meta) or 0)
        logger.info("Refreshed the metadata of {files} files", files=len(documents))
        return {"refreshed": updated}
