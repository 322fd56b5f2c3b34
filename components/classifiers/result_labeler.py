"""Say how far a result list can be trusted."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_integrations.components.needle._scores import fused_scores

LABELS = ("PASS", "HALLUCINATION_RISK", "NO_RESULTS", "IRRELEVANT")


@component
class ResultLabeler:
    """
    Labels a response `PASS`, `HALLUCINATION_RISK`, `NO_RESULTS` or `IRRELEVANT`.

    An agent that answers from search results needs to know when not to: `NO_RESULTS` when nothing passed
    the similarity gate; `PASS` when the response's confidence (see `ConfidenceScorer`) reaches
    `min_confidence`, so that the label and the confidence always agree; without a confidence, when some
    result's rerank score reaches `min_rerank` (or when reranking is off and the gate passed).
    `HALLUCINATION_RISK` when the best result looks similar (cosine at least `high_similarity`) but is not
    judged relevant, the case where a model would answer confidently from the wrong text, and for an answer
    whose claims its citations cover less than `min_coverage`; `IRRELEVANT` when candidates exist but none
    is relevant.

    Usage example:
    ```python
    ResultLabeler(min_confidence=0.5).run(documents=results, gate_status="PASS", confidence=0.83)["label"]  # PASS
    ```
    """

    def __init__(
        self,
        min_rerank: float = 0.5,
        high_similarity: float = 0.6,
        min_confidence: float = 0.5,
        min_coverage: float = 0.5,
    ) -> None:
        """
        Create the labeler.

        :param min_rerank: Rerank score (0..1) a result needs to count as relevant, when no confidence is given.
        :param high_similarity: Cosine similarity above which a non-relevant result is a hallucination risk.
        :param min_confidence: Confidence (0..1) a response needs to `PASS`.
        :param min_coverage: Claim coverage below which an answer that does not pass is a hallucination risk.
        :raises ValueError: On a threshold outside [0, 1].
        """
        for name, value in (
            ("min_rerank", min_rerank),
            ("high_similarity", high_similarity),
            ("min_confidence", min_confidence),
            ("min_coverage", min_coverage),
        ):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {value}")
        self.min_rerank = min_rerank
        self.high_similarity = high_similarity
        self.min_confidence = min_confidence
        self.min_coverage = min_coverage

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self,
            min_rerank=self.min_rerank,
            high_similarity=self.high_similarity,
            min_confidence=self.min_confidence,
            min_coverage=self.min_coverage,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ResultLabeler":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], label=str)
    def run(
        self,
        documents: list[Document],
        gate_status: str | None = None,
        confidence: float | None = None,
        coverage: float | None = None,
    ) -> dict[str, Any]:
        """
        Label the response.

        :param documents: The results returned, after the cutoff (with `meta["rerank"]` when reranking ran).
        :param gate_status: The similarity gate's status, if a gate ran.
        :param confidence: The response's confidence (0..1), if the graph scores one: it alone decides `PASS`.
        :param coverage: An answer's claim coverage (0..1), if there is an answer.
        :returns: A dictionary with `documents` (unchanged) and `label`.
        """
        if not documents or gate_status == "NO_RESULTS":
            return {"documents": documents, "label": "NO_RESULTS"}
        if confidence is not None:
            if confidence >= self.min_confidence:
                return {"documents": documents, "label": "PASS"}
        else:
            reranks = [(d.meta.get("rerank") or {}).get("score") for d in documents]
            known = [r for r in reranks if r is not None]
            if not known or max(known) >= self.min_rerank:
                return {"documents": documents, "label": "PASS"}
        similar = fused_scores(documents[0]).get("cosine", 0.0) >= self.high_similarity
        if similar or (coverage is not None and coverage < self.min_coverage):
            return {"documents": documents, "label": "HALLUCINATION_RISK"}
        return {"documents": documents, "label": "IRRELEVANT"}
