"""What the endpoint wrappers share: the process's one `Needle`, request signatures, errors as HTTP statuses.

Every HTTP route and MCP tool is a wrapper in `server/pipelines/` whose `run_api` calls `call()`: the
facade runs inside `errors()`, which maps exceptions through `needle.core.errors` (the one table the CLI uses
too) to an `HTTPException` with a message a person can act on and never a stack trace. A wrapper's
`run_api` takes its request's fields as `needle.core.requests` declares them (`takes`).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast, get_type_hints

from needle.commands.failures import classify
from needle.core import requests
from needle.core.arguments import annotation
from needle.core.errors import EXIT_CODE_HEADER
from needle.core.requests import Param
from needle.owner.served_facade import get_needle, holding_the_index, on_the_facade

if TYPE_CHECKING:
    from needle.facade.interface import NeedleInterface
    from needle.lifecycle.backups import BackupScheduler

logger = logging.getLogger(__name__)

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def errors() -> Iterator[None]:
    """
    Turn exceptions into `HTTPException`s by `needle.core.errors`' table: user mistakes 4xx, server trouble 5xx.

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
        return on_the_facade(action)


def backup_scheduler(every: float, keep: int, directory: str) -> BackupScheduler:
    """
    Scheduled backups of this process's index (`needle serve --every`), not started.

    :param every: Seconds between backups.
    :param keep: How many to keep.
    :param directory: Where they go.
    """
    from pathlib import Path

    from needle.lifecycle import backups

    return backups.BackupScheduler(
        make=lambda folder: get_needle().backup(str(folder)),
        drop=lambda folder: backups.drop(holding_the_index(), folder),
        directory=Path(directory),
        every=every,
        keep=keep,
    )


def user_error(status: int, message: str) -> Exception:
    """An `HTTPException` for a request the wrappers refuse before calling Needle."""
    from fastapi import HTTPException

    return HTTPException(status_code=status, detail=message)


def takes(params: tuple[Param, ...]) -> Callable[[F], F]:
    """
    Give an endpoint wrapper's `run_api(self, **request)` the request's fields, from `needle.core.requests`.

    hayhooks builds the route's request model from the method's signature and its docstring's `:param` lines;
    this sets both: a keyword parameter per field the route takes (its JSON-strict type, limits and default),
    and the field's one-line description before the docstring's `:returns:`. A call (the route's, an MCP
    tool's with the fields it was sent) reaches the method with every field, defaults filled in; a name the
    request does not declare is refused (`TypeError`).

    :param params: The request's fields; those with `http` off are left out.
    """

    def apply(function: F) -> F:
        taken = [p for p in params if p.http]
        parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + [
            inspect.Parameter(
                p.name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=annotation(p, strict_numbers=True),
                default=inspect.Parameter.empty if p.required else p.default,
            )
            for p in taken
        ]
        returns = get_type_hints(function).get("return", inspect.Signature.empty)
        signature = inspect.Signature(parameters, return_annotation=returns)

        @functools.wraps(function)
        def run_api(self: Any, **request: Any) -> Any:
            bound = signature.bind(self, **request)
            bound.apply_defaults()
            return function(self, **{name: value for name, value in bound.arguments.items() if name != "self"})

        run_api.__signature__ = signature  # type: ignore[attr-defined]  # what inspect.signature reads
        text = inspect.cleandoc(function.__doc__ or "")
        lines = "".join(f":param {p.name}: {p.help}\n" for p in taken)
        head, returns_line, tail = text.partition(":returns:")
        run_api.__doc__ = f"{head.rstrip()}\n\n{lines}{returns_line}{tail}"
        return cast(F, run_api)

    return apply


def search_filters(request: dict[str, Any]) -> Any:
    """A request's filters as the facade takes them (`needle.core.results.SearchFilters`)."""
    from needle.core.results import SearchFilters

    return SearchFilters(**{p.name: request[p.name] for p in requests.FILTERS})


def search(pipeline: str, request: dict[str, Any]) -> Any:
    """
    Run a search request (`needle.core.requests.SEARCHES`) on the graph `pipeline`: the process's `Needle`, errors as
    HTTP statuses; `set` takes run inputs only.
    """
    switches = {p.name: request.get(p.name) for p in requests.SWITCHES}  # `query` only
    return call(
        lambda needle: needle.search(
            request["query"],
            pipeline,
            top_k=request["limit"],
            collections=request["collections"],
            min_score=request["min_score"],
            chunks=request["chunks"],
            explain=request["explain"],
            overrides=request["set"],
            init_overrides=False,
            filters=search_filters(request),
            **switches,
        )
    )


__all__ = ["backup_scheduler", "call", "errors", "search", "search_filters", "takes", "user_error"]
