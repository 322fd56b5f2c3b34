"""What an index holds that a question may name (collections, fields and their values, folders, tags), read once per store.

`SelfQueryExtractor` reads a filter out of a question only when its words name something the index holds: the
indexed collections (`in:NAME`), frontmatter fields and their values (`status:draft`), folders ("journal
entries") and tags (`#homelab`). Reading them scrolls the whole-file store (about
0.3 s for 7,500 files), so the result is kept, and kept once per store object rather than once per
component: a server runs several instances of each graph (`needle.runtime.pool`), and each used to pay that scroll
on its own first search. One store object per index in a process (`needle.runtime.environment`) makes it one read
per index, shared by every graph instance and every graph that reads the same store.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from haystack_integrations.components.needle._per_store import PerStore

_TTL_SECONDS = 300.0
_COUNT_CHECK_SECONDS = 5.0  # a count costs about 0.5 ms: looked at no more often than this


@dataclass(frozen=True)
class Holdings:
    """What one index holds that a question may name (sets not to be changed by the reader)."""

    collections: set[str] = field(default_factory=set)
    fields: set[str] = field(default_factory=set)  # frontmatter field names with scalar values
    folders: set[str] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)
    values: dict[str, set[str]] = field(default_factory=dict)  # field name -> its values, lower-cased


class IndexVocabulary(PerStore):
    """
    The collections, frontmatter fields and their values, folders and tags of one whole-file store, read again
    when its document count changed (looked at most every 5 s) or after 5 minutes. Thread-safe; get the shared
    one with `of`.

    Usage example:
    ```python
    collections, fields, folders = IndexVocabulary.of(file_store).read()
    IndexVocabulary.of(file_store).holdings().tags
    ```
    """

    def __init__(self, store: Any) -> None:
        """:param store: A store with `count_documents()` and `list_documents_meta(fields=...)`."""
        super().__init__(store)
        self.reads = 0  # how many times the store was scrolled (the costly part)
        # (read at, what the index holds, document count, count checked at)
        self._cached: tuple[float, Holdings, int, float] | None = None
        self._lock = threading.Lock()

    def read(self, check_count: bool = False) -> tuple[set[str], set[str], set[str]]:
        """
        The collections, field names and folders (sets not to be changed by the caller).

        :param check_count: Look at the document count now, even within 5 s of the last look (a new reader's
            first read sees what was written just before it, as a fresh read would).
        """
        held = self.holdings(check_count)
        return held.collections, held.fields, held.folders

    def holdings(self, check_count: bool = False) -> Holdings:
        """
        Everything a question may name, as `read` keeps it.

        :param check_count: As for `read`.
        """
        with self._lock:
            now = time.monotonic()
            cached = self._cached
            if cached is not None and now - cached[0] >= _TTL_SECONDS:
                cached = None  # too old: read again whatever the count says
            if cached is not None and not check_count and now - cached[3] < _COUNT_CHECK_SECONDS:
                return cached[1]
            count = self.store.count_documents()
            if cached is None or cached[2] != count:
                self._cached = (now, self._scroll(), count, now)
            else:
                self._cached = (*cached[:3], now)
            return self._cached[1]

    def _scroll(self) -> Holdings:
        self.reads += 1
        held = Holdings()
        for row in self.store.list_documents_meta(fields=["collection", "frontmatter", "folders", "tags"]):
            meta = row["meta"]
            held.collections.add(str(meta.get("collection", "")))
            frontmatter = meta.get("frontmatter")
            if isinstance(frontmatter, dict):
                for name, value in frontmatter.items():
                    if isinstance(value, (str, int, float, bool)):
                        held.fields.add(name)
                        held.values.setdefault(name, set()).add(str(value).lower())
            held.folders.update(str(f) for f in meta.get("folders") or [])
            held.tags.update(str(t).lower() for t in meta.get("tags") or [])
        held.collections.discard("")
        return held


__all__ = ["Holdings", "IndexVocabulary"]
