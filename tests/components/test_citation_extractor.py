import pytest
from haystack import Document, Pipeline
from haystack.dataclasses import ChatMessage

from haystack_integrations.components.extractors.needle.citation_extractor import CitationExtractor
from haystack_integrations.components.needle._citations import parse_citations
from needle.runtime.loader import loads_pipeline


def chunk(path: str, start: int, end: int, collection: str = "notes") -> Document:
    return Document(
        id=f"{path}:{start}",
        content=f"{path} lines {start}-{end}",
        meta={"collection": collection, "path": path, "start_line": start, "end_line": end},
    )


CHUNKS = [chunk("howto/pg.md", 10, 20), chunk("howto/pg.md", 21, 40), chunk("recipes/bread.md", 1, 12)]


def reply(text: str) -> list[ChatMessage]:
    return [ChatMessage.from_assistant(text)]


def cited_ids(text: str, documents: list[Document] = CHUNKS, **params) -> list[str]:
    return [d.id for d in CitationExtractor(**params).run(replies=reply(text), documents=documents)["cited"]]


class TestParseCitations:
    def test_ranges_single_lines_and_groups(self):
        text = "Set it [howto/pg.md:12-14]. Feed daily [recipes/bread.md:3; howto/pg.md:30–31]."
        assert parse_citations(text) == [("howto/pg.md", 12, 14), ("recipes/bread.md", 3, 3), ("howto/pg.md", 30, 31)]

    def test_numbered_references_links_and_repeats_are_not_citations(self):
        text = "See [1] and [the docs](http://x) [a.md:1-2] again [a.md:1-2]."
        assert parse_citations(text) == [("a.md", 1, 2)]

    def test_reversed_range_is_read_the_right_way_round(self):
        assert parse_citations("[a.md:9-3]") == [("a.md", 3, 9)]


class TestCitationExtractor:
    def test_init_defaults(self):
        assert CitationExtractor().line_slack == 0

    def test_init_custom_params(self):
        assert CitationExtractor(line_slack=2).line_slack == 2

    def test_negative_slack_raises(self):
        with pytest.raises(ValueError, match="line_slack must be >= 0, got -1"):
            CitationExtractor(line_slack=-1)

    def test_to_dict(self):
        assert CitationExtractor(line_slack=3).to_dict() == {
            "type": "haystack_integrations.components.extractors.needle.citation_extractor.CitationExtractor",
            "init_parameters": {"line_slack": 3},
        }

    def test_from_dict(self):
        extractor = CitationExtractor.from_dict(CitationExtractor(line_slack=3).to_dict())
        assert extractor.line_slack == 3

    def test_citation_selects_the_chunk_whose_lines_overlap(self):
        assert cited_ids("Restart needed [howto/pg.md:18-25].") == ["howto/pg.md:10", "howto/pg.md:21"]
        assert cited_ids("Restart needed [howto/pg.md:30].") == ["howto/pg.md:21"]

    def test_cited_chunks_keep_first_citation_order_and_appear_once(self):
        text = "[recipes/bread.md:2-3] then [howto/pg.md:11] and [recipes/bread.md:5]"
        assert cited_ids(text) == ["recipes/bread.md:1", "howto/pg.md:10"]

    def test_collection_prefixed_path_is_accepted(self):
        assert cited_ids("[notes/recipes/bread.md:4-6]") == ["recipes/bread.md:1"]

    def test_lines_outside_every_chunk_are_unknown_unless_within_slack(self):
        out = CitationExtractor().run(replies=reply("[howto/pg.md:42-44] [other.md:1-2]"), documents=CHUNKS)
        assert out["cited"] == [] and out["unknown"] == ["howto/pg.md:42-44", "other.md:1-2"]
        assert cited_ids("[howto/pg.md:42-44]", line_slack=2) == ["howto/pg.md:21"]

    def test_answer_is_the_stripped_first_reply_and_empty_without_one(self):
        out = CitationExtractor().run(replies=reply("  It is logical. \n"), documents=CHUNKS)
        assert out == {"answer": "It is logical.", "cited": [], "unknown": []}
        assert CitationExtractor().run(replies=[], documents=CHUNKS)["answer"] == ""

    def test_documents_are_returned_unchanged(self):
        out = CitationExtractor().run(replies=reply("[howto/pg.md:12-14]"), documents=CHUNKS)
        assert out["cited"][0] is CHUNKS[0]

    def test_round_trips_in_a_pipeline(self):
        pipeline = Pipeline()
        pipeline.add_component("cite", CitationExtractor(line_slack=1))
        again = loads_pipeline(pipeline.dumps())
        assert again.to_dict() == pipeline.to_dict()
        data = {"cite": {"replies": reply("[howto/pg.md:41]"), "documents": CHUNKS}}
        assert [d.id for d in again.run(data)["cite"]["cited"]] == ["howto/pg.md:21"]
