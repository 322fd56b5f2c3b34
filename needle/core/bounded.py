"""Run one costly call in a child process that may use so much memory and so many seconds, and no more.

A document's size does not tell what reading it costs: a 27 MB DOCX unpacking to 190 MB of XML took six
minutes and 3.6 GB in the converter, and nothing inside Python can interrupt a parser busy in C or take back
the memory it holds. So the call runs in a child forked from a small server process (`forkserver`: fork
without the parent's threads, its models or its open index), with an address-space limit (`RLIMIT_AS`) set
before the call and a deadline after which the child is killed. What goes wrong is `OutOfBounds`, with the
reason a person reads; the parent loses nothing.

Usage example:
```python
from needle.core.bounded import Bounds, run_bounded

text = run_bounded(extract, data, "docx", bounds=Bounds(max_seconds=60, max_memory_mb=1024))
```
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

# Modules the server process imports once, so that each child starts with them loaded.
# (a converter's library that is not installed is passed over; `Extractor` says what to install).
PRELOAD = [
    "needle.core.file_formats",
    "haystack.components.converters.docx",
    "haystack.components.converters.pypdf",
    "haystack.components.converters.html",
]
# How close to its memory limit a failing call must have come for the failure to be the limit's.
_MARGIN = 32 * 2**20
_lock = threading.Lock()
_context: Any = None


class OutOfBounds(Exception):
    """A call that passed its time or memory bound; the message names the bound."""


@dataclass(frozen=True)
class Bounds:
    """What one call may cost: wall-clock seconds, and memory above what the child starts with (MB)."""

    max_seconds: float = 60.0
    max_memory_mb: int = 1024

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_seconds, bool)
            or not isinstance(self.max_seconds, (int, float))
            or self.max_seconds <= 0
        ):
            raise ValueError(f"max_seconds must be a number > 0, got {self.max_seconds!r}")
        if isinstance(self.max_memory_mb, bool) or not isinstance(self.max_memory_mb, int) or self.max_memory_mb <= 0:
            raise ValueError(f"max_memory_mb must be an integer > 0, got {self.max_memory_mb!r}")


def _get_context() -> Any:
    """The forkserver context, its server started with `PRELOAD` once per process."""
    global _context
    with _lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(PRELOAD)
            _context = context
        return _context


def run_bounded(func: Callable[..., T], *args: Any, bounds: Bounds) -> T:
    """
    `func(*args)` in a child process, within `bounds`.

    :param func: A module-level function (it is pickled by name); its result and exceptions must pickle.
    :param args: Its arguments (pickled to the child).
    :param bounds: Its time and memory bounds.
    :returns: What `func` returned.
    :raises OutOfBounds: When it ran out of time or memory, or its process died.
    :raises Exception: What `func` raised, re-raised here.
    """
    context = _get_context()
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(sender, func, args, bounds.max_memory_mb), daemon=True)
    child.start()
    sender.close()
    try:
        if not receiver.poll(bounds.max_seconds):
            raise OutOfBounds(f"took over {bounds.max_seconds:g} s (max_seconds)")
        try:
            ok, value = receiver.recv()
        except (EOFError, OSError):
            raise OutOfBounds(_death(child, bounds)) from None
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join()
    if ok:
        return value
    raise value


def _death(child: Any, bounds: Bounds) -> str:
    child.join(5)
    code = child.exitcode
    return f"stopped its reader (exit {code}) within max_memory_mb={bounds.max_memory_mb}"


def _child(sender: Any, func: Callable[..., Any], args: tuple[Any, ...], max_memory_mb: int) -> None:
    """The child: limit the address space, run, send `(True, result)` or `(False, exception)`."""
    base = _address_space()
    limit = base + max_memory_mb * 2**20
    if base:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    too_big = OutOfBounds(f"needs more than {max_memory_mb} MB of memory (max_memory_mb)")
    try:
        result: tuple[bool, Any] = (True, func(*args))
    except MemoryError:
        result = (False, too_big)
    except BaseException as error:
        # A C library that could not allocate often says something else ("error return without exception
        # set"): a failure at the edge of the limit is the limit's.
        result = (False, too_big if base and _peak_address_space() > limit - _MARGIN else error)
    try:
        sender.send(result)
    except MemoryError:
        sender.send((False, OutOfBounds(f"needs more than {max_memory_mb} MB of memory (max_memory_mb)")))
    except Exception as error:
        sender.send((False, RuntimeError(str(error) or type(error).__name__)))
    finally:
        sender.close()


def _peak_address_space() -> int:
    """This process's largest virtual memory size so far in bytes (`VmPeak`); 0 where /proc does not say."""
    try:
        with open("/proc/self/status") as handle:
            line = next(line for line in handle if line.startswith("VmPeak:"))
        return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError, StopIteration):
        return 0


def _address_space() -> int:
    """This process's virtual memory size in bytes (what `RLIMIT_AS` counts); 0 where /proc does not say."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


__all__ = ["Bounds", "OutOfBounds", "run_bounded"]
