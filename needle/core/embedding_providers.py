"""Where the dense model runs: fastembed in-process, an OpenAI-compatible server, or Ollama, chosen in configuration.

The graphs in `pipelines/` name Needle's fastembed embedders, the offline default. With `embedding.provider`
set to `openai` or `ollama`, the environment (`needle.runtime.environment`) builds the same graphs with the served
embedder of that provider in place of each dense fastembed one (`served_type`), and fills its parameters
from the `embedding:` settings (`served_params`): so one YAML file serves every provider, and the graph a
caller dumps names the class that really runs. Components that embed with the index's model themselves
(`VariantRetriever`, `ClaimCoverage`) get the served query embedder as `dense_embedder`.

A served model's prefixes default to the ones its authors trained it with (`KNOWN_PREFIXES`: nomic's
`search_query: `/`search_document: `, e5's `query: `/`passage: `...); fastembed models keep the configured
ones (empty by default), as before. Its dimension is the index's recorded one, else the first answer's:
`dimension` embeds one word once per process to learn it before the store is created.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from haystack.utils import Secret

from needle.core.model_files import embedding_dim
from needle.core.settings import Settings

FASTEMBED = "fastembed"
# The server a provider talks to when `embedding.url` is not set: Ollama's port, llama.cpp server's.
DEFAULT_URLS = {"ollama": "http://127.0.0.1:11434", "openai": "http://127.0.0.1:8080/v1"}
# Provider -> (query embedder, document embedder) that replace the graphs' fastembed ones.
SERVED_TYPES = {
    "openai": (
        "haystack_integrations.components.embedders.needle.openai_dense_query_embedder.OpenAIDenseQueryEmbedder",
        "haystack_integrations.components.embedders.needle.openai_dense_document_embedder.OpenAIDenseDocumentEmbedder",
    ),
    "ollama": (
        "haystack_integrations.components.embedders.needle.ollama_dense_query_embedder.OllamaDenseQueryEmbedder",
        "haystack_integrations.components.embedders.needle.ollama_dense_document_embedder.OllamaDenseDocumentEmbedder",
    ),
}
# Parameters of a graph's fastembed document embedder that mean the same to a served one.
CARRIED = ("meta_fields_to_embed", "embedding_separator", "suffix")
# (pattern on the model name, query prefix, document prefix), first match wins: the prefixes each model
# family was trained with (their model cards). Names as Ollama and Hugging Face spell them.
KNOWN_PREFIXES: list[tuple[str, str, str]] = [
    (r"nomic-embed-text", "search_query: ", "search_document: "),
    (r"(^|[/_-])e5([-_.:]|$)", "query: ", "passage: "),
    (r"mxbai-embed-large", "Represent this sentence for searching relevant passages: ", ""),
    (r"snowflake-arctic-embed", "Represent this sentence for searching relevant passages: ", ""),
    (r"bge-(small|base|large)-en", "Represent this sentence for searching relevant passages: ", ""),
]


def is_served(settings: Settings) -> bool:
    """Whether the dense model runs on a server rather than in-process."""
    return settings.embedding.provider != FASTEMBED


def server_url(settings: Settings) -> str:
    """The served model's server (`embedding.url`, else the provider's usual local address)."""
    return (settings.embedding.url or DEFAULT_URLS[settings.embedding.provider]).rstrip("/")


def known_prefixes(model: str) -> tuple[str, str]:
    """The query and document prefixes a model was trained with, ("", "") when Needle does not know it."""
    name = model.lower()
    for pattern, query, document in KNOWN_PREFIXES:
        if re.search(pattern, name):
            return query, document
    return "", ""


def prefixes(settings: Settings) -> tuple[str, str]:
    """
    The query and document prefixes in force: the configured ones, else (served models only) the model's own.

    :returns: `(query_prefix, document_prefix)`.
    """
    embedding = settings.embedding
    known = known_prefixes(embedding.model) if is_served(settings) else ("", "")
    query = embedding.query_prefix if embedding.query_prefix is not None else known[0]
    document = embedding.document_prefix if embedding.document_prefix is not None else known[1]
    return query, document


def served_type(settings: Settings, kind: str) -> str:
    """
    The class that embeds `kind` ("query" or "document") for the configured provider.

    :raises ValueError: For fastembed, which the graphs already name.
    """
    if not is_served(settings):
        raise ValueError("fastembed embedders are the graphs' own; nothing replaces them")
    query, document = SERVED_TYPES[settings.embedding.provider]
    return query if kind == "query" else document


def served_params(settings: Settings, kind: str, dim: int | None) -> dict[str, Any]:
    """
    Init parameters of the served embedder of `kind` ("query" or "document") from the `embedding:` settings.

    :param dim: The size its vectors must have (`None`: any).
    """
    embedding = settings.embedding
    query_prefix, document_prefix = prefixes(settings)
    params: dict[str, Any] = {
        "model": embedding.model,
        "prefix": query_prefix if kind == "query" else document_prefix,
        "timeout": embedding.timeout,
        "max_retries": embedding.max_retries,
        "batch_size": embedding.batch_size,
        "embedding_dim": dim,
    }
    if embedding.provider == "openai":
        params["api_base_url"] = server_url(settings)
        params["api_key"] = Secret.from_env_var([embedding.api_key_env], strict=False)
    else:
        params["url"] = server_url(settings)
    return params


def served_embedder(settings: Settings, kind: str = "query", dim: int | None = None) -> Any:
    """A served embedder built from the settings (for the dimension probe and for measurements)."""
    from haystack.core.serialization import import_class_by_name

    return import_class_by_name(served_type(settings, kind))(**served_params(settings, kind, dim))


_probed: dict[tuple[str, str, str], int] = {}
_probe_lock = threading.Lock()


def dimension(settings: Settings, recorded: dict[str, Any] | None = None) -> int:
    """
    The size of the index's dense vectors under these settings (`index_info.dense_dimension` reads `recorded`).

    fastembed models: from fastembed's list. A served model: the index's recorded size when it was built by
    the same provider and model, else the size of the server's first answer (asked once per process).

    :param recorded: The index's recorded fingerprint, if any.
    :raises ValueError: For a fastembed model fastembed does not list.
    :raises EmbeddingServerError: When the server cannot be asked.
    """
    if not is_served(settings):
        return embedding_dim(settings.embedding.model)
    recorded = recorded or {}
    if (
        recorded.get("embedding_provider") == settings.embedding.provider
        and recorded.get("embedding_model") == settings.embedding.model
        and isinstance(recorded.get("embedding_dim"), int)
    ):
        return int(recorded["embedding_dim"])
    key = (settings.embedding.provider, server_url(settings), settings.embedding.model)
    with _probe_lock:
        if key not in _probed:
            _probed[key] = len(served_embedder(settings).embed_texts(["dimension"])[0])
        return _probed[key]


def index_dimension(settings: Settings) -> int:
    """
    The size of the index's dense vectors under these settings: the fastembed model's, or a served model's as
    the index recorded it (`Settings.provenance_file`) or, for an index not built yet, as its server answers.

    :raises ValueError: For a fastembed model fastembed does not list.
    :raises EmbeddingServerError: When the server must be asked and cannot be.
    """
    if not is_served(settings):
        return dimension(settings)
    try:
        recorded = json.loads(settings.provenance_file.read_text(encoding="utf-8")).get("fingerprint")
    except (OSError, ValueError, AttributeError):  # no index yet, or a provenance `needle check` reports
        recorded = None
    return dimension(settings, recorded if isinstance(recorded, dict) else None)


__all__ = [
    "DEFAULT_URLS",
    "KNOWN_PREFIXES",
    "SERVED_TYPES",
    "dimension",
    "index_dimension",
    "is_served",
    "known_prefixes",
    "prefixes",
    "served_embedder",
    "served_params",
    "served_type",
    "server_url",
]
