"""The notes nearest in meaning to one note, by its whole-file vector."""

from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict

from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.document_stores.needle.access import searchable
from needle.core.schema import FILE_ID


@component
class SimilarFileRetriever:
    """
    Finds the files whose whole-file vector is nearest to one file's, reason "similar".

    Reads the file's own dense vector from the whole-file store (the normalised mean of its chunks', see
    `FileVectorPooler`) and asks the same store for its nearest files in the same collection, the file itself
    left out: no model runs. Each file found is a Document with `meta.collection`, `meta.path`,
    its file id (`meta[FILE_ID]`), `meta.title`, `meta.reasons` (`["similar"]`) and the cosine as `score`.
    Haystack's retrievers take a query vector, not a stored document.

    Usage example:
    ```python
    retriever = SimilarFileRetriever(document_store=file_store, top_k=10)
    retriever.run(file_id="notes:Recipes/Snert.md")["documents"]
    ```
    """

    def __init__(self, document_store: Any, top_k: int = 10) -> None:
        """
        Create the retriever.

        :param document_store: The whole-file store (`NeedleDocumentStore(role="files")`).
        :param top_k: How many similar files to return at most.
        :raises ValueError: When `top_k` is not a positive integer or the store is not one Needle's components
            can search (`searchable`).
        """
        self._store = searchable(document_store)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        self.document_store = document_store
        self.top_k = top_k

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, document_store=self.document_store.to_dict(), top_k=self.top_k)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SimilarFileRetriever":
        """Deserialise the component."""
        return default_from_dict(cls, with_document_store(data))

    @component.output_types(documents=list[Document])
    def run(self, file_id: str, top_k: int | None = None) -> dict[str, list[Document]]:
        """
        The files nearest in meaning to one file.

        :param file_id: The file, `collection:path`.
        :param top_k: How many at most; the init value when `None`.
        :returns: A dictionary with `documents`, most similar first (none when the file has no vector).
        """
        found = self._store.filter_documents({"field": f"meta.{FILE_ID}", "operator": "==", "value": file_id})
        vector = next((doc.embedding for doc in found if doc.embedding is not None), None)
        if vector is None:
            return {"documents": []}
        collection = file_id.partition(":")[0]
        wanted = top_k or self.top_k
        nearest = self._store.query_dense(
            np.asarray(vector, dtype=np.float32),
            top_k=wanted + 1,
            filters={"field": "meta.collection", "operator": "==", "value": collection},
            fields=["collection", "path", FILE_ID, "title"],
        )
        documents = [
            Document(
                id=str(doc.meta.get(FILE_ID)),
                content="",
                score=doc.score,
                meta={
                    "collection": doc.meta.get("collection"),
                    "path": doc.meta.get("path"),
                    FILE_ID: doc.meta.get(FILE_ID),
                    "title": doc.meta.get("title", ""),
                    "reasons": ["similar"],
                },
            )
            for doc in nearest
            if doc.meta.get(FILE_ID) != file_id
        ]
        return {"documents": documents[:wanted]}
