import pytest
from haystack import Document

from haystack_integrations.components.extractors.needle.snippet_extractor import SnippetExtractor

TEXT = "\n".join(["# Title", "intro line", "filler", "the replication slot lags", "more filler", "end", "tail"])


def chunk(text: str = TEXT, start_line: int = 10) -> Document:
    return Document(content=text, meta={"start_line": start_line, "collection": "notes", "path": "ops/r.md"})


class TestSnippetExtractor:
    def test_defaults_bad_params_round_trip(self):
        extractor = SnippetExtractor()
        assert (extractor.max_lines, extractor.context_lines) == (10, 2)
        with pytest.raises(ValueError):
            SnippetExtractor(max_lines=0)
        with pytest.raises(ValueError):
            SnippetExtractor(context_lines=-1)
        data = SnippetExtractor(5, 1).to_dict()
        assert SnippetExtractor.from_dict(data).to_dict() == data

    def test_centred_on_best_line_with_file_line_numbers(self):
        doc = SnippetExtractor(context_lines=1).run([chunk()], query="replication slot")["documents"][0]
        # best line is the 4th line of the chunk -> file line 13; one line of context each side
        assert doc.meta["snippet"] == "@@ -12,3 +12,3 @@ notes/ops/r.md\nfiller\nthe replication slot lags\nmore filler"
        assert (doc.meta["snippet_line"], doc.meta["snippet_lines"]) == (12, 3)

    def test_max_lines_caps_the_window(self):
        doc = SnippetExtractor(max_lines=2, context_lines=3).run([chunk()], query="replication")["documents"][0]
        assert doc.meta["snippet_lines"] == 2

    def test_no_match_starts_at_the_first_line_that_says_something(self):
        doc = SnippetExtractor(context_lines=1).run([chunk()], query="zzz")["documents"][0]
        assert doc.meta["snippet"] == "@@ -11,2 +11,2 @@ notes/ops/r.md\nintro line\nfiller"

    def test_headings_fences_and_blank_lines_never_make_the_snippet(self):
        text = "## Alerts\n\n```bash\nalertmanager --config.file=am.yml\n```\n\nPage me when the disk fills."
        doc = SnippetExtractor(context_lines=1).run([chunk(text)], query="homelab alerts")["documents"][0]
        header, *body = doc.meta["snippet"].split("\n")
        assert body == ["alertmanager --config.file=am.yml"] and header.startswith("@@ -13,1 +13,1 @@")

    def test_max_chars_adds_context_only_while_it_fits(self):
        text = "\n".join(["short before", "x" * 300, "the replication slot lags", "after", "y" * 300])
        doc = SnippetExtractor(context_lines=2, max_chars=60).run([chunk(text)], query="replication")["documents"][0]
        assert doc.meta["snippet"].split("\n")[1:] == ["the replication slot lags", "after"]
        with pytest.raises(ValueError, match="max_chars"):
            SnippetExtractor(max_chars=0)
        assert SnippetExtractor.from_dict(SnippetExtractor(max_chars=400).to_dict()).max_chars == 400

    def test_a_word_stem_finds_the_line(self):
        text = "# Certificates\nThe cron job runs nightly.\nRenewal happens through certbot's timer."
        doc = SnippetExtractor(context_lines=0).run([chunk(text)], query="renewing")["documents"][0]
        assert doc.meta["snippet"].split("\n")[1:] == ["Renewal happens through certbot's timer."]

    def test_lines_match_the_file_on_disk(self, tmp_path):
        lines = [f"line {i}" for i in range(1, 41)]
        lines[24] = "the needle is here"
        (tmp_path / "f.md").write_text("\n".join(lines))
        text = "\n".join(lines[19:30])  # a chunk holding file lines 20..30
        doc = SnippetExtractor().run([chunk(text, start_line=20)], query="needle")["documents"][0]
        header, *body = doc.meta["snippet"].split("\n")
        start = int(header.split()[1].split(",")[0][1:])
        assert body == lines[start - 1 : start - 1 + len(body)]
        assert "the needle is here" in body


class TestSnippetAnchors:
    def test_a_pdf_chunk_names_its_page_and_lines_within_it(self):
        doc = Document(
            content=TEXT,
            meta={
                "start_line": 40,
                "collection": "papers",
                "path": "raft.pdf",
                "format": "pdf",
                "page": 3,
                "page_line": 10,
            },
        )
        out = SnippetExtractor(context_lines=1).run([doc], query="replication slot")["documents"][0]
        assert out.meta["snippet"].split("\n")[0] == "@@ page 3 -12,3 +12,3 @@ papers/raft.pdf"
        assert out.meta["snippet_line"] == 42

    def test_a_docx_or_html_chunk_names_its_section(self):
        doc = Document(
            content=TEXT,
            meta={
                "start_line": 10,
                "collection": "specs",
                "path": "deploy.docx",
                "format": "docx",
                "heading_path": ["Deploy", 'The "canary"'],
            },
        )
        out = SnippetExtractor(context_lines=1).run([doc], query="replication slot")["documents"][0]
        assert (
            out.meta["snippet"].split("\n")[0]
            == '@@ section "Deploy › The \\"canary\\"" -12,3 +12,3 @@ specs/deploy.docx'
        )

    def test_markdown_headers_are_unchanged_by_a_heading_path(self):
        doc = Document(
            content=TEXT, meta={"start_line": 10, "collection": "notes", "path": "ops/r.md", "heading_path": ["Title"]}
        )
        out = SnippetExtractor(context_lines=1).run([doc], query="replication slot")["documents"][0]
        assert out.meta["snippet"].split("\n")[0] == "@@ -12,3 +12,3 @@ notes/ops/r.md"
