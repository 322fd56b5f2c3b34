import time

import pytest

from haystack_integrations.components.query.needle.search_request import SearchRequest


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
            "type": "haystack_integrations.components.query.needle.search_request.SearchRequest",
            "init_parameters": {
                "max_query_chars": 50,
                "max_top_k": 20,
                "top_k": 10,
                "min_score": 0.0,
                "document_store": None,
            },
        }
        assert SearchRequest.from_dict(data).to_dict() == data

    def test_collections_become_a_filter(self):
        before = time.monotonic()
        out = SearchRequest().run(
            query="  slot  ", top_k=3, collections=["notes", "work"], min_score=0.5, now="2024-06-15"
        )
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
            "recent": None,
            "self_query": None,
            "now": "2024-06-15T00:00:00Z",
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
            ({"query": "x", "recent": "yes"}, "recent must be true or false"),
            ({"query": "x", "where": ["status"]}, "where must read field=value"),
            ({"query": "x", "where": ["priority>high"]}, "not a date: 'high'"),
            ({"query": "x", "after": "someday"}, "not a date"),
            ({"query": "x", "tags": [" # "]}, "tags must be non-empty"),
            ({"query": "x", "path": "**/*kestrel*.md"}, "is a glob"),
            ({"query": "x", "now": "yesterday-ish"}, "now must be an ISO date"),
        ],
    )
    def test_invalid_requests_say_what_is_wrong(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            SearchRequest().run(**kwargs)

    def test_switches_pass_through(self):
        out = SearchRequest().run(query="x", expand=False, rerank=True, chunks=True)
        assert (out["expand"], out["rerank"], out["chunks"]) == (False, True, True)


NOW = "2024-06-15T12:00:00Z"


def filters_of(**kwargs):
    return SearchRequest().run(query="x", now=NOW, **kwargs)["filters"]


class TestSearchRequestFilters:
    def test_tags_all_any_and_none(self):
        assert filters_of(tags=["#Homelab", "alerts"], tags_any=["a", "b"], tags_none=["draft"]) == {
            "operator": "AND",
            "conditions": [
                {"field": "meta.tags", "operator": "==", "value": "homelab"},
                {"field": "meta.tags", "operator": "==", "value": "alerts"},
                {"field": "meta.tags", "operator": "in", "value": ["a", "b"]},
                {"operator": "NOT", "conditions": [{"field": "meta.tags", "operator": "in", "value": ["draft"]}]},
            ],
        }

    @pytest.mark.parametrize("path", ["runbooks", "runbooks/", "/runbooks/**", "runbooks/**/*"])
    def test_a_folder_is_one_keyword_match(self, path):
        assert filters_of(path=path) == {"field": "meta.folders", "operator": "==", "value": "runbooks"}

    def test_a_file_matches_its_path(self):
        assert filters_of(path="howto/vim-macros.md")["conditions"][0] == {
            "field": "meta.path",
            "operator": "==",
            "value": "howto/vim-macros.md",
        }

    def test_a_glob_is_matched_against_the_indexed_files(self, tmp_path):
        from haystack import Document

        from haystack_integrations.document_stores.needle import EdgeDocumentStore

        store = EdgeDocumentStore(path=str(tmp_path / "files"), embedding_dim=2, use_sparse_embeddings=False)
        store.write_documents(
            [
                Document(id=p, content="x", embedding=[1.0, 0.0], meta={"source_doc_id": f"n:{p}", "path": p})
                for p in ("meetings/2024-03-04-kickoff.md", "meetings/2024-04-15-sync.md", "howto/2024-03-x.md")
            ]
        )
        out = SearchRequest(document_store=store).run(query="x", path="meetings/2024-03-*.md")
        assert out["filters"] == {
            "field": "meta.source_doc_id",
            "operator": "in",
            "value": ["n:meetings/2024-03-04-kickoff.md"],
        }
        assert SearchRequest.from_dict(SearchRequest(document_store=store).to_dict()).document_store.path == store.path

    @pytest.mark.parametrize(
        "where, expected",
        [
            ("status=draft", {"field": "meta.fields", "operator": "==", "value": "status=draft"}),
            ("Status='In Progress'", {"field": "meta.fields", "operator": "==", "value": "status=in progress"}),
            ("type=note|runbook", {"field": "meta.fields", "operator": "in", "value": ["type=note", "type=runbook"]}),
            ("priority=2", {"field": "meta.fields", "operator": "==", "value": "priority=2"}),
            ("public=true", {"field": "meta.fields", "operator": "==", "value": "public=true"}),
            ("priority>=2", {"field": "meta.frontmatter.priority", "operator": ">=", "value": 2}),
            (
                "status!=done",
                {"operator": "NOT", "conditions": [{"field": "meta.fields", "operator": "==", "value": "status=done"}]},
            ),
            ("due<2024-07", {"field": "meta.frontmatter.due", "operator": "<", "value": "2024-07-01T00:00:00Z"}),
            ("due<=2024-07", {"field": "meta.frontmatter.due", "operator": "<", "value": "2024-08-01T00:00:00Z"}),
            ("tag=Homelab|ops", {"field": "meta.tags", "operator": "in", "value": ["homelab", "ops"]}),
            ("identifier=KES-142", {"field": "meta.identifiers", "operator": "==", "value": "KES-142"}),
        ],
    )
    def test_where_reads_typed_conditions(self, where, expected):
        assert filters_of(where=[where]) == expected

    def test_dates_in_iso_or_plain_language(self):
        assert filters_of(after="2024-05-01", before="last week") == {
            "operator": "AND",
            "conditions": [
                {"field": "meta.date", "operator": ">=", "value": "2024-05-01T00:00:00Z"},
                {"field": "meta.date", "operator": "<", "value": "2024-06-03T00:00:00Z"},
            ],
        }

    def test_filters_join_the_collection_filter(self):
        assert filters_of(collections=["notes"], tags=["a"])["conditions"][0] == {
            "field": "meta.collection",
            "operator": "in",
            "value": ["notes"],
        }
