"""Needle's document store on Qdrant Edge, the Qdrant engine embedded in the process."""

from needle.document_stores.edge.document_store import EdgeDocumentStore
from needle.document_stores.edge.schema import DEFAULT_PAYLOAD_INDEXES
from needle.document_stores.edge.shards import LOCK_FILE_NAME, StoreLockedError

__all__ = ["DEFAULT_PAYLOAD_INDEXES", "LOCK_FILE_NAME", "EdgeDocumentStore", "StoreLockedError"]
