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
from haystack_integrations.document_stores.needle.protocol import BestScore
from needle.core.checks import QueryVector, check_query_embedding


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
    The methods of `SearchableStore` and `ManagedStore` that both stores implement the same way (documented there).

    A store sets `embedding_dim` and `use_sparse_embeddings`, and implements `_best_scores` (a batch of
    `BestScoreRequest`s) and `_scroll_payloads` (every point's id and selected payload).
    """

    embedding_dim: int
    use_sparse_embeddings: bool
    # What a store without sparse vectors is called in the error that says so.
    sparse_holder = "store"

    if TYPE_CHECKING:
        # Each store's own (`SearchableStore`), called by `verify`.

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
        """`SearchableStore.count_values`, counted over the listed metadata."""
        name = meta_name(field)
        counts: dict[str, int] = {}
        for row in self.list_documents_meta(filters=filters, fields=[name]):
            if name in row["meta"]:
                value = str(row["meta"][name])
                counts[value] = counts.get(value, 0) + 1
        return counts

    def best_scores(self, searches: list[BestScore]) -> list[float | None]:
        """
        `SearchableStore.best_scores`. Each distinct query vector is checked and converted once (a file's searches share the query's), then
        the store runs the batch without reading any payload: which file a score belongs to is its position
        in the batch. Reading back the payload of every scored document to learn its file (what one search
        restricted to all the files would need) costs several times the scoring itself.
        """
        if not searches:
            return []
        queries: dict[int, VectorQuery] = {}
        requests = []
        for search in searches:
            vector: Any = search.dense if search.dense is not None else search.sparse
            query = queries.get(id(vector))
            if query is None:
                if search.dense is not None:
                    query = self._dense_query(search.dense)
                else:
                    assert search.sparse is not None
                    query = self._sparse_query(search.sparse, "best_scores() with a sparse query")
                queries[id(vector)] = query
            key = None if search.field is None else f"meta.{meta_name(search.field)}"
            requests.append(BestScoreRequest(query, key, search.value, exact=key is not None))
        return self._best_scores(requests)

    def list_documents_meta(
        self, filters: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """`SearchableStore.list_documents_meta`, in point-id order."""
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
        `ManagedStore.verify`. Each dense vector is checked as the writers check it (`needle.core.vectors`): a
        NaN, infinite, all-zero or wrong-sized one (a dense-vector file overwritten behind the engine's back
        reads as such) is counted in `spoiled_dense`, its point in `spoiled_ids`, its file in `spoiled_files`.
        """
        from needle.core.vectors import describe  # only a check reads every vector: searches stay light to import

        found: dict[str, Any] = {"points": 0, "counted": 0, "without_dense": 0, "without_sparse": 0, "spoiled_dense": 0}
        spoiled_ids: list[str] = []
        spoiled_files: set[str] = set()
        dense: list[float] | None = None
        sparse: SparseEmbedding | None = None
        for document in self.iter_documents():
            found["points"] += 1
            if document.embedding is None:
                found["without_dense"] += 1
            elif describe(document.embedding, self.embedding_dim) is not None:
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
