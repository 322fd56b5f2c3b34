import pytest
from haystack import Document

from haystack_integrations.components.rankers.needle.top_rank_bonus import TopRankBonus


def fused(doc_id: str, score: float, ranks: dict[str, int]) -> Document:
    return Document(id=doc_id, content=doc_id, score=score, meta={"fusion": {k: {"rank": r} for k, r in ranks.items()}})


class TestTopRankBonus:
    def test_defaults_bad_params_round_trip(self):
        bonus = TopRankBonus()
        assert (bonus.rank1_bonus, bonus.rank23_bonus) == (0.05, 0.02)
        with pytest.raises(ValueError):
            TopRankBonus(rank1_bonus=-0.1)
        data = TopRankBonus(0.1, 0.03).to_dict()
        assert data["init_parameters"] == {"rank1_bonus": 0.1, "rank23_bonus": 0.03}
        assert TopRankBonus.from_dict(data).to_dict() == data

    def test_first_place_in_any_list_gets_the_big_bonus(self):
        docs = [fused("a", 0.05, {"bm25": 4, "vector": 3}), fused("b", 0.03, {"lex_1": 0})]
        out = TopRankBonus().run(docs)["documents"]
        assert [d.id for d in out] == ["b", "a"]
        assert out[0].score == pytest.approx(0.08) and out[0].meta["bonus"] == 0.05
        assert out[1].meta["bonus"] == 0.0

    def test_second_and_third_get_the_small_bonus(self):
        out = TopRankBonus().run(
            [fused("a", 0.0, {"bm25": 1}), fused("b", 0.0, {"bm25": 2}), fused("c", 0.0, {"bm25": 3})]
        )
        assert {d.id: d.meta["bonus"] for d in out["documents"]} == {"a": 0.02, "b": 0.02, "c": 0.0}

    def test_documents_without_trace_get_nothing(self):
        out = TopRankBonus().run([Document(content="x", score=0.1)])["documents"]
        assert out[0].score == 0.1
