"""Whether the chunk store, the file store and the stat record tell the same story (`needle check`).

A full index run reads only the files whose stat differs from the record (`needle.core.file_records`), so data
lost from a store behind the record's back (a segment folder deleted, a write-ahead log cut short) would
never come back: every file is "unchanged". `compare` lists, per file (`collection:path`):

- **lost**: a file the record says was indexed whose data is not all there: chunks missing (their
  positions have gaps), no chunk left beside its whole-file document, no whole-file document beside its
  chunks, or nothing at all while the file on disk has a body to chunk;
- **orphaned**: chunks or whole-file documents of a file that the record does not know and the disk no
  longer has (an index run would never look at them again).

`forget` makes the next `needle index` heal both: the record's rows of lost files are dropped (they are read
again) and the collections holding orphans lose their `listed` mark (the next run compares them in full
with the index and deletes what no file backs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from needle.core.file_records import UNREAD, FileRecords, split_key
from needle.core.schema import FILE_ID

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n.*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_TEXT_SUFFIXES = (".md", ".markdown", ".txt")


@dataclass
class Findings:
    """What `compare` found: `collection:path` → what is wrong, for lost and for orphaned files."""

    lost: dict[str, str] = field(default_factory=dict)
    orphaned: dict[str, str] = field(default_factory=dict)

    def problems(self) -> list[str]:
        """One line per file, lost first, sorted."""
        return [f"lost: {key}: {what}" for key, what in sorted(self.lost.items())] + [
            f"orphaned: {key}: {what}" for key, what in sorted(self.orphaned.items())
        ]


def compare(chunk_store: Any, file_store: Any, records: FileRecords, roots: dict[str, str]) -> Findings:
    """
    Compare the two stores with the stat record, file by file, for the listed collections.

    :param chunk_store: The store of chunks (`list_documents_meta` with the file id and `chunk_index`).
    :param file_store: The store of whole-file documents (`count_values(FILE_ID)`).
    :param records: The stat record of indexed files.
    :param roots: Listed collection name → its root folder; files of other collections are left to `status`.
    :returns: The lost and orphaned files.
    """
    positions: dict[str, set[int]] = {}
    for row in chunk_store.list_documents_meta(fields=[FILE_ID, "chunk_index", "collection"]):
        meta = row["meta"]
        if meta.get("collection") in roots:
            positions.setdefault(str(meta.get(FILE_ID, "")), set()).add(int(meta.get("chunk_index", 0)))
    whole = {key for key in file_store.count_values(FILE_ID) if key.split(":", 1)[0] in roots}
    recorded: dict[str, bool] = {}  # key → whether the file was read (not only seen)
    for name in roots:
        for path, record in records.load(name).items():
            recorded[f"{name}:{path}"] = record.stat != UNREAD
    findings = Findings()
    for key in sorted(set(positions) | whole | set(recorded)):
        chunks, has_file = positions.get(key, set()), key in whole
        if key not in recorded:
            if not _on_disk(key, roots):
                findings.orphaned[key] = _held(len(chunks), has_file)
            continue
        if not recorded[key]:
            continue  # seen but not read: it keeps what the index had, and is tried again
        gaps = sorted(set(range(max(chunks) + 1)) - chunks) if chunks else []
        if gaps:
            findings.lost[key] = f"{len(gaps)} of its chunks missing"
        elif has_file and not chunks:
            findings.lost[key] = "all its chunks missing"
        elif chunks and not has_file:
            findings.lost[key] = "its whole-file document missing"
        elif not chunks and not has_file and _has_body(key, roots):
            findings.lost[key] = "none of its chunks nor its whole-file document in the index"
    return findings


def forget(findings: Findings, records: FileRecords) -> None:
    """
    Make the next `needle index` heal what `compare` found: lost files are read again, orphans deleted.

    :param findings: What `compare` found.
    :param records: The stat record to change.
    """
    records.forget(split_key(key) for key in findings.lost)
    records.unmark_listed({split_key(key)[0] for key in findings.orphaned})


def _held(chunks: int, has_file: bool) -> str:
    held = [f"{chunks} chunks"] if chunks else []
    return f"{' and '.join(held + (['its whole-file document'] if has_file else []))} of a file no longer on disk"


def _on_disk(key: str, roots: dict[str, str]) -> bool:
    name, _, path = key.partition(":")
    return (Path(roots[name]).expanduser() / path).is_file()


def _has_body(key: str, roots: dict[str, str]) -> bool:
    """Whether a file on disk has text to chunk: anything but blanks after its frontmatter (documents: any)."""
    name, _, path = key.partition(":")
    file = Path(roots[name]).expanduser() / path
    if not file.is_file():
        return False  # deleted: the next run drops its row
    if not path.lower().endswith(_TEXT_SUFFIXES):
        return True
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return bool(_FRONTMATTER.sub("", text, count=1).strip())


__all__ = ["Findings", "compare", "forget"]
