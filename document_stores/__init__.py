"""Needle's document stores: the embedded Qdrant engine and a Qdrant server, behind one interface.

Pipeline YAML names a store by its module path (`haystack_integrations.document_stores.needle.edge.document_store.EdgeDocumentStore`,
`haystack_integrations.document_stores.needle.qdrant_server.QdrantServerDocumentStore`), as Haystack's `default_to_dict` writes it.
The server store is imported when first named: it needs `qdrant_client`, which the embedded engine does not.
"""

from typing import Any

from haystack_integrations.document_stores.needle.edge import EdgeDocumentStore, StoreLockedError
from haystack_integrations.document_stores.needle.protocol import (
    IndexDamagedError,
    NeedleDocumentStore,
    check_document_store,
)

__all__ = [
    "EdgeDocumentStore",
    "IndexDamagedError",
    "NeedleDocumentStore",
    "QdrantServerDocumentStore",
    "StoreLockedError",
    "check_document_store",
]


def __getattr__(name: str) -> Any:
    """`QdrantServerDocumentStore`, imported on first use."""
    if name == "QdrantServerDocumentStore":
        from haystack_integrations.document_stores.needle.qdrant_server import QdrantServerDocumentStore

        return QdrantServerDocumentStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
