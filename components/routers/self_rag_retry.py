"""Self-RAG: when an answer's claims are not covered, search for what is missing and answer again."""

import re
import time
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict

from haystack_integrations.components.needle._llm_cache import load_component
from needle.core.documents import replace

logger = logging.getLogger(__name__)

_WORD = re.compile(r"\b[a-z][a-z0-9_-]{3,}\b")


def gap_query(
    question: str, uncovered: list[str], documents: list[Document], max_claims: int = 2, max_terms: int = 5
) -> str:
    """
    A query aimed at what the answer could not support: the question plus the uncovered claims' words
    (four letters or more) that none of the given chunks contains.

    :param question: The user's question.
    :param uncovered: The uncovered claims, most important first.
    :param documents: The chunks the answer was given.
    :returns: The question with up to `max_terms` new words appended; the question unchanged when there are
        none (a retry would then search for the same thing again).
    """
    known = set(_WORD.findall(question.lower()))
    for doc in documents:
        known.update(_WORD.findall((doc.content or "").lower()))
    novel = [w for w in dict.fromkeys(_WORD.findall(" ".join(uncovered[:max_claims]).lower())) if w not in known]
    return f"{question} {' '.join(novel[:max_terms])}" if novel else question


def _fuse(lists: dict[str, list[Document]], k: int = 60) -> list[Document]:
    """The lists' chunks by reciprocal rank fusion, best first (a chunk in both lists counts twice)."""
    scores: dict[str, float] = {}
    docs: dict[str, Document] = {}
    for ranked in lists.values():
        for rank, doc in enumerate(ranked):
            scores[doc.id] = scores.get(doc.id, 0.0) + 1.0 / (k + rank + 1)
            docs.setdefault(doc.id, doc)
    return [docs[i] for i in sorted(scores, key=lambda i: -scores[i])]


@component
class SelfRAGRetry:
    """
    Decides, after each answer, whether to search again for what its claims lack, and merges what it finds.

    It closes the answer loop of `pipelines/rag.yml`: the chunks and the question go to the prompt, the
    generator answers, `CitationExtractor` reads the citations and `ClaimCoverage` measures how much of the
    answer its citations support. When the coverage is below `min_coverage`, retries are left
    (`max_retries`), less than `max_seconds` have passed since the request began and the gap query (the
    question plus the uncovered claims' words that no given chunk contains, see `gap_query`) is new, it
    searches the gap query through BM25 and vectors (`retriever`, a `VariantRetriever`), appends up to
    `max_new_documents` chunks the answer did not have, and sends chunks and question round the loop to be
    answered again. Otherwise it hands on the last answer with its coverage, the number of retries, the
    uncovered claims and a warning when the coverage stayed low. The loop's state (retries, queries tried,
    filters, start time) travels through the graph (`state`, via a `BranchJoiner`). Off (`enabled=False`)
    it measures and reports but never retries. Haystack loops, but has no policy for when to.

    Usage example (see `pipelines/rag.yml` for the loop):
    ```yaml
    retry:
      type: haystack_integrations.components.routers.needle.self_rag_retry.SelfRAGRetry
      init_parameters:
        enabled: true
        max_retries: 1
        min_coverage: 0.8
        retriever: {type: haystack_integrations.components.retrievers.needle.variant_retriever.VariantRetriever, init_parameters: {document_store: chunks}}
    ```
    """

    def __init__(
        self,
        retriever: Any,
        enabled: bool = False,
        max_retries: int = 1,
        min_coverage: float = 0.8,
        max_seconds: float = 30.0,
        max_new_documents: int = 3,
        max_gap_terms: int = 5,
    ) -> None:
        """
        Create the retry policy.

        :param retriever: A `VariantRetriever` (or its serialised mapping) that searches the gap query.
        :param enabled: Retry by default; a request can switch it either way (`enabled` run input).
        :param max_retries: Retry budget per question.
        :param min_coverage: Coverage (0..1) at or above which an answer stands.
        :param max_seconds: No retry starts once this many seconds have passed since the request began.
        :param max_new_documents: At most this many new chunks join the answer's chunks per retry.
        :param max_gap_terms: At most this many words are added to the question to make the gap query.
        :raises ValueError: On a negative `max_retries`, `min_coverage` outside [0, 1], `max_seconds` not
            > 0, `max_new_documents` or `max_gap_terms` below 1, or a `retriever` mapping without `type`.
        """
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if not 0.0 <= min_coverage <= 1.0:
            raise ValueError(f"min_coverage must be within [0, 1], got {min_coverage}")
        if max_seconds <= 0:
            raise ValueError(f"max_seconds must be > 0, got {max_seconds}")
        for name, value in (("max_new_documents", max_new_documents), ("max_gap_terms", max_gap_terms)):
            if value < 1:
                raise ValueError(f"{name} must be > 0, got {value}")
        self.retriever = load_component(retriever, "retriever")
        self.enabled = enabled
        self.max_retries = max_retries
        self.min_coverage = min_coverage
        self.max_seconds = max_seconds
        self.max_new_documents = max_new_documents
        self.max_gap_terms = max_gap_terms

    def warm_up(self) -> None:
        """Warm the retriever up (its models load once per process)."""
        if hasattr(self.retriever, "warm_up"):
            self.retriever.warm_up()

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component, the retriever included."""
        return default_to_dict(
            self,
            retriever=component_to_dict(self.retriever, "retriever"),
            enabled=self.enabled,
            max_retries=self.max_retries,
            min_coverage=self.min_coverage,
            max_seconds=self.max_seconds,
            max_new_documents=self.max_new_documents,
            max_gap_terms=self.max_gap_terms,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SelfRAGRetry":
        """Deserialise the component, the nested retriever first (so that the environment gives it the store)."""
        params = data.get("init_parameters", {})
        nested = load_component(params.get("retriever"), "retriever")
        return default_from_dict(cls, {**data, "init_parameters": {**params, "retriever": nested}})

    def _search(self, query: str, documents: list[Document], filters: dict[str, Any] | None) -> list[Document]:
        """Chunks for the gap query that the answer was not given, best first, at most `max_new_documents`."""
        try:
            lists = self.retriever.run(variants=[{"kind": "sub", "text": query, "name": "gap"}], filters=filters)[
                "lists"
            ]
        except Exception as error:
            logger.warning("The retry search failed: {error}", error=error)
            return []
        given = {doc.id for doc in documents}
        fresh = [doc for doc in _fuse(lists) if doc.id not in given]
        return [
            replace(doc, embedding=None, meta={**doc.meta, "found_by": query})
            for doc in fresh[: self.max_new_documents]
        ]

    @component.output_types(
        documents=list[Document],
        query=str,
        state=dict[str, Any],
        final_documents=list[Document],
        answer=str,
        cited=list[Document],
        unknown=list[str],
        coverage=float | None,
        claims=list[dict[str, Any]],
        uncovered=list[str],
        retries=int,
        queries=list[str],
        warnings=list[str],
    )
    def run(
        self,
        query: str,
        documents: list[Document],
        answer: str,
        cited: list[Document] | None = None,
        unknown: list[str] | None = None,
        coverage: float | None = None,
        claims: list[dict[str, Any]] | None = None,
        uncovered: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        started_at: float | None = None,
        state: dict[str, Any] | None = None,
        enabled: bool | None = None,
    ) -> dict[str, Any]:
        """
        Retry or hand the answer on.

        :param query: The user's question.
        :param documents: The chunks this answer was given.
        :param answer: The answer.
        :param cited: The chunks it cites.
        :param unknown: Citations of chunks it was not given.
        :param coverage: Its claim coverage (`None`: no claims).
        :param claims: The claims as `ClaimCoverage` checked them.
        :param uncovered: The uncovered claims.
        :param filters: The search's filters, applied to the retry search too.
        :param started_at: When the request began (`time.monotonic()`); this run's first call when `None`.
        :param state: The loop's state from the previous round; `None` on the first.
        :param enabled: Retry this request or not; the init value when `None`.
        :returns: To retry: `documents` (the chunks plus the new ones), `query` and `state`, which go round
            the loop. To stop: `final_documents`, `answer`, `cited`, `unknown`, `coverage`, `claims`,
            `uncovered`, `retries`, `queries` (the gap queries searched) and `warnings`.
        """
        state = dict(
            state
            or {
                "retries": 0,
                "queries": [],
                "filters": filters,
                "started_at": started_at if started_at is not None else time.monotonic(),
            }
        )
        warnings: list[str] = []
        reason = None
        low = coverage is not None and coverage < self.min_coverage
        if low and (self.enabled if enabled is None else enabled):
            if state["retries"] >= self.max_retries:
                reason = f"the retry budget ({self.max_retries}) is spent"
            elif time.monotonic() - state["started_at"] >= self.max_seconds:
                reason = f"{self.max_seconds:g} s have passed"
            else:
                gap = gap_query(query, list(uncovered or []), documents, max_terms=self.max_gap_terms)
                if gap == query or gap in state["queries"]:
                    reason = "the uncovered claims add no word the chunks lack, so a retry would search the same"
                else:
                    state["queries"] = [*state["queries"], gap]
                    new = self._search(gap, documents, state["filters"])
                    if new:
                        state["retries"] += 1
                        return {"documents": [*documents, *new], "query": query, "state": state}
                    reason = f"the search for '{gap}' found nothing new"
            logger.info("No retry: {reason}", reason=reason)
        if low:
            share = f"{sum(1 for c in claims or [] if not c.get('covered'))} of {len(claims or [])} claims"
            after = (
                f" after {state['retries']} retr{'y' if state['retries'] == 1 else 'ies'}" if state["retries"] else ""
            )
            why = f" (no retry: {reason})" if reason and not state["retries"] else ""
            warnings.append(f"low coverage: {share} are not supported by the chunks they cite{after}{why}")
        return {
            "final_documents": documents,
            "answer": answer,
            "cited": list(cited or []),
            "unknown": list(unknown or []),
            "coverage": coverage,
            "claims": list(claims or []),
            "uncovered": list(uncovered or []),
            "retries": state["retries"],
            "queries": state["queries"],
            "warnings": warnings,
        }
