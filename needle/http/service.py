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
from typing import TYPE_CHECKING, Any, TypeVar

from needle import arguments
from needle.app import Needle
from needle.arguments import (
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    MAX_REF_CHARS,
    CollectionNames,
    DateBound,
    IndexPaths,
    PathFilter,
    Query,
    Ref,
    RunInputs,
    Tags,
    Where,
    strict,
)
from needle.errors import EXIT_CODE_HEADER, classify

if TYPE_CHECKING:
    from needle.backups import BackupScheduler
    from needle.interface import NeedleInterface

logger = logging.getLogger(__name__)

# The request types every endpoint shares (`needle.arguments`, which the MCP tools take too); hayhooks turns them
# into schemas and validation. Over HTTP a number or boolean must be JSON's own: "3" is refused.
Limit = strict(arguments.Limit)
MinScore = strict(arguments.MinScore)
LineNumber = strict(arguments.LineNumber)
LineCount = strict(arguments.LineCount)
ByteCap = strict(arguments.ByteCap)

T = TypeVar("T")

_needle: NeedleInterface | None = None
_needle_lock = threading.Lock()


def get_needle() -> NeedleInterface:
    """
    The one facade of this process: its `Needle` (one store per location, each graph loaded and warmed once),
    or the `RemoteNeedle` that `use_needle` set.
    """
    global _needle
    with _needle_lock:
        if _needle is None:
            _needle = Needle()
        return _needle


def use_needle(needle: NeedleInterface) -> None:
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


def call(action: Callable[[NeedleInterface], T]) -> T:
    """
    Run `action` on the process's facade (`get_needle`), errors mapped to HTTP statuses.

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
        drop=lambda folder: backups.drop(_holding_the_index(), folder),
        directory=Path(directory),
        every=every,
        keep=keep,
    )


def _holding_the_index() -> Needle:
    """
    This process's `Needle`, for what needs the index's stores themselves (scheduled backups of `needle serve`).

    :raises RuntimeError: When this process serves through another process's index.
    """
    needle = get_needle()
    if not isinstance(needle, Needle):
        raise RuntimeError("scheduled backups run only in the process that holds the index")
    return needle


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
    "MAX_LIMIT", "MAX_QUERY_CHARS", "MAX_REF_CHARS", "IndexPaths", "ByteCap", "CollectionNames", "DateBound", "LineCount", "LineNumber", "Limit", "MinScore", "PathFilter", "Query",
    "Ref", "RunInputs", "Tags", "Where", "backup_scheduler", "call", "errors", "get_needle",
    "search_filters", "use_needle", "user_error", "warm",
]
