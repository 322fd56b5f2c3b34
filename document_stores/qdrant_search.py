"""Needle's searches over a qdrant-haystack `QdrantDocumentStore`: a server, Qdrant Cloud, `:memory:` or a local path.

qdrant-haystack's store writes, filters and counts (Haystack's `DocumentStore` protocol) and answers its own
retrievers; Needle's retrievers and rankers also ask for dense and sparse searches that carry only some
metadata fields, exact best scores per candidate file, and cheap metadata listings (`SearchableStore`).
`QdrantSearchMixin` implements those over the store's Qdrant client, for Needle's `QdrantServerDocumentStore`
(a `QdrantDocumentStore` itself) and, through `QdrantSearch`, for any `QdrantDocumentStore` a Haystack user
already has, so Needle's stages run over an existing collection.
"""

import threading
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Any, ClassVar

from haystack.dataclasses import Document
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from haystack.document_stores.types import DuplicatePolicy
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from haystack_integrations.document_stores.qdrant.filters import convert_filters_to_qdrant
from qdrant_client.http import models as rest

from haystack_integrations.document_stores.needle._shared import (
    BestScoreRequest,
    NeedleStoreMixin,
    VectorQuery,
    meta_name,
    plain_filters,
)
from needle.core.checks import QueryVector, check_top_k


class QdrantSearchMixin(NeedleStoreMixin):
    """
    `SearchableStore`'s searches over a qdrant-haystack store's client (`_qdrant`), in qdrant-haystack's layout
    (named vectors `text-dense` and `text-sparse`, payload `{"id", "content", "meta"}`).
    """

    # What a store without sparse vectors is called in the error that says so.
    sparse_holder = "collection"
    # Search parameters of every dense query (`hnsw_ef`, quantization rescoring); none: the collection's.
    _search_params: rest.SearchParams | None = None

    @property
    def _qdrant(self) -> QdrantDocumentStore:
        """The qdrant-haystack store whose client runs the searches."""
        raise NotImplementedError

    def _qdrant_client(self) -> Any:
        store = self._qdrant
        store._initialize_client()
        assert store._client is not None
        return store._client

    def query_dense(
        self,
        query_embedding: QueryVector,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
        fields: list[str] | None = None,
    ) -> list[Document]:
        """`SearchableStore.query_dense` (the server sends all metadata; `fields` keeps the named ones)."""
        check_top_k(top_k)
        query = self._dense_query(query_embedding)
        points = (
            self._qdrant_client()
            .query_points(
                collection_name=self._qdrant.index,
                query=query.values,
                using=self._using(query),
                query_filter=convert_filters_to_qdrant(plain_filters(filters)),
                limit=top_k,
                with_vectors=return_embedding,
                search_params=self._search_params,
            )
            .points
        )
        return _only(self._qdrant._process_query_point_results(points), fields)

    def query_sparse(
        self,
        query_sparse_embedding: SparseEmbedding,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
        fields: list[str] | None = None,
    ) -> list[Document]:
        """`SearchableStore.query_sparse` (a collection without sparse vectors is refused before connecting)."""
        check_top_k(top_k)
        self._require_sparse("query_sparse()")
        found = self._qdrant._query_by_sparse(
            query_sparse_embedding=query_sparse_embedding,
            filters=plain_filters(filters),
            top_k=top_k,
            return_embedding=return_embedding,
        )
        return _only(found, fields)

    def query_text(
        self, query: str, top_k: int = 10, filters: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[Document]:
        """Not available on a Qdrant collection: `SearchableStore.query_text` raises `NotImplementedError`."""
        raise NotImplementedError(
            "native BM25 (query_text) needs the embedded engine, EdgeDocumentStore; on a Qdrant collection use "
            "SparseRetriever with a BM25 sparse embedder (a collection with sparse_idf=True) instead"
        )

    def iter_documents(self, filters: dict[str, Any] | None = None) -> Iterator[Document]:
        """`SearchableStore.iter_documents`, qdrant-haystack's scroll."""
        yield from self._qdrant._get_documents_generator(plain_filters(filters))

    def flush(self) -> None:
        """Nothing to do: Qdrant makes every acknowledged write durable itself."""

    def deferred_flush(self) -> AbstractContextManager[None]:
        """Nothing to defer: Qdrant makes every acknowledged write durable itself."""
        return nullcontext()

    def _best_scores(self, requests: list[BestScoreRequest]) -> list[float | None]:
        quantized = self._qdrant.quantization_config is not None
        exact = rest.SearchParams(
            exact=True, quantization=rest.QuantizationSearchParams(ignore=True) if quantized else None
        )
        batch = [
            rest.QueryRequest(
                query=_rest_query(request.query),
                using=self._using(request.query),
                filter=None if request.key is None else _match(request.key, request.value),
                limit=1,
                with_payload=False,
                with_vector=False,
                params=exact if request.exact else (self._search_params if request.query.indices is None else None),
            )
            for request in requests
        ]
        results = self._qdrant_client().query_batch_points(collection_name=self._qdrant.index, requests=batch)
        return [float(result.points[0].score) if result.points else None for result in results]

    def _scroll_payloads(self, filters: dict[str, Any] | None, include: list[str]) -> Iterator[tuple[Any, dict]]:
        client = self._qdrant_client()
        qdrant_filter = convert_filters_to_qdrant(plain_filters(filters))
        offset = None
        while True:
            records, offset = client.scroll(
                collection_name=self._qdrant.index,
                scroll_filter=qdrant_filter,
                limit=self._qdrant.scroll_size,
                offset=offset,
                with_payload=rest.PayloadSelectorInclude(include=include),
                with_vectors=False,
            )
            for record in records:
                yield record.id, record.payload or {}
            if self._qdrant._check_stop_scrolling(offset):
                return

    def _using(self, query: VectorQuery) -> str | None:
        """The vector name to search: qdrant-haystack names the dense vector only beside a sparse one."""
        if query.indices is None and not self.use_sparse_embeddings:
            return None
        return query.using


class QdrantSearch(QdrantSearchMixin):
    """
    A qdrant-haystack `QdrantDocumentStore` as Needle's components call a store (`SearchableStore`).

    `searchable()` wraps a `QdrantDocumentStore` handed to a component in one of these (one per store object,
    shared by every component given it). Writes, filters and counts go to the store unchanged; searches go to
    its client (`QdrantSearchMixin`). The collection needs Needle's metadata for the stages that read it:
    the file id (`needle.core.schema.FILE_ID`) to score and dedupe whole files, `path` and the line
    ranges for snippets and results; a document without them counts as a file of its own.

    Usage example:
    ```python
    store = QdrantDocumentStore(":memory:", use_sparse_embeddings=True, sparse_idf=True, embedding_dim=384)
    DenseRetriever(document_store=store).run(query_embedding=vector)["documents"]
    ```
    """

    _adapters: ClassVar[weakref.WeakKeyDictionary[QdrantDocumentStore, "QdrantSearch"]] = weakref.WeakKeyDictionary()
    _local: ClassVar[dict[tuple[str, str], "QdrantSearch"]] = {}
    _adapters_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, store: QdrantDocumentStore) -> None:
        """:param store: The qdrant-haystack store; it connects on first use, as usual."""
        self.store = store

    @classmethod
    def of(cls, store: QdrantDocumentStore) -> "QdrantSearch":
        """
        The one adapter of a store in this process: of the store object, or, for qdrant-client's local mode on a
        folder (`path`), of the folder and collection, since that mode lets one client open a folder: the
        stores a graph file names are deserialised one per component, and they all search through the first.
        """
        with cls._adapters_lock:
            found = cls._adapters.get(store)
            if found is None:
                key = (str(store.path), str(store.index)) if store.path else None
                found = cls._local.get(key) if key else None
                if found is None:
                    found = cls(store)
                    if key:
                        cls._local[key] = found
                cls._adapters[store] = found
            return found

    @property
    def _qdrant(self) -> QdrantDocumentStore:
        return self.store

    @property
    def embedding_dim(self) -> int:  # type: ignore[override]  # read from the store, not set
        """The store's dense vector size."""
        return int(self.store.embedding_dim)

    @property
    def use_sparse_embeddings(self) -> bool:  # type: ignore[override]  # read from the store, not set
        """Whether the store's collection has sparse vectors."""
        return bool(self.store.use_sparse_embeddings)

    def to_dict(self) -> dict[str, Any]:
        """The store's own serialised form."""
        return self.store.to_dict()

    def count_documents(self) -> int:
        """The store's `count_documents`."""
        return self.store.count_documents()

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """The store's `filter_documents`."""
        return self.store.filter_documents(plain_filters(filters))

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """The store's `write_documents`."""
        return self.store.write_documents(documents, policy=policy)

    def delete_documents(self, document_ids: list[str]) -> None:
        """The store's `delete_documents`."""
        self.store.delete_documents(document_ids)

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """The store's `update_by_filter`."""
        return int(self.store.update_by_filter(plain_filters(filters), meta) or 0)

    def optimize(self) -> bool:
        """Nothing to do: the Qdrant server optimises its segments in the background."""
        return False


def _rest_query(query: VectorQuery) -> Any:
    """A query vector as the client takes it."""
    if query.indices is None:
        return query.values
    return rest.SparseVector(indices=query.indices, values=query.values)


def _match(key: str, value: Any) -> rest.Filter:
    """Points whose payload `key` holds `value`."""
    return rest.Filter(must=[rest.FieldCondition(key=key, match=rest.MatchValue(value=value))])


def _only(documents: list[Document], fields: list[str] | None) -> list[Document]:
    """The documents with only the named metadata fields (all when `fields` is `None`)."""
    if fields is None:
        return documents
    names = [meta_name(field) for field in fields]
    return [replace(doc, meta={name: doc.meta[name] for name in names if name in doc.meta}) for doc in documents]


__all__ = ["QdrantSearch", "QdrantSearchMixin"]
