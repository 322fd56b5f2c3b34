"""What the endpoint wrappers share: the process's one `Needle`, request types, errors as HTTP statuses.

Every HTTP route and MCP tool is a wrapper in `server/pipelines/` whose `run_api` calls `call()`: the
facade runs inside `errors()`, which maps exceptions through `needle.errors` (the one table the CLI uses
too) to an `HTTPException` with a message a person can act on and never a stack trace.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import Field

from needle.app import Needle
from needle.errors import EXIT_CODE_HEADER, classify

if TYPE_CHECKING:
    from needle.backups import BackupScheduler

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000
MAX_LIMIT = 1000
MAX_REF_CHARS = 1024

# The request types every endpoint shares; hayhooks and the MCP server turn them into schemas and validation.
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, strict=True)]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, strict=True)]
MinScore = Annotated[float, Field(ge=0.0, strict=True)]
CollectionNames = list[Annotated[str, Field(min_length=1, max_length=64, strict=True)]] | None
Ref = Annotated[str, Field(min_length=1, max_length=MAX_REF_CHARS, strict=True)]
IndexPaths = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_REF_CHARS, strict=True)]] | None,
    Field(min_length=1, max_length=MAX_LIMIT, description="Files to index: absolute, or relative to a collection root"),
]
LineNumber = Annotated[int, Field(ge=1, strict=True)]
LineCount = Annotated[int, Field(ge=1, le=100_000, strict=True)]
ByteCap = Annotated[int, Field(ge=1, le=1_000_000, strict=True)]
RunInputs = Annotated[
    dict[Annotated[str, Field(max_length=200)], Any] | None,
    Field(description="Run inputs of the graph's components for this request, e.g. {\"bm25_retriever.top_k\": 80}"),
]

# The filters of every search route and tool (the CLI's --tag, --path, --where, --after, --before, --recent).
Tags = list[Annotated[str, Field(min_length=1, max_length=100, strict=True)]] | None
PathFilter = Annotated[str, Field(min_length=1, max_length=MAX_REF_CHARS, strict=True)] | None
Where = list[Annotated[str, Field(min_length=3, max_length=300, strict=True)]] | None
DateBound = Annotated[str, Field(min_length=1, max_length=100, strict=True)] | None

T = TypeVar("T")

_needle: Any = None
_needle_lock = threading.Lock()


def get_needle() -> Needle:
    """The one `Needle` of this process: one store per location, each graph loaded and warmed once."""
    global _needle
    with _needle_lock:
        if _needle is None:
            _needle = Needle()
        return _needle


def use_needle(needle: Any) -> None:
    """
    Serve the endpoints with this `Needle`, or with a `needle.remote.RemoteNeedle` (a second `needle mcp`
    serves its tools through the process that owns the index); before any endpoint loads.
    """
    global _needle
    with _needle_lock:
        _needle = needle


@contextmanager
def errors() -> Iterator[None]:
    """
    Turn exceptions into `HTTPException`s by `needle.errors`' table: user mistakes 4xx, server trouble 5xx.

    :raises HTTPException: For any exception raised inside the block.
    """
    from fastapi import HTTPException

    try:
        yield
    except HTTPException:
        raise
    except Exception as error:
        failure = classify(error)
        if failure.http_status >= 500:
            logger.error("Request failed: %s", error, exc_info=error)
        headers = {EXIT_CODE_HEADER: str(failure.exit_code)}
        raise HTTPException(status_code=failure.http_status, detail=failure.http_message, headers=headers) from None


def call(action: Callable[[Needle], T]) -> T:
    """
    Run `action` on the process's `Needle`, errors mapped to HTTP statuses.

    Requests run side by side: each run of a graph borrows one of its warmed instances (`serve.graph_instances`
    of them; Haystack does not promise that one `Pipeline` object runs safely on several threads at once),
    and index runs, optimising and backups take turns inside `Needle`.

    :param action: What to do, e.g. `lambda n: n.status()`.
    :returns: What `action` returns.
    :raises HTTPException: 4xx for the caller's mistakes, 5xx otherwise.
    """
    with errors():
        return action(get_needle())


def warm(name: str) -> Any:
    """Load and warm every instance of a graph at start-up (a wrapper's `setup()`); returns the first."""
    return call(lambda needle: needle.warm(name))


def backup_scheduler(every: float, keep: int, directory: str) -> BackupScheduler:
    """
    Scheduled backups of this process's index (`needle serve --every`), not started.

    :param every: Seconds between backups.
    :param keep: How many to keep.
    :param directory: Where they go.
    """
    from pathlib import Path

    from needle import backups

    return backups.BackupScheduler(
        make=lambda folder: get_needle().backup(str(folder)),
        drop=lambda folder: backups.drop(get_needle(), folder),
        directory=Path(directory),
        every=every,
        keep=keep,
    )


def user_error(status: int, message: str) -> Exception:
    """An `HTTPException` for a request the wrappers refuse before calling Needle."""
    from fastapi import HTTPException

    return HTTPException(status_code=status, detail=message)


def search_filters(
    tags: Tags = None, tags_any: Tags = None, tags_none: Tags = None, path: PathFilter = None, where: Where = None,
    after: DateBound = None, before: DateBound = None, recent: bool | None = None, self_query: bool | None = None,
) -> Any:
    """A request's filters as the facade takes them (`needle.results.SearchFilters`)."""
    from needle.results import SearchFilters

    return SearchFilters(
        tags=tags, tags_any=tags_any, tags_none=tags_none, path=path, where=where, after=after, before=before,
        recent=recent, self_query=self_query,
    )


__all__ = [
    "ByteCap", "CollectionNames", "DateBound", "LineCount", "LineNumber", "Limit", "MinScore", "PathFilter", "Query",
    "Ref", "RunInputs", "Tags", "Where", "backup_scheduler", "call", "errors", "get_needle",
    "search_filters", "use_needle", "user_error", "warm",
]
