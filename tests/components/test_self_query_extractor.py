from pathlib import Path

import pytest
import yaml
from haystack import Document

from haystack_integrations.components.preprocessors.needle.markdown_chunker import MarkdownChunker
from haystack_integrations.components.query.needle.self_query_extractor import SelfQueryExtractor
from haystack_integrations.document_stores.needle import EdgeDocumentStore
from needle.core.schema import FILE_META_KEYS

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
    return (extractor or SelfQueryExtractor()).run(query=query, **{"now": NOW, **kwargs})


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
            ["collection", "folders", "frontmatter", "tags"],
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


DEMO_NOTES = Path(__file__).parents[2] / "needle" / "demo" / "notes"
TRAPS = yaml.safe_load((Path(__file__).parents[2] / "eval" / "golden" / "self-query-traps.yml").read_text())
DATES = yaml.safe_load((Path(__file__).parents[2] / "eval" / "golden" / "dates.yml").read_text())


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory):
    """A whole-file store holding what the ingest keeps of each bundled note (folders, tags, frontmatter, date)."""
    chunker = MarkdownChunker()
    store = EdgeDocumentStore(
        path=str(tmp_path_factory.mktemp("demo") / "files"), embedding_dim=2, use_sparse_embeddings=False
    )
    docs = []
    for file in sorted(p for p in DEMO_NOTES.rglob("*") if p.suffix in (".md", ".txt")):
        path = file.relative_to(DEMO_NOTES).as_posix()
        meta = {"collection": "notes", "path": path, "source_doc_id": f"notes:{path}", "mtime": 0.0}
        first = chunker.run(documents=[Document(content=file.read_text(), meta=meta)])["documents"][0]
        kept = {k: first.meta[k] for k in (*FILE_META_KEYS, "collection", "path", "source_doc_id") if k in first.meta}
        docs.append(Document(id=f"notes:{path}", content="x", embedding=[1.0, 0.0], meta=kept))
    store.write_documents(docs)
    return store


def read_as(out):
    """What a run read, in the vocabulary of eval/golden/self-query-traps.yml."""
    read, found = out["self_query"], {}
    filters = read.get("filters", {})
    for key, name in (("tags", "tags"), ("paths", "path"), ("collections", "collections")):
        if filters.get(key):
            found[name] = sorted(filters[key]) if key == "tags" else filters[key][0]
    if filters.get("where"):
        found["where"] = sorted(f"{k}={v}" for k, v in filters["where"].items())
    for key in ("after", "before"):
        if filters.get(key):
            found[key] = filters[key][:10]
    if read.get("recent_from_question"):
        found["recent"] = True
    if read.get("must_not_contain"):
        found["must_not_contain"] = read["must_not_contain"]
    return found


class TestSelfQueryPrecision:
    @pytest.mark.parametrize("item", TRAPS["queries"], ids=[q["id"] for q in TRAPS["queries"]])
    def test_words_become_filters_only_when_they_name_what_the_index_holds(self, item, demo_files):
        out = run(item["query"], SelfQueryExtractor(document_store=demo_files), now=str(TRAPS["today"]))
        stated = {k: sorted(v) if k in ("tags", "where") else str(v) if k in ("after", "before") else v
                  for k, v in (item["filters"] or {}).items()}  # fmt: skip
        assert read_as(out) == stated
        searched = out["query"].lower()
        assert [w for w in item["keep"] if w.lower() not in searched] == []

    @pytest.mark.parametrize(
        "query",
        [
            "how do I browse restic snapshots like a folder?",
            "find all files bigger than 100 megabytes under a folder",
            "mount it in a directory",
            "search my notes for the tickets",
            "what does this tag mean?",
            "which file holds the password?",
        ],
    )
    def test_generic_words_never_filter_even_without_an_index_to_ask(self, query):
        out = run(query)
        assert (out["filters"], out["query"], out["self_query"]["applied"]) == (None, query, False)

    def test_a_hash_tag_the_index_lacks_stays_a_word(self, demo_files):
        out = run("#nosuchtag alerts", SelfQueryExtractor(document_store=demo_files))
        assert (out["filters"], out["query"]) == (None, "#nosuchtag alerts")

    def test_a_field_value_the_index_lacks_stays_words(self, demo_files):
        out = run("Japan trip status: did we book the ryokan yet?", SelfQueryExtractor(document_store=demo_files))
        assert out["filters"] is None


class TestSelfQueryDates:
    @pytest.mark.parametrize("phrase", DATES["phrases"], ids=[p["text"] for p in DATES["phrases"]])
    def test_every_date_phrase_is_read_out_of_its_question(self, phrase):
        read = run(phrase["question"], now=str(DATES["today"]))["self_query"]
        filters = read.get("filters", {})
        span = filters if "after" in filters or "before" in filters else filters.get("boost", {})
        got = (span.get("after", "")[:10] or None, span.get("before", "")[:10] or None)
        assert got == ((str(phrase["start"]), str(phrase["end"])) if phrase["start"] else (None, None))

    @pytest.mark.parametrize(
        "query, cleaned",
        [
            ("what did I decide last March about charging for the tide app?", "what did I decide about charging for the tide app?"),
            ("what did I cook in December?", "what did I cook?"),
            ("Was habe ich im März gelesen?", "Was habe ich gelesen?"),
            ("Qu'est-ce qu'on a décidé avec Élodie en mars dernier pour Android ?", "Qu'est-ce qu'on a décidé avec Élodie pour Android?"),
            ("DDIA notes from March 2024", "DDIA notes"),
        ],
    )  # fmt: skip
    def test_a_date_of_the_note_filters_and_leaves_the_question(self, query, cleaned):
        out = run(query, now="2026-11-28T00:00:00Z")
        assert out["query"] == cleaned and out["self_query"]["applied"] is True
        assert out["period"]["filtered"] is True

    @pytest.mark.parametrize(
        "query",
        [
            "does the cherry blossom start in March in Japan?",
            "the corrected 1099 that arrived in March after I had filed",
            "pace plan for the race on September 22",
            "did Let's Encrypt stop sending expiry emails in 2025?",
            # the asker's own past, but the month names the incident ("the October incident"), not the note
            "what did I put in my wins log about the October incident?",
        ],
    )
    def test_a_date_of_something_in_the_note_only_ranks_notes_of_that_time_first(self, query):
        out = run(query, now="2026-11-28T00:00:00Z")
        assert (out["query"], out["filters"], out["self_query"]["applied"]) == (query, None, False)
        boost = out["self_query"]["filters"]["boost"]
        assert out["period"] == {"after": boost["after"], "before": boost["before"], "filtered": False}

    def test_on_fallback_the_date_filter_becomes_a_preference(self):
        out = run("what did I cook in December?", now="2026-11-28T00:00:00Z", fallback=True)
        assert out["filters"] is None
        assert out["period"] == {"after": "2025-12-01T00:00:00Z", "before": "2026-01-01T00:00:00Z", "filtered": False}
