"""Native BM25 keyword retrieval from a Needle document store."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy
from haystack.document_stores.types.filter_policy import apply_filter_policy

from components._document_store import with_document_store


@component
class KeywordRetriever:
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

    def __init__(
        self,
        document_store: Any,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: str | FilterPolicy = FilterPolicy.REPLACE,
    ) -> None:
        """
        Create the retriever.

        :param document_store: A store with `query_text(query, top_k, filters)`.
        :param filters: Haystack filters applied to every query.
        :param top_k: How many documents to return.
        :param filter_policy: How runtime filters combine with `filters`: `replace` or `merge`.
        :raises ValueError: When the store cannot run text queries or `top_k` is not positive.
        """
        if not callable(getattr(document_store, "query_text", None)):
            raise ValueError(f"{type(document_store).__name__} has no query_text() method")
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
    def from_dict(cls, data: dict[str, Any]) -> "KeywordRetriever":
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
        self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """
        Retrieve the documents that best match the query's words.

        :param query: Free text.
        :param filters: Haystack filters, combined with the init filters by `filter_policy`.
        :param top_k: How many documents to return; overrides the init value.
        :returns: A dictionary with `documents`: the best documents first, `score` set to the BM25 score.
        :raises ValueError: When `top_k` is not positive.
        """
        top_k = self.top_k if top_k is None else top_k
        _check_top_k(top_k)
        filters = apply_filter_policy(self.filter_policy, self.filters, filters)
        documents = self.document_store.query_text(query=query, top_k=top_k, filters=filters)
        return {"documents": documents}


def _check_top_k(top_k: int) -> None:
    if top_k <= 0:
        raise ValueError(f"top_k must be > 0, got {top_k}")

