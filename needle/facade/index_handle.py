"""The index one facade works on: its settings, stores, collection list, contexts, stat record and writers' lock."""

from __future__ import annotations

import threading
from typing import Any

from needle.core.collections import CollectionRegistry
from needle.core.contexts import ContextRegistry
from needle.core.file_records import FileRecords, records_file
from needle.core.settings import Settings
from needle.runtime.environment import Environment


class IndexHandle:
    """
    What every job of the facade reads and writes: one configuration's index and the files beside it.

    Index runs, optimising, checks and backups take turns on `lock` (a backup is a state no index run is halfway
    through); searches never take it.
    """

    def __init__(self, settings: Settings, environment: Environment) -> None:
        """
        :param settings: Needle's settings.
        :param environment: The stores (one object per index folder in a process) and models of the graphs.
        """
        self.settings = settings
        self.environment = environment
        self.collections = CollectionRegistry(settings.collections_file)
        self.contexts = ContextRegistry(settings.data_dir / "contexts.yml")
        self.lock = threading.RLock()

    @property
    def store(self) -> Any:
        """The chunk store every graph shares."""
        return self.environment.store("chunks")

    @property
    def file_store(self) -> Any:
        """The store of whole-file documents beside the chunks."""
        return self.environment.store("files")

    @property
    def stores(self) -> tuple[Any, Any]:
        """The chunk store and the whole-file store."""
        return self.store, self.file_store

    @property
    def records(self) -> FileRecords:
        """The stat record of the indexed files (`needle.core.file_records`)."""
        return FileRecords(records_file(self.settings))

    def close(self) -> None:
        """Release the stores (the embedded index unlocks); the graphs reopen them on next use."""
        self.environment.close()
