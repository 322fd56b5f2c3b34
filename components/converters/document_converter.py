"""Read the PDF, Word and HTML files of the collections into text Documents with pages and headings."""

import hashlib
import os
import time
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from needle.core.file_formats import Extractor, Limits, Unreadable, format_of, is_document, read_bytes

logger = logging.getLogger(__name__)


@component
class DocumentConverter:
    """
    Converts the PDF, DOCX and HTML files listed by `CollectionScanner` into one Document per file, in the
    structure `MarkdownChunker` reads, and reports every file it cannot index whole.

    Each file is read (up to `max_file_bytes`) and handed to Haystack's converter for its format
    (`PyPDFToDocument`, `DOCXToDocument`, `HTMLToDocument`) through `needle.core.file_formats.Extractor`, which also
    serves `needle get`, so a page or section read back is the text that was indexed. The text is
    normalised as markdown: DOCX heading styles and HTML `h1`..`h6` become headings, and a PDF's pages are
    listed in `meta["page_starts"]` (the line where each page starts) so that every chunk learns its page.
    An encrypted PDF, a PDF without a text layer (scanned; OCR is not done), a malformed file, a PDF of more
    than `max_pages` pages, a DOCX that would unpack to more than `max_unpacked_bytes` (a zip bomb), or a
    document whose extraction would take more than `max_seconds` or `max_memory_mb` (each runs in a child
    process stopped there: what a file costs is not told by its size) goes to `skipped` with the reason, and nothing of it is returned, so no half document reaches the index.
    Haystack's converters log such files and move on, keep neither the collection nor the relative path the
    index is keyed on, and drop the headings of a Word file. Markdown and text files are left to
    `MarkdownFileReader`, which reads the same sources.

    Usage example:
    ```python
    converter = DocumentConverter(max_pages=500)
    out = converter.run(sources=[{"collection": "papers", "root": "/home/me/papers", "path": "raft.pdf"}])
    doc = out["documents"][0]
    doc.meta["format"], doc.meta["page_starts"]  # "pdf", [0, 48, 101]
    out["skipped"]  # [{"collection": "papers", "path": "scan.pdf", "reason": "no text layer (a scanned PDF? ...)"}]
    ```
    """

    def __init__(
        self,
        max_file_bytes: int = 50_000_000,
        max_pages: int = 2000,
        max_unpacked_bytes: int = 200_000_000,
        max_seconds: float = 60.0,
        max_memory_mb: int = 1024,
    ) -> None:
        """
        Create the converter.

        :param max_file_bytes: Largest document read, in bytes; larger files are skipped.
        :param max_pages: Most pages of a PDF; longer ones are skipped.
        :param max_unpacked_bytes: Most bytes a DOCX may unpack to; larger ones are skipped as zip bombs.
        :param max_seconds: Longest one document's extraction may take; a slower one is stopped and skipped.
        :param max_memory_mb: Most memory one document's extraction may take (above what its process starts
            with); one that needs more is stopped and skipped.
        :raises ValueError: When a limit is not a positive integer (`max_seconds`: a positive number).
        """
        for name, value in (
            ("max_file_bytes", max_file_bytes),
            ("max_pages", max_pages),
            ("max_unpacked_bytes", max_unpacked_bytes),
            ("max_memory_mb", max_memory_mb),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be an integer > 0, got {value!r}")
        if isinstance(max_seconds, bool) or not isinstance(max_seconds, (int, float)) or not max_seconds > 0:
            raise ValueError(f"max_seconds must be a number > 0, got {max_seconds!r}")
        self.max_file_bytes = max_file_bytes
        self.max_pages = max_pages
        self.max_unpacked_bytes = max_unpacked_bytes
        self.max_seconds = max_seconds
        self.max_memory_mb = max_memory_mb
        self._extractor = Extractor(
            Limits(
                max_pages=max_pages,
                max_unpacked_bytes=max_unpacked_bytes,
                max_seconds=max_seconds,
                max_memory_mb=max_memory_mb,
            )
        )

    def to_dict(self) -> dict[str, Any]:
        """
        Serialise the component.

        :returns: Dictionary with the init parameters.
        """
        return default_to_dict(
            self,
            max_file_bytes=self.max_file_bytes,
            max_pages=self.max_pages,
            max_unpacked_bytes=self.max_unpacked_bytes,
            max_seconds=self.max_seconds,
            max_memory_mb=self.max_memory_mb,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DocumentConverter":
        """
        Deserialise the component.

        :param data: Dictionary created by `to_dict`.
        :returns: The component.
        """
        return default_from_dict(cls, data)

    @component.output_types(
        documents=list[Document], skipped=list[dict[str, Any]], warnings=list[dict[str, Any]], stats=dict
    )
    def run(self, sources: list[dict[str, Any]]) -> dict[str, Any]:
        """
        Convert every PDF, DOCX and HTML source file.

        :param sources: `{"collection", "root", "path"}` dicts, as `CollectionScanner` lists them; other files
            among them are passed over (`MarkdownFileReader` reads them).
        :returns: A dictionary with:
            - `documents`: one Document per converted file; `content` is the normalised text and `meta`
              holds `collection`, `path`, `format` (`pdf`, `docx`, `html`), `content_hash` (sha256 of the
              text), `size_bytes`, `mtime` and, for a PDF, `page_starts` (0-based line of each page) and
              `page_count`.
            - `skipped`: `{"collection", "path", "reason"}` per file not indexed.
            - `warnings`: `{"collection", "path", "reason"}` per file indexed with a problem (pages without text).
            - `stats`: per format, files converted, pages and seconds spent extracting.
        :raises ValueError: When a source dict lacks `collection`, `root` or `path`.
        """
        documents: list[Document] = []
        skipped: list[dict[str, Any]] = []
        warnings: list[dict[str, Any]] = []
        stats: dict[str, dict[str, float]] = {}
        for index, source in enumerate(sources):
            if not isinstance(source, dict) or not all(isinstance(source.get(k), str) for k in ("collection", "path")):
                raise ValueError(f"sources[{index}] must be a dict with string 'collection', 'root' and 'path'")
            if not isinstance(source.get("root"), (str, os.PathLike)):
                raise ValueError(f"sources[{index}] must be a dict with string 'collection', 'root' and 'path'")
            collection, path = source["collection"], source["path"]
            if not is_document(path):
                continue
            started = time.perf_counter()
            try:
                doc, problems = self._convert(os.fspath(source["root"]), collection, path)
            except Unreadable as reason:
                skipped.append({"collection": collection, "path": path, "reason": str(reason)})
                logger.warning("Skipped {collection}:{path}: {reason}", collection=collection, path=path, reason=reason)
                continue
            entry = stats.setdefault(doc.meta["format"], {"files": 0, "pages": 0, "seconds": 0.0})
            entry["files"] += 1
            entry["pages"] += doc.meta.get("page_count", 0)
            entry["seconds"] += time.perf_counter() - started
            warnings.extend({"collection": collection, "path": path, "reason": problem} for problem in problems)
            documents.append(doc)
        return {"documents": documents, "skipped": skipped, "warnings": warnings, "stats": stats}

    def _convert(self, root: str, collection: str, path: str) -> tuple[Document, list[str]]:
        """One file's Document and its warnings, or `Unreadable` with the reason it is skipped."""
        parts = path.split("/")
        if not path or os.path.isabs(path) or ".." in parts:
            raise Unreadable("the path is outside the collection root")
        result = read_bytes(os.path.join(root, *parts), self.max_file_bytes)
        if isinstance(result, str):
            raise Unreadable(result)
        data, info = result
        if not data:
            raise Unreadable("empty file")
        fmt = format_of(path)
        try:
            extracted = self._extractor.extract(data, fmt)
        except Unreadable:
            raise
        except Exception as error:
            message = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
            raise Unreadable(f"malformed {fmt.upper()}: {message}") from None
        meta: dict[str, Any] = {
            "collection": collection,
            "path": path,
            "format": fmt,
            "content_hash": hashlib.sha256(extracted.text.encode("utf-8")).hexdigest(),
            "size_bytes": len(data),
            "mtime": info.st_mtime,
        }
        if extracted.pages:
            meta.update(page_starts=list(extracted.pages), page_count=extracted.page_count())
        doc_id = hashlib.sha256(f"{collection}:{path}".encode()).hexdigest()
        return Document(id=doc_id, content=extracted.text, meta=meta), list(extracted.warnings)
