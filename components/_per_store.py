"""One object per store object in a process: what several components and pooled graph instances share."""

from __future__ import annotations

import threading
import weakref
from typing import Any, ClassVar, TypeVar

_Self = TypeVar("_Self", bound="PerStore")


class PerStore:
    """
    A base for what is read from one store and kept once per store object (`IndexVocabulary`,
    `IndexedFiles`): `of(store)` gives the one instance of the subclass for that store, made on first use.
    A server runs several instances of each graph (`needle.runtime.pool`), and one store object per index
    (`needle.runtime.environment`), so keying by store makes one read per index instead of one per component.
    """

    _shared: ClassVar[weakref.WeakKeyDictionary[Any, Any]]
    _shared_lock: ClassVar[threading.Lock]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._shared = weakref.WeakKeyDictionary()
        cls._shared_lock = threading.Lock()

    def __init__(self, store: Any) -> None:
        self.store = store

    @classmethod
    def of(cls: type[_Self], store: Any) -> _Self:
        """The one instance for a store object in this process (a new one for a store that cannot be shared)."""
        with cls._shared_lock:
            try:
                found = cls._shared.get(store)
                if found is None:
                    found = cls._shared[store] = cls(store)
            except TypeError:  # not weakly referenceable or not hashable: this caller's own
                found = cls(store)
            return found


__all__ = ["PerStore"]
