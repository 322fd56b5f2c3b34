"""qdrant-haystack's point layout, which both of Needle's stores keep.

The names of the two vectors and the way a Haystack document id becomes a point id are qdrant-haystack's
(`haystack_integrations.document_stores.qdrant.converters`), so that an index written by one store reads in
the other. They are repeated here because importing that module imports `qdrant_client` (a second of
start-up for every `needle` command), which the embedded engine never uses; `tests/document_stores` checks
that they stay equal to qdrant-haystack's.
"""

import uuid

DENSE_VECTORS_NAME = "text-dense"
SPARSE_VECTORS_NAME = "text-sparse"
UUID_NAMESPACE = uuid.UUID("3896d314-1e95-4a3a-b45a-945f9f0b541d")


def convert_id(_id: str) -> str:
    """A document id as qdrant-haystack's point id: a UUID derived from it, deterministically."""
    return uuid.uuid5(UUID_NAMESPACE, _id).hex
