"""NeedlePipeline: Needle's own stages get their inputs uncopied; other components keep Haystack's copy."""

from __future__ import annotations

from haystack import Document, Pipeline, component

from components.result_cutoff import ResultCutoff
from needle.graph import NeedlePipeline, leaves_inputs_unchanged
from needle.loader import loads_pipeline


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


NeedleRecorder.__module__ = "components.needle_recorder"


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

    def test_the_loader_builds_needle_pipelines(self):
        graph = Pipeline()
        graph.add_component("cutoff", ResultCutoff(default_top_k=2))
        loaded = loads_pipeline(graph.dumps())
        assert isinstance(loaded, NeedlePipeline)
        assert loaded.run({"cutoff": {"documents": DOCS}})["cutoff"]["documents"] == DOCS[:2]
