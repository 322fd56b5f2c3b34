"""The head of every query graph: validates a search request, turns its filters into Haystack's, fans it out."""

import inspect
import time
from typing import Any

from haystack import component, default_from_dict, default_to_dict

from haystack_integrations.components.needle._dates import parse_bound, reference_time, rfc3339
from haystack_integrations.components.needle._filters import (
    IndexedFiles,
    collection_condition,
    conjunction,
    date_conditions,
    path_condition,
    tag_conditions,
    where_condition,
)
from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.document_stores.needle.access import searchable
from needle.core.requests import DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_CHARS, QueryRequest, params

# The declared request fields this component reads, by input name (`needle.core.requests`: their limits).
FIELDS = {param.graph: param for param in params(QueryRequest) if param.graph}
# The one socket not named as the graph input that feeds it: Haystack's name for a result count.
SOCKETS = {"limit": "top_k"}


@component
class SearchRequest:
    """
    Validates a search request and hands its parts to the components that need them.

    A query graph has many consumers of the same request: embedders take the text, retrievers the
    filters, the final cut the result count and minimum score. One entry component keeps the graph's
    public inputs to a few named values (`query`, `limit` (the `top_k` socket), `collections`, `min_score`, the filters `tags`,
    `tags_any`, `tags_none`, `path`, `where`, `after`, `before`, and the per-request switches `expand`,
    `rerank`, `chunks`, `decompose`, `recent`, `self_query`), checks them once with messages a person can act on, and
    turns the filters into one Haystack filter (`haystack_integrations.components.needle._filters`), which both document stores apply
    inside their searches. A path glob that is not just a folder is matched against the indexed files of
    `document_store` (the whole-file store). A graph connects only the outputs it uses. The inputs are the
    search request's fields (`needle.core.requests.QueryRequest`, by the graph inputs they feed: checked when this
    module loads, so a field added there and not read here fails at once), and are refused
    past the same limits as on every surface: the default `max_query_chars` and `max_top_k` are the
    declared ones, and the filters' lengths are checked by their declaration.

    Usage example:
    ```python
    SearchRequest().run(query="replication slot", top_k=5, collections=["notes"], tags=["postgres"])
    # {"query": "replication slot", "top_k": 5, "min_score": 0.0, "filters": {"operator": "AND", "conditions": [
    #    {"field": "meta.collection", "operator": "in", "value": ["notes"]},
    #    {"field": "meta.tags", "operator": "==", "value": "postgres"}]}, ...}
    ```
    """

    def __init__(
        self,
        max_query_chars: int = MAX_QUERY_CHARS,
        max_top_k: int = MAX_LIMIT,
        top_k: int = DEFAULT_LIMIT,
        min_score: float = 0.0,
        document_store: Any = None,
    ) -> None:
        """
        Create the request component.

        :param max_query_chars: Longest query accepted.
        :param max_top_k: Largest `top_k` accepted.
        :param top_k: Result count of a request that names none.
        :param min_score: Minimum score of a request that names none.
        :param document_store: The store of whole-file documents, listed to match a path glob; without it
            `path` takes folders and files only.
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
        store = None if document_store is None else searchable(document_store)
        self.max_query_chars = max_query_chars
        self.max_top_k = max_top_k
        self.top_k = top_k
        self.min_score = min_score
        self.document_store = document_store
        self._store = store
        self._files = None if store is None else IndexedFiles.of(store)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        store = None if self.document_store is None else self.document_store.to_dict()
        return default_to_dict(
            self,
            max_query_chars=self.max_query_chars,
            max_top_k=self.max_top_k,
            top_k=self.top_k,
            min_score=self.min_score,
            document_store=store,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SearchRequest":
        """Deserialise the component."""
        return default_from_dict(cls, with_document_store(data, optional=True))

    @component.output_types(
        query=str,
        top_k=int,
        min_score=float,
        filters=dict[str, Any] | None,
        expand=bool | None,
        rerank=bool | None,
        chunks=bool,
        decompose=bool | None,
        recent=bool | None,
        self_query=bool | None,
        now=str,
        started_at=float,
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
        tags: list[str] | None = None,
        tags_any: list[str] | None = None,
        tags_none: list[str] | None = None,
        path: str | None = None,
        where: list[str] | None = None,
        after: str | None = None,
        before: str | None = None,
        recent: bool | None = None,
        self_query: bool | None = None,
        now: str | None = None,
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
        :param tags: Only notes carrying every one of these tags.
        :param tags_any: Only notes carrying at least one of these tags.
        :param tags_none: Only notes carrying none of these tags.
        :param path: Only notes under this folder (`runbooks/`), this file, or matching this glob, relative to
            their collection's root.
        :param where: Frontmatter conditions, each `field=value` (also `!=`, `>`, `>=`, `<`, `<=`, `a|b`).
        :param after: Only notes dated on or after this (ISO date, or plain language: "last week").
        :param before: Only notes dated before this.
        :param recent: Rank newer notes higher for this request; when `None`, when the question asks for it.
        :param self_query: Read filters out of the question for this request; the graph's default when `None`.
        :param now: The reference time of relative dates and of recency (ISO); the current time when `None`.
        :returns: A dictionary with `query` (stripped), `top_k`, `min_score`, `filters` (or `None`), the
            switches `expand`, `rerank`, `chunks`, `decompose`, `recent`, `self_query`, `now` (ISO, UTC), and
            `started_at` (`time.monotonic()` now, for stages with a time budget).
        :raises ValueError: On an empty or over-long query, a `top_k` out of range, a negative `min_score`,
            a collection name that is not a non-empty string, or a filter that cannot be read.
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
        if collections and not all(isinstance(c, str) and c for c in collections):
            raise ValueError(f"collections must be a list of names, got {collections!r}")
        for name, value in (
            ("expand", expand),
            ("rerank", rerank),
            ("chunks", chunks),
            ("decompose", decompose),
            ("recent", recent),
            ("self_query", self_query),
        ):
            if value is not None and not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false, got {value!r}")
        for name, given in (
            ("collections", collections),
            ("tags", tags),
            ("tags_any", tags_any),
            ("tags_none", tags_none),
            ("path", path),
            ("where", where),
            ("after", after),
            ("before", before),
        ):
            problem = FIELDS[name].refusal(given)
            if problem:
                raise ValueError(problem)
        try:
            moment = reference_time(now)
        except (TypeError, ValueError):
            raise ValueError(f"now must be an ISO date or time, got {now!r}") from None
        filters = conjunction(
            [
                collection_condition(collections or []),
                *tag_conditions(tags or [], tags_any or [], tags_none or []),
                path_condition(path, self._files) if path else None,
                *(where_condition(expression, moment) for expression in where or []),
                *date_conditions(
                    parse_bound(after, moment) if after else None, parse_bound(before, moment) if before else None
                ),
            ]
        )
        return {
            "query": query.strip(),
            "top_k": top_k,
            "min_score": float(min_score),
            "filters": filters,
            "expand": expand,
            "rerank": rerank,
            "chunks": bool(chunks),
            "decompose": decompose,
            "recent": recent,
            "self_query": self_query,
            "now": rfc3339(moment),
            "started_at": time.monotonic(),
        }


def check_inputs() -> None:
    """
    Check that the component takes exactly the graph inputs the search request declares (`needle.core.requests`).

    :raises TypeError: Naming the inputs one side has and the other lacks.
    """
    sockets = set(inspect.signature(SearchRequest.run).parameters) - {"self"}
    declared = {SOCKETS.get(name, name) for name in FIELDS}
    if sockets != declared:
        raise TypeError(
            f"SearchRequest's inputs differ from the search request's graph inputs (needle.core.requests): "
            f"only the component takes {sorted(sockets - declared)}, only the request has {sorted(declared - sockets)}"
        )


check_inputs()
