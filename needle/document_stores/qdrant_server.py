"""qdrant-haystack's store with the search and listing methods of `NeedleDocumentStore`."""

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
from haystack import default_from_dict, logging
from haystack.dataclasses import Document
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from haystack.utils import Secret, deserialize_secrets_inplace
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from haystack_integrations.document_stores.qdrant.filters import convert_filters_to_qdrant
from qdrant_client.http import models as rest
from qdrant_client.http.exceptions import ResponseHandlingException

from components._checks import QueryVector, check_top_k
from needle.document_stores._shared import BestScoreRequest, NeedleStoreMixin, VectorQuery, meta_name, plain_filters

logger = logging.getLogger(__name__)

DEFAULT_PAYLOAD_FIELDS_TO_INDEX: list[dict[str, str]] = [
    {"field_name": "meta.collection", "field_schema": "keyword"},
    {"field_name": "meta.path", "field_schema": "keyword"},
    {"field_name": "meta.source_doc_id", "field_schema": "keyword"},
    {"field_name": "meta.tags", "field_schema": "keyword"},
    {"field_name": "meta.folders", "field_schema": "keyword"},
    {"field_name": "meta.fields", "field_schema": "keyword"},
    {"field_name": "meta.identifiers", "field_schema": "keyword"},
    {"field_name": "meta.date", "field_schema": "datetime"},
]


class QdrantServerDocumentStore(NeedleStoreMixin, QdrantDocumentStore):
    """
    A Qdrant server (or Qdrant Cloud) collection with the interface of Needle's embedded store.

    It is qdrant-haystack's `QdrantDocumentStore`, with Needle's defaults (384-dimensional dense vectors,
    IDF-weighted sparse vectors, keyword indexes on the metadata Needle filters by) and the methods Needle's
    retrievers, rankers and indexer call (`NeedleDocumentStore`): `query_dense`, `query_sparse`, `best_scores_by`,
    `best_term_scores`, `list_documents_meta`, `flush` and `optimize`.
    The data layout is the one `EdgeDocumentStore` writes, so a snapshot of the embedded index serves here
    unchanged. A server collection has no BM25-scored text index here: keyword search runs through
    `SparseRetriever` and a BM25 sparse embedder, and `query_text` raises.

    Usage example:
    ```python
    store = QdrantServerDocumentStore(url="http://localhost:6333", index="notes", embedding_dim=384)
    store.query_dense([0.1] * 384, top_k=5)
    ```
    """

    sparse_holder = "collection"

    def __init__(
        self,
        url: str | None = None,
        index: str = "Document",
        embedding_dim: int = 384,
        similarity: str = "cosine",
        use_sparse_embeddings: bool = True,
        sparse_idf: bool = True,
        api_key: Secret | None = None,
        timeout: int | None = None,
        prefer_grpc: bool = False,
        payload_fields_to_index: list[dict] | None = None,
        hnsw_config: dict | None = None,
        on_disk: bool = False,
        recreate_index: bool = False,
        write_batch_size: int = 100,
        scroll_size: int = 10_000,
        progress_bar: bool = False,
        client_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """
        Configure the store; nothing connects until first use.

        :param url: The server, e.g. `http://localhost:6333` or a Qdrant Cloud URL; `None` means localhost.
        :param index: Name of the collection.
        :param embedding_dim: Size of the dense vectors.
        :param similarity: `cosine`, `dot_product` or `l2`.
        :param use_sparse_embeddings: Whether the collection has sparse vectors (`text-sparse`).
        :param sparse_idf: Whether the server weights sparse vectors by inverse document frequency.
        :param api_key: API key of the server (e.g. `Secret.from_env_var("QDRANT_API_KEY", strict=False)`).
        :param timeout: Seconds before a request to the server fails.
        :param prefer_grpc: Talk gRPC instead of REST where possible.
        :param payload_fields_to_index: Payload indexes created with the collection, as in qdrant-haystack;
            `None` indexes `meta.collection`, `meta.path`, `meta.source_doc_id`, `meta.tags`, `meta.folders`,
            `meta.fields` and `meta.identifiers` as keywords and `meta.date` as a datetime.
        :param hnsw_config: HNSW parameters of a new collection (`{"m": 16, "ef_construct": 100}`).
        :param on_disk: Keep vectors on disk rather than in RAM.
        :param recreate_index: Drop and recreate the collection on first use.
        :param write_batch_size: Points per upsert request.
        :param scroll_size: Points per page when listing documents.
        :param progress_bar: Show a progress bar while writing.
        :param client_kwargs: Further arguments of `QdrantClient` (`port`, `https`, `prefix`, ...).
        :raises ValueError: When a parameter is out of range or unknown.
        """
        if embedding_dim <= 0:
            raise ValueError(f"embedding_dim must be > 0, got {embedding_dim}")
        if similarity not in self.SIMILARITY:
            raise ValueError(f"similarity must be one of {', '.join(self.SIMILARITY)}, got {similarity!r}")
        if write_batch_size <= 0:
            raise ValueError(f"write_batch_size must be > 0, got {write_batch_size}")
        if scroll_size <= 0:
            raise ValueError(f"scroll_size must be > 0, got {scroll_size}")
        super().__init__(
            url=url,
            index=index,
            embedding_dim=embedding_dim,
            similarity=similarity,
            use_sparse_embeddings=use_sparse_embeddings,
            sparse_idf=sparse_idf,
            api_key=api_key,
            timeout=timeout,
            prefer_grpc=prefer_grpc,
            payload_fields_to_index=[
                dict(field) for field in (payload_fields_to_index or DEFAULT_PAYLOAD_FIELDS_TO_INDEX)
            ],
            hnsw_config=hnsw_config,
            on_disk=on_disk,
            recreate_index=recreate_index,
            write_batch_size=write_batch_size,
            scroll_size=scroll_size,
            progress_bar=progress_bar,
            client_kwargs=client_kwargs,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QdrantServerDocumentStore":
        """
        Rebuild a store from `to_dict()` output.

        :param data: The serialised store.
        :returns: The store, not yet connected.
        """
        init_parameters = dict(data.get("init_parameters", {}))
        deserialize_secrets_inplace(init_parameters, keys=["api_key"])
        return default_from_dict(cls, {**data, "init_parameters": init_parameters})

    def _initialize_client(self) -> None:
        """
        Connect and set up the collection on first use, naming the server when it cannot be reached.

        :raises ConnectionError: When the server does not answer.
        """
        if self._client is not None:
            return
        try:
            super()._initialize_client()
        except (ResponseHandlingException, httpx.TransportError) as error:
            # The parent keeps a client whose collection was never set up: drop it so the next call retries.
            self._client = None
            raise ConnectionError(f"cannot reach the Qdrant server at {self._address()}: {error}") from error

    def _address(self) -> str:
        if self.url:
            return self.url
        if self.location:
            return self.location
        return f"{self.host or 'localhost'}:{self.port}"

    def query_dense(
        self,
        query_embedding: QueryVector,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
        fields: list[str] | None = None,
    ) -> list[Document]:
        """
        Nearest documents to a dense query vector.

        :param query_embedding: The query vector, `embedding_dim` values.
        :param top_k: How many documents to return.
        :param filters: Haystack filters applied before ranking.
        :param return_embedding: Whether the documents carry their vectors.
        :param fields: Metadata fields the documents carry; `None` carries all (the server sends all either way).
        :returns: Documents with `score` set to the similarity, best first.
        :raises ValueError: When `top_k` is not positive or the vector has the wrong size.
        :raises ConnectionError: When the server cannot be reached.
        """
        check_top_k(top_k)
        vector = self._dense_query(query_embedding).values
        return _only(
            self._query_by_embedding(
                query_embedding=vector, filters=plain_filters(filters), top_k=top_k, return_embedding=return_embedding
            ),
            fields,
        )

    def query_sparse(
        self,
        query_sparse_embedding: SparseEmbedding,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
        fields: list[str] | None = None,
    ) -> list[Document]:
        """
        Best documents for a sparse query vector (IDF-weighted when `sparse_idf` is on).

        :param query_sparse_embedding: The query's sparse embedding.
        :param top_k: How many documents to return.
        :param filters: Haystack filters applied before ranking.
        :param return_embedding: Whether the documents carry their vectors.
        :param fields: Metadata fields the documents carry; `None` carries all (the server sends all either way).
        :returns: Documents with `score` set, best first.
        :raises ValueError: When `top_k` is not positive.
        :raises DocumentStoreError: When the collection has no sparse vectors (checked before connecting).
        :raises ConnectionError: When the server cannot be reached.
        """
        check_top_k(top_k)
        self._require_sparse("query_sparse()")
        return _only(
            self._query_by_sparse(
                query_sparse_embedding=query_sparse_embedding,
                filters=plain_filters(filters),
                top_k=top_k,
                return_embedding=return_embedding,
            ),
            fields,
        )

    def query_text(
        self, query: str, top_k: int = 10, filters: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[Document]:
        """
        Not available on a server collection.

        :param query: Free text.
        :param top_k: How many documents to return.
        :param filters: Haystack filters.
        :param fields: Metadata fields the documents would carry.
        :returns: Never returns.
        :raises NotImplementedError: Always.
        """
        raise NotImplementedError(
            "native BM25 (query_text) needs the embedded engine, EdgeDocumentStore; on a Qdrant server use "
            "SparseRetriever with a BM25 sparse embedder (the store has sparse_idf=True) instead"
        )

    def flush(self) -> None:
        """Nothing to do: the server makes every acknowledged write durable itself."""

    def optimize(self) -> bool:
        """
        Nothing to do: the server optimises its segments in the background.

        :returns: `False`, nothing was optimised here.
        """
        return False

    def _best_scores(self, requests: list[BestScoreRequest]) -> list[float | None]:
        batch = [
            rest.QueryRequest(
                query=self._rest_query(request.query),
                using=self._using(request.query),
                filter=None if request.key is None else _match(request.key, request.value),
                limit=1,
                with_payload=False,
                with_vector=False,
                params=rest.SearchParams(exact=True) if request.exact else None,
            )
            for request in requests
        ]
        self._initialize_client()
        assert self._client is not None
        results = self._client.query_batch_points(collection_name=self.index, requests=batch)
        return [float(result.points[0].score) if result.points else None for result in results]

    def _scroll_payloads(self, filters: dict[str, Any] | None, include: list[str]) -> Iterator[tuple[Any, dict]]:
        self._initialize_client()
        assert self._client is not None
        qdrant_filter = convert_filters_to_qdrant(plain_filters(filters))
        offset = None
        while True:
            records, offset = self._client.scroll(
                collection_name=self.index,
                scroll_filter=qdrant_filter,
                limit=self.scroll_size,
                offset=offset,
                with_payload=rest.PayloadSelectorInclude(include=include),
                with_vectors=False,
            )
            for record in records:
                yield record.id, record.payload or {}
            if self._check_stop_scrolling(offset):
                return

    def _rest_query(self, query: VectorQuery) -> Any:
        """A query vector as the client takes it."""
        if query.indices is None:
            return query.values
        return rest.SparseVector(indices=query.indices, values=query.values)

    def _using(self, query: VectorQuery) -> str | None:
        """The vector name to search: qdrant-haystack names the dense vector only beside a sparse one."""
        if query.indices is None and not self.use_sparse_embeddings:
            return None
        return query.using


def _match(key: str, value: Any) -> rest.Filter:
    """Points whose payload `key` holds `value`."""
    return rest.Filter(must=[rest.FieldCondition(key=key, match=rest.MatchValue(value=value))])


def _only(documents: list[Document], fields: list[str] | None) -> list[Document]:
    """The documents with only the named metadata fields (all when `fields` is `None`)."""
    if fields is None:
        return documents
    names = [meta_name(field) for field in fields]
    return [replace(doc, meta={name: doc.meta[name] for name in names if name in doc.meta}) for doc in documents]
