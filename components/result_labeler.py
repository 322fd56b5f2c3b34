"""Say how far a result list can be trusted."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.similarity_gate import best_scores

LABELS = ("PASS", "HALLUCINATION_RISK", "NO_RESULTS", "IRRELEVANT")


@component
class ResultLabeler:
    """
    Labels a response `PASS`, `HALLUCINATION_RISK`, `NO_RESULTS` or `IRRELEVANT`.

    An agent that answers from search results needs to know when not to: `NO_RESULTS` when nothing passed
    the similarity gate; `PASS` when some result's rerank score reaches `min_rerank` (or when reranking is
    off and the gate passed); `HALLUCINATION_RISK` when the best result looks similar (cosine at least
    `high_similarity`) but the reranker does not find it relevant, the case where a model would answer
    confidently from the wrong text; `IRRELEVANT` when candidates exist but none is relevant.

    Usage example:
    ```python
    ResultLabeler(min_rerank=0.5, high_similarity=0.6).run(documents=blended, gate_status="PASS")["label"]
    ```
    """

    def __init__(self, min_rerank: float = 0.5, high_similarity: float = 0.6) -> None:
        """
        Create the labeler.

        :param min_rerank: Rerank score (0..1) a result needs to count as relevant.
        :param high_similarity: Cosine similarity above which a non-relevant result is a hallucination risk.
        :raises ValueError: On a threshold outside [0, 1].
        """
        for name, value in (("min_rerank", min_rerank), ("high_similarity", high_similarity)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {value}")
        self.min_rerank = min_rerank
        self.high_similarity = high_similarity

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, min_rerank=self.min_rerank, high_similarity=self.high_similarity)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ResultLabeler":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], label=str)
    def run(self, documents: list[Document], gate_status: str | None = None) -> dict[str, Any]:
        """
        Label the response.

        :param documents: The results returned, after the cutoff (with `meta["rerank"]` when reranking ran).
        :param gate_status: The similarity gate's status, if a gate ran.
        :returns: A dictionary with `documents` (unchanged) and `label`.
        """
        if not documents or gate_status == "NO_RESULTS":
            return {"documents": documents, "label": "NO_RESULTS"}
        reranks = [(d.meta.get("rerank") or {}).get("score") for d in documents]
        known = [r for r in reranks if r is not None]
        if not known or max(known) >= self.min_rerank:
            return {"documents": documents, "label": "PASS"}
        if best_scores(documents[0]).get("cosine", 0.0) >= self.high_similarity:
            return {"documents": documents, "label": "HALLUCINATION_RISK"}
        return {"documents": documents, "label": "IRRELEVANT"}
