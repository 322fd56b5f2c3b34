"""Sparse query embedding that weighs a query as a query."""

from typing import Any

from haystack import component, default_from_dict, logging
from haystack.dataclasses import SparseEmbedding
from haystack_integrations.components.embedders.fastembed import FastembedSparseTextEmbedder

logger = logging.getLogger(__name__)


@component
class FastembedSparseQueryEmbedder(FastembedSparseTextEmbedder):
    """
    Embeds a search query with fastembed's `query_embed`, for BM25 and other asymmetric sparse models.

    fastembed-haystack's `FastembedSparseTextEmbedder` calls fastembed's `embed`, which weighs text as a
    document: for `Qdrant/bm25` every query term gets a document-length-normalised term frequency, so a
    short query looks like a tiny document and repeated words count more than once. BM25's query side is
    `query_embed`: each distinct term weighs 1 and the store's IDF modifier supplies the rest, which is
    what BM25 scoring means. This component is the same embedder (same init parameters, same shared
    model backend) with the query path corrected.

    Usage example:
    ```python
    embedder = FastembedSparseQueryEmbedder(model="Qdrant/bm25")
    embedder.warm_up()
    embedder.run(text="postgres replication slot")["sparse_embedding"]
    ```
    """

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FastembedSparseQueryEmbedder":
        """Deserialise the component (the parent's `to_dict` already records this class)."""
        return default_from_dict(cls, data)

    @component.output_types(sparse_embedding=SparseEmbedding)
    def run(self, text: str) -> dict[str, Any]:
        """
        Embed one query.

        :param text: The query.
        :returns: A dictionary with `sparse_embedding`, the query's `SparseEmbedding`.
        :raises TypeError: If `text` is not a string.
        """
        if not isinstance(text, str):
            raise TypeError(f"FastembedSparseQueryEmbedder expects a string, got {type(text).__name__}")
        if self.embedding_backend is None:
            self.warm_up()
        embedding = next(iter(self.embedding_backend.model.query_embed([text])))  # type: ignore[union-attr]
        return {
            "sparse_embedding": SparseEmbedding(
                indices=embedding.indices.tolist(), values=[float(v) for v in embedding.values]
            )
        }
