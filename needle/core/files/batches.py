"""Reading the files a glob or a list of references names, within byte, file-count and time budgets.

`FileAccess` is the `FileReader` (`needle.core.files.reading`) with `read_many`, what multi-get runs over the
CLI, HTTP and MCP: a pattern is listed with the ingestion scanner's walk (`needle.core.files.walking`), references
are resolved one by one, and what is left out, and why, comes back beside the files read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import BaseModel

from needle.core.collections import Collection, CollectionError
from needle.core.file_formats import is_document
from needle.core.files import walking
from needle.core.files.reading import FileNotServed, FileReader, FileText, ServedFile, Skip, check_count
from needle.core.files.references import check_ref, quote
from needle.core.files.walking import OUTSIDE_ROOT, OutOfTime, collection_root, collection_rules, walk_collection
from needle.core.globs import Glob, printable
from needle.core.requests import DEFAULT_MAX_BYTES, MAX_REF_CHARS

MULTI_GET_MAX_FILES = 100
MULTI_GET_MAX_TOTAL_BYTES = 2_000_000
MULTI_GET_MAX_SKIPPED = 100
DEFAULT_DEADLINE_SECONDS = 5.0
NEITHER_PATTERN_NOR_REFS = (
    "give 'pattern' (a glob such as notes/howto/*.md) or 'refs' (paths or #docids): neither was sent"
)


class SkippedFile(BaseModel):
    """A file a multi-get matched but did not return, and why."""

    path: str
    reason: str


class FileBatch(BaseModel):
    """What a multi-get read, and what it skipped."""

    files: list[FileText]
    skipped: list[SkippedFile]


class FileAccess(FileReader):
    """
    Resolves references to the notes of the user's collections and reads them, one or many, never leaving a
    collection: a `FileReader` that also reads what a glob or a list of references names (`read_many`).

    Usage example:
    ```python
    access = FileAccess(CollectionRegistry(data_dir / "collections.yml"), source_ids=lambda: store_ids())
    ref, line, count = parse_ref("notes/howto/git.md:12:20")
    access.read(ref, from_line=line or 1, max_lines=count)       # FileText
    access.read_many(pattern="notes/howto/*.md", max_bytes=20_000)  # FileBatch: files and skipped
    ```
    """

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
        check_count("max_bytes", max_bytes)
        number = isinstance(deadline_seconds, (int, float)) and not isinstance(deadline_seconds, bool)
        if not number or not deadline_seconds > 0:
            raise CollectionError(f"deadline_seconds must be a number > 0, got {deadline_seconds!r}")
        deadline = walking.clock() + deadline_seconds
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
            if walking.clock() > deadline:
                skipped.append(SkippedFile(path=shown, reason=f"not read: {budget}"))
                continue
            try:
                if is_document(served.rel):
                    text = self._document_capped(served, max_bytes, MULTI_GET_MAX_TOTAL_BYTES - total)
                    total += len(text.text.encode("utf-8"))
                    files.append(text)
                    continue
                raw = self._read_capped(served, max_bytes, MULTI_GET_MAX_TOTAL_BYTES - total)
            except Skip as skip:
                skipped.append(SkippedFile(path=shown, reason=str(skip)))
                continue
            files.append(self._text(served, raw))
            total += len(raw)
        return FileBatch(files=files, skipped=skipped)

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
            if walking.clock() > deadline:
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
        check_ref(pattern, what="a pattern")
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
                    f"no file matches {quote(pattern)}",
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

    def _read_capped(self, served: ServedFile, max_bytes: int, room: int) -> bytes:
        """The file's bytes, or `Skip` with the reason it is not returned."""
        try:
            fd = self._open(served)
            with os.fdopen(fd, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size > max_bytes:
                    advice = "raise max_bytes or use get with from_line"
                    raise Skip(f"{size} bytes is over max_bytes={max_bytes}; {advice}")
                if size > room:
                    raise Skip(f"the response reached {MULTI_GET_MAX_TOTAL_BYTES} bytes")
                raw = handle.read(min(max_bytes, room) + 1)
        except OSError as exc:
            raise Skip(f"the file cannot be read: {exc.strerror or exc}") from None
        if len(raw) > min(max_bytes, room):
            raise Skip("the file grew while it was read; try again")
        return raw

    def _document_capped(self, served: ServedFile, max_bytes: int, room: int) -> FileText:
        """A document's whole extracted text, or `Skip` when it is over `max_bytes` or the room left."""
        try:
            part = self._document_part(served, None, 1, None)
        except CollectionError as error:
            raise Skip(str(error)) from None
        size = len(part.text.encode("utf-8"))
        if size > max_bytes:
            raise Skip(
                f"its extracted text is {size} bytes, over max_bytes={max_bytes}; raise max_bytes or use get "
                "with #page= or #section="
            )
        if size > room:
            raise Skip(f"the response reached {MULTI_GET_MAX_TOTAL_BYTES} bytes")
        return part
