import time
import pytest

from components.search_request import SearchRequest


class TestSearchRequest:
    def test_init_defaults(self):
        request = SearchRequest()
        assert (request.max_query_chars, request.max_top_k, request.top_k, request.min_score) == (2000, 1000, 10, 0.0)

    def test_defaults_fill_a_request_that_names_none(self):
        out = SearchRequest(top_k=4, min_score=0.2).run(query="x")
        assert (out["top_k"], out["min_score"]) == (4, 0.2)

    def test_bad_params_raise(self):
        with pytest.raises(ValueError, match="max_query_chars"):
            SearchRequest(max_query_chars=0)
        with pytest.raises(ValueError, match="max_top_k"):
            SearchRequest(max_top_k=0)
        with pytest.raises(ValueError, match="top_k"):
            SearchRequest(top_k=0)
        with pytest.raises(ValueError, match="min_score"):
            SearchRequest(min_score=-1)

    def test_to_dict_and_from_dict(self):
        data = SearchRequest(max_query_chars=50, max_top_k=20).to_dict()
        assert data == {
            "type": "components.search_request.SearchRequest",
            "init_parameters": {"max_query_chars": 50, "max_top_k": 20, "top_k": 10, "min_score": 0.0},
        }
        assert SearchRequest.from_dict(data).to_dict() == data

    def test_collections_become_a_filter(self):
        before = time.monotonic()
        out = SearchRequest().run(query="  slot  ", top_k=3, collections=["notes", "work"], min_score=0.5)
        assert before <= out.pop("started_at") <= time.monotonic()
        assert out == {
            "query": "slot",
            "top_k": 3,
            "min_score": 0.5,
            "filters": {"field": "meta.collection", "operator": "in", "value": ["notes", "work"]},
            "expand": None,
            "rerank": None,
            "chunks": False,
            "decompose": None,
        }

    def test_decompose_switch_passes_through_and_must_be_a_boolean(self):
        assert SearchRequest().run(query="x", decompose=True)["decompose"] is True
        with pytest.raises(ValueError, match="decompose must be true or false"):
            SearchRequest().run(query="x", decompose="yes")

    def test_no_collections_means_no_filter(self):
        assert SearchRequest().run(query="x")["filters"] is None

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"query": ""}, "non-empty"),
            ({"query": "   "}, "non-empty"),
            ({"query": 42}, "non-empty"),
            ({"query": "x" * 2001}, "limit is 2000"),
            ({"query": "x", "top_k": 0}, "top_k"),
            ({"query": "x", "top_k": 10_000}, "top_k"),
            ({"query": "x", "top_k": "5"}, "top_k"),
            ({"query": "x", "top_k": True}, "top_k"),
            ({"query": "x", "min_score": -0.1}, "min_score"),
            ({"query": "x", "collections": [""]}, "collections"),
            ({"query": "x", "expand": "yes"}, "expand must be true or false"),
            ({"query": "x", "chunks": 1}, "chunks must be true or false"),
        ],
    )
    def test_invalid_requests_say_what_is_wrong(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            SearchRequest().run(**kwargs)

    def test_switches_pass_through(self):
        out = SearchRequest().run(query="x", expand=False, rerank=True, chunks=True)
        assert (out["expand"], out["rerank"], out["chunks"]) == (False, True, True)
