"""Dense vector retrieval from any Needle document store."""

from typing import Any

from haystack import Document, component
from haystack.document_stores.types import FilterPolicy

from haystack_integrations.components.needle._store_retriever import StoreRetriever
from needle.core.checks import OptionalQueryVector


@component
class DenseRetriever(StoreRetriever):
    """
    Retrieves the documents nearest to a query embedding.

    Calls the store's `query_dense()`, so the same component serves the embedded engine (`EdgeDocumentStore`)
    and a Qdrant server (`QdrantServerDocumentStore`). Haystack's `QdrantEmbeddingRetriever` accepts only
    `QdrantDocumentStore`, and the in-memory retriever only `InMemoryDocumentStore`.

    Usage example:
    ```python
    retriever = DenseRetriever(document_store=EdgeDocumentStore(path="index/edge"), top_k=20)
    retriever.run(query_embedding=[0.1] * 384)["documents"]
    ```
    """

    def __init__(
        self,
        document_store: Any,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: str | FilterPolicy = FilterPolicy.REPLACE,
        return_embedding: bool = False,
        meta_fields: list[str] | None = None,
        score_kind: str | None = None,
    ) -> None:
        """
        Create the retriever.

        :param document_store: A Needle document store (or qdrant-haystack's `QdrantDocumentStore`); its `query_dense()` is called.
        :param filters: Haystack filters applied to every query.
        :param top_k: How many documents to return.
        :param filter_policy: How runtime filters combine with `filters`: `replace` or `merge`.
        :param return_embedding: Return each document's embedding too (for relevance feedback).
        :param meta_fields: Metadata fields the documents carry; `None` carries all.
        :param score_kind: `cosine` clamps the similarities to 0..1 here, raw kept (see `StoreRetriever`).
        :raises ValueError: When the store is not one Needle's components can search (`searchable`), `top_k` is not positive or
            `score_kind` is unknown.
        """
        StoreRetriever.__init__(
            self,
            document_store,
            filters=filters,
            top_k=top_k,
            filter_policy=filter_policy,
            meta_fields=meta_fields,
            score_kind=score_kind,
        )
        self.return_embedding = return_embedding

    def _extra_init_parameters(self) -> dict[str, Any]:
        return {"return_embedding": self.return_embedding}

    @component.output_types(documents=list[Document])
    def run(
        self, query_embedding: OptionalQueryVector, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """
        Retrieve the documents nearest to the query embedding.

        :param query_embedding: The query vector (a list of floats or a numpy array); `None` (the embedder
            failed) retrieves nothing.
        :param filters: Haystack filters, combined with the init filters by `filter_policy`.
        :param top_k: How many documents to return; overrides the init value.
        :returns: A dictionary with `documents`: the best documents first, `score` set to the similarity
            (clamped to 0..1 with `score_kind`).
        :raises ValueError: When `top_k` is not positive.
        """
        filters, top_k = self._request(filters, top_k)
        if query_embedding is None:
            return {"documents": []}
        documents = self._store.query_dense(
            query_embedding=query_embedding,
            top_k=top_k,
            filters=filters,
            return_embedding=self.return_embedding,
            fields=self.meta_fields,
        )
        return self._scored(documents)
