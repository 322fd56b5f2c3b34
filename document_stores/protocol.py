"""The interface of a Needle document store: every method Needle's components, the app and eval call on one."""

from typing import Any, Protocol, runtime_checkable

from haystack.dataclasses import Document
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError
from haystack.document_stores.types import DuplicatePolicy

from needle.core.checks import QueryVector


class IndexDamagedError(DocumentStoreError):
    """The store's files cannot be read (truncated, emptied or garbled): the index must be rebuilt from the notes."""

    def __init__(self, path: str | None, detail: str) -> None:
        """
        Say what is damaged and how to heal it.

        :param path: The store's folder (or file), when known.
        :param detail: What the engine or the reader said.
        """
        where = f"the index at {path}" if path else "the index"
        super().__init__(
            f"{where} is damaged ({detail}); `needle index --rebuild` rebuilds it from your notes, "
            "moving the damaged copy aside"
        )
        self.path = path


@runtime_checkable
class NeedleDocumentStore(Protocol):
    """
    A store Needle's retrievers, rankers and indexer work on: `EdgeDocumentStore` or `QdrantServerDocumentStore`.

    Haystack's `DocumentStore` protocol covers writing, deleting, filtering and counting; Needle's components
    also search (dense, sparse, BM25 text), score candidate files exactly, list metadata cheaply and make
    writes durable, so they take a store of this wider interface. `check_document_store` tells a component's
    `__init__` whether an object offers it, naming what is missing.

    Errors follow one rule in both stores: a bad argument from the caller is a `ValueError`; asking a store
    for something its configuration lacks (sparse vectors, a text index) or an engine failure is a
    Haystack `DocumentStoreError` (an `IndexDamagedError` when its files cannot be read); malformed filters
    are a `FilterError`.
    """

    def to_dict(self) -> dict[str, Any]:
        """
        Serialise the store's configuration (not its documents).

        :returns: A dictionary with `type` and `init_parameters`.
        """
        ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "NeedleDocumentStore":
        """
        Rebuild a store from `to_dict()` output; nothing opens or connects until first use.

        :param data: The serialised store.
        :returns: The store.
        """
        ...

    def count_documents(self) -> int:
        """
        Count the documents in the store.

        :returns: The number of documents.
        :raises DocumentStoreError: When the engine fails.
        """
        ...

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """
        The documents matching Haystack filters, with their vectors.

        :param filters: Haystack filters over `id`, `content` and `meta.<field>`; `None` returns every document.
        :returns: The matching documents.
        :raises FilterError: When the filters are malformed.
        """
        ...

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """
        Write documents.

        :param documents: The documents; their embeddings must have the store's `embedding_dim` values.
        :param policy: What to do with an id that is already stored (`OVERWRITE` replaces it).
        :returns: The number of documents written.
        :raises ValueError: When `documents` is not a list of Documents or an embedding has the wrong size.
        :raises DuplicateDocumentError: With `NONE` or `FAIL` when an id already exists.
        """
        ...

    def delete_documents(self, document_ids: list[str]) -> None:
        """
        Delete documents by id; unknown ids are ignored.

        :param document_ids: Ids of the documents to delete.
        """
        ...

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """
        Delete the documents matching Haystack filters.

        :param filters: Haystack filters.
        :returns: The number of documents deleted.
        :raises FilterError: When the filters are malformed.
        """
        ...

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """
        Merge `meta` into the metadata of the documents matching Haystack filters; vectors stay untouched.

        :param filters: Haystack filters.
        :param meta: Metadata fields to set.
        :returns: The number of documents updated.
        """
        ...

    def delete_all_documents(self, recreate_index: bool = False) -> None:
        """
        Delete every document.

        :param recreate_index: Also drop the index and create it afresh from the store's configuration.
        """
        ...

    def count_values(self, field: str, filters: dict[str, Any] | None = None) -> dict[str, int]:
        """
        How many documents hold each value of a metadata field (`needle status` counts chunks and files with it).

        :param field: The field (`"collection"` or `"meta.collection"`); documents without it are not counted.
        :param filters: Haystack filters; `None` counts every document.
        :returns: value (as text) → number of documents.
        """
        ...

    def list_documents_meta(
        self, filters: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """
        List ids and metadata without content or vectors (cheap enough for diffs over the whole index).

        :param filters: Haystack filters; `None` lists every document.
        :param fields: Metadata fields to return (`"path"` or `"meta.path"`); `None` returns all metadata.
            Fields a document lacks are left out of its `meta`.
        :returns: `[{"id": ..., "meta": {...}}]`.
        :raises FilterError: When the filters are malformed.
        """
        ...

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
        :param fields: Metadata fields the documents carry (`"path"` or `"meta.path"`); `None` carries all.
        :returns: Documents with `score` set to the similarity, best first.
        :raises ValueError: When `top_k` is not positive or the vector has the wrong size.
        """
        ...

    def query_sparse(
        self,
        query_sparse_embedding: SparseEmbedding,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
        fields: list[str] | None = None,
    ) -> list[Document]:
        """
        Best documents for a sparse query vector (dot product, IDF-weighted when the store has `sparse_idf`).

        :param query_sparse_embedding: The query's sparse embedding.
        :param top_k: How many documents to return.
        :param filters: Haystack filters applied before ranking.
        :param return_embedding: Whether the documents carry their vectors.
        :param fields: Metadata fields the documents carry (`"path"` or `"meta.path"`); `None` carries all.
        :returns: Documents with `score` set, best first.
        :raises ValueError: When `top_k` is not positive.
        :raises DocumentStoreError: When the store has no sparse vectors.
        """
        ...

    def query_text(
        self, query: str, top_k: int = 10, filters: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[Document]:
        """
        BM25 search over a full-text index of `content`, scored by the engine.

        :param query: Free text.
        :param top_k: How many documents to return.
        :param filters: Haystack filters applied before ranking.
        :param fields: Metadata fields the documents carry; `None` carries all.
        :returns: Documents with `score` set to their BM25 score, best first.
        :raises ValueError: When `top_k` is not positive.
        :raises DocumentStoreError: When the store has no text index.
        :raises NotImplementedError: When the store cannot keep one (a Qdrant server collection).
        """
        ...

    def best_scores_by(
        self,
        field: str,
        values: list[str],
        query_embedding: QueryVector | None = None,
        query_sparse_embedding: SparseEmbedding | None = None,
    ) -> list[float | None]:
        """
        For each value of a metadata field, the best score one query reaches among the documents holding it.

        :param field: The metadata field (`"source_doc_id"` or `"meta.source_doc_id"`), ideally indexed.
        :param values: The values to score, e.g. candidate files.
        :param query_embedding: A dense query vector; give it or `query_sparse_embedding`, not both.
        :param query_sparse_embedding: A sparse query vector.
        :returns: One score per value, in order; `None` where no document holding it was scored.
        :raises ValueError: Unless exactly one query is given, or when the dense vector has the wrong size.
        :raises DocumentStoreError: For a sparse query on a store without sparse vectors.
        """
        ...

    def best_term_scores(self, query_sparse_embedding: SparseEmbedding) -> list[float]:
        """
        For each term of a sparse query, the best score that term alone reaches in the store.

        :param query_sparse_embedding: The query's sparse embedding.
        :returns: One score per term, in the embedding's order; 0.0 for a term no document has.
        :raises DocumentStoreError: When the store has no sparse vectors.
        """
        ...

    def best_scores_by_requests(
        self,
        field: str,
        values: list[str],
        query_embedding: QueryVector | None = None,
        query_sparse_embedding: SparseEmbedding | None = None,
    ) -> list[Any]:
        """
        The searches `best_scores_by` runs, to run in one batch with others (`best_scores`).

        :returns: One request per value, in order.
        :raises ValueError: Unless exactly one query is given, or when the dense vector has the wrong size.
        :raises DocumentStoreError: For a sparse query on a store without sparse vectors.
        """
        ...

    def best_term_score_requests(self, query_sparse_embedding: SparseEmbedding) -> list[Any]:
        """
        The searches `best_term_scores` runs, to run in one batch with others (`best_scores`; `None` there is 0.0).

        :returns: One request per term, in the embedding's order.
        :raises DocumentStoreError: When the store has no sparse vectors.
        """
        ...

    def best_scores(self, requests: list[Any]) -> list[float | None]:
        """
        Run searches of limit 1 as one batch of engine calls.

        :param requests: From `best_scores_by_requests` and `best_term_score_requests`, in any mix.
        :returns: Each request's best score, in order; `None` where no point was scored.
        """
        ...

    def flush(self) -> None:
        """
        Make every acknowledged write durable.

        :raises DocumentStoreError: When the engine fails to flush.
        """
        ...

    def optimize(self) -> bool:
        """
        Let the store optimise its segments (build its vector index) now.

        :returns: Whether anything changed.
        :raises DocumentStoreError: When the engine fails to optimise.
        """
        ...

    def verify(self) -> dict[str, Any]:
        """
        Read every stored point with its payload and vectors, and search each kind of vector once: the damage a
        query would trip on, found before it does (`needle check`).

        :returns: `points` read, `counted` by the engine, and how many lack a dense (`without_dense`) or, in a
            store with sparse vectors, a sparse vector (`without_sparse`); the dense vectors that are NaN,
            infinite, all zeros or of another size (`spoiled_dense`), their points' ids (`spoiled_ids`) and
            files (`spoiled_files`, `collection:path`).
        :raises IndexDamagedError: When the store's files cannot be read.
        :raises DocumentStoreError: When the engine fails otherwise.
        """
        ...

    def close(self) -> None:
        """Release what the store holds (the embedded engine's folder, a server connection); it reopens on next use."""
        ...


# The Protocol's methods, in the order written above.
STORE_METHODS: tuple[str, ...] = tuple(name for name in vars(NeedleDocumentStore) if not name.startswith("_"))


def check_document_store(document_store: Any) -> None:
    """
    Check that an object offers every method of `NeedleDocumentStore` (what a component's `__init__` calls).

    `isinstance(store, NeedleDocumentStore)` only looks for the names; this also requires them callable and
    names what is missing.

    :param document_store: The object given as a store.
    :raises ValueError: Naming the object's class and every method it lacks, or, for a store named by role
        (`chunks`), saying how to inject it.
    """
    if isinstance(document_store, str):
        raise ValueError(
            f"document store {document_store!r} is named by role: build the graph with Needle's environment "
            "(needle.runtime.loader.load_pipeline, or Pipeline.from_dict(..., callbacks=Environment(settings).callbacks()))"
        )
    missing = [name for name in STORE_METHODS if not callable(getattr(document_store, name, None))]
    if missing:
        raise ValueError(
            f"{type(document_store).__name__} does not provide {', '.join(f'{name}()' for name in missing)}: "
            f"a Needle document store implements NeedleDocumentStore"
        )


__all__ = ["STORE_METHODS", "IndexDamagedError", "NeedleDocumentStore", "check_document_store"]
