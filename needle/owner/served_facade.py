"""The one facade a serving process answers with: its `Needle`, or the owner's through `RemoteNeedle`.

`needle serve`, `needle mcp`, `needle watch` and a background owner each answer HTTP routes, MCP tools and
other commands with one facade (`get_needle`), whose graphs they warm at start-up: all of them, or first the
one a command asked for (`warm_first`) and the others once it answered (`warm_deferred`).
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar, cast

from needle.owner.record import TookOver

if TYPE_CHECKING:
    from needle.facade.api import Needle
    from needle.facade.interface import NeedleInterface
    from needle.owner.record import OwnerRecord

logger = logging.getLogger(__name__)

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
            from needle.facade.api import Needle  # Haystack: not imported by a process serving through an owner

            _needle = Needle()
            _needle.runtime.transient = _on_demand
        return _needle


def use_needle(needle: NeedleInterface) -> None:
    """
    Serve the endpoints with this `Needle`, or with a `needle.owner.remote.RemoteNeedle` (a second `needle mcp`
    serves its tools through the process that owns the index); before any endpoint loads.
    """
    global _needle
    with _needle_lock:
        _needle = needle


def on_the_facade(action: Callable[[NeedleInterface], T]) -> T:
    """
    Run `action` on the process's facade; when the owner it reached went away and this process took the index
    over, run it again here.
    """
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
            return on_the_facade(lambda needle: cast(Any, needle).pipeline(name))
    return on_the_facade(lambda needle: _primed(needle, needle.warm(name)))


def _local(needle: Any) -> TypeGuard[Needle]:
    """Whether `needle` is this process's own `Needle` (asked without importing Haystack when it cannot be)."""
    if "needle.facade.api" not in sys.modules:  # never imported: `needle` cannot be one
        return False
    from needle.facade.api import Needle  # waits for an import under way on another thread

    return isinstance(needle, Needle)


def _primed(needle: NeedleInterface, graph: T) -> T:
    """
    After a graph warmed in full, the process's first real search, once (`Needle.prime`): so that the first
    request does not build what a first run builds. Not through another process's owner (nothing to build
    here), and a failure is left to the requests to report.
    """
    global _prime_done
    with _warming_lock:
        if _prime_done or not _local(needle):
            return graph
        _prime_done = True
    try:
        needle.prime()
    except Exception as error:
        logger.info("The first search at start-up failed: %s", error)
        return graph
    threading.Thread(target=_read_ahead, args=(needle,), name="needle-read-ahead", daemon=True).start()
    return graph


def _read_ahead(needle: Needle) -> None:
    """`Needle.read_ahead` on its own thread; a failure (the index closed meanwhile...) is only logged."""
    try:
        read = needle.read_ahead()
    except Exception as error:
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
    Leave these graphs unloaded until a request needs them, and let go of them (and of the models only they
    use) once that request's run ends (`GraphRuntime.transient`). `needle serve` without `--watch`, `needle
    mcp` and a background owner leave the ingest graph so: its embedding model (about 90 MB) and what an index
    run parses and embeds are held only while an index run goes on, which pays the model's load on each run
    on top of its reading and embedding (both measured in docs/performance.md).

    :param names: Graph names; empty: every graph warms as `warm` and `warm_first` say.
    """
    global _on_demand
    with _warming_lock:
        _on_demand = frozenset(names)
    if _local(_needle):
        _needle.runtime.transient = _on_demand


def warm_deferred() -> list[str]:
    """
    Load and warm the graphs `warm_first` put off, in the order the endpoints asked for them; from now on
    `warm` loads at once again. A graph that fails is logged and left to load on its first request. The heap
    that loading them left free goes back to the system (`give_back_memory`).

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
        except Exception as error:
            logger.warning("Could not warm the %s graph in the background: %s", name, error)
    if warmed:
        from needle.runtime.pool import give_back_memory

        give_back_memory()  # what loading the models left free (about 55 MB) goes back to the system
    return warmed


def holding_the_index() -> Needle:
    """
    This process's `Needle`, for what needs the index's stores themselves (scheduled backups of `needle serve`).

    :raises RuntimeError: When this process serves through another process's index.
    """
    from needle.facade.api import Needle

    needle = get_needle()
    if not isinstance(needle, Needle):
        raise RuntimeError("scheduled backups run only in the process that holds the index")
    return needle


@contextmanager
def owned(owner: OwnerRecord | None) -> Iterator[None]:
    """
    Hold the owner record while the block runs: written once this process holds the index, then removed.

    :param owner: The record; `None` writes nothing.
    """
    if owner is None:
        yield
        return
    from needle.owner import record as records

    path = records.owner_path(get_needle().settings)
    records.hold_index(get_needle())  # the index is open (and locked) before anyone is told to come here
    records.write(path, owner)
    try:
        yield
    finally:
        records.remove(path, owner.pid)


__all__ = [
    "get_needle",
    "holding_the_index",
    "on_the_facade",
    "owned",
    "use_needle",
    "warm",
    "warm_deferred",
    "warm_first",
    "warm_on_demand",
]
