"""Keep the index live: watch every collection's folder and index what changed (`needle watch`, `--watch`).

`watchfiles` (Rust `notify`: inotify, FSEvents, ...) reports changes; a burst is coalesced until the folders
have been quiet for `watch.debounce_ms` (at most `watch.max_wait_ms`). Changes are kept to the files a
collection serves (its include globs and excludes, `needle.core.globs.CollectionRules`), and one worker thread
runs `Needle.index(names=[affected], paths=[changed])` for them, one run at a time, queued requests merged.
At start a full index run catches up with whatever changed while nobody watched; collections added to or
removed from `collections.yml` are picked up. A failing run is logged and shown by `status`; it never stops
the watcher. `needle watch` itself runs in `needle.owner.processes`.
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from needle.core.collections import Collection
from needle.core.globs import CollectionRules
from needle.core.requests import IndexRequest

logger = logging.getLogger(__name__)

# How often the watcher looks at `collections.yml` (and the stop signal) while the folders are quiet.
POLL_MS = 1000


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Watcher:
    """
    Watches a `Needle`'s collections and indexes their changes in one worker thread.

    Usage example:
    ```python
    watcher = Watcher(needle, debounce_ms=500)
    watcher.start()          # a full index run first, then changes as they come
    needle.status().watcher
    watcher.stop()
    ```
    """

    def __init__(self, needle: Any, debounce_ms: int = 500, max_wait_ms: int = 5000, catch_up: bool = True) -> None:
        """
        :param needle: The `Needle` whose index to keep live (it shows this watcher in `status`).
        :param debounce_ms: Quiet time after the last change before the changes are indexed.
        :param max_wait_ms: Longest a burst is coalesced before its changes are indexed anyway.
        :param catch_up: Index every collection once at start.
        :raises ValueError: When `debounce_ms` is not positive or `max_wait_ms` is below it.
        """
        if debounce_ms <= 0:
            raise ValueError(f"debounce_ms must be > 0, got {debounce_ms}")
        if max_wait_ms < debounce_ms:
            raise ValueError(f"max_wait_ms must be >= debounce_ms ({debounce_ms}), got {max_wait_ms}")
        self.needle = needle
        self.debounce_ms = debounce_ms
        self.max_wait_ms = max_wait_ms
        self.catch_up = catch_up
        self._stop = threading.Event()
        self._wake = threading.Condition()
        # Collection name → changed paths, or None for a whole run (collections to forget are in `_forget`).
        self._pending: dict[str, set[str] | None] = {}
        self._forget: set[str] = set()
        self._threads: list[threading.Thread] = []
        self._running = False
        self._busy = False
        self._last: dict[str, Any] = {"update": None, "error": None, "skipped": [], "report": None}

    @classmethod
    def from_settings(cls, needle: Any) -> Watcher:
        """A watcher configured by the `watch:` settings of the `Needle`."""
        watch = needle.settings.watch
        return cls(needle, debounce_ms=watch.debounce_ms, max_wait_ms=watch.max_wait_ms)

    # ---- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> None:
        """Watch and index in background threads; returns at once."""
        self._begin()
        watcher = threading.Thread(target=self._watch_loop, name="needle-watch", daemon=True)
        watcher.start()
        self._threads.append(watcher)

    def run(self) -> None:
        """Watch in this thread (indexing in a worker) until `stop()` or an interrupt."""
        self._begin()
        try:
            self._watch_loop()
        finally:
            self.stop()

    def _begin(self) -> None:
        self.needle.attach_watcher(self)
        self._running = True
        if self.catch_up:
            self.submit(list(self.needle.collections.load()), None)
        worker = threading.Thread(target=self._work_loop, name="needle-index-worker", daemon=True)
        worker.start()
        self._threads.append(worker)

    def stop(self, timeout: float = 60.0) -> None:
        """Stop watching; an index run under way finishes first (up to `timeout` seconds)."""
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=timeout)
        self._running = False

    def state(self) -> dict[str, Any]:
        """What `status` shows: running, queued collections, the last update, the last error and skipped files."""
        with self._wake:
            queued = len(self._pending) + len(self._forget)
        return {
            "running": self._running and not self._stop.is_set(),
            "indexing": self._busy,
            "queue": queued,
            "debounce_ms": self.debounce_ms,
            "last_update": self._last["update"],
            "last_error": self._last["error"],
            "last_skipped": self._last["skipped"],
            "last_report": self._last["report"],
        }

    # ---- the queue ----------------------------------------------------------------------------------
    def submit(self, names: list[str], paths: list[str] | None) -> None:
        """
        Queue an index run: of whole collections (`paths` None), or of these changed paths in them.

        :param names: Collections.
        :param paths: Changed files (absolute), or `None` for everything.
        """
        with self._wake:
            for name in names:
                pending = self._pending.get(name, set())
                if paths is None or pending is None:
                    self._pending[name] = None
                else:
                    pending.update(paths)
                    self._pending[name] = pending
            self._wake.notify_all()

    def forget(self, names: list[str]) -> None:
        """Queue deleting the chunks of collections no longer in `collections.yml`."""
        with self._wake:
            self._forget.update(names)
            for name in names:
                self._pending.pop(name, None)
            self._wake.notify_all()

    def _work_loop(self) -> None:
        while True:
            with self._wake:
                while not (self._pending or self._forget) and not self._stop.is_set():
                    self._wake.wait()
                if self._stop.is_set():
                    return
                pending, self._pending = self._pending, {}
                forget, self._forget = self._forget, set()
                self._busy = True
            try:
                self._index(pending, forget)
            finally:
                self._busy = False

    def _index(self, pending: dict[str, set[str] | None], forget: set[str]) -> None:
        """One turn of the worker: every failure is logged and kept for `status`, never raised."""
        try:
            for name in sorted(forget):
                deleted = self.needle.delete_chunks(name)
                logger.info("Collection %s left collections.yml: deleted its %s chunks", name, deleted)
            known = set(self.needle.collections.load())
            whole = sorted(n for n, paths in pending.items() if paths is None and n in known)
            scoped = {n: paths for n, paths in pending.items() if paths is not None and n in known}
            reports = []
            if whole:
                reports.append(self.needle.index(IndexRequest(collections=whole)))
            if scoped:
                paths = sorted(set().union(*scoped.values()))
                reports.append(self.needle.index(IndexRequest(collections=sorted(scoped), paths=paths)))
            if reports or forget:
                self._last["update"] = _now()
            if reports:
                self._last["skipped"] = [s.model_dump() for r in reports for s in r.skipped]
                self._last["report"] = {
                    key: sum(getattr(r, key) for r in reports)
                    for key in ("files_new", "files_changed", "files_removed", "chunks_embedded", "chunks_deleted")
                }
                logger.info("Indexed %s: %s", ", ".join(sorted(pending)), self._last["report"])
        except Exception as error:
            logger.error("Indexing %s failed: %s", ", ".join(sorted(pending)) or "nothing", error, exc_info=error)
            self._last["error"] = {"time": _now(), "message": str(error) or type(error).__name__}

    # ---- watching -----------------------------------------------------------------------------------
    def _watch_loop(self) -> None:
        """Watch the current collections' folders; start over when `collections.yml` changes them."""
        seen = self._collections()
        while not self._stop.is_set():
            try:
                self._watch(seen)
            except Exception as error:
                logger.error("Watching the collections failed: %s", error, exc_info=error)
                self._last["error"] = {"time": _now(), "message": f"watching: {error}"}
                self._stop.wait(POLL_MS / 1000)
            current = self._collections()
            if current != seen:
                added = [n for n in current if n not in seen or current[n] != seen[n]]
                removed = [n for n in seen if n not in current]
                if removed:
                    self.forget(removed)
                if added:
                    self.submit(added, None)
                logger.info("Collections changed: added %s, removed %s", added or "none", removed or "none")
                seen = current

    def _collections(self) -> dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]:
        try:
            loaded = self.needle.collections.load()
        except Exception as error:
            logger.error("Cannot read the collections: %s", error)
            return {}
        return {c.name: (c.root, tuple(c.include), tuple(c.exclude)) for c in loaded.values()}

    def _watch(self, seen: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]) -> None:
        """Watch until the collections change or the watcher stops."""
        import watchfiles

        collections = [Collection(name=n, root=r, include=list(i), exclude=list(e)) for n, (r, i, e) in seen.items()]
        roots = [c.root for c in collections if os.path.isdir(c.root)]
        if not roots:
            self._stop.wait(POLL_MS / 1000)
            return
        rules = {c.name: CollectionRules(c.include, c.exclude) for c in collections}
        data_dir = str(Path(self.needle.settings.data_dir).expanduser())
        for changes in watchfiles.watch(
            *roots,
            step=self.debounce_ms,
            debounce=self.max_wait_ms,
            stop_event=self._stop,
            rust_timeout=POLL_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
        ):
            affected: dict[str, set[str] | None] = {}
            for _change, path in changes:
                if path == data_dir or path.startswith(data_dir + os.sep):
                    continue
                for collection in collections:
                    hit = _served(path, collection, rules[collection.name])
                    if hit == "file":
                        scoped = affected.setdefault(collection.name, set())
                        if scoped is not None:
                            scoped.add(path)
                    elif hit == "folder":
                        affected[collection.name] = None
            for name, paths in affected.items():
                self.submit([name], None if paths is None else sorted(paths))
            if self._collections() != seen:
                return


def _served(path: str, collection: Collection, rules: CollectionRules) -> str | None:
    """
    What a changed path means for a collection: `file` (one of its notes), `folder` (a folder moved or
    deleted under it: its files are not reported one by one), or `None` (not its business).
    """
    root = collection.root
    if not path.startswith(root.rstrip(os.sep) + os.sep):
        return None
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    if rules.serves(rel):
        return "file"
    if rules.folder_excluded(rel) or rules.file_excluded(rel):
        return None
    if os.path.isdir(path) or (not os.path.exists(path) and not Path(path).suffix):
        return "folder"
    return None


__all__ = ["Watcher"]
