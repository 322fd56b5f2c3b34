import pytest
from haystack import Document

from haystack_integrations.components.rankers.needle.best_chunk_selector import BestChunkSelector


def chunk(doc_id: str, source: str, text: str, score: float = 0.1) -> Document:
    return Document(id=doc_id, content=text, score=score, meta={"source_doc_id": source})


class TestBestChunkSelector:
    def test_defaults_bad_params_round_trip(self):
        selector = BestChunkSelector()
        assert (selector.group_by, selector.min_term_length) == ("source_doc_id", 3)
        with pytest.raises(ValueError):
            BestChunkSelector(group_by="")
        with pytest.raises(ValueError):
            BestChunkSelector(min_term_length=0)
        data = BestChunkSelector(min_term_length=4).to_dict()
        assert BestChunkSelector.from_dict(data).to_dict() == data

    def test_one_result_per_file_with_the_most_query_terms(self):
        docs = [
            chunk("a1", "A", "intro about nothing", 0.5),
            chunk("a2", "A", "the replication slot keeps wal", 0.5),
            chunk("b1", "B", "replication overview", 0.3),
        ]
        out = BestChunkSelector().run(docs, query="replication slot")["documents"]
        assert [d.id for d in out] == ["a2", "b1"]
        assert out[0].meta["term_hits"] == 2 and out[0].score == 0.5

    def test_ties_keep_the_best_placed_chunk(self):
        docs = [chunk("a1", "A", "slot one"), chunk("a2", "A", "slot two")]
        assert [d.id for d in BestChunkSelector().run(docs, query="slot")["documents"]] == ["a1"]

    def test_chunks_mode_returns_every_chunk_best_first(self):
        docs = [chunk("a1", "A", "nothing"), chunk("a2", "A", "slot"), chunk("b1", "B", "slot")]
        out = BestChunkSelector().run(docs, query="slot", chunks=True)["documents"]
        assert [d.id for d in out] == ["a2", "a1", "b1"]

    def test_representative_carries_the_files_best_score(self):
        docs = [chunk("a1", "A", "nothing", 0.9), chunk("a2", "A", "slot", 0.4), chunk("b1", "B", "slot", 0.5)]
        out = BestChunkSelector().run(docs, query="slot")["documents"]
        assert [(d.id, d.score) for d in out] == [("a2", 0.9), ("b1", 0.5)]

    def test_a_whole_file_document_stands_in_only_without_chunks(self):
        whole = Document(
            id="af", content="replication slot replication slot", score=0.4, meta={"source_doc_id": "A", "kind": "file"}
        )
        lone = Document(id="bf", content="replication", score=0.2, meta={"source_doc_id": "B", "kind": "file"})
        docs = [whole, chunk("a1", "A", "the replication slot", 0.4), lone]
        out = BestChunkSelector().run(docs, query="replication slot")["documents"]
        assert [d.id for d in out] == ["a1", "bf"]
        every = BestChunkSelector().run(docs, query="replication slot", chunks=True)["documents"]
        assert [d.id for d in every] == ["a1", "bf"]
