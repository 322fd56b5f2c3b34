"""Dense vector retrieval from any Needle document store."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy
from haystack.document_stores.types.filter_policy import apply_filter_policy

from components._document_store import with_document_store


@component
class DenseRetriever:
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
    ) -> None:
        """
        Create the retriever.

        :param document_store: A store with `query_dense(query_embedding, top_k, filters, return_embedding)`.
        :param filters: Haystack filters applied to every query.
        :param top_k: How many documents to return.
        :param filter_policy: How runtime filters combine with `filters`: `replace` or `merge`.
        :param return_embedding: Return each document's embedding too (for relevance feedback).
        :raises ValueError: When the store cannot run dense queries or `top_k` is not positive.
        """
        if not callable(getattr(document_store, "query_dense", None)):
            raise ValueError(f"{type(document_store).__name__} has no query_dense() method")
        _check_top_k(top_k)
        self.document_store = document_store
        self.filters = filters
        self.top_k = top_k
        self.filter_policy = (
            filter_policy if isinstance(filter_policy, FilterPolicy) else FilterPolicy.from_str(filter_policy)
        )
        self.return_embedding = return_embedding

    def to_dict(self) -> dict[str, Any]:
        """
        Serialise the retriever and its store.

        :returns: A dictionary with `type` and `init_parameters`.
        """
        return default_to_dict(
            self,
            document_store=self.document_store.to_dict(),
            filters=self.filters,
            top_k=self.top_k,
            filter_policy=self.filter_policy.value,
            return_embedding=self.return_embedding,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DenseRetriever":
        """
        Rebuild the retriever and its store.

        :param data: The serialised retriever.
        :returns: The retriever.
        :raises DeserializationError: When the store is missing or its class cannot be loaded.
        """
        data = with_document_store(data)
        if "filter_policy" in data["init_parameters"]:
            data["init_parameters"]["filter_policy"] = FilterPolicy.from_str(data["init_parameters"]["filter_policy"])
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, query_embedding: list[float], filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """
        Retrieve the documents nearest to the query embedding.

        :param query_embedding: The query vector.
        :param filters: Haystack filters, combined with the init filters by `filter_policy`.
        :param top_k: How many documents to return; overrides the init value.
        :returns: A dictionary with `documents`: the best documents first, `score` set to the similarity.
        :raises ValueError: When `top_k` is not positive.
        """
        top_k = self.top_k if top_k is None else top_k
        _check_top_k(top_k)
        filters = apply_filter_policy(self.filter_policy, self.filters, filters)
        documents = self.document_store.query_dense(
            query_embedding=query_embedding, top_k=top_k, filters=filters, return_embedding=self.return_embedding
        )
        return {"documents": documents}


def _check_top_k(top_k: int) -> None:
    if top_k <= 0:
        raise ValueError(f"top_k must be > 0, got {top_k}")

