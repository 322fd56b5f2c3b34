"""Per-component wall-clock times of pipeline runs, through Haystack's tracing hooks."""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from haystack import tracing


class _Span(tracing.Span):
    def set_tag(self, key: str, value: Any) -> None:
        pass


class ComponentTimer(tracing.Tracer):
    """
    A Haystack tracer that adds up the seconds each component spends in `run`, and the graph runs' own seconds.

    What a graph run takes beyond its components (`pipeline_seconds` minus the components') is Haystack's work
    between stages: scheduling and copying each stage's inputs. `current` names the component running now (for
    a profiler that charges work to it).

    Usage: `with ComponentTimer.active() as timer: pipeline.run(...)`, then `timer.seconds["dense_embedder"]`.
    """

    # What a span is measured by: wall-clock seconds; `time.process_time` in a subclass charges each component
    # its CPU time instead (what it costs on an idle core).
    clock: Callable[[], float] = staticmethod(time.perf_counter)

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.pipeline_seconds = 0.0
        self.current = ""

    def reset(self) -> None:
        """Forget what was timed so far (between the queries of a benchmark)."""
        self.seconds.clear()
        self.calls.clear()
        self.pipeline_seconds = 0.0

    @contextlib.contextmanager
    def trace(
        self, operation_name: str, tags: dict[str, Any] | None = None, parent_span: tracing.Span | None = None
    ) -> Iterator[tracing.Span]:
        """A span that adds its seconds to the component's when it is a component's `run`, else to the graph's."""
        started = self.clock()
        component = operation_name == "haystack.component.run" and bool(tags)
        if component:
            self.current = (tags or {}).get("haystack.component.name", "?")
        try:
            yield _Span()
        finally:
            elapsed = self.clock() - started
            if component:
                name = (tags or {}).get("haystack.component.name", "?")
                self.seconds[name] += elapsed
                self.calls[name] += 1
                self.current = ""
            elif operation_name == "haystack.pipeline.run":
                self.pipeline_seconds += elapsed

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
