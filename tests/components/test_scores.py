"""The score helpers the retrievers and rankers share (`components/_scores.py`)."""

import pytest
from haystack import Document

from haystack_integrations.components.needle._scores import check_score_kind, normalised


class TestNormalised:
    def test_unknown_kind_is_refused(self):
        with pytest.raises(ValueError, match="kind must be"):
            check_score_kind("dot")
        check_score_kind(None, optional=True)

    def test_bm25_maps_to_s_over_one_plus_s_and_keeps_raw(self):
        out = normalised([Document(content="a", score=3.0), Document(content="b", score=0.0)], "bm25")
        assert [d.score for d in out] == [pytest.approx(0.75), 0.0]
        assert out[0].meta == {"raw_score": 3.0, "score_kind": "bm25"}

    def test_cosine_is_clamped(self):
        docs = [Document(content="a", score=1.2), Document(content="b", score=-0.3), Document(content="c", score=0.4)]
        assert [d.score for d in normalised(docs, "cosine")] == [1.0, 0.0, 0.4]

    def test_order_and_input_untouched(self):
        docs = [Document(content="a", score=9.0), Document(content="b", score=1.0)]
        out = normalised(docs, "bm25")
        assert [d.content for d in out] == ["a", "b"] and docs[0].score == 9.0
