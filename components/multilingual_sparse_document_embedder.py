"""BM25 sparse embedding of documents, each in its own language."""

from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, logging
from haystack_integrations.components.embedders.fastembed import FastembedSparseDocumentEmbedder

from components._lazy import LoadsOnFirstUse
from components._sparse_languages import is_bm25, language_backend
from components._vectors import shared_sparse
from needle.languages import AUTO, DEFAULT, check_language, detect, prepare

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
    and one of an `auto` collection in the language `needle.languages.detect` finds in its file (the
    whole-file document's text when the batch has it, else the file's chunks in the batch together): a
    file's chunks share its language, since a short chunk (a list of Latin names, a quoted title) is easily
    taken for another language, and one such chunk would make every query of the collection be analysed
    in that language too. Documents in English,
    the default, are embedded exactly as the parent embeds them. Each document's `meta.language` says which
    analysis it got; the `languages` output lists them per collection, for the query side. The model loads on
    the first run with documents, not in `warm_up()` (which a pipeline calls before every run): loading BM25
    builds fastembed's table of every punctuation character, over half a second of a `needle index` that
    has nothing to embed.

    Usage example:
    ```python
    embedder = MultilingualSparseDocumentEmbedder(model="Qdrant/bm25")
    out = embedder.run(documents=chunks, languages={"notes": "auto", "wiki-de": "german"})
    out["languages"]  # {"notes": ["chinese", "english"], "wiki-de": ["german"]}
    ```
    """

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MultilingualSparseDocumentEmbedder":
        """Deserialise the component (the parent's `to_dict` already records this class)."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], languages=dict[str, list[str]])
    def run(self, documents: list[Document], languages: dict[str, str] | None = None) -> dict[str, Any]:  # type: ignore[override]
        """
        Embed documents, each in the language of its collection (`meta.collection`).

        :param documents: The documents to embed.
        :param languages: Collection → language (`auto` to detect per document); a collection not named, and
            every document when not given, is English.
        :returns: A dictionary with:
            - `documents`: new documents with `sparse_embedding` set and `meta.language` naming the analysis.
            - `languages`: collection → the languages its documents were embedded in, sorted.
        :raises TypeError: If `documents` is not a list of Documents.
        :raises ValueError: When a language is unknown.
        """
        if not isinstance(documents, list) or not all(isinstance(doc, Document) for doc in documents):
            raise TypeError("MultilingualSparseDocumentEmbedder expects a list of Documents")
        wanted = {name: check_language(language) for name, language in (languages or {}).items()}
        if not documents:
            return {"documents": [], "languages": {}}
        self.load()
        chosen = self._languages(documents, wanted)
        embedded: list[Document | None] = [None] * len(documents)
        for language in sorted(set(chosen)):
            positions = [i for i, found in enumerate(chosen) if found == language]
            group = [documents[i] for i in positions]
            if language == DEFAULT:
                group = FastembedSparseDocumentEmbedder.run(self, documents=group)["documents"]
            else:
                texts = [prepare(text, language) for text in self._prepare_texts_to_embed(documents=group)]
                vectors = language_backend(self, language).embed(
                    texts, batch_size=self.batch_size, progress_bar=self.progress_bar, parallel=self.parallel
                )
                group = [replace(doc, sparse_embedding=vector) for doc, vector in zip(group, vectors, strict=True)]
            for i, doc in zip(positions, group, strict=True):
                embedded[i] = replace(doc, sparse_embedding=shared_sparse(doc.sparse_embedding), meta={**doc.meta, "language": language})
        found: dict[str, set[str]] = {}
        for doc, language in zip(documents, chosen, strict=True):
            found.setdefault(str(doc.meta.get("collection", "")), set()).add(language)
        return {"documents": embedded, "languages": {name: sorted(langs) for name, langs in found.items()}}

    def _languages(self, documents: list[Document], wanted: dict[str, str]) -> list[str]:
        """Each document's language: its collection's, for `auto` its file's; English for models without one."""
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
        found = {source: detect(whole[source] if source in whole else "\n\n".join(parts)) for source, parts in texts.items()}
        chosen = []
        for doc in documents:
            language = wanted.get(str(doc.meta.get("collection", "")), DEFAULT)
            chosen.append(found[_source(doc)] if language == AUTO else language)
        return chosen


def _source(doc: Document) -> str:
    """The file a document belongs to (itself when it names none)."""
    return str(doc.meta.get("source_doc_id") or doc.id)
