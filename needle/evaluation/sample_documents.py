"""PDF, DOCX and HTML files made from markdown-like text, for the tests and the mixed-format evaluation.

Nothing binary is committed: the tests and `python -m eval.formats` write their documents with fpdf2 (PDF),
python-docx (DOCX) and plain HTML from a small markdown subset: `#`..`######` headings, `- ` list items and
paragraphs separated by blank lines. In a PDF each page is given as its own text; in DOCX and HTML the
headings become heading styles and `h1`..`h6`, and an HTML page gets navigation and a footer around its
article (what trafilatura is there to drop).
"""

from __future__ import annotations

import html
import io
import re
import unicodedata
import zipfile
from pathlib import Path

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_PUNCTUATION = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-", "…": "...", "−": "-"})


def _blocks(text: str) -> list[tuple[str, int, str]]:
    """(kind, level, text) per heading, list item and paragraph of the markdown subset."""
    blocks: list[tuple[str, int, str]] = []
    for part in re.split(r"\n\s*\n", text.strip()):
        for line in part.split("\n") if part.lstrip().startswith(("#", "- ")) else [part]:
            line = line.strip()
            heading = _HEADING.match(line)
            if heading:
                blocks.append(("heading", len(heading.group(1)), heading.group(2).strip()))
            elif line.startswith("- "):
                blocks.append(("item", 0, line[2:].strip()))
            elif line:
                blocks.append(("paragraph", 0, " ".join(line.split())))
    return blocks


def pdf_bytes(
    pages: list[str], title: str = "", user_password: str | None = None, owner_password: str | None = None
) -> bytes:
    """
    A PDF with one page per entry of `pages` (each in the markdown subset), headings in bold. The PDF's
    core font covers Latin-1 only: other characters are written as their closest Latin-1 letters, else `?`.

    :param pages: The text of each page.
    :param title: The document's title (its metadata).
    :param user_password: Encrypt so that opening needs this password.
    :param owner_password: Encrypt with only an owner password (opens without one).
    """
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(auto=True, margin=15)
    if title:
        pdf.set_title(_latin1(title))
    if user_password or owner_password:
        pdf.set_encryption(owner_password=owner_password or "owner", user_password=user_password or "")
    for page in pages:
        pdf.add_page()
        for kind, level, text in _blocks(_latin1(page)):
            if kind == "heading":
                pdf.set_font("helvetica", "B", size=max(18 - 2 * level, 11))
                pdf.multi_cell(0, 9, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(2)
            else:
                pdf.set_font("helvetica", size=11)
                pdf.multi_cell(0, 6, ("- " if kind == "item" else "") + text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(2)
    return bytes(pdf.output())


def _latin1(text: str) -> str:
    """`text` with typographic punctuation made plain and accents kept where Latin-1 has them."""
    text = text.translate(_PUNCTUATION)
    out = []
    for char in text:
        if ord(char) < 256:
            out.append(char)
        else:
            base = unicodedata.normalize("NFKD", char).encode("latin-1", "ignore").decode("latin-1")
            out.append(base or "?")
    return "".join(out)


def scanned_pdf_bytes(pages: int = 1) -> bytes:
    """A PDF whose pages hold only drawings, no text layer (as a scanned document has)."""
    from fpdf import FPDF

    pdf = FPDF()
    for _ in range(pages):
        pdf.add_page()
        pdf.set_fill_color(30)
        pdf.rect(20, 20, 120, 160, style="F")
    return bytes(pdf.output())


def docx_bytes(text: str, title: str = "") -> bytes:
    """A Word file: `#` → the Title style, `##`.. → Heading 1.., `- ` → List Bullet, paragraphs as they are."""
    import docx

    document = docx.Document()
    if title:
        document.core_properties.title = title
    for kind, level, content in _blocks(text):
        if kind == "heading":
            document.add_heading(content, level=level - 1)
        elif kind == "item":
            document.add_paragraph(content, style="List Bullet")
        else:
            document.add_paragraph(content)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def html_bytes(text: str, title: str = "") -> bytes:
    """A saved web page: the text as an article with `h1`..`h6`, `p` and `ul`, inside navigation and a footer."""
    body: list[str] = []
    items: list[str] = []
    for kind, level, content in _blocks(text):
        if kind != "item" and items:
            body.append("<ul>" + "".join(items) + "</ul>")
            items = []
        escaped = html.escape(content)
        if kind == "heading":
            body.append(f"<h{level}>{escaped}</h{level}>")
        elif kind == "item":
            items.append(f"<li>{escaped}</li>")
        else:
            body.append(f"<p>{escaped}</p>")
    if items:
        body.append("<ul>" + "".join(items) + "</ul>")
    page = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head><body>"
        "<nav><a href='/'>Home</a> | <a href='/blog'>Blog</a> | <a href='/about'>About</a></nav>"
        f"<main><article>{''.join(body)}</article></main>"
        "<footer><p>Copyright 2024. All rights reserved. Subscribe to the newsletter.</p></footer></body></html>"
    )
    return page.encode("utf-8")


def zip_bomb_docx_bytes(unpacked: int = 50_000_000) -> bytes:
    """A `.docx` that is a zip of one huge, highly compressible `word/document.xml`."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * unpacked)
    return out.getvalue()


def costly_docx_bytes(paragraphs: int) -> bytes:
    """
    A valid Word file of `paragraphs` short paragraphs, built without python-docx's per-paragraph cost: small
    on disk and within every size limit, slow and memory-hungry to convert (the probe's 27 MB DOCX, scaled).
    """
    skeleton = zipfile.ZipFile(io.BytesIO(docx_bytes("placeholder")))
    xml = skeleton.read("word/document.xml").decode("utf-8")
    head, _, tail = xml.partition("<w:body>")
    tail = tail[tail.index("<w:sectPr") :] if "<w:sectPr" in tail else "</w:body></w:document>"
    body = "".join(
        f"<w:p><w:r><w:t>Paragraph {i} about otters, herons and the river delta at tide {i * 7919 % 104729}.</w:t></w:r></w:p>"
        for i in range(paragraphs)
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for entry in skeleton.infolist():
            data = (
                (head + "<w:body>" + body + tail).encode()
                if entry.filename == "word/document.xml"
                else skeleton.read(entry)
            )
            archive.writestr(entry.filename, data)
    return out.getvalue()


def write(path: Path, data: bytes) -> Path:
    """Write `data` to `path`, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path
