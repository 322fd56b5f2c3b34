"""What an Edge shard holds: its vectors, HNSW settings, payload indexes and the BM25 full-text index.

The names and settings here are the on-disk layout: an index built by an earlier Needle opens unchanged,
and one whose text index still builds a graph per frequent word gets that index rebuilt once.
"""

from typing import Any

import qdrant_edge as qe
from haystack_integrations.document_stores.qdrant.converters import DENSE_VECTORS_NAME, SPARSE_VECTORS_NAME

DEFAULT_PAYLOAD_INDEXES: dict[str, str] = {
    "meta.collection": "keyword",
    "meta.path": "keyword",
    "meta.source_doc_id": "keyword",
    "meta.tags": "keyword",
    "meta.folders": "keyword",
    "meta.fields": "keyword",
    "meta.identifiers": "keyword",
    "meta.date": "datetime",
}
DISTANCES = {"cosine": qe.Distance.Cosine, "dot_product": qe.Distance.Dot, "l2": qe.Distance.Euclid}
SCHEMA_TYPES = {
    "keyword": qe.PayloadSchemaType.Keyword,
    "integer": qe.PayloadSchemaType.Integer,
    "float": qe.PayloadSchemaType.Float,
    "bool": qe.PayloadSchemaType.Bool,
    "datetime": qe.PayloadSchemaType.Datetime,
    "uuid": qe.PayloadSchemaType.Uuid,
    "text": qe.PayloadSchemaType.Text,
}
_HNSW_FULL_SCAN_THRESHOLD_KB = 10_000


def _enum_members(enum: Any) -> dict[str, Any]:
    """Lower-cased name → member of an engine enum (they are not iterable)."""
    return {
        name.lower(): getattr(enum, name)
        for name in dir(enum)
        if not name.startswith("_") and isinstance(getattr(enum, name), enum)
    }


STEMMERS = _enum_members(qe.SnowballLanguage)
_STOPWORDS = _enum_members(qe.Language)


def edge_config(
    embedding_dim: int,
    similarity: str,
    use_sparse_embeddings: bool,
    sparse_idf: bool,
    hnsw_m: int,
    hnsw_ef_construct: int,
    indexing_threshold_kb: int | None,
) -> Any:
    """
    The engine configuration of a shard: a named dense vector, an optional IDF-weighted sparse one, HNSW.

    :param embedding_dim: Size of the dense vectors.
    :param similarity: A key of `DISTANCES`.
    :param use_sparse_embeddings: Whether the shard keeps sparse vectors.
    :param sparse_idf: Whether the engine weights sparse vectors by inverse document frequency.
    :param hnsw_m: Edges per node of the HNSW graph.
    :param hnsw_ef_construct: Candidates considered while building the graph.
    :param indexing_threshold_kb: Segment size above which the graph is built; `None` for the engine's default.
    :returns: A `qdrant_edge.EdgeConfig`.
    """
    sparse = None
    if use_sparse_embeddings:
        modifier = qe.Modifier.Idf if sparse_idf else None
        sparse = {SPARSE_VECTORS_NAME: qe.EdgeSparseVectorParams(modifier=modifier)}
    optimizers = None
    if indexing_threshold_kb is not None:
        optimizers = qe.EdgeOptimizersConfig(indexing_threshold=indexing_threshold_kb)
    return qe.EdgeConfig(
        vectors={DENSE_VECTORS_NAME: qe.EdgeVectorParams(size=embedding_dim, distance=DISTANCES[similarity])},
        sparse_vectors=sparse,
        hnsw_config=qe.HnswIndexConfig(
            m=hnsw_m, ef_construct=hnsw_ef_construct, full_scan_threshold=_HNSW_FULL_SCAN_THRESHOLD_KB
        ),
        optimizers=optimizers,
    )


def text_index_params(language: str) -> Any:
    """
    Full-text index on `content`: words, lowercased, stopwords dropped, stemmed, BM25-scored.

    `enable_hnsw=False`: with it on, the engine adds HNSW links for every word that occurs in more chunks
    than the full-scan threshold, one extra graph per frequent word. Needle never filters vector search
    by a word, and with those graphs the HNSW build of 100,000 synthetic chunks did not finish within
    600 s, against 82 s without (`eval/scale.py`, README).

    :param language: A key of `STEMMERS` (any case).
    :returns: A `qdrant_edge.TextIndexParams`.
    """
    language = language.lower()
    return qe.TextIndexParams(
        tokenizer=qe.TokenizerType.Word,
        lowercase=True,
        stopwords=_STOPWORDS.get(language),
        stemmer=qe.SnowballParams(STEMMERS[language]),
        scoring=qe.TextScoringParams(qe.TextScoringType.Bm25),
        enable_hnsw=False,
    )


def missing_indexes(shard: Any, payload_indexes: dict[str, str], text_language: str | None) -> dict[str, Any]:
    """
    Drop a full-text index that builds word graphs, and list the indexes the shard lacks.

    Indexes written before `enable_hnsw=False` are rebuilt once (a second or two per 10,000 chunks).

    :param shard: The open `EdgeShard`; the caller holds its write lock.
    :param payload_indexes: Payload field → a key of `SCHEMA_TYPES`.
    :param text_language: The full-text index's language; `None` for no text index.
    :returns: Field → index parameters to create (`shard.update(create_field_index(...))`).
    """
    schema_info = shard.info().payload_schema
    existing = set(schema_info)
    wanted: dict[str, Any] = {
        field: SCHEMA_TYPES[schema] for field, schema in payload_indexes.items() if field not in existing
    }
    if text_language is not None and ("content" not in existing or _builds_word_graphs(schema_info["content"])):
        if "content" in existing:
            shard.update(qe.UpdateOperation.delete_field_index("content"))
        wanted["content"] = text_index_params(text_language)
    return wanted


def _builds_word_graphs(info: Any) -> bool:
    """Whether an existing full-text index asks the HNSW build for a graph per frequent word."""
    return getattr(info.params, "enable_hnsw", False) is not False
