"""Needle's document stores: its index as a Haystack store, the embedded Qdrant engine and a Qdrant server.

A graph names `NeedleDocumentStore` (`haystack_integrations.document_stores.needle.needle_document_store`),
which the settings locate; the engines behind it are `EdgeDocumentStore` (`...needle.edge.document_store`) and
`QdrantServerDocumentStore` (`...needle.qdrant_server`). Each is imported when first named: importing this
package (as every component does, for the store interfaces in `protocol`) loads neither engine.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from haystack_integrations.document_stores.needle.access import searchable
from haystack_integrations.document_stores.needle.protocol import (
    BestScore,
    IndexDamagedError,
    ManagedStore,
    SearchableStore,
)

if TYPE_CHECKING:
    from haystack_integrations.document_stores.needle.edge.document_store import EdgeDocumentStore
    from haystack_integrations.document_stores.needle.edge.shards import StoreLockedError
    from haystack_integrations.document_stores.needle.needle_document_store import NeedleDocumentStore
    from haystack_integrations.document_stores.needle.qdrant_search import QdrantSearch
    from haystack_integrations.document_stores.needle.qdrant_server import QdrantServerDocumentStore

_LAZY = {
    "EdgeDocumentStore": "haystack_integrations.document_stores.needle.edge.document_store",
    "StoreLockedError": "haystack_integrations.document_stores.needle.edge.shards",
    "QdrantServerDocumentStore": "haystack_integrations.document_stores.needle.qdrant_server",
    "QdrantSearch": "haystack_integrations.document_stores.needle.qdrant_search",
    "NeedleDocumentStore": "haystack_integrations.document_stores.needle.needle_document_store",
}

__all__ = [
    "BestScore",
    "EdgeDocumentStore",
    "IndexDamagedError",
    "ManagedStore",
    "NeedleDocumentStore",
    "QdrantSearch",
    "QdrantServerDocumentStore",
    "SearchableStore",
    "StoreLockedError",
    "searchable",
]


def __getattr__(name: str) -> Any:
    """The stores and the engine's lock error, imported on first use."""
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
