"""
The documents an open shard's searches returned, kept so that the next search that finds them does not read
their payload again.

Reading a hit's payload is most of what a search costs the engine: on a 10,287-chunk index the engine's
searches in a `search` took 1.90 ms a query with payloads and 0.35 ms with this cache (`python eval/hotpath.py
stages` times the engine's calls, docs/performance.md). Users search the same notes over and over, so a search asks the engine for ids and scores,
takes the documents it has seen from here and reads only the others (`EdgeDocumentStore._query`). The
engine's own payload memory settings change nothing here: what costs is reading and converting each point's
payload, not where its bytes lie.

Every write to the shard goes through `OpenShard.update`, which empties the cache before and after the
write; a search stores what it read only if no write began since it asked (`generation`), so no document
read before a write is kept after it. The cache holds at most `limit` documents per set of fields asked
for; past that the older half is dropped.
"""

import threading
from collections.abc import Hashable, Iterable
from itertools import islice
from typing import Any

from haystack import Document


class PayloadCache:
    """Documents (without score or vectors) by point id, per set of payload fields a search asked for."""

    def __init__(self, limit: int = 16384) -> None:
        """
        :param limit: Most documents kept per set of fields; 0 keeps none (every search reads every payload).
        """
        self.limit = limit
        self._by_fields: dict[Hashable, dict[Any, Document]] = {}
        self._lock = threading.Lock()
        self._generation = 0

    @property
    def generation(self) -> int:
        """Changes whenever a write begins or ends; read it before asking the engine for payloads."""
        return self._generation

    def found(self, fields: Hashable, point_ids: Iterable[Any]) -> dict[Any, Document]:
        """The kept documents of these points (those not kept are left out)."""
        kept = self._by_fields.get(fields)
        if not kept:
            return {}
        found = {}
        for point in point_ids:  # one lookup each: another thread's `keep` may drop entries meanwhile
            document = kept.get(point)
            if document is not None:
                found[point] = document
        return found

    def keep(self, fields: Hashable, generation: int, documents: dict[Any, Document]) -> None:
        """
        Keep documents read by a search that began at `generation`; nothing when a write began since.

        :param fields: The set of payload fields the documents carry.
        :param generation: `generation` as it was before the search asked the engine.
        :param documents: Point id → document.
        """
        if self.limit <= 0 or not documents:
            return
        with self._lock:
            if generation != self._generation:
                return
            kept = self._by_fields.setdefault(fields, {})
            kept.update(documents)
            if len(kept) > self.limit:
                for point in list(islice(kept, len(kept) - self.limit // 2)):
                    del kept[point]

    def asked(self) -> list[Hashable]:
        """The sets of payload fields searches asked for since the last write (those that keep documents)."""
        with self._lock:
            return list(self._by_fields)

    def kept(self, fields: Hashable) -> int:
        """How many documents are kept for one set of fields."""
        return len(self._by_fields.get(fields) or ())

    def invalidate(self) -> None:
        """Forget every document (a write begins or ended)."""
        with self._lock:
            self._generation += 1
            self._by_fields = {}

    def __len__(self) -> int:
        return sum(len(kept) for kept in self._by_fields.values())
