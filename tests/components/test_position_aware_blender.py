import pytest
from haystack import Document

from haystack_integrations.components.rankers.needle.position_aware_blender import PositionAwareBlender


def reranked(doc_id: str, rank: int, rerank: float | None, fused: float = 0.1) -> Document:
    meta = {"rerank": {"score": rerank, "input_rank": rank}} if rerank is not None else {}
    return Document(id=doc_id, content=doc_id, score=fused, meta=meta)


class TestPositionAwareBlender:
    def test_defaults_bad_params_round_trip(self):
        blender = PositionAwareBlender()
        assert (blender.top_weight, blender.mid_weight, blender.tail_weight) == (0.75, 0.60, 0.40)
        assert [blender.weight(r) for r in (1, 3, 4, 10, 11)] == [0.75, 0.75, 0.60, 0.60, 0.40]
        with pytest.raises(ValueError):
            PositionAwareBlender(top_weight=1.5)
        with pytest.raises(ValueError):
            PositionAwareBlender(top_ranks=5, mid_ranks=3)
        with pytest.raises(ValueError, match="by must be one of"):
            PositionAwareBlender(by="fused")
        assert PositionAwareBlender(by="score").to_dict()["init_parameters"]["by"] == "score"
        data = blender.to_dict()
        assert PositionAwareBlender.from_dict(data).to_dict() == data

    def test_formula_by_rank_tier(self):
        out = PositionAwareBlender().run([reranked("a", 1, 0.0), reranked("b", 5, 1.0), reranked("c", 12, 1.0)])
        scores = {d.id: d.score for d in out["documents"]}
        assert scores["a"] == pytest.approx(0.75 / 1)
        assert scores["b"] == pytest.approx(0.60 / 5 + 0.40 * 1.0)
        assert scores["c"] == pytest.approx(0.40 / 12 + 0.60 * 1.0)
        assert [d.id for d in out["documents"]] == ["a", "c", "b"]

    def test_reranker_can_rescue_a_lower_rank(self):
        out = PositionAwareBlender().run([reranked("a", 3, 0.0), reranked("b", 4, 0.9)])["documents"]
        assert [d.id for d in out] == ["b", "a"]
        assert out[0].meta["blend"] == {"weight": 0.6, "fused_rank": 4, "retrieval": 0.25, "rerank": 0.9}

    def test_without_rerank_scores_order_is_unchanged(self):
        docs = [reranked("a", 1, None), reranked("b", 2, None)]
        assert PositionAwareBlender().run(docs)["documents"] == docs

    def test_by_score_the_fused_scores_settle_what_the_rerank_leaves_close(self):
        blender = PositionAwareBlender(top_weight=0.02, mid_weight=0.02, tail_weight=0.02, by="score")
        # a and b are almost tied by the reranker; b's fused score (a lead in both lists, a top-rank bonus) is twice a's.
        docs = [reranked("a", 1, 0.801, fused=0.05), reranked("b", 2, 0.800, fused=0.10), reranked("c", 3, 0.5, 0.10)]
        out = blender.run(docs)["documents"]
        assert [d.id for d in out] == ["b", "a", "c"]
        assert out[0].score == pytest.approx(0.02 * 1.0 + 0.98 * 0.800)
        assert out[1].meta["blend"]["retrieval"] == pytest.approx(0.5)
        # Far apart, the reranker decides whatever the fusion said.
        apart = blender.run([reranked("a", 1, 0.9, fused=0.01), reranked("b", 2, 0.5, fused=0.10)])["documents"]
        assert [d.id for d in apart] == ["a", "b"]
