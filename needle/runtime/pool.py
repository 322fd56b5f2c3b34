"""A few warmed instances of one graph, each lent to one run at a time.

Haystack does not promise that one `Pipeline` object runs safely on several threads at once (a run keeps
its state in the pipeline and in its components), so a server that answers several requests to the same
graph at once needs several instances of it. They are cheap: the instances share the process's models
(fastembed keeps one backend per model) and its one store object per index; only the components' own
small state is per instance.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class GraphPool:
    """
    Up to `size` instances of one graph, built on demand and lent one run at a time.

    Usage example:
    ```python
    pool = GraphPool(lambda: load_pipeline("query", environment), size=4)
    with pool.lend() as pipeline:
        pipeline.run({"request": {"query": "restic"}})
    ```
    """

    def __init__(self, build: Callable[[], Any], size: int) -> None:
        """
        Build the first instance now.

        :param build: Makes one warmed instance of the graph.
        :param size: The most instances lent at once; further runs wait for one to come back.
        :raises ValueError: When `size` is below 1.
        """
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.size = size
        self._build = build
        self.first = build()
        self._idle: list[Any] = [self.first]
        self._made = 1
        self._ready = threading.Condition()

    @property
    def made(self) -> int:
        """How many instances exist."""
        return self._made

    def fill(self) -> None:
        """Build every instance now (at start-up), rather than on the first runs that need them."""
        while True:
            with self._ready:
                if self._made >= self.size:
                    return
                self._made += 1
            self._give_back(self._build_one())

    @contextmanager
    def lend(self) -> Iterator[Any]:
        """
        An instance for one run, returned to the pool afterwards; waits while all `size` are lent.

        :raises Exception: Whatever building a new instance raises (the slot is freed again).
        """
        with self._ready:
            while not self._idle and self._made >= self.size:
                self._ready.wait()
            instance = self._idle.pop() if self._idle else None
            if instance is None:
                self._made += 1
        if instance is None:
            instance = self._build_one()
        try:
            yield instance
        finally:
            self._give_back(instance)

    def _build_one(self) -> Any:
        try:
            return self._build()
        except BaseException:
            with self._ready:
                self._made -= 1
                self._ready.notify()
            raise

    def _give_back(self, instance: Any) -> None:
        with self._ready:
            self._idle.append(instance)
            self._ready.notify()


def drop_unused_models() -> int:
    """
    Forget the models fastembed-haystack keeps for reuse that no component holds any more, so that their
    ONNX sessions and buffers are freed: fastembed-haystack caches each model backend for the life of the
    process (`_FastembedEmbeddingBackendFactory._instances`), so letting go of a graph alone frees nothing.
    A backend still held by a loaded graph's component stays.

    :returns: How many backends were dropped.
    """
    import gc
    import sys
    import types

    backends = sys.modules.get(
        "haystack_integrations.components.embedders.fastembed.embedding_backend.fastembed_backend"
    )
    if backends is None:
        return 0
    gc.collect()  # what only garbage cycles still hold counts as unheld
    dropped = 0
    for factory in (backends._FastembedEmbeddingBackendFactory, backends._FastembedSparseEmbeddingBackendFactory):
        instances = factory._instances
        for key in list(instances):
            holders = [
                holder
                for holder in gc.get_referrers(instances[key])
                if holder is not instances and not isinstance(holder, types.FrameType)
            ]
            if not holders:
                del instances[key]
                dropped += 1
    if dropped:
        gc.collect()  # a dropped model's session may sit in a cycle
    return dropped


def give_back_memory(collect: bool = True) -> None:
    """
    Give the heap memory freed so far back to the system (glibc's `malloc_trim`): an index run's parsing and
    embedding, or a model dropped, leave hundreds of MB free but mapped in the allocator's arenas, which a
    process that lives all day would otherwise keep. A no-op where the C library has no `malloc_trim`.

    :param collect: Collect Python's garbage cycles first; off right after `drop_unused_models`, which has.
    """
    import ctypes
    import ctypes.util
    import gc

    if collect:
        gc.collect()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


__all__ = ["GraphPool", "drop_unused_models", "give_back_memory"]
