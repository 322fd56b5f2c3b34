"""How each kind of file becomes the text Needle indexes, in one place for ingestion and for `get`.

Markdown and plain text are read as they are (`haystack_integrations.components.converters.needle.markdown_file_reader`). PDF, Word (DOCX) and HTML
files go through Haystack's converters (`PyPDFToDocument`, `DOCXToDocument`, `HTMLToDocument` on
trafilatura), and their output is normalised into the structure the markdown chunker reads:

- PDF: the text of each page (pypdf's plain extraction), pages separated by a blank line; `Extracted.pages`
  holds the line where each page starts, so a chunk knows its page and its line within the page. The PDF's
  own title, when it has one, becomes a frontmatter `title`.
- DOCX: paragraphs styled `Title` or `Heading N` become markdown headings (`#`, `#` × N), so each chunk has
  a heading path; bulleted and numbered list styles become list items; tables are markdown tables. The
  document's core title becomes a frontmatter `title`.
- HTML: trafilatura's markdown output, with `h1`..`h6` as headings and the page's navigation and
  boilerplate left out.

A file that cannot be indexed whole raises `Unreadable` with the reason a person reads in the run report:
encrypted (a password is needed), no text layer (a scanned PDF: OCR is not done), malformed, more pages
than `max_pages`, a DOCX that unpacks to more than `max_unpacked_bytes` or compresses suspiciously well (a
zip bomb), a document whose extraction would take more than `max_seconds` or `max_memory_mb` (it runs in a
child process, `needle.core.bounded`, stopped at those bounds). Nothing is returned for such a file, so no part of it reaches the index. The converters are built
on first use, so that markdown users need none of their libraries (the `documents` extra).
"""

from __future__ import annotations

import io
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, BinaryIO

import yaml

from needle.core.bounded import Bounds, OutOfBounds, run_bounded

MARKDOWN, TEXT, PDF, DOCX, HTML = "markdown", "text", "pdf", "docx", "html"
DOCUMENT_FORMATS = (PDF, DOCX, HTML)
_EXTENSIONS = {".md": MARKDOWN, ".markdown": MARKDOWN, ".pdf": PDF, ".docx": DOCX, ".html": HTML, ".htm": HTML}
# The include globs of `needle collection add --documents` (beside the default markdown and text globs).
DOCUMENT_INCLUDE = ["**/*.pdf", "**/*.docx", "**/*.html", "**/*.htm"]
INSTALL_HINT = "install Needle's document support: pip install 'needle-search[documents]'"

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING_STYLE = re.compile(r"^heading ([1-9])$", re.IGNORECASE)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # the old binary .doc format
_MIN_TEXT_RATIO = 0.5  # of a PDF's extracted characters that must be letters, digits, spaces or punctuation


class Unreadable(Exception):
    """A file that is not indexed; the message says why (shown in the run report)."""


def format_of(path: str) -> str:
    """The format of a file by its extension: `markdown`, `pdf`, `docx`, `html`, else `text`."""
    return _EXTENSIONS.get(PurePosixPath(path).suffix.lower(), TEXT)


def is_document(path: str) -> bool:
    """Whether a file is a PDF, DOCX or HTML document (converted, not read as text)."""
    return format_of(path) in DOCUMENT_FORMATS


@dataclass
class Extracted:
    """A document's text as Needle indexes it, and where its pages start."""

    text: str
    format: str
    pages: list[int] = field(default_factory=list)  # 0-based line where each page starts (PDF only)
    warnings: list[str] = field(default_factory=list)

    def page_count(self) -> int:
        """Number of pages (0 for formats without pages)."""
        return len(self.pages)

    def page_lines(self, first: int, last: int) -> tuple[int, int]:
        """
        The 1-based line range of pages `first`..`last` (1-based, inclusive) in `text`.

        :raises ValueError: When the range is outside the document's pages.
        """
        if not self.pages:
            raise ValueError("this document has no pages")
        if not 1 <= first <= last <= len(self.pages):
            raise ValueError(f"pages {first}-{last} are outside the document's {len(self.pages)} pages")
        lines = self.text.split("\n")
        total = len(lines) - 1 if self.text.endswith("\n") else len(lines)
        # Page n runs up to the blank line before page n + 1; the last page to the end of the text.
        end = self.pages[last] - 1 if last < len(self.pages) else total
        return self.pages[first - 1] + 1, max(end, self.pages[first - 1] + 1)


@dataclass(frozen=True)
class Limits:
    """What a document may cost before it is skipped: pages, unpacked bytes, and the seconds and memory its
    extraction may take (`needle.core.bounded`: the converter runs in a child process that is stopped there)."""

    max_pages: int = 2000
    max_unpacked_bytes: int = 200_000_000
    max_compression_ratio: int = 200
    max_seconds: float = 60.0
    max_memory_mb: int = 1024


class Extractor:
    """
    Turns a document's bytes into `Extracted` text with Haystack's converters, or raises `Unreadable`.

    Usage example:
    ```python
    extractor = Extractor(Limits(max_pages=500))
    doc = extractor.extract(open("paper.pdf", "rb").read(), "pdf")
    doc.text, doc.pages  # "...", [0, 41, 97]
    ```
    """

    def __init__(self, limits: Limits | None = None) -> None:
        """:param limits: The limits a document must stay within."""
        self.limits = limits or Limits()
        self._converters: dict[str, Any] = {}

    def extract(self, data: bytes, fmt: str) -> Extracted:
        """
        Extract a document's text.

        :param data: The file's bytes.
        :param fmt: `pdf`, `docx` or `html`.
        :returns: The normalised text, its pages (PDF) and warnings.
        :raises Unreadable: When the file cannot be indexed whole, with the reason (its extraction passing
            `max_seconds` or `max_memory_mb` included).
        :raises ValueError: On an unknown format.
        """
        if fmt not in DOCUMENT_FORMATS:
            raise ValueError(f"not a document format: {fmt!r}; use one of {', '.join(DOCUMENT_FORMATS)}")
        self._converter(fmt)  # here: says what to install when the format's library is missing
        bounds = Bounds(max_seconds=self.limits.max_seconds, max_memory_mb=self.limits.max_memory_mb)
        try:
            return run_bounded(_extract_here, data, fmt, self.limits, bounds=bounds)
        except OutOfBounds as error:
            raise Unreadable(f"its text was not extracted: it {error}") from None

    def extract_here(self, data: bytes, fmt: str) -> Extracted:
        """`extract` in this process, without its time and memory bounds (what the child process runs)."""
        if fmt == PDF:
            return self._pdf(data)
        if fmt == DOCX:
            return self._docx(data)
        if fmt == HTML:
            return self._html(data)
        raise ValueError(f"not a document format: {fmt!r}; use one of {', '.join(DOCUMENT_FORMATS)}")

    def _converter(self, fmt: str) -> Any:
        if fmt not in self._converters:
            try:
                if fmt == PDF:
                    from haystack.components.converters.pypdf import PyPDFToDocument

                    self._converters[fmt] = PyPDFToDocument(extraction_mode="plain")
                elif fmt == DOCX:
                    self._converters[fmt] = _styled_docx_converter()
                else:
                    from haystack.components.converters.html import HTMLToDocument

                    kwargs = {"output_format": "markdown", "favor_recall": True, "include_tables": True}
                    self._converters[fmt] = HTMLToDocument(extraction_kwargs=kwargs)
            except ImportError as error:
                raise Unreadable(f"{fmt.upper()} support is not installed ({error}); {INSTALL_HINT}") from None
        return self._converters[fmt]

    def _convert(self, fmt: str, data: bytes, what: str) -> str:
        """Run one Haystack converter on one file; its text, or `Unreadable` when it produced none."""
        from haystack.dataclasses import ByteStream

        documents = self._converter(fmt).run(sources=[ByteStream(data=data)])["documents"]
        if not documents:
            raise Unreadable(what)
        return documents[0].content or ""

    # ---- PDF --------------------------------------------------------------------------------------------
    def _pdf(self, data: bytes) -> Extracted:
        self._converter(PDF)  # says what to install when pypdf is missing
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError

        if not data.lstrip()[:5].startswith(b"%PDF"):
            raise Unreadable("not a PDF file (no %PDF header)")
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not _decrypted(reader):
                raise Unreadable("encrypted PDF: it needs a password to open")
            count = len(reader.pages)
            title = _pdf_title(reader)
        except Unreadable:
            raise
        except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, OSError, RecursionError) as error:
            raise Unreadable(f"malformed PDF: {_short(error)}") from None
        if count > self.limits.max_pages:
            raise Unreadable(f"{count} pages, over the limit of max_pages={self.limits.max_pages}")
        if count == 0:
            raise Unreadable("malformed PDF: it has no pages")
        text = self._convert(PDF, data, "malformed PDF: pypdf could not extract its text")
        pages = [_clean(page) for page in text.split("\f")]
        if len(pages) != count:
            raise Unreadable(f"malformed PDF: {count} pages, but the text of {len(pages)} was extracted")
        written = [p for p in pages if p.strip()]
        if not written:
            raise Unreadable(f"no text layer (a scanned PDF? OCR is not supported): none of its {count} pages has text")
        sample = "".join(written)[:20_000]
        readable = sum(1 for c in sample if c.isalnum() or c.isspace() or c in ".,;:!?-'\"()[]/%&")
        if readable / len(sample) < _MIN_TEXT_RATIO:
            raise Unreadable("no usable text layer: its fonts map to no readable characters")
        warnings = []
        if len(written) < count:
            warnings.append(f"{count - len(written)} of {count} pages have no text layer (scanned pages are not read)")
        return _with_pages(pages, _frontmatter(title), PDF, warnings)

    # ---- DOCX -------------------------------------------------------------------------------------------
    def _docx(self, data: bytes) -> Extracted:
        if data.startswith(_OLE_MAGIC):
            raise Unreadable("an old binary Word file (.doc), not DOCX: save it as .docx to index it")
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
            entries = archive.infolist()
        except (zipfile.BadZipFile, OSError, ValueError) as error:
            raise Unreadable(f"malformed DOCX: not a zip archive ({_short(error)})") from None
        unpacked = sum(max(e.file_size, 0) for e in entries)
        if unpacked > self.limits.max_unpacked_bytes:
            raise Unreadable(
                f"unpacks to {unpacked} bytes, over max_unpacked_bytes={self.limits.max_unpacked_bytes} (a zip bomb?)"
            )
        ratio = unpacked / max(sum(e.compress_size for e in entries), 1)
        if unpacked > 1_000_000 and ratio > self.limits.max_compression_ratio:
            raise Unreadable(f"compressed {ratio:.0f} to 1, over max_compression_ratio (a zip bomb?)")
        if "word/document.xml" not in {e.filename for e in entries}:
            raise Unreadable("malformed DOCX: the archive has no word/document.xml")
        converter = self._converter(DOCX)
        from haystack.dataclasses import ByteStream

        documents = converter.run(sources=[ByteStream(data=data)])["documents"]
        if not documents:
            raise Unreadable("malformed DOCX: python-docx could not read it")
        text = _clean(documents[0].content or "")
        text = re.sub(r"\n{3,}", "\n\n", text).strip("\n")
        if not text.strip():
            raise Unreadable("the document has no text")
        title = str((documents[0].meta.get("docx") or {}).get("title") or "").strip()
        return Extracted(_frontmatter(title) + text + "\n", DOCX)

    # ---- HTML -------------------------------------------------------------------------------------------
    def _html(self, data: bytes) -> Extracted:
        text = self._convert(HTML, data, "no text could be extracted from the HTML page")
        text = _clean(text).strip("\n")
        if not text.strip():
            raise Unreadable("no text could be extracted from the HTML page")
        return Extracted(text + "\n", HTML)


def _extract_here(data: bytes, fmt: str, limits: Limits) -> Extracted:
    """A document's text, extracted in this process (the child `Extractor.extract` starts)."""
    return Extractor(limits).extract_here(data, fmt)


def _decrypted(reader: Any) -> bool:
    """Whether an encrypted PDF opens without a password (pypdf tries the empty one)."""
    try:
        return bool(reader.decrypt(""))
    except Exception:
        return False


def _pdf_title(reader: Any) -> str:
    try:
        title = (reader.metadata or {}).get("/Title")
    except Exception:
        return ""
    return str(title or "").strip()


def _frontmatter(title: str) -> str:
    """A frontmatter block naming the document's own title, or "" when it has none."""
    title = " ".join(title.split())
    if not title:
        return ""
    return "---\n" + yaml.safe_dump({"title": title}, allow_unicode=True, width=10_000) + "---\n\n"


def _clean(text: str) -> str:
    """Line endings as `\\n`, control characters out, no trailing spaces on a line."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text.replace("\f", "\n"))
    return "\n".join(line.rstrip() for line in text.split("\n"))


def _with_pages(pages: list[str], head: str, fmt: str, warnings: list[str]) -> Extracted:
    """Pages joined by one blank line, after `head`; the line where each page starts."""
    starts: list[int] = []
    line = head.count("\n")
    parts: list[str] = []
    for page in pages:
        page = page.strip("\n")
        starts.append(line)
        parts.append(page)
        line += page.count("\n") + 2
    return Extracted(head + "\n\n".join(parts) + "\n", fmt, starts, warnings)


def _short(error: BaseException) -> str:
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return message[:200]


def _styled_docx_converter() -> Any:
    """Haystack's `DOCXToDocument`, with heading and list paragraph styles written as markdown."""
    from haystack.components.converters.docx import DOCXToDocument

    class StyledDOCXToDocument(DOCXToDocument):
        """DOCXToDocument that writes `Title`/`Heading N` paragraphs as markdown headings and list styles as items."""

        _style_names: dict[int, dict[str, str]]

        def _process_links_in_paragraph(self, paragraph: Any) -> str:
            text = super()._process_links_in_paragraph(paragraph)
            if not text.strip():
                return text
            style = _style_name(paragraph, self._style_names)
            heading = _HEADING_STYLE.match(style)
            if style.lower() == "title" or heading:
                level = min(int(heading.group(1)) + 1, 6) if heading else 1
                return f"\n{'#' * level} {' '.join(text.split())}\n"
            if style.lower().startswith("list"):
                return f"- {text.strip()}"
            return text

    converter = StyledDOCXToDocument(table_format="markdown")
    converter._style_names = {}
    return converter


def _style_name(paragraph: Any, cache: dict[int, dict[str, str]]) -> str:
    """The paragraph's style name (`Heading 1`), read from its style id through the document's style table.

    `paragraph.style` searches the styles part on every call (most of a DOCX's conversion time); the table
    of one document is read once.
    """
    try:
        style_id = paragraph._p.style
        if not style_id:
            return ""
        part = paragraph.part
        if id(part) not in cache:
            cache.clear()
            cache[id(part)] = {style.style_id: str(style.name or "") for style in part.styles}
        return cache[id(part)].get(style_id, "")
    except Exception:
        return ""


def find_section(text: str, section: str) -> tuple[int, int] | None:
    """
    The 1-based line range of a section of markdown text: its heading line to the last line before the next
    heading of the same or a higher level (blank lines at its end left out).

    :param text: Markdown text (as `Extracted.text`).
    :param section: The heading path joined by ` › ` or `/` (`Setup › Linux`), or the last heading alone;
        matched without regard to case or runs of spaces. A heading that itself holds a `/` matches whole.
    :returns: `(first, last)`, or None when no heading matches.
    """
    candidates = [[_fold(section)], *([_fold(p) for p in re.split(sep, section) if p.strip()] for sep in ("›", "/"))]
    lines = text.split("\n")
    headings = _headings(lines)
    for wanted in candidates:
        if not wanted or not wanted[-1]:
            continue
        for index, (number, level, path) in enumerate(headings):
            if path[-len(wanted) :] != wanted:
                continue
            end = next((n - 1 for n, lvl, _ in headings[index + 1 :] if lvl <= level), len(lines))
            while end > number and not lines[end - 1].strip():
                end -= 1
            return number, end
    return None


def _headings(lines: list[str]) -> list[tuple[int, int, list[str]]]:
    """(1-based line, level, folded heading path) of every heading outside code fences."""
    found: list[tuple[int, int, list[str]]] = []
    stack: list[tuple[int, str]] = []
    fence = ""
    for number, line in enumerate(lines, 1):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            continue
        match = _HEADING.match(line)
        if match:
            level = len(match.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, _fold(match.group(2))))
            found.append((number, level, [title for _, title in stack]))
    return found


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def read_bytes(full_path: str, max_bytes: int) -> tuple[bytes, os.stat_result] | str:
    """
    Read a file of a collection, up to `max_bytes`, without blocking on a named pipe.

    :param full_path: The file on disk.
    :param max_bytes: Largest file read.
    :returns: The bytes and the file's status, or the reason it was not read.
    """
    handle = _open_for_reading(full_path)
    if isinstance(handle, str):
        return handle
    try:
        with handle:
            info = os.fstat(handle.fileno())
            refused = _not_readable(info, max_bytes)
            if refused is not None:
                return refused
            data = handle.read(max_bytes + 1)
    except PermissionError:
        return "permission denied"
    except OSError as exc:
        return f"the file cannot be read: {exc.strerror or exc}"
    if len(data) > max_bytes:
        return f"file too large: over {max_bytes} bytes, the limit is max_file_bytes={max_bytes}"
    return data, info


def _open_for_reading(full_path: str) -> BinaryIO | str:
    """The file opened for reading, or the reason it could not be."""
    try:
        return open(full_path, "rb", opener=_open_without_blocking)
    except PermissionError:
        return "permission denied"
    except FileNotFoundError:
        return "the file no longer exists"
    except IsADirectoryError:
        return "the path is a folder, not a file"
    except OSError as exc:
        return f"the file cannot be opened: {exc.strerror or exc}"


def _not_readable(info: os.stat_result, max_bytes: int) -> str | None:
    """Why an opened file is not read (a folder, not a regular file, too large), or `None`."""
    if stat.S_ISDIR(info.st_mode):
        return "the path is a folder, not a file"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size > max_bytes:
        return f"file too large: {info.st_size} bytes, the limit is max_file_bytes={max_bytes}"
    return None


def _open_without_blocking(path: str, flags: int) -> int:
    """Open for reading without blocking on a named pipe, which is then reported as not a regular file."""
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0))
