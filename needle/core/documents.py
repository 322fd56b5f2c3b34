"""
Copies of Haystack `Document`s at a fraction of `dataclasses.replace`'s cost.

The query stages never change a document they are given: they return copies with a new score or metadata
(`dataclasses.replace`), a `query` builds about 290 of them, and each build goes through `Document`'s
metaclass, its in-place-mutation tracking (`__init_track__`, `__setattr_warn__`) and `__post_init__`: about
6.7 µs a document against 1.1 µs for copying its attributes (`python -m eval.hotpath builds` counts the
builds). Haystack has no cheaper copy, so `replace` here copies the attributes when only the fields that
`__post_init__` does not look at change (score, meta, embeddings) and falls back to `dataclasses.replace`
for everything else, so a copy is always equal to the one Haystack's own would make.
"""

import dataclasses
from typing import TYPE_CHECKING, Any, TypeVar

from haystack import Document

if TYPE_CHECKING:
    from _typeshed import DataclassInstance
from haystack.dataclasses.sparse_embedding import SparseEmbedding

D = TypeVar("D", bound="DataclassInstance")

# Fields `Document.__post_init__` reads or changes: a copy that changes one of them is built the slow way.
_CHECKED = frozenset({"id", "content", "blob"})
_FIELDS = frozenset(field.name for field in dataclasses.fields(Document))
_COPIED = _FIELDS - _CHECKED  # the fields a copy may change without `__post_init__`


def replace(document: D, /, **changes: Any) -> D:
    """
    `dataclasses.replace` for documents: a new document with `changes`, the given one untouched.

    :param document: The document (any other dataclass is copied by `dataclasses.replace`).
    :param changes: New values of the document's fields.
    :returns: The copy.
    :raises TypeError: On a field the document does not have (as `dataclasses.replace` does).
    """
    if type(document) is not Document or not changes.keys() <= _COPIED or _has_array(changes):
        return dataclasses.replace(document, **changes)
    copy = object.__new__(Document)
    attributes = copy.__dict__
    attributes.update(document.__dict__)
    attributes.update(changes)
    return copy  # type: ignore[return-value]  # a D: `type(document) is Document` above


def _has_array(changes: dict[str, Any]) -> bool:
    """Whether an embedding is a NumPy array, which `Document.__post_init__` turns into a list."""
    embedding = changes.get("embedding")
    return embedding is not None and not isinstance(embedding, list)


def from_stored(data: dict[str, Any]) -> Document:
    """
    A document from what a store keeps (`Document.to_dict(flatten=False)`, with `score`, `embedding` and
    `sparse_embedding` as plain values): `Document.from_dict`'s result, built without its per-field tracking
    when the record is a plain one (no blob, no legacy or unknown keys, a string or no content, an id).

    :param data: The record's fields; not kept.
    :returns: The document.
    """
    meta = data.get("meta")
    if (
        not data.keys() <= _FIELDS
        or data.get("blob") is not None
        or not data.get("id")
        or not isinstance(meta, dict)
        or not isinstance(data.get("content"), str | None)
        or not isinstance(data.get("embedding"), list | None)
    ):
        return Document.from_dict(dict(data))
    sparse = data.get("sparse_embedding")
    document = object.__new__(Document)
    document.__dict__.update(
        id=data["id"],
        content=data.get("content"),
        blob=None,
        meta=dict(meta),
        score=data.get("score"),
        embedding=data.get("embedding"),
        sparse_embedding=SparseEmbedding.from_dict(sparse) if sparse else sparse,
    )
    return document
