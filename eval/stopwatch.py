"""Timing for the benchmarks: medians and best times of repeated actions, milliseconds of one call, percentiles.

The machine the numbers come from is shared, so a benchmark repeats what it times and reports a median (or,
for pure computation, the best of a few runs). Stage times inside a graph come from Haystack's tracing hooks
(`needle.evaluation.timing.ComponentTimer`); latency percentiles interpolated between ranks from
`needle.evaluation.metrics.percentile`, or by nearest rank here.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def timed_ms(action: Callable[[], T]) -> tuple[float, T]:
    """The milliseconds `action()` took, and what it returned."""
    started = time.perf_counter()
    result = action()
    return 1000 * (time.perf_counter() - started), result


def median_seconds(action: Callable[[], Any], repeat: int) -> float:
    """The median wall time of `action()` over `repeat` runs, in seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def best_seconds(action: Callable[[], T], repeat: int = 3) -> tuple[float, T]:
    """The shortest wall time of `action()` over `repeat` runs, in seconds, and what its last run returned."""
    best, result = math.inf, None
    for _ in range(repeat):
        started = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - started)
    return best, result  # type: ignore[return-value]


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The `q`-th percentile (0..100) by nearest rank, a value that occurred; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]
