"""Documents ↔ Qdrant Edge points, in qdrant-haystack's layout (so an index moves to a server unchanged).

Payload `Document.to_dict(flatten=False)` without the vectors, named vectors `text-dense` and `text-sparse`,
point id `uuid5` of the document id (qdrant-haystack's `convert_id`).
"""

import dataclasses
import uuid
from typing import Any

import qdrant_edge as qe
from haystack import logging
from haystack.dataclasses import Document

from haystack_integrations.document_stores.needle.layout import DENSE_VECTORS_NAME, SPARSE_VECTORS_NAME, convert_id
from needle.core.documents import from_stored

logger = logging.getLogger(__name__)


def point_id(doc_id: str) -> uuid.UUID:
    """The point id of a document: qdrant-haystack's `convert_id`, so ids match on a Qdrant server."""
    return uuid.UUID(convert_id(doc_id))


def to_point(doc: Document, embedding_dim: int, use_sparse_embeddings: bool) -> Any:
    """
    A document as an Edge point.

    :param doc: The document; left unchanged.
    :param embedding_dim: The size the store's dense vectors have.
    :param use_sparse_embeddings: Whether the store keeps sparse vectors (a sparse embedding is dropped, with a
        warning, when it does not).
    :returns: The point.
    :raises ValueError: When the dense embedding has the wrong size.
    """
    # `to_dict()` deep-copies field by field: leave the vectors out of it, they are read directly.
    payload = dataclasses.replace(doc, embedding=None, sparse_embedding=None).to_dict(flatten=False)
    payload.pop("embedding", None)
    payload.pop("sparse_embedding", None)
    dense = doc.embedding
    sparse = doc.sparse_embedding
    vector: dict[str, Any] = {}
    if dense is not None:
        if len(dense) != embedding_dim:
            raise ValueError(
                f"document {doc.id} has an embedding of {len(dense)} values, the store expects {embedding_dim}"
            )
        vector[DENSE_VECTORS_NAME] = [float(value) for value in dense]
    if sparse is not None:
        if use_sparse_embeddings:
            vector[SPARSE_VECTORS_NAME] = qe.SparseVector(
                [int(index) for index in sparse.indices], [float(value) for value in sparse.values]
            )
        else:
            logger.warning(
                "Dropped the sparse embedding of document {doc_id}: the store has use_sparse_embeddings=False",
                doc_id=doc.id,
            )
    return qe.Point(id=point_id(doc.id), vector=vector, payload=payload)


def to_document(record: Any, score: float | None = None) -> Document:
    """
    A document from an Edge record (a scrolled, retrieved or scored point).

    :param record: The record, with whatever payload and vectors were asked for.
    :param score: The score to set.
    :returns: The document.
    """
    data = dict(record.payload or {})
    data["score"] = score
    vectors = record.vector if isinstance(record.vector, dict) else {}
    dense = vectors.get(DENSE_VECTORS_NAME)
    sparse = vectors.get(SPARSE_VECTORS_NAME)
    data["embedding"] = list(dense) if dense is not None else None
    data["sparse_embedding"] = (
        {"indices": list(sparse.indices), "values": list(sparse.values)} if sparse is not None else None
    )
    return from_stored(data)
