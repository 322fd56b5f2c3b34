"""Needle's document store on Qdrant Edge, the Qdrant engine embedded in the process."""

from haystack_integrations.document_stores.needle.edge.document_store import EdgeDocumentStore
from haystack_integrations.document_stores.needle.edge.shard_schema import DEFAULT_PAYLOAD_INDEXES
from haystack_integrations.document_stores.needle.edge.shards import LOCK_FILE_NAME, StoreLockedError

__all__ = ["DEFAULT_PAYLOAD_INDEXES", "LOCK_FILE_NAME", "EdgeDocumentStore", "StoreLockedError"]
