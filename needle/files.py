"""Reading notes by reference, for `get` and `multi_get` over the CLI, HTTP and MCP alike.

`FileAccess` turns a user's reference (`#docid`, `collection/path`, `collection:path`, or a path inside some
collection) into a file of a collection and reads it, whole or a range of lines; `read_many` reads the files
a glob matches, or a list of references, within byte, file-count and time limits. A file is served exactly
when the ingestion scanner would index it: both ask the same `CollectionRules` (include globs, excludes,
hidden parts, names that are not UTF-8) and list folders with the same `walk_collection` (links leading out
refused, loops cut). Everything a caller can get wrong ends as a `CollectionError` with a message a person can
act on, never as an `OSError`:

- `FileNotServed` (a `CollectionError`; HTTP 404): no such file, or not one the collection serves (a hidden
  file, an excluded folder, a file its include globs leave out, a broken link). Messages start with
  `no file` or `no indexed file`.
- `CollectionError` otherwise (HTTP 400): a reference that could only be meant to leave a collection (`..`,
  absolute, `~`, URL-encoded, NUL or control characters, a link leading outside the root), a name too long
  for the file system, a line past the end, an ambiguous docid, a file too large, bad arguments.

PDF, DOCX and HTML files are served as the text the index holds (`needle.formats.Extractor`, the extraction
ingestion runs), and a reference can name a part of one: `papers/raft.pdf#page=3` or `#page=3-5` (pages of
a PDF), `specs/deploy.docx#section=Rollout › Canary` (a section of a DOCX or HTML file: its heading path, or
its last heading alone). Line numbers then count within that part, as a search result's anchor counts them.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, Field

from needle.collections import Collection, CollectionError, CollectionRegistry
from needle.formats import Extracted, Extractor, Unreadable, find_section, format_of, is_document
from needle.globs import CollectionRules, Glob, printable, valid_utf8
from needle.requests import DEFAULT_MAX_BYTES, MAX_REF_CHARS

MAX_NAME_BYTES = 255
MULTI_GET_MAX_FILES = 100
MULTI_GET_MAX_TOTAL_BYTES = 2_000_000
MULTI_GET_MAX_SKIPPED = 100
DEFAULT_MAX_FILE_BYTES = 5_000_000
DEFAULT_MAX_DOCUMENT_BYTES = 50_000_000
EXTRACTED_CACHE_SIZE = 8
DEFAULT_DEADLINE_SECONDS = 5.0
OUTSIDE_ROOT = "symlink leads outside the collection root"
NEITHER_PATTERN_NOR_REFS = "give 'pattern' (a glob such as notes/howto/*.md) or 'refs' (paths or #docids): neither was sent"

_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DOCID = re.compile(r"#([0-9A-Fa-f]+)")
_NOT_A_DOCID = re.compile(r"#[^/.:]*")
_LINE_NUMBER = re.compile(r"[0-9]{1,9}")
_FRAGMENT = re.compile(r"(?s)(.+?)#(?:page=([0-9]{1,6})(?:-([0-9]{1,6}))?|section=(.+))")
_BOM = "\ufeff"
clock = time.monotonic  # the clock of deadlines (tests replace it)
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


class OutOfTime(Exception):
    """A walk went past its deadline (raised by `walk_collection`)."""


@functools.lru_cache(maxsize=1 << 16)
def docid(source_doc_id: str) -> str:
    """A short, stable id for a file (`collection:path`), shown as `#abc123` and accepted by `get`."""
    return hashlib.sha1(source_doc_id.encode("utf-8")).hexdigest()[:6]


def parse_ref(ref: str) -> tuple[str, int | None, int | None]:
    """
    Split `PATH[:LINE[:COUNT]]` (as `needle get` takes it) into the reference and the numbers.

    `notes/a.md:12:20` gives `("notes/a.md", 12, 20)`, `#a1b2c3:5` gives `("#a1b2c3", 5, None)`; only trailing
    groups of ASCII digits count, so `notes:a.md` keeps its colon.

    :returns: The reference, the first line (or None) and the line count (or None).
    :raises CollectionError: When a number has more than 9 digits.
    """
    parts = ref.split(":")
    numbers: list[int] = []
    while len(parts) > 1 and parts[-1].isascii() and parts[-1].isdigit() and len(numbers) < 2:
        if not _LINE_NUMBER.fullmatch(parts[-1]):
            raise CollectionError(f"line number {_quote(parts[-1])} is too large")
        numbers.insert(0, int(parts.pop()))
    line = numbers[0] if numbers else None
    count = numbers[1] if len(numbers) > 1 else None
    return ":".join(parts), line, count


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


class SkippedFile(BaseModel):
    """A file `multi_get` matched but did not return, and why."""

    path: str
    reason: str


class FileBatch(BaseModel):
    """What `multi_get` read, and what it skipped."""

    files: list[FileText]
    skipped: list[SkippedFile]


class ServedFile(NamedTuple):
    """A file a collection serves, as `FileAccess.resolve` found it."""

    collection: Collection
    path: Path  # absolute, links resolved; always inside the collection's root
    rel: str  # the path inside the collection, as the index names it (links not resolved)


@dataclass(frozen=True)
class Listed:
    """One thing `walk_collection` found: a served file (`reason` None), or a file or folder left out."""

    rel: str  # relative posix path, printable ("" for the root); bytes that are not UTF-8 shown as \\xff
    path: str  # the path on disk, through links
    reason: str | None = None
    is_dir: bool = False


@functools.lru_cache(maxsize=64)
def _compiled_rules(include: tuple[str, ...] | None, exclude: tuple[str, ...] | None) -> CollectionRules:
    return CollectionRules(include, exclude)


def collection_rules(collection: Collection) -> CollectionRules:
    """
    The compiled rules of a collection (cached by its patterns).

    :raises CollectionError: When the collection's include or exclude patterns are malformed.
    """
    patterns = []
    for key in ("include", "exclude"):
        value = getattr(collection, key)
        if value is not None and not isinstance(value, (list, tuple)):
            message = f"'{key}' must be a list of glob patterns, got {value!r}"
            raise CollectionError(f"collection '{collection.name}': {message}")
        patterns.append(None if value is None else tuple(value))
    try:
        return _compiled_rules(*patterns)
    except (TypeError, ValueError) as error:
        raise CollectionError(f"collection '{collection.name}': {error}") from None


def collection_root(collection: Collection) -> str:
    """The collection's root as an absolute path (`~` expanded), as the scanner takes it."""
    return os.path.abspath(os.path.expanduser(collection.root))


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def link_problem(path: str, folder: str, root_real: str, rules: CollectionRules, is_dir: bool) -> str | None:
    """
    Why a symlink in a collection must not be followed, or None when it may.

    :param path: The link, as found (through the links above it).
    :param folder: The folder holding the link.
    :param root_real: The collection root with every link resolved.
    :param rules: The collection's rules.
    :param is_dir: Whether the link leads to a folder.
    :returns: A loop, a broken link, a link out of the root (`OUTSIDE_ROOT`), or a link to something the
        collection already lists (a note, or a folder that is not excluded); None otherwise.
    """
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink loop: the link cannot be resolved"
        return "broken symlink: target does not exist"
    real = os.path.realpath(path)
    if os.path.commonpath([root_real, real]) != root_real:
        return OUTSIDE_ROOT
    target = os.path.relpath(real, root_real).replace(os.sep, "/")
    if not is_dir:
        if rules.serves(target):
            return f"symlink to {printable(target)}, which is already in the collection"
        return None
    folder_real = os.path.realpath(folder)
    if os.path.commonpath([real, folder_real]) == real:
        return f"symlink loop: the link points back to an enclosing folder ({printable(target)})"
    if not rules.folder_excluded(target):
        return f"symlink to folder {printable(target)}, which is already scanned"
    return None


def walk_collection(
    root: str,
    rules: CollectionRules,
    descend: Callable[[str], bool] | None = None,
    deadline: float | None = None,
) -> Iterator[Listed]:
    """
    List a collection's notes, and what was left out for a reason worth telling.

    Folders are read in name order, each folder's files before its subfolders. Excluded and hidden folders
    are never entered; symlinks are followed while they stay inside the root and do not lead back to
    something listed already. Files the rules leave out are passed over silently; broken links, loops, links
    leading out, names that are not UTF-8, things that are not regular files and folders that cannot be read
    are yielded with a reason.

    :param root: The collection root, absolute.
    :param rules: The collection's rules.
    :param descend: When given, folders for which it returns False are not entered (nor reported).
    :param deadline: A `clock()` (`time.monotonic`) value after which the walk stops.
    :returns: An iterator of `Listed`; `rel` is `""` when the whole collection cannot be listed.
    :raises OutOfTime: When the deadline passes; what was yielded before stands.
    """
    if not os.path.isdir(root):
        detail = " (it is not a folder)" if os.path.exists(root) else ""
        yield Listed("", root, f"root folder does not exist: {root}{detail}", is_dir=True)
        return
    root_real = os.path.realpath(root)
    root_key = _stat_key(root)
    if root_key is None:
        yield Listed("", root, f"root folder does not exist: {root}", is_dir=True)
        return
    visited = {root_key}
    stack: list[tuple[str, str]] = [(root, "")]
    while stack:
        if deadline is not None and clock() > deadline:
            raise OutOfTime(stack[-1][1])
        folder, folder_rel = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except PermissionError:
            yield Listed(folder_rel, folder, "permission denied: the folder cannot be listed", is_dir=True)
            continue
        except OSError as exc:
            yield Listed(folder_rel, folder, f"the folder cannot be listed: {exc.strerror or exc}", is_dir=True)
            continue
        subfolders: list[tuple[str, str]] = []
        for entry in entries:
            if deadline is not None and clock() > deadline:
                raise OutOfTime(folder_rel)
            rel = f"{folder_rel}/{entry.name}" if folder_rel else entry.name
            try:
                is_link, is_dir = entry.is_symlink(), entry.is_dir()
            except OSError:
                is_link, is_dir = True, False
            if is_dir:
                if rules.folder_excluded(rel) or (descend is not None and not descend(rel)):
                    continue
                if not valid_utf8(entry.name):
                    yield Listed(printable(rel), entry.path, "the folder name is not valid UTF-8", is_dir=True)
                    continue
                reason = link_problem(entry.path, folder, root_real, rules, is_dir=True) if is_link else None
                key = _stat_key(entry.path)
                if reason is None and key is None:
                    reason = "the folder vanished while scanning"
                elif reason is None and key in visited:
                    reason = "symlink loop: this folder was already scanned"
                if reason:
                    yield Listed(printable(rel), entry.path, reason, is_dir=True)
                    continue
                visited.add(key)  # type: ignore[arg-type]
                subfolders.append((entry.path, rel))
                continue
            if rules.file_excluded(rel):
                continue
            if is_link:
                reason = link_problem(entry.path, folder, root_real, rules, is_dir=False)
                if reason:
                    yield Listed(printable(rel), entry.path, reason)
                    continue
            if not rules.included(rel):
                continue
            if not valid_utf8(entry.name):
                yield Listed(printable(rel), entry.path, "the file name is not valid UTF-8")
                continue
            try:
                regular = entry.is_file()
            except OSError:
                regular = False
            yield Listed(rel, entry.path) if regular else Listed(rel, entry.path, "not a regular file")
        stack.extend(reversed(subfolders))


def _quote(text: str, limit: int = 200) -> str:
    """`text` quoted for a message, cut short when long (a hostile reference can be a kilobyte)."""
    shown = repr(printable(text))
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


def _check_ref(ref: object, what: str = "a file reference") -> str:
    """Refuse references that could only be meant to leave a collection, before any lookup."""
    if not isinstance(ref, str) or not ref:
        raise CollectionError(f"{what} must be a non-empty string, got {ref!r}"[:300])
    if len(ref) > MAX_REF_CHARS:
        raise CollectionError(f"{what} is at most {MAX_REF_CHARS} characters, got {len(ref)}")
    if _CONTROL.search(ref):
        raise CollectionError(f"{what} must not contain NUL or control characters")
    if not valid_utf8(ref):
        raise CollectionError(f"{what} must be valid UTF-8 text")
    if _PERCENT_ESCAPE.search(ref):
        raise CollectionError(f"{_quote(ref)} is URL-encoded; give the plain path, e.g. notes/howto/file.md")
    if ref.startswith(("/", "\\", "~")):
        raise CollectionError(f"{_quote(ref)} is absolute; give a path inside a collection, e.g. notes/howto/file.md")
    if ".." in re.split(r"[/\\:]", ref):
        raise CollectionError(f"{_quote(ref)} contains '..'; paths must stay inside a collection")
    return ref


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


class FileAccess:
    """
    Resolves references to the notes of the user's collections and reads them, never leaving a collection.

    Usage example:
    ```python
    access = FileAccess(CollectionRegistry(data_dir / "collections.yml"), source_ids=lambda: store_ids())
    ref, line, count = parse_ref("notes/howto/git.md:12:20")
    access.read(ref, from_line=line or 1, max_lines=count)       # FileText
    access.read_many(pattern="notes/howto/*.md", max_bytes=20_000)  # FileBatch: files and skipped
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
        _check_ref(ref)
        collections = self.collections.load()
        if _DOCID.fullmatch(ref):
            return self._by_docid(ref, collections)
        if _NOT_A_DOCID.fullmatch(ref):
            raise CollectionError(
                f"{_quote(ref)} is not a docid: a docid is a result's 6 hexadecimal characters (0-9, a-f), e.g. #a1b2c3"
            )
        for sep in (":", "/"):
            name, found, rel = ref.partition(sep)
            if found and name in collections:
                return self._serve(collections[name], rel)
        if not collections:
            raise FileNotServed(f"no file {_quote(ref)}", _NO_COLLECTIONS)
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
        raise FileNotServed(f"no file {_quote(ref)} in any collection ({', '.join(collections)})", reason)

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
        _check_count("from_line", from_line)
        if max_lines is not None:
            _check_count("max_lines", max_lines)
        _check_ref(ref)
        if from_line == 1 and max_lines is None:
            base, line, count = parse_ref(ref)
            if base != ref:
                try:
                    return self.read(base, line or 1, count)
                except FileNotServed:
                    pass  # a file whose name itself ends in `:digits`
        fragment = _FRAGMENT.fullmatch(ref) if not _DOCID.fullmatch(ref) else None
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
            raise _os_error(exc, served.rel, served.collection.name, f"no file {_quote(served.rel)}") from None
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
                raise FileNotServed(f"no section {_quote(section)} in {shown}", "name a heading of the document")
            first, last = found
            extra["section"] = section
        part = lines[first - 1 : last]
        if from_line > max(len(part), 1):
            raise CollectionError(f"{shown} has {len(part)} lines there; from_line {from_line} is past the end")
        end = len(part) if max_lines is None else min(len(part), from_line + max_lines - 1)
        return FileText(
            docid=f"#{docid(f'{served.collection.name}:{served.rel}')}", collection=served.collection.name,
            path=served.rel, from_line=from_line, to_line=end, total_lines=len(part), bytes=size,
            text="\n".join(part[from_line - 1 : end]), **extra,
        )

    def read_many(
        self,
        pattern: str | None = None,
        refs: list[str] | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        deadline_seconds: float = DEFAULT_DEADLINE_SECONDS,
    ) -> FileBatch:
        """
        Read the files a glob matches, or those a list of references names, within limits.

        A `pattern` is a glob over `collection/path` (or `collection:path`) when it starts with a collection's
        name, else over paths in every collection; only the files the collection serves are listed. At most
        `MULTI_GET_MAX_FILES` files and `MULTI_GET_MAX_TOTAL_BYTES` bytes are returned; what is left out, and
        why, is in `skipped` (path `collection/path`): files over `max_bytes`, files past either cap, links
        leading out, loops, unreadable files, and everything not reached before `deadline_seconds`.

        :param pattern: A glob such as `notes/howto/*.md` or `**/postgres*.md`.
        :param refs: References as `resolve` takes them, read in this order.
        :param max_bytes: Largest file returned, in bytes.
        :param deadline_seconds: Wall-clock budget; the listing and reading stop when it runs out.
        :returns: The files read (whole) and the files skipped with a reason.
        :raises CollectionError: When both or neither of `pattern` and `refs` are given, an argument is out of
            range, the pattern or a reference is malformed or leaves its collection.
        :raises FileNotServed: When a reference names no file the collection serves.
        """
        if pattern is None and refs is None:
            raise CollectionError(NEITHER_PATTERN_NOR_REFS)
        if pattern is not None and refs is not None:
            raise CollectionError("give either 'pattern' or 'refs', not both")
        _check_count("max_bytes", max_bytes)
        number = isinstance(deadline_seconds, (int, float)) and not isinstance(deadline_seconds, bool)
        if not number or not deadline_seconds > 0:
            raise CollectionError(f"deadline_seconds must be a number > 0, got {deadline_seconds!r}")
        deadline = clock() + deadline_seconds
        budget = f"the time budget of {deadline_seconds:g} s ran out"
        skipped: list[SkippedFile] = []
        if pattern is not None:
            found = self._match(pattern, deadline, budget, skipped)
        else:
            if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
                raise CollectionError("'refs' must be a list of file references")
            found = self._resolve_all(refs, deadline, budget, skipped)
        files: list[FileText] = []
        total = 0
        for served in found:
            shown = f"{served.collection.name}/{served.rel}"
            if clock() > deadline:
                skipped.append(SkippedFile(path=shown, reason=f"not read: {budget}"))
                continue
            try:
                if is_document(served.rel):
                    text = self._document_capped(served, max_bytes, MULTI_GET_MAX_TOTAL_BYTES - total)
                    total += len(text.text.encode("utf-8"))
                    files.append(text)
                    continue
                raw = self._read_capped(served, max_bytes, MULTI_GET_MAX_TOTAL_BYTES - total)
            except _Skip as skip:
                skipped.append(SkippedFile(path=shown, reason=str(skip)))
                continue
            files.append(self._text(served, raw))
            total += len(raw)
        return FileBatch(files=files, skipped=skipped)

    # --- resolving ---

    def _by_docid(self, ref: str, collections: dict[str, Collection]) -> ServedFile:
        wanted = ref[1:].lower()
        if len(wanted) < 4:
            raise CollectionError(f"docid {_quote(ref)} is too short: give at least 4 of its 6 characters")
        sources = sorted({s for s in self.source_ids() if isinstance(s, str) and docid(s).startswith(wanted)})
        sources = [s for s in sources if s.partition(":")[0] in collections]
        if not sources:
            raise FileNotServed(f"no indexed file has docid {ref}")
        if len(sources) > 1:
            named = ", ".join(s.replace(":", "/", 1) for s in sources[:5])
            raise CollectionError(f"docid {ref} names {len(sources)} files ({named}); give the path instead")
        name, _, rel = sources[0].partition(":")
        return self._serve(collections[name], rel)

    def _serve(self, collection: Collection, rel: str) -> ServedFile:
        """The file at `rel` in `collection` when the collection serves it (what the scanner would list)."""
        name = collection.name
        if rel.startswith(("/", "\\", "~")):
            raise CollectionError(f"{_quote(rel)} is absolute; give a path relative to collection '{name}'")
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise CollectionError(f"{_quote(rel)} contains '..'; paths must stay inside a collection")
        if not parts:
            raise FileNotServed(f"no file {_quote(rel)} in collection '{name}'", "give the path of a file in it")
        if any(len(p.encode("utf-8")) > MAX_NAME_BYTES for p in parts):
            raise CollectionError(f"{_quote(rel)} has a name over {MAX_NAME_BYTES} bytes; no file is named that long")
        rel = "/".join(parts)
        not_found = f"no file {_quote(rel)} in collection '{name}'"
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
                    raise CollectionError(f"{_quote(rel)} is a link that leads outside collection '{collection.name}'")
                if problem:
                    raise FileNotServed(not_found, problem)
            folder = path
            if not last and not os.path.isdir(path):
                raise FileNotServed(not_found)
        real = os.path.realpath(folder)
        if os.path.commonpath([root_real, real]) != root_real:
            raise CollectionError(f"{_quote(rel)} leads outside collection '{collection.name}'")
        mode = os.stat(real).st_mode
        if stat.S_ISDIR(mode):
            raise FileNotServed(not_found, "it is a folder")
        if not stat.S_ISREG(mode):
            raise FileNotServed(not_found, "not a regular file")
        return ServedFile(collection, Path(real), rel)

    def _resolve_all(
        self, refs: list[str], deadline: float, budget: str, skipped: list[SkippedFile]
    ) -> list[ServedFile]:
        found: list[ServedFile] = []
        seen: set[tuple[str, str]] = set()
        for ref in refs:
            if len(found) == MULTI_GET_MAX_FILES:
                reason = f"more than {MULTI_GET_MAX_FILES} files asked for; ask for the rest in another call"
                skipped.append(SkippedFile(path=printable(ref)[:MAX_REF_CHARS], reason=reason))
                continue
            if clock() > deadline:
                skipped.append(SkippedFile(path=printable(ref)[:MAX_REF_CHARS], reason=f"not read: {budget}"))
                continue
            served = self.resolve(ref)
            key = (served.collection.name, served.rel)
            if key in seen:
                skipped.append(SkippedFile(path="/".join(key), reason="asked for twice; returned once"))
                continue
            seen.add(key)
            found.append(served)
        return found

    def _match(self, pattern: str, deadline: float, budget: str, skipped: list[SkippedFile]) -> list[ServedFile]:
        _check_ref(pattern, what="a pattern")
        collections = self.collections.load()
        selected, glob_text = list(collections.values()), pattern
        for sep in (":", "/"):
            name, found, rest = pattern.partition(sep)
            if found and name in collections:
                selected, glob_text = [collections[name]], rest
                break
        glob = Glob(glob_text)
        matched: list[ServedFile] = []
        for position, collection in enumerate(selected):
            stop = self._list(collection, glob, deadline, matched, skipped)
            if stop == "time":
                skipped.extend(
                    SkippedFile(path=f"{c.name}/", reason=f"not listed entirely: {budget}; narrow the pattern")
                    for c in selected[position:]
                )
            if stop:
                break
        if not matched and not skipped:
            head = re.split(r"[/:]", pattern, maxsplit=1)[0]
            if head != pattern and head not in collections and not any(c in head for c in "*?[{"):
                raise FileNotServed(
                    f"no file matches {_quote(pattern)}",
                    f"no collection is named '{head}' ({', '.join(collections) or 'there are none'}), and no "
                    "collection has files that match it",
                )
        return matched

    def _list(
        self, collection: Collection, glob: Glob, deadline: float, matched: list[ServedFile], skipped: list[SkippedFile]
    ) -> str | None:
        """Add the collection's files that `glob` matches; returns why listing stopped early, if it did."""
        rules = collection_rules(collection)
        root = collection_root(collection)
        root_real = os.path.realpath(root)
        try:
            for item in walk_collection(root, rules, descend=glob.may_match_below, deadline=deadline):
                shown = f"{collection.name}/{item.rel}"
                if item.reason is not None:
                    below = glob.may_match_below if item.is_dir else glob.matches
                    if item.rel and not below(item.rel):
                        continue
                    if len(skipped) >= MULTI_GET_MAX_SKIPPED:
                        reason = f"more than {MULTI_GET_MAX_SKIPPED} files skipped; the rest was not listed"
                        skipped.append(SkippedFile(path=shown, reason=reason))
                        return "skipped"
                    skipped.append(SkippedFile(path=shown, reason=item.reason))
                    continue
                if not glob.matches(item.rel):
                    continue
                if len(matched) == MULTI_GET_MAX_FILES:
                    reason = f"more than {MULTI_GET_MAX_FILES} files matched; narrow the pattern"
                    skipped.append(SkippedFile(path=shown, reason=reason))
                    return "files"
                real = os.path.realpath(item.path)
                if os.path.commonpath([root_real, real]) != root_real:  # the walk checked; a race could change it
                    skipped.append(SkippedFile(path=shown, reason=OUTSIDE_ROOT))
                    continue
                matched.append(ServedFile(collection, Path(real), item.rel))
        except OutOfTime:
            return "time"
        return None

    # --- reading ---

    @staticmethod
    def _open(served: ServedFile) -> int:
        """Open the file checked by `resolve` or the walk, refusing anything that changed into something else."""
        fd = os.open(served.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise _Skip("not a regular file")
            now = os.stat(served.path)
            if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
                raise _Skip("the file changed while it was read; try again")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _read_capped(self, served: ServedFile, max_bytes: int, room: int) -> bytes:
        """The file's bytes, or `_Skip` with the reason it is not returned."""
        try:
            fd = self._open(served)
            with os.fdopen(fd, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size > max_bytes:
                    advice = "raise max_bytes or use get with from_line"
                    raise _Skip(f"{size} bytes is over max_bytes={max_bytes}; {advice}")
                if size > room:
                    raise _Skip(f"the response reached {MULTI_GET_MAX_TOTAL_BYTES} bytes")
                raw = handle.read(min(max_bytes, room) + 1)
        except OSError as exc:
            raise _Skip(f"the file cannot be read: {exc.strerror or exc}") from None
        if len(raw) > min(max_bytes, room):
            raise _Skip("the file grew while it was read; try again")
        return raw

    def _document_capped(self, served: ServedFile, max_bytes: int, room: int) -> FileText:
        """A document's whole extracted text, or `_Skip` when it is over `max_bytes` or the room left."""
        try:
            part = self._document_part(served, None, 1, None)
        except CollectionError as error:
            raise _Skip(str(error)) from None
        size = len(part.text.encode("utf-8"))
        if size > max_bytes:
            raise _Skip(f"its extracted text is {size} bytes, over max_bytes={max_bytes}; raise max_bytes or use get "
                        "with #page= or #section=")
        if size > room:
            raise _Skip(f"the response reached {MULTI_GET_MAX_TOTAL_BYTES} bytes")
        return part

    def _read_bytes(self, served: ServedFile, limit: int) -> bytes:
        shown = f"{served.collection.name}/{served.rel}"
        try:
            fd = self._open(served)
            with os.fdopen(fd, "rb") as handle:
                raw = handle.read(limit + 1)
        except _Skip as skip:
            raise CollectionError(f"{shown} cannot be read: {skip}") from None
        except OSError as exc:
            name = served.collection.name
            raise _os_error(exc, served.rel, name, f"no file {_quote(served.rel)} in collection '{name}'") from None
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
            docid=f"#{docid(f'{name}:{rel}')}", collection=name, path=rel, from_line=from_line, to_line=end,
            total_lines=len(lines), bytes=len(raw), text="\n".join(lines[from_line - 1 : end]),
        )


def _check_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CollectionError(f"{name} must be an integer >= 1, got {value!r}"[:300])


class _Skip(Exception):
    """A file `read_many` leaves out; the message is the reason."""


def _os_error(exc: OSError, rel: str, collection: str, not_found: str) -> CollectionError:
    """The user error for a failed lookup of a path the user gave."""
    code = exc.errno
    if code in (errno.ENOENT, errno.ENOTDIR):
        return FileNotServed(not_found)
    if code == errno.ELOOP:
        return FileNotServed(not_found, "symlink loop")
    if code == errno.ENAMETOOLONG:
        return CollectionError(f"{_quote(rel)} is too long a path for the file system")
    if code in (errno.EACCES, errno.EPERM):
        return CollectionError(f"{_quote(rel)} in collection '{collection}' cannot be read: permission denied")
    return CollectionError(f"{_quote(rel)} in collection '{collection}' cannot be read: {exc.strerror or exc}")
