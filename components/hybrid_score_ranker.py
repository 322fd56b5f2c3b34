"""Offline reranking: rescore fused candidates by their files' exact BM25 and cosine scores."""

from dataclasses import replace
from typing import Any

from haystack import Document, component, default_to_dict
from haystack.dataclasses.sparse_embedding import SparseEmbedding

from components._checks import QueryVector, check_top_k
from components._document_store import require_store_methods, with_document_store


@component
class HybridScoreRanker:
    """
    Reranks candidate files by `bm25_weight * bm25 + (1 - bm25_weight) * cosine`, each signal exact and scaled.

    Reciprocal rank fusion keeps ranks and throws the scores away, and a file that only one list retrieved
    gets nothing from the other. This ranker asks the store for the exact scores of every chunk of the
    candidate files (one dense and one sparse query, restricted to those files, returning ids and scores
    only) and keeps each file's best chunk per signal. The cosine is divided by the best candidate's; the
    BM25 score by the best the query could reach (the sum, over its terms, of the best single-term score in
    the index), so a file that matches one incidental word of a paraphrased question scores low instead of
    being stretched to 1 by min-max scaling. It needs no model of its own (the query's embeddings come from
    the graph) and is the offline default of the rerank stage: no cross-encoder installs offline, and this
    rescoring is what lifts the hybrid graph on SciFact and on the golden set (see the README's ablation).
    Haystack's rankers either run a model (cross-encoders, LLMs) or sort by metadata; none rescores with
    the store's scores.

    The cosine part is relative to the candidate set, so scores are not cached per document:
    `cacheable = False` tells `CachedReranker` to skip its cache.

    Usage example:
    ```python
    ranker = HybridScoreRanker(document_store=store, bm25_weight=0.5)
    ranker.run(query="q", documents=candidates, query_embedding=vector, query_sparse_embedding=sparse)
    ```
    """

    cacheable = False

    def __init__(
        self,
        document_store: Any,
        bm25_weight: float = 0.5,
        group_by: str = "source_doc_id",
        max_chunks_per_file: int = 50,
    ) -> None:
        """
        Create the ranker.

        :param document_store: A Needle document store (it must provide `query_scores` and `best_term_scores`).
        :param bm25_weight: Weight of the normalised BM25 score; the cosine gets the rest.
        :param group_by: Metadata field naming a document's file; candidates are scored per file.
        :param max_chunks_per_file: Chunks scored per candidate file at most (a file's best chunks come first).
        :raises ValueError: When the store cannot score, `bm25_weight` is outside [0, 1], or
            `max_chunks_per_file` is below 1.
        """
        require_store_methods(document_store, "query_scores", "best_term_scores")
        if not 0.0 <= bm25_weight <= 1.0:
            raise ValueError(f"bm25_weight must be within [0, 1], got {bm25_weight}")
        if max_chunks_per_file < 1:
            raise ValueError(f"max_chunks_per_file must be > 0, got {max_chunks_per_file}")
        self.document_store = document_store
        self.bm25_weight = bm25_weight
        self.group_by = group_by
        self.max_chunks_per_file = max_chunks_per_file

    def to_dict(self) -> dict[str, Any]:
        """Serialise the ranker and its store."""
        return default_to_dict(
            self,
            document_store=self.document_store.to_dict(),
            bm25_weight=self.bm25_weight,
            group_by=self.group_by,
            max_chunks_per_file=self.max_chunks_per_file,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HybridScoreRanker":
        """Deserialise the ranker; the store is rebuilt from its own dictionary."""
        return cls(**with_document_store(data)["init_parameters"])

    def _file(self, doc: Document) -> str:
        return str(doc.meta.get(self.group_by, doc.id))

    def _best_scores(self, files: list[str], **query: Any) -> dict[str, float]:
        """Each file's best chunk score for one query (files without a scored chunk are left out)."""
        rows = self.document_store.query_scores(
            **query,
            top_k=len(files) * self.max_chunks_per_file,
            filters={"field": f"meta.{self.group_by}", "operator": "in", "value": files},
            fields=[self.group_by],
        )
        best: dict[str, float] = {}
        for row in rows:  # best first: a file's first row is its best chunk
            best.setdefault(str(row["meta"].get(self.group_by, row["id"])), row["score"])
        return best

    def _lexical_ceiling(self, query_sparse_embedding: SparseEmbedding) -> float:
        """The best BM25 score the query could reach: each term's best single-term score, summed."""
        return float(sum(self.document_store.best_term_scores(query_sparse_embedding)))

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        documents: list[Document],
        top_k: int | None = None,
        query_embedding: QueryVector | None = None,
        query_sparse_embedding: SparseEmbedding | None = None,
    ) -> dict[str, list[Document]]:
        """
        Rescore and sort the candidates.

        :param query: The user's query (unused: the embeddings carry it; kept for the ranker interface).
        :param documents: Candidates, one per file.
        :param top_k: How many to return; all when `None`.
        :param query_embedding: The query's dense embedding.
        :param query_sparse_embedding: The query's sparse (BM25) embedding.
        :returns: A dictionary with `documents`, best first, `score` in [0, 1] and `meta["hybrid"]` holding
            the file's exact `bm25` and `cosine` scores and the query's `bm25_ceiling`.
        :raises ValueError: When `top_k` is below 1 or an embedding is missing.
        """
        check_top_k(top_k, optional=True)
        if query_embedding is None or query_sparse_embedding is None:
            raise ValueError("HybridScoreRanker needs query_embedding and query_sparse_embedding")
        if not documents:
            return {"documents": []}
        files = list(dict.fromkeys(self._file(doc) for doc in documents))
        cosine = self._best_scores(files, query_embedding=query_embedding)
        bm25 = self._best_scores(files, query_sparse_embedding=query_sparse_embedding)
        best_cosine = max(cosine.get(f, 0.0) for f in files)
        ceiling = self._lexical_ceiling(query_sparse_embedding) if bm25 else 0.0
        lexical = {f: min(bm25.get(f, 0.0) / ceiling, 1.0) if ceiling > 0 else 0.0 for f in files}
        semantic = {f: max(cosine.get(f, 0.0), 0.0) / best_cosine if best_cosine > 0 else 0.0 for f in files}
        mixed = {f: self.bm25_weight * lexical[f] + (1.0 - self.bm25_weight) * semantic[f] for f in files}
        ranked = [
            replace(
                doc,
                score=mixed[key],
                meta={**doc.meta, "hybrid": {"bm25": bm25.get(key, 0.0), "cosine": cosine.get(key, 0.0), "bm25_ceiling": ceiling}},
            )
            for doc, key in ((doc, self._file(doc)) for doc in documents)
        ]
        ranked.sort(key=lambda doc: -(doc.score or 0.0))
        return {"documents": ranked if top_k is None else ranked[:top_k]}

