"""What the endpoint wrappers share: the process's one `Needle`, request signatures, errors as HTTP statuses.

Every HTTP route and MCP tool is a wrapper in `server/pipelines/` whose `run_api` calls `call()`: the
facade runs inside `errors()`, which maps exceptions through `needle.errors` (the one table the CLI uses
too) to an `HTTPException` with a message a person can act on and never a stack trace. A wrapper's
`run_api` takes its request's fields as `needle.requests` declares them (`takes`).
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast, get_type_hints

from needle import requests
from needle.app import Needle
from needle.arguments import annotation
from needle.errors import EXIT_CODE_HEADER, classify
from needle.owner import TookOver
from needle.requests import Param

if TYPE_CHECKING:
    from needle.backups import BackupScheduler
    from needle.interface import NeedleInterface

logger = logging.getLogger(__name__)

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

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
        try:
            return action(get_needle())
        except TookOver:  # the owner went away and this process holds the index now: run it here
            return action(get_needle())


def warm(name: str) -> Any:
    """
    Load and warm every instance of a graph at start-up (a wrapper's `setup()`); returns the first, or `None`
    when `warm_first` put the graph off (`warm_deferred` loads it later; a request loads it on first use).
    A graph `warm_first` names gets its first instance now, the others with the graphs put off.
    """
    with _warming_lock:
        if name in _on_demand:
            return None
        if _first is not None:
            if name not in _deferred:
                _deferred.append(name)
            if name not in _first:
                return None
            return call(lambda needle: cast(Any, needle).pipeline(name))
    return call(lambda needle: _primed(needle, needle.warm(name)))


def _primed(needle: NeedleInterface, graph: T) -> T:
    """
    After a graph warmed in full, the process's first real search, once (`Needle.prime`): so that the first
    request does not build what a first run builds. Not through another process's owner (nothing to build
    here), and a failure is left to the requests to report.
    """
    global _prime_done
    with _warming_lock:
        if _prime_done or not isinstance(needle, Needle):
            return graph
        _prime_done = True
    try:
        needle.prime()
    except Exception as error:  # noqa: BLE001 - the first request meets it and says it in one line
        logger.info("The first search at start-up failed: %s", error)
        return graph
    threading.Thread(target=_read_ahead, args=(needle,), name="needle-read-ahead", daemon=True).start()
    return graph


def _read_ahead(needle: Needle) -> None:
    """`Needle.read_ahead` on its own thread; a failure (the index closed meanwhile...) is only logged."""
    try:
        read = needle.read_ahead()
    except Exception as error:  # noqa: BLE001 - the searches read what they need themselves
        logger.info("Reading the index ahead stopped: %s", error)
        return
    logger.debug("Read %d points of the index ahead of the searches", read)


# The graphs `warm` loads at once (`None`: all of them), and those it put off, in the order asked.
_first: frozenset[str] | None = None
_deferred: list[str] = []
# The graphs neither `warm` nor `warm_deferred` loads: their first request does (`warm_on_demand`).
_on_demand: frozenset[str] = frozenset()
_warming_lock = threading.Lock()
_prime_done = False


def warm_first(names: Iterable[str]) -> None:
    """
    Warm only these graphs at start-up, so that the routes answer sooner (a background owner started by a
    command warms that command's graph); every other graph waits for `warm_deferred`.

    :param names: Graph names (`search`, `query`, `ingest`...); empty: none at start-up.
    """
    global _first
    with _warming_lock:
        _first = frozenset(names)


def warm_on_demand(names: Iterable[str]) -> None:
    """
    Leave these graphs unloaded until a request needs them. `needle serve` without `--watch` leaves the
    ingest graph so: its embedding model (about 100 MB) is then held only once an index run asks for it, which
    pays the model's load once on top of its reading and embedding (both measured in docs/performance.md).

    :param names: Graph names; empty: every graph warms as `warm` and `warm_first` say.
    """
    global _on_demand
    with _warming_lock:
        _on_demand = frozenset(names)


def warm_deferred() -> list[str]:
    """
    Load and warm the graphs `warm_first` put off, in the order the endpoints asked for them; from now on
    `warm` loads at once again. A graph that fails is logged and left to load on its first request.

    :returns: The graphs warmed.
    """
    global _first
    with _warming_lock:
        names, _first = sorted(_deferred, key=lambda name: name == "ingest"), None  # the searches first
        _deferred.clear()
    warmed = []
    for name in names:
        try:
            _primed(get_needle(), get_needle().warm(name))
            warmed.append(name)
        except Exception as error:  # noqa: BLE001 - the request that needs it reports it
            logger.warning("Could not warm the %s graph in the background: %s", name, error)
    return warmed


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


def takes(params: tuple[Param, ...]) -> Callable[[F], F]:
    """
    Give an endpoint wrapper's `run_api(self, **request)` the request's fields, from `needle.requests`.

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
                p.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation(p, strict_numbers=True),
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

        run_api.__signature__ = signature  # type: ignore[attr-defined]
        text = inspect.cleandoc(function.__doc__ or "")
        lines = "".join(f":param {p.name}: {p.help}\n" for p in taken)
        head, returns_line, tail = text.partition(":returns:")
        run_api.__doc__ = f"{head.rstrip()}\n\n{lines}{returns_line}{tail}"
        return cast(F, run_api)

    return apply


def search_filters(request: dict[str, Any]) -> Any:
    """A request's filters as the facade takes them (`needle.results.SearchFilters`)."""
    from needle.results import SearchFilters

    return SearchFilters(**{p.name: request[p.name] for p in requests.FILTERS})


def search(pipeline: str, request: dict[str, Any]) -> Any:
    """
    Run a search request (`needle.requests.SEARCHES`) on the graph `pipeline`: the process's `Needle`, errors as
    HTTP statuses; `set` takes run inputs only.
    """
    switches = {p.name: request.get(p.name) for p in requests.SWITCHES}  # `query` only
    return call(
        lambda needle: needle.search(
            request["query"], pipeline, top_k=request["limit"], collections=request["collections"],
            min_score=request["min_score"], chunks=request["chunks"], explain=request["explain"],
            overrides=request["set"], init_overrides=False, filters=search_filters(request), **switches,
        )
    )


__all__ = [
    "backup_scheduler", "call", "errors", "get_needle", "search", "search_filters",
    "takes", "use_needle", "user_error", "warm", "warm_deferred", "warm_first",
]
