"""What Needle's three retrievers share: a Needle document store, filters with a policy, a validated top_k."""

from typing import Any

from haystack import Document, default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy
from haystack.document_stores.types.filter_policy import apply_filter_policy

from haystack_integrations.components.needle._scores import check_score_kind, normalised
from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.document_stores.needle.access import searchable
from needle.core.checks import check_top_k


class StoreRetriever:
    """
    Base of `DenseRetriever`, `SparseRetriever` and `KeywordRetriever`; not a component itself.

    A subclass defines `run`, calling one of the store's query methods.
    """

    def __init__(
        self,
        document_store: Any,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: str | FilterPolicy = FilterPolicy.REPLACE,
        meta_fields: list[str] | None = None,
        score_kind: str | None = None,
    ) -> None:
        """
        Create the retriever.

        :param document_store: A Needle document store (or qdrant-haystack's `QdrantDocumentStore`) (`query_dense`, `query_sparse` or `query_text` is called).
        :param filters: Haystack filters applied to every query.
        :param top_k: How many documents to return.
        :param filter_policy: How runtime filters combine with `filters`: `replace` or `merge`.
        :param meta_fields: Metadata fields the documents carry; `None` carries all. A query graph names
            the few its stages read: Haystack deep-copies every stage's inputs, and lighter documents copy
            faster.
        :param score_kind: `bm25` or `cosine` puts the scores on 0..1 (BM25 `s/(1+s)`, cosine clamped), raw score kept
            in `meta["raw_score"]`, in this stage: a query graph then has no normalising stage for Haystack to
            copy the retrieved documents through. `None` leaves the store's scores as they are.
        :raises ValueError: When the store is not one Needle's components can search (`searchable`), `top_k` is not positive or
            `score_kind` is unknown.
        """
        self._store = searchable(document_store)
        check_top_k(top_k)
        check_score_kind(score_kind, optional=True)
        self.document_store = document_store
        self.filters = filters
        self.top_k = top_k
        self.filter_policy = (
            filter_policy if isinstance(filter_policy, FilterPolicy) else FilterPolicy.from_str(filter_policy)
        )
        self.meta_fields = meta_fields
        self.score_kind = score_kind

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
            meta_fields=self.meta_fields,
            score_kind=self.score_kind,
            **self._extra_init_parameters(),
        )

    def _extra_init_parameters(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
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

    def _request(self, filters: dict[str, Any] | None, top_k: int | None) -> tuple[dict[str, Any] | None, int]:
        """The filters and top_k of one call, after the filter policy and validation."""
        top_k = self.top_k if top_k is None else top_k
        check_top_k(top_k)
        return apply_filter_policy(self.filter_policy, self.filters, filters), top_k

    def _scored(self, documents: list[Document]) -> dict[str, list[Document]]:
        """The run's output: the documents, their scores normalised when `score_kind` is set."""
        return {"documents": documents if self.score_kind is None else normalised(documents, self.score_kind)}
