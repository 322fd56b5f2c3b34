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

    def test_documents_without_a_trace_are_ranked_by_their_place(self):
        docs = [Document(id=n, content=n, score=s) for n, s in (("a", 0.3), ("b", 0.2), ("c", 0.1), ("d", 0.05))]
        out = TopRankBonus().run(docs)["documents"]
        assert {d.id: d.meta["bonus"] for d in out} == {"a": 0.05, "b": 0.02, "c": 0.02, "d": 0.0}
        assert [d.id for d in out] == ["a", "b", "c", "d"] and out[0].score == pytest.approx(0.35)

    def test_after_haystacks_own_joiner_the_rank_order_it_gives_earns_the_bonus(self):
        from haystack.components.joiners import DocumentJoiner

        bm25 = [Document(id=n, content=n, score=1.0 - i / 10) for i, n in enumerate(["x", "y", "z"])]
        vector = [Document(id=n, content=n, score=1.0 - i / 10) for i, n in enumerate(["x", "z", "w"])]
        joined = DocumentJoiner(join_mode="reciprocal_rank_fusion").run([bm25, vector])["documents"]
        out = TopRankBonus().run(joined)["documents"]
        added = {d.id: d.meta["bonus"] for d in out}
        assert added[joined[0].id] == 0.05 and sum(added.values()) == pytest.approx(0.05 + 2 * 0.02)
        assert {d.id: d.score for d in out} == pytest.approx({d.id: d.score + added[d.id] for d in joined})
