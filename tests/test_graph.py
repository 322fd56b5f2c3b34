"""NeedlePipeline: Needle's own stages get their inputs uncopied; other components keep Haystack's copy."""

from __future__ import annotations

import contextlib

import pytest
from haystack import Document, Pipeline, component, tracing
from haystack.core.errors import PipelineRuntimeError
from haystack.tracing.tracer import NullSpan

from haystack_integrations.components.samplers.needle.result_cutoff import ResultCutoff
from needle.runtime.loader import loads_pipeline
from needle.runtime.pipeline import NeedlePipeline, leaves_inputs_unchanged


@component
class Recorder:
    """Keeps the documents it was given."""

    def __init__(self) -> None:
        self.seen: list[Document] = []

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        self.seen = documents
        return {"documents": documents}


@component
class NeedleRecorder(Recorder):
    """The same, as if it were one of Needle's components."""


NeedleRecorder.__module__ = "haystack_integrations.components.needle.needle_recorder"


@component
class NeedleBroken:
    """Raises, or returns something that is not a mapping, as a broken stage of Needle's might."""

    @component.output_types(documents=list[Document])
    def run(self, fail: bool) -> dict[str, list[Document]]:
        if fail:
            raise ValueError("broken on purpose")
        return ["not", "a", "mapping"]  # type: ignore[return-value]


NeedleBroken.__module__ = "haystack_integrations.components.needle.needle_broken"


@component
class Source:
    """Hands on the same documents on every run."""

    @component.output_types(documents=list[Document])
    def run(self) -> dict[str, list[Document]]:
        return {"documents": DOCS}


DOCS = [
    Document(id=str(i), content=f"text {i}", score=1.0 - i / 10, meta={"path": f"{i}.md", "hybrid": {"bm25": i}})
    for i in range(3)
]


def _graph(cls: type[Pipeline], recorder: Recorder) -> Pipeline:
    graph = cls()
    graph.add_component("cutoff", ResultCutoff(default_top_k=2))
    graph.add_component("recorder", recorder)
    graph.connect("cutoff.documents", "recorder.documents")
    return graph


class TestNeedlePipeline:
    def test_needle_components_are_the_ones_whose_inputs_are_not_copied(self):
        assert leaves_inputs_unchanged(ResultCutoff()) and leaves_inputs_unchanged(NeedleRecorder())
        assert not leaves_inputs_unchanged(Recorder())

    @staticmethod
    def _fed(recorder: Recorder) -> Recorder:
        graph = NeedlePipeline()
        graph.add_component("source", Source())
        graph.add_component("recorder", recorder)
        graph.connect("source.documents", "recorder.documents")
        graph.run({})
        return recorder

    def test_a_needle_stage_gets_the_documents_its_sender_returned(self):
        recorder = self._fed(NeedleRecorder())
        assert recorder.seen == DOCS and all(a is b for a, b in zip(recorder.seen, DOCS))

    def test_other_components_still_get_copies(self):
        recorder = self._fed(Recorder())
        assert recorder.seen == DOCS and all(a is not b for a, b in zip(recorder.seen, DOCS))

    def test_runs_as_haystacks_pipeline_does(self):
        data = {"cutoff": {"documents": DOCS, "top_k": 2}}
        ours = _graph(NeedlePipeline, NeedleRecorder()).run(data, include_outputs_from={"cutoff"})
        theirs = _graph(Pipeline, NeedleRecorder()).run(data, include_outputs_from={"cutoff"})
        assert ours == theirs and [d.id for d in ours["recorder"]["documents"]] == ["0", "1"]

    def test_a_needle_stage_s_failure_and_bad_output_are_haystack_s_errors(self):
        for cls in (NeedlePipeline, Pipeline):
            graph = cls()
            graph.add_component("broken", NeedleBroken())
            with pytest.raises(PipelineRuntimeError, match="'broken'") as raised:
                graph.run({"broken": {"fail": True}})
            assert isinstance(raised.value.__cause__, ValueError)
            with pytest.raises(PipelineRuntimeError, match="'broken'"):
                graph.run({"broken": {"fail": False}})

    def test_a_tracer_still_sees_every_needle_stage(self):
        spans: list[str] = []

        class Collecting(tracing.Tracer):
            @contextlib.contextmanager
            def trace(self, operation_name, tags=None, parent_span=None):
                spans.append((tags or {}).get("haystack.component.name", operation_name))
                yield NullSpan()

            def current_span(self):
                return None

        tracing.enable_tracing(Collecting())
        try:
            self._fed(NeedleRecorder())
        finally:
            tracing.disable_tracing()
        assert spans == ["haystack.pipeline.run", "source", "recorder"]

    def test_the_loader_builds_needle_pipelines(self):
        graph = Pipeline()
        graph.add_component("cutoff", ResultCutoff(default_top_k=2))
        loaded = loads_pipeline(graph.dumps())
        assert isinstance(loaded, NeedlePipeline)
        assert loaded.run({"cutoff": {"documents": DOCS}})["cutoff"]["documents"] == DOCS[:2]


RUNS: list[str] = []


@component
class Step:
    """Adds one to a number, noting that it ran."""

    def __init__(self, name: str) -> None:
        self.name = name

    @component.output_types(value=int)
    def run(self, value: int) -> dict[str, int]:
        RUNS.append(self.name)
        return {"value": value + 1}


@component
class Below:
    """Sends a number back round the loop until it reaches `limit`, then out."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    @component.output_types(again=int, done=int)
    def run(self, value: int) -> dict[str, int]:
        RUNS.append("below")
        return {"again": value} if value < self.limit else {"done": value}


def _loop(cls: type[Pipeline]) -> Pipeline:
    """A loop (a branch joiner, two steps, a router back to the joiner) beside a chain of three steps."""
    from haystack.components.joiners import BranchJoiner

    graph = cls()
    graph.add_component("entry", BranchJoiner(int))
    graph.add_component("add", Step("add"))
    graph.add_component("twice", Step("twice"))
    graph.add_component("below", Below(limit=7))
    graph.connect("entry.value", "add.value")
    graph.connect("add.value", "twice.value")
    graph.connect("twice.value", "below.value")
    graph.connect("below.again", "entry.value")
    for name in ("a", "b", "c"):
        graph.add_component(name, Step(name))
    graph.connect("a.value", "b.value")
    graph.connect("b.value", "c.value")
    return graph


class TestNeedlePipelineScheduling:
    @staticmethod
    def _run(cls: type[Pipeline]) -> tuple[dict, list[str]]:
        RUNS.clear()
        output = _loop(cls).run({"entry": {"value": 0}, "a": {"value": 10}}, include_outputs_from={"add"})
        return output, list(RUNS)

    def test_stages_run_in_haystacks_order_with_its_outputs_loops_included(self):
        ours, theirs = self._run(NeedlePipeline), self._run(Pipeline)
        assert ours == theirs and ours[0]["below"] == {"done": 8} and ours[0]["c"] == {"value": 13}
        assert ours[1].count("below") == 4

    def test_an_async_run_gives_haystacks_outputs_too(self):
        import asyncio

        if not hasattr(Pipeline, "run_async"):
            pytest.skip("this Haystack's Pipeline has no async run")
        data = {"entry": {"value": 0}, "a": {"value": 10}}
        ours = asyncio.run(_loop(NeedlePipeline).run_async(data, include_outputs_from={"add"}))
        theirs = asyncio.run(_loop(Pipeline).run_async(data, include_outputs_from={"add"}))
        assert ours == theirs and ours["below"] == {"done": 8}

    @pytest.fixture
    def checked(self, monkeypatch: pytest.MonkeyPatch) -> list[str]:
        """The stages whose readiness Haystack's `_calculate_priority` checks from now on, in order."""
        from haystack.core.pipeline.base import PipelineBase

        checked: list[str] = []
        calculate = PipelineBase._calculate_priority

        def counted(comp: dict, comp_inputs: dict) -> object:
            checked.append(comp["instance"].__class__.__name__)
            return calculate(comp, comp_inputs)

        monkeypatch.setattr(PipelineBase, "_calculate_priority", staticmethod(counted))
        return checked

    def test_a_stage_s_readiness_is_checked_again_only_when_its_inputs_changed(self, checked):
        # Haystack checks every stage after each stage ran (here 7 stages, 19 runs); Needle's graphs check
        # a stage once at the start and again after it or its one sender ran: at most 7 + 2 a run.
        self._run(Pipeline)
        haystack_checks = len(checked)
        checked.clear()
        self._run(NeedlePipeline)
        assert len(checked) <= 7 + 2 * 19 < haystack_checks == 119

    def test_a_graph_run_again_takes_its_stages_priorities_from_what_their_inputs_looked_like(self, checked):
        # The memo is keyed by each socket's senders and whether a value came; runs that route differently
        # (the loop goes round 4 times from 0, once from 6) still run as Haystack's, one graph serving both.
        ours, seen = _loop(NeedlePipeline), set()
        for start in (0, 6, 0, 6, 7):
            data = {"entry": {"value": start}, "a": {"value": 10}}
            RUNS.clear()
            theirs = _loop(Pipeline).run(data, include_outputs_from={"add"})
            theirs_order = list(RUNS)
            RUNS.clear()
            checked.clear()  # Haystack's own run above checked every stage
            assert ours.run(data, include_outputs_from={"add"}) == theirs
            assert theirs_order == RUNS
            if start in seen:
                assert checked == []  # every shape was met in the first run from the same start
            seen.add(start)
        ours.connect("c.value", "entry.value")  # a changed graph forgets what it remembered
        assert "_needle_priorities" not in ours.__dict__

    def test_a_run_leaves_no_scheduling_state_behind(self):
        graph = _loop(NeedlePipeline)
        graph.run({"entry": {"value": 0}, "a": {"value": 10}})
        assert graph.__dict__.get("_needle_runs") == {}


def test_a_filled_queue_gives_stages_in_the_order_of_one_push_each():
    import random

    from haystack.core.pipeline.utils import FIFOPriorityQueue

    from needle.runtime.pipeline import _FilledQueue

    rng = random.Random(7)
    for _ in range(50):
        entries = [(f"stage{n}", rng.choice([1, 2, 3, 4])) for n in range(rng.randint(0, 25))]
        pushed = FIFOPriorityQueue()
        for name, priority in entries:
            pushed.push(name, priority)
        filled = _FilledQueue(entries)
        assert len(filled) == len(pushed)
        if entries:
            assert filled.peek() == pushed.peek()
        filled.push("late", 2)
        pushed.push("late", 2)
        assert [filled.pop() for _ in range(len(filled))] == [pushed.pop() for _ in range(len(pushed))]


def test_a_graph_changed_after_a_run_sends_to_its_new_receivers():
    graph = NeedlePipeline()
    graph.add_component("cutoff", ResultCutoff(default_top_k=2))
    graph.add_component("first", NeedleRecorder())
    graph.connect("cutoff.documents", "first.documents")
    graph.run({"cutoff": {"documents": DOCS}})
    graph.add_component("second", NeedleRecorder())
    graph.connect("cutoff.documents", "second.documents")
    graph.run({"cutoff": {"documents": DOCS}})
    assert graph.get_component("second").seen == DOCS[:2]
    graph.remove_component("second")
    assert graph.run({"cutoff": {"documents": DOCS}}, include_outputs_from={"first"})["first"]["documents"] == DOCS[:2]
