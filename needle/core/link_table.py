"""The link table: what each indexed note links to, kept beside the stat record of the indexed files.

An index run writes, for each file it reads, the file's aliases (`notes`) and its links as written (`links`:
line, target text, heading, block, embed, display text); a file that leaves the index (deleted, renamed,
moved, its collection removed) loses its rows with its stat row (`FileRecords.forget`). Links are stored as
written and resolved when they are read (`needle.core.links.Resolver`), so a note renamed or deleted changes
what the other notes' links point to without reading them again, and a link to a note that does not exist
yet resolves once that note is indexed.

The table lives in the stat record's SQLite file (`files.sqlite` in the index folder) rather than in the
chunks' payload: backlinks are a lookup by target name (an index on it) instead of a scan of every chunk,
the table is updated in the same step that records which files were read, and a record deleted or damaged
is rebuilt, links included, by the run that reads every file again.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from typing import Any, NamedTuple

from needle.core.file_records import FileRecords
from needle.core.links import Link, Note, Resolver, stem_of

_CHUNK = 500


class ResolvedLink(NamedTuple):
    """A link of the note at `source`, with the note it resolves to (`None`: unresolved)."""

    collection: str
    source: str
    link: Link
    target: str | None

    def as_dict(self) -> dict[str, Any]:
        """The link as a JSON-friendly dict (`target` the resolved path, `written` the target as written)."""
        fields = self.link.as_dict()
        fields["written"] = fields.pop("target")
        return {"collection": self.collection, "source": self.source, "target": self.target, **fields}


def _name(link: Link) -> str:
    """The key backlinks are looked up by: the target's file name without `.md`, case-folded."""
    return posixpath.basename(stem_of(link.target.strip().strip("/"))) if link.target else ""


class LinkTable(FileRecords):
    """
    Notes' aliases and links, per collection and path, in the stat record's SQLite file.

    Usage example:
    ```python
    table = LinkTable(index_dir / "files.sqlite")
    table.put_notes([("notes", "Home.md", [], find_links(text))])
    table.backlinks("notes", "Recipes/Snert.md")  # [ResolvedLink(source="Home.md", ...), ...]
    ```
    """

    def put_notes(self, rows: Iterable[tuple[str, str, list[str], list[Link]]]) -> int:
        """
        Replace the aliases and links of the files read: `(collection, path, aliases, links)` each.

        :returns: The number of links written.
        """
        values = list(rows)
        if not values:
            return 0
        written = 0
        with self._connect() as db:
            for start in range(0, len(values), _CHUNK):
                part = values[start : start + _CHUNK]
                db.executemany("DELETE FROM links WHERE collection = ? AND source = ?", [(c, p) for c, p, _, _ in part])
                db.executemany(
                    "INSERT OR REPLACE INTO notes VALUES (?, ?, ?)", [(c, p, json.dumps(a)) for c, p, a, _ in part]
                )
                link_rows = [
                    (collection, path, position, _name(link), json.dumps(link.as_dict()))
                    for collection, path, _, links in part
                    for position, link in enumerate(links)
                ]
                db.executemany("INSERT INTO links VALUES (?, ?, ?, ?, ?)", link_rows)
                written += len(link_rows)
        return written

    def notes(self, collection: str) -> list[Note]:
        """The collection's notes with their aliases: what links resolve against."""
        if not self.path.exists():
            return []
        with self._connect() as db:
            rows = db.execute("SELECT path, aliases FROM notes WHERE collection = ?", (collection,)).fetchall()
        return [Note(path, tuple(json.loads(aliases))) for path, aliases in rows]

    def collections(self) -> list[str]:
        """The collections that have notes in the table."""
        if not self.path.exists():
            return []
        with self._connect() as db:
            return [row[0] for row in db.execute("SELECT DISTINCT collection FROM notes ORDER BY collection")]

    def resolver(self, collection: str) -> Resolver:
        """A resolver over the collection's notes as indexed now."""
        return Resolver(self.notes(collection))

    def outgoing(self, collection: str, path: str, resolver: Resolver | None = None) -> list[ResolvedLink]:
        """The links the note at `path` holds, in the order they are written, each resolved."""
        if not self.path.exists():
            return []
        with self._connect() as db:
            rows = db.execute(
                "SELECT link FROM links WHERE collection = ? AND source = ? ORDER BY position", (collection, path)
            ).fetchall()
        resolver = resolver or self.resolver(collection)
        out = []
        for (raw,) in rows:
            link = _link(raw)
            out.append(ResolvedLink(collection, path, link, resolver.resolve(link, path)))
        return out

    def backlinks(self, collection: str, path: str, resolver: Resolver | None = None) -> list[ResolvedLink]:
        """The links of other notes (and the note's own heading links) that resolve to the note at `path`."""
        if not self.path.exists():
            return []
        resolver = resolver or self.resolver(collection)
        aliases = next((note.aliases for note in resolver.notes if note.path == path), ())
        names = {posixpath.basename(stem_of(path))} | {posixpath.basename(stem_of(alias.strip())) for alias in aliases}
        marks = ", ".join("?" for _ in names)
        with self._connect() as db:
            rows = db.execute(
                f"SELECT source, link FROM links WHERE collection = ? AND (name IN ({marks}) OR (name = '' AND "
                "source = ?)) ORDER BY source, position",
                (collection, *names, path),
            ).fetchall()
        out = []
        for source, raw in rows:
            link = _link(raw)
            if resolver.resolve(link, source) == path:
                out.append(ResolvedLink(collection, source, link, path))
        return out

    def backlink_count(self, collection: str, path: str) -> int:
        """How many links of the collection's notes resolve to the note at `path`."""
        return len(self.backlinks(collection, path))


def _link(raw: str) -> Link:
    fields = json.loads(raw)
    return Link(**fields)


__all__ = ["LinkTable", "ResolvedLink"]
