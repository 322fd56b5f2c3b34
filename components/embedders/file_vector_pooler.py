"""Whole-file dense vectors pooled from the file's chunk vectors, instead of embedding the file's text again."""

from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, component, default_to_dict

from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.components.needle._vectors import SharedVector
from haystack_integrations.document_stores.needle.access import searchable
from needle.core.schema import FILE_ID


@component
class FileVectorPooler:
    """
    Gives each whole-file document a dense vector pooled from its chunks' (their normalised mean).

    The whole-file document (`FileDocumentBuilder`) repeats its chunks' text: embedding it again with the
    dense model costs as much as embedding the chunks, and the model reads only its first 256 tokens. The
    mean of the chunks' vectors costs nothing and covers the whole text. This component takes the file
    documents to vectorise, every chunk of the files read (to know which chunks make each file: those of its
    file id (`FILE_ID`) within its character range) and the chunks that have dense vectors now (just embedded,
    or reused); a chunk the run did not embed because it is unchanged is read from the chunk store by id.
    BM25 is not pooled: a sum of the chunks' BM25 vectors would count overlaps twice and saturate term
    frequencies per chunk, and embedding the file's text with the sparse model is cheap, so the file
    documents go on to the sparse embedder.

    Usage example:
    ```python
    pooler = FileVectorPooler(document_store=chunks_store)
    files = pooler.run(files=file_docs, chunks=all_chunks, embedded=embedded_chunks)["documents"]
    files[0].embedding  # the normalised mean of its chunks' dense vectors
    ```
    """

    def __init__(self, document_store: Any) -> None:
        """
        Create the pooler.

        :param document_store: The chunk store, for the vectors of unchanged chunks.
        :raises ValueError: When the store is not one Needle's components can search (`searchable`).
        """
        self._store = searchable(document_store)
        self.document_store = document_store

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, document_store=self.document_store.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FileVectorPooler":
        """Deserialise the component."""
        return cls(**with_document_store(data)["init_parameters"])

    @component.output_types(documents=list[Document])
    def run(
        self, files: list[Document], chunks: list[Document], embedded: list[Document] | None = None
    ) -> dict[str, list[Document]]:
        """
        Pool the file documents' vectors.

        :param files: Whole-file documents (meta: the file id, `char_start`, `char_end`).
        :param chunks: Every chunk of the files read, with or without vectors.
        :param embedded: Documents with dense vectors (chunks just embedded or reused; others are ignored).
        :returns: A dictionary with `documents`: the file documents with `embedding` set.
        :raises ValueError: When a chunk of a file has no dense vector, neither given nor stored.
        """
        vectors = {d.id: d for d in embedded or [] if d.embedding is not None}
        members: dict[str, list[str]] = {}
        by_source: dict[str, list[Document]] = {}
        for chunk in chunks:
            by_source.setdefault(str(chunk.meta.get(FILE_ID)), []).append(chunk)
        for file in files:
            start, end = file.meta["char_start"], file.meta["char_end"]
            members[file.id] = [
                c.id
                for c in by_source.get(str(file.meta.get(FILE_ID)), [])
                if c.meta["char_start"] >= start and c.meta["char_end"] <= end
            ]
        missing = sorted({cid for ids in members.values() for cid in ids if cid not in vectors})
        if missing:
            for found in self._store.filter_documents(filters={"field": "id", "operator": "in", "value": missing}):
                if found.embedding is not None:
                    vectors[found.id] = found
        out = []
        for file in files:
            parts = [vectors[cid] for cid in members[file.id] if cid in vectors]
            if not parts or len(parts) < len(members[file.id]):
                raise ValueError(f"no vectors for every chunk of {file.meta.get(FILE_ID)}")
            out.append(replace(file, embedding=_mean(parts)))
        return {"documents": out}


def _mean(parts: list[Document]) -> list[float]:
    """The normalised mean of the documents' dense vectors."""
    mean = np.mean(np.asarray([p.embedding for p in parts], dtype=np.float32), axis=0)
    norm = float(np.linalg.norm(mean))
    return SharedVector((mean / norm if norm > 0 else mean).tolist())
