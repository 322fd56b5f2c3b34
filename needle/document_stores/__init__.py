"""Needle's document stores: the embedded Qdrant engine and a Qdrant server, behind one interface.

Pipeline YAML names a store by its module path (`needle.document_stores.edge.document_store.EdgeDocumentStore`,
`needle.document_stores.qdrant_server.QdrantServerDocumentStore`), as Haystack's `default_to_dict` writes it.
The server store is imported when first named: it needs `qdrant_client`, which the embedded engine does not.
"""

from typing import Any

from needle.document_stores.edge import EdgeDocumentStore, StoreLockedError
from needle.document_stores.protocol import IndexDamagedError, NeedleDocumentStore, check_document_store

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
        from needle.document_stores.qdrant_server import QdrantServerDocumentStore

        return QdrantServerDocumentStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
