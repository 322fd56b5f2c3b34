"""Needle's document stores: the embedded Qdrant engine and a Qdrant server, behind one interface.

Pipeline YAML names a store by its module path (`needle.document_stores.edge.document_store.EdgeDocumentStore`,
`needle.document_stores.qdrant_server.QdrantServerDocumentStore`), as Haystack's `default_to_dict` writes it.
"""

from needle.document_stores.edge import EdgeDocumentStore, StoreLockedError
from needle.document_stores.protocol import IndexDamagedError, NeedleDocumentStore, check_document_store
from needle.document_stores.qdrant_server import QdrantServerDocumentStore

__all__ = [
    "EdgeDocumentStore",
    "IndexDamagedError",
    "NeedleDocumentStore",
    "QdrantServerDocumentStore",
    "StoreLockedError",
    "check_document_store",
]
