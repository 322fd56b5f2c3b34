"""The Haystack `Pipeline` Needle's graphs run as: stages that leave their inputs unchanged get them uncopied.

Haystack deep-copies every stage's inputs before it runs, in case the stage changes them while another
stage holds the same values. Needle's own components never change an input (they return new documents
with `dataclasses.replace`, see the style guide), so for them the copy is pure cost: on the hybrid graph it
was more than half of the time spent around the engine and the model (docs/performance.md), because the
copy walks every candidate document's metadata and checks each one against Haystack's `Component` protocol.
Components from elsewhere (Haystack's, a user's) keep Haystack's copy.

Haystack also re-computes every stage's readiness (its priority) after each stage ran: 22 stages, 19 runs,
about 420 checks a `query`, a sixth of the graph's time (`python -m eval.hotpath stages`). A stage's
priority depends only on its own inputs and its visit count, and those change only when it ran (its inputs
are consumed) or one of its senders ran (its inputs are written): `NeedlePipeline` keeps each stage's
priority for the run in progress and re-computes those of the stages whose inputs changed since the queue
was last filled. A priority is itself remembered per stage by what Haystack's checks read of the inputs
(the visit count, and each socket's senders and whether a value came), so a graph run again with inputs of the
same shape reads its stages' priorities instead of checking every socket again. The queue comes out the same
as Haystack's (same priorities, same order), so the stages run in the same order, loops included; the
scheduling itself stays Haystack's.

Running one of Needle's stages, Haystack's `_run_component` still handed its inputs to its deep copy, which
checks them against its `Component` protocol (22 µs a stage), and built the stage's tracing span with a
description of every socket even when no tracer is on. Without a tracer or a breakpoint, `NeedlePipeline`
runs those stages itself, with the same visit count, errors and output checks.
"""

from __future__ import annotations

import heapq
import itertools
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

from haystack import Pipeline, tracing
from haystack.core.errors import BreakpointException, PipelineRuntimeError
from haystack.core.pipeline.base import _validate_component_output_keys
from haystack.core.pipeline.utils import FIFOPriorityQueue

try:  # Haystack 3: a marker class
    from haystack.core.pipeline.component_checks import _NoOutputProduced

    def _no_output(value: Any) -> bool:
        """Whether a socket's value is Haystack's mark of a sender that ran without producing it."""
        return isinstance(value, _NoOutputProduced)

except ImportError:  # Haystack 2: one marker object
    from haystack.core.pipeline.component_checks import _NO_OUTPUT_PRODUCED  # type: ignore[attr-defined]  # Haystack 2 only

    def _no_output(value: Any) -> bool:
        """Whether a socket's value is Haystack's mark of a sender that ran without producing it."""
        return value is _NO_OUTPUT_PRODUCED


# Distinct input shapes remembered per stage (a graph of Needle's has a handful a stage).
_MEMO_LIMIT = 256

# Modules whose components leave their inputs unchanged (Needle's own: `haystack_integrations.components.<kind>.needle`).
UNCHANGED_INPUTS_MODULE = re.compile(r"haystack_integrations\.components\.(?:\w+\.)?needle\.")


def leaves_inputs_unchanged(instance: Any) -> bool:
    """Whether a component is one of Needle's own, which never change their inputs."""
    return UNCHANGED_INPUTS_MODULE.match(type(instance).__module__) is not None


class _Uncopied(Mapping):
    """A stage's inputs, which Haystack's deep copy hands over as they are (in a new dict)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return dict(self._values)


class _FilledQueue(FIFOPriorityQueue):
    """
    Haystack's queue of stages by priority, filled in one go: the same entries as one `push` per stage in
    this order (so the same order out), as one heap built at once. Refilled after every stage that ran, one
    push per stage was a tenth of the scheduling's time.
    """

    def __init__(self, entries: Sequence[tuple[str, Any]]) -> None:
        super().__init__()
        self._queue = [(priority, n, name) for n, (name, priority) in enumerate(entries)]
        heapq.heapify(self._queue)
        self._counter = itertools.count(len(self._queue))


class _Priorities:
    """The stages' priorities in one run (the run's inputs state), and the stages whose inputs changed since."""

    def __init__(self, inputs: dict[str, Any]) -> None:
        self.inputs = inputs
        self.known: dict[str, Any] = {}
        self.changed: set[str] = set()


class NeedlePipeline(Pipeline):
    """
    A `Pipeline` that does not deep-copy the inputs of Needle's own components (they never change them), and
    re-computes a stage's priority only when its inputs changed.

    Everything else (scheduling, tracing spans, output checks, errors) is Haystack's.
    """

    def _runs(self) -> dict[int, _Priorities]:
        """The scheduling state of the run in progress on each thread (a run borrows the pipeline on one thread)."""
        return self.__dict__.setdefault("_needle_runs", {})

    def _find_receivers_from(self, component_name: str) -> list[tuple[str, Any, Any, Any]]:
        """Haystack's, kept until the graph changes: a run asks it for every stage before it starts."""
        found = self.__dict__.setdefault("_needle_receivers", {})
        if component_name not in found:
            found[component_name] = super()._find_receivers_from(component_name)
        return cast(list[tuple[str, Any, Any, Any]], found[component_name])

    def _forget_graph(self) -> None:
        """Drop what is remembered of the graph's shape (each stage's receivers, its priorities): it changed."""
        for kept in ("_needle_receivers", "_needle_priorities"):
            self.__dict__.pop(kept, None)

    def add_component(self, *args: Any, **kwargs: Any) -> Any:
        """Haystack's; what was remembered of the graph is looked up again."""
        self._forget_graph()
        return super().add_component(*args, **kwargs)

    def remove_component(self, *args: Any, **kwargs: Any) -> Any:
        """Haystack's; what was remembered of the graph is looked up again."""
        self._forget_graph()
        return super().remove_component(*args, **kwargs)

    def connect(self, *args: Any, **kwargs: Any) -> Any:
        """Haystack's; what was remembered of the graph is looked up again."""
        self._forget_graph()
        return super().connect(*args, **kwargs)

    def _fill_queue(
        self, component_names: list[str], inputs: dict[str, Any], component_visits: dict[str, int]
    ) -> FIFOPriorityQueue:
        """Haystack's queue of every stage by priority; priorities of stages whose inputs did not change are reused."""
        runs, thread = self._runs(), threading.get_ident()
        state = runs.get(thread)
        if state is None or state.inputs is not inputs:  # a new run (or another run on this thread since)
            state = runs[thread] = _Priorities(inputs)
            stale: set[str] | list[str] = component_names
        else:
            stale = state.changed
        for name in component_names:
            if name in stale or name not in state.known:
                state.known[name] = self._priority(name, component_visits[name], inputs.get(name, {}))
        state.changed = set()
        return _FilledQueue([(name, state.known[name]) for name in component_names])

    def _priority(self, name: str, visits: int, comp_inputs: dict[str, list[dict[str, Any]]]) -> Any:
        """
        Haystack's `_calculate_priority` of one stage, remembered per stage by what it reads: the visit count
        and, for each socket, who sent each value and whether the value is Haystack's "no output" marker
        (its readiness checks look at nothing else of a value). The same inputs' shape gives the same
        priority, so a run's stages take theirs from the memo after the first run of the graph.
        """
        shape = (
            visits,
            tuple(
                (socket, tuple((sent["sender"], _no_output(sent["value"])) for sent in values))
                for socket, values in comp_inputs.items()
            ),
        )
        memo = self.__dict__.setdefault("_needle_priorities", {}).setdefault(name, {})
        found = memo.get(shape)
        if found is None:
            comp = self._get_component_with_graph_metadata_and_visits(name, visits)
            found = self._calculate_priority(comp, comp_inputs)
            if len(memo) < _MEMO_LIMIT:
                memo[shape] = found
        return found

    def _changed(self, names: Iterable[str]) -> None:
        """Mark stages whose inputs (or visit count) changed: their priority is computed again."""
        state = self._runs().get(threading.get_ident())
        if state is not None:
            state.changed.update(names)

    def _consume_component_inputs(  # type: ignore[override]  # Haystack's is static; this one tells the instance
        self, component_name: str, component: dict, inputs: dict[str, Any], is_resume: bool = False
    ) -> dict[str, Any]:
        """Haystack's, noting that the stage's inputs and visits change."""
        self._changed((component_name,))
        return Pipeline._consume_component_inputs(component_name, component, inputs, is_resume)

    def _write_component_outputs(
        self, *, component_name: str, receivers: Sequence[tuple[str, Any, Any, Any]], **kwargs: Any
    ) -> Mapping[str, Any]:
        """
        Haystack's, noting that the receivers' inputs change, and the stage's visit count (an async run counts
        a visit when the stage returns, after its inputs were consumed).
        """
        self._changed((component_name, *(receiver for receiver, *_ in receivers)))
        return super()._write_component_outputs(component_name=component_name, receivers=receivers, **kwargs)

    def run(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Haystack's run; the run's priorities are let go of at its end (they hold its documents)."""
        try:
            return super().run(*args, **kwargs)
        finally:
            self._runs().pop(threading.get_ident(), None)

    @staticmethod
    def _run_component(
        component_name: str,
        component: dict[str, Any],
        inputs: dict[str, Any],
        component_visits: dict[str, int],
        parent_span: Any = None,
        **kwargs: Any,
    ) -> Mapping[str, Any]:
        """
        Haystack's `_run_component`; for Needle's own stages, without the copy of the inputs and, while no
        tracer is on, without the stage's span (whose tags Haystack builds for every stage, then drops).
        """
        instance = component["instance"]
        if not leaves_inputs_unchanged(instance):
            return Pipeline._run_component(component_name, component, inputs, component_visits, parent_span, **kwargs)
        if tracing.is_tracing_enabled() or kwargs.get("break_point") is not None:
            uncopied = cast(dict[str, Any], _Uncopied(inputs))
            return Pipeline._run_component(component_name, component, uncopied, component_visits, parent_span, **kwargs)
        # What Haystack's does when nothing traces and no breakpoint is set (`tests/test_graph.py` compares).
        try:
            output = instance.run(**inputs)
        except (BreakpointException, PipelineRuntimeError):
            raise
        except Exception as error:
            raise PipelineRuntimeError.from_exception(component_name, instance.__class__, error) from error
        component_visits[component_name] += 1
        if not isinstance(output, Mapping):
            raise PipelineRuntimeError.from_invalid_output(component_name, instance.__class__, output)
        _validate_component_output_keys(component_name, component, output)
        return output
