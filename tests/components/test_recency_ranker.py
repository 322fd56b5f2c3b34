import pytest
from haystack import Document

from haystack_integrations.components.rankers.needle.recency_ranker import RecencyRanker

NOW = "2024-06-15T00:00:00Z"


def doc(i, score, date, source="frontmatter"):
    return Document(id=i, content=i, score=score, meta={"date": date, "date_source": source})


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
            ({"period_weight": -0.1}, "period_weight"),
            ({"file_time_weight": 2}, "file_time_weight"),
            ({"weight": 0.6, "period_weight": 0.6}, "at most 1"),
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
                "period_weight": 0.3,
                "file_time_weight": 0.5,
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

    def test_a_file_time_counts_less_than_a_date_the_note_gives_itself(self):
        ranker = RecencyRanker(half_life_days=10, weight=0.5, reference="now", file_time_weight=0.5)
        out = ranker.run(
            documents=[doc("copied", 0.6, "2024-06-15T00:00:00Z", "mtime"), doc("dated", 0.6, "2024-06-15T00:00:00Z")],
            enabled=True,
            now=NOW,
        )["documents"]
        assert [(d.id, d.meta["recency"]["score"]) for d in out] == [("dated", 1.0), ("copied", 0.5)]

    def test_ages_count_from_the_newest_date_a_note_gives_itself_not_from_a_file_time(self):
        ranker = RecencyRanker(half_life_days=30, weight=0.3, reference_top_k=3)
        out = ranker.run(
            documents=[
                doc("touched today", 0.95, "2024-12-01T08:00:00Z", "mtime"),
                doc("march", 0.93, "2024-03-18T00:00:00Z", "file name"),
                doc("april", 0.90, "2024-04-15T00:00:00Z", "frontmatter"),
            ],
            enabled=True,
            now="2024-12-01T00:00:00Z",
        )["documents"]
        assert out[0].id == "april" and out[0].meta["recency"]["score"] == 1.0

    def test_notes_dated_in_the_period_rank_first_and_the_others_stay(self):
        period = {"after": "2026-03-01T00:00:00Z", "before": "2026-04-01T00:00:00Z", "filtered": False}
        out = RecencyRanker(period_weight=0.3).run(
            documents=[
                doc("2025 pricing", 0.9, "2025-03-20T00:00:00Z", "file name"),
                doc("undated", 0.85, None, None),
                doc("copied in march", 0.8, "2026-03-05T00:00:00Z", "mtime"),
                doc("2026 pricing", 0.8, "2026-03-12T00:00:00Z", "file name"),
            ],
            period=period,
        )["documents"]
        assert [d.id for d in out] == ["2026 pricing", "copied in march", "2025 pricing", "undated"]
        assert [d.meta["period"]["score"] for d in out] == [1.0, 0.5, 0.0, 0.0]
        assert "recency" not in out[0].meta
        assert round(out[0].score, 4) == round(0.7 * 0.8 + 0.3, 4)

    def test_an_open_period_bounds_one_side(self):
        out = RecencyRanker().run(
            documents=[doc("old", 0.9, "2023-01-01T00:00:00Z"), doc("new", 0.6, "2024-06-01T00:00:00Z")],
            period={"after": "2024-01-01T00:00:00Z", "before": None},
        )["documents"]
        assert [d.id for d in out] == ["new", "old"]

    def test_without_a_period_or_recency_nothing_moves(self):
        docs = [doc("a", 0.1, "2024-01-01T00:00:00Z"), doc("b", 0.9, None)]
        assert RecencyRanker().run(documents=docs, period=None)["documents"] is docs
        assert RecencyRanker().run(documents=docs, period={"after": None, "before": None})["documents"] is docs
