"""Needle's index as a Haystack document store: the chunks or the whole files, wherever Needle's settings keep them.

A graph names it like any Haystack store, by type and init parameters:

    document_store:
      type: haystack_integrations.document_stores.needle.needle_document_store.NeedleDocumentStore
      init_parameters: {role: chunks}

Its `role` says which half of the index it is (`chunks`, or `files`: one document per whole file, kept apart
so each level has its own BM25 statistics). Where the index lives is left out, so the same file runs on a
laptop and against a server: the embedded engine in the data folder (`data_dir`), or the Qdrant server of
`store.url` (collection `store.collection`, plus `_files` for the whole files), as Needle's settings say
(`config/needle.yml`, `NEEDLE_CONFIG`, `NEEDLE_*` variables). A location given in the YAML (`path`, or `url`
and `collection` with an `api_key` as a `Secret` environment reference) wins. How the index holds its vectors
and the size of the dense vectors come from the settings too.

The engine behind a location opens once per process: every `NeedleDocumentStore` of that location, in any
graph loaded by this process, hands its components the same engine object (`engine`), since the embedded
engine locks its folder to the first object that opens it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from haystack import default_from_dict, default_to_dict
from haystack.dataclasses import Document
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret, deserialize_secrets_inplace

from haystack_integrations.document_stores.needle.protocol import BestScore, ManagedStore
from needle.core.checks import QueryVector
from needle.core.schema import STORE_ROLES

if TYPE_CHECKING:
    from needle.core.settings import Settings

_ENGINES: dict[tuple[str, ...], dict[str, ManagedStore]] = {}
_ENGINES_LOCK = threading.Lock()


class NeedleDocumentStore:
    """
    One half of Needle's index (`chunks` or `files`), located by Needle's settings unless the YAML says where.

    It implements Needle's store interfaces (`SearchableStore`, `ManagedStore`) by handing every call to the
    engine of its location (`EdgeDocumentStore` in a folder, `QdrantServerDocumentStore` on a server), one
    object per location in a process; nothing opens or connects before the first call.

    Usage example:
    ```python
    store = NeedleDocumentStore(role="chunks")  # the index of `needle index`, as the settings locate it
    store.count_documents()
    NeedleDocumentStore(role="files", url="http://qdrant:6333", collection="notes")  # a server, named here
    ```
    """

    def __init__(
        self,
        role: str = "chunks",
        path: str | None = None,
        url: str | None = None,
        collection: str | None = None,
        api_key: Secret | None = None,
    ) -> None:
        """
        Name the store; its location and layout are read from Needle's settings (`active_settings`) now, the
        engine is made on first use.

        :param role: `chunks` or `files`.
        :param path: The embedded engine's folder; default: the data folder's `index/edge` (`index/edge_files`).
        :param url: A Qdrant server; default: `store.url` from the settings (none: the embedded engine).
        :param collection: The server collection; default: `store.collection` (with `_files` for `files`).
        :param api_key: The server's API key; default: the variable `store.api_key_env` names.
        :raises ValueError: On an unknown role, or both a folder and a server.
        """
        if role not in STORE_ROLES:
            raise ValueError(f"role must be one of {', '.join(STORE_ROLES)}, got {role!r}")
        if path is not None and (url is not None or collection is not None):
            raise ValueError("give a folder (path) or a server (url, collection), not both")
        self.role = role
        self.path = path
        self.url = url
        self.collection = collection
        self.api_key = api_key
        from needle.core.settings import active_settings

        self._settings = active_settings()
        self._engine: ManagedStore | None = None

    def to_dict(self) -> dict[str, Any]:
        """
        Serialise the store: its role and whatever location was given (none: the settings locate it again).

        :returns: A dictionary with `type` and `init_parameters`.
        """
        given = {"path": self.path, "url": self.url, "collection": self.collection}
        params: dict[str, Any] = {"role": self.role, **{k: v for k, v in given.items() if v is not None}}
        if self.api_key is not None:
            params["api_key"] = self.api_key.to_dict()
        return default_to_dict(self, **params)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NeedleDocumentStore:
        """
        Rebuild a store from `to_dict()` output.

        :param data: The serialised store.
        :returns: The store, nothing opened.
        """
        init_parameters = dict(data.get("init_parameters", {}))
        deserialize_secrets_inplace(init_parameters, keys=["api_key"])
        return default_from_dict(cls, {**data, "init_parameters": init_parameters})

    def location(self) -> tuple[str, ...]:
        """Where this store's documents are: `("edge", folder)` or `("qdrant", url, collection)`."""
        settings = self._settings
        url = self.url if self.url is not None else (settings.store.url if self.path is None else None)
        suffix = STORE_ROLES[self.role]
        if url:
            return ("qdrant", url, self.collection or settings.store.collection + suffix)
        return ("edge", self.path or str(settings.index_dir / f"edge{suffix}"))

    def definition(self) -> dict[str, Any]:
        """
        The engine this store stands for, serialised (`type`, `init_parameters`): where, and laid out how.

        :raises ValueError: When the settings name a fastembed model fastembed does not know.
        """
        settings = self._settings
        from needle.core.embedding_providers import index_dimension

        dim = index_dimension(settings)
        where = self.location()
        if where[0] == "qdrant":
            # qdrant-client (a second of imports, tens of MB) only for a server's store, not the embedded one's
            from haystack_integrations.document_stores.needle.qdrant_server import layout_parameters

            api_key = self.api_key or Secret.from_env_var([settings.store.api_key_env], strict=False)
            return {
                "type": "haystack_integrations.document_stores.needle.qdrant_server.QdrantServerDocumentStore",
                "init_parameters": {
                    "url": where[1],
                    "index": where[2],
                    "embedding_dim": dim,
                    "use_sparse_embeddings": True,
                    "sparse_idf": True,
                    "timeout": settings.store.timeout,
                    "api_key": api_key.to_dict(),
                    **layout_parameters(**settings.index.model_dump()),
                },
            }
        return {
            "type": "haystack_integrations.document_stores.needle.edge.document_store.EdgeDocumentStore",
            "init_parameters": {"path": where[1], "embedding_dim": dim, **settings.index.model_dump()},
        }

    @property
    def engine(self) -> ManagedStore:
        """The engine of this store's location: one object per location and layout in this process."""
        if self._engine is None:
            self._engine = engine_of(self.location(), self.definition())
        return self._engine

    # ---- SearchableStore and ManagedStore, handed to the engine (documented on the Protocols) ----------------
    def count_documents(self) -> int:
        """`SearchableStore.count_documents`."""
        return self.engine.count_documents()

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """`SearchableStore.filter_documents`."""
        return self.engine.filter_documents(filters)

    def iter_documents(self, filters: dict[str, Any] | None = None) -> Iterator[Document]:
        """`SearchableStore.iter_documents`."""
        return self.engine.iter_documents(filters)

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """`SearchableStore.write_documents`."""
        return self.engine.write_documents(documents, policy)

    def delete_documents(self, document_ids: list[str]) -> None:
        """`SearchableStore.delete_documents`."""
        self.engine.delete_documents(document_ids)

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """`SearchableStore.update_by_filter`."""
        return self.engine.update_by_filter(filters, meta)

    def list_documents_meta(
        self, filters: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """`SearchableStore.list_documents_meta`."""
        return self.engine.list_documents_meta(filters, fields)

    def count_values(self, field: str, filters: dict[str, Any] | None = None) -> dict[str, int]:
        """`SearchableStore.count_values`."""
        return self.engine.count_values(field, filters)

    def query_dense(
        self,
        query_embedding: QueryVector,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
        fields: list[str] | None = None,
    ) -> list[Document]:
        """`SearchableStore.query_dense`."""
        return self.engine.query_dense(query_embedding, top_k, filters, return_embedding, fields)

    def query_sparse(
        self,
        query_sparse_embedding: SparseEmbedding,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
        fields: list[str] | None = None,
    ) -> list[Document]:
        """`SearchableStore.query_sparse`."""
        return self.engine.query_sparse(query_sparse_embedding, top_k, filters, return_embedding, fields)

    def query_text(
        self, query: str, top_k: int = 10, filters: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[Document]:
        """`SearchableStore.query_text`."""
        return self.engine.query_text(query, top_k, filters, fields)

    def best_scores(self, searches: list[BestScore]) -> list[float | None]:
        """`SearchableStore.best_scores`."""
        return self.engine.best_scores(searches)

    def flush(self) -> None:
        """`SearchableStore.flush`."""
        self.engine.flush()

    def deferred_flush(self) -> AbstractContextManager[None]:
        """`SearchableStore.deferred_flush`."""
        return self.engine.deferred_flush()

    def optimize(self) -> bool:
        """`SearchableStore.optimize`."""
        return self.engine.optimize()

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """`ManagedStore.delete_by_filter`."""
        return self.engine.delete_by_filter(filters)

    def delete_all_documents(self, recreate_index: bool = False) -> None:
        """`ManagedStore.delete_all_documents`."""
        self.engine.delete_all_documents(recreate_index)

    def verify(self) -> dict[str, int]:
        """`ManagedStore.verify`."""
        return self.engine.verify()

    def check_unopened(self) -> None:
        """`ManagedStore.check_unopened`."""
        self.engine.check_unopened()

    def changes(self) -> Any:
        """`ManagedStore.changes`."""
        return self.engine.changes()

    def read_ahead(self) -> int:
        """`ManagedStore.read_ahead`."""
        return self.engine.read_ahead()

    def writes_paused(self) -> AbstractContextManager[None]:
        """`ManagedStore.writes_paused`."""
        return self.engine.writes_paused()

    def close(self) -> None:
        """`ManagedStore.close`: the engine of this location closes for every store of it (it reopens on next use)."""
        self.engine.close()


def engine_of(location: tuple[str, ...], definition: dict[str, Any]) -> ManagedStore:
    """
    The one engine object of a serialised engine in this process, made on first request.

    :param location: Where it keeps its documents (`NeedleDocumentStore.location`).
    :param definition: `{"type", "init_parameters"}` of an `EdgeDocumentStore` or `QdrantServerDocumentStore`;
        another layout of the same location is another object (the embedded one opens after the first closes).
    """
    key = json.dumps(definition, sort_keys=True, default=str)
    with _ENGINES_LOCK:
        at = _ENGINES.setdefault(location, {})
        found = at.get(key)
        if found is None:
            from haystack.core.serialization import import_class_by_name

            engine_class: Any = import_class_by_name(definition["type"])
            found = at[key] = engine_class.from_dict(definition)
        return found


def index_store(role: str, settings: Settings) -> ManagedStore:
    """
    The engine of one store of Needle's index under given settings (what the application manages).

    :param role: `chunks` or `files`.
    :raises ValueError: On an unknown role.
    """
    from needle.core.settings import using_settings

    with using_settings(settings):
        return NeedleDocumentStore(role=role).engine


def close_index(settings: Settings) -> None:
    """Close every engine this process made for the index of these settings (it reopens on next use)."""
    from needle.core.settings import using_settings

    with using_settings(settings):
        locations = [NeedleDocumentStore(role=role).location() for role in STORE_ROLES]
    with _ENGINES_LOCK:
        engines = [engine for where in locations for engine in _ENGINES.get(where, {}).values()]
    for engine in engines:
        engine.close()


__all__ = ["NeedleDocumentStore", "close_index", "engine_of", "index_store"]
