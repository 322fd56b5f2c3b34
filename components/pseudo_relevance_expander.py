"""Query expansion without a language model: pseudo-relevance feedback."""

import math
import re
from collections import Counter
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components._checks import QueryVector
from components._scores import STOPWORDS, query_terms, strong_signal

logger = logging.getLogger(__name__)
_TOKEN = re.compile(r"[a-z][a-z0-9'-]+")


@component
class PseudoRelevanceExpander:
    """
    Expands a query from its own first results: RM3-style terms for BM25, a Rocchio vector for the
    dense side.

    The small models that install offline cannot write query variants, so this expander needs none. It
    treats the top `feedback_docs` files of the BM25 probe as relevant: the lexical variant is the query
    plus the `lex_terms` words that weigh most in those files (term frequency over chunk length, weighted
    by the file's normalised BM25 score, common words and query words left out); the semantic variant is
    the query embedding moved towards the mean of the top `feedback_docs` dense hits' embeddings by
    `rocchio_beta` and re-normalised. Variants come out in the same shape as an LLM expander's
    (`{"kind": "lex"|"vec", "text": ..., "embedding": ...}`) so the graph is the same either way. Like
    qmd, it skips expansion when the BM25 probe is already decisive.

    Usage example:
    ```python
    expander = PseudoRelevanceExpander(feedback_docs=5, lex_terms=8)
    expander.run(query="slot lag", probe_documents=bm25_hits, query_embedding=q, vector_documents=dense_hits)
    ```
    """

    def __init__(
        self,
        feedback_docs: int = 5,
        lex_terms: int = 8,
        rocchio_beta: float = 0.5,
        include_lex: bool = True,
        include_vec: bool = True,
        strong_signal_min_score: float = 0.85,
        strong_signal_min_gap: float = 0.15,
        enabled: bool = True,
    ) -> None:
        """
        Create the expander.

        :param feedback_docs: Files taken as relevant from each probe list.
        :param lex_terms: Expansion words added to the lexical variant.
        :param rocchio_beta: Weight of the feedback centroid added to the query vector.
        :param include_lex: Produce the lexical variant.
        :param include_vec: Produce the semantic (vector) variant.
        :param strong_signal_min_score: Skip when the best normalised BM25 score reaches this...
        :param strong_signal_min_gap: ...and leads the second file by this much.
        :param enabled: Expand by default; a request can still switch it either way.
        :raises ValueError: On counts below 1 or a negative beta.
        """
        if feedback_docs < 1 or lex_terms < 1:
            raise ValueError(f"feedback_docs and lex_terms must be > 0, got {feedback_docs} and {lex_terms}")
        if rocchio_beta < 0:
            raise ValueError(f"rocchio_beta must be >= 0, got {rocchio_beta}")
        self.feedback_docs = feedback_docs
        self.lex_terms = lex_terms
        self.rocchio_beta = rocchio_beta
        self.include_lex = include_lex
        self.include_vec = include_vec
        self.strong_signal_min_score = strong_signal_min_score
        self.strong_signal_min_gap = strong_signal_min_gap
        self.enabled = enabled

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self,
            feedback_docs=self.feedback_docs,
            lex_terms=self.lex_terms,
            rocchio_beta=self.rocchio_beta,
            include_lex=self.include_lex,
            include_vec=self.include_vec,
            strong_signal_min_score=self.strong_signal_min_score,
            strong_signal_min_gap=self.strong_signal_min_gap,
            enabled=self.enabled,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PseudoRelevanceExpander":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def _top_files(self, documents: list[Document]) -> list[Document]:
        seen: set[Any] = set()
        top = []
        for doc in documents:
            key = doc.meta.get("source_doc_id", doc.id)
            if key not in seen:
                seen.add(key)
                top.append(doc)
            if len(top) == self.feedback_docs:
                break
        return top

    def expansion_terms(self, query: str, documents: list[Document]) -> list[str]:
        """The RM3-style expansion words for `query` from feedback `documents` (best first)."""
        exclude = set(query_terms(query, 1)) | STOPWORDS
        weights: Counter[str] = Counter()
        for doc in self._top_files(documents):
            tokens = [t for t in _TOKEN.findall((doc.content or "").lower()) if len(t) > 2 and not t.isdigit()]
            if not tokens:
                continue
            relevance = max(float(doc.score or 0.0), 1e-6)
            for term, tf in Counter(tokens).items():
                if term not in exclude:
                    weights[term] += relevance * tf / len(tokens)
        return [term for term, _ in weights.most_common(self.lex_terms)]

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
        probe_documents: list[Document] | None = None,
        query_embedding: QueryVector | None = None,
        vector_documents: list[Document] | None = None,
        enabled: bool | None = None,
    ) -> dict[str, Any]:
        """
        Expand the query.

        :param query: The user's query.
        :param probe_documents: BM25 results for the query, normalised scores, best first.
        :param query_embedding: The query's dense embedding.
        :param vector_documents: Dense results for the query, with embeddings, best first.
        :param enabled: Turns expansion on or off for this request; the init value when `None`.
        :returns: A dictionary with `variants` (possibly empty) and `skipped` (why none, or `None`).
        """
        probe = probe_documents or []
        if not (self.enabled if enabled is None else enabled):
            return {"variants": [], "skipped": "expansion off"}
        if strong_signal(probe, self.strong_signal_min_score, self.strong_signal_min_gap):
            return {"variants": [], "skipped": "strong BM25 signal"}
        variants: list[dict[str, Any]] = []
        if self.include_lex:
            terms = self.expansion_terms(query, probe)
            if terms:
                variants.append({"kind": "lex", "name": "prf_lex", "text": f"{query} {' '.join(terms)}"})
        if self.include_vec:
            moved = self.rocchio(query_embedding if query_embedding is not None else [], vector_documents or [])
            if moved is not None:
                variants.append({"kind": "vec", "name": "prf_vec", "text": query, "embedding": moved})
        return {"variants": variants, "skipped": None if variants else "no feedback documents"}
