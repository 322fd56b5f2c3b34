"""What an Edge shard holds: its vectors, HNSW settings, payload indexes and the BM25 full-text index.

The names and settings here are the on-disk layout: an index built by an earlier Needle opens unchanged,
and one whose text index still builds a graph per frequent word gets that index rebuilt once. How the
vectors are held (`Layout`: HNSW, quantization, what stays on disk, segment size) is the engine's
configuration: a shard opened with another layout takes it on, and `optimize()` rebuilds the segments
that do not match it yet.
"""

from dataclasses import dataclass
from typing import Any

import qdrant_edge as qe

from haystack_integrations.document_stores.needle.layout import DENSE_VECTORS_NAME, SPARSE_VECTORS_NAME
from needle.core.schema import FILE_ID

DEFAULT_PAYLOAD_INDEXES: dict[str, str] = {
    "meta.collection": "keyword",
    "meta.path": "keyword",
    f"meta.{FILE_ID}": "keyword",
    "meta.content_checksum": "keyword",
    "meta.tags": "keyword",
    "meta.folders": "keyword",
    "meta.fields": "keyword",
    "meta.identifiers": "keyword",
    "meta.language": "keyword",
    "meta.date": "datetime",
}
# Documents a store holds before it gets the payload indexes of the fields only a user's filter tests
# (`EdgeDocumentStore`'s `payload_indexes_from`; the full-text index waits for the first full-text search at any
# size). The engine preallocates each index of a growing segment as a sparse file and reads it in whole when it
# opens the store: 4 MB and a 1 MB tracker per keyword field, 32 MB for the full-text index; those six fields and
# the text index held 126 MB of an owner that opened the demo notes' two stores. Without its index a filter on
# such a field checks every document's payload: 1.6 ms more per filtered search at 500 documents, 3.5 ms at
# 1,000, 6.7 ms at 2,000 (docs/performance.md).
PAYLOAD_INDEXES_FROM = 1_000
# The fields every store indexes from its first document, whatever its size: what Needle's own searches and index
# runs filter by (a file's chunks, a collection, a path, a vector to reuse), on every query or every file.
ALWAYS_INDEXED = frozenset({"meta.collection", "meta.path", f"meta.{FILE_ID}", "meta.content_checksum"})
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
QUANTIZATIONS = ("none", "int8", "binary")
# int8 bounds each dimension by the 0.99 quantile of its values, so that a few outliers do not stretch the scale.
_INT8_QUANTILE = 0.99


def _enum_members(enum: Any) -> dict[str, Any]:
    """Lower-cased name → member of an engine enum (they are not iterable)."""
    return {
        name.lower(): getattr(enum, name)
        for name in dir(enum)
        if not name.startswith("_") and isinstance(getattr(enum, name), enum)
    }


STEMMERS = _enum_members(qe.SnowballLanguage)
_STOPWORDS = _enum_members(qe.Language)


@dataclass(frozen=True)
class Layout:
    """
    How a shard holds its vectors and payload: the HNSW graph, quantization, what stays on disk, segment size.

    "On disk" is the engine's `Memory.Cold`: the file is memory-mapped and read on demand, so the operating
    system keeps the pages a query touches in its cache and drops them under memory pressure; "in RAM"
    (`Memory.Cached`) maps the file and reads it in when the segment opens. Quantized vectors always stay in
    RAM (`Memory.Pinned`): they are what the HNSW search walks, and the originals are read back only to
    rescore the best candidates.
    """

    hnsw_m: int = 16
    hnsw_ef_construct: int = 100
    hnsw_on_disk: bool = False
    quantization: str = "none"
    vectors_on_disk: bool = False
    sparse_on_disk: bool = False
    payload_on_disk: bool = True
    max_segment_size_kb: int | None = None
    indexing_threshold_kb: int | None = None


def _memory(on_disk: bool) -> Any:
    return qe.Memory.Cold if on_disk else qe.Memory.Cached


def quantization_config(quantization: str) -> Any:
    """
    The engine's quantization of the dense vectors, kept in RAM.

    :param quantization: A key of `QUANTIZATIONS`: `none`, `int8` (scalar: 4x smaller, each dimension scaled to
        a byte) or `binary` (32x smaller, one bit per dimension).
    :returns: A `ScalarQuantizationConfig`, a `BinaryQuantizationConfig` or `None`.
    """
    if quantization == "int8":
        return qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=_INT8_QUANTILE, memory=qe.Memory.Pinned)
    if quantization == "binary":
        return qe.BinaryQuantizationConfig(memory=qe.Memory.Pinned)
    return None


def edge_config(
    embedding_dim: int, similarity: str, use_sparse_embeddings: bool, sparse_idf: bool, layout: Layout
) -> Any:
    """
    The engine configuration of a shard: a named dense vector, an optional IDF-weighted sparse one, the layout.

    :param embedding_dim: Size of the dense vectors.
    :param similarity: A key of `DISTANCES`.
    :param use_sparse_embeddings: Whether the shard keeps sparse vectors.
    :param sparse_idf: Whether the engine weights sparse vectors by inverse document frequency.
    :param layout: HNSW, quantization, placement and segment sizes.
    :returns: A `qdrant_edge.EdgeConfig`.
    """
    sparse = None
    if use_sparse_embeddings:
        modifier = qe.Modifier.Idf if sparse_idf else None
        memory = qe.Memory.Cold if layout.sparse_on_disk else None  # None: the engine's default, in RAM
        sparse = {SPARSE_VECTORS_NAME: qe.EdgeSparseVectorParams(modifier=modifier, memory=memory)}
    optimizers = None
    if layout.indexing_threshold_kb is not None or layout.max_segment_size_kb is not None:
        optimizers = qe.EdgeOptimizersConfig(
            indexing_threshold=layout.indexing_threshold_kb, max_segment_size=layout.max_segment_size_kb
        )
    dense = qe.EdgeVectorParams(
        size=embedding_dim, distance=DISTANCES[similarity], memory=_memory(layout.vectors_on_disk)
    )
    return qe.EdgeConfig(
        vectors={DENSE_VECTORS_NAME: dense},
        sparse_vectors=sparse,
        hnsw_config=qe.HnswIndexConfig(
            m=layout.hnsw_m,
            ef_construct=layout.hnsw_ef_construct,
            full_scan_threshold=_HNSW_FULL_SCAN_THRESHOLD_KB,
            memory=_memory(layout.hnsw_on_disk),
        ),
        quantization_config=quantization_config(layout.quantization),
        optimizers=optimizers,
        payload_memory=_memory(layout.payload_on_disk),
    )


def search_params(
    hnsw_ef: int | None, quantized: bool, rescore: bool, oversampling: float | None, exact: bool = False
) -> Any:
    """
    The engine's search parameters of a dense query, or `None` when the engine's defaults do.

    An exact search ignores the quantized vectors and scores the originals: the rerank stage reads exact
    scores, and measuring recall needs them.

    :param hnsw_ef: Candidates the HNSW search keeps (more: better recall, slower); `None` for the graph's own.
    :param quantized: Whether the shard quantizes its vectors.
    :param rescore: Re-score the best candidates with the original vectors.
    :param oversampling: Fetch `oversampling x top_k` candidates by quantized score before rescoring.
    :param exact: Score every vector instead of walking the graph.
    :returns: A `qdrant_edge.SearchParams` or `None`.
    """
    if exact:
        ignore = qe.QuantizationSearchParams(ignore=True) if quantized else None
        return qe.SearchParams(exact=True, quantization=ignore)
    quantization = qe.QuantizationSearchParams(rescore=rescore, oversampling=oversampling) if quantized else None
    if hnsw_ef is None and quantization is None:
        return None
    return qe.SearchParams(hnsw_ef=hnsw_ef, quantization=quantization)


def text_index_params(language: str) -> Any:
    """
    Full-text index on `content`: words, lowercased, stopwords dropped, stemmed, BM25-scored.

    `enable_hnsw=False`: with it on, the engine adds HNSW links for every word that occurs in more chunks
    than the full-scan threshold, one extra graph per frequent word. Needle never filters vector search
    by a word, and with those graphs the HNSW build of 100,000 synthetic chunks did not finish within
    600 s, against 82 s without (`eval/scale.py`, docs/performance.md).

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
