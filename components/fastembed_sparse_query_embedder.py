"""Sparse query embedding that weighs a query as a query."""

from typing import Any

from haystack import component, default_from_dict, logging
from haystack.dataclasses import SparseEmbedding
from haystack_integrations.components.embedders.fastembed import FastembedSparseTextEmbedder

from components._sparse_languages import is_bm25, language_backend
from needle.languages import AUTO, DEFAULT, check_language, prepare

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
    model backend) with the query path corrected, and with the languages of the documents searched as a
    run input: the query is analysed as each of them was (`MultilingualSparseDocumentEmbedder`).

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
    def run(self, text: str, languages: list[str] | None = None) -> dict[str, Any]:
        """
        Embed one query.

        :param text: The query.
        :param languages: The languages of the documents searched (`MultilingualSparseDocumentEmbedder`
            embeds each in its own): the query is analysed in each, and a term found by several counts once.
            `None` or English alone: the model's own analysis.
        :returns: A dictionary with `sparse_embedding`, the query's `SparseEmbedding`.
        :raises TypeError: If `text` is not a string.
        :raises ValueError: When a language is unknown.
        """
        if not isinstance(text, str):
            raise TypeError(f"FastembedSparseQueryEmbedder expects a string, got {type(text).__name__}")
        wanted = sorted({check_language(language) for language in languages or []} - {AUTO})
        if not is_bm25(self.model_name) or wanted in ([], [DEFAULT]):
            return {"sparse_embedding": self._embed(language_backend(self, DEFAULT), text)}
        terms: dict[int, float] = {}
        for language in wanted:
            found = self._embed(language_backend(self, language), prepare(text, language))
            for index, value in zip(found.indices, found.values):
                terms[index] = max(value, terms.get(index, 0.0))
        indices = sorted(terms)
        return {"sparse_embedding": SparseEmbedding(indices=indices, values=[terms[i] for i in indices])}

    @staticmethod
    def _embed(backend: Any, text: str) -> SparseEmbedding:
        embedding = next(iter(backend.model.query_embed([text])))
        return SparseEmbedding(indices=embedding.indices.tolist(), values=[float(v) for v in embedding.values])
