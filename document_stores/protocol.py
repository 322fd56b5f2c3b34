"""
The interface of Needle's document stores, split by who calls it: what the components call (`SearchableStore`)
and what the application manages besides (`ManagedStore`).

Haystack's `DocumentStore` protocol covers writing, deleting, filtering and counting; Needle's retrievers,
rankers and writers also search (dense, sparse, BM25 text), score candidate files exactly and list metadata
cheaply, so they take a store of the wider `SearchableStore`. The application (indexing, status, checks,
backups, the owner) manages the index's life too (`ManagedStore`). The embedded store (`EdgeDocumentStore`)
and the Qdrant server store (`QdrantServerDocumentStore`) implement both; qdrant-haystack's own
`QdrantDocumentStore` gets `SearchableStore` through `QdrantSearch`, so Needle's components run over a
collection a Haystack user already has. `access.searchable(store)` gives a component the object to call for
whatever store it was handed.

Errors follow one rule in every store: a bad argument from the caller is a `ValueError`; asking a store for
something its configuration lacks (sparse vectors, a text index) or an engine failure is a Haystack
`DocumentStoreError` (an `IndexDamagedError` when its files cannot be read); malformed filters are a
`FilterError`. The methods are documented here, once; the stores' own docstrings add only what differs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
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


@dataclass(frozen=True)
class BestScore:
    """
    One search of limit 1 that reads only the best score: of a query vector over the whole store, or over the
    documents whose metadata `field` holds `value` (a candidate file's chunks). The rerank stage sends a store
    all of a query's in one batch (`SearchableStore.best_scores`).

    Give `dense` or `sparse`, not both. A search restricted to a value is exact (the original vectors, no
    approximate index), so a file's score does not depend on the index's layout.
    """

    dense: QueryVector | None = None
    sparse: SparseEmbedding | None = None
    field: str | None = None
    value: str | None = None

    def __post_init__(self) -> None:
        """:raises ValueError: Unless exactly one of `dense` and `sparse` is given, or with `field` but no `value`."""
        if (self.dense is None) == (self.sparse is None):
            raise ValueError("give exactly one of dense and sparse")
        if (self.field is None) != (self.value is None):
            raise ValueError("give field and value together")

    @classmethod
    def per_value(
        cls, field: str, values: list[str], dense: QueryVector | None = None, sparse: SparseEmbedding | None = None
    ) -> list[BestScore]:
        """
        One search per value: the best score the query reaches among the documents holding it.

        :param field: The metadata field (the file id, `needle.core.schema.FILE_ID`, or with `meta.`), ideally indexed.
        :param values: The values to score, e.g. candidate files.
        :param dense: A dense query vector; give it or `sparse`, not both.
        :param sparse: A sparse query vector.
        :raises ValueError: Unless exactly one query is given.
        """
        if (dense is None) == (sparse is None):
            raise ValueError("give exactly one of dense and sparse")
        return [cls(dense=dense, sparse=sparse, field=field, value=value) for value in values]

    @classmethod
    def per_term(cls, sparse: SparseEmbedding) -> list[BestScore]:
        """One search per term of a sparse query: the best score that term alone reaches (a BM25 ceiling's parts)."""
        return [
            cls(sparse=SparseEmbedding(indices=[int(index)], values=[float(value)]))
            for index, value in zip(sparse.indices, sparse.values)
        ]


@runtime_checkable
class SearchableStore(Protocol):
    """
    What Needle's components call on a store: Haystack's document store methods, searches, exact best scores
    and cheap metadata listings.
    """

    def to_dict(self) -> dict[str, Any]:
        """
        Serialise the store's configuration (not its documents).

        :returns: A dictionary with `type` and `init_parameters`.
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

    def iter_documents(self, filters: dict[str, Any] | None = None) -> Iterator[Document]:
        """
        Stream the documents matching Haystack filters, with their vectors, page by page (a caller that found
        what it wanted stops reading).

        :param filters: Haystack filters; `None` streams every document.
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

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """
        Merge `meta` into the metadata of the documents matching Haystack filters; vectors stay untouched.

        :param filters: Haystack filters; empty filters update nothing.
        :param meta: Metadata fields to set.
        :returns: The number of documents updated.
        :raises FilterError: When the filters are malformed.
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

    def count_values(self, field: str, filters: dict[str, Any] | None = None) -> dict[str, int]:
        """
        How many documents hold each value of a metadata field (`needle status` counts chunks and files with it).

        :param field: The field (`"collection"` or `"meta.collection"`); documents without it are not counted.
        :param filters: Haystack filters; `None` counts every document.
        :returns: value (as text) → number of documents.
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
            Fewer fields make lighter documents, and Haystack deep-copies every stage's inputs.
        :returns: Documents with `score` set to the similarity, best first.
        :raises ValueError: When `top_k` is not positive or the vector has the wrong size.
        :raises FilterError: When the filters are malformed.
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
        :raises FilterError: When the filters are malformed.
        """
        ...

    def query_text(
        self, query: str, top_k: int = 10, filters: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[Document]:
        """
        BM25 search over a full-text index of `content`, scored by the engine.

        :param query: Free text; tokenised, lowercased, stemmed and stripped of stopwords like the index.
        :param top_k: How many documents to return.
        :param filters: Haystack filters applied before ranking.
        :param fields: Metadata fields the documents carry; `None` carries all.
        :returns: Documents with `score` set to their BM25 score, best first; none for an empty query.
        :raises ValueError: When `top_k` is not positive.
        :raises DocumentStoreError: When the store has no text index.
        :raises NotImplementedError: When the store cannot keep one (a Qdrant server collection).
        """
        ...

    def best_scores(self, searches: list[BestScore]) -> list[float | None]:
        """
        Run searches of limit 1, reading scores only, as one batch of engine calls.

        :param searches: Any mix of `BestScore.per_value` and `BestScore.per_term` searches.
        :returns: Each search's best score, in order; `None` where no document was scored.
        :raises ValueError: When a dense vector has the wrong size.
        :raises DocumentStoreError: For a sparse search on a store without sparse vectors.
        """
        ...

    def flush(self) -> None:
        """
        Make every acknowledged write durable.

        :raises DocumentStoreError: When the engine fails to flush.
        """
        ...

    def deferred_flush(self) -> AbstractContextManager[None]:
        """
        Writes inside the block are made durable once, at its end, instead of after each one (many small
        metadata updates); a store that makes writes durable itself does nothing.
        """
        ...

    def optimize(self) -> bool:
        """
        Let the store optimise its segments (build its vector index) now.

        :returns: Whether anything changed.
        :raises DocumentStoreError: When the engine fails to optimise.
        """
        ...


@runtime_checkable
class ManagedStore(SearchableStore, Protocol):
    """What the application calls on a store of Needle's index besides what components call: its life."""

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """
        Delete the documents matching Haystack filters.

        :param filters: Haystack filters.
        :returns: The number of documents deleted.
        :raises FilterError: When the filters are malformed.
        """
        ...

    def delete_all_documents(self, recreate_index: bool = False) -> None:
        """
        Delete every document.

        :param recreate_index: Also drop the index and create it afresh from the store's configuration.
        """
        ...

    def verify(self) -> dict[str, int]:
        """
        Read every stored point with its payload and vectors, and search each kind of vector once: the damage a
        query would trip on, found before it does (`needle check`).

        :returns: `points` read, `counted` by the engine, and how many lack a dense (`without_dense`) or, in a
            store with sparse vectors, a sparse vector (`without_sparse`).
        :raises IndexDamagedError: When the store's files cannot be read.
        :raises DocumentStoreError: When the engine fails otherwise.
        """
        ...

    def check_unopened(self) -> None:
        """
        Find damage the engine would abort on without opening the index in this process (`needle status`
        reads records instead of opening it); a store that holds no files does nothing.

        :raises IndexDamagedError: When the store's files cannot be read.
        """
        ...

    def changes(self) -> Any:
        """A value that changes with every write to the store (what `status` asks before it counts again)."""
        ...

    def read_ahead(self) -> int:
        """
        Read the index the way searches will, before they do (an owner calls it once, in the background);
        a store whose reads cost the same the first time does nothing.

        :returns: The documents read.
        """
        ...

    def writes_paused(self) -> AbstractContextManager[None]:
        """Hold off this store's writers (readers go on), with everything written so far durable."""
        ...

    def close(self) -> None:
        """Release what the store holds (the embedded engine's folder, a server connection); it reopens on next use."""
        ...


# The methods of each Protocol, in the order written above.
SEARCHABLE_METHODS: tuple[str, ...] = tuple(name for name in vars(SearchableStore) if not name.startswith("_"))
MANAGED_METHODS: tuple[str, ...] = SEARCHABLE_METHODS + tuple(
    name for name in vars(ManagedStore) if not name.startswith("_")
)

__all__ = [
    "MANAGED_METHODS",
    "SEARCHABLE_METHODS",
    "BestScore",
    "IndexDamagedError",
    "ManagedStore",
    "SearchableStore",
]
