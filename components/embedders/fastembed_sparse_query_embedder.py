"""Sparse query embedding that weighs a query as a query."""

from typing import Any

from haystack import component, default_from_dict, logging
from haystack.dataclasses import SparseEmbedding

from haystack_integrations.components.embedders.fastembed import (
    FastembedSparseTextEmbedder,
)
from haystack_integrations.components.needle._index_models import fastembed_model, without
from haystack_integrations.components.needle._sparse_languages import is_bm25, language_backend
from needle.core.languages import (
    AUTO,
    DEFAULT,
    check_compounds,
    check_language,
    identify,
    main_languages,
    prepare,
)

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
    run input (`MultilingualSparseDocumentEmbedder` embeds each in its own). The query is analysed in the
    collection's main languages, those holding at least `min_share` of its chunks, plus the query's own
    language when the collection holds any text in it (told by py3langid among those languages): a German
    query finds the few German notes of an English collection, while a language that holds a sliver of the
    collection (a few misread or quoted files) does not add its analysis to every query.

    Usage example:
    ```python
    embedder = FastembedSparseQueryEmbedder(model="Qdrant/bm25")
    embedder.warm_up()
    embedder.run(text="postgres replication slot")["sparse_embedding"]
    embedder.analyses("Sicherung", {"english": 40, "german": 1})  # ["english", "german"]
    ```
    """

    def __init__(
        self,
        model: str | None = None,
        cache_dir: str | None = None,
        threads: int | None = None,
        progress_bar: bool = True,
        parallel: int | None = None,
        local_files_only: bool | None = None,
        model_kwargs: dict[str, Any] | None = None,
        min_share: float = 0.2,
        compounds: str = "affixes",
    ) -> None:
        """
        Create the embedder: `FastembedSparseTextEmbedder`'s parameters (those left `None` are the index's sparse
        model and its folder, from Needle's settings), and

        :param min_share: The share of the searched chunks a language needs for every query to be analysed
            in it (the largest language always is).
        :param compounds: How German compounds are reached from their parts (`needle.core.languages.COMPOUNDS`),
            as the documents were embedded.
        :raises ValueError: When `min_share` is not in [0, 1] or `compounds` is unknown.
        """
        values, self._from_settings = fastembed_model(
            "sparse", "query", model, cache_dir, local_files_only, model_kwargs
        )
        FastembedSparseTextEmbedder.__init__(
            self, threads=threads, progress_bar=progress_bar, parallel=parallel, **values
        )
        if not 0.0 <= min_share <= 1.0:
            raise ValueError(f"min_share must be between 0 and 1, got {min_share}")
        self.min_share = min_share
        self.compounds = check_compounds(compounds)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component: the parent's parameters, `min_share` and `compounds`."""
        data = without(FastembedSparseTextEmbedder.to_dict(self), self._from_settings)
        data["init_parameters"].update(min_share=self.min_share, compounds=self.compounds)
        return data

    def analyses(self, text: str, languages: list[str] | dict[str, int] | None = None) -> list[str]:
        """
        The languages a query is analysed in.

        :param text: The query.
        :param languages: The languages of the documents searched: language → chunks in it (the main ones,
            and the query's own among them, count), or a list (each counts).
        :returns: The languages, sorted; `["english"]` when none is known.
        """
        if isinstance(languages, dict):
            counts = {check_language(language): int(n) for language, n in languages.items() if int(n) > 0}
        else:
            counts = {check_language(language): 1 for language in languages or []}
        counts.pop(AUTO, None)
        if len(counts) <= 1:
            return sorted(counts) or [DEFAULT]
        wanted = set(main_languages(counts, self.min_share))
        if wanted == set(counts):
            return sorted(wanted)
        own, _ = identify(text, among=counts)
        return sorted(wanted | ({own} if own else set()))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FastembedSparseQueryEmbedder":
        """Deserialise the component (the parent's `to_dict` already records this class)."""
        return default_from_dict(cls, data)

    @component.output_types(sparse_embedding=SparseEmbedding)
    def run(self, text: str, languages: list[str] | dict[str, int] | None = None) -> dict[str, Any]:
        """
        Embed one query.

        :param text: The query.
        :param languages: The languages of the documents searched, language → chunks in it (or a list, each
            counting alike): the query is analysed in those `analyses` picks, and a term found by several
            counts once. `None` or English alone: the model's own analysis.
        :returns: A dictionary with `sparse_embedding`, the query's `SparseEmbedding`.
        :raises TypeError: If `text` is not a string.
        :raises ValueError: When a language is unknown.
        """
        if not isinstance(text, str):
            raise TypeError(f"FastembedSparseQueryEmbedder expects a string, got {type(text).__name__}")
        if not is_bm25(self.model_name):
            return {"sparse_embedding": self._embed(language_backend(self, DEFAULT), text)}
        wanted = self.analyses(text, languages)
        if wanted == [DEFAULT]:
            return {"sparse_embedding": self._embed(language_backend(self, DEFAULT), text)}
        terms: dict[int, float] = {}
        for language in wanted:
            found = self._embed(language_backend(self, language), prepare(text, language, self.compounds))
            for index, value in zip(found.indices, found.values):
                terms[index] = max(value, terms.get(index, 0.0))
        indices = sorted(terms)
        return {"sparse_embedding": SparseEmbedding(indices=indices, values=[terms[i] for i in indices])}

    @staticmethod
    def _embed(backend: Any, text: str) -> SparseEmbedding:
        embedding = next(iter(backend.model.query_embed([text])))
        return SparseEmbedding(indices=embedding.indices.tolist(), values=[float(v) for v in embedding.values])
