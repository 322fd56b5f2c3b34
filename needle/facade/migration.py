"""Move an index from the embedded engine to a Qdrant server or cluster, vectors included.

The embedded store writes the same payload layout, named vectors (`text-dense`, `text-sparse` with IDF)
and point ids as qdrant-haystack, so moving is a copy: no chunk is embedded again. Afterwards, set
`store.url` (e.g. `NEEDLE_STORE__URL=http://qdrant:6333`) and every graph uses the server.
"""

from __future__ import annotations

from typing import Any

from haystack.document_stores.types import DuplicatePolicy
from tqdm import tqdm

from haystack_integrations.document_stores.needle import EdgeDocumentStore
from needle.facade.api import Needle
from needle.lifecycle import provenance as index_info
from needle.runtime.environment import Environment


def copy_index(source: EdgeDocumentStore, target: Any, batch_size: int = 256, progress: bool = True) -> int:
    """
    Copy every document, with its vectors, from one Needle store to another (upserting).

    :param source: The embedded store (its `iter_documents()` streams the documents with their vectors).
    :param target: Any Haystack document store.
    :param batch_size: Documents per write.
    :param progress: Show a progress bar.
    :returns: The number of documents copied.
    """
    copied = 0
    batch = []
    for doc in tqdm(
        source.iter_documents(), total=source.count_documents(), disable=not progress, desc="copying", unit="chunk"
    ):
        batch.append(doc)
        if len(batch) == batch_size:
            copied += target.write_documents(batch, policy=DuplicatePolicy.OVERWRITE)
            batch = []
    if batch:
        copied += target.write_documents(batch, policy=DuplicatePolicy.OVERWRITE)
    return copied


def migrate(needle: Needle, url: str, collection: str | None = None, progress: bool = True) -> dict[str, Any]:
    """
    Copy the embedded index of a `Needle` to the Qdrant server at `url`.

    :returns: The number of chunks copied and the settings to use the server.
    :raises ValueError: When the settings already point at a server.
    """
    settings = needle.settings
    if settings.store.url:
        raise ValueError(
            f"the configured store is already a server ({settings.store.url}); migrate copies the embedded index"
        )
    index_info.check(settings, needle.ingest_graph())
    store = settings.store.model_copy(update={"url": url, "collection": collection or settings.store.collection})
    target = Environment(settings.model_copy(update={"store": store}))
    try:
        copied = copy_index(needle.store, target.store("chunks"), progress=progress)
        copy_index(needle.file_store, target.store("files"), progress=progress)
        index_info.record(target.settings, needle.ingest_graph())
    finally:
        target.close()
    return {"copied": copied, "url": url, "collection": store.collection}
