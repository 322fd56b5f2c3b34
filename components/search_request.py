"""The head of every query graph: validates a search request and fans it out."""

import time
from typing import Any

from haystack import component, default_from_dict, default_to_dict


@component
class SearchRequest:
    """
    Validates a search request and hands its parts to the components that need them.

    A query graph has many consumers of the same request: embedders take the text, retrievers the
    collection filter, the final cut the result count and minimum score. One entry component keeps the
    graph's public inputs to a few named values (`query`, `top_k`, `collections`, `min_score`, and the
    per-request switches `expand`, `rerank`, `chunks`, `decompose`), checks them once with messages a person can act on,
    and turns `collections` into a Haystack metadata filter. A graph connects only the outputs it uses.

    Usage example:
    ```python
    SearchRequest().run(query="replication slot", top_k=5, collections=["notes"])
    # {"query": "replication slot", "top_k": 5, "min_score": 0.0,
    #  "filters": {"field": "meta.collection", "operator": "in", "value": ["notes"]}}
    ```
    """

    def __init__(self, max_query_chars: int = 2000, max_top_k: int = 1000, top_k: int = 10, min_score: float = 0.0) -> None:
        """
        Create the request component.

        :param max_query_chars: Longest query accepted.
        :param max_top_k: Largest `top_k` accepted.
        :param top_k: Result count of a request that names none.
        :param min_score: Minimum score of a request that names none.
        :raises ValueError: When a limit is below 1, `top_k` is outside 1..`max_top_k` or `min_score` < 0.
        """
        if max_query_chars < 1:
            raise ValueError(f"max_query_chars must be > 0, got {max_query_chars}")
        if max_top_k < 1:
            raise ValueError(f"max_top_k must be > 0, got {max_top_k}")
        if not 1 <= top_k <= max_top_k:
            raise ValueError(f"top_k must be from 1 to max_top_k={max_top_k}, got {top_k}")
        if min_score < 0:
            raise ValueError(f"min_score must be >= 0, got {min_score}")
        self.max_query_chars = max_query_chars
        self.max_top_k = max_top_k
        self.top_k = top_k
        self.min_score = min_score

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self, max_query_chars=self.max_query_chars, max_top_k=self.max_top_k, top_k=self.top_k, min_score=self.min_score
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SearchRequest":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(
        query=str, top_k=int, min_score=float, filters=dict[str, Any] | None,
        expand=bool | None, rerank=bool | None, chunks=bool, decompose=bool | None, started_at=float,
    )
    def run(
        self,
        query: str,
        top_k: int | None = None,
        collections: list[str] | None = None,
        min_score: float | None = None,
        expand: bool | None = None,
        rerank: bool | None = None,
        chunks: bool = False,
        decompose: bool | None = None,
    ) -> dict[str, Any]:
        """
        Validate the request.

        :param query: The search text.
        :param top_k: How many results to return; the component's `top_k` when `None`.
        :param collections: Restrict the search to these collections; all when empty or `None`.
        :param min_score: Drop results scoring below this; the component's `min_score` when `None`.
        :param expand: Turn query expansion on or off for this request; the graph's default when `None`.
        :param rerank: Turn reranking on or off for this request; the graph's default when `None`.
        :param chunks: Return every matching chunk instead of one result per file.
        :param decompose: Split a multi-part query into sub-questions for this request; the graph's default
            when `None`.
        :returns: A dictionary with `query` (stripped), `top_k`, `min_score`, `filters` (or `None`), the
            switches `expand`, `rerank`, `chunks`, `decompose`, and `started_at` (`time.monotonic()` now, for
            stages with a time budget).
        :raises ValueError: On an empty or over-long query, a `top_k` out of range, a negative
            `min_score` or a collection name that is not a non-empty string.
        """
        top_k = self.top_k if top_k is None else top_k
        min_score = self.min_score if min_score is None else min_score
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        if len(query) > self.max_query_chars:
            raise ValueError(f"query is {len(query)} characters long; the limit is {self.max_query_chars}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= self.max_top_k:
            raise ValueError(f"top_k must be an integer from 1 to {self.max_top_k}, got {top_k!r}")
        if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or min_score < 0:
            raise ValueError(f"min_score must be a number >= 0, got {min_score!r}")
        filters = None
        if collections:
            if not all(isinstance(c, str) and c for c in collections):
                raise ValueError(f"collections must be a list of names, got {collections!r}")
            filters = {"field": "meta.collection", "operator": "in", "value": list(collections)}
        for name, value in (("expand", expand), ("rerank", rerank), ("chunks", chunks), ("decompose", decompose)):
            if value is not None and not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false, got {value!r}")
        return {
            "query": query.strip(), "top_k": top_k, "min_score": float(min_score), "filters": filters,
            "expand": expand, "rerank": rerank, "chunks": bool(chunks), "decompose": decompose,
            "started_at": time.monotonic(),
        }
