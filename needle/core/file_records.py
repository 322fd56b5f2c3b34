"""What each indexed file looked like when its chunks were written: the stat record of an index run.

A full index run compares every file's size, modification and change times and inode with this record
and reads only the files whose stat differs, so that a run after a few edits reads a few files. A row is
written only after the file's chunks are in the store, so a run that stops half-way leaves at worst files
to read again; a missing or deleted record is rebuilt by reading everything once. The record is one
SQLite file in the index folder (`files.sqlite`, write-ahead log), opened for each call.

Beside the stat, the record keeps why a file was skipped or indexed with a problem (a frontmatter field left
out, invalid UTF-8): `status` lists them until the file is read again without one.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from needle.core.settings import Settings

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    collection TEXT NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    checksum TEXT,
    PRIMARY KEY (collection, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS signatures (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS problems (
    collection TEXT NOT NULL,
    path TEXT NOT NULL,
    kind TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (collection, path, kind, reason)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS notes (
    collection TEXT NOT NULL,
    path TEXT NOT NULL,
    aliases TEXT NOT NULL,
    PRIMARY KEY (collection, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS links (
    collection TEXT NOT NULL,
    source TEXT NOT NULL,
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    link TEXT NOT NULL,
    PRIMARY KEY (collection, source, position)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_by_name ON links (collection, name);
"""
# Tables that describe a file and leave the record with it: the stat's `files`, the `problems`, and the link
# table (`notes` with their aliases, `links` with what each note links to; needle.core.link_table).
_PER_FILE_TABLES = ("files", "problems", "notes", "links")
# Rows per statement (SQLite binds at most 32766 variables).
_CHUNK = 500


class FileStat(NamedTuple):
    """The part of `os.stat` that tells whether a file may have changed."""

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @classmethod
    def of(cls, info: os.stat_result) -> FileStat:
        """The stat of an `os.stat` result."""
        return cls(info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)

    def as_dict(self) -> dict[str, int]:
        """The stat as a JSON-friendly dict (how sources carry it through a graph)."""
        return self._asdict()


# The stat of a file that was found but not read (unreadable): it never matches, so the file is tried again,
# and the record still knows the file, should it leave the index.
UNREAD = FileStat(-1, -1, -1, -1)


class FileRecord(NamedTuple):
    """One recorded file: its stat and the checksum of its text when its chunks were written."""

    stat: FileStat
    checksum: str | None


class FileRecords:
    """
    The stat record of the indexed files, per collection and path.

    Usage example:
    ```python
    records = FileRecords(index_dir / "files.sqlite")
    records.put([("notes", "a.md", FileStat.of(os.stat(p)), "9f2c...")])
    records.load("notes")  # {"a.md": FileRecord(stat=FileStat(...), checksum="9f2c...")}
    ```
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """
        :param path: The SQLite file; it and its folder are created on first write.
        """
        self.path = Path(path)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            connection = self._open()
        except sqlite3.DatabaseError:  # damaged: the record is a cache of what a run can read again
            self.reset()
            connection = self._open()
        with closing(connection), connection:
            yield connection

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=30)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.executescript(_SCHEMA)
        except sqlite3.DatabaseError:
            connection.close()
            raise
        return connection

    def reset(self) -> None:
        """Delete the record (a damaged one too): the next run reads every file once and records it anew."""
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def load(self, collection: str, paths: Iterable[str] | None = None) -> dict[str, FileRecord]:
        """
        The records of a collection (of the given paths only, when given).

        :returns: Path → record; files without a record are absent.
        """
        if not self.path.exists():
            return {}
        found: dict[str, FileRecord] = {}
        with self._connect() as db:
            if paths is None:
                rows = db.execute(
                    "SELECT path, size, mtime_ns, ctime_ns, inode, checksum FROM files WHERE collection = ?",
                    (collection,),
                )
                found.update((r[0], FileRecord(FileStat(*r[1:5]), r[5])) for r in rows)
                return found
            wanted = list(paths)
            for start in range(0, len(wanted), _CHUNK):
                part = wanted[start : start + _CHUNK]
                rows = db.execute(
                    "SELECT path, size, mtime_ns, ctime_ns, inode, checksum FROM files "
                    f"WHERE collection = ? AND path IN ({','.join('?' * len(part))})",
                    (collection, *part),
                )
                found.update((r[0], FileRecord(FileStat(*r[1:5]), r[5])) for r in rows)
        return found

    def put(self, rows: Iterable[tuple[str, str, FileStat, str | None]], keep: bool = False) -> int:
        """
        Record files as indexed: `(collection, path, stat, checksum)` each.

        :param keep: Leave a file's row as it is when it has one (only add rows).
        :returns: The number of rows given.
        """
        values = [(c, p, *stat, checksum) for c, p, stat, checksum in rows]
        if not values:
            return 0
        verb = "INSERT OR IGNORE" if keep else "INSERT OR REPLACE"
        with self._connect() as db:
            db.executemany(f"{verb} INTO files VALUES (?, ?, ?, ?, ?, ?, ?)", values)
        return len(values)

    def forget(self, keys: Iterable[tuple[str, str]]) -> int:
        """
        Drop the rows of files that left the index: `(collection, path)` each, with their links.

        :returns: The number of rows named.
        """
        values = list(keys)
        if not values or not self.path.exists():
            return 0
        with self._connect() as db:
            db.executemany("DELETE FROM files WHERE collection = ? AND path = ?", values)
            db.executemany("DELETE FROM notes WHERE collection = ? AND path = ?", values)
            db.executemany("DELETE FROM links WHERE collection = ? AND source = ?", values)
        return len(values)

    def forget_collection(self, collection: str | None = None) -> None:
        """Drop every row of a collection (of every collection when `None`): its files are read again."""
        if not self.path.exists():
            return
        with self._connect() as db:
            _drop_rows(db, collection)

    def mark_listed(self, collections: Iterable[str]) -> None:
        """
        Note that the index holds no file of these collections without a row here (a run compared the whole
        collections with the index): later runs find deleted files by the record, not by listing the index.
        """
        names = list(collections)
        if names:
            with self._connect() as db:
                db.executemany("INSERT OR REPLACE INTO signatures VALUES (?, '1')", [(f"listed:{n}",) for n in names])

    def unmark_listed(self, collections: Iterable[str]) -> None:
        """Undo `mark_listed`: the next full run compares these collections with the index in full again."""
        names = list(collections)
        if names and self.path.exists():
            with self._connect() as db:
                db.executemany("DELETE FROM signatures WHERE key = ?", [(f"listed:{n}",) for n in names])

    def listed(self, collection: str) -> bool:
        """Whether every indexed file of the collection has a row (see `mark_listed`)."""
        if not self.path.exists():
            return False
        with self._connect() as db:
            return (
                db.execute("SELECT 1 FROM signatures WHERE key = ?", (f"listed:{collection}",)).fetchone() is not None
            )

    def signed(self, key: str) -> bool:
        """Whether a signature is recorded under `key` (e.g. `collection:notes`: an index run took that collection)."""
        if not self.path.exists():
            return False
        with self._connect() as db:
            return db.execute("SELECT 1 FROM signatures WHERE key = ?", (key,)).fetchone() is not None

    def check_signature(self, key: str, value: str, collection: str | None = None) -> bool:
        """
        Keep the rows only while what produced them stays the same (the ingest graph, a collection's rules).

        :param key: What the signature is of, e.g. `graph` or `collection:notes`.
        :param value: Its signature now.
        :param collection: The collection whose rows a change invalidates; every row when `None`.
        :returns: Whether it changed (the rows were dropped, their files are read again).
        """
        with self._connect() as db:
            row = db.execute("SELECT value FROM signatures WHERE key = ?", (key,)).fetchone()
            if row is not None and row[0] == value:
                return False
            _drop_rows(db, collection)
            db.execute("INSERT OR REPLACE INTO signatures VALUES (?, ?)", (key, value))
            return row is not None

    def note_problems(
        self,
        handled: Iterable[tuple[str, str]],
        problems: Iterable[tuple[str, str, str, str]],
        listing: Iterable[str] = (),
    ) -> None:
        """
        Replace what is known of the problems of the files a batch handled.

        :param handled: `(collection, path)` of the files read, or gone, in the batch: their problems are forgotten first.
        :param problems: `(collection, path, kind, reason)` per problem found (`kind`: `skipped` or `warning`).
        :param listing: Collections listed in full: what their listing reported (kind `listed`) is forgotten first.
        """
        keys, rows, listed = list(handled), list(problems), list(listing)
        if not (keys or rows or listed):
            return
        with self._connect() as db:
            db.executemany("DELETE FROM problems WHERE collection = ? AND kind = 'listed'", [(n,) for n in listed])
            db.executemany("DELETE FROM problems WHERE collection = ? AND path = ?", keys)
            db.executemany("INSERT OR REPLACE INTO problems VALUES (?, ?, ?, ?)", rows)

    def problems(self, limit: int = 100) -> tuple[list[dict[str, str]], int]:
        """
        The files skipped, or indexed with a problem, by the runs so far (until a run reads them without one).

        :param limit: Most rows returned.
        :returns: `{"collection", "path", "kind", "reason"}` rows, sorted, and how many there are in all.
        """
        if not self.path.exists():
            return [], 0
        with self._connect() as db:
            total = int(db.execute("SELECT COUNT(*) FROM problems").fetchone()[0])
            rows = db.execute(
                "SELECT collection, path, kind, reason FROM problems ORDER BY collection, path LIMIT ?", (limit,)
            ).fetchall()
        return [dict(zip(("collection", "path", "kind", "reason"), row)) for row in rows], total

    def count(self) -> int:
        """How many files are recorded."""
        if not self.path.exists():
            return 0
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM files").fetchone()[0])


def split_key(file_id: str) -> tuple[str, str]:
    """`collection:path` as `(collection, path)`."""
    collection, _, path = file_id.partition(":")
    return collection, path


def _drop_rows(db: sqlite3.Connection, collection: str | None) -> None:
    """Drop a collection's rows and its `listed` mark (every collection's when `None`)."""
    if collection is None:
        for table in _PER_FILE_TABLES:
            db.execute(f"DELETE FROM {table}")
        db.execute("DELETE FROM signatures WHERE key LIKE 'listed:%'")
    else:
        for table in _PER_FILE_TABLES:
            db.execute(f"DELETE FROM {table} WHERE collection = ?", (collection,))
        db.execute("DELETE FROM signatures WHERE key = ?", (f"listed:{collection}",))


__all__ = ["UNREAD", "FileRecord", "FileRecords", "FileStat", "records_file", "split_key"]


def records_file(settings: Settings) -> Path:
    """The stat record of the indexed files, beside the index (`<index_dir>/files.sqlite`)."""
    return settings.index_dir / "files.sqlite"
