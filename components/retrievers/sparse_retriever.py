"""Sparse vector retrieval from any Needle document store."""

from typing import Any

from haystack import Document, component
from haystack.dataclasses.sparse_embedding import SparseEmbedding

from haystack_integrations.components.needle._store_retriever import StoreRetriever


@component
class SparseRetriever(StoreRetriever):
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
        :returns: A dictionary with `documents`: the best documents first, `score` set (normalised with
            `score_kind`).
        :raises ValueError: When `top_k` is not positive.
        """
        filters, top_k = self._request(filters, top_k)
        documents = self._store.query_sparse(
            query_sparse_embedding=query_sparse_embedding, top_k=top_k, filters=filters, fields=self.meta_fields
        )
        return self._scored(documents)
