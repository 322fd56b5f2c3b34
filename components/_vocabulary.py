"""What an index holds that a question may name (collections, frontmatter fields, folders), read once per store.

`SelfQueryExtractor` needs the indexed collections, frontmatter field names and folders to read `in:NAME`,
`field:value` and "journal entries" out of a question. Reading them scrolls the whole-file store (about
0.3 s for 7,500 files), so the result is kept, and kept once per store object rather than once per
component: a server runs several instances of each graph (`needle.runtime.pool`), and each used to pay that scroll
on its own first search. One store object per index in a process (`needle.runtime.environment`) makes it one read
per index, shared by every graph instance and every graph that reads the same store.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from haystack_integrations.components.needle._per_store import PerStore

_TTL_SECONDS = 300.0
_COUNT_CHECK_SECONDS = 5.0  # a count costs about 0.5 ms: looked at no more often than this


class IndexVocabulary(PerStore):
    """
    The collections, frontmatter field names and folders of one whole-file store, read again when its document
    count changed (looked at most every 5 s) or after 5 minutes. Thread-safe; get the shared one with `of`.

    Usage example:
    ```python
    collections, fields, folders = IndexVocabulary.of(file_store).read()
    ```
    """

    def __init__(self, store: Any) -> None:
        """:param store: A store with `count_documents()` and `list_documents_meta(fields=...)`."""
        super().__init__(store)
        self.reads = 0  # how many times the store was scrolled (the costly part)
        # (read at, collections, fields, folders, document count, count checked at)
        self._cached: tuple[float, set[str], set[str], set[str], int, float] | None = None
        self._lock = threading.Lock()

    def read(self, check_count: bool = False) -> tuple[set[str], set[str], set[str]]:
        """
        The collections, field names and folders (sets not to be changed by the caller).

        :param check_count: Look at the document count now, even within 5 s of the last look (a new reader's
            first read sees what was written just before it, as a fresh read would).
        """
        with self._lock:
            now = time.monotonic()
            cached = self._cached
            if cached is not None and now - cached[0] >= _TTL_SECONDS:
                cached = None  # too old: read again whatever the count says
            if cached is not None and not check_count and now - cached[5] < _COUNT_CHECK_SECONDS:
                return cached[1], cached[2], cached[3]
            count = self.store.count_documents()
            if cached is None or cached[4] != count:
                self._cached = (now, *self._scroll(), count, now)
            else:
                self._cached = (*cached[:5], now)
            return self._cached[1], self._cached[2], self._cached[3]

    def _scroll(self) -> tuple[set[str], set[str], set[str]]:
        self.reads += 1
        collections: set[str] = set()
        fields: set[str] = set()
        folders: set[str] = set()
        for row in self.store.list_documents_meta(fields=["collection", "frontmatter", "folders"]):
            collections.add(str(row["meta"].get("collection", "")))
            frontmatter = row["meta"].get("frontmatter")
            if isinstance(frontmatter, dict):
                fields.update(k for k, v in frontmatter.items() if isinstance(v, (str, int, float, bool)))
            folders.update(str(f) for f in row["meta"].get("folders") or [])
        collections.discard("")
        return collections, fields, folders


__all__ = ["IndexVocabulary"]
