"""The settings a process builds Needle's graphs with, and the stores of its index.

A graph file leaves out what depends on the machine: where the index lives, the models' folders, the model
and LLM servers. Its components and stores read those from Needle's settings when they are built
(`needle.core.settings.active_settings`): a graph loaded by plain Haystack (`Pipeline.loads(text)`) reads the
configuration of its process, and one loaded by Needle (`needle.runtime.loader.load_pipeline`) the settings of
its `Environment`, which tests, `--config` and a derived Needle pass around. The environment also hands the
application the engines of the index's two stores (`store`), the same objects every graph of the process gets
for that location, and releases them (`close`: the embedded index unlocks).
"""

from __future__ import annotations

import threading
from typing import Any

from haystack_integrations.document_stores.needle.needle_document_store import close_index, index_store
from needle.core.schema import STORE_ROLES
from needle.core.settings import Settings


class Environment:
    """
    The settings Needle builds its graphs with, and the stores of their index.

    Usage example:
    ```python
    env = Environment(load_settings())
    pipeline = load_pipeline("query", env)  # its stores and models as `env.settings` say
    env.close()  # releases the stores (the embedded index unlocks)
    ```
    """

    def __init__(self, settings: Settings, progress_bar: bool = False) -> None:
        """
        :param settings: Needle's settings.
        :param progress_bar: Whether document embedders show progress bars (a terminal is attached).
        """
        self.settings = settings
        self.progress_bar = progress_bar
        self._stores: dict[str, Any] = {}
        self._lock = threading.RLock()

    def derive(self, settings: Settings) -> Environment:
        """
        An environment with other settings (another LLM server, say) that shares this one's stores.

        :param settings: The new settings; their data folder and store must be this environment's.
        :raises ValueError: When they point at another index.
        """
        if (settings.data_dir, settings.store) != (self.settings.data_dir, self.settings.store):
            raise ValueError("a derived environment must use the same index (data_dir and store)")
        derived = Environment(settings, self.progress_bar)
        derived._stores, derived._lock = self._stores, self._lock
        return derived

    def store(self, role: str) -> Any:
        """
        The engine of one store of the index (`chunks` or `files`): the object every graph of this process that
        names the store gets (created on first use, opened lazily by the store).

        :raises ValueError: On an unknown role.
        """
        if role not in STORE_ROLES:
            raise ValueError(f"unknown store {role!r}; graphs name one of: {', '.join(STORE_ROLES)}")
        with self._lock:
            if role not in self._stores:
                self._stores[role] = index_store(role, self.settings)
            return self._stores[role]

    def open_stores(self) -> list[Any]:
        """The stores this environment has handed out so far."""
        with self._lock:
            return list(self._stores.values())

    def close(self) -> None:
        """
        Release the index's stores, those of every graph of this process included (the embedded index
        unlocks); the same objects reopen on next use.
        """
        close_index(self.settings)


__all__ = ["Environment"]
