"""The state every job of the facade shares: settings, environment, collections, the stores, the stat record."""

from __future__ import annotations

import threading
from typing import Any

from needle.core.collections import CollectionRegistry
from needle.core.contexts import ContextRegistry
from needle.core.file_records import FileRecords, records_file
from needle.core.files.multi_get import FileAccess
from needle.core.settings import Settings, load_settings
from needle.runtime.environment import Environment
from needle.runtime.loader import overrides_apply_somewhere
from needle.runtime.pool import GraphPool


class FacadeBase:
    """Needle's shared state for one configuration (see `needle.facade.api.Needle`)."""

    def __init__(
        self, settings: Settings | None = None, progress_bar: bool = False, environment: Environment | None = None
    ) -> None:
        """
        :param settings: Needle's settings; loaded from the environment when `None` (or the environment's).
        :param progress_bar: Whether indexing shows progress bars.
        :param environment: Share another Needle's stores (`other.environment.derive(settings)`); one store
            object per index folder in a process, since the embedded engine opens a folder once.
        :raises PipelineError: When the configuration's `set` names a component or parameter no graph has.
        """
        self.settings = settings or (environment.settings if environment else load_settings())
        if self.settings.set:
            overrides_apply_somewhere(self.settings.set)
        self.environment = environment or Environment(self.settings, progress_bar=progress_bar)
        self.collections = CollectionRegistry(self.settings.collections_file)
        self._pools: dict[tuple[str, str], GraphPool] = {}
        self._building: dict[tuple[str, str], threading.Lock] = {}
        self.contexts = ContextRegistry(self.settings.data_dir / "contexts.yml")
        self._lock = threading.Lock()
        # Index runs, optimising and backups take turns (a backup is a state no index run is halfway through).
        self._index_lock = threading.RLock()
        self._ingest_graph: dict[str, Any] | None = None
        self._expected_fingerprint: dict[str, Any] | None = None
        self._source_ids: tuple[tuple[Any, ...], list[str]] | None = None
        self._files: FileAccess | None = None
        # The watcher keeping this Needle's index live (`needle.lifecycle.watch`), shown by `status`; none by default.
        self.watcher: Any = None
        # The index run under way, as `status` shows it to other commands (`index_run`); `None` between runs.
        self._run: dict[str, Any] | None = None

    @property
    def store(self) -> Any:
        """The chunk store every graph of this Needle shares."""
        return self.environment.store("chunks")

    @property
    def file_store(self) -> Any:
        """The store of whole-file documents beside the chunks."""
        return self.environment.store("files")

    @property
    def records(self) -> FileRecords:
        """The stat record of the indexed files (`needle.core.file_records`)."""
        return FileRecords(records_file(self.settings))

    def close(self) -> None:
        """Release the stores (the embedded index unlocks); the graphs stay loaded and reopen them on next use."""
        self.environment.close()
