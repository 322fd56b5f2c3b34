import hashlib
from pathlib import Path

import pytest

from haystack_integrations.components.converters.needle.document_converter import DocumentConverter
from haystack_integrations.components.converters.needle.markdown_file_reader import MarkdownFileReader
from needle.core import file_formats as formats
from needle.evaluation import sample_documents as make

PAGES = [
    "# Raft notes\n\nLeader election starts when a follower hears no heartbeat.",
    "## Log replication\n\nThe leader appends entries and followers acknowledge them.",
    "## Membership\n\nJoint consensus moves the cluster between configurations.",
]
DOCX_TEXT = (
    "# Deploy spec\n\nWhat a deployment of the billing service looks like.\n\n"
    "## Rollout\n\nCanary first: five percent of the traffic for an hour.\n\n"
    "### Rollback\n\nRoll back when the error budget burns twice as fast as planned.\n\n"
    "- page the on-call engineer\n- freeze the release branch"
)
HTML_TEXT = (
    "# Cache stampede\n\nWhen the cache expired, every worker hit the database at once.\n\n"
    "## Fix\n\nRequest coalescing and jittered expiry, so that keys do not expire together."
)


def source(root: Path, path: str) -> dict:
    return {"collection": "docs", "root": str(root), "path": path}


def convert(root: Path, *paths: str, **init) -> dict:
    return DocumentConverter(**init).run(sources=[source(root, p) for p in paths])


def reason(root: Path, path: str, **init) -> str:
    out = convert(root, path, **init)
    assert out["documents"] == [] and len(out["skipped"]) == 1
    return out["skipped"][0]["reason"]


class TestDocumentConverter:
    def test_init_defaults(self):
        converter = DocumentConverter()
        assert (converter.max_file_bytes, converter.max_pages, converter.max_unpacked_bytes) == (
            50_000_000,
            2000,
            200_000_000,
        )

    def test_init_custom(self):
        converter = DocumentConverter(max_file_bytes=10, max_pages=3, max_unpacked_bytes=1000)
        assert (converter.max_file_bytes, converter.max_pages, converter.max_unpacked_bytes) == (10, 3, 1000)

    @pytest.mark.parametrize(
        "name", ["max_file_bytes", "max_pages", "max_unpacked_bytes", "max_seconds", "max_memory_mb"]
    )
    @pytest.mark.parametrize("bad", [0, -1, "5", None, True])
    def test_bad_limits_raise(self, name, bad):
        with pytest.raises(ValueError, match=name):
            DocumentConverter(**{name: bad})

    def test_to_dict(self):
        assert DocumentConverter(max_pages=7).to_dict() == {
            "type": "haystack_integrations.components.converters.needle.document_converter.DocumentConverter",
            "init_parameters": {
                "max_file_bytes": 50_000_000,
                "max_pages": 7,
                "max_unpacked_bytes": 200_000_000,
                "max_seconds": 60.0,
                "max_memory_mb": 1024,
            },
        }

    def test_from_dict(self):
        converter = DocumentConverter.from_dict(DocumentConverter(max_file_bytes=99).to_dict())
        assert converter.max_file_bytes == 99

    def test_pdf_becomes_pages_with_the_documents_title(self, tmp_path):
        make.write(tmp_path / "raft.pdf", make.pdf_bytes(PAGES, title="Raft: notes"))
        out = convert(tmp_path, "raft.pdf")
        assert out["skipped"] == [] and out["warnings"] == []
        doc = out["documents"][0]
        lines = doc.content.split("\n")
        assert lines[:3] == ["---", "title: 'Raft: notes'", "---"]
        assert doc.meta["format"] == "pdf" and doc.meta["page_count"] == 3
        starts = doc.meta["page_starts"]
        assert [lines[s] for s in starts] == ["Raft notes", "Log replication", "Membership"]
        assert all(lines[s - 1] == "" for s in starts[1:])
        assert doc.id == hashlib.sha256(b"docs:raft.pdf").hexdigest()
        assert doc.meta["content_hash"] == hashlib.sha256(doc.content.encode()).hexdigest()
        assert out["stats"]["pdf"]["files"] == 1 and out["stats"]["pdf"]["pages"] == 3

    def test_docx_heading_styles_become_markdown_headings(self, tmp_path):
        make.write(tmp_path / "spec.docx", make.docx_bytes(DOCX_TEXT, title="Deploy spec"))
        doc = convert(tmp_path, "spec.docx")["documents"][0]
        assert doc.meta["format"] == "docx" and "page_starts" not in doc.meta
        assert "\n# Deploy spec\n" in doc.content
        assert "\n## Rollout\n" in doc.content and "\n### Rollback\n" in doc.content
        assert "- page the on-call engineer\n- freeze the release branch" in doc.content

    def test_html_keeps_headings_and_drops_navigation(self, tmp_path):
        make.write(tmp_path / "page.html", make.html_bytes(HTML_TEXT, title="Stampede"))
        doc = convert(tmp_path, "page.html")["documents"][0]
        assert doc.meta["format"] == "html"
        assert doc.content.startswith("# Cache stampede\n") and "\n## Fix\n" in doc.content
        assert "Subscribe" not in doc.content and "About" not in doc.content

    def test_markdown_and_text_are_left_to_the_reader_and_documents_to_the_converter(self, tmp_path):
        (tmp_path / "a.md").write_text("# A\n\nText.\n")
        make.write(tmp_path / "b.pdf", make.pdf_bytes(PAGES[:1]))
        sources = [source(tmp_path, "a.md"), source(tmp_path, "b.pdf")]
        converted = DocumentConverter().run(sources=sources)
        read = MarkdownFileReader().run(sources=sources)
        assert [d.meta["path"] for d in converted["documents"]] == ["b.pdf"]
        assert [d.meta["path"] for d in read["documents"]] == ["a.md"]
        assert converted["skipped"] == read["skipped"] == []

    def test_password_protected_pdf_is_skipped(self, tmp_path):
        make.write(tmp_path / "locked.pdf", make.pdf_bytes(PAGES, user_password="secret"))
        assert reason(tmp_path, "locked.pdf") == "encrypted PDF: it needs a password to open"

    def test_pdf_encrypted_with_an_owner_password_only_is_read(self, tmp_path):
        make.write(tmp_path / "owner.pdf", make.pdf_bytes(PAGES, owner_password="owner"))
        doc = convert(tmp_path, "owner.pdf")["documents"][0]
        assert "Leader election" in doc.content

    def test_scanned_pdf_is_reported_as_having_no_text_layer(self, tmp_path):
        make.write(tmp_path / "scan.pdf", make.scanned_pdf_bytes(pages=2))
        assert reason(tmp_path, "scan.pdf").startswith("no text layer")

    def test_pages_without_text_are_a_warning(self, tmp_path):
        make.write(tmp_path / "mixed.pdf", make.pdf_bytes([PAGES[0], "", PAGES[1]]))
        out = convert(tmp_path, "mixed.pdf")
        assert len(out["documents"]) == 1
        assert out["warnings"] == [
            {
                "collection": "docs",
                "path": "mixed.pdf",
                "reason": "1 of 3 pages have no text layer (scanned pages are not read)",
            }
        ]

    def test_truncated_pdf_is_malformed(self, tmp_path):
        data = make.pdf_bytes(PAGES)
        make.write(tmp_path / "cut.pdf", data[: len(data) // 2])
        assert reason(tmp_path, "cut.pdf").startswith("malformed PDF")

    def test_file_named_pdf_without_a_pdf_header(self, tmp_path):
        (tmp_path / "fake.pdf").write_text("just text")
        assert reason(tmp_path, "fake.pdf") == "not a PDF file (no %PDF header)"

    def test_pdf_over_max_pages_is_skipped(self, tmp_path):
        make.write(tmp_path / "long.pdf", make.pdf_bytes(PAGES))
        assert reason(tmp_path, "long.pdf", max_pages=2) == "3 pages, over the limit of max_pages=2"

    def test_zip_bomb_disguised_as_docx_is_skipped(self, tmp_path):
        make.write(tmp_path / "bomb.docx", make.zip_bomb_docx_bytes(20_000_000))
        assert "zip bomb" in reason(tmp_path, "bomb.docx")
        assert "zip bomb" in reason(tmp_path, "bomb.docx", max_unpacked_bytes=1000)

    def test_a_docx_whose_extraction_takes_too_long_is_stopped_and_skipped(self, tmp_path):
        # Within every size limit (a few MB on disk), it takes many seconds to convert: far over the bound here.
        make.write(tmp_path / "slow.docx", make.costly_docx_bytes(100_000))
        said = reason(tmp_path, "slow.docx", max_seconds=2)
        assert said == "its text was not extracted: it took over 2 s (max_seconds)"

    def test_a_docx_whose_extraction_needs_too_much_memory_is_stopped_and_the_next_is_converted(self, tmp_path):
        make.write(tmp_path / "a-big.docx", make.costly_docx_bytes(100_000))
        make.write(tmp_path / "b.docx", make.docx_bytes(DOCX_TEXT))
        out = convert(tmp_path, "a-big.docx", "b.docx", max_memory_mb=48, max_seconds=600)
        assert [d.meta["path"] for d in out["documents"]] == ["b.docx"]
        assert out["skipped"] == [
            {
                "collection": "docs",
                "path": "a-big.docx",
                "reason": "its text was not extracted: it needs more than 48 MB of memory (max_memory_mb)",
            }
        ]

    def test_docx_that_is_not_a_zip(self, tmp_path):
        (tmp_path / "fake.docx").write_bytes(b"plain bytes")
        assert reason(tmp_path, "fake.docx").startswith("malformed DOCX: not a zip archive")

    def test_old_binary_word_file(self, tmp_path):
        (tmp_path / "old.docx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100)
        assert reason(tmp_path, "old.docx").startswith("an old binary Word file (.doc)")

    def test_zip_without_a_word_document(self, tmp_path):
        import zipfile

        with zipfile.ZipFile(tmp_path / "other.docx", "w") as archive:
            archive.writestr("hello.txt", "hi")
        assert reason(tmp_path, "other.docx") == "malformed DOCX: the archive has no word/document.xml"

    def test_html_without_text(self, tmp_path):
        (tmp_path / "empty.html").write_text("<html><body><script>var x = 1;</script></body></html>")
        assert reason(tmp_path, "empty.html") == "no text could be extracted from the HTML page"

    def test_empty_and_oversized_files(self, tmp_path):
        (tmp_path / "empty.pdf").write_bytes(b"")
        assert reason(tmp_path, "empty.pdf") == "empty file"
        make.write(tmp_path / "big.pdf", make.pdf_bytes(PAGES))
        assert reason(tmp_path, "big.pdf", max_file_bytes=100).startswith("file too large")

    def test_one_bad_file_does_not_stop_the_others(self, tmp_path):
        make.write(tmp_path / "a.pdf", make.pdf_bytes(PAGES, user_password="x"))
        make.write(tmp_path / "b.docx", make.docx_bytes(DOCX_TEXT))
        out = convert(tmp_path, "a.pdf", "b.docx")
        assert [d.meta["path"] for d in out["documents"]] == ["b.docx"]
        assert [s["path"] for s in out["skipped"]] == ["a.pdf"]

    def test_a_library_failing_on_a_file_skips_it_with_the_error(self, tmp_path, monkeypatch):
        make.write(tmp_path / "a.html", make.html_bytes(HTML_TEXT))

        def explode(self, data, fmt):
            raise RuntimeError("parser exploded\nsecond line")

        monkeypatch.setattr(formats.Extractor, "extract", explode)
        assert reason(tmp_path, "a.html") == "malformed HTML: parser exploded"

    def test_missing_library_names_the_extra_to_install(self, tmp_path, monkeypatch):
        make.write(tmp_path / "a.pdf", make.pdf_bytes(PAGES))
        real_import = __import__

        def without_pypdf(name, *args, **kwargs):
            if name.startswith("haystack.components.converters.pypdf"):
                raise ImportError("No module named 'pypdf'")
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr("builtins.__import__", without_pypdf)
        assert formats.INSTALL_HINT in reason(tmp_path, "a.pdf")

    def test_bad_source_raises(self):
        with pytest.raises(ValueError, match=r"sources\[0\]"):
            DocumentConverter().run(sources=[{"collection": "docs"}])
