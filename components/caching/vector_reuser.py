"""Copy stored vectors onto documents whose embedded text the store already holds, instead of embedding it again."""

import hashlib
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_to_dict, logging

from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.document_stores.needle.access import searchable

logger = logging.getLogger(__name__)


@component
class VectorReuser:
    """
    Finds, for each document about to be embedded, a stored document with the same embedded text, and
    copies its dense and sparse vectors.

    A chunk's id hashes its file and position, so a renamed or moved file, or a section moved within a
    file, gives chunks with new ids whose text is already embedded under the old ones. This component
    stamps every document with `meta.content_checksum`, a hash of exactly what the embedders read (the
    `meta_fields_to_embed` values and the text, joined by `embedding_separator`, with the collection's
    keyword-search language), looks those checksums up in the store (one `in` filter per `batch_size`
    documents) and passes on, in `reused`, the documents it found vectors for; only the others go to the
    embedders, in `documents`. The stored copy may be deleted later in the same run (the old file's
    chunks): the vectors were copied before. Haystack's `CacheChecker` finds documents by one field but
    returns the stored documents, not the new ones with vectors attached.

    Usage example:
    ```python
    reuser = VectorReuser(document_store=store, meta_fields_to_embed=["context"])
    out = reuser.run(documents=new_chunks)
    out["documents"]  # to embed
    out["reused"]     # with `embedding` and `sparse_embedding` copied from the store
    ```
    """

    def __init__(
        self,
        document_store: Any,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        batch_size: int = 256,
    ) -> None:
        """
        Create the reuser.

        :param document_store: The Needle store the documents will be written to.
        :param meta_fields_to_embed: The embedders' `meta_fields_to_embed` (what they read before the text).
        :param embedding_separator: The embedders' `embedding_separator`.
        :param batch_size: Checksums per store lookup.
        :raises ValueError: When `batch_size` is below 1, a field is not a string, or the store is not a
            `NeedleDocumentStore`.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer > 0, got {batch_size!r}")
        fields = list(meta_fields_to_embed or [])
        if not all(isinstance(f, str) and f for f in fields):
            raise ValueError(f"meta_fields_to_embed must be a list of field names, got {meta_fields_to_embed!r}")
        self._store = searchable(document_store)
        self.document_store = document_store
        self.meta_fields_to_embed = fields
        self.embedding_separator = embedding_separator
        self.batch_size = batch_size

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self,
            document_store=self.document_store.to_dict(),
            meta_fields_to_embed=self.meta_fields_to_embed,
            embedding_separator=self.embedding_separator,
            batch_size=self.batch_size,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "VectorReuser":
        """Deserialise the component."""
        return cls(**with_document_store(data)["init_parameters"])

    def checksum(self, doc: Document, language: str | None = None) -> str:
        """
        The hash of what the embedders read of a document, with its keyword-search language.

        :param doc: The document.
        :param language: The language of its collection's keyword analysis (`auto` included), if any.
        :returns: A hex SHA-1.
        """
        values = [str(doc.meta[f]) for f in self.meta_fields_to_embed if doc.meta.get(f) is not None]
        text = self.embedding_separator.join([*values, doc.content or ""])
        return hashlib.sha1(f"{language or ''}\x1f{text}".encode()).hexdigest()

    @component.output_types(documents=list[Document], reused=list[Document])
    def run(self, documents: list[Document], languages: dict[str, str] | None = None) -> dict[str, list[Document]]:
        """
        Reuse stored vectors where the store has the same embedded text.

        :param documents: Documents about to be embedded.
        :param languages: Collection → keyword-search language, as the sparse embedder gets it.
        :returns: A dictionary with:
            - `documents`: the documents to embed, in their order, each with `meta.content_checksum`.
            - `reused`: the documents given the stored vectors, each with `meta.content_checksum`.
        """
        languages = languages or {}
        stamped = [
            replace(
                doc,
                meta={
                    **doc.meta,
                    "content_checksum": self.checksum(doc, languages.get(doc.meta.get("collection", ""))),
                },
            )
            for doc in documents
        ]
        stored: dict[str, Document] = {}
        wanted = sorted({doc.meta["content_checksum"] for doc in stamped})
        # The stream is left as soon as every checksum has a match: a text stored many times is read once.
        for start in range(0, len(wanted), self.batch_size):
            part = set(wanted[start : start + self.batch_size])
            where = {"field": "meta.content_checksum", "operator": "in", "value": sorted(part)}
            for found in self._store.iter_documents(filters=where):
                if found.embedding is not None and found.sparse_embedding is not None:
                    stored.setdefault(found.meta["content_checksum"], found)
                    part.discard(found.meta["content_checksum"])
                    if not part:
                        break
        to_embed: list[Document] = []
        reused: list[Document] = []
        for doc in stamped:
            match = stored.get(doc.meta["content_checksum"])
            if match is None:
                to_embed.append(doc)
            else:
                reused.append(replace(doc, embedding=match.embedding, sparse_embedding=match.sparse_embedding))
        if reused:
            logger.info("Reused the vectors of {count} documents", count=len(reused))
        return {"documents": to_embed, "reused": reused}
