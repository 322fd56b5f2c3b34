"""
A Haystack document store on Qdrant Edge, the Qdrant engine embedded in the Python process.

qdrant-client's local mode (`QdrantClient(path=...)`) is a pure-Python stand-in for Qdrant: it keeps every
point in Python objects, scores by brute force and has no payload indexes, no HNSW and no BM25. Qdrant Edge
(`qdrant-edge-py`) is the engine itself, run in-process: real segments, HNSW, payload indexes, a write-ahead
log and a BM25-scored full-text index, stored in the server's data format. The payload layout, named vectors
and point ids below are the ones qdrant-haystack writes, so a snapshot of this folder can move to a Qdrant
server and be served there by `QdrantDocumentStore` (or `QdrantServerDocumentStore`).
"""

import atexit
import dataclasses
import fcntl
import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import Any

import numpy as np
import qdrant_edge as qe
from haystack import default_from_dict, default_to_dict, logging
from haystack.dataclasses import Document
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError, DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.errors import FilterError
from haystack_integrations.document_stores.qdrant.converters import DENSE_VECTORS_NAME, SPARSE_VECTORS_NAME, convert_id

from components._checks import QueryVector, check_query_embedding, check_top_k

logger = logging.getLogger(__name__)

DEFAULT_PAYLOAD_INDEXES: dict[str, str] = {
    "meta.collection": "keyword",
    "meta.path": "keyword",
    "meta.source_doc_id": "keyword",
    "meta.tags": "keyword",
}
LOCK_FILE_NAME = ".edge_document_store.lock"

_DISTANCES = {"cosine": qe.Distance.Cosine, "dot_product": qe.Distance.Dot, "l2": qe.Distance.Euclid}
_SCHEMA_TYPES = {
    "keyword": qe.PayloadSchemaType.Keyword,
    "integer": qe.PayloadSchemaType.Integer,
    "float": qe.PayloadSchemaType.Float,
    "bool": qe.PayloadSchemaType.Bool,
    "datetime": qe.PayloadSchemaType.Datetime,
    "uuid": qe.PayloadSchemaType.Uuid,
    "text": qe.PayloadSchemaType.Text,
}


def _builds_word_graphs(info: Any) -> bool:
    """Whether an existing full-text index asks the HNSW build for a graph per frequent word."""
    return getattr(info.params, "enable_hnsw", False) is not False


def _enum_members(enum: Any) -> dict[str, Any]:
    """Lower-cased name → member of an engine enum (they are not iterable)."""
    return {
        name.lower(): getattr(enum, name)
        for name in dir(enum)
        if not name.startswith("_") and isinstance(getattr(enum, name), enum)
    }


_STEMMERS = _enum_members(qe.SnowballLanguage)
_STOPWORDS = _enum_members(qe.Language)
_RANGE_OPERATORS = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}
_HNSW_FULL_SCAN_THRESHOLD_KB = 10_000
_WRITE_BATCH_SIZE = 512


class StoreLockedError(RuntimeError):
    """The store folder is open in another process."""

    def __init__(self, path: str, pid: str | None) -> None:
        """
        Describe which folder is held, and by whom.

        :param path: The store folder.
        :param pid: The id of the process holding it, when known.
        """
        holder = f"process {pid}" if pid else "another process"
        super().__init__(
            f"the index at {path} is already open in {holder}. Qdrant Edge serves one process at a time: "
            f"stop that process, or point every process at a Qdrant server instead."
        )
        self.path = path
        self.pid = pid


class _OpenShard:
    """One open Edge shard, shared by every store instance of this process that points at its folder."""

    def __init__(self, path: str, shard: Any, lock_fd: int, layout: tuple) -> None:
        self.path = path
        self.shard = shard
        self.lock_fd = lock_fd
        self.layout = layout
        self.users = 0
        self.pid = os.getpid()
        # Serialises writers (duplicate checks must not interleave with other writes); readers never take it.
        self.write_lock = threading.RLock()


# Haystack builds one store instance per component when it loads a pipeline YAML, and several pipelines of
# one process (search, query, ingest) name the same folder. Edge allows one open shard per folder, so the
# instances share it through this registry, keyed by the folder's real path.
_OPEN_SHARDS: dict[str, _OpenShard] = {}
_OPEN_SHARDS_LOCK = threading.Lock()


class EdgeDocumentStore:
    """
    A document store on Qdrant Edge: dense, sparse and BM25 search over one folder, in-process.

    Documents are stored as qdrant-haystack stores them (payload `Document.to_dict(flatten=False)` without
    vectors; named vectors `text-dense` and `text-sparse`; point id `uuid5` of the document id), with keyword
    indexes on the metadata Needle filters by and a BM25-scored full-text index on `content`. The shard opens
    on first use, once per folder and process; a second process gets a `StoreLockedError`. Writes are flushed
    to disk before they return unless `durable_writes` is off. Instances are thread-safe: writers take turns,
    queries never wait for them.

    Usage example:
    ```python
    store = EdgeDocumentStore(path="index/edge", embedding_dim=384)
    store.write_documents([Document(content="restic backs up my laptop", embedding=[0.1] * 384)])
    store.query_text("laptop backups", top_k=5)
    ```
    """

    def __init__(
        self,
        path: str,
        embedding_dim: int = 384,
        similarity: str = "cosine",
        use_sparse_embeddings: bool = True,
        sparse_idf: bool = True,
        text_index: bool = True,
        text_language: str = "english",
        bm25_k: float = 1.2,
        bm25_b: float = 0.75,
        payload_indexes: dict[str, str] | None = None,
        hnsw_m: int = 16,
        hnsw_ef_construct: int = 100,
        indexing_threshold_kb: int | None = None,
        durable_writes: bool = True,
        scroll_size: int = 1000,
    ) -> None:
        """
        Configure the store; nothing is opened until first use.

        :param path: Folder of the shard; created on first use when missing.
        :param embedding_dim: Size of the dense vectors.
        :param similarity: `cosine`, `dot_product` or `l2`.
        :param use_sparse_embeddings: Whether to store sparse vectors (`text-sparse`).
        :param sparse_idf: Whether the engine weights sparse vectors by inverse document frequency (BM25, BM42).
        :param text_index: Whether to keep a BM25-scored full-text index on `content` for `query_text`.
        :param text_language: Stemmer and stopwords of the full-text index (a Snowball language, e.g. `english`);
            fixed when the index is created (`delete_all_documents(recreate_index=True)` rebuilds it).
        :param bm25_k: BM25 term-frequency saturation of `query_text`.
        :param bm25_b: BM25 length normalisation of `query_text`, between 0 and 1.
        :param payload_indexes: Payload field → index type (`keyword`, `integer`, `float`, `bool`, `datetime`,
            `uuid`, `text`). `None` indexes `meta.collection`, `meta.path`, `meta.source_doc_id` and `meta.tags`.
        :param hnsw_m: Edges per node of the HNSW graph (0 disables the graph).
        :param hnsw_ef_construct: Candidates considered while building the HNSW graph.
        :param indexing_threshold_kb: Segment size above which `optimize()` builds the HNSW graph;
            `None` keeps the engine's default.
        :param durable_writes: Flush to disk after every write, delete and update. Turn off for bulk loads
            and call `flush()` at the end; the engine's write-ahead log still survives a crashed process.
        :param scroll_size: Points fetched per page when listing documents.
        :raises ValueError: When a parameter is out of range or unknown.
        """
        if not isinstance(path, str) or not path:
            raise ValueError(f"path must be a non-empty string, got {path!r}")
        if embedding_dim <= 0:
            raise ValueError(f"embedding_dim must be > 0, got {embedding_dim}")
        if similarity not in _DISTANCES:
            raise ValueError(f"similarity must be one of {', '.join(_DISTANCES)}, got {similarity!r}")
        if text_language.lower() not in _STEMMERS:
            raise ValueError(f"text_language must be one of {', '.join(sorted(_STEMMERS))}, got {text_language!r}")
        if bm25_k < 0:
            raise ValueError(f"bm25_k must be >= 0, got {bm25_k}")
        if not 0 <= bm25_b <= 1:
            raise ValueError(f"bm25_b must be between 0 and 1, got {bm25_b}")
        resolved_indexes = dict(DEFAULT_PAYLOAD_INDEXES if payload_indexes is None else payload_indexes)
        for field, schema in resolved_indexes.items():
            if schema not in _SCHEMA_TYPES:
                raise ValueError(
                    f"payload_indexes['{field}'] must be one of {', '.join(_SCHEMA_TYPES)}, got {schema!r}"
                )
        if hnsw_m < 0:
            raise ValueError(f"hnsw_m must be >= 0, got {hnsw_m}")
        if hnsw_ef_construct < 4:
            raise ValueError(f"hnsw_ef_construct must be >= 4, got {hnsw_ef_construct}")
        if indexing_threshold_kb is not None and indexing_threshold_kb <= 0:
            raise ValueError(f"indexing_threshold_kb must be > 0, got {indexing_threshold_kb}")
        if scroll_size <= 0:
            raise ValueError(f"scroll_size must be > 0, got {scroll_size}")

        self.path = path
        self.embedding_dim = embedding_dim
        self.similarity = similarity
        self.use_sparse_embeddings = use_sparse_embeddings
        self.sparse_idf = sparse_idf
        self.text_index = text_index
        self.text_language = text_language
        self.bm25_k = bm25_k
        self.bm25_b = bm25_b
        self.payload_indexes = resolved_indexes
        self.hnsw_m = hnsw_m
        self.hnsw_ef_construct = hnsw_ef_construct
        self.indexing_threshold_kb = indexing_threshold_kb
        self.durable_writes = durable_writes
        self.scroll_size = scroll_size

        self._open: _OpenShard | None = None
        self._open_lock = threading.Lock()

    # ----------------------------------------------------------------------------------------------------
    # Serialisation

    def to_dict(self) -> dict[str, Any]:
        """
        Serialise the store's configuration.

        :returns: A dictionary with `type` and `init_parameters`.
        """
        return default_to_dict(
            self,
            path=self.path,
            embedding_dim=self.embedding_dim,
            similarity=self.similarity,
            use_sparse_embeddings=self.use_sparse_embeddings,
            sparse_idf=self.sparse_idf,
            text_index=self.text_index,
            text_language=self.text_language,
            bm25_k=self.bm25_k,
            bm25_b=self.bm25_b,
            payload_indexes=self.payload_indexes,
            hnsw_m=self.hnsw_m,
            hnsw_ef_construct=self.hnsw_ef_construct,
            indexing_threshold_kb=self.indexing_threshold_kb,
            durable_writes=self.durable_writes,
            scroll_size=self.scroll_size,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EdgeDocumentStore":
        """
        Rebuild a store from `to_dict()` output.

        :param data: The serialised store.
        :returns: The store, not yet opened.
        """
        return default_from_dict(cls, data)

    # ----------------------------------------------------------------------------------------------------
    # Opening and closing

    def _shard(self) -> _OpenShard:
        """Open the shard on first use (or share the one this process already opened)."""
        opened = self._open
        if opened is not None and opened.pid == os.getpid():
            return opened
        with self._open_lock:
            if self._open is not None and self._open.pid != os.getpid():
                # Inherited through fork(): the shard belongs to the parent; this process opens its own.
                self._open = None
            if self._open is None:
                opened = _acquire(self)
                try:
                    self._ensure_indexes(opened)
                except Exception:
                    _release(opened)
                    raise
                self._open = opened
            return self._open

    def _edge_config(self) -> Any:
        """The engine configuration this store asks for."""
        sparse = None
        if self.use_sparse_embeddings:
            modifier = qe.Modifier.Idf if self.sparse_idf else None
            sparse = {SPARSE_VECTORS_NAME: qe.EdgeSparseVectorParams(modifier=modifier)}
        optimizers = None
        if self.indexing_threshold_kb is not None:
            optimizers = qe.EdgeOptimizersConfig(indexing_threshold=self.indexing_threshold_kb)
        return qe.EdgeConfig(
            vectors={
                DENSE_VECTORS_NAME: qe.EdgeVectorParams(size=self.embedding_dim, distance=_DISTANCES[self.similarity])
            },
            sparse_vectors=sparse,
            hnsw_config=qe.HnswIndexConfig(
                m=self.hnsw_m, ef_construct=self.hnsw_ef_construct, full_scan_threshold=_HNSW_FULL_SCAN_THRESHOLD_KB
            ),
            optimizers=optimizers,
        )

    def _text_index_params(self) -> Any:
        """
        Full-text index on `content`: words, lowercased, stopwords dropped, stemmed, BM25-scored.

        `enable_hnsw=False`: with it on, the engine adds HNSW links for every word that occurs in more chunks
        than the full-scan threshold, one extra graph per frequent word. Needle never filters vector search
        by a word, and with those graphs the HNSW build of 100,000 synthetic chunks did not finish within
        600 s, against 82 s without (`eval/scale.py`, README).
        """
        language = self.text_language.lower()
        return qe.TextIndexParams(
            tokenizer=qe.TokenizerType.Word,
            lowercase=True,
            stopwords=_STOPWORDS.get(language),
            stemmer=qe.SnowballParams(_STEMMERS[language]),
            scoring=qe.TextScoringParams(qe.TextScoringType.Bm25),
            enable_hnsw=False,
        )

    def _ensure_indexes(self, opened: _OpenShard) -> None:
        """Create the payload indexes this store needs and the shard lacks."""
        with opened.write_lock, _engine_errors("create payload indexes"):
            schema_info = opened.shard.info().payload_schema
            existing = set(schema_info)
            wanted: dict[str, Any] = {
                field: _SCHEMA_TYPES[schema] for field, schema in self.payload_indexes.items() if field not in existing
            }
            if self.text_index and ("content" not in existing or _builds_word_graphs(schema_info["content"])):
                # Indexes written before `enable_hnsw=False` are rebuilt once (a second or two per 10,000 chunks).
                if "content" in existing:
                    opened.shard.update(qe.UpdateOperation.delete_field_index("content"))
                wanted["content"] = self._text_index_params()
            # The write-ahead log keeps the new indexes; no flush needed.
            for field, schema in wanted.items():
                opened.shard.update(qe.UpdateOperation.create_field_index(field, schema))
                logger.info("Created payload index on {field} in {path}", field=field, path=opened.path)

    def flush(self) -> None:
        """
        Write every acknowledged change to disk. A no-op when the store was never opened.

        :raises DocumentStoreError: When the engine fails to flush.
        """
        opened = self._open
        if opened is None:
            return
        with opened.write_lock, _engine_errors("flush"):
            opened.shard.flush()

    def optimize(self) -> bool:
        """
        Merge and vacuum segments and build the HNSW graph of segments above the indexing threshold.

        Blocks writers (not readers) until the engine has nothing left to optimise.

        :returns: Whether any segment changed.
        :raises DocumentStoreError: When the engine fails to optimise.
        """
        opened = self._shard()
        with opened.write_lock, _engine_errors("optimize"):
            changed = bool(opened.shard.optimize())
            opened.shard.flush()
        logger.info("Optimized {path}: {changed}", path=opened.path, changed=changed)
        return changed

    def close(self) -> None:
        """
        Release this instance's hold on the shard; the last instance of the process flushes and closes it.

        The store reopens on next use.
        """
        with self._open_lock:
            opened, self._open = self._open, None
        if opened is not None:
            _release(opened)

    # ----------------------------------------------------------------------------------------------------
    # DocumentStore protocol

    def count_documents(self) -> int:
        """
        Count the documents in the store.

        :returns: The number of documents.
        """
        with _engine_errors("count documents"):
            return int(self._shard().shard.count(qe.CountRequest(exact=True)))

    def iter_documents(self, filters: dict[str, Any] | None = None) -> Iterator[Document]:
        """
        Stream the matching documents with their vectors, batch by batch (for copying an index elsewhere).

        :param filters: Haystack filters; all documents when `None`.
        :returns: An iterator of documents.
        """
        return self._scroll_documents(filters, with_vectors=True)

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """
        Return the documents matching Haystack filters, with their vectors, in point-id order.

        :param filters: Haystack filters over `id`, `content` and `meta.<field>`; `None` returns all.
        :returns: The matching documents.
        :raises FilterError: When the filters are malformed or use something the engine cannot evaluate.
        """
        return list(self._scroll_documents(filters, with_vectors=True))

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """
        Write documents, durable on return when `durable_writes` is on.

        :param documents: The documents to write; embeddings must have `embedding_dim` values.
        :param policy: `NONE` and `FAIL` raise on an id that is already stored (or repeated in the batch),
            `SKIP` keeps the stored document, `OVERWRITE` replaces it.
        :returns: The number of documents written.
        :raises ValueError: When `documents` is not a list of Documents or an embedding has the wrong size.
        :raises DuplicateDocumentError: With `NONE` or `FAIL` when an id already exists.
        """
        if not isinstance(documents, list) or not all(isinstance(doc, Document) for doc in documents):
            raise ValueError("write_documents() expects a list of Documents")
        if not documents:
            return 0
        unique: dict[str, Document] = {}
        for doc in documents:
            if doc.id in unique and policy in (DuplicatePolicy.NONE, DuplicatePolicy.FAIL):
                raise DuplicateDocumentError(f"document id {doc.id} appears twice in the batch")
            if doc.id not in unique or policy == DuplicatePolicy.OVERWRITE:
                unique[doc.id] = doc
        points = {doc_id: self._to_point(doc) for doc_id, doc in unique.items()}

        opened = self._shard()
        with opened.write_lock:
            if policy != DuplicatePolicy.OVERWRITE:
                with _engine_errors("look up existing documents"):
                    existing = opened.shard.retrieve([point.id for point in points.values()], False, False)
                existing_ids = {str(record.id) for record in existing}
                clashes = [doc_id for doc_id, point in points.items() if str(point.id) in existing_ids]
                if clashes and policy in (DuplicatePolicy.NONE, DuplicatePolicy.FAIL):
                    raise DuplicateDocumentError(f"documents already stored in {self.path}: {', '.join(clashes)}")
                for doc_id in clashes:
                    del points[doc_id]
            batch = list(points.values())
            with _engine_errors("write documents"):
                for start in range(0, len(batch), _WRITE_BATCH_SIZE):
                    opened.shard.update(qe.UpdateOperation.upsert_points(batch[start : start + _WRITE_BATCH_SIZE]))
                if self.durable_writes:
                    opened.shard.flush()
        logger.debug("Wrote {count} documents to {path}", count=len(batch), path=opened.path)
        return len(batch)

    def delete_documents(self, document_ids: list[str]) -> None:
        """
        Delete documents by id; unknown ids are ignored.

        :param document_ids: Ids of the documents to delete.
        """
        if not document_ids:
            return
        opened = self._shard()
        with opened.write_lock, _engine_errors("delete documents"):
            opened.shard.update(qe.UpdateOperation.delete_points([_point_id(doc_id) for doc_id in document_ids]))
            if self.durable_writes:
                opened.shard.flush()

    # ----------------------------------------------------------------------------------------------------
    # Extended operations

    def delete_all_documents(self, recreate_index: bool = False) -> None:
        """
        Delete every document.

        :param recreate_index: Also drop the shard and create it afresh with this store's configuration
            (vectors and indexes). Other store instances of the process that share the folder see the new
            shard; a query running in another thread at that moment fails.
        """
        opened = self._shard()
        with opened.write_lock, _engine_errors("delete all documents"):
            if not recreate_index:
                opened.shard.update(qe.UpdateOperation.delete_points_by_filter(qe.Filter(must=[])))
                if self.durable_writes:
                    opened.shard.flush()
                return
            opened.shard.close()
            _remove_shard_files(opened.path)
            opened.shard = qe.EdgeShard.create(opened.path, self._edge_config())
            opened.layout = _layout(self)
        self._ensure_indexes(opened)
        logger.info("Recreated the index at {path}", path=opened.path)

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """
        Delete the documents matching Haystack filters.

        :param filters: Haystack filters; empty filters delete nothing.
        :returns: The number of documents deleted.
        :raises FilterError: When the filters are malformed.
        """
        edge_filter = _edge_filter(filters)
        if edge_filter is None:
            return 0
        opened = self._shard()
        with opened.write_lock, _engine_errors("delete documents by filter"):
            count = int(opened.shard.count(qe.CountRequest(exact=True, filter=edge_filter)))
            if count:
                opened.shard.update(qe.UpdateOperation.delete_points_by_filter(edge_filter))
                if self.durable_writes:
                    opened.shard.flush()
        return count

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """
        Merge `meta` into the metadata of the documents matching Haystack filters; vectors stay untouched.

        :param filters: Haystack filters; empty filters update nothing.
        :param meta: Metadata fields to set.
        :returns: The number of documents updated.
        :raises FilterError: When the filters are malformed.
        :raises ValueError: When `meta` is not a dictionary.
        """
        if not isinstance(meta, dict):
            raise ValueError(f"meta must be a dictionary, got {type(meta).__name__}")
        edge_filter = _edge_filter(filters)
        if edge_filter is None or not meta:
            return 0
        opened = self._shard()
        with opened.write_lock, _engine_errors("update documents by filter"):
            count = int(opened.shard.count(qe.CountRequest(exact=True, filter=edge_filter)))
            if count:
                opened.shard.update(qe.UpdateOperation.set_payload_by_filter(edge_filter, meta, key="meta"))
                if self.durable_writes:
                    opened.shard.flush()
        return count

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        """
        Count the documents matching Haystack filters.

        :param filters: Haystack filters; empty filters count every document.
        :returns: The number of matching documents.
        :raises FilterError: When the filters are malformed.
        """
        edge_filter = _edge_filter(filters)
        with _engine_errors("count documents"):
            return int(self._shard().shard.count(qe.CountRequest(exact=True, filter=edge_filter)))

    def get_documents_by_id(self, document_ids: list[str]) -> list[Document]:
        """
        Fetch documents, with their vectors, by id; unknown ids are skipped.

        :param document_ids: The ids to fetch.
        :returns: The stored documents.
        """
        if not document_ids:
            return []
        with _engine_errors("retrieve documents"):
            records = self._shard().shard.retrieve([_point_id(doc_id) for doc_id in document_ids], True, True)
        return [_to_document(record) for record in records]

    def list_documents_meta(
        self, filters: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """
        List ids and metadata without content or vectors (cheap enough for diffs over the whole index).

        :param filters: Haystack filters; `None` lists every document.
        :param fields: Metadata fields to return (`"path"` or `"meta.path"`); `None` returns all metadata.
            Fields a document lacks are left out of its `meta`.
        :returns: `[{"id": ..., "meta": {...}}]` in point-id order.
        :raises FilterError: When the filters are malformed.
        """
        names = None if fields is None else [_meta_name(field) for field in fields]
        selector = ["id", "meta"] if names is None else ["id", *(f"meta.{name}" for name in names)]
        rows = []
        for record in self._scroll(filters, with_payload=selector, with_vectors=False):
            payload = record.payload or {}
            meta = payload.get("meta") or {}
            if names is not None:
                meta = {name: meta[name] for name in names if name in meta}
            rows.append({"id": payload.get("id", str(record.id)), "meta": meta})
        return rows

    def count_unique_metadata_by_filter(self, filters: dict[str, Any], metadata_fields: list[str]) -> dict[str, int]:
        """
        Count distinct values of metadata fields among the documents matching Haystack filters.

        Values of different types stay distinct (`1`, `1.0`, `"1"`, `True`); each element of a list counts.

        :param filters: Haystack filters; empty filters consider every document.
        :param metadata_fields: The fields to count (`"status"` or `"meta.status"`).
        :returns: Field → number of distinct values.
        :raises FilterError: When the filters are malformed.
        """
        names = [_meta_name(field) for field in metadata_fields]
        seen: dict[str, set] = {name: set() for name in names}
        for meta in self._scroll_meta(filters, names):
            for name in names:
                for value in _values(meta, name):
                    seen[name].add(_distinct_key(value))
        return {field: len(seen[name]) for field, name in zip(metadata_fields, names, strict=True)}

    def get_metadata_fields_info(self) -> dict[str, dict[str, str]]:
        """
        Name and type of every metadata field in the store.

        :returns: Field → `{"type": "keyword" | "long" | "float" | "boolean"}`; lists report their elements' type.
        """
        info: dict[str, dict[str, str]] = {}
        for meta in self._scroll_meta(None, None):
            for name, value in meta.items():
                if name not in info and value is not None:
                    info[name] = {"type": _type_name(value[0] if isinstance(value, list) and value else value)}
        return info

    def get_metadata_field_min_max(self, metadata_field: str) -> dict[str, Any]:
        """
        Smallest and largest value of a metadata field.

        :param metadata_field: The field (`"priority"` or `"meta.priority"`).
        :returns: `{"min": ..., "max": ...}`, both `None` when no document has a comparable value.
        """
        name = _meta_name(metadata_field)
        values = [
            value
            for meta in self._scroll_meta(None, [name])
            for value in _values(meta, name)
            if not isinstance(value, (bool, dict))
        ]
        numbers = [value for value in values if isinstance(value, (int, float))]
        comparable = numbers or [value for value in values if isinstance(value, str)]
        if not comparable:
            return {"min": None, "max": None}
        return {"min": min(comparable), "max": max(comparable)}

    def get_metadata_field_unique_values(
        self,
        metadata_field: str,
        search_term: str | None = None,
        from_: int = 0,
        size: int = 10,
        filters: dict[str, Any] | None = None,
    ) -> tuple[list[Any], int]:
        """
        Distinct values of a metadata field, sorted by their text then type, one page at a time.

        :param metadata_field: The field (`"category"` or `"meta.category"`); each element of a list counts.
        :param search_term: Keep values containing this text, ignoring case.
        :param from_: Offset of the page.
        :param size: Length of the page.
        :param filters: Haystack filters restricting the documents considered.
        :returns: The page of values and the total number of distinct values.
        :raises FilterError: When the filters are malformed.
        """
        name = _meta_name(metadata_field)
        unique: dict[tuple, Any] = {}
        for meta in self._scroll_meta(filters, [name]):
            for value in _values(meta, name):
                if search_term is not None and search_term.lower() not in str(value).lower():
                    continue
                unique.setdefault(_distinct_key(value), value)
        values = sorted(unique.values(), key=lambda value: (str(value), type(value).__name__))
        return values[from_ : from_ + size], len(values)

    # ----------------------------------------------------------------------------------------------------
    # Search

    def query_dense(
        self,
        query_embedding: QueryVector,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
        fields: list[str] | None = None,
    ) -> list[Document]:
        """
        Nearest documents to a dense query vector.

        :param query_embedding: The query vector, `embedding_dim` values.
        :param top_k: How many documents to return.
        :param filters: Haystack filters applied before ranking.
        :param return_embedding: Whether the documents carry their vectors.
        :param fields: Metadata fields the documents carry (`"path"` or `"meta.path"`); `None` carries all.
        :returns: Documents with `score` set to the similarity, best first.
        :raises ValueError: When `top_k` is not positive or the vector has the wrong size.
        :raises FilterError: When the filters are malformed.
        """
        check_top_k(top_k)
        return self._query(self._dense_nearest(query_embedding), top_k, filters, return_embedding, fields)

    def query_sparse(
        self,
        query_sparse_embedding: SparseEmbedding,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
        fields: list[str] | None = None,
    ) -> list[Document]:
        """
        Best documents for a sparse query vector (dot product, IDF-weighted when `sparse_idf` is on).

        :param query_sparse_embedding: The query's sparse embedding.
        :param top_k: How many documents to return.
        :param filters: Haystack filters applied before ranking.
        :param return_embedding: Whether the documents carry their vectors.
        :param fields: Metadata fields the documents carry (`"path"` or `"meta.path"`); `None` carries all.
        :returns: Documents with `score` set, best first.
        :raises ValueError: When `top_k` is not positive.
        :raises DocumentStoreError: When the store was configured without sparse vectors.
        :raises FilterError: When the filters are malformed.
        """
        check_top_k(top_k)
        self._require_sparse("query_sparse()")
        query = self._sparse_nearest(query_sparse_embedding.indices, query_sparse_embedding.values)
        return self._query(query, top_k, filters, return_embedding, fields)

    def query_text(
        self, query: str, top_k: int = 10, filters: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[Document]:
        """
        BM25 search over the full-text index of `content`, scored by the engine.

        :param query: Free text; tokenised, lowercased, stemmed and stripped of stopwords like the index.
        :param top_k: How many documents to return.
        :param filters: Haystack filters applied before ranking.
        :param fields: Metadata fields the documents carry (`"path"` or `"meta.path"`); `None` carries all.
        :returns: Documents with `score` set to their BM25 score, best first; none for an empty query.
        :raises ValueError: When `top_k` is not positive.
        :raises DocumentStoreError: When the store was configured without `text_index`.
        :raises FilterError: When the filters are malformed.
        """
        check_top_k(top_k)
        if not self.text_index:
            raise DocumentStoreError("query_text() needs a store created with text_index=True")
        if not query or not query.strip():
            return []
        text_query = qe.TextQuery("content", query, qe.Bm25Params(k=self.bm25_k, b=self.bm25_b))
        return self._query(text_query, top_k, filters, return_embedding=False, fields=fields)

    def best_scores_by(
        self,
        field: str,
        values: list[str],
        query_embedding: QueryVector | None = None,
        query_sparse_embedding: SparseEmbedding | None = None,
    ) -> list[float | None]:
        """
        For each value of a metadata field, the best score one query reaches among the documents holding it.

        One batch of exact searches, one per value, limit 1, planned together by the engine, with no payload
        read: which value a score belongs to is its position in the batch. Reading back the payload of every
        scored document to learn its group (what one search restricted to all the values would need) costs
        several times the scoring itself; this is how the rerank stage reads each candidate file's best chunk.

        :param field: The metadata field (`"source_doc_id"` or `"meta.source_doc_id"`), ideally indexed.
        :param values: The values to score, e.g. candidate files.
        :param query_embedding: A dense query vector; give it or `query_sparse_embedding`, not both.
        :param query_sparse_embedding: A sparse query vector.
        :returns: One score per value, in order; `None` where no document holding it was scored.
        :raises ValueError: Unless exactly one query is given.
        :raises DocumentStoreError: For a sparse query on a store without sparse vectors.
        """
        if (query_embedding is None) == (query_sparse_embedding is None):
            raise ValueError("give exactly one of query_embedding and query_sparse_embedding")
        if not values:
            return []
        if query_embedding is not None:
            query = self._dense_nearest(query_embedding)
        else:
            assert query_sparse_embedding is not None
            self._require_sparse("best_scores_by() with a sparse query")
            query = self._sparse_nearest(query_sparse_embedding.indices, query_sparse_embedding.values)
        key = f"meta.{_meta_name(field)}"
        exact = qe.SearchParams(exact=True)
        requests = [
            qe.QueryRequest(
                limit=1,
                query=query,
                filter=qe.Filter(must=[qe.FieldCondition(key, match=qe.MatchValue(value))]),
                with_payload=False,
                with_vector=False,
                params=exact,
            )
            for value in values
        ]
        with _engine_errors("search"):
            results = self._shard().shard.query_batch(qe.QueryBatchRequest(requests))
        return [float(points[0].score) if points else None for points in results]

    def best_term_scores(self, query_sparse_embedding: SparseEmbedding) -> list[float]:
        """
        For each term of a sparse query, the best score that term alone reaches in the store.

        One batch of single-term searches, planned together by the engine (a query's BM25 ceiling is their
        sum, see `HybridScoreRanker`).

        :param query_sparse_embedding: The query's sparse embedding.
        :returns: One score per term, in the embedding's order; 0.0 for a term no document has.
        :raises DocumentStoreError: When the store was configured without sparse vectors.
        """
        self._require_sparse("best_term_scores()")
        requests = [
            qe.QueryRequest(
                limit=1,
                query=self._sparse_nearest([index], [value]),
                with_payload=False,
                with_vector=False,
            )
            for index, value in zip(query_sparse_embedding.indices, query_sparse_embedding.values)
        ]
        if not requests:
            return []
        with _engine_errors("search"):
            results = self._shard().shard.query_batch(qe.QueryBatchRequest(requests))
        return [float(points[0].score) if points else 0.0 for points in results]

    # ----------------------------------------------------------------------------------------------------
    # Helpers

    def _dense_nearest(self, query_embedding: QueryVector) -> Any:
        """The engine's nearest-neighbour query for a dense vector, its size checked."""
        return qe.Query.Nearest(check_query_embedding(query_embedding, self.embedding_dim), using=DENSE_VECTORS_NAME)

    def _require_sparse(self, caller: str) -> None:
        """:raises DocumentStoreError: Naming `caller`, when the store was configured without sparse vectors."""
        if not self.use_sparse_embeddings:
            raise DocumentStoreError(f"{caller} needs a store created with use_sparse_embeddings=True")

    def _sparse_nearest(self, indices: list[int], values: list[float]) -> Any:
        """The engine's nearest-neighbour query for a sparse vector."""
        vector = qe.SparseVector([int(index) for index in indices], [float(value) for value in values])
        return qe.Query.Nearest(vector, using=SPARSE_VECTORS_NAME)

    def _query(
        self,
        query: Any,
        top_k: int,
        filters: dict[str, Any] | None,
        return_embedding: bool,
        fields: list[str] | None = None,
    ) -> list[Document]:
        # Fewer metadata fields make lighter documents: Haystack deep-copies every stage's inputs.
        payload: Any = True if fields is None else ["id", "content", "blob", *(f"meta.{_meta_name(f)}" for f in fields)]
        request = qe.QueryRequest(
            limit=top_k,
            query=query,
            filter=_edge_filter(filters),
            with_payload=payload,
            with_vector=return_embedding,
        )
        with _engine_errors("search"):
            points = self._shard().shard.query(request)
        return [_to_document(point, score=point.score) for point in points]

    def _scroll(self, filters: dict[str, Any] | None, with_payload: Any, with_vectors: bool) -> Iterator[Any]:
        edge_filter = _edge_filter(filters)
        shard = self._shard().shard
        offset = None
        while True:
            request = qe.ScrollRequest(
                offset=offset,
                limit=self.scroll_size,
                filter=edge_filter,
                with_payload=with_payload,
                with_vector=with_vectors,
            )
            with _engine_errors("list documents"):
                records, offset = shard.scroll(request)
            yield from records
            if offset is None:
                return

    def _scroll_documents(self, filters: dict[str, Any] | None, with_vectors: bool) -> Iterator[Document]:
        for record in self._scroll(filters, with_payload=True, with_vectors=with_vectors):
            yield _to_document(record)

    def _scroll_meta(self, filters: dict[str, Any] | None, names: list[str] | None) -> Iterator[dict[str, Any]]:
        selector = ["meta"] if names is None else [f"meta.{name}" for name in names]
        for record in self._scroll(filters, with_payload=selector, with_vectors=False):
            yield (record.payload or {}).get("meta") or {}

    def _to_point(self, doc: Document) -> Any:
        # `to_dict()` deep-copies field by field: leave the vectors out of it, they are read directly.
        payload = dataclasses.replace(doc, embedding=None, sparse_embedding=None).to_dict(flatten=False)
        payload.pop("embedding", None)
        payload.pop("sparse_embedding", None)
        dense = doc.embedding
        sparse = doc.sparse_embedding.to_dict() if doc.sparse_embedding is not None else None
        vector: dict[str, Any] = {}
        if dense is not None:
            if len(dense) != self.embedding_dim:
                raise ValueError(
                    f"document {doc.id} has an embedding of {len(dense)} values, the store expects {self.embedding_dim}"
                )
            vector[DENSE_VECTORS_NAME] = [float(value) for value in dense]
        if sparse is not None:
            if self.use_sparse_embeddings:
                vector[SPARSE_VECTORS_NAME] = qe.SparseVector(
                    [int(index) for index in sparse["indices"]], [float(value) for value in sparse["values"]]
                )
            else:
                logger.warning(
                    "Dropped the sparse embedding of document {doc_id}: the store has use_sparse_embeddings=False",
                    doc_id=doc.id,
                )
        return qe.Point(id=_point_id(doc.id), vector=vector, payload=payload)


# --------------------------------------------------------------------------------------------------------
# The process-wide registry of open shards


def _layout(store: EdgeDocumentStore) -> tuple:
    return (store.embedding_dim, store.similarity, store.use_sparse_embeddings, store.sparse_idf)


def _acquire(store: EdgeDocumentStore) -> _OpenShard:
    """Open (or share) the shard of `store.path`, locking the folder against other processes."""
    path = os.path.realpath(os.path.expanduser(store.path))
    with _OPEN_SHARDS_LOCK:
        opened = _OPEN_SHARDS.get(path)
        if opened is None:
            os.makedirs(path, exist_ok=True)
            lock_fd = _lock_folder(path)
            try:
                shard = _open_or_create(path, store._edge_config())
            except BaseException:
                _unlock_folder(lock_fd)
                raise
            opened = _OpenShard(path, shard, lock_fd, _layout(store))
            _OPEN_SHARDS[path] = opened
        elif opened.layout != _layout(store):
            raise ValueError(
                f"{path} is already open in this process with (embedding_dim, similarity, use_sparse_embeddings, "
                f"sparse_idf) = {opened.layout}, this store asks for {_layout(store)}; stores on one folder must agree"
            )
        opened.users += 1
        return opened


def _release(opened: _OpenShard) -> None:
    """Drop one user of a shard; the last one flushes and closes it and unlocks the folder."""
    with _OPEN_SHARDS_LOCK:
        opened.users -= 1
        if opened.users > 0:
            return
        _OPEN_SHARDS.pop(opened.path, None)
        try:
            with opened.write_lock:
                opened.shard.flush()
                opened.shard.close()
        except Exception as error:  # the folder must be unlocked even when the engine fails
            logger.warning("Closing {path} failed: {error}", path=opened.path, error=error)
        finally:
            _unlock_folder(opened.lock_fd)
        logger.info("Closed the index at {path}", path=opened.path)


def _forget_shards_after_fork() -> None:
    """A forked child starts with no open shards: the parent's stay the parent's, and so does the folder lock."""
    global _OPEN_SHARDS_LOCK
    _OPEN_SHARDS_LOCK = threading.Lock()
    for opened in _OPEN_SHARDS.values():
        with suppress(OSError):
            os.close(opened.lock_fd)  # closing the child's copy keeps the parent's lock
    _OPEN_SHARDS.clear()


os.register_at_fork(after_in_child=_forget_shards_after_fork)


@atexit.register
def _close_all_shards() -> None:
    """Flush and close every shard still open when the interpreter exits."""
    with _OPEN_SHARDS_LOCK:
        open_shards = list(_OPEN_SHARDS.values())
    for opened in open_shards:
        opened.users = 1
        _release(opened)


def _open_or_create(path: str, config: Any) -> Any:
    segments = os.path.join(path, "segments")
    has_data = os.path.exists(os.path.join(path, "edge_config.json")) or (
        os.path.isdir(segments) and bool(os.listdir(segments))
    )
    try:
        if has_data:
            shard = qe.EdgeShard.load(path, config)
            logger.info("Opened the index at {path}", path=path)
        else:
            shard = qe.EdgeShard.create(path, config)
            logger.info("Created an index at {path}", path=path)
        return shard
    except Exception as error:
        message = str(error)
        if "WouldBlock" in message:
            raise StoreLockedError(path, None) from error
        if "incompatible" in message.lower():
            raise ValueError(f"the index at {path} was built with another configuration: {message}") from error
        raise DocumentStoreError(f"cannot open the index at {path}: {message}") from error


def _lock_folder(path: str) -> int:
    """Take an exclusive advisory lock on the folder for this process; record our pid in the lock file."""
    lock_path = os.path.join(path, LOCK_FILE_NAME)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode("ascii", "replace").strip() or None
        os.close(fd)
        raise StoreLockedError(path, holder) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
    return fd


def _unlock_folder(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _remove_shard_files(path: str) -> None:
    """Delete the shard's files, keeping the lock file (and so the lock)."""
    for entry in os.listdir(path):
        if entry == LOCK_FILE_NAME:
            continue
        full = os.path.join(path, entry)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.remove(full)


@contextmanager
def _engine_errors(action: str) -> Iterator[None]:
    """Turn the engine's bare `Exception`s into `DocumentStoreError`s that say what failed."""
    try:
        yield
    except Exception as error:
        if type(error) is not Exception:
            raise
        raise DocumentStoreError(f"Qdrant Edge failed to {action}: {error}") from error


# --------------------------------------------------------------------------------------------------------
# Conversions


def _point_id(doc_id: str) -> uuid.UUID:
    """The point id of a document: qdrant-haystack's `convert_id`, so ids match on a Qdrant server."""
    return uuid.UUID(convert_id(doc_id))


def _to_document(record: Any, score: float | None = None) -> Document:
    data = dict(record.payload or {})
    data["score"] = score
    vectors = record.vector if isinstance(record.vector, dict) else {}
    dense = vectors.get(DENSE_VECTORS_NAME)
    sparse = vectors.get(SPARSE_VECTORS_NAME)
    data["embedding"] = list(dense) if dense is not None else None
    data["sparse_embedding"] = (
        {"indices": list(sparse.indices), "values": list(sparse.values)} if sparse is not None else None
    )
    return Document.from_dict(data)



def _meta_name(field: str) -> str:
    return field[len("meta.") :] if field.startswith("meta.") else field


def _values(meta: dict[str, Any], name: str) -> list[Any]:
    """The non-null values of a metadata field, a list's elements one by one."""
    value = meta.get(name)
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [item for item in items if item is not None]


def _distinct_key(value: Any) -> tuple:
    """Key that keeps `1`, `1.0`, `"1"` and `True` apart (they are equal in Python)."""
    return (type(value), str(value) if isinstance(value, (list, dict)) else value)


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "float"
    return "keyword"


# --------------------------------------------------------------------------------------------------------
# Haystack filters → Edge filters


def _edge_filter(filters: dict[str, Any] | None) -> Any:
    """
    Translate Haystack filters into an Edge `Filter`.

    Comparisons follow Haystack's semantics: `==`/`!=` `None` test for a missing or null field, `!=` and
    `not in` match documents that lack the field, `NOT` negates the conjunction of its conditions, and ranges
    take numbers or ISO 8601 dates. A list field matches when one of its elements does (Qdrant's rule).

    :raises FilterError: When the filters are malformed or cannot be evaluated by the engine.
    """
    if not filters:
        return None
    if not isinstance(filters, dict):
        raise FilterError(f"filters must be a dictionary, got {type(filters).__name__}")
    return qe.Filter(must=[_condition(filters)])


def _condition(node: Any) -> Any:
    if not isinstance(node, dict):
        raise FilterError(f"a filter condition must be a dictionary, got {node!r}")
    if "field" in node:
        return _comparison(node)
    if "operator" not in node:
        raise FilterError(f"'operator' key missing in {node}")
    if "conditions" not in node:
        raise FilterError(f"'conditions' key missing in {node}")
    operator, conditions = node["operator"], node["conditions"]
    if not isinstance(conditions, list):
        raise FilterError(f"'conditions' must be a list, got {type(conditions).__name__}")
    children = [_condition(child) for child in conditions]
    if operator == "AND":
        return qe.Filter(must=children)
    if operator == "OR":
        return qe.Filter(should=children) if children else _nothing()
    if operator == "NOT":
        return qe.Filter(must_not=[qe.Filter(must=children)])
    raise FilterError(f"unknown logical operator '{operator}'")


def _comparison(node: dict[str, Any]) -> Any:
    for key in ("operator", "value"):
        if key not in node:
            raise FilterError(f"'{key}' key missing in {node}")
    key, operator, value = _payload_key(node["field"]), node["operator"], node["value"]
    if operator == "==":
        return _equal(key, value)
    if operator == "!=":
        return qe.Filter(must_not=[_equal(key, value)])
    if operator in ("in", "not in"):
        if not isinstance(value, list):
            raise FilterError(f"'{operator}' needs a list value, got {type(value).__name__}")
        matches = _any_of(key, value)
        return matches if operator == "in" else qe.Filter(must_not=[matches])
    if operator in _RANGE_OPERATORS:
        return _range(key, _RANGE_OPERATORS[operator], value)
    raise FilterError(f"unknown comparison operator '{operator}'")


def _payload_key(field: Any) -> str:
    if isinstance(field, str) and (field in ("id", "content") or (field.startswith("meta.") and len(field) > 5)):
        return field
    raise FilterError(f"cannot filter on {field!r}: use 'id', 'content' or 'meta.<field>'")


def _nothing() -> Any:
    """A condition no point satisfies."""
    return qe.HasIdCondition(set())


def _equal(key: str, value: Any) -> Any:
    if key == "id":
        if not isinstance(value, str):
            raise FilterError(f"document ids are strings, got {value!r}")
        return qe.HasIdCondition({_point_id(value)})
    if value is None:
        return qe.IsEmptyCondition(key)
    if isinstance(value, bool):
        # A Python bool would reach the engine as the integer 1 or 0; numpy's bool converts as a boolean.
        return qe.FieldCondition(key, match=qe.MatchValue(np.bool_(value)))
    if isinstance(value, (int, str)):
        return qe.FieldCondition(key, match=qe.MatchValue(value))
    if isinstance(value, float):
        return qe.FieldCondition(key, range=qe.RangeFloat(gte=value, lte=value))
    raise FilterError(f"cannot compare {key} with a {type(value).__name__} value")


def _any_of(key: str, values: list[Any]) -> Any:
    if not values:
        return _nothing()
    if key == "id":
        if not all(isinstance(value, str) for value in values):
            raise FilterError(f"document ids are strings, got {values!r}")
        return qe.HasIdCondition({_point_id(value) for value in values})
    if all(isinstance(value, str) for value in values) or all(
        isinstance(value, int) and not isinstance(value, bool) for value in values
    ):
        return qe.FieldCondition(key, match=qe.MatchAny(list(values)))
    return qe.Filter(should=[_equal(key, value) for value in values])


def _range(key: str, bound: str, value: Any) -> Any:
    if value is None:
        return _nothing()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return qe.FieldCondition(key, range=qe.RangeFloat(**{bound: float(value)}))
    if isinstance(value, str) and _is_iso_date(value):
        try:
            return qe.FieldCondition(key, range=qe.RangeDateTime(**{bound: value}))
        except ValueError as error:
            raise FilterError(f"cannot compare {key} with the date {value!r}: {error}") from error
    raise FilterError(f"'{bound}' comparisons need a number or an ISO 8601 date, got {value!r}")


def _is_iso_date(value: str) -> bool:
    if len(value) < 10:
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True
