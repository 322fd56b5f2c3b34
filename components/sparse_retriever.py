"""Sparse vector retrieval from any Needle document store."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from haystack.document_stores.types import FilterPolicy
from haystack.document_stores.types.filter_policy import apply_filter_policy

from components._document_store import with_document_store


@component
class SparseRetriever:
    """
    Retrieves the documents that score best against a sparse query embedding (BM25, SPLADE, BM42).

    Calls the store's `query_sparse()`, so the same component serves the embedded engine (`EdgeDocumentStore`)
    and a Qdrant server (`QdrantServerDocumentStore`); with a BM25 sparse embedder and `sparse_idf` it is
    keyword search that works on both. Haystack's `QdrantSparseEmbeddingRetriever` accepts only
    `QdrantDocumentStore`.

    Usage example:
    ```python
    retriever = SparseRetriever(document_store=EdgeDocumentStore(path="index/edge"), top_k=20)
    retriever.run(query_sparse_embedding=SparseEmbedding(indices=[17, 912], values=[1.0, 1.0]))["documents"]
    ```
    """

    def __init__(
        self,
        document_store: Any,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: str | FilterPolicy = FilterPolicy.REPLACE,
    ) -> None:
        """
        Create the retriever.

        :param document_store: A store with `query_sparse(query_sparse_embedding, top_k, filters)`.
        :param filters: Haystack filters applied to every query.
        :param top_k: How many documents to return.
        :param filter_policy: How runtime filters combine with `filters`: `replace` or `merge`.
        :raises ValueError: When the store cannot run sparse queries or `top_k` is not positive.
        """
        if not callable(getattr(document_store, "query_sparse", None)):
            raise ValueError(f"{type(document_store).__name__} has no query_sparse() method")
        _check_top_k(top_k)
        self.document_store = document_store
        self.filters = filters
        self.top_k = top_k
        self.filter_policy = (
            filter_policy if isinstance(filter_policy, FilterPolicy) else FilterPolicy.from_str(filter_policy)
        )

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
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SparseRetriever":
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
        self,
        query_sparse_embedding: SparseEmbedding,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
    ) -> dict[str, list[Document]]:
        """
        Retrieve the documents that score best against the sparse query embedding.

        :param query_sparse_embedding: The query's sparse embedding.
        :param filters: Haystack filters, combined with the init filters by `filter_policy`.
        :param top_k: How many documents to return; overrides the init value.
        :returns: A dictionary with `documents`: the best documents first, `score` set.
        :raises ValueError: When `top_k` is not positive.
        """
        top_k = self.top_k if top_k is None else top_k
        _check_top_k(top_k)
        filters = apply_filter_policy(self.filter_policy, self.filters, filters)
        documents = self.document_store.query_sparse(
            query_sparse_embedding=query_sparse_embedding, top_k=top_k, filters=filters
        )
        return {"documents": documents}


def _check_top_k(top_k: int) -> None:
    if top_k <= 0:
        raise ValueError(f"top_k must be > 0, got {top_k}")

