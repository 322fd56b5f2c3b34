"""Finding the file a reference names and reading it, whole or a range of lines, never leaving its collection.

`FileReader.resolve` turns a reference (`needle.core.files.references`) into a file the collection serves (what
the ingestion scanner would list: the collection's rules, links checked one by one); `read` returns its
lines numbered as the index numbers them, or a page range or section of a PDF, DOCX or HTML file as the
text the index holds (`needle.core.file_formats.Extractor`).
"""

from __future__ import annotations

import bisect
import errno
import os
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, Field

from needle.core.collections import Collection, CollectionError, CollectionRegistry
from needle.core.file_formats import Extracted, Extractor, Unreadable, find_section, format_of, is_document
from needle.core.files.references import (
    DOCID,
    FRAGMENT,
    MAX_NAME_BYTES,
    NOT_A_DOCID,
    check_ref,
    docid,
    parse_ref,
    quote,
)
from needle.core.files.walking import OUTSIDE_ROOT, collection_root, collection_rules, link_problem
from needle.core.globs import CollectionRules

DEFAULT_MAX_FILE_BYTES = 5_000_000
DEFAULT_MAX_DOCUMENT_BYTES = 50_000_000
EXTRACTED_CACHE_SIZE = 8
_BOM = "\ufeff"
_NO_COLLECTIONS = "there are no collections yet; add one with `needle collection add PATH --name NAME`"


class FileNotServed(CollectionError):
    """No file answers the reference, or the collection does not serve it (HTTP 404)."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        """
        :param message: Starts with `no file` or `no indexed file`.
        :param reason: Why the collection does not serve the file, when it is more than its absence.
        """
        super().__init__(f"{message}: {reason}" if reason else message)
        self.reason = reason


class FileText(BaseModel):
    """A file, or a range of its lines."""

    docid: str
    collection: str
    path: str
    from_line: int
    to_line: int
    total_lines: int
    bytes: int = Field(description="Size of the whole file in bytes")
    text: str
    format: str | None = Field(None, description="pdf, docx or html: `text` is the extracted text the index holds")
    page_from: int | None = Field(None, description="PDF: first page returned (lines count from its start)")
    page_to: int | None = Field(None, description="PDF: last page returned")
    page_count: int | None = Field(None, description="PDF: pages in the document")
    section: str | None = Field(None, description="DOCX/HTML: the section returned (lines count from its heading)")
    backlinks: int | None = Field(None, description="How many links of the indexed notes point to this note")


class ServedFile(NamedTuple):
    """A file a collection serves, as `FileReader.resolve` found it."""

    collection: Collection
    path: Path  # absolute, links resolved; always inside the collection's root
    rel: str  # the path inside the collection, as the index names it (links not resolved)


def _lines(raw: bytes) -> list[str]:
    """The file's lines as the indexer numbers them (BOM dropped; `\\r\\n`, `\\r` and `\\n` end a line)."""
    text = raw.decode("utf-8", errors="replace")
    if text.startswith(_BOM):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text:
        return []
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


class FileReader:
    """
    Resolves references to the notes of the user's collections and reads them, never leaving a collection.

    Usage example:
    ```python
    reader = FileReader(CollectionRegistry(data_dir / "collections.yml"), source_ids=lambda: store_ids())
    ref, line, count = parse_ref("notes/howto/git.md:12:20")
    reader.read(ref, from_line=line or 1, max_lines=count)  # FileText
    ```
    """

    def __init__(
        self,
        collections: CollectionRegistry,
        source_ids: Callable[[], Iterable[str]],
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
        extractor: Extractor | None = None,
    ) -> None:
        """
        :param collections: The user's collections.
        :param source_ids: Lists the indexed files' `collection:path` ids (repeats are fine); used for `#docid`.
            It gives a new list when the ids change (their docids are kept while it gives the same list).
        :param max_file_bytes: Largest file `read` returns (the reader's `max_file_bytes`: larger files are not
            indexed either).
        :param max_document_bytes: Largest PDF, DOCX or HTML file read (the converter's `max_file_bytes`).
        :param extractor: Turns documents into text, with the converter's limits.
        :raises ValueError: When a size is not a positive integer.
        """
        for name, value in (("max_file_bytes", max_file_bytes), ("max_document_bytes", max_document_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be an integer > 0, got {value!r}")
        self.collections = collections
        self.source_ids = source_ids
        self.max_file_bytes = max_file_bytes
        self.max_document_bytes = max_document_bytes
        self.extractor = extractor or Extractor()
        self._extracted: dict[tuple[str, int, int], Extracted] = {}
        # The docids of the last list `source_ids` gave, sorted (docid, source) (see `_by_docid`).
        self._docids: tuple[object, list[tuple[str, str]]] | None = None

    def resolve(self, ref: str) -> ServedFile:
        """
        Find the file a reference names: `#docid`, `collection/path`, `collection:path`, or a path inside some
        collection (the first collection that serves it).

        :param ref: The reference, without line numbers (see `parse_ref`).
        :returns: The collection, the file's absolute path (links resolved, inside the root) and its path in
            the collection.
        :raises FileNotServed: When no file answers, or the collection does not serve it.
        :raises CollectionError: When the reference is malformed, leaves its collection, or the docid is
            ambiguous.
        """
        check_ref(ref)
        collections = self.collections.load()
        if DOCID.fullmatch(ref):
            return self._by_docid(ref, collections)
        if NOT_A_DOCID.fullmatch(ref):
            raise CollectionError(
                f"{quote(ref)} is not a docid: a docid is a result's 6 hexadecimal characters (0-9, a-f), e.g. #a1b2c3"
            )
        for sep in (":", "/"):
            name, found, rel = ref.partition(sep)
            if found and name in collections:
                return self._serve(collections[name], rel)
        if not collections:
            raise FileNotServed(f"no file {quote(ref)}", _NO_COLLECTIONS)
        refusals: list[CollectionError] = []
        for collection in collections.values():
            try:
                return self._serve(collection, ref)
            except CollectionError as error:
                refusals.append(error)
        worse = [e for e in refusals if not isinstance(e, FileNotServed)]
        if worse:
            raise worse[0]
        if len(refusals) == 1:
            raise refusals[0]
        reasons = {getattr(e, "reason", None) for e in refusals}
        reason = reasons.pop() if len(reasons) == 1 else None
        raise FileNotServed(f"no file {quote(ref)} in any collection ({', '.join(collections)})", reason)

    def read(self, ref: str, from_line: int = 1, max_lines: int | None = None) -> FileText:
        """
        Read a file, or `max_lines` lines of it from `from_line` on.

        Lines are numbered as the index numbers them (a `\\r\\n` or `\\r` ends a line, a BOM is dropped), so a
        search result's `start_line` reads the lines it showed.

        :param ref: As `resolve` takes it; for a PDF, DOCX or HTML file optionally with `#page=N[-M]` or
            `#section=HEADING`; optionally ending in `:LINE[:COUNT]` as `needle get` and a hit's `anchor` give
            it (used when `from_line` and `max_lines` are left at their defaults).
        :param from_line: First line (1-based).
        :param max_lines: How many lines; the rest of the file when None.
        :returns: The text with its collection, path, docid, line numbers and the file's size.
        :raises FileNotServed: As `resolve`.
        :raises CollectionError: As `resolve`; when `from_line` is past the end (the message gives the line
            count), when an argument is not a positive integer, or the file is over `max_file_bytes`.
        """
        check_count("from_line", from_line)
        if max_lines is not None:
            check_count("max_lines", max_lines)
        check_ref(ref)
        if from_line == 1 and max_lines is None:
            base, line, count = parse_ref(ref)
            if base != ref:
                try:
                    return self.read(base, line or 1, count)
                except FileNotServed:
                    pass  # a file whose name itself ends in `:digits`
        fragment = FRAGMENT.fullmatch(ref) if not DOCID.fullmatch(ref) else None
        served = self.resolve(fragment.group(1) if fragment else ref)
        if is_document(served.rel):
            return self._document_part(served, fragment, from_line, max_lines)
        if fragment:
            raise CollectionError(
                f"{served.collection.name}/{served.rel} is a {format_of(served.rel)} file: #page= and #section= "
                "name parts of PDF, DOCX and HTML files; give line numbers instead (path:line:count)"
            )
        raw = self._read_bytes(served, self.max_file_bytes)
        return self._text(served, raw, from_line, max_lines)

    def extracted(self, served: ServedFile) -> tuple[Extracted, int]:
        """
        A document's text as the index holds it, and the file's size (the last few are kept, keyed by version).

        :raises CollectionError: When the file cannot be read or converted (the reason the index skipped it).
        """
        try:
            info = os.stat(served.path)
        except OSError as exc:
            raise _os_error(exc, served.rel, served.collection.name, f"no file {quote(served.rel)}") from None
        key = (str(served.path), info.st_mtime_ns, info.st_size)
        if key not in self._extracted:
            raw = self._read_bytes(served, self.max_document_bytes)
            try:
                extracted = self.extractor.extract(raw, format_of(served.rel))
            except Unreadable as reason:
                raise CollectionError(f"{served.collection.name}/{served.rel} cannot be read: {reason}") from None
            if len(self._extracted) >= EXTRACTED_CACHE_SIZE:
                self._extracted.pop(next(iter(self._extracted)))
            self._extracted[key] = extracted
        return self._extracted[key], info.st_size

    def _document_part(
        self, served: ServedFile, fragment: re.Match[str] | None, from_line: int, max_lines: int | None
    ) -> FileText:
        """A document's extracted text, or a page range or section of it, with lines counted within the part."""
        extracted, size = self.extracted(served)
        shown = f"{served.collection.name}/{served.rel}"
        lines = _lines(extracted.text.encode("utf-8"))
        first, last = 1, len(lines)
        extra: dict[str, object] = {"format": extracted.format}
        if extracted.pages:
            extra.update(page_from=1, page_to=extracted.page_count(), page_count=extracted.page_count())
        if fragment and fragment.group(2):
            if not extracted.pages:
                raise CollectionError(f"{shown} has no pages; name a section (#section=HEADING) or lines instead")
            low = int(fragment.group(2))
            high = int(fragment.group(3) or low)
            if not 1 <= low <= high <= extracted.page_count():
                asked = f"page {low}" if low == high else f"pages {low}-{high}"
                raise CollectionError(f"{shown} has {extracted.page_count()} pages; {asked} is outside them")
            first, last = extracted.page_lines(low, high)
            extra.update(page_from=low, page_to=high)
        elif fragment:
            section = fragment.group(4).strip()
            found = find_section(extracted.text, section)
            if found is None:
                raise FileNotServed(f"no section {quote(section)} in {shown}", "name a heading of the document")
            first, last = found
            extra["section"] = section
        part = lines[first - 1 : last]
        if from_line > max(len(part), 1):
            raise CollectionError(f"{shown} has {len(part)} lines there; from_line {from_line} is past the end")
        end = len(part) if max_lines is None else min(len(part), from_line + max_lines - 1)
        return FileText(
            docid=f"#{docid(f'{served.collection.name}:{served.rel}')}",
            collection=served.collection.name,
            path=served.rel,
            from_line=from_line,
            to_line=end,
            total_lines=len(part),
            bytes=size,
            text="\n".join(part[from_line - 1 : end]),
            **extra,
        )

    # --- resolving ---

    def _by_docid(self, ref: str, collections: dict[str, Collection]) -> ServedFile:
        wanted = ref[1:].lower()
        if len(wanted) < 4:
            raise CollectionError(f"docid {quote(ref)} is too short: give at least 4 of its 6 characters")
        by_docid = self._docid_index()
        found: set[str] = set()
        at = bisect.bisect_left(by_docid, (wanted,))
        while at < len(by_docid) and by_docid[at][0].startswith(wanted):
            found.add(by_docid[at][1])
            at += 1
        sources = sorted(found)
        sources = [s for s in sources if s.partition(":")[0] in collections]
        if not sources:
            raise FileNotServed(f"no indexed file has docid {ref}")
        if len(sources) > 1:
            named = ", ".join(s.replace(":", "/", 1) for s in sources[:5])
            raise CollectionError(f"docid {ref} names {len(sources)} files ({named}); give the path instead")
        name, _, rel = sources[0].partition(":")
        return self._serve(collections[name], rel)

    def _docid_index(self) -> list[tuple[str, str]]:
        """
        Every indexed file's (docid, source id), sorted, for a prefix lookup by bisection; computed again only
        when `source_ids` gives another list (the facade keeps one until the index changes), since hashing
        every id on each `get #docid` grew with the index (3 ms a call at 7,500 files).
        """
        ids = self.source_ids()
        if self._docids is None or self._docids[0] is not ids:
            pairs = sorted({(docid(s), s) for s in ids if isinstance(s, str)})
            self._docids = (ids, pairs)
        return self._docids[1]

    def _serve(self, collection: Collection, rel: str) -> ServedFile:
        """The file at `rel` in `collection` when the collection serves it (what the scanner would list)."""
        name = collection.name
        if rel.startswith(("/", "\\", "~")):
            raise CollectionError(f"{quote(rel)} is absolute; give a path relative to collection '{name}'")
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise CollectionError(f"{quote(rel)} contains '..'; paths must stay inside a collection")
        if not parts:
            raise FileNotServed(f"no file {quote(rel)} in collection '{name}'", "give the path of a file in it")
        if any(len(p.encode("utf-8")) > MAX_NAME_BYTES for p in parts):
            raise CollectionError(f"{quote(rel)} has a name over {MAX_NAME_BYTES} bytes; no file is named that long")
        rel = "/".join(parts)
        not_found = f"no file {quote(rel)} in collection '{name}'"
        rules = collection_rules(collection)
        reason = rules.why_not_served(rel)
        if reason:
            raise FileNotServed(not_found, reason)
        root = collection_root(collection)
        try:
            return self._follow(collection, root, rel, parts, rules, not_found)
        except OSError as exc:
            raise _os_error(exc, rel, name, not_found) from None

    @staticmethod
    def _follow(
        collection: Collection, root: str, rel: str, parts: list[str], rules: CollectionRules, not_found: str
    ) -> ServedFile:
        if not os.path.isdir(root):
            raise FileNotServed(not_found, f"its folder {root} does not exist")
        root_real = os.path.realpath(root)
        folder = root
        for index, part in enumerate(parts):
            path = os.path.join(folder, part)
            last = index == len(parts) - 1
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                problem = link_problem(path, folder, root_real, rules, is_dir=os.path.isdir(path))
                if problem == OUTSIDE_ROOT:
                    raise CollectionError(f"{quote(rel)} is a link that leads outside collection '{collection.name}'")
                if problem:
                    raise FileNotServed(not_found, problem)
            folder = path
            if not last and not os.path.isdir(path):
                raise FileNotServed(not_found)
        real = os.path.realpath(folder)
        if os.path.commonpath([root_real, real]) != root_real:
            raise CollectionError(f"{quote(rel)} leads outside collection '{collection.name}'")
        mode = os.stat(real).st_mode
        if stat.S_ISDIR(mode):
            raise FileNotServed(not_found, "it is a folder")
        if not stat.S_ISREG(mode):
            raise FileNotServed(not_found, "not a regular file")
        return ServedFile(collection, Path(real), rel)

    # --- reading ---

    @staticmethod
    def _open(served: ServedFile) -> int:
        """Open the file checked by `resolve` or the walk, refusing anything that changed into something else."""
        fd = os.open(served.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise Skip("not a regular file")
            now = os.stat(served.path)
            if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
                raise Skip("the file changed while it was read; try again")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _read_bytes(self, served: ServedFile, limit: int) -> bytes:
        shown = f"{served.collection.name}/{served.rel}"
        try:
            fd = self._open(served)
            with os.fdopen(fd, "rb") as handle:
                raw = handle.read(limit + 1)
        except Skip as skip:
            raise CollectionError(f"{shown} cannot be read: {skip}") from None
        except OSError as exc:
            name = served.collection.name
            raise _os_error(exc, served.rel, name, f"no file {quote(served.rel)} in collection '{name}'") from None
        if len(raw) > limit:
            raise CollectionError(f"{shown} is over max_file_bytes={limit} bytes: too large to read (and to index)")
        return raw

    @staticmethod
    def _text(served: ServedFile, raw: bytes, from_line: int = 1, max_lines: int | None = None) -> FileText:
        name, rel = served.collection.name, served.rel
        lines = _lines(raw)
        if from_line > max(len(lines), 1):
            raise CollectionError(f"{name}/{rel} has {len(lines)} lines; from_line {from_line} is past the end")
        end = len(lines) if max_lines is None else min(len(lines), from_line + max_lines - 1)
        return FileText(
            docid=f"#{docid(f'{name}:{rel}')}",
            collection=name,
            path=rel,
            from_line=from_line,
            to_line=end,
            total_lines=len(lines),
            bytes=len(raw),
            text="\n".join(lines[from_line - 1 : end]),
        )


def check_count(name: str, value: object) -> None:
    """:raises CollectionError: When `value` is not an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CollectionError(f"{name} must be an integer >= 1, got {value!r}"[:300])


class Skip(Exception):
    """A file a reading leaves out (`read_many` skips it); the message is the reason."""


def _os_error(exc: OSError, rel: str, collection: str, not_found: str) -> CollectionError:
    """The user error for a failed lookup of a path the user gave."""
    code = exc.errno
    if code in (errno.ENOENT, errno.ENOTDIR):
        return FileNotServed(not_found)
    if code == errno.ELOOP:
        return FileNotServed(not_found, "symlink loop")
    if code == errno.ENAMETOOLONG:
        return CollectionError(f"{quote(rel)} is too long a path for the file system")
    if code in (errno.EACCES, errno.EPERM):
        return CollectionError(f"{quote(rel)} in collection '{collection}' cannot be read: permission denied")
    return CollectionError(f"{quote(rel)} in collection '{collection}' cannot be read: {exc.strerror or exc}")
