"""What `status` tells an agent to filter by: fields with types and frequent values, and tags, per collection."""

from __future__ import annotations

import json

import pytest

from needle.core.index_results import Status
from needle.core.requests import IndexRequest
from needle.lifecycle import provenance as index_info
from needle.lifecycle.field_summary import TOP_VALUES, summarise_fields, value_type


class TestSummariseFields:
    def test_types_read_from_the_values(self):
        assert [value_type(v) for v in ("true", "3", "-2", "0.5", "2024-05-01", "draft")] == [
            "boolean",
            "integer",
            "integer",
            "number",
            "date",
            "string",
        ]

    def test_fields_with_types_counts_and_most_frequent_values_first(self):
        fields = summarise_fields(
            {"status=draft": 4, "status=done": 7, "priority=1": 2, "priority=2.5": 1, "pinned=true": 3}
        )
        assert fields["status"] == {"type": "string", "values": 2, "top": [["done", 7], ["draft", 4]]}
        assert fields["priority"]["type"] == "number" and fields["pinned"]["type"] == "boolean"
        assert list(fields) == ["status", "pinned", "priority"]  # the most widespread first, ties by name

    def test_keeps_only_the_most_frequent_values(self):
        fields = summarise_fields({f"owner=person {i}": i + 1 for i in range(30)})
        assert fields["owner"]["values"] == 30 and len(fields["owner"]["top"]) == TOP_VALUES
        assert fields["owner"]["top"][0] == ["person 29", 30]


class TestProvenanceRead:
    def test_a_rewritten_provenance_is_read_again(self, settings):
        index_info._write(settings, {"fingerprint": {}, "languages": {"a": ["en"]}})
        assert index_info.read(settings)["languages"] == {"a": ["en"]}
        index_info._write(settings, {"fingerprint": {}, "languages": {"a": ["de", "en"]}})
        assert index_info.read(settings)["languages"] == {"a": ["de", "en"]}

    def test_forgetting_a_collection_drops_its_summary_and_languages(self, settings):
        index_info._write(
            settings, {"languages": {"a": ["en"], "b": ["en"]}, "summaries": {"a": {"tags": []}, "b": {"tags": []}}}
        )
        index_info.forget_collection(settings, "a")
        recorded = index_info.read(settings)
        assert list(recorded["languages"]) == ["b"] and list(recorded["summaries"]) == ["b"]


@pytest.mark.integration
class TestStatusFields:
    def test_status_lists_each_collections_fields_and_tags(self, cli):
        code, out, _ = cli("status", "--json")
        notes = json.loads(out)["collections"][0]
        assert code == 0 and notes["languages"]
        status = notes["fields"]["status"]
        assert status["type"] == "string" and ["active", 4] in status["top"]
        assert notes["tags"] and all(isinstance(tag, str) and count >= 1 for tag, count in notes["tags"])

    def test_status_text_shows_the_fields(self, cli):
        code, out, _ = cli("status")
        assert code == 0 and "    fields: " in out and "status (string: active 4" in out and "    tags: " in out

    def test_status_counts_from_the_record_without_asking_the_engine(self, demo_needle, monkeypatch):
        def refuse(*args, **kwargs):
            raise AssertionError("status counted with the engine")

        monkeypatch.setattr(demo_needle.store, "count_values", refuse)
        monkeypatch.setattr(demo_needle.file_store, "count_values", refuse)
        notes = demo_needle.status().collections[0]
        assert notes.files == demo_needle.first_report.files_read and notes.chunks == demo_needle.first_report.chunks


@pytest.mark.integration
def test_status_shows_the_index_run_under_way_and_nothing_after(demo_needle):
    from needle.commands.render import status_text

    seen: list[Status] = []
    demo_needle.index(IndexRequest(), lambda report: seen.append(demo_needle.status()))
    run = seen[0].index_run
    assert run["phase"] == "indexing" and run["collections"] == ["notes"] and run["batches"] == 1
    assert "index run under way for notes (indexing" in status_text(seen[0], False)
    assert "index_run" not in demo_needle.status().model_dump() and demo_needle.index_run is None
