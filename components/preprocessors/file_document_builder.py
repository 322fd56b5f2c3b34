"""One whole-file Document per chunked file, for file-level dense and BM25 vectors."""

import hashlib
import re
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from needle.core.links import as_display_text
from needle.core.schema import FILE_ID

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")

# Chunk metadata that describes one chunk, not its file.
_CHUNK_KEYS = (
    "chunk_index",
    "heading_path",
    "start_line",
    "end_line",
    "char_start",
    "char_end",
    "checksum",
    "context",
    "page",
    "page_end",
    "page_line",
    "page_end_line",
)


@component
class FileDocumentBuilder:
    """
    Builds one Document per file from the file's text and its chunks, to be embedded beside the chunks.

    A chunk is about half a one-paragraph abstract or one section of a long note: scored chunk by chunk,
    a file whose words or meaning are spread over several chunks loses to whole-file search (on SciFact,
    best-chunk BM25 scores 0.682 nDCG@10 against 0.686 over whole abstracts, dense 0.642 against 0.656).
    The file document spans the file's body from its first chunk to its last (frontmatter left out), keeps
    the first chunk's file metadata (title, tags, frontmatter, the file id) and has `kind: "file"`,
    `heading_path: []` and the body's line range, so it can be shown like a chunk. Its `context` (embedded
    before the text) is the title, unless the body already opens with it as a heading: the title is then
    not embedded twice. Its id hashes the file and that text, so an unchanged file keeps its id and is not
    embedded again. The query graphs score a file by its best chunk and by this document together (see
    `HybridScoreRanker`). Haystack has no component that turns chunks back into their file.

    A paged document (a PDF) is represented by its title and its first `max_pages` pages: the dense model
    reads the first 256 tokens of any text, so more pages only add BM25 terms, and over a long manual those
    terms match nearly any query and say little about the file; the title page, abstract and introduction
    do. Its later pages stay searchable chunk by chunk. The document carries `page` 1 and `page_end`.

    Usage example:
    ```python
    builder = FileDocumentBuilder()
    files = builder.run(files=reader_output["documents"], chunks=chunker_output["documents"])["documents"]
    files[0].meta["kind"], files[0].meta["start_line"]  # "file", 4
    ```
    """

    def __init__(self, max_chars: int = 200_000, max_pages: int = 3) -> None:
        """
        Create the builder.

        :param max_chars: Longest file text kept; a longer file's document stops at the chunk boundary before
            it (its later chunks are still searchable one by one).
        :param max_pages: Pages of a paged document (chunks with a `page`) kept in its file document.
        :raises ValueError: When `max_chars` or `max_pages` is below 1.
        """
        if max_chars < 1:
            raise ValueError(f"max_chars must be > 0, got {max_chars}")
        if isinstance(max_pages, bool) or not isinstance(max_pages, int) or max_pages < 1:
            raise ValueError(f"max_pages must be an integer > 0, got {max_pages!r}")
        self.max_chars = max_chars
        self.max_pages = max_pages

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, max_chars=self.max_chars, max_pages=self.max_pages)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FileDocumentBuilder":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, files: list[Document], chunks: list[Document]) -> dict[str, list[Document]]:
        """
        Build the file documents.

        :param files: Whole files as read (meta `collection` and `path`; the text the chunks' offsets refer to).
        :param chunks: Their chunks (meta: the file id, `char_start`, `char_end`, `start_line`, `end_line`).
        :returns: A dictionary with `documents`, one per file that has chunks, in the order of `files`.
        """
        by_file: dict[str, list[Document]] = {}
        for chunk in chunks:
            by_file.setdefault(str(chunk.meta[FILE_ID]), []).append(chunk)
        out: list[Document] = []
        for file in files:
            file_id = f"{file.meta.get('collection', '')}:{file.meta.get('path') or file.id}"
            members = sorted(by_file.get(file_id, []), key=lambda c: (c.meta["char_start"], c.meta["char_end"]))
            if members and "page" in members[0].meta:
                members = [c for c in members if c.meta["page"] <= self.max_pages] or members[:1]
            if members:
                out.append(self._file_document(file_id, file.content or "", members))
        return {"documents": out}

    def _file_document(self, file_id: str, text: str, members: list[Document]) -> Document:
        first = members[0]
        start = first.meta["char_start"]
        last = first
        for chunk in members:
            if chunk.meta["char_end"] - start > self.max_chars and last is not first:
                break
            last = chunk if chunk.meta["char_end"] >= last.meta["char_end"] else last
        body = as_display_text(text[start : last.meta["char_end"]])
        meta = {key: value for key, value in first.meta.items() if key not in _CHUNK_KEYS}
        meta.update(
            kind="file",
            heading_path=[],
            start_line=first.meta["start_line"],
            end_line=last.meta["end_line"],
            char_start=start,
            char_end=last.meta["char_end"],
            checksum=hashlib.sha1(body.encode()).hexdigest(),
        )
        if "page" in first.meta:
            meta.update(page=first.meta["page"], page_end=last.meta.get("page_end", last.meta["page"]))
        title = str(first.meta.get("title") or "")
        aliases = [a for a in first.meta.get("aliases") or [] if a.casefold() != title.casefold()]
        if title and not _opens_with_heading(body, title):
            meta["context"] = f"{title} ({', '.join(aliases)})" if aliases else title
        elif aliases:  # a note's aliases are its names too: embedded with its text like its title
            meta["context"] = ", ".join(aliases)
        doc_id = hashlib.sha1("\x1f".join(["file", file_id, meta["checksum"]]).encode()).hexdigest()
        return Document(id=doc_id, content=body, meta=meta)


def _opens_with_heading(body: str, title: str) -> bool:
    """Whether the first non-blank line of `body` is a markdown heading reading `title`."""
    for line in body.split("\n"):
        if line.strip():
            match = _HEADING.match(line)
            return match is not None and match.group(1).strip() == title.strip()
    return False
