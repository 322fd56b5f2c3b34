"""The mixed-format golden set in CI: hit@3 per format and the PDF page check stay above their thresholds."""

from pathlib import Path

import pytest

from needle.core.file_formats import format_of
from needle.evaluation import mixed_formats as formats
from tests.conftest import make_settings

pytestmark = pytest.mark.integration


def test_golden_documents_render_in_their_formats(tmp_path):
    corpus = formats.build_corpus(tmp_path / "corpus")
    rendered = sorted(p.name for p in (corpus / "documents").iterdir())
    assert len(rendered) == 9 and {format_of(name) for name in rendered} == {"pdf", "docx", "html"}
    assert (corpus / "documents" / "raft-consensus-notes.pdf").read_bytes().startswith(b"%PDF")
    golden, extra = formats.load()
    assert {q.expected[0] for q in golden.queries} == {f"documents/{name}" for name in rendered}
    assert set(extra["pages"]) == {q.id for q in golden.queries if q.expected[0].endswith(".pdf")}


def test_every_format_is_found_on_the_mixed_index(tmp_path: Path, model_dir: Path):
    corpus = formats.build_corpus(tmp_path / "corpus")
    needle, report, _ = formats.index_corpus(corpus, make_settings(tmp_path / "data", model_dir))
    try:
        assert report.skipped == [] and set(report.documents) == {"pdf", "docx", "html"}
        quality = formats.evaluate(needle)
    finally:
        needle.close()
    failed = [c for c in quality["checks"] if not c["passed"]]
    assert not failed, formats.format_quality(quality)
    assert {c["name"] for c in quality["checks"]} == {"markdown", "text", "pdf", "docx", "html", "pdf_page"}
