"""Drop candidates that nothing vouches for, before the costly stages."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_integrations.components.needle._scores import fused_scores


@component
class SimilarityGate:
    """
    Keeps a candidate only when its vector similarity or its BM25 score (both normalised to 0..1) clears
    a threshold; when nothing does, the answer is an explicit `NO_RESULTS`, not the best of bad hits.

    Rank fusion always returns something, however unrelated the query; this gate, placed before
    reranking, says "nothing relevant" instead, and saves the reranker from judging noise. A document
    passes if its best cosine similarity in any vector list is at least `min_similarity`, or its best
    normalised BM25 score is at least `min_bm25`. Thresholds of 0 let everything through. The lists' scores
    are read from the trace of Needle's fusion stage (`WeightedRRFJoiner`'s `meta["fusion"]`); after
    Haystack's `DocumentJoiner`, which keeps none, each document's own score counts, of the kind its
    retriever noted (`meta["score_kind"]`, set by Needle's retrievers with `score_kind`).

    Usage example:
    ```python
    SimilarityGate(min_similarity=0.3, min_bm25=0.6).run(documents=fused)
    # {"documents": [...], "status": "PASS"} or {"documents": [], "status": "NO_RESULTS"}
    ```
    """

    def __init__(self, min_similarity: float = 0.0, min_bm25: float = 0.0) -> None:
        """
        Create the gate.

        :param min_similarity: Minimum clamped cosine similarity, in [0, 1].
        :param min_bm25: Minimum normalised BM25 score `s / (1 + s)`, in [0, 1].
        :raises ValueError: On a threshold outside [0, 1].
        """
        for name, value in (("min_similarity", min_similarity), ("min_bm25", min_bm25)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {value}")
        self.min_similarity = min_similarity
        self.min_bm25 = min_bm25

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, min_similarity=self.min_similarity, min_bm25=self.min_bm25)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SimilarityGate":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def passes(self, doc: Document) -> bool:
        """Whether a document clears either threshold."""
        if self.min_similarity == 0.0 and self.min_bm25 == 0.0:
            return True
        best = fused_scores(doc)
        return best.get("cosine", -1.0) >= self.min_similarity or best.get("bm25", -1.0) >= self.min_bm25

    @component.output_types(documents=list[Document], status=str)
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        Gate the candidates.

        :param documents: Candidates: fused ones are judged by the scores their fusion trace holds
            (`WeightedRRFJoiner`'s `meta["fusion"]`), others by their own score and `meta["score_kind"]`.
        :returns: A dictionary with the passing `documents` and `status` (`PASS` or `NO_RESULTS`).
        """
        kept = [d for d in documents if self.passes(d)]
        return {"documents": kept, "status": "PASS" if kept else "NO_RESULTS"}
