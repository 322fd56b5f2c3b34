import pytest
from haystack import Document

from haystack_integrations.components.classifiers.needle.result_labeler import ResultLabeler


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


class TestResultLabeler:
    def test_params_and_round_trip(self):
        with pytest.raises(ValueError):
            ResultLabeler(min_rerank=-1)
        data = ResultLabeler(0.4, 0.7).to_dict()
        assert ResultLabeler.from_dict(data).to_dict() == data

    @pytest.mark.parametrize(
        "docs, status, label",
        [
            ([], None, "NO_RESULTS"),
            ([candidate(0.9, None)], "NO_RESULTS", "NO_RESULTS"),
            ([candidate(0.3, None)], "PASS", "PASS"),
            ([candidate(0.3, None, rerank=0.8)], "PASS", "PASS"),
            ([candidate(0.8, None, rerank=0.1)], "PASS", "HALLUCINATION_RISK"),
            ([candidate(0.2, None, rerank=0.1)], "PASS", "IRRELEVANT"),
        ],
    )
    def test_labels(self, docs, status, label):
        assert ResultLabeler().run(docs, gate_status=status)["label"] == label

    def test_new_thresholds_round_trip_and_are_checked(self):
        data = ResultLabeler(min_confidence=0.7, min_coverage=0.4).to_dict()
        assert data["init_parameters"]["min_confidence"] == 0.7 and data["init_parameters"]["min_coverage"] == 0.4
        assert ResultLabeler.from_dict(data).to_dict() == data
        with pytest.raises(ValueError, match="min_confidence"):
            ResultLabeler(min_confidence=1.5)
        with pytest.raises(ValueError, match="min_coverage"):
            ResultLabeler(min_coverage=-0.1)

    @pytest.mark.parametrize(
        "docs, confidence, coverage, label",
        [
            ([candidate(0.3, None, rerank=0.1)], 0.8, None, "PASS"),
            ([candidate(0.3, None, rerank=0.9)], 0.2, None, "IRRELEVANT"),
            ([candidate(0.8, None, rerank=0.9)], 0.2, None, "HALLUCINATION_RISK"),
            ([candidate(0.3, None)], 0.4, 0.2, "HALLUCINATION_RISK"),
            ([candidate(0.3, None)], 0.4, 0.9, "IRRELEVANT"),
            ([], 0.9, None, "NO_RESULTS"),
        ],
    )
    def test_with_a_confidence_it_alone_decides_pass(self, docs, confidence, coverage, label):
        assert ResultLabeler().run(docs, gate_status="PASS", confidence=confidence, coverage=coverage)["label"] == label
