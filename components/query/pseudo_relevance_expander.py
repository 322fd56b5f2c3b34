"""Query expansion without a language model: pseudo-relevance feedback."""

import math
import re
from collections import Counter
from typing import Any

from haystack import Document, component, default_to_dict, logging
from haystack.dataclasses.sparse_embedding import SparseEmbedding

from haystack_integrations.components.needle._scores import STOPWORDS, normalize_bm25, query_terms, strong_signal
from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.document_stores.needle.access import searchable
from needle.core.checks import OptionalQueryVector, QueryVector, check_top_k
from needle.core.documents import replace
from needle.core.schema import FILE_ID

logger = logging.getLogger(__name__)
_TOKEN = re.compile(r"[a-z][a-z0-9'-]+")


@component
class PseudoRelevanceExpander:
    """
    Expands a query from its own first results: RM3-style terms for BM25, a Rocchio vector for the
    dense side.

    The small models that install offline cannot write query variants, so this expander needs none. It
    treats the top `feedback_docs` files of a BM25 probe as relevant: the lexical variant is the query
    plus the `lex_terms` words that weigh most in those files (term frequency over chunk length, weighted
    by the file's normalised BM25 score, common words and query words left out); the semantic variant is
    the query embedding moved towards the mean of the top `feedback_docs` dense hits' embeddings by
    `rocchio_beta` and re-normalised. Variants come out in the same shape as an LLM expander's
    (`{"kind": "lex"|"vec", "text": ..., "embedding": ...}`) so the graph is the same either way. Like
    qmd, it skips expansion when the BM25 probe is already decisive.

    It runs its own feedback queries against the store (as RM3 implementations run their own first pass)
    instead of taking the graph's retrieval results: Haystack deep-copies every input of every stage, and
    eighty documents (forty with their vectors) cost a switched-off expander most of 10 ms per query. Now
    it takes only the query's embeddings, and only an expanding request pays for feedback.

    Usage example:
    ```python
    expander = PseudoRelevanceExpander(document_store=store, feedback_docs=5, lex_terms=8)
    expander.run(query="slot lag", query_embedding=dense, query_sparse_embedding=sparse)
    ```
    """

    def __init__(
        self,
        document_store: Any,
        feedback_docs: int = 5,
        lex_terms: int = 8,
        rocchio_beta: float = 0.5,
        include_lex: bool = True,
        include_vec: bool = True,
        strong_signal_min_score: float = 0.85,
        strong_signal_min_gap: float = 0.15,
        enabled: bool = True,
        probe_top_k: int = 40,
        group_by: str = FILE_ID,
    ) -> None:
        """
        Create the expander.

        :param document_store: A Needle document store (or qdrant-haystack's `QdrantDocumentStore`); its `query_sparse()` and `query_dense()` run the probes.
        :param feedback_docs: Files taken as relevant from each probe list.
        :param lex_terms: Expansion words added to the lexical variant.
        :param rocchio_beta: Weight of the feedback centroid added to the query vector.
        :param include_lex: Produce the lexical variant.
        :param include_vec: Produce the semantic (vector) variant.
        :param strong_signal_min_score: Skip when the best normalised BM25 score reaches this...
        :param strong_signal_min_gap: ...and leads the second file by this much.
        :param enabled: Expand by default; a request can still switch it either way.
        :param probe_top_k: Chunks fetched by each feedback query (enough to find `feedback_docs` files).
        :param group_by: Metadata field naming a chunk's file.
        :raises ValueError: On counts below 1, a negative beta, or a store that is not one Needle's components can search (`searchable`).
        """
        if feedback_docs < 1 or lex_terms < 1:
            raise ValueError(f"feedback_docs and lex_terms must be > 0, got {feedback_docs} and {lex_terms}")
        if rocchio_beta < 0:
            raise ValueError(f"rocchio_beta must be >= 0, got {rocchio_beta}")
        check_top_k(probe_top_k)
        self._store = searchable(document_store)
        self.document_store = document_store
        self.feedback_docs = feedback_docs
        self.lex_terms = lex_terms
        self.rocchio_beta = rocchio_beta
        self.include_lex = include_lex
        self.include_vec = include_vec
        self.strong_signal_min_score = strong_signal_min_score
        self.strong_signal_min_gap = strong_signal_min_gap
        self.enabled = enabled
        self.probe_top_k = probe_top_k
        self.group_by = group_by

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component and its store."""
        return default_to_dict(
            self,
            document_store=self.document_store.to_dict(),
            feedback_docs=self.feedback_docs,
            lex_terms=self.lex_terms,
            rocchio_beta=self.rocchio_beta,
            include_lex=self.include_lex,
            include_vec=self.include_vec,
            strong_signal_min_score=self.strong_signal_min_score,
            strong_signal_min_gap=self.strong_signal_min_gap,
            enabled=self.enabled,
            probe_top_k=self.probe_top_k,
            group_by=self.group_by,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PseudoRelevanceExpander":
        """Deserialise the component; the store is rebuilt from its own dictionary."""
        return cls(**with_document_store(data)["init_parameters"])

    def probe(self, query_sparse_embedding: SparseEmbedding, filters: dict[str, Any] | None = None) -> list[Document]:
        """The BM25 probe: the query's best chunks, scores normalised to [0, 1) like the graph's BM25 list."""
        hits = self._store.query_sparse(
            query_sparse_embedding, top_k=self.probe_top_k, filters=filters, fields=[self.group_by]
        )
        return [replace(doc, score=normalize_bm25(doc.score)) for doc in hits]

    def vector_feedback(self, query_embedding: QueryVector, filters: dict[str, Any] | None = None) -> list[Document]:
        """The query's nearest chunks, with their embeddings, best first."""
        return self._store.query_dense(
            query_embedding, top_k=self.probe_top_k, filters=filters, return_embedding=True, fields=[self.group_by]
        )

    def _top_files(self, documents: list[Document]) -> list[Document]:
        seen: set[Any] = set()
        top = []
        for doc in documents:
            key = doc.meta.get(self.group_by, doc.id)
            if key not in seen:
                seen.add(key)
                top.append(doc)
            if len(top) == self.feedback_docs:
                break
        return top

    def expansion_terms(self, query: str, documents: list[Document]) -> list[str]:
        """The RM3-style expansion words for `query` from feedback `documents` (best first)."""
        exclude = set(query_terms(query, 1)) | STOPWORDS
        weights: dict[str, float] = {}
        for doc in self._top_files(documents):
            tokens = [t for t in _TOKEN.findall((doc.content or "").lower()) if len(t) > 2 and not t.isdigit()]
            if not tokens:
                continue
            relevance = max(float(doc.score or 0.0), 1e-6)
            for term, tf in Counter(tokens).items():
                if term not in exclude:
                    weights[term] = weights.get(term, 0.0) + relevance * tf / len(tokens)
        return [term for term, _ in sorted(weights.items(), key=lambda item: -item[1])[: self.lex_terms]]

    def rocchio(self, query_embedding: QueryVector, documents: list[Document]) -> list[float] | None:
        """The query vector moved towards the centroid of the feedback documents' embeddings."""
        vectors = [d.embedding for d in self._top_files(documents) if d.embedding]
        if not vectors or len(query_embedding) == 0:
            return None
        dim = len(query_embedding)
        centroid = [sum(v[i] for v in vectors) / len(vectors) for i in range(dim)]
        moved = [q + self.rocchio_beta * c for q, c in zip(query_embedding, centroid)]
        norm = math.sqrt(sum(x * x for x in moved)) or 1.0
        return [float(x / norm) for x in moved]

    @component.output_types(variants=list[dict[str, Any]], skipped=str | None)
    def run(
        self,
        query: str,
        query_embedding: OptionalQueryVector = None,
        query_sparse_embedding: SparseEmbedding | None = None,
        filters: dict[str, Any] | None = None,
        enabled: bool | None = None,
    ) -> dict[str, Any]:
        """
        Expand the query.

        :param query: The user's query.
        :param query_embedding: The query's dense embedding (for the semantic variant).
        :param query_sparse_embedding: The query's BM25 embedding (for the probe and the lexical variant).
        :param filters: Haystack filters of the request (its collections), applied to the feedback queries.
        :param enabled: Turns expansion on or off for this request; the init value when `None`.
        :returns: A dictionary with `variants` (possibly empty) and `skipped` (why none, or `None`).
        """
        if not (self.enabled if enabled is None else enabled):
            return {"variants": [], "skipped": "expansion off"}
        probe = self.probe(query_sparse_embedding, filters) if query_sparse_embedding is not None else []
        if strong_signal(probe, self.strong_signal_min_score, self.strong_signal_min_gap, self.group_by):
            return {"variants": [], "skipped": "strong BM25 signal"}
        variants: list[dict[str, Any]] = []
        if self.include_lex:
            terms = self.expansion_terms(query, probe)
            if terms:
                variants.append({"kind": "lex", "name": "prf_lex", "text": f"{query} {' '.join(terms)}"})
        if self.include_vec and query_embedding is not None:
            moved = self.rocchio(query_embedding, self.vector_feedback(query_embedding, filters))
            if moved is not None:
                variants.append({"kind": "vec", "name": "prf_vec", "text": query, "embedding": moved})
        return {"variants": variants, "skipped": None if variants else "no feedback documents"}
