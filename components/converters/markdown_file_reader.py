"""Read note files into whole-file Documents, reporting every file that cannot be read."""

import hashlib
import os
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from needle.core.file_formats import is_document, read_bytes

logger = logging.getLogger(__name__)

_BOM = b"\xef\xbb\xbf"
_SNIFF_BYTES = 8192
# Control bytes that plain text files do contain: tab, line feed, vertical tab, form feed, carriage return, escape.
_TEXT_CONTROLS = {9, 10, 11, 12, 13, 27}
_CONTROL_BYTES = bytes(b for b in [*range(32), 127] if b not in _TEXT_CONTROLS)
_MAX_CONTROL_RATIO = 0.1
_MAX_REPLACEMENT_RATIO = 0.25


@component
class MarkdownFileReader:
    """
    Reads the files listed by `CollectionScanner` into one Document per file, never failing on a bad file.

    Each file is opened once and read up to `max_file_bytes + 1` bytes. A UTF-8 byte order mark is dropped and
    line endings become `\\n`, so that line numbers of the text match the file on disk. Files that cannot be
    indexed (permission denied, vanished, a folder, too large, empty, binary) go to `skipped` with a reason;
    text that is not valid UTF-8 is decoded with replacement characters, kept, and reported in `warnings`.
    Haystack's `TextFileToDocument` raises or logs on such files and keeps neither the collection nor the
    relative path, which the chunks and the incremental index are keyed on. PDF, DOCX and HTML files
    (`needle.core.file_formats.is_document`) are left to `DocumentConverter`, which reads the same sources.

    Usage example:
    ```python
    reader = MarkdownFileReader(max_file_bytes=2_000_000)
    out = reader.run(sources=[{"collection": "notes", "root": "/home/me/notes", "path": "ideas/needle.md"}])
    doc = out["documents"][0]
    doc.meta  # {"collection": "notes", "path": "ideas/needle.md", "content_hash": "9f2c...", "size_bytes": 812, ...}
    out["skipped"], out["warnings"]  # [{"collection", "path", "reason"}, ...]
    ```
    """

    def __init__(self, max_file_bytes: int = 5_000_000) -> None:
        """
        Create the reader.

        :param max_file_bytes: Largest file read, in bytes; larger files are skipped.
        :raises ValueError: When `max_file_bytes` is not a positive integer.
        """
        if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int) or max_file_bytes <= 0:
            raise ValueError(f"max_file_bytes must be an integer > 0, got {max_file_bytes!r}")
        self.max_file_bytes = max_file_bytes

    def to_dict(self) -> dict[str, Any]:
        """
        Serialise the component.

        :returns: Dictionary with the init parameters.
        """
        return default_to_dict(self, max_file_bytes=self.max_file_bytes)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MarkdownFileReader":
        """
        Deserialise the component.

        :param data: Dictionary created by `to_dict`.
        :returns: The component.
        """
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], skipped=list[dict[str, Any]], warnings=list[dict[str, Any]])
    def run(self, sources: list[dict[str, Any]]) -> dict[str, Any]:
        """
        Read every source file.

        :param sources: `{"collection", "root", "path"}` dicts, as `CollectionScanner` lists them; PDF, DOCX
            and HTML files among them are passed over (`DocumentConverter` reads them).
        :returns: A dictionary with:
            - `documents`: one Document per readable file; `content` is the whole text and `meta` holds
              `collection`, `path`, `content_hash` (sha256 of the text), `size_bytes`, `mtime` and, for text
              that was not valid UTF-8, `decode_warning`.
            - `skipped`: `{"collection", "path", "reason"}` per file that was not read.
            - `warnings`: `{"collection", "path", "reason"}` per file read with a problem (invalid UTF-8).
        :raises ValueError: When a source dict lacks `collection`, `root` or `path`.
        """
        documents: list[Document] = []
        skipped: list[dict[str, Any]] = []
        warnings: list[dict[str, Any]] = []
        for index, source in enumerate(sources):
            if not isinstance(source, dict) or not all(isinstance(source.get(k), str) for k in ("collection", "path")):
                raise ValueError(f"sources[{index}] must be a dict with string 'collection', 'root' and 'path'")
            if not isinstance(source.get("root"), (str, os.PathLike)):
                raise ValueError(f"sources[{index}] must be a dict with string 'collection', 'root' and 'path'")
            collection, path = source["collection"], source["path"]
            if is_document(path):
                continue  # PDF, DOCX and HTML files are DocumentConverter's
            result = self._read(os.fspath(source["root"]), path)
            if isinstance(result, str):
                skipped.append({"collection": collection, "path": path, "reason": result})
                logger.warning("Skipped {collection}:{path}: {reason}", collection=collection, path=path, reason=result)
                continue
            text, meta = result
            if "decode_warning" in meta:
                warnings.append({"collection": collection, "path": path, "reason": meta["decode_warning"]})
                logger.warning("{collection}:{path}: invalid UTF-8 replaced", collection=collection, path=path)
            doc_id = hashlib.sha256(f"{collection}:{path}".encode()).hexdigest()
            documents.append(Document(id=doc_id, content=text, meta={"collection": collection, "path": path, **meta}))
        return {"documents": documents, "skipped": skipped, "warnings": warnings}

    def _read(self, root: str, path: str) -> str | tuple[str, dict[str, Any]]:
        """Read one file: its text and meta, or the reason it was skipped."""
        parts = path.split("/")
        if not path or os.path.isabs(path) or ".." in parts:
            return "the path is outside the collection root"
        result = read_bytes(os.path.join(root, *parts), self.max_file_bytes)
        if isinstance(result, str):
            return result
        data, info = result
        if not data:
            return "empty file"
        body = data[len(_BOM) :] if data.startswith(_BOM) else data
        problem = _binary_reason(body[:_SNIFF_BYTES])
        if problem:
            return problem
        meta: dict[str, Any] = {}
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            sample = body[:_SNIFF_BYTES].decode("utf-8", errors="replace")
            if sample.count("\ufffd") / len(sample) > _MAX_REPLACEMENT_RATIO:
                return "binary file: most of its bytes are not UTF-8 text"
            text = body.decode("utf-8", errors="replace")
            meta["decode_warning"] = "invalid UTF-8 replaced"
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if not text.strip():
            return "the file contains only whitespace"
        meta = {
            "content_hash": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "size_bytes": len(data),
            "mtime": info.st_mtime,
            **meta,
        }
        return text, meta


def _binary_reason(sample: bytes) -> str | None:
    """Why a file starting with `sample` looks binary, or None when it looks like text."""
    if not sample:
        return None
    if b"\x00" in sample:
        return "binary file: it contains NUL bytes (or it is UTF-16 text, which is not supported)"
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if controls / len(sample) > _MAX_CONTROL_RATIO:
        return f"binary file: {controls} of its first {len(sample)} bytes are control characters"
    return None
