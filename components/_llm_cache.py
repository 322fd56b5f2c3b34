"""A small SQLite cache for LLM answers (query expansions, rerank scores), and helpers the LLM components share."""

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from haystack import logging
from haystack.core.serialization import component_from_dict, import_class_by_name

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_cache (
    cache_key TEXT PRIMARY KEY,
    cache_type TEXT NOT NULL,
    result_json TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""
_INDEX = "CREATE INDEX IF NOT EXISTS llm_cache_created_at ON llm_cache (created_at)"
# SQLite's historical limit on bound parameters per statement is 999.
_BATCH = 500


def cache_key(kind: str, query: str, model: str, extra: str = "") -> str:
    """
    The cache key of one answer: the SHA-256 of the JSON array `[kind, query, model, extra]`.

    JSON keeps the four parts apart, so a colon inside a query cannot make two keys collide.
    """
    return hashlib.sha256(json.dumps([kind, query, model, extra], ensure_ascii=False).encode()).hexdigest()


def model_label(obj: Any) -> str:
    """
    The model a component answers with, for cache keys: its `model` or `model_name` attribute, that of the
    chat generator or ranker it wraps, or else its class name.
    """
    for attr in ("model", "model_name"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return value
    for attr in ("chat_generator", "ranker"):
        inner = getattr(obj, attr, None)
        if inner is not None and inner is not obj:
            return model_label(inner)
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def load_component(value: Any, name: str) -> Any:
    """A component given as an instance or as its serialised `{"type", "init_parameters"}` mapping."""
    if not isinstance(value, dict):
        return value
    if "type" not in value:
        raise ValueError(f"{name} must be a component or a mapping with 'type', got {value}")
    return component_from_dict(import_class_by_name(value["type"]), value, name)


class LLMCache:
    """
    Caches LLM answers as JSON in one SQLite file, keyed by kind, query, model and an extra string.

    Entries older than `ttl_hours` count as missing and `prune()` deletes them. Each call opens its own
    connection (cheap for SQLite), so threads never share one; the database runs in WAL mode with a busy
    timeout, so concurrent processes read while one writes and writers wait for each other briefly
    instead of failing. A cache must never break a search: any SQLite error is logged and treated as a
    miss (or a skipped write). `path=None` disables caching.

    Usage example:
    ```python
    cache = LLMCache("~/.cache/needle/llm.sqlite", ttl_hours=168)
    cache.put("expansion", "docker networking", "qwen3:1.7b", [{"kind": "lex", "text": "docker network"}])
    cache.get("expansion", "docker networking", "qwen3:1.7b")
    ```
    """

    def __init__(self, path: str | None, ttl_hours: float = 168, busy_timeout: float = 5.0) -> None:
        """
        Create the cache; the file and its parent folders are created on first use.

        :param path: The SQLite file, `~` expanded; `None` disables caching.
        :param ttl_hours: How long an entry stays valid, in hours.
        :param busy_timeout: Seconds a writer waits for another writer's lock before giving up.
        :raises ValueError: If `ttl_hours` or `busy_timeout` is not > 0.
        """
        if ttl_hours <= 0:
            raise ValueError(f"ttl_hours must be > 0, got {ttl_hours}")
        if busy_timeout <= 0:
            raise ValueError(f"busy_timeout must be > 0, got {busy_timeout}")
        self.path = path
        self.ttl_hours = ttl_hours
        self.busy_timeout = busy_timeout
        self._ready = False
        # The first connection of each thread would otherwise race to switch the file to WAL and create the
        # table; a loser got "database is locked" and its write was skipped.
        self._setup_lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether the cache stores anything."""
        return self.path is not None

    def _connect(self) -> sqlite3.Connection:
        assert self.path is not None
        file = Path(self.path).expanduser()
        if not self._ready:
            file.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(file, timeout=self.busy_timeout, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            if not self._ready:
                with self._setup_lock:
                    if not self._ready:
                        self._set_up(conn)
                        self._ready = True
            conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _set_up(self, conn: sqlite3.Connection) -> None:
        """Switch the file to WAL and create the table; another process doing the same is waited for."""
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(_SCHEMA)
                conn.execute(_INDEX)
                return
            except sqlite3.OperationalError as error:
                # Switching the journal mode can fail with "database is locked" while another process opens the
                # file; retry until the deadline.
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _cutoff(self) -> float:
        return time.time() - self.ttl_hours * 3600.0

    def get(self, kind: str, query: str, model: str, extra: str = "") -> Any | None:
        """
        Look one answer up.

        :returns: The stored JSON value, or `None` when missing, expired or caching is disabled.
        """
        return self.get_many(kind, query, model, [extra]).get(extra)

    def get_many(self, kind: str, query: str, model: str, extras: Iterable[str]) -> dict[str, Any]:
        """
        Look up the answers for one query and many extras (e.g. one rerank score per document checksum).

        :returns: The valid hits, by extra; extras without a valid entry are absent.
        """
        if not self.enabled:
            return {}
        keys = {cache_key(kind, query, model, extra): extra for extra in extras}
        found: dict[str, Any] = {}
        try:
            conn = self._connect()
            try:
                cutoff = self._cutoff()
                batch = list(keys)
                for start in range(0, len(batch), _BATCH):
                    part = batch[start : start + _BATCH]
                    rows = conn.execute(
                        f"SELECT cache_key, result_json FROM llm_cache WHERE created_at >= ? "
                        f"AND cache_key IN ({','.join('?' * len(part))})",
                        [cutoff, *part],
                    )
                    for key, value in rows:
                        found[keys[key]] = json.loads(value)
            finally:
                conn.close()
        except (sqlite3.Error, ValueError) as error:
            logger.warning("LLM cache {path} unreadable, treated as a miss: {error}", path=self.path, error=error)
            return {}
        return found

    def put(self, kind: str, query: str, model: str, value: Any, extra: str = "") -> None:
        """Store one JSON-serialisable answer (replacing an older one under the same key)."""
        self.put_many(kind, query, model, {extra: value})

    def put_many(self, kind: str, query: str, model: str, values: dict[str, Any]) -> None:
        """
        Store many answers for one query in one transaction.

        :param values: JSON-serialisable answers, by extra.
        """
        if not self.enabled or not values:
            return
        now = time.time()
        rows = [(cache_key(kind, query, model, extra), kind, json.dumps(v), now) for extra, v in values.items()]
        try:
            conn = self._connect()
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR REPLACE INTO llm_cache VALUES (?, ?, ?, ?)", rows)
                conn.execute("COMMIT")
            finally:
                conn.close()
        except sqlite3.Error as error:
            logger.warning("LLM cache {path} not written: {error}", path=self.path, error=error)

    def prune(self) -> int:
        """
        Delete expired entries.

        :returns: How many entries were deleted.
        """
        if not self.enabled:
            return 0
        try:
            conn = self._connect()
            try:
                return conn.execute("DELETE FROM llm_cache WHERE created_at < ?", (self._cutoff(),)).rowcount
            finally:
                conn.close()
        except sqlite3.Error as error:
            logger.warning("LLM cache {path} not pruned: {error}", path=self.path, error=error)
            return 0
