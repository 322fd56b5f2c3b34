"""Markdown-aware chunking: sections by heading, whole code fences and lists, stable ids and exact line ranges."""

import bisect
import copy
import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from haystack_integrations.components.needle._frontmatter import (
    document_date,
    field_values,
    folders,
    identifiers,
    inline_tags,
    parse_frontmatter,
    split_tags,
    unique_tags,
)
from needle.core.links import aliases_of, as_display_text
from needle.core.schema import FILE_ID

logger = logging.getLogger(__name__)

_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_QUOTE = re.compile(r"^ {0,3}>")
_TABLE_DELIMITER = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
# Split points inside a block too large for one chunk, coarsest first; each split point is where a piece starts.
_SPLIT_LEVELS = {
    "paragraph": re.compile(r"\n(?:[ \t]*\n)+"),
    "item": re.compile(r"\n(?=[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$))", re.MULTILINE),
    "line": re.compile(r"\n"),
    "sentence": re.compile(r"[.?!;:][ \t]+(?=\S)"),
    "word": re.compile(r"[ \t]+(?=\S)"),
}
_PROSE_LEVELS = ("paragraph", "item", "line", "sentence", "word")
_CODE_LEVELS = ("line",)
_LINE_START = re.compile(r"^(?=[ \t]*\S)", re.MULTILINE)


@dataclass
class _Block:
    kind: str  # heading, code, list, quote, table, paragraph
    first: int  # 0-based index of its first line
    last: int  # 0-based index of its last line
    level: int = 0
    text: str = ""
    page: int = 0  # 1-based page of a paged document (PDF); 0 for a file without pages


@dataclass
class _Section:
    level: int
    heading_path: list[str]
    blocks: list[_Block] = field(default_factory=list)
    page: int = 0


@component
class MarkdownChunker:
    """
    Splits whole markdown files into chunks that follow headings and keep code fences and lists together.

    Each file is cut at its headings first; inside a section, whole blocks (paragraphs, lists, tables, quotes,
    fenced code) are packed up to `target_chars`. A block larger than `max_chars` is cut at paragraphs, then
    list items, lines, sentences and finally words; a code fence only at its lines. When a section needs
    several chunks, each one after the first starts about `overlap_chars` earlier, at a line or sentence start.
    Chunks below `min_chars` join a neighbour of the same section when the result fits in `max_chars`, and a
    heading directly followed by a sub-heading opens the sub-section's first chunk instead of standing alone. Every
    chunk's `content` is exactly `text[char_start:char_end]` of the file, with 1-based `start_line` and
    `end_line` matching the file on disk, and its id is a hash of file, heading path, index and text, so an
    unchanged chunk keeps its id across runs. YAML frontmatter (parsed within bounds, see `_frontmatter.py`) is
    not chunk text; it, `#tags` outside code, the folders and a date become the file's metadata on every chunk.
    A paged document (a PDF from `DocumentConverter`, whose meta lists `page_starts`) is also cut at every
    page, and each of its chunks carries `page` and `page_line`, its first line within that page (with
    `page_end` and `page_end_line`); a file without `page_starts` is chunked exactly as before.
    Haystack's `DocumentSplitter` and `RecursiveDocumentSplitter` know nothing of headings or fences and
    produce neither heading paths nor line ranges.

    Usage example:
    ```python
    chunker = MarkdownChunker(target_chars=700, overlap_chars=100)
    text = "# Needle\\n\\n## Index\\n\\nScan, read, chunk.\\n"
    doc = Document(content=text, meta={"collection": "notes", "path": "needle.md"})
    chunk = chunker.run(documents=[doc])["documents"][0]
    chunk.content  # "# Needle\\n\\n## Index\\n\\nScan, read, chunk."
    chunk.meta["heading_path"], chunk.meta["start_line"], chunk.meta["end_line"]  # ["Needle", "Index"], 1, 5
    ```
    """

    def __init__(
        self, target_chars: int = 700, overlap_chars: int = 100, min_chars: int = 100, max_chars: int = 1400
    ) -> None:
        """
        Create the chunker.

        :param target_chars: Size a chunk is packed up to, in characters.
        :param overlap_chars: How much of the previous chunk of the same section a chunk repeats, at most.
        :param min_chars: Chunks shorter than this join a neighbour when they fit.
        :param max_chars: Largest chunk, unless a single word (in a code fence, a single line) is longer.
        :raises ValueError: When a size is not a positive integer (overlap may be 0), when
            `min_chars <= target_chars <= max_chars` does not hold, or when `overlap_chars >= target_chars`.
        """
        for name, value, least in (
            ("target_chars", target_chars, 1),
            ("overlap_chars", overlap_chars, 0),
            ("min_chars", min_chars, 1),
            ("max_chars", max_chars, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        if not min_chars <= target_chars <= max_chars:
            raise ValueError(
                f"need min_chars <= target_chars <= max_chars, got {min_chars}, {target_chars}, {max_chars}"
            )
        if overlap_chars >= target_chars:
            raise ValueError(f"overlap_chars must be < target_chars, got {overlap_chars} >= {target_chars}")
        self.target_chars = target_chars
        self.overlap_chars = overlap_chars
        self.min_chars = min_chars
        self.max_chars = max_chars

    def to_dict(self) -> dict[str, Any]:
        """
        Serialise the component.

        :returns: Dictionary with the init parameters.
        """
        return default_to_dict(
            self,
            target_chars=self.target_chars,
            overlap_chars=self.overlap_chars,
            min_chars=self.min_chars,
            max_chars=self.max_chars,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MarkdownChunker":
        """
        Deserialise the component.

        :param data: Dictionary created by `to_dict`.
        :returns: The component.
        """
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], warnings=list[dict[str, Any]], skipped=list[dict[str, Any]])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        Chunk whole-file Documents.

        :param documents: One Document per file, with meta `collection` and `path` (as `MarkdownFileReader`
            produces them).
        :returns: A dictionary with:
            - `documents`: the chunks, in file order. Their meta holds `collection`, `path`, `title`,
              `heading_path`, `chunk_index`, `start_line`, `end_line`, `char_start`, `char_end`, `checksum`,
              `content_hash`, the file id (`FILE_ID`), `context` (title and heading path, for embedding), the file's
              metadata (`FILE_META_KEYS`: `frontmatter` with its values typed, its scalar `fields` as
              `name=value` keywords, `tags` from the frontmatter and
              `#tags` in the text, `folder` and the `folders` above it, `date` in RFC 3339 and its
              `date_source`, `identifiers`) with its `meta_checksum`, `frontmatter_warning` when the
              frontmatter was not used, and every other meta field of the file's Document. A paged document's
              chunks add `page`, `page_end`, `page_line` and `page_end_line` (1-based, lines counted within
              the page) instead of its `page_starts`.
            - `warnings`: `{"collection", "path", "reason"}` per file whose frontmatter was not used (invalid
              YAML, read as text; or past a bound, left out) or lost a field whose value cannot be built.
            - `skipped`: `{"collection", "path", "reason"}` per file that could not be chunked at all (an
              error no rule above foresaw): it costs that file, never the run.
        """
        chunks: list[Document] = []
        warnings: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        for doc in documents:
            if not doc.content or not doc.content.strip():
                logger.warning("Document {doc_id} has no text to chunk", doc_id=doc.id)
                continue
            found: list[dict[str, Any]] = []
            try:
                chunks.extend(self._chunk_document(doc, found))
            except Exception as error:
                collection, path = str(doc.meta.get("collection", "")), str(doc.meta.get("path") or doc.id)
                reason = f"cannot be chunked: {str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__}"
                logger.warning("Skipped {collection}:{path}: {reason}", collection=collection, path=path, reason=reason)
                skipped.append({"collection": collection, "path": path, "reason": reason[:300]})
                continue
            warnings.extend(found)
        return {"documents": chunks, "warnings": warnings, "skipped": skipped}

    def _chunk_document(self, doc: Document, warnings: list[dict[str, Any]]) -> list[Document]:
        text = (doc.content or "").replace("\r\n", "\n").replace("\r", "\n")
        text = text[1:] if text.startswith("\ufeff") else text
        lines = text.split("\n")
        line_starts = [0]
        for line in lines[:-1]:
            line_starts.append(line_starts[-1] + len(line) + 1)
        collection = str(doc.meta.get("collection", ""))
        path = str(doc.meta.get("path") or doc.id)
        parsed = parse_frontmatter(lines)
        frontmatter, body_start, warning = parsed.data, parsed.body_start, parsed.warning
        page_starts = _page_starts(doc.meta.get("page_starts"), body_start, len(lines))
        blocks = _paged_blocks(lines, page_starts) if page_starts else _parse_blocks(lines, body_start)
        title = _title(frontmatter, blocks, path)
        code_lines = {i for b in blocks if b.kind == "code" for i in range(b.first, b.last + 1)}
        folder, parents = folders(path)
        date, date_source = document_date(frontmatter, path, doc.meta.get("mtime"))
        file_meta: dict[str, Any] = {
            "title": title,
            "aliases": aliases_of(frontmatter),
            "tags": unique_tags(
                [
                    *split_tags(frontmatter.get("tags", frontmatter.get("tag"))),
                    *inline_tags(lines, code_lines, body_start),
                ]
            ),
            "frontmatter": frontmatter,
            "fields": field_values(frontmatter),
            "folder": folder,
            "folders": parents,
            "date": date,
            "date_source": date_source,
            "identifiers": identifiers("\n".join(lines[body_start:])),
        }
        base_meta = {
            **{key: value for key, value in doc.meta.items() if key != "page_starts"},
            "collection": collection,
            "path": path,
            **file_meta,
            "meta_checksum": hashlib.sha1(json.dumps(file_meta, sort_keys=True).encode()).hexdigest(),
            "content_hash": doc.meta.get("content_hash") or hashlib.sha256(text.encode("utf-8")).hexdigest(),
            FILE_ID: f"{collection}:{path}",
        }
        if warning:
            base_meta["frontmatter_warning"] = warning
            logger.warning("{collection}:{path}: {warning}", collection=collection, path=path, warning=warning)
            warnings.append({"collection": collection, "path": path, "reason": warning})
        if not blocks:
            logger.info("{collection}:{path} has no text besides its frontmatter", collection=collection, path=path)

        chunks: list[Document] = []
        for heading_path, units in self._sections(text, lines, line_starts, blocks):
            for char_start, char_end in self._overlap(text, self._merge_small(self._pack(units))):
                content = _links_as_text(text[char_start:char_end])
                normalised = _normalise(content)
                index = len(chunks)
                context_path = heading_path[1:] if heading_path and heading_path[0] == title else heading_path
                context = " › ".join(part for part in [_named(title, file_meta["aliases"]), *context_path] if part)
                # The id covers what is embedded (context and text): a new title re-embeds the file's chunks.
                parts = [f"{collection}:{path}", "\x1f".join(heading_path), str(index), context, normalised]
                chunk_id = hashlib.sha1("\x1f".join(parts).encode()).hexdigest()
                meta = {
                    **copy.deepcopy(base_meta),
                    "heading_path": list(heading_path),
                    "chunk_index": index,
                    "start_line": bisect.bisect_right(line_starts, char_start),
                    "end_line": bisect.bisect_right(line_starts, char_end - 1),
                    "char_start": char_start,
                    "char_end": char_end,
                    "checksum": hashlib.sha1(normalised.encode()).hexdigest(),
                    "context": context,
                }
                if page_starts:
                    meta.update(_page_anchor(page_starts, meta["start_line"], meta["end_line"]))
                chunks.append(Document(id=chunk_id, content=content, meta=meta))
        return chunks

    def _sections(
        self, text: str, lines: list[str], line_starts: list[int], blocks: list[_Block]
    ) -> list[tuple[list[str], list[tuple[int, int, bool]]]]:
        """Group blocks under their headings and turn them into units `(char_start, char_end, is_heading)`."""
        sections: list[_Section] = []
        stack: list[tuple[int, str]] = []
        current = _Section(level=0, heading_path=[])
        for block in blocks:
            if block.kind == "heading":
                if current.blocks:
                    sections.append(current)
                while stack and stack[-1][0] >= block.level:
                    stack.pop()
                stack.append((block.level, block.text))
                current = _Section(block.level, [t for _, t in stack if t], [block], block.page)
            else:
                if block.page != current.page:  # a new page of a paged document starts a new section
                    if current.blocks:
                        sections.append(current)
                    current = _Section(current.level, current.heading_path, [], block.page)
                current.blocks.append(block)
        if current.blocks:
            sections.append(current)

        result: list[tuple[list[str], list[tuple[int, int, bool]]]] = []
        pending: list[tuple[int, int, bool]] = []
        for i, section in enumerate(sections):
            units = list(pending)
            for block in section.blocks:
                start = line_starts[block.first]
                end = line_starts[block.last] + len(lines[block.last])
                levels = _CODE_LEVELS if block.kind == "code" else _PROSE_LEVELS
                for piece in self._split(text, start, end, levels):
                    units.append((*piece, block.kind == "heading"))
            # A heading directly followed by a sub-heading joins the subsection's first chunk.
            heading_only = len(section.blocks) == 1 and section.blocks[0].kind == "heading"
            following = sections[i + 1] if i + 1 < len(sections) else None
            if heading_only and following and following.level > section.level and following.page == section.page:
                pending = units
                continue
            pending = []
            result.append((section.heading_path, units))
        return result

    def _split(self, text: str, start: int, end: int, levels: tuple[str, ...]) -> list[tuple[int, int]]:
        """Cut `text[start:end]` at the coarsest boundaries that exist until every piece fits in `max_chars`."""
        if end - start <= self.max_chars:
            return [(start, end)]
        for depth, level in enumerate(levels):
            cuts = [m.end() for m in _SPLIT_LEVELS[level].finditer(text, start, end) if start < m.end() < end]
            if not cuts:
                continue
            pieces: list[tuple[int, int]] = []
            for piece_start, piece_end in zip([start, *cuts], [*cuts, end]):
                trimmed = _trim(text, piece_start, piece_end)
                if trimmed:
                    pieces.extend(self._split(text, *trimmed, levels[depth + 1 :]))
            return pieces
        return [(start, end)]

    def _pack(self, units: list[tuple[int, int, bool]]) -> list[tuple[int, int]]:
        """Pack consecutive units greedily up to `target_chars` (overlap included); headings stick to what follows."""
        spans: list[tuple[int, int]] = []
        current: list[Any] = []  # [start, end, only_headings]
        for start, end, is_heading in units:
            if not current:
                current = [start, end, is_heading]
                continue
            size = end - current[0]
            # Chunks after the first will also repeat up to `overlap_chars` of the one before them.
            budget = self.target_chars - (self.overlap_chars if spans else 0)
            if size <= budget or (size <= self.max_chars and (current[2] or current[1] - current[0] < self.min_chars)):
                current = [current[0], end, current[2] and is_heading]
                continue
            spans.append((current[0], current[1]))
            current = [start, end, is_heading]
        if current:
            spans.append((current[0], current[1]))
        return spans

    def _merge_small(self, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Join chunks below `min_chars` to the previous (else the next) chunk when the result fits."""
        spans = list(spans)
        i = 0
        while len(spans) > 1 and i < len(spans):
            start, end = spans[i]
            if end - start < self.min_chars:
                if i > 0 and end - spans[i - 1][0] <= self.max_chars:
                    spans[i - 1 : i + 1] = [(spans[i - 1][0], end)]
                    i -= 1
                    continue
                if i + 1 < len(spans) and spans[i + 1][1] - start <= self.max_chars:
                    spans[i : i + 2] = [(start, spans[i + 1][1])]
                    continue
            i += 1
        return spans

    def _overlap(self, text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Move each chunk's start back by up to `overlap_chars`: to a line start, else a sentence, else a word."""
        result = spans[:1]
        for start, end in spans[1:]:
            prev_start, prev_end = result[-1]
            low = max(start - self.overlap_chars, prev_start + 1, end - self.max_chars)
            new_start = start
            if self.overlap_chars and low < prev_end:
                for boundaries in (_LINE_START, _SPLIT_LEVELS["sentence"], _SPLIT_LEVELS["word"]):
                    found = [m.end() for m in boundaries.finditer(text, low, prev_end) if low <= m.end() < prev_end]
                    if found:
                        new_start = found[0]
                        break
            result.append((new_start, end))
        return result


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Drop leading blank lines and trailing whitespace of `text[start:end]`; None when nothing is left."""
    segment = text[start:end]
    if not segment.strip():
        return None
    end = start + len(segment.rstrip())
    leading = segment[: len(segment) - len(segment.lstrip())]
    return start + leading.rfind("\n") + 1, end


def _fence_end(lines: list[str], first: int, marker: str, indented: bool) -> int:
    """Index of the line closing the fence opened at `first` (the last line when it is never closed)."""
    indent = r"[ \t]*" if indented else " {0,3}"
    closing = re.compile(rf"^{indent}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")
    for i in range(first + 1, len(lines)):
        if closing.match(lines[i]):
            return i
    last = len(lines) - 1
    while last > first and not lines[last].strip():
        last -= 1
    return last


def _fence_marker(line: str) -> str:
    """The opening fence marker of `line` (```` ``` ```` or `~~~`, any length), or "" when it opens none."""
    match = _FENCE_OPEN.match(line)
    if not match or (match.group(2)[0] == "`" and "`" in match.group(3)):
        return ""
    return match.group(2)


def _starts_block(lines: list[str], i: int) -> bool:
    """Whether line `i` starts a heading, fence, quote or list item, which ends a paragraph."""
    line = lines[i]
    return bool(_ATX_HEADING.match(line) or _fence_marker(line) or _QUOTE.match(line) or _top_level_item(line))


def _top_level_item(line: str) -> bool:
    return bool(_LIST_ITEM.match(line)) and len(line) - len(line.lstrip(" ")) <= 3 and not line.startswith("\t")


def _is_table(lines: list[str], i: int) -> bool:
    return i + 1 < len(lines) and "|" in lines[i] and "|" in lines[i + 1] and bool(_TABLE_DELIMITER.match(lines[i + 1]))


def _list_end(lines: list[str], first: int) -> int:
    """Last line of the list starting at `first`: its items, indented continuations and nested fences."""
    last, i, n = first, first + 1, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            following = i
            while following < n and not lines[following].strip():
                following += 1
            if following < n and (lines[following][:1] in (" ", "\t") or _top_level_item(lines[following])):
                i = following
                continue
            break
        if line[:1] in (" ", "\t"):
            marker = _fence_marker(line.lstrip())
            last = _fence_end(lines, i, marker, indented=True) if marker else i
            i = last + 1
            continue
        if _top_level_item(line) or (not _starts_block(lines, i) and not _is_table(lines, i)):
            last, i = i, i + 1
            continue
        break
    return last


def _parse_blocks(lines: list[str], first: int) -> list[_Block]:
    """Split the body (from line `first`) into headings, code fences, lists, quotes, tables and paragraphs."""
    blocks: list[_Block] = []
    i, n = first, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        marker = _fence_marker(line)
        heading = _ATX_HEADING.match(line)
        if marker:
            end = _fence_end(lines, i, marker, indented=False)
            blocks.append(_Block("code", i, end))
        elif heading:
            text = _CLOSING_HASHES.sub("", heading.group(2) or "").strip()
            blocks.append(_Block("heading", i, i, level=len(heading.group(1)), text=text))
            end = i
        elif _top_level_item(line):
            end = _list_end(lines, i)
            blocks.append(_Block("list", i, end))
        elif _QUOTE.match(line):
            end = i
            while end + 1 < n and lines[end + 1].strip():
                if not _QUOTE.match(lines[end + 1]) and _starts_block(lines, end + 1):
                    break
                end += 1
            blocks.append(_Block("quote", i, end))
        elif _is_table(lines, i):
            end = i + 1
            while end + 1 < n and "|" in lines[end + 1] and lines[end + 1].strip():
                end += 1
            blocks.append(_Block("table", i, end))
        else:
            end = i
            while end + 1 < n and lines[end + 1].strip() and not _starts_block(lines, end + 1):
                end += 1
            blocks.append(_Block("paragraph", i, end))
        i = end + 1
    return blocks


def _page_starts(value: Any, body_start: int, line_count: int) -> list[int]:
    """A paged document's page starts (0-based lines, ascending, in the body), or [] when it has none."""
    if not isinstance(value, (list, tuple)) or not value:
        return []
    starts = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    if len(starts) != len(value) or starts != sorted(starts) or starts[0] < body_start or starts[-1] >= line_count:
        raise ValueError(f"page_starts must be ascending line numbers of the text after its frontmatter, got {value!r}")
    return starts


def _paged_blocks(lines: list[str], page_starts: list[int]) -> list[_Block]:
    """The blocks of each page, parsed page by page so that no block runs over a page break."""
    blocks: list[_Block] = []
    for number, (start, end) in enumerate(zip(page_starts, [*page_starts[1:], len(lines)]), 1):
        for block in _parse_blocks(lines[start:end], 0):
            blocks.append(_Block(block.kind, block.first + start, block.last + start, block.level, block.text, number))
    return blocks


def _page_anchor(page_starts: list[int], start_line: int, end_line: int) -> dict[str, int]:
    """Page and line within the page (1-based) of a chunk's first and last lines."""
    first = bisect.bisect_right(page_starts, start_line - 1)
    last = bisect.bisect_right(page_starts, end_line - 1)
    return {
        "page": first,
        "page_end": last,
        "page_line": start_line - page_starts[first - 1],
        "page_end_line": end_line - page_starts[last - 1],
    }


def _title(frontmatter: dict[str, Any], blocks: list[_Block], path: str) -> str:
    """Frontmatter `title`, else the first H1, else the file name without its extension."""
    title = frontmatter.get("title")
    if title is not None and str(title).strip():
        return str(title).strip()
    for block in blocks:
        if block.kind == "heading" and block.level == 1 and block.text:
            return block.text
    return PurePosixPath(path).stem


def _links_as_text(text: str) -> str:
    """
    A chunk's text with each link written as a reader sees it (`[[Jakob Hoffmann|Jakob]]` reads `Jakob`).

    BM25 and the embeddings then read the words of the note, not `[[`, `|` and link targets; lines stay where
    they are, so the chunk's line range still points into the file. The links themselves are read into the
    link table (`LinkRecorder`).
    """
    return as_display_text(text)


def _named(title: str, aliases: list[str]) -> str:
    """The title with the note's frontmatter `aliases`, which are its names too: `Snert (Dutch pea soup)`."""
    others = [alias for alias in aliases if alias.casefold() != title.casefold()]
    return f"{title} ({', '.join(others)})" if others else title


def _normalise(text: str) -> str:
    """Chunk text for ids and checksums: NFC, no trailing spaces on lines, no leading or trailing blank lines."""
    lines = [line.rstrip() for line in unicodedata.normalize("NFC", text).split("\n")]
    return "\n".join(lines).strip("\n")
