import pytest
from haystack import Document

from haystack_integrations.components.samplers.needle.similarity_gate import SimilarityGate


def candidate(cosine: float | None, bm25: float | None, rerank: float | None = None) -> Document:
    fusion = {}
    if cosine is not None:
        fusion["vector"] = {"rank": 0, "score": cosine, "kind": "cosine"}
    if bm25 is not None:
        fusion["bm25"] = {"rank": 0, "score": bm25, "kind": "bm25"}
    meta = {"fusion": fusion}
    if rerank is not None:
        meta["rerank"] = {"score": rerank, "input_rank": 1}
    return Document(content="x", meta=meta)


class TestSimilarityGate:
    def test_defaults_let_everything_through(self):
        out = SimilarityGate().run([candidate(0.01, None)])
        assert len(out["documents"]) == 1 and out["status"] == "PASS"

    def test_bad_params_and_round_trip(self):
        with pytest.raises(ValueError):
            SimilarityGate(min_similarity=1.5)
        data = SimilarityGate(0.3, 0.6).to_dict()
        assert data["init_parameters"] == {"min_similarity": 0.3, "min_bm25": 0.6}
        assert SimilarityGate.from_dict(data).to_dict() == data

    def test_either_signal_can_vouch(self):
        gate = SimilarityGate(min_similarity=0.4, min_bm25=0.7)
        docs = [candidate(0.5, None), candidate(0.1, 0.8), candidate(0.1, 0.2), candidate(None, None)]
        assert len(gate.run(docs)["documents"]) == 2

    def test_nothing_passing_is_no_results(self):
        out = SimilarityGate(min_similarity=0.9, min_bm25=0.9).run([candidate(0.2, 0.3)])
        assert out == {"documents": [], "status": "NO_RESULTS"}

    def test_without_a_fusion_trace_a_documents_own_score_counts(self):
        from haystack.components.joiners import DocumentJoiner

        close = Document(id="close", content="a", score=0.8, meta={"score_kind": "cosine"})
        far = Document(id="far", content="b", score=0.1, meta={"score_kind": "cosine"})
        joined = DocumentJoiner(join_mode="concatenate").run([[close], [far]])["documents"]
        out = SimilarityGate(min_similarity=0.5).run(documents=joined)
        assert [d.id for d in out["documents"]] == ["close"] and out["status"] == "PASS"
