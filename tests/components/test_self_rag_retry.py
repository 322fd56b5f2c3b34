import time

import pytest
from haystack import Document, component

from haystack_integrations.components.retrievers.needle.variant_retriever import VariantRetriever
from haystack_integrations.components.routers.needle.self_rag_retry import SelfRAGRetry, gap_query
from haystack_integrations.document_stores.needle import EdgeDocumentStore

QUESTION = "how do I back up the database"
GIVEN = [Document(id="g1", content="pg_dump writes a custom format archive", meta={"path": "howto/pg.md"})]
UNCOVERED = ["Rotate the restic repository password every quarter."]


@component
class FakeRetriever:
    """Returns fixed lists for any variant; records what it was asked."""

    def __init__(self, found: list[Document] | None = None, fail: bool = False) -> None:
        self.found, self.fail, self.asked = found or [], fail, []

    @component.output_types(lists=dict[str, list[Document]])
    def run(self, variants: list[dict], filters: dict | None = None) -> dict:
        self.asked.append((variants, filters))
        if self.fail:
            raise RuntimeError("store down")
        return {"lists": {"gap_bm25": self.found, "gap_vector": list(reversed(self.found))}}


def restic(n: int = 2) -> list[Document]:
    return [
        Document(id=f"r{i}", content=f"restic password chunk {i}", meta={"path": "howto/restic.md"}) for i in range(n)
    ]


def run(retry: SelfRAGRetry, coverage: float | None = 0.0, **kwargs) -> dict:
    inputs = {
        "query": QUESTION,
        "documents": GIVEN,
        "answer": "An answer.",
        "coverage": coverage,
        "uncovered": UNCOVERED,
        "claims": [{"text": UNCOVERED[0], "covered": False}],
    }
    return retry.run(**{**inputs, **kwargs})


class TestGapQuery:
    def test_adds_the_uncovered_words_the_chunks_lack(self):
        assert gap_query(QUESTION, UNCOVERED, GIVEN) == f"{QUESTION} rotate restic repository password every"

    def test_no_new_word_means_the_same_query(self):
        assert gap_query(QUESTION, ["pg_dump writes a custom format archive"], GIVEN) == QUESTION


class TestSelfRAGRetry:
    def test_init_defaults(self):
        retry = SelfRAGRetry(retriever=FakeRetriever())
        assert (retry.enabled, retry.max_retries, retry.min_coverage, retry.max_seconds) == (False, 1, 0.8, 30.0)
        assert (retry.max_new_documents, retry.max_gap_terms) == (3, 5)

    def test_custom_params(self):
        retry = SelfRAGRetry(retriever=FakeRetriever(), enabled=True, max_retries=2, min_coverage=0.5)
        assert retry.enabled and retry.max_retries == 2 and retry.min_coverage == 0.5

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"max_retries": -1}, "max_retries"),
            ({"min_coverage": 2.0}, "min_coverage"),
            ({"max_seconds": 0}, "max_seconds"),
            ({"max_new_documents": 0}, "max_new_documents"),
            ({"max_gap_terms": 0}, "max_gap_terms"),
            ({"retriever": {"init_parameters": {}}}, "type"),
        ],
    )
    def test_bad_params_raise(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            SelfRAGRetry(**{"retriever": FakeRetriever(), **kwargs})

    def test_to_dict_and_from_dict_with_the_nested_retriever(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4)
        data = SelfRAGRetry(retriever=VariantRetriever(document_store=store), enabled=True).to_dict()
        assert data["type"] == "haystack_integrations.components.routers.needle.self_rag_retry.SelfRAGRetry"
        assert (
            data["init_parameters"]["retriever"]["type"]
            == "haystack_integrations.components.retrievers.needle.variant_retriever.VariantRetriever"
        )
        assert data["init_parameters"]["enabled"] is True
        assert SelfRAGRetry.from_dict(data).to_dict() == data

    def test_a_covered_answer_stands(self):
        retriever = FakeRetriever(restic())
        out = run(SelfRAGRetry(retriever=retriever, enabled=True), coverage=0.9)
        assert out["answer"] == "An answer." and out["retries"] == 0 and out["warnings"] == []
        assert "documents" not in out and retriever.asked == []

    def test_no_claims_no_retry_and_no_warning(self):
        out = run(SelfRAGRetry(retriever=FakeRetriever(restic()), enabled=True), coverage=None)
        assert out["coverage"] is None and out["warnings"] == []

    def test_off_it_reports_low_coverage_without_retrying(self):
        retriever = FakeRetriever(restic())
        out = run(SelfRAGRetry(retriever=retriever), coverage=0.0)
        assert out["retries"] == 0 and retriever.asked == []
        assert out["warnings"] == ["low coverage: 1 of 1 claims are not supported by the chunks they cite"]

    def test_low_coverage_searches_the_gap_and_sends_the_chunks_round(self):
        retriever = FakeRetriever(restic(5))
        out = run(SelfRAGRetry(retriever=retriever, enabled=True, max_new_documents=2), filters={"field": "x"})
        assert [d.id for d in out["documents"]] == ["g1", "r0", "r4"]
        assert out["query"] == QUESTION and out["state"]["retries"] == 1
        assert retriever.asked[0][0][0]["text"].startswith(QUESTION + " rotate") and retriever.asked[0][1] == {
            "field": "x"
        }
        assert out["documents"][1].meta["found_by"] == retriever.asked[0][0][0]["text"]

    def test_the_budget_ends_the_loop_with_a_warning(self):
        retry = SelfRAGRetry(retriever=FakeRetriever(restic()), enabled=True, max_retries=1)
        first = run(retry)
        second = run(retry, documents=first["documents"], state=first["state"])
        assert second["retries"] == 1 and "after 1 retry" in second["warnings"][0]
        assert second["final_documents"] == first["documents"]

    def test_an_identical_gap_query_skips_the_retry(self):
        retriever = FakeRetriever(restic())
        out = run(SelfRAGRetry(retriever=retriever, enabled=True), uncovered=["pg_dump writes an archive"])
        assert out["retries"] == 0 and retriever.asked == []
        assert "would search the same" in out["warnings"][0]

    def test_a_gap_query_already_tried_is_not_searched_again(self):
        retry = SelfRAGRetry(retriever=FakeRetriever(restic()), enabled=True, max_retries=3)
        first = run(retry)
        again = run(retry, documents=first["documents"], state=first["state"], uncovered=UNCOVERED)
        assert "documents" not in again and again["retries"] == 1

    def test_the_time_cap_stops_retries(self):
        retriever = FakeRetriever(restic())
        out = run(SelfRAGRetry(retriever=retriever, enabled=True, max_seconds=5), started_at=time.monotonic() - 10)
        assert retriever.asked == [] and "5 s have passed" in out["warnings"][0]

    @pytest.mark.parametrize("retriever", [FakeRetriever([]), FakeRetriever(GIVEN), FakeRetriever(restic(), fail=True)])
    def test_nothing_new_found_keeps_the_answer(self, retriever):
        out = run(SelfRAGRetry(retriever=retriever, enabled=True))
        assert out["retries"] == 0 and "found nothing new" in out["warnings"][0]

    def test_a_request_switches_it_either_way(self):
        assert "documents" in run(SelfRAGRetry(retriever=FakeRetriever(restic())), enabled=True)
        assert "documents" not in run(SelfRAGRetry(retriever=FakeRetriever(restic()), enabled=True), enabled=False)
