import pytest
from haystack import Document

from components.score_normalizer import ScoreNormalizer


class TestScoreNormalizer:
    def test_defaults_params_and_round_trip(self):
        assert ScoreNormalizer().kind == "bm25"
        with pytest.raises(ValueError, match="kind must be"):
            ScoreNormalizer(kind="dot")
        data = ScoreNormalizer(kind="cosine").to_dict()
        assert data == {"type": "components.score_normalizer.ScoreNormalizer", "init_parameters": {"kind": "cosine"}}
        assert ScoreNormalizer.from_dict(data).kind == "cosine"

    def test_bm25_maps_to_s_over_one_plus_s_and_keeps_raw(self):
        out = ScoreNormalizer(kind="bm25").run([Document(content="a", score=3.0), Document(content="b", score=0.0)])
        assert [d.score for d in out["documents"]] == [pytest.approx(0.75), 0.0]
        assert out["documents"][0].meta == {"raw_score": 3.0, "score_kind": "bm25"}

    def test_cosine_is_clamped(self):
        docs = [Document(content="a", score=1.2), Document(content="b", score=-0.3), Document(content="c", score=0.4)]
        assert [d.score for d in ScoreNormalizer(kind="cosine").run(docs)["documents"]] == [1.0, 0.0, 0.4]

    def test_order_and_input_untouched(self):
        docs = [Document(content="a", score=9.0), Document(content="b", score=1.0)]
        out = ScoreNormalizer().run(docs)["documents"]
        assert [d.content for d in out] == ["a", "b"] and docs[0].score == 9.0
