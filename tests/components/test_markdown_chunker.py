import hashlib
import itertools
import json
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import ClassVar

import pytest
from haystack import Document, Pipeline

from haystack_integrations.components.converters.needle.markdown_file_reader import MarkdownFileReader
from haystack_integrations.components.fetchers.needle.collection_scanner import CollectionScanner
from haystack_integrations.components.preprocessors.needle.markdown_chunker import MarkdownChunker

FILLER = "It has a few sentences of filler text in it. "


def note(text: str, path: str = "folder/note.md", **meta) -> Document:
    return Document(content=text, meta={"collection": "notes", "path": path, **meta})


def chunk(text: str, path: str = "folder/note.md", chunker: MarkdownChunker | None = None, **meta) -> list[Document]:
    return (chunker or MarkdownChunker()).run(documents=[note(text, path, **meta)])["documents"]


def paragraphs(count: int, prefix: str = "Paragraph") -> str:
    return "\n\n".join(f"{prefix} {i} is about topic {i}. " + FILLER * 2 for i in range(count))


def assert_maps_to_file(file_text: str, chunks: list[Document]) -> None:
    """Every chunk is a slice of the file and its line range points at the right lines."""
    lines = file_text.split("\n")
    for doc in chunks:
        meta = doc.meta
        assert doc.content == file_text[meta["char_start"] : meta["char_end"]]
        joined = "\n".join(lines[meta["start_line"] - 1 : meta["end_line"]])
        assert doc.content in joined
        assert file_text.count("\n", 0, meta["char_start"]) + 1 == meta["start_line"]
        assert file_text.count("\n", 0, meta["char_end"] - 1) + 1 == meta["end_line"]
        assert meta["end_line"] - meta["start_line"] == doc.content.count("\n")


class TestMarkdownChunkerConfig:
    def test_init_defaults(self):
        chunker = MarkdownChunker()
        sizes = (chunker.target_chars, chunker.overlap_chars, chunker.min_chars, chunker.max_chars)
        assert sizes == (700, 100, 100, 1400)

    def test_init_custom(self):
        chunker = MarkdownChunker(target_chars=300, overlap_chars=0, min_chars=50, max_chars=300)
        assert (chunker.target_chars, chunker.overlap_chars, chunker.min_chars, chunker.max_chars) == (300, 0, 50, 300)

    @pytest.mark.parametrize(
        "params, message",
        [
            ({"target_chars": 0}, "target_chars"),
            ({"overlap_chars": -1}, "overlap_chars"),
            ({"min_chars": 0}, "min_chars"),
            ({"max_chars": 0}, "max_chars"),
            ({"target_chars": 700.0}, "target_chars"),
            ({"min_chars": 800}, "min_chars <= target_chars <= max_chars"),
            ({"target_chars": 1500}, "min_chars <= target_chars <= max_chars"),
            ({"overlap_chars": 700}, "overlap_chars must be < target_chars"),
        ],
    )
    def test_bad_params_raise(self, params, message):
        with pytest.raises(ValueError, match=message):
            MarkdownChunker(**params)

    def test_to_dict(self):
        assert MarkdownChunker(target_chars=500, overlap_chars=50, min_chars=80, max_chars=1000).to_dict() == {
            "type": "haystack_integrations.components.preprocessors.needle.markdown_chunker.MarkdownChunker",
            "init_parameters": {"target_chars": 500, "overlap_chars": 50, "min_chars": 80, "max_chars": 1000},
        }

    def test_from_dict(self):
        original = MarkdownChunker(target_chars=500, overlap_chars=50, min_chars=80, max_chars=1000)
        restored = MarkdownChunker.from_dict(original.to_dict())
        assert restored.to_dict() == original.to_dict()


class TestMarkdownChunkerBlocks:
    def test_fence_with_blank_lines_stays_whole(self):
        fence = "```python\n# a comment, not a heading\ndef f():\n    return 1\n\n\ndef g():\n"
        fence += "    x = 1\n" * 30 + "```"
        text = f"# Code\n\n{paragraphs(3)}\n\n{fence}\n\n{paragraphs(3, 'After')}\n"
        chunks = chunk(text)
        assert any(fence in c.content for c in chunks)
        start = text.index(fence)
        for c in chunks:
            assert not start < c.meta["char_start"] < start + len(fence)
        assert {tuple(c.meta["heading_path"]) for c in chunks} == {("Code",)}

    def test_fence_longer_than_max_is_cut_at_lines(self):
        fence = "```\n" + "\n".join(f"value_{i} = compute({i})  # step {i}" for i in range(200)) + "\n```"
        text = "# Code\n\n" + fence + "\n"
        chunker = MarkdownChunker(target_chars=400, overlap_chars=50, min_chars=50, max_chars=600)
        chunks = chunk(text, chunker=chunker)
        assert len(chunks) > 5
        for c in chunks:
            assert len(c.content) <= 600
            start, end = c.meta["char_start"], c.meta["char_end"]
            assert start == 0 or text[start - 1] == "\n"
            assert text[end] == "\n"
        assert "".join(c.content for c in chunks).count("value_199") >= 1

    def test_unterminated_fence_runs_to_end_of_file(self):
        text = "# Top\n\nIntro.\n\n```\ncode\n# not a heading\n\n## nor this\n"
        chunks = chunk(text)
        assert [c.meta["heading_path"] for c in chunks] == [["Top"]]
        assert chunks[0].content.endswith("## nor this")

    def test_headings_inside_fences_of_any_kind_are_ignored(self):
        text = (
            "# Doc\n\n~~~\n# tilde\n~~~\n\n````md\n```\n# inner\n```\n````\n\n"
            "- item\n  ```\n  # in list fence\n\n  more\n  ```\n\n## Real\n\ntext\n"
        )
        assert [c.meta["heading_path"] for c in chunk(text)] == [["Doc"], ["Doc", "Real"]]

    def test_list_is_kept_in_one_chunk(self):
        items = "\n".join(f"- item {i} with a few words\n  and a continuation line" for i in range(8))
        text = f"# L\n\n{paragraphs(2)}\n\n{items}\n\n{paragraphs(2, 'Later')}\n"
        chunks = chunk(text)
        assert len(chunks) > 1
        assert sum(items in c.content for c in chunks) >= 1

    def test_long_paragraph_without_newlines_is_cut_at_sentences(self):
        text = "# P\n\n" + "".join(f"Sentence number {i} says something useful. " for i in range(120)).strip() + "\n"
        chunks = chunk(text)
        assert len(chunks) > 3
        for c in chunks:
            assert len(c.content) <= 1400
            start = c.meta["char_start"]
            assert text[start - 2 : start] in (". ", "\n\n") or start == 0
            assert c.content.endswith(".")

    def test_unbreakable_line_longer_than_max_is_kept_whole(self):
        token = "x" * 3000
        text = f"# Blob\n\n{token}\n\nShort tail paragraph after the blob that is long enough to stay apart from it.\n"
        chunks = chunk(text)
        assert any(token in c.content for c in chunks)
        assert_maps_to_file(text, chunks)


class TestMarkdownChunkerHeadings:
    def test_nested_heading_paths(self):
        text = (
            "# Project\n\nintro\n\n## Architecture\n\narch\n\n### Indexing\n\nidx\n\n"
            "## Search\n\nsearch\n\n# Appendix\n\nmore\n"
        )
        assert [c.meta["heading_path"] for c in chunk(text)] == [
            ["Project"],
            ["Project", "Architecture"],
            ["Project", "Architecture", "Indexing"],
            ["Project", "Search"],
            ["Appendix"],
        ]

    def test_heading_text_is_stripped_of_hashes(self):
        text = "## Closed heading ##\n\nbody\n\n#not-a-heading tag line\n"
        chunks = chunk(text)
        assert [c.meta["heading_path"] for c in chunks] == [["Closed heading"]]

    def test_text_before_the_first_heading_has_an_empty_path(self):
        chunks = chunk("Preamble text.\n\n# Title\n\nbody\n")
        assert [c.meta["heading_path"] for c in chunks] == [[], ["Title"]]

    def test_heading_line_opens_the_first_chunk_of_its_section(self):
        text = "# T\n\n## Section\n\n" + paragraphs(10)
        chunks = [c for c in chunk(text) if c.meta["heading_path"] == ["T", "Section"]]
        assert chunks[0].content.startswith("# T\n\n## Section\n\nParagraph 0")

    def test_heading_with_sub_heading_joins_the_sub_section_chunk(self):
        chunks = chunk("# A\n## B\n### C\n\ntext under c\n")
        assert len(chunks) == 1
        assert chunks[0].content == "# A\n## B\n### C\n\ntext under c"
        assert chunks[0].meta["heading_path"] == ["A", "B", "C"]

    def test_tiny_sections_are_still_emitted(self):
        text = "# One\n\nshort.\n\n# Two\n\ntiny.\n\n# Three\n"
        chunks = chunk(text)
        assert [c.content for c in chunks] == ["# One\n\nshort.", "# Two\n\ntiny.", "# Three"]


class TestMarkdownChunkerLines:
    def test_lines_and_offsets_match_the_file(self):
        text = "# Title\n\n" + paragraphs(12) + "\n\n## Two\n\n- a\n- b\n\n```\ncode\n```\n"
        chunks = chunk(text)
        assert_maps_to_file(text, chunks)
        assert chunks[0].meta["start_line"] == 1

    def test_lines_count_the_frontmatter(self):
        text = "---\ntitle: T\ntags: [a]\n---\n# Heading\n\nBody.\n"
        chunks = chunk(text)
        assert chunks[0].meta["start_line"] == 5
        assert chunks[0].meta["end_line"] == 7
        assert "title:" not in chunks[0].content
        assert_maps_to_file(text, chunks)

    def test_crlf_file_read_by_the_reader_maps_to_disk_lines(self, tmp_path: Path):
        body = "---\r\ntitle: Windows\r\n---\r\n# Head\r\n\r\n" + paragraphs(10).replace("\n", "\r\n") + "\r\n"
        (tmp_path / "win.md").write_bytes(body.encode("utf-8"))
        read = MarkdownFileReader().run(sources=[{"collection": "c", "root": str(tmp_path), "path": "win.md"}])
        chunks = MarkdownChunker().run(documents=read["documents"])["documents"]
        disk_lines = (tmp_path / "win.md").read_bytes().decode("utf-8").split("\r\n")
        assert len(chunks) > 1
        for c in chunks:
            joined = "\n".join(disk_lines[c.meta["start_line"] - 1 : c.meta["end_line"]])
            assert c.content in joined
        assert chunks[0].meta["start_line"] == 4

    def test_long_file_maps_to_the_file(self):
        sections = [f"## Section {s}\n\n{paragraphs(8, f'S{s} paragraph')}" for s in range(40)]
        text = "---\ntitle: Long\n---\n# Long\n\n" + "\n\n".join(sections) + "\n"
        chunks = chunk(text)
        assert len(chunks) >= 80
        assert_maps_to_file(text, chunks)
        assert [c.meta["chunk_index"] for c in chunks] == list(range(len(chunks)))


class TestMarkdownChunkerSizes:
    def test_chunks_stay_under_max_and_near_target(self):
        text = "# Big\n\n" + paragraphs(40)
        chunks = chunk(text)
        assert all(len(c.content) <= 1400 for c in chunks)
        assert all(350 <= len(c.content) <= 800 for c in chunks[:-1])

    def test_overlap_within_a_long_section(self):
        chunks = chunk("# Big\n\n" + paragraphs(20))
        assert len(chunks) > 2
        for previous, current in itertools.pairwise(chunks):
            assert current.meta["char_start"] < previous.meta["char_end"]
            assert previous.meta["char_end"] - current.meta["char_start"] <= 100

    def test_overlap_starts_at_a_line_when_lines_are_short(self):
        text = "# Log\n\n" + "\n".join(f"- entry {i:03d}: short line of the log" for i in range(60)) + "\n"
        chunks = chunk(text)
        assert len(chunks) > 2
        for previous, current in itertools.pairwise(chunks):
            assert current.meta["char_start"] < previous.meta["char_end"]
            assert text[current.meta["char_start"] - 1] == "\n"
        assert_maps_to_file(text, chunks)

    def test_no_overlap_across_headings(self):
        text = "# A\n\n" + paragraphs(8) + "\n\n## B\n\n" + paragraphs(8)
        chunks = chunk(text)
        first_b = next(i for i, c in enumerate(chunks) if c.meta["heading_path"] == ["A", "B"])
        assert chunks[first_b].meta["char_start"] >= chunks[first_b - 1].meta["char_end"]
        assert chunks[first_b].content.startswith("## B")

    def test_zero_overlap_gives_disjoint_chunks(self):
        chunker = MarkdownChunker(overlap_chars=0)
        chunks = chunk("# Big\n\n" + paragraphs(20), chunker=chunker)
        for previous, current in itertools.pairwise(chunks):
            assert current.meta["char_start"] >= previous.meta["char_end"]

    def test_short_last_paragraph_joins_the_previous_chunk(self):
        text = "# Big\n\n" + paragraphs(8) + "\n\nThe end."
        chunks = chunk(text)
        assert chunks[-1].content.endswith("The end.")
        assert len(chunks[-1].content) >= 100

    def test_short_paragraphs_are_packed_together(self):
        text = "# Notes\n\n" + "\n\n".join(f"Short note {i}." for i in range(20)) + "\n"
        chunks = chunk(text)
        assert len(chunks) == 1


class TestMarkdownChunkerCoverage:
    def test_every_line_of_the_body_lands_in_a_chunk(self):
        text = (
            "---\ntitle: Mixed\n---\nPreamble.\n\n# Mixed\n\n> quote\nlazy line\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
            "1. first\n2. second\n\n    indented code\n\n---\n\n## Long\n\n"
            + paragraphs(15)
            + "\n\n"
            + "Sentence after sentence. " * 120
            + "\n\n```\n"
            + "code line\n" * 200
            + "```\n\n### End\n"
        )
        chunks = chunk(text, chunker=MarkdownChunker(target_chars=300, overlap_chars=60, min_chars=50, max_chars=500))
        covered = {line for c in chunks for line in range(c.meta["start_line"], c.meta["end_line"] + 1)}
        lines = text.split("\n")
        assert [i + 1 for i, line in enumerate(lines[3:], start=3) if line.strip() and i + 1 not in covered] == []
        assert_maps_to_file(text, chunks)
        assert all(len(c.content) <= 500 for c in chunks)

    def test_thematic_break_on_the_first_line_is_text_without_a_warning(self):
        doc = chunk("---\n\nSome text.\n\n---\n\nMore text.\n")[0]
        assert doc.content.startswith("---")
        assert "frontmatter_warning" not in doc.meta


class TestMarkdownChunkerIds:
    def test_same_file_gives_same_ids(self):
        text = "# A\n\n" + paragraphs(10) + "\n\n## B\n\ntext\n"
        assert [c.id for c in chunk(text)] == [c.id for c in chunk(text)]

    def test_id_is_sha1_of_file_heading_path_index_context_and_normalised_text(self):
        doc = chunk("# A\n\n## B\n\nSome text.   \n")[0]
        normalised = "# A\n\n## B\n\nSome text."
        expected = hashlib.sha1(
            "\x1f".join(["notes:folder/note.md", "A\x1fB", "0", "A › B", normalised]).encode()
        ).hexdigest()
        assert doc.id == expected
        assert doc.meta["checksum"] == hashlib.sha1(normalised.encode()).hexdigest()

    def test_checksum_ignores_unicode_form_and_trailing_spaces(self):
        composed = chunk("# Café\n\ntext\n")[0].meta["checksum"]
        decomposed = chunk(unicodedata.normalize("NFD", "# Café  \n\ntext \n"))[0].meta["checksum"]
        assert composed == decomposed

    def test_edit_at_the_end_keeps_earlier_ids(self):
        text = "# A\n\n" + paragraphs(6) + "\n\n## B\n\n" + paragraphs(6) + "\n\n## C\n\n" + paragraphs(6, "Last")
        before = chunk(text)
        after = chunk(text + "\n\nOne more sentence at the very end of the file.\n")
        changed = [i for i, (b, a) in enumerate(zip(before, after)) if b.id != a.id]
        assert changed == [len(before) - 1]

    def test_edit_in_one_section_only_changes_that_section(self):
        sections = [f"## S{s}\n\n{paragraphs(5, f'S{s} paragraph')}" for s in range(4)]
        before = chunk("# Doc\n\n" + "\n\n".join(sections))
        sections[1] = sections[1].replace("topic 2", "subject 2")
        after = chunk("# Doc\n\n" + "\n\n".join(sections))
        assert len(before) == len(after)
        for b, a in zip(before, after):
            assert (b.id != a.id) == (b.meta["heading_path"][-1] == "S1" and "subject 2" in a.content)


class TestMarkdownChunkerMeta:
    def test_title_from_frontmatter(self):
        assert chunk("---\ntitle: From Front\n---\n# From H1\n\nx\n")[0].meta["title"] == "From Front"

    def test_non_string_frontmatter_title_is_a_string(self):
        assert chunk("---\ntitle: 2024\n---\nbody\n")[0].meta["title"] == "2024"

    def test_title_from_first_h1(self):
        assert chunk("Intro\n\n## Sub\n\n# First H1\n\n# Second\n")[0].meta["title"] == "First H1"

    def test_title_from_file_name(self):
        assert chunk("## Only H2\n\nbody\n", path="dir/My Note.md")[0].meta["title"] == "My Note"

    @pytest.mark.parametrize(
        "tags, expected",
        [
            ("[project, '#search', project]", ["project", "search"]),
            ("'alpha, #beta gamma'", ["alpha", "beta", "gamma"]),
            ("single", ["single"]),
            ("[1, two]", ["1", "two"]),
            ("", []),
        ],
    )
    def test_tags_from_frontmatter(self, tags, expected):
        assert chunk(f"---\ntags: {tags}\n---\nbody\n")[0].meta["tags"] == expected

    def test_no_frontmatter_means_no_tags(self):
        meta = chunk("body\n")[0].meta
        assert meta["tags"] == [] and meta["frontmatter"] == {}

    def test_invalid_frontmatter_is_read_as_text_with_a_warning(self):
        text = "---\ntitle: [unclosed\n---\nbody text\n"
        doc = chunk(text)[0]
        assert doc.content == text.rstrip("\n")
        assert doc.meta["start_line"] == 1
        assert doc.meta["frontmatter"] == {}
        assert "invalid YAML frontmatter" in doc.meta["frontmatter_warning"]

    def test_meta_is_json_serialisable_with_dates(self):
        text = (
            "---\ndate: 2024-05-01\nupdated: 2024-05-02 10:30:00\nnested: {when: 2023-01-01, list: [1, 2.5]}\n---\nx\n"
        )
        meta = chunk(text, size_bytes=10, mtime=1.5)[0].meta
        assert meta["frontmatter"] == {
            "date": "2024-05-01",
            "updated": "2024-05-02T10:30:00",
            "nested": {"when": "2023-01-01", "list": [1, 2.5]},
        }
        assert json.loads(json.dumps(meta)) == meta

    def test_all_meta_fields(self):
        text = "# Needle\n\n## Index\n\nScan.\n"
        doc = chunk(text, size_bytes=27, mtime=3.0, content_hash="abc", decode_warning="w")[0]
        file_meta = {
            "title": "Needle",
            "aliases": [],
            "tags": [],
            "frontmatter": {},
            "fields": [],
            "folder": "folder",
            "folders": ["folder"],
            "date": "1970-01-01T00:00:03Z",
            "date_source": "mtime",
            "identifiers": [],
        }
        assert doc.meta == {
            "collection": "notes",
            "path": "folder/note.md",
            **file_meta,
            "meta_checksum": hashlib.sha1(json.dumps(file_meta, sort_keys=True).encode()).hexdigest(),
            "heading_path": ["Needle", "Index"],
            "chunk_index": 0,
            "start_line": 1,
            "end_line": 5,
            "char_start": 0,
            "char_end": 25,
            "checksum": hashlib.sha1(b"# Needle\n\n## Index\n\nScan.").hexdigest(),
            "content_hash": "abc",
            "source_doc_id": "notes:folder/note.md",
            "context": "Needle › Index",
            "size_bytes": 27,
            "mtime": 3.0,
            "decode_warning": "w",
        }

    def test_content_hash_is_computed_when_missing(self):
        text = "# A\n\nbody\n"
        assert chunk(text)[0].meta["content_hash"] == hashlib.sha256(text.encode()).hexdigest()

    def test_context_keeps_a_frontmatter_title_distinct_from_the_h1(self):
        doc = chunk("---\ntitle: Project X\n---\n# Needle\n\n## Index\n\nScan.\n")[0]
        assert doc.meta["context"] == "Project X › Needle › Index"

    def test_a_new_title_changes_the_chunk_ids(self):
        before = chunk("---\ntitle: Project X\n---\n# Needle\n\nScan.\n")[0]
        after = chunk("---\ntitle: Project Y\n---\n# Needle\n\nScan.\n")[0]
        assert before.meta["checksum"] == after.meta["checksum"] and before.id != after.id

    def test_input_documents_are_not_mutated(self):
        doc = note("# A\n\nbody\n", size_bytes=3)
        before = (doc.id, doc.content, dict(doc.meta))
        MarkdownChunker().run(documents=[doc])
        assert (doc.id, doc.content, doc.meta) == before

    def test_empty_documents_give_no_chunks(self):
        assert MarkdownChunker().run(documents=[note(""), note("  \n")])["documents"] == []

    def test_frontmatter_only_document_gives_no_chunks(self):
        assert chunk("---\ntitle: Empty\n---\n") == []


class TestMarkdownChunkerFileMetadata:
    def test_inline_tags_outside_code_join_the_frontmatter_tags(self):
        text = (
            "---\ntags: [Kestrel]\n---\n# Notes #heading-tag\n\nWatch #homelab/alerts and `#not-inline` or\n"
            "[a link](#anchor), page#fragment, &#38; and #2024.\n\n```bash\necho #not-code\n```\n"
        )
        assert chunk(text)[0].meta["tags"] == ["kestrel", "heading-tag", "homelab/alerts", "homelab"]

    def test_a_singular_tag_key_and_a_comma_string_are_read(self):
        assert chunk("---\ntag: 'Ops, on-call'\n---\nbody\n")[0].meta["tags"] == ["ops", "on-call"]

    def test_scalar_fields_keep_their_types(self):
        text = (
            "---\nstatus: Draft\npriority: 2\nscore: 0.5\npublic: false\ndate: 2024-05-11\n"
            "attendees: [Priya Raman, me]\nnested: {a: 1}\n---\nbody\n"
        )
        meta = chunk(text)[0].meta
        assert meta["frontmatter"] == {
            "status": "Draft",
            "priority": 2,
            "score": 0.5,
            "public": False,
            "date": "2024-05-11",
            "attendees": ["Priya Raman", "me"],
            "nested": {"a": 1},
        }
        assert meta["fields"] == [
            "status=draft",
            "priority=2",
            "score=0.5",
            "public=false",
            "date=2024-05-11",
            "attendees=priya raman",
            "attendees=me",
        ]

    def test_folder_and_every_folder_above_it(self):
        meta = chunk("body\n", path="runbooks/k8s/oom.md")[0].meta
        assert (meta["folder"], meta["folders"]) == ("runbooks/k8s", ["runbooks", "runbooks/k8s"])
        assert chunk("body\n", path="top.md")[0].meta["folders"] == []

    @pytest.mark.parametrize(
        "text, path, expected",
        [
            ("---\ndate: 2024-05-11\n---\nx\n", "2023-01-01-a.md", ("2024-05-11T00:00:00Z", "frontmatter")),
            ("---\ncreated: 2024-05-11 10:30:00+02:00\n---\nx\n", "a.md", ("2024-05-11T08:30:00Z", "frontmatter")),
            ("---\nupdated: '2024-05-11T08:00:00Z'\n---\nx\n", "a.md", ("2024-05-11T08:00:00Z", "frontmatter")),
            ("---\ndate: someday\n---\nx\n", "2023-01-02-standup.md", ("2023-01-02T00:00:00Z", "file name")),
            ("x\n", "journal/2023-13-40.md", ("1970-01-02T00:00:00Z", "mtime")),
            ("x\n", "health/mochi-blood-test-2026-10.md", ("2026-10-01T00:00:00Z", "file name")),
            ("x\n", "work/okrs-2025-q3-checkin.md", ("2025-07-01T00:00:00Z", "file name")),
            ("x\n", "journal/weekly-review-2026-w45.md", ("2026-11-02T00:00:00Z", "file name")),
            ("x\n", "travel/brittany-august-2025.md", ("2025-08-01T00:00:00Z", "file name")),
            ("x\n", "travel/lyon-octobre-2024.md", ("2024-10-01T00:00:00Z", "file name")),
            ("x\n", "finance/budget-2024.txt", ("2024-01-01T00:00:00Z", "file name")),
            ("x\n", "journal/2024/05/11.md", ("2024-05-11T00:00:00Z", "path")),
            ("x\n", "meetings/1on1-jonas-november.md", ("1970-01-02T00:00:00Z", "mtime")),
        ],
    )
    def test_document_date_from_frontmatter_then_file_name_then_mtime(self, text, path, expected):
        meta = chunk(text, path=path, mtime=86400.0)[0].meta
        assert (meta["date"], meta["date_source"]) == expected

    def test_no_date_without_frontmatter_name_or_mtime(self):
        assert chunk("x\n")[0].meta["date"] is None

    def test_identifiers_are_kept_verbatim_as_a_list(self):
        text = "Ticket KES-142 hit SQLITE_BUSY and ERR_CONNECTION_REFUSED on v1.4.2, CVE-2024-3094, E1234; 0.5 and MyClass not.\n"
        assert chunk(text)[0].meta["identifiers"] == [
            "KES-142",
            "SQLITE_BUSY",
            "ERR_CONNECTION_REFUSED",
            "v1.4.2",
            "CVE-2024-3094",
            "E1234",
        ]

    def test_meta_checksum_changes_with_the_frontmatter_but_ids_do_not(self):
        before = chunk("---\ntags: [a]\n---\n# T\n\nbody\n")[0]
        after = chunk("---\ntags: [b]\n---\n# T\n\nbody\n")[0]
        assert before.id == after.id
        assert before.meta["meta_checksum"] != after.meta["meta_checksum"]


# A "billion laughs" in ten lines: 9**9 strings once every alias is expanded.
ALIAS_BOMB = (
    "---\n"
    + 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n" for prev, name in zip("abcdefgh", "bcdefghi"))
    + "---\n# Body\n\nThe body is still indexed.\n"
)


class TestMarkdownChunkerFrontmatterBounds:
    def test_alias_bomb_is_left_out_in_bounded_time_and_memory(self, tmp_path: Path):
        # In a child process with 1.5 GB of address space and 60 s: expanding the aliases needs far more of both.
        script = tmp_path / "bomb.py"
        script.write_text(
            "import json, resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (1536 * 2**20, 1536 * 2**20))\n"
            "from haystack import Document\n"
            "from haystack_integrations.components.preprocessors.needle.markdown_chunker import MarkdownChunker\n"
            "doc = Document(content=sys.stdin.read(), meta={'collection': 'n', 'path': 'bomb.md'})\n"
            "out = MarkdownChunker().run(documents=[doc])\n"
            "print(json.dumps({'chunks': [c.content for c in out['documents']], 'warnings': out['warnings']}))\n"
        )
        done = subprocess.run(
            [sys.executable, str(script)],
            input=ALIAS_BOMB,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=Path(__file__).resolve().parents[2],
        )
        assert done.returncode == 0, done.stderr[-2000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["chunks"] == ["# Body\n\nThe body is still indexed."]
        assert result["warnings"] == [
            {
                "collection": "n",
                "path": "bomb.md",
                "reason": "frontmatter left out: over 10000 values once its aliases are expanded",
            }
        ]

    @pytest.mark.parametrize(
        "yaml_text, reason",
        [
            ("a: &x [1]\n" + "".join(f"k{i}: *x\n" for i in range(101)), "more than 100 aliases"),
            ("a: " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 32 levels"),
            ("a: &x [1, 2]\nb: [" + ", ".join(["*x"] * 60) + "]\n" + "c: [" + ", ".join(["*b"] * 0) + "]\n", None),
        ],
    )
    def test_each_bound_names_itself(self, yaml_text, reason):
        doc = chunk(f"---\n{yaml_text}---\nbody\n")[0]
        if reason is None:
            assert "frontmatter_warning" not in doc.meta and len(doc.meta["frontmatter"]["b"]) == 60
        else:
            assert doc.meta["frontmatter_warning"] == f"frontmatter left out: {reason}"
            assert (doc.content, doc.meta["frontmatter"]) == ("body", {})

    def test_recursive_alias_is_refused(self):
        doc = chunk("---\na: &x [1, *x]\n---\nbody\n")[0]
        assert doc.meta["frontmatter_warning"] == "frontmatter left out: an alias refers to a value that contains it"

    def test_oversized_frontmatter_is_read_as_text(self):
        text = "---\n" + "".join(f"k{i}: {'v' * 60}\n" for i in range(1200)) + "---\nbody\n"
        doc = chunk(text)[0]
        assert doc.meta["frontmatter_warning"] == "frontmatter left out: over 65536 bytes, read as text"
        assert doc.meta["start_line"] == 1

    def test_warnings_output_names_the_file(self):
        out = MarkdownChunker().run(documents=[note("---\ntitle: [unclosed\n---\nbody\n", path="bad.md")])
        [warning] = out["warnings"]
        assert (warning["path"], warning["reason"].split(":")[0]) == (
            "bad.md",
            "invalid YAML frontmatter, read as text",
        )


class TestMarkdownChunkerInAPipeline:
    def test_scanner_reader_and_chunker_connect_and_run(self, tmp_path: Path):
        (tmp_path / "a.md").write_text("---\ntags: x\n---\n# A\n\nhello\n")
        pipeline = Pipeline()
        pipeline.add_component("scanner", CollectionScanner())
        pipeline.add_component("reader", MarkdownFileReader())
        pipeline.add_component("chunker", MarkdownChunker())
        pipeline.connect("scanner.sources", "reader.sources")
        pipeline.connect("reader.documents", "chunker.documents")
        out = pipeline.run({"scanner": {"collections": [{"name": "n", "root": str(tmp_path)}]}})
        [doc] = out["chunker"]["documents"]
        assert (doc.content, doc.meta["source_doc_id"], doc.meta["start_line"], doc.meta["tags"]) == (
            "# A\n\nhello",
            "n:a.md",
            4,
            ["x"],
        )


class TestMarkdownChunkerPages:
    """A paged document (a PDF from DocumentConverter) lists where its pages start; chunks learn their page."""

    TEXT = "---\ntitle: Raft\n---\n\nfirst page line one\nfirst page line two\n\n- a list item\n\n- a list item on page two\ncontinued\n\nthird page\n"
    STARTS: ClassVar[list[int]] = [4, 9, 12]  # 0-based lines where pages 1, 2 and 3 start

    def test_chunks_never_run_over_a_page_break_and_know_their_page(self):
        chunks = chunk(
            self.TEXT,
            "raft.pdf",
            MarkdownChunker(target_chars=500, overlap_chars=50, min_chars=10),
            page_starts=self.STARTS,
        )
        assert [c.meta["page"] for c in chunks] == [1, 2, 3]
        assert [c.meta["page_end"] for c in chunks] == [1, 2, 3]
        assert [(c.meta["page_line"], c.meta["page_end_line"]) for c in chunks] == [(1, 4), (1, 2), (1, 1)]
        assert chunks[1].content == "- a list item on page two\ncontinued"
        assert chunks[0].meta["title"] == "Raft" and all("page_starts" not in c.meta for c in chunks)
        assert_maps_to_file(self.TEXT, chunks)

    def test_the_same_text_without_pages_is_chunked_as_markdown(self):
        chunker = MarkdownChunker(target_chars=500, overlap_chars=50, min_chars=10)
        plain = chunk(self.TEXT, "raft.pdf", chunker)
        assert len(plain) == 1 and "page" not in plain[0].meta

    def test_a_heading_at_the_foot_of_a_page_does_not_pull_the_next_page_in(self):
        text = "intro text on page one\n\n# Heading\n\n## Sub\n\nbody on page two\n"
        chunks = chunk(
            text, "a.pdf", MarkdownChunker(target_chars=500, overlap_chars=50, min_chars=10), page_starts=[0, 4]
        )
        assert {c.meta["page"] for c in chunks} == {1, 2}
        assert all(c.meta["page"] == c.meta["page_end"] for c in chunks)

    @pytest.mark.parametrize("bad", [[3, 1], [0, "2"], [0, 99]])
    def test_page_starts_that_do_not_fit_the_text_skip_the_file_with_the_reason(self, bad):
        out = MarkdownChunker().run(documents=[note("a\n\nb\n\nc\n", "a.pdf", page_starts=bad)])
        assert out["documents"] == []
        [skipped] = out["skipped"]
        assert skipped["path"] == "a.pdf" and "page_starts" in skipped["reason"]


class TestMarkdownChunkerBadValues:
    """A frontmatter value that cannot be built (a date that does not exist, a tag that does not fit) is left out."""

    @pytest.mark.parametrize(
        "line, field, reason",
        [
            ("date: 2024-13-45", "date", "month must be in 1..12"),
            ("prio: !!int high", "prio", "invalid literal for int()"),
            ("digits: " + "7" * 5000, "digits", "limit"),
            ("date: 2024-01-01 25:61:61", "date", "hour must be in 0..23"),
            ("when: !!python/object:os.system x", "when", "could not determine a constructor"),
            ("nested: {deep: [2024-02-30]}", "nested", "day is out of range for month"),
        ],
    )
    def test_a_value_that_cannot_be_built_leaves_out_its_field_only(self, line, field, reason):
        out = MarkdownChunker().run(
            documents=[
                note(f"---\ntitle: Kept\ntags: [otters]\n{line}\nstatus: draft\n---\n# Head\n\nbody\n", path="bad.md")
            ]
        )
        [doc] = out["documents"]
        assert doc.meta["frontmatter"] == {"title": "Kept", "tags": ["otters"], "status": "draft"}
        assert (doc.meta["title"], doc.meta["tags"], doc.content) == ("Kept", ["otters"], "# Head\n\nbody")
        assert doc.meta["frontmatter_warning"].startswith(f"frontmatter field {field} left out: ")
        assert reason in doc.meta["frontmatter_warning"]
        assert out["warnings"] == [{"collection": "notes", "path": "bad.md", "reason": doc.meta["frontmatter_warning"]}]

    def test_a_bad_value_under_a_merge_key_leaves_out_only_its_field(self):
        doc = chunk("---\nbase: &b {a: 1}\nown:\n  <<: *b\n  c: 2\nbad: 2024-13-45\n---\nbody\n")[0]
        assert doc.meta["frontmatter"] == {"base": {"a": 1}, "own": {"a": 1, "c": 2}}

    def test_a_root_value_that_cannot_be_built_is_read_as_text(self):
        doc = chunk("---\n!!int high\n---\nbody\n")[0]
        assert doc.meta["frontmatter"] == {} and doc.meta["start_line"] == 1

    @pytest.mark.parametrize(
        "value, expected",
        [
            ("9999-12-31 23:00:00 -05:00", None),
            ("0001-01-01T00:30:00+01:00", None),
            ("2024-05-11T10:00:00+02:00", "2024-05-11T08:00:00Z"),
        ],
    )
    def test_a_date_out_of_range_in_utc_is_no_date(self, value, expected):
        meta = chunk(f"---\ndate: {value}\n---\nbody\n", path="a.md")[0].meta
        assert meta["date"] == expected

    def test_an_integer_past_64_bits_is_kept_as_text(self):
        meta = chunk("---\nbig: 123456789012345678901234567890\nsmall: -12\n---\nbody\n")[0].meta
        assert meta["frontmatter"] == {"big": "123456789012345678901234567890", "small": -12}

    def test_a_file_that_cannot_be_chunked_is_skipped_with_its_reason_and_the_others_are_chunked(self, monkeypatch):
        import haystack_integrations.components.preprocessors.needle.markdown_chunker as module

        real = module.identifiers

        def failing(text: str) -> list[str]:
            if "poison" in text:
                raise OverflowError("a value the chunker did not expect")
            return real(text)

        monkeypatch.setattr(module, "identifiers", failing)
        out = MarkdownChunker().run(documents=[note("poison\n", path="bad.md"), note("fine\n", path="good.md")])
        assert [d.meta["path"] for d in out["documents"]] == ["good.md"]
        assert out["skipped"] == [
            {
                "collection": "notes",
                "path": "bad.md",
                "reason": "cannot be chunked: a value the chunker did not expect",
            }
        ]


class TestMarkdownChunkerLinks:
    def test_links_read_as_their_display_text_and_lines_stay(self):
        text = "# Home\n\nAsk [[Jakob Hoffmann|Jakob]] about [[Waypoint#Status]].\n\nSee [the lab](<Places/Fotolab Noord.md>).\n"
        doc = chunk(text)[0]
        assert doc.content == "# Home\n\nAsk Jakob about Waypoint > Status.\n\nSee the lab."
        assert (doc.meta["start_line"], doc.meta["end_line"]) == (1, 5)

    def test_aliases_are_names_embedded_with_the_title(self):
        text = "---\naliases: [Dutch pea soup, split pea soup]\n---\n# Snert\n\nPeas, water, a hock.\n"
        doc = chunk(text)[0]
        assert doc.meta["aliases"] == ["Dutch pea soup", "split pea soup"]
        assert doc.meta["context"] == "Snert (Dutch pea soup, split pea soup)"
