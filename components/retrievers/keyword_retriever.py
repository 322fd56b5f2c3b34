"""Native BM25 keyword retrieval from a Needle document store."""

from typing import Any

from haystack import Document, component

from haystack_integrations.components.needle._store_retriever import StoreRetriever


@component
class KeywordRetriever(StoreRetriever):
    """
    Retrieves documents by BM25 over the store's full-text index of `content`, scored by the engine.

    Calls the store's `query_text()`: the query is tokenised, stemmed and stripped of stopwords by the index
    itself, so no sparse embedder runs at query time. Haystack's BM25 retrievers rank in Python over an
    in-memory store; here the Qdrant engine ranks (`EdgeDocumentStore`). A Qdrant server store has no such
    index: use `SparseRetriever` with a BM25 sparse embedder there.

    Usage example:
    ```python
    retriever = KeywordRetriever(document_store=EdgeDocumentStore(path="index/edge"), top_k=20)
    retriever.run(query="rotate the restic keys")["documents"]
    ```
    """

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """
        Retrieve the documents that best match the query's words.

        :param query: Free text.
        :param filters: Haystack filters, combined with the init filters by `filter_policy`.
        :param top_k: How many documents to return; overrides the init value.
        :returns: A dictionary with `documents`: the best documents first, `score` set to the BM25 score
            (normalised with `score_kind`).
        :raises ValueError: When `top_k` is not positive.
        """
        filters, top_k = self._request(filters, top_k)
        documents = self._store.query_text(query=query, top_k=top_k, filters=filters, fields=self.meta_fields)
        return self._scored(documents)
