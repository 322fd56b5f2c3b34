"""BM25 sparse embedding of documents, each in its own language."""

from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, logging

from haystack_integrations.components.embedders.fastembed import (
    FastembedSparseDocumentEmbedder,
)
from haystack_integrations.components.needle._index_models import fastembed_model, without
from haystack_integrations.components.needle._index_models import progress_bar as show_progress
from haystack_integrations.components.needle._lazy import LoadsOnFirstUse
from haystack_integrations.components.needle._sparse_languages import is_bm25, language_backend
from haystack_integrations.components.needle._vectors import shared_sparse
from needle.core.languages import (
    AUTO,
    CHUNK_CLEAR,
    CLEAR,
    DEFAULT,
    check_compounds,
    check_language,
    chunk_language,
    identify,
    prepare,
)
from needle.core.schema import FILE_ID

logger = logging.getLogger(__name__)


@component
class MultilingualSparseDocumentEmbedder(LoadsOnFirstUse, FastembedSparseDocumentEmbedder):
    """
    Embeds documents as BM25 sparse vectors analysed in each document's language.

    fastembed-haystack's `FastembedSparseDocumentEmbedder` analyses every text with its model's one language:
    for `Qdrant/bm25`, English stopwords and the English stemmer, and words split at spaces, which leaves a
    Chinese or Japanese sentence as one term that no query matches. This embedder is the same component
    (same parameters, same shared model backend) that takes each collection's language as a run input: a
    document of a collection in `german` is stemmed in German, one in `chinese` is cut into character pairs,
    and one of an `auto` collection in the language py3langid tells of its whole file (the whole-file
    document's text when the batch has it, else the file's chunks in the batch together). A chunk inherits
    its file's language unless it is a long stretch clearly in another (`needle.core.languages.chunk_language`):
    a short chunk (a list of Latin names, a quoted title) is easily taken for another language. A file told
    unclearly (a few words, a table, code) takes its collection's main language (`main_languages`, from
    earlier runs; else the language most files of the batch were told in; else English). German text also
    brings its compounds' parts (`compounds`). Documents in English, the default, are embedded exactly as
    the parent embeds them. Each document's `meta.language` says which analysis it got; the `languages`
    output counts them per collection, for the query side. The model loads on
    the first run with documents, not in `warm_up()` (which a pipeline calls before every run): loading BM25
    builds fastembed's table of every punctuation character, over half a second of a `needle index` that
    has nothing to embed.

    Usage example:
    ```python
    embedder = MultilingualSparseDocumentEmbedder(model="Qdrant/bm25")
    out = embedder.run(documents=chunks, languages={"notes": "auto", "wiki-de": "german"})
    out["languages"]  # {"notes": {"chinese": 3, "english": 40}, "wiki-de": {"german": 12}}
    ```
    """

    def __init__(
        self,
        model: str | None = None,
        cache_dir: str | None = None,
        threads: int | None = None,
        batch_size: int = 32,
        progress_bar: bool | None = None,
        parallel: int | None = None,
        local_files_only: bool | None = None,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        model_kwargs: dict[str, Any] | None = None,
        compounds: str = "affixes",
    ) -> None:
        """
        Create the embedder: `FastembedSparseDocumentEmbedder`'s parameters (those left `None` are the index's
        sparse model and its folder, from Needle's settings; `progress_bar` as whoever builds the graph prefers),
        and

        :param compounds: How German compounds are reached from their parts (`needle.core.languages.COMPOUNDS`).
        :raises ValueError: When `compounds` is unknown.
        """
        values, self._from_settings = fastembed_model(
            "sparse", "document", model, cache_dir, local_files_only, model_kwargs
        )
        if progress_bar is None:
            self._from_settings.add("progress_bar")
        FastembedSparseDocumentEmbedder.__init__(
            self,
            threads=threads,
            batch_size=batch_size,
            progress_bar=show_progress(progress_bar),
            parallel=parallel,
            meta_fields_to_embed=meta_fields_to_embed,
            embedding_separator=embedding_separator,
            **values,
        )
        self.compounds = check_compounds(compounds)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component: the parent's parameters and `compounds`."""
        data = without(FastembedSparseDocumentEmbedder.to_dict(self), self._from_settings)
        data["init_parameters"]["compounds"] = self.compounds
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MultilingualSparseDocumentEmbedder":
        """Deserialise the component (the parent's `to_dict` already records this class)."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], languages=dict[str, dict[str, int]])
    def run(
        self,
        documents: list[Document],
        languages: dict[str, str] | None = None,
        main_languages: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """
        Embed documents, each in the language of its collection (`meta.collection`).

        :param documents: The documents to embed.
        :param languages: Collection → language (`auto` to detect per document); a collection not named, and
            every document when not given, is English.
        :param main_languages: Collection → the language most of its chunks were in at earlier runs, which
            an `auto` collection's unclear files take.
        :returns: A dictionary with:
            - `documents`: new documents with `sparse_embedding` set and `meta.language` naming the analysis.
            - `languages`: collection → language → how many of the documents were embedded in it.
        :raises TypeError: If `documents` is not a list of Documents.
        :raises ValueError: When a language is unknown.
        """
        if not isinstance(documents, list) or not all(isinstance(doc, Document) for doc in documents):
            raise TypeError("MultilingualSparseDocumentEmbedder expects a list of Documents")
        wanted = {name: check_language(language) for name, language in (languages or {}).items()}
        if not documents:
            return {"documents": [], "languages": {}}
        self.load()
        main = {name: check_language(language) for name, language in (main_languages or {}).items()}
        chosen = self._languages(documents, wanted, main)
        embedded: list[Document | None] = [None] * len(documents)
        for language in sorted(set(chosen)):
            positions = [i for i, found in enumerate(chosen) if found == language]
            group = [documents[i] for i in positions]
            if language == DEFAULT:
                group = FastembedSparseDocumentEmbedder.run(self, documents=group)["documents"]
            else:
                texts = [
                    prepare(text, language, self.compounds) for text in self._prepare_texts_to_embed(documents=group)
                ]
                vectors = language_backend(self, language).embed(
                    texts, batch_size=self.batch_size, progress_bar=self.progress_bar, parallel=self.parallel
                )
                group = [replace(doc, sparse_embedding=vector) for doc, vector in zip(group, vectors, strict=True)]
            for i, doc in zip(positions, group, strict=True):
                embedded[i] = replace(
                    doc,
                    sparse_embedding=shared_sparse(doc.sparse_embedding) if doc.sparse_embedding else None,
                    meta={**doc.meta, "language": language},
                )
        found: dict[str, dict[str, int]] = {}
        for doc, language in zip(documents, chosen, strict=True):
            counts = found.setdefault(str(doc.meta.get("collection", "")), {})
            counts[language] = counts.get(language, 0) + 1
        return {"documents": embedded, "languages": {name: dict(sorted(n.items())) for name, n in found.items()}}

    def _languages(self, documents: list[Document], wanted: dict[str, str], main: dict[str, str]) -> list[str]:
        """Each document's language: its collection's, for `auto` its file's or its own; English for models without one."""
        if not is_bm25(self.model_name):
            return [DEFAULT] * len(documents)
        texts: dict[str, list[str]] = {}
        whole: dict[str, str] = {}
        for doc in documents:
            if wanted.get(str(doc.meta.get("collection", "")), DEFAULT) == AUTO:
                source = _source(doc)
                if doc.meta.get("kind") == "file":
                    whole[source] = doc.content or ""
                texts.setdefault(source, []).append(doc.content or "")
        told: dict[str, str | None] = {}
        mixed: set[str] = set()
        for source, parts in texts.items():
            language, p = identify(whole[source] if source in whole else "\n\n".join(parts))
            told[source] = language if p >= CLEAR else None
            if p < CHUNK_CLEAR:
                mixed.add(source)
        majority: dict[str, dict[str, int]] = {}
        for doc in documents:
            language = told.get(_source(doc)) if _source(doc) in told else None
            if language is not None and doc.meta.get("kind") != "file":
                counts = majority.setdefault(str(doc.meta.get("collection", "")), {})
                counts[language] = counts.get(language, 0) + 1
        chosen = []
        for doc in documents:
            collection = str(doc.meta.get("collection", ""))
            language = wanted.get(collection, DEFAULT)
            if language == AUTO:
                batch = majority.get(collection)
                fallback = main.get(collection) or (max(sorted(batch), key=batch.__getitem__) if batch else DEFAULT)
                language = told[_source(doc)] or fallback
                if doc.meta.get("kind") != "file" and _source(doc) in mixed:
                    language = chunk_language(doc.content or "", language)
            chosen.append(language)
        return chosen


def _source(doc: Document) -> str:
    """The file a document belongs to (itself when it names none)."""
    return str(doc.meta.get(FILE_ID) or doc.id)
