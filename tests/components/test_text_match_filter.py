from haystack import Document

from haystack_integrations.components.samplers.needle.text_match_filter import TextMatchFilter


def docs():
    return [
        Document(id="a", content="Set up logical\nreplication with a slot.", meta={"title": "Postgres replication"}),
        Document(id="b", content="pg_dump backups, nightly.", meta={"title": "Backups"}),
        Document(
            id="c", content="Replication lag alerts.", meta={"title": "pg_dump notes", "heading_path": ["Alerts"]}
        ),
    ]


class TestTextMatchFilter:
    def test_round_trip(self):
        data = TextMatchFilter().to_dict()
        assert data == {
            "type": "haystack_integrations.components.samplers.needle.text_match_filter.TextMatchFilter",
            "init_parameters": {},
        }
        assert TextMatchFilter.from_dict(data).to_dict() == data

    def test_nothing_asked_passes_everything(self):
        out = TextMatchFilter().run(documents=docs())
        assert [d.id for d in out["documents"]] == ["a", "b", "c"]

    def test_phrase_matches_across_whitespace_and_case(self):
        out = TextMatchFilter().run(documents=docs(), must_contain=["Logical Replication"])
        assert [d.id for d in out["documents"]] == ["a"]

    def test_excluded_term_is_a_whole_word_in_text_title_or_headings(self):
        out = TextMatchFilter().run(documents=docs(), must_not_contain=["pg_dump"])
        assert [d.id for d in out["documents"]] == ["a"]
        assert [d.id for d in TextMatchFilter().run(documents=docs(), must_not_contain=["slo"])["documents"]] == [
            "a",
            "b",
            "c",
        ]

    def test_inputs_are_not_mutated(self):
        original = docs()
        TextMatchFilter().run(documents=original, must_contain=["backups"])
        assert [d.id for d in original] == ["a", "b", "c"]
