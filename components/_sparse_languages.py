"""What the BM25 embedders share to embed in a language other than the model's own (see `needle.core.languages`)."""

from typing import Any

from haystack_integrations.components.embedders.fastembed.embedding_backend.fastembed_backend import (
    _FastembedSparseEmbeddingBackendFactory,
)
from needle.core.languages import DEFAULT, bm25_kwargs


def is_bm25(model: str) -> bool:
    """Whether a sparse model is fastembed's BM25 (the only one whose analysis has a language)."""
    return "bm25" in str(model).lower()


def language_backend(embedder: Any, language: str) -> Any:
    """
    The shared fastembed backend of an embedder's model, analysing text in `language`.

    :param embedder: A fastembed sparse embedder (its model, cache folder, threads and model arguments).
    :param language: A language of `needle.core.languages.LANGUAGES`; the model's own for `english`.
    """
    if language == DEFAULT:
        if embedder.embedding_backend is None:
            embedder.warm_up()
        return embedder.embedding_backend
    return _FastembedSparseEmbeddingBackendFactory.get_embedding_backend(
        model_name=embedder.model_name,
        cache_dir=embedder.cache_dir,
        threads=embedder.threads,
        local_files_only=embedder.local_files_only,
        model_kwargs={**(embedder.model_kwargs or {}), **bm25_kwargs(language)},
    )
