import pytest

from needle.core.file_formats import Extracted, find_section, format_of, is_document

TEXT = (
    "# Guide\n\nIntro.\n\n## Setup\n\n```sh\n# not a heading\n```\n\n### Linux\n\napt install\n\n## Usage\n\nRun it.\n"
)


@pytest.mark.parametrize(
    "path, fmt",
    [
        ("a/b.md", "markdown"),
        ("x.MARKDOWN", "markdown"),
        ("n.txt", "text"),
        ("n.org", "text"),
        ("p.PDF", "pdf"),
        ("s.docx", "docx"),
        ("w.htm", "html"),
        ("w.html", "html"),
        ("archive.pdf.zip", "text"),
    ],
)
def test_format_of_goes_by_extension(path, fmt):
    assert format_of(path) == fmt
    assert is_document(path) == (fmt in ("pdf", "docx", "html"))


def test_a_section_runs_to_the_next_heading_of_its_level_and_skips_fenced_lines():
    assert find_section(TEXT, "Setup") == (5, 13)
    assert find_section(TEXT, "guide › setup › linux") == (11, 13)
    assert find_section(TEXT, "Guide/Usage") == (15, 17)
    assert find_section(TEXT, "Guide") == (1, 17)
    assert find_section(TEXT, "not a heading") is None
    assert find_section(TEXT, "Linux › Setup") is None


def test_page_lines_leave_out_the_blank_line_between_pages():
    doc = Extracted("one\ntwo\n\nthree\n\nfour\nfive\n", "pdf", [0, 3, 5])
    lines = doc.text.split("\n")
    assert doc.page_lines(1, 1) == (1, 2) and doc.page_lines(2, 3) == (4, 7)
    assert lines[3:7] == ["three", "", "four", "five"]
    with pytest.raises(ValueError, match="outside"):
        doc.page_lines(2, 4)
