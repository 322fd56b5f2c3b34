"""What both Needle document stores do the same way, written once.

Both stores keep qdrant-haystack's layout (named vectors `text-dense` and `text-sparse`, payload
`{"id", "content", "meta": {...}}`), so the query methods differ only in the engine's request types:
Qdrant Edge's `qdrant_edge` or the server's `qdrant_client.models`. `NeedleStoreMixin` holds the methods
whose logic is the same (checking arguments, building the query vectors, one limit-1 search per value or
term, shaping the metadata rows); each store turns the neutral requests below into its engine's and runs them.
"""

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from haystack.dataclasses import Document
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError

from haystack_integrations.document_stores.needle.layout import DENSE_VECTORS_NAME, SPARSE_VECTORS_NAME
from needle.core.checks import QueryVector, check_query_embedding
from needle.core.vectors import describe as describe_vector


@dataclass(frozen=True)
class VectorQuery:
    """A validated query vector: dense (`values`) or sparse (`indices` and `values`), named as stored (`using`)."""

    using: str
    values: list[float]
    indices: list[int] | None = None


@dataclass(frozen=True)
class BestScoreRequest:
    """One search of limit 1 without payload: the best score `query` reaches, among points whose `key` is `value`."""

    query: VectorQuery
    key: str | None = None
    value: str | None = None
    exact: bool = False


class Values(Sequence):
    """
    A long list of filter values (a path glob's matching files) that Haystack's copy of each stage's inputs
    does not walk value by value: at about 0.14 ms a value, 576 file ids cost 120 ms a search on SciFact. It
    is immutable, copies as itself, compares equal to a list of the same values, and both stores read it as
    a list (`plain_filters`); any other value that is not a list is refused as Haystack's filters say.
    """

    def __init__(self, values: Iterable[Any]) -> None:
        self._values = tuple(values)

    def __getitem__(self, index: Any) -> Any:
        return self._values[index]

    def __len__(self) -> int:
        return len(self._values)

    def __deepcopy__(self, memo: dict[int, Any]) -> "Values":
        return self

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, Values)):
            return list(self._values) == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values)

    def __repr__(self) -> str:
        return f"Values({list(self._values)!r})"


def plain_filters(filters: Any) -> Any:
    """Haystack filters with every `Values` as a plain list, as qdrant-haystack's converter and the embedded engine's take them."""
    if isinstance(filters, dict):
        return {key: plain_filters(value) for key, value in filters.items()}
    if isinstance(filters, list):
        return [plain_filters(value) for value in filters]
    if isinstance(filters, Values):
        return list(filters)
    return filters


def meta_name(field: str) -> str:
    """A metadata field's name without the `meta.` prefix (`"meta.path"` and `"path"` both give `"path"`)."""
    return field.removeprefix("meta.")


def meta_selector(fields: list[str] | None) -> list[str]:
    """The payload keys to read for the id and the named metadata fields (all metadata when `None`)."""
    if fields is None:
        return ["id", "meta"]
    return ["id", *(f"meta.{meta_name(field)}" for field in fields)]


def sparse_vector(indices: list[int], values: list[float]) -> VectorQuery:
    """A sparse query vector, its indices and values as the engines take them."""
    return VectorQuery(SPARSE_VECTORS_NAME, [float(value) for value in values], [int(index) for index in indices])


class NeedleStoreMixin:
    """
    The methods of `NeedleDocumentStore` that both stores implement the same way.

    A store sets `embedding_dim` and `use_sparse_embeddings`, and implements `_best_scores` (a batch of
    `BestScoreRequest`s) and `_scroll_payloads` (every point's id and selected payload).
    """

    embedding_dim: int
    use_sparse_embeddings: bool
    # What a store without sparse vectors is called in the error that says so.
    sparse_holder = "store"

    if TYPE_CHECKING:
        # Each store's own (`NeedleDocumentStore`), called by `verify`.

        def count_documents(self) -> int:
            """The store's."""
            raise NotImplementedError

        def iter_documents(self, filters: dict[str, Any] | None = None) -> Iterator[Document]:
            """The store's."""
            raise NotImplementedError

        def query_dense(
            self,
            query_embedding: QueryVector,
            top_k: int = 10,
            filters: dict[str, Any] | None = None,
            return_embedding: bool = False,
            fields: list[str] | None = None,
        ) -> list[Document]:
            """The store's."""
            raise NotImplementedError

        def query_sparse(
            self,
            query_sparse_embedding: SparseEmbedding,
            top_k: int = 10,
            filters: dict[str, Any] | None = None,
            return_embedding: bool = False,
            fields: list[str] | None = None,
        ) -> list[Document]:
            """The store's."""
            raise NotImplementedError

    def count_values(self, field: str, filters: dict[str, Any] | None = None) -> dict[str, int]:
        """
        How many documents hold each value of a metadata field, counted over their listed metadata.

        :param field: The field (`"collection"` or `"meta.collection"`); documents without it are not counted.
        :param filters: Haystack filters; `None` counts every document.
        :returns: value (as text) → number of documents.
        :raises FilterError: When the filters are malformed.
        """
        name = meta_name(field)
        counts: dict[str, int] = {}
        for row in self.list_documents_meta(filters=filters, fields=[name]):
            if name in row["meta"]:
                value = str(row["meta"][name])
                counts[value] = counts.get(value, 0) + 1
        return counts

    def best_scores_by(
        self,
        field: str,
        values: list[str],
        query_embedding: QueryVector | None = None,
        query_sparse_embedding: SparseEmbedding | None = None,
    ) -> list[float | None]:
        """
        For each value of a metadata field, the best score one query reaches among the documents holding it.

        One batch of exact searches, one per value, limit 1, with no payload read: which value a score belongs
        to is its position in the batch. Reading back the payload of every scored document to learn its group
        (what one search restricted to all the values would need) costs several times the scoring itself;
        this is how the rerank stage reads each candidate file's best chunk.

        :param field: The metadata field (`"source_doc_id"` or `"meta.source_doc_id"`), ideally indexed.
        :param values: The values to score, e.g. candidate files.
        :param query_embedding: A dense query vector; give it or `query_sparse_embedding`, not both.
        :param query_sparse_embedding: A sparse query vector.
        :returns: One score per value, in order; `None` where no document holding it was scored.
        :raises ValueError: Unless exactly one query is given, or when the dense vector has the wrong size.
        :raises DocumentStoreError: For a sparse query on a store without sparse vectors.
        """
        return self.best_scores(self.best_scores_by_requests(field, values, query_embedding, query_sparse_embedding))

    def best_scores_by_requests(
        self,
        field: str,
        values: list[str],
        query_embedding: QueryVector | None = None,
        query_sparse_embedding: SparseEmbedding | None = None,
    ) -> list[BestScoreRequest]:
        """
        The searches `best_scores_by` runs, to run in one batch with others (`best_scores`).

        :returns: One request per value, in order.
        :raises ValueError: Unless exactly one query is given, or when the dense vector has the wrong size.
        :raises DocumentStoreError: For a sparse query on a store without sparse vectors.
        """
        if (query_embedding is None) == (query_sparse_embedding is None):
            raise ValueError("give exactly one of query_embedding and query_sparse_embedding")
        if not values:
            return []
        if query_embedding is not None:
            query = self._dense_query(query_embedding)
        else:
            assert query_sparse_embedding is not None
            query = self._sparse_query(query_sparse_embedding, "best_scores_by() with a sparse query")
        key = f"meta.{meta_name(field)}"
        return [BestScoreRequest(query, key, value, exact=True) for value in values]

    def best_term_scores(self, query_sparse_embedding: SparseEmbedding) -> list[float]:
        """
        For each term of a sparse query, the best score that term alone reaches in the store.

        One batch of single-term searches, planned together by the engine (a query's BM25 ceiling is their
        sum, see `HybridScoreRanker`).

        :param query_sparse_embedding: The query's sparse embedding.
        :returns: One score per term, in the embedding's order; 0.0 for a term no document has.
        :raises DocumentStoreError: When the store has no sparse vectors.
        """
        return [
            0.0 if score is None else score
            for score in self.best_scores(self.best_term_score_requests(query_sparse_embedding))
        ]

    def best_term_score_requests(self, query_sparse_embedding: SparseEmbedding) -> list[BestScoreRequest]:
        """
        The searches `best_term_scores` runs, to run in one batch with others (`best_scores`; `None` there is 0.0).

        :returns: One request per term, in the embedding's order.
        :raises DocumentStoreError: When the store has no sparse vectors.
        """
        self._require_sparse("best_term_scores()")
        return [
            BestScoreRequest(sparse_vector([index], [value]))
            for index, value in zip(query_sparse_embedding.indices, query_sparse_embedding.values)
        ]

    def best_scores(self, requests: list[BestScoreRequest]) -> list[float | None]:
        """
        Run searches of limit 1 as one batch of engine calls (what the rerank stage sends each store per query).

        :param requests: From `best_scores_by_requests` and `best_term_score_requests`, in any mix.
        :returns: Each request's best score, in order; `None` where no point was scored.
        """
        return self._best_scores(requests) if requests else []

    def list_documents_meta(
        self, filters: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """
        List ids and metadata without content or vectors (cheap enough for diffs over the whole index).

        :param filters: Haystack filters; `None` lists every document.
        :param fields: Metadata fields to return (`"path"` or `"meta.path"`); `None` returns all metadata.
            Fields a document lacks are left out of its `meta`.
        :returns: `[{"id": ..., "meta": {...}}]` in point-id order.
        :raises FilterError: When the filters are malformed.
        """
        names = None if fields is None else [meta_name(field) for field in fields]
        rows = []
        for point_id, payload in self._scroll_payloads(filters, meta_selector(fields)):
            meta = payload.get("meta") or {}
            if names is not None:
                meta = {name: meta[name] for name in names if name in meta}
            rows.append({"id": payload.get("id", str(point_id)), "meta": meta})
        return rows

    def verify(self) -> dict[str, Any]:
        """
        Read every stored point with its payload and vectors, and search each kind of vector once.

        Each dense vector is checked as the writers check it (`needle.core.vectors`): a NaN, infinite, all-zero
        or wrong-sized one (a dense-vector file overwritten behind the engine's back reads as such) is counted
        in `spoiled_dense`, its point in `spoiled_ids` and its file (`collection:path`) in `spoiled_files`.

        :returns: `points` read, `counted` by the engine, `without_dense` and `without_sparse` vectors,
            `spoiled_dense` vectors with the ids and files they belong to.
        :raises IndexDamagedError: When the store's files cannot be read.
        """
        found: dict[str, Any] = {"points": 0, "counted": 0, "without_dense": 0, "without_sparse": 0, "spoiled_dense": 0}
        spoiled_ids: list[str] = []
        spoiled_files: set[str] = set()
        dense: list[float] | None = None
        sparse: SparseEmbedding | None = None
        for document in self.iter_documents():
            found["points"] += 1
            if document.embedding is None:
                found["without_dense"] += 1
            elif describe_vector(document.embedding, self.embedding_dim) is not None:
                found["spoiled_dense"] += 1
                spoiled_ids.append(document.id)
                spoiled_files.add(f"{document.meta.get('collection', '')}:{document.meta.get('path', '')}")
            elif dense is None:
                dense = list(document.embedding)
            if self.use_sparse_embeddings:
                if document.sparse_embedding is None:
                    found["without_sparse"] += 1
                elif sparse is None:
                    sparse = document.sparse_embedding
        found["counted"] = self.count_documents()
        if dense is not None:
            self.query_dense(dense, top_k=1)
        if sparse is not None:
            self.query_sparse(sparse, top_k=1)
        return {**found, "spoiled_ids": spoiled_ids, "spoiled_files": sorted(spoiled_files)}

    def _dense_query(self, query_embedding: QueryVector) -> VectorQuery:
        """:raises ValueError: When the vector is not one-dimensional or has the wrong size."""
        return VectorQuery(DENSE_VECTORS_NAME, check_query_embedding(query_embedding, self.embedding_dim))

    def _sparse_query(self, query_sparse_embedding: SparseEmbedding, caller: str) -> VectorQuery:
        """:raises DocumentStoreError: Naming `caller`, when the store has no sparse vectors."""
        self._require_sparse(caller)
        return sparse_vector(query_sparse_embedding.indices, query_sparse_embedding.values)

    def _require_sparse(self, caller: str) -> None:
        """:raises DocumentStoreError: Naming `caller`, when the store was configured without sparse vectors."""
        if not self.use_sparse_embeddings:
            raise DocumentStoreError(
                f"{caller} needs a {self.sparse_holder} with sparse vectors (use_sparse_embeddings=True)"
            )

    def _best_scores(self, requests: list[BestScoreRequest]) -> list[float | None]:
        """Run the requests as one batch; each one's best score, `None` where no point was scored."""
        raise NotImplementedError

    def _scroll_payloads(self, filters: dict[str, Any] | None, include: list[str]) -> Iterator[tuple[Any, dict]]:
        """Every matching point's id and the payload keys in `include`, page by page."""
        raise NotImplementedError
