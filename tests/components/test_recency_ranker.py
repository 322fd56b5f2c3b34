import pytest
from haystack import Document

from haystack_integrations.components.rankers.needle.recency_ranker import RecencyRanker

NOW = "2024-06-15T00:00:00Z"


def doc(i, score, date):
    return Document(id=i, content=i, score=score, meta={"date": date})


class TestRecencyRanker:
    def test_init_defaults(self):
        ranker = RecencyRanker()
        assert (ranker.half_life_days, ranker.weight, ranker.enabled, ranker.reference, ranker.reference_top_k) == (
            30.0,
            0.3,
            False,
            "newest",
            5,
        )

    @pytest.mark.parametrize(
        "params, message",
        [
            ({"half_life_days": 0}, "half_life_days"),
            ({"weight": 1.5}, "weight"),
            ({"reference": "today"}, "reference"),
            ({"reference_top_k": 0}, "reference_top_k"),
        ],
    )
    def test_bad_params_raise(self, params, message):
        with pytest.raises(ValueError, match=message):
            RecencyRanker(**params)

    def test_to_dict_and_from_dict(self):
        data = RecencyRanker(half_life_days=7, weight=0.5, reference="now").to_dict()
        assert data == {
            "type": "haystack_integrations.components.rankers.needle.recency_ranker.RecencyRanker",
            "init_parameters": {
                "half_life_days": 7,
                "weight": 0.5,
                "enabled": False,
                "reference": "now",
                "reference_top_k": 5,
            },
        }
        assert RecencyRanker.from_dict(data).to_dict() == data

    def test_off_changes_nothing(self):
        docs = [doc("old", 0.9, "2020-01-01T00:00:00Z"), doc("new", 0.5, "2024-06-14T00:00:00Z")]
        assert RecencyRanker().run(documents=docs, now=NOW)["documents"] is docs

    def test_the_decay_halves_every_half_life_and_is_mixed_as_its_own_score(self):
        ranker = RecencyRanker(half_life_days=10, weight=0.5, reference="now")
        out = ranker.run(
            documents=[
                doc("old", 0.8, "2024-05-26T00:00:00Z"),
                doc("new", 0.6, "2024-06-15T00:00:00Z"),
                doc("none", 0.9, None),
            ],
            enabled=True,
            now=NOW,
        )["documents"]
        assert [d.id for d in out] == ["new", "old", "none"]
        assert [round(d.meta["recency"]["score"], 4) for d in out] == [1.0, 0.25, 0.0]
        assert [round(d.score, 4) for d in out] == [0.8, 0.525, 0.45]
        assert out[1].meta["recency"]["relevance"] == 0.8

    def test_newest_reference_counts_ages_from_the_newest_leading_result(self):
        ranker = RecencyRanker(half_life_days=30, weight=0.3, reference_top_k=2)
        out = ranker.run(
            documents=[
                doc("march", 0.93, "2024-03-18T00:00:00Z"),
                doc("april", 0.90, "2024-04-15T00:00:00Z"),
                doc("unrelated", 0.40, "2024-08-25T00:00:00Z"),
            ],
            enabled=True,
            now="2024-12-01T00:00:00Z",
        )["documents"]
        assert [d.id for d in out] == ["april", "march", "unrelated"]
        assert out[0].meta["recency"]["score"] == 1.0
