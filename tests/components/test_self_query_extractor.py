import pytest
from haystack import Document

from haystack_integrations.components.query.needle.self_query_extractor import SelfQueryExtractor
from haystack_integrations.document_stores.needle import EdgeDocumentStore

NOW = "2024-06-15T12:00:00Z"


@pytest.fixture
def file_store(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "files"), embedding_dim=2, use_sparse_embeddings=False)
    rows = [
        ("notes", "runbooks/postgres-failover.md", ["runbooks"], {"status": "approved", "priority": 2}),
        ("notes", "journal/2024-06-01.md", ["journal"], {"mood": "good"}),
        ("notes", "meetings/2024-03-04-kickoff.md", ["meetings"], {"status": "final"}),
        ("work", "meetings/2024-05-01-sync.md", ["meetings"], {}),
    ]
    store.write_documents(
        [
            Document(
                id=f"{c}:{p}",
                content="x",
                embedding=[1.0, 0.0],
                meta={"collection": c, "path": p, "source_doc_id": f"{c}:{p}", "folders": f, "frontmatter": fm},
            )
            for c, p, f, fm in rows
        ]
    )
    return store


def run(query, extractor=None, **kwargs):
    return (extractor or SelfQueryExtractor()).run(query=query, now=NOW, **kwargs)


class TestSelfQueryExtractorConfig:
    def test_init_defaults(self):
        extractor = SelfQueryExtractor()
        assert (extractor.document_store, extractor.enabled, extractor.min_results, extractor.recent_on_request) == (
            None,
            True,
            3,
            True,
        )

    def test_bad_params_raise(self):
        with pytest.raises(ValueError, match="min_results"):
            SelfQueryExtractor(min_results=-1)
        with pytest.raises(ValueError, match="does not provide"):
            SelfQueryExtractor(document_store=object())

    def test_to_dict_and_from_dict(self, file_store):
        data = SelfQueryExtractor(document_store=file_store, min_results=5).to_dict()
        assert data["type"] == "haystack_integrations.components.query.needle.self_query_extractor.SelfQueryExtractor"
        assert {k: v for k, v in data["init_parameters"].items() if k != "document_store"} == {
            "enabled": True,
            "min_results": 5,
            "recent_on_request": True,
        }
        assert SelfQueryExtractor.from_dict(data).to_dict() == data


class TestSelfQueryExtractorRules:
    def test_a_plain_question_passes_through_untouched(self):
        out = run(
            "does vitamin D reduce the risk of fractures in 2 trials?",
            filters={"field": "meta.collection", "operator": "==", "value": "a"},
        )
        assert out["query"] == "does vitamin D reduce the risk of fractures in 2 trials?"
        assert out["filters"] == {"field": "meta.collection", "operator": "==", "value": "a"}
        assert (out["must_contain"], out["must_not_contain"], out["recent"], out["self_query"]["applied"]) == (
            [],
            [],
            False,
            False,
        )

    @pytest.mark.parametrize(
        "query, cleaned, expected",
        [
            (
                "#homelab notes about alerts",
                "notes about alerts",
                {"field": "meta.tags", "operator": "==", "value": "homelab"},
            ),
            ("tag:Travel packing", "packing", {"field": "meta.tags", "operator": "==", "value": "travel"}),
            ("in:runbooks/ failover", "failover", {"field": "meta.folders", "operator": "==", "value": "runbooks"}),
            (
                "failover in the runbooks folder",
                "failover",
                {"field": "meta.folders", "operator": "==", "value": "runbooks"},
            ),
            ("collection:work sync", "sync", {"field": "meta.collection", "operator": "in", "value": ["work"]}),
        ],
    )
    def test_tags_folders_and_collections(self, query, cleaned, expected):
        out = run(query)
        assert (out["query"], out["filters"]) == (cleaned, expected)

    @pytest.mark.parametrize(
        "query, cleaned, after, before",
        [
            (
                "what did we decide about the cache in May",
                "what did we decide about the cache",
                "2024-05-01",
                "2024-06-01",
            ),
            ("standup notes yesterday", "standup notes", "2024-06-14", "2024-06-15"),
            ("meeting notes from last week", "meeting notes", "2024-06-03", "2024-06-10"),
            ("kestrel sync Q3 2023", "kestrel sync", "2023-07-01", "2023-10-01"),
            ("changes since 2024-05", "changes", "2024-05-01", None),
            ("postmortems before 2024", "postmortems", None, "2024-01-01"),
            ("plans until March 2024", "plans", None, "2024-04-01"),
            ("deploys after May", "deploys", "2024-06-01", None),
            ("sepsis mortality from 2009 to 2014", "sepsis mortality", "2009-01-01", "2015-01-01"),
            ("syncs between March and May 2024", "syncs", "2024-03-01", "2024-06-01"),
        ],
    )
    def test_dates_in_plain_language_become_a_date_range(self, query, cleaned, after, before):
        out = run(query)
        conditions = out["filters"]["conditions"] if "conditions" in out["filters"] else [out["filters"]]
        bounds = {c["operator"]: c["value"][:10] for c in conditions}
        assert out["query"] == cleaned
        assert (bounds.get(">="), bounds.get("<")) == (after, before)

    def test_phrases_stay_in_the_query_and_terms_are_excluded(self):
        out = run('"logical replication." slots -pg_dump -ab set -euo pipefail find -name')
        assert out["query"] == "logical replication slots -ab set -euo pipefail find -name"
        assert (out["must_contain"], out["must_not_contain"]) == (["logical replication"], ["pg_dump"])

    @pytest.mark.parametrize(
        "query, cleaned",
        [
            ("latest runbook for postgres failover", "runbook for postgres failover"),
            ("the most recent journal entry", "journal entry"),
            ("what did I decide last about the cache", "what did I decide about the cache"),
            ("current plan for kestrel", "for kestrel"),
        ],
    )
    def test_questions_asking_for_the_newest_switch_recency_on(self, query, cleaned):
        out = run(query)
        assert (out["query"], out["recent"], out["filters"]) == (cleaned, True, None)
        assert out["self_query"]["recent_from_question"] is True

    def test_a_request_decides_recency_before_the_question(self):
        assert run("latest runbook", recent=False)["recent"] is False
        assert run("runbook", recent=True)["recent"] is True
        assert SelfQueryExtractor(recent_on_request=False).run(query="latest runbook")["recent"] is False

    def test_known_fields_folders_and_collections_come_from_the_index(self, file_store):
        extractor = SelfQueryExtractor(document_store=file_store)
        out = run("status:approved failover priority:2 http://x.org/a:b", extractor)
        assert out["query"] == "failover http://x.org/a:b"
        assert out["filters"] == {
            "operator": "AND",
            "conditions": [
                {"field": "meta.fields", "operator": "==", "value": "status=approved"},
                {"field": "meta.fields", "operator": "==", "value": "priority=2"},
            ],
        }
        assert run("unknown:field stays", extractor)["query"] == "unknown:field stays"
        assert run("journal entries about sleep", extractor)["filters"] == {
            "field": "meta.folders",
            "operator": "==",
            "value": "journal",
        }
        assert run("kickoff meeting notes", extractor)["filters"] == {
            "field": "meta.folders",
            "operator": "==",
            "value": "meetings",
        }
        assert run("sync in work", extractor)["filters"] == {
            "field": "meta.collection",
            "operator": "in",
            "value": ["work"],
        }

    def test_extractors_on_one_store_scroll_it_once(self, file_store, monkeypatch):
        scrolls = []
        listing = file_store.list_documents_meta
        monkeypatch.setattr(file_store, "list_documents_meta", lambda **kw: scrolls.append(kw) or listing(**kw))
        copies = [SelfQueryExtractor(document_store=file_store) for _ in range(3)]  # a pool's instances
        for extractor in copies:
            assert run("sync in work", extractor)["filters"] == {
                "field": "meta.collection",
                "operator": "in",
                "value": ["work"],
            }
            run("path:meetings/2024-03-* kickoff", extractor)
        assert [sorted(kw["fields"]) for kw in scrolls] == [
            ["collection", "folders", "frontmatter"],
            ["path", "source_doc_id"],
        ]

    def test_a_new_extractor_sees_what_was_written_before_it(self, file_store):
        run("sync in work", SelfQueryExtractor(document_store=file_store))
        file_store.write_documents(
            [
                Document(
                    id="x",
                    content="x",
                    embedding=[1.0, 0.0],
                    meta={
                        "collection": "lab",
                        "path": "a.md",
                        "source_doc_id": "lab:a.md",
                        "folders": [],
                        "frontmatter": {},
                    },
                )
            ]
        )
        out = run("sync in lab", SelfQueryExtractor(document_store=file_store))
        assert out["filters"] == {"field": "meta.collection", "operator": "in", "value": ["lab"]}

    def test_a_path_glob_is_matched_against_the_indexed_files(self, file_store):
        out = run("path:meetings/2024-03-* kickoff", SelfQueryExtractor(document_store=file_store))
        assert out["filters"] == {
            "field": "meta.source_doc_id",
            "operator": "in",
            "value": ["notes:meetings/2024-03-04-kickoff.md"],
        }

    def test_fallback_drops_the_extracted_filters_and_keeps_their_words(self):
        out = run(
            '#homelab "disk alerts" -grafana in:projects/ since May',
            fallback=True,
            filters={"field": "x", "operator": "==", "value": 1},
        )
        assert out["query"] == "homelab disk alerts projects since May"
        assert out["filters"] == {"field": "x", "operator": "==", "value": 1}
        assert (out["must_contain"], out["must_not_contain"]) == ([], [])
        assert out["self_query"]["fallback"] is True and out["self_query"]["applied"] is False

    def test_what_was_read_is_reported(self):
        read = run("#homelab alerts since May")["self_query"]
        assert read == {
            "original": "#homelab alerts since May",
            "query": "alerts",
            "filters": {"tags": ["homelab"], "dates": ["since May"], "after": "2024-05-01T00:00:00Z"},
            "must_contain": [],
            "must_not_contain": [],
            "recent": False,
            "recent_from_question": False,
            "min_results": 3,
            "applied": True,
            "fallback": False,
        }

    def test_off_it_passes_everything_through(self):
        out = SelfQueryExtractor(enabled=False).run(query="#homelab latest", filters=None)
        assert (out["query"], out["filters"], out["recent"], out["self_query"]) == ("#homelab latest", None, False, {})
        assert run("#homelab", enabled=False)["query"] == "#homelab"

    def test_a_query_made_only_of_filters_searches_their_words(self):
        assert run("#homelab")["query"] == "homelab"
