"""Per-component wall-clock times of pipeline runs, through Haystack's tracing hooks."""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from haystack import tracing


class _Span(tracing.Span):
    def set_tag(self, key: str, value: Any) -> None:
        pass


class ComponentTimer(tracing.Tracer):
    """
    A Haystack tracer that adds up the seconds each component spends in `run`.

    Usage: `with ComponentTimer.active() as timer: pipeline.run(...)`, then `timer.seconds["dense_embedder"]`.
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    @contextlib.contextmanager
    def trace(
        self, operation_name: str, tags: dict[str, Any] | None = None, parent_span: tracing.Span | None = None
    ) -> Iterator[tracing.Span]:
        """A span that adds its seconds to the component's when it is a component's `run`."""
        started = time.perf_counter()
        try:
            yield _Span()
        finally:
            if operation_name == "haystack.component.run" and tags:
                name = tags.get("haystack.component.name", "?")
                self.seconds[name] += time.perf_counter() - started
                self.calls[name] += 1

    def current_span(self) -> tracing.Span | None:
        """None: the timer keeps no span."""
        return None

    @classmethod
    @contextlib.contextmanager
    def active(cls) -> Iterator[ComponentTimer]:
        """Enable a fresh timer for the duration of the block."""
        timer = cls()
        tracing.enable_tracing(timer)
        try:
            yield timer
        finally:
            tracing.disable_tracing()
