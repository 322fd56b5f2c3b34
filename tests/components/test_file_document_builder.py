import pytest
from haystack import Document

from haystack_integrations.components.preprocessors.needle.file_document_builder import FileDocumentBuilder
from haystack_integrations.components.preprocessors.needle.markdown_chunker import MarkdownChunker

TEXT = """---
title: Kestrel
tags: [payments]
---
# Kestrel

Kestrel settles card payments overnight.

## Reconciliation

Every morning the ledger is compared with the bank's statement.
Differences above one cent page the on-call engineer.
"""


def read(text: str = TEXT, path: str = "kestrel.md") -> Document:
    return Document(content=text, meta={"collection": "notes", "path": path, "content_hash": "h"})


def chunk(files: list[Document], **kwargs) -> list[Document]:
    return MarkdownChunker(target_chars=60, overlap_chars=0, min_chars=10, max_chars=120, **kwargs).run(files)[
        "documents"
    ]


class TestFileDocumentBuilder:
    def test_init_bad_params_round_trip(self):
        assert FileDocumentBuilder().max_chars == 200_000
        with pytest.raises(ValueError, match="max_chars"):
            FileDocumentBuilder(max_chars=0)
        data = FileDocumentBuilder(max_chars=50).to_dict()
        assert data == {
            "type": "haystack_integrations.components.preprocessors.needle.file_document_builder.FileDocumentBuilder",
            "init_parameters": {"max_chars": 50, "max_pages": 3},
        }
        assert FileDocumentBuilder.from_dict(data).to_dict() == data

    def test_one_document_per_file_spanning_its_chunks(self):
        files = [read(), read("# Other\n\nShort note body here.\n", "other.md")]
        chunks = chunk(files)
        out = FileDocumentBuilder().run(files=files, chunks=chunks)["documents"]
        assert [d.meta["path"] for d in out] == ["kestrel.md", "other.md"]
        doc = out[0]
        lines = TEXT.split("\n")
        assert doc.meta["kind"] == "file" and doc.meta["heading_path"] == []
        assert doc.meta["title"] == "Kestrel" and doc.meta["tags"] == ["payments"]
        assert doc.meta["source_doc_id"] == "notes:kestrel.md"
        assert "context" not in doc.meta  # the body opens with "# Kestrel": the title is not embedded twice
        assert (doc.meta["start_line"], doc.meta["end_line"]) == (5, 12)
        assert doc.content.split("\n") == lines[4:12]
        assert "chunk_index" not in doc.meta

    def test_id_follows_the_text_and_not_the_chunking(self):
        files = [read()]
        first = FileDocumentBuilder().run(files=files, chunks=chunk(files))["documents"][0]
        rechunked = MarkdownChunker(target_chars=400, max_chars=800).run(files)["documents"]
        same = FileDocumentBuilder().run(files=files, chunks=rechunked)["documents"][0]
        edited = [read(TEXT.replace("one cent", "two cents"))]
        changed = FileDocumentBuilder().run(files=edited, chunks=chunk(edited))["documents"][0]
        assert first.id == same.id
        assert changed.id != first.id

    def test_a_title_the_body_does_not_open_with_is_embedded_as_context(self):
        files = [read(TEXT.replace("# Kestrel\n", "Intro line.\n")), read("Just a line of text here.\n", "plain.txt")]
        out = FileDocumentBuilder().run(files=files, chunks=chunk(files))["documents"]
        assert [d.meta.get("context") for d in out] == ["Kestrel", "plain"]  # frontmatter title; file name stem

    def test_files_without_chunks_get_no_document(self):
        files = [read("---\ntitle: Empty\n---\n", "empty.md"), read()]
        out = FileDocumentBuilder().run(files=files, chunks=chunk(files))["documents"]
        assert [d.meta["path"] for d in out] == ["kestrel.md"]

    def test_a_long_file_stops_at_a_chunk_boundary(self):
        files = [read()]
        chunks = chunk(files)
        doc = FileDocumentBuilder(max_chars=70).run(files=files, chunks=chunks)["documents"][0]
        start = min(c.meta["char_start"] for c in chunks)
        fitting = [c.meta["char_end"] for c in chunks if c.meta["char_end"] - start <= 70]
        assert fitting and len(fitting) < len(chunks)  # the limit falls inside the file
        assert doc.meta["char_end"] == max(fitting) and len(doc.content) <= 70
        assert doc.meta["end_line"] < 12


class TestFileDocumentBuilderPages:
    def test_a_paged_document_keeps_its_first_pages(self):
        pages = [f"Page {n} talks about topic number {n} at some length." for n in range(1, 6)]
        text = "\n\n".join(pages) + "\n"
        file = Document(content=text, meta={"collection": "docs", "path": "long.pdf", "page_starts": [0, 2, 4, 6, 8]})
        chunks = MarkdownChunker(target_chars=500, overlap_chars=0, min_chars=10).run([file])["documents"]
        assert len(chunks) == 5
        built = FileDocumentBuilder(max_pages=2).run(files=[file], chunks=chunks)["documents"][0]
        assert built.content == pages[0] + "\n\n" + pages[1]
        assert (built.meta["page"], built.meta["page_end"]) == (1, 2)
        assert "page_line" not in built.meta
        whole = FileDocumentBuilder(max_pages=9).run(files=[file], chunks=chunks)["documents"][0]
        assert whole.content == text.rstrip("\n") and whole.meta["page_end"] == 5

    @pytest.mark.parametrize("bad", [0, -1, "2", True])
    def test_bad_max_pages_raises(self, bad):
        with pytest.raises(ValueError, match="max_pages"):
            FileDocumentBuilder(max_pages=bad)
