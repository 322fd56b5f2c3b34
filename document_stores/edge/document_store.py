"""
A Haystack document store on Qdrant Edge, the Qdrant engine embedded in the Python process.

qdrant-client's local mode (`QdrantClient(path=...)`) is a pure-Python stand-in for Qdrant: it keeps every
point in Python objects, scores by brute force and has no payload indexes, no HNSW and no BM25. Qdrant Edge
(`qdrant-edge-py`) is the engine itself, run in-process: real segments, HNSW, payload indexes, a write-ahead
log and a BM25-scored full-text index, stored in the server's data format. The payload layout, named vectors
and point ids are the ones qdrant-haystack writes (`converters.py`), so a snapshot of this folder can move to
a Qdrant server and be served there by `QdrantDocumentStore` (or `QdrantServerDocumentStore`).
"""

import functools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import qdrant_edge as qe
from haystack import default_from_dict, default_to_dict, logging
from haystack.dataclasses import Document
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError, DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy

from haystack_integrations.document_stores.needle._shared import (
    BestScoreRequest,
    NeedleStoreMixin,
    VectorQuery,
    meta_name,
)
from haystack_integrations.document_stores.needle.edge.converters import point_id, to_document, to_point
from haystack_integrations.document_stores.needle.edge.filters import edge_filter
from haystack_integrations.document_stores.needle.edge.shard_schema import (
    ALWAYS_INDEXED,
    DEFAULT_PAYLOAD_INDEXES,
    DISTANCES,
    PAYLOAD_INDEXES_FROM,
    QUANTIZATIONS,
    SCHEMA_TYPES,
    STEMMERS,
    Layout,
    edge_config,
    missing_indexes,
    search_params,
    text_index_params,
)
from haystack_integrations.document_stores.needle.edge.shards import (
    OpenShard,
    check_unopened,
    copy_shard,
    open_shard,
    set_aside,
)
from haystack_integrations.document_stores.needle.edge.wal import read_wal
from haystack_integrations.document_stores.needle.protocol import IndexDamagedError
from needle.core.checks import QueryVector, check_top_k
from needle.core.disk import allocated_mb, ensure_space
from needle.core.documents import replace

logger = logging.getLogger(__name__)

_WRITE_BATCH_SIZE = 512


class EdgeDocumentStore(NeedleStoreMixin):
    """
    A document store on Qdrant Edge: dense, sparse and BM25 search over one folder, in-process.

    Documents are stored as qdrant-haystack stores them (payload `Document.to_dict(flatten=False)` without
    vectors; named vectors `text-dense` and `text-sparse`; point id `uuid5` of the document id), with keyword
    indexes on the metadata Needle filters by and a BM25-scored full-text index on `content`. The store object
    owns its shard: it opens on first use, `close()` releases it and a later use reopens it. One store object
    per folder serves a whole process (hand it to every component); a second object on the folder, in this
    process or another, gets a `StoreLockedError`. Writes are flushed to disk before they return unless
    `durable_writes` is off. The store is thread-safe: writers take turns, queries never wait for them.

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
        hnsw_ef: int | None = None,
        hnsw_on_disk: bool = False,
        quantization: str = "none",
        quantization_rescore: bool = True,
        quantization_oversampling: float | None = None,
        vectors_on_disk: bool = False,
        sparse_on_disk: bool = False,
        payload_on_disk: bool = True,
        max_segment_size_kb: int | None = None,
        cached_payloads: int = 16384,
        payload_indexes_from: int = PAYLOAD_INDEXES_FROM,
    ) -> None:
        """
        Configure the store; nothing is created, locked or opened until first use.

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
            `uuid`, `text`). `None` indexes the keywords `meta.collection`, `meta.path`, the file id (`FILE_ID`), `meta.tags`,
            `meta.folders`, `meta.fields` and `meta.identifiers`, and the datetime `meta.date` (what Needle's
            filters test).
        :param hnsw_m: Edges per node of the HNSW graph (0 disables the graph).
        :param hnsw_ef_construct: Candidates considered while building the HNSW graph.
        :param indexing_threshold_kb: Segment size above which `optimize()` builds the HNSW graph;
            `None` keeps the engine's default.
        :param durable_writes: Flush to disk after every write, delete and update. Turn off for bulk loads
            and call `flush()` at the end; the engine's write-ahead log still survives a crashed process.
        :param scroll_size: Points fetched per page when listing documents.
        :param hnsw_ef: Candidates a dense query's HNSW search keeps (more: better recall, slower);
            `None` uses `hnsw_ef_construct`, as the engine does.
        :param hnsw_on_disk: Keep the HNSW graph on disk (memory-mapped, read on demand) instead of in RAM.
        :param quantization: `none`, `int8` (scalar quantization, 4x smaller) or `binary` (32x smaller); the
            quantized vectors stay in RAM and the search walks them.
        :param quantization_rescore: Re-score a quantized search's best candidates with the original vectors.
        :param quantization_oversampling: Candidates fetched by quantized score, as a multiple of `top_k`,
            before rescoring; `None` for the engine's default (1).
        :param vectors_on_disk: Keep the original dense vectors on disk (memory-mapped, read on demand).
        :param sparse_on_disk: Keep the sparse vectors' inverted index on disk.
        :param payload_on_disk: Keep the payload (text and metadata) on disk; the engine's default.
        :param max_segment_size_kb: Largest segment the engine builds, in KB of dense vectors; also the
            build step: once this much has been written since the last build, the write builds a segment
            before it returns, so that a large bulk load never holds more than one segment's worth of
            unindexed points, nor builds one graph over all of them. `None` keeps the engine's default
            (256 MB per indexing thread) and builds only when asked (`optimize()`).
        :param cached_payloads: Documents searches found that are kept in memory (per set of fields asked for),
            so that finding them again does not read their payload (`payload_cache.py`); 0 reads every time.
        :param payload_indexes_from: Documents the store holds before it gets the payload indexes of fields
            other than `ALWAYS_INDEXED` (those Needle filters by on every query), created as a write takes it
            there (or when it opens that large). Below, a filter on such a field checks each document's payload
            (1.6 ms more at 500 documents), and the engine does not read those indexes' preallocated pages into
            memory when it opens the store (about 5 MB a keyword field). Unless it is 0, the full-text index
            (about 33 MB a store at 1,000 documents, 67 MB at 10,000 chunks) waits for the first `query_text`,
            at any size. 0: every index at once.
        :raises ValueError: When a parameter is out of range or unknown.
        """
        if not isinstance(path, str) or not path:
            raise ValueError(f"path must be a non-empty string, got {path!r}")
        if embedding_dim <= 0:
            raise ValueError(f"embedding_dim must be > 0, got {embedding_dim}")
        if similarity not in DISTANCES:
            raise ValueError(f"similarity must be one of {', '.join(DISTANCES)}, got {similarity!r}")
        if text_language.lower() not in STEMMERS:
            raise ValueError(f"text_language must be one of {', '.join(sorted(STEMMERS))}, got {text_language!r}")
        if bm25_k < 0:
            raise ValueError(f"bm25_k must be >= 0, got {bm25_k}")
        if not 0 <= bm25_b <= 1:
            raise ValueError(f"bm25_b must be between 0 and 1, got {bm25_b}")
        resolved_indexes = dict(DEFAULT_PAYLOAD_INDEXES if payload_indexes is None else payload_indexes)
        for field, schema in resolved_indexes.items():
            if schema not in SCHEMA_TYPES:
                raise ValueError(f"payload_indexes['{field}'] must be one of {', '.join(SCHEMA_TYPES)}, got {schema!r}")
        if hnsw_m < 0:
            raise ValueError(f"hnsw_m must be >= 0, got {hnsw_m}")
        if hnsw_ef_construct < 4:
            raise ValueError(f"hnsw_ef_construct must be >= 4, got {hnsw_ef_construct}")
        if indexing_threshold_kb is not None and indexing_threshold_kb <= 0:
            raise ValueError(f"indexing_threshold_kb must be > 0, got {indexing_threshold_kb}")
        if scroll_size <= 0:
            raise ValueError(f"scroll_size must be > 0, got {scroll_size}")
        if hnsw_ef is not None and hnsw_ef <= 0:
            raise ValueError(f"hnsw_ef must be > 0, got {hnsw_ef}")
        if quantization not in QUANTIZATIONS:
            raise ValueError(f"quantization must be one of {', '.join(QUANTIZATIONS)}, got {quantization!r}")
        if quantization_oversampling is not None and quantization_oversampling < 1:
            raise ValueError(f"quantization_oversampling must be >= 1, got {quantization_oversampling}")
        if max_segment_size_kb is not None and max_segment_size_kb <= 0:
            raise ValueError(f"max_segment_size_kb must be > 0, got {max_segment_size_kb}")
        if payload_indexes_from < 0:
            raise ValueError(f"payload_indexes_from must be >= 0, got {payload_indexes_from}")

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
        self.hnsw_ef = hnsw_ef
        self.hnsw_on_disk = hnsw_on_disk
        self.quantization = quantization
        self.quantization_rescore = quantization_rescore
        self.quantization_oversampling = quantization_oversampling
        self.vectors_on_disk = vectors_on_disk
        self.sparse_on_disk = sparse_on_disk
        self.payload_on_disk = payload_on_disk
        self.max_segment_size_kb = max_segment_size_kb
        self.cached_payloads = cached_payloads
        self.payload_indexes_from = payload_indexes_from

        # The open shard is below `payload_indexes_from` (its indexes wait), or lacks its full-text index.
        self._indexes_wait = False
        self._text_waits = False
        self._opened: OpenShard | None = None
        self._open_lock = threading.Lock()
        self._unbuilt_kb = 0.0  # dense vectors written since the last build (the build step)
        quantized = quantization != "none"
        self._search_params = search_params(hnsw_ef, quantized, quantization_rescore, quantization_oversampling)
        self._exact_params = search_params(None, quantized, True, None, exact=True)

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
            hnsw_ef=self.hnsw_ef,
            hnsw_on_disk=self.hnsw_on_disk,
            quantization=self.quantization,
            quantization_rescore=self.quantization_rescore,
            quantization_oversampling=self.quantization_oversampling,
            vectors_on_disk=self.vectors_on_disk,
            sparse_on_disk=self.sparse_on_disk,
            payload_on_disk=self.payload_on_disk,
            max_segment_size_kb=self.max_segment_size_kb,
            cached_payloads=self.cached_payloads,
            payload_indexes_from=self.payload_indexes_from,
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

    def _shard(self, probe_mode: str = "changed") -> OpenShard:
        """This store's shard, opened (and its folder locked) on first use; see `open_shard` for the probe."""
        opened = self._opened
        if opened is not None and not opened.inherited:
            return opened
        with self._open_lock:
            if self._opened is not None and self._opened.inherited:
                # Inherited through fork(): the shard is the parent's; this process opens its own.
                self._opened.close()
                self._opened = None
            if self._opened is None:
                opened = open_shard(self.path, self._edge_config(), probe_mode)
                try:
                    self._ensure_indexes(opened)
                except Exception:
                    opened.close()
                    raise
                opened.payloads.limit = self.cached_payloads
                self._opened = opened
            return self._opened

    def _edge_config(self) -> Any:
        """The engine configuration this store asks for."""
        layout = Layout(
            hnsw_m=self.hnsw_m,
            hnsw_ef_construct=self.hnsw_ef_construct,
            hnsw_on_disk=self.hnsw_on_disk,
            quantization=self.quantization,
            vectors_on_disk=self.vectors_on_disk,
            sparse_on_disk=self.sparse_on_disk,
            payload_on_disk=self.payload_on_disk,
            max_segment_size_kb=self.max_segment_size_kb,
            indexing_threshold_kb=self.indexing_threshold_kb,
        )
        return edge_config(self.embedding_dim, self.similarity, self.use_sparse_embeddings, self.sparse_idf, layout)

    def _ensure_indexes(self, opened: OpenShard) -> None:
        """Create the payload and full-text indexes this store needs and the shard lacks, once it is large enough."""
        with opened.write_lock:
            self._index_if_grown(opened)

    def _index_if_grown(self, opened: OpenShard) -> None:
        """`_ensure_indexes` with the write lock held: at opening, and after a write while the indexes wait."""
        with _engine_errors("create payload indexes"):
            wanted, text_language = self.payload_indexes, self.text_language if self.text_index else None
            self._indexes_wait = bool(self.payload_indexes_from) and (
                opened.shard.count(qe.CountRequest(exact=True)) < self.payload_indexes_from
            )
            if self._indexes_wait:  # a small store: the fields Needle filters by on every query
                wanted = {field: schema for field, schema in wanted.items() if field in ALWAYS_INDEXED}
            # The full-text index waits for the first full-text search whatever the store's size: only
            # `query_text` reads it (the shipped graphs' BM25 is the sparse vectors), and the engine reads its
            # pages into memory at every opening (67 MB of an owner of 10,000 chunks).
            self._text_waits = bool(
                self.payload_indexes_from and self.text_index and "content" not in opened.shard.info().payload_schema
            )
            if self._text_waits:
                text_language = None
            # The write-ahead log keeps the new indexes; no flush needed.
            for field, schema in missing_indexes(opened.shard, wanted, text_language).items():
                opened.update(qe.UpdateOperation.create_field_index(field, schema))
                logger.info("Created payload index on {field} in {path}", field=field, path=opened.path)

    def _text_index_now(self, opened: OpenShard) -> None:
        """Create the full-text index at the store's first full-text search (`query_text` needs it)."""
        with opened.write_lock, _engine_errors("create the full-text index"):
            if self._text_waits and "content" not in opened.shard.info().payload_schema:
                opened.update(qe.UpdateOperation.create_field_index("content", text_index_params(self.text_language)))
                logger.info("Created the full-text index in {path}", path=opened.path)
            self._text_waits = False

    def flush(self) -> None:
        """`SearchableStore.flush`; a no-op when the store is not open."""
        opened = self._opened
        if opened is None or opened.inherited:
            return
        with opened.write_lock, _engine_errors("flush"):
            opened.shard.flush()

    def optimize(self) -> bool:
        """
        Merge and vacuum segments, build the HNSW graph of segments above the indexing threshold, and
        rebuild the segments laid out otherwise than this store asks (HNSW, quantization, placement).

        Blocks writers (not readers) until the engine has nothing left to optimise.

        :returns: Whether any segment changed.
        :raises DocumentStoreError: When the engine fails to optimise.
        """
        opened = self._shard()
        # The optimiser writes new segments beside the old ones before it drops them.
        ensure_space(opened.path, allocated_mb(opened.path), "to optimise the index (it rewrites its segments)")
        with opened.write_lock, _engine_errors("optimize"):
            changed = bool(opened.shard.optimize())
            opened.shard.flush()
            self._unbuilt_kb = 0.0
        logger.info("Optimized {path}: {changed}", path=opened.path, changed=changed)
        return changed

    @contextmanager
    def deferred_flush(self) -> Iterator[None]:
        """`SearchableStore.deferred_flush`: `durable_writes` is off inside the block, then one flush."""
        if not self.durable_writes:
            yield
            return
        self.durable_writes = False
        try:
            yield
        finally:
            self.durable_writes = True
            self.flush()

    @contextmanager
    def writes_paused(self) -> Iterator[None]:
        """`ManagedStore.writes_paused`: writers wait on the shard's write lock, after a flush."""
        opened = self._shard()
        with opened.write_lock:
            with _engine_errors("flush"):
                opened.shard.flush()
            yield

    def backup(self, target: str) -> int:
        """
        Copy the index to a new folder, consistent: writers wait while it is copied, queries go on.

        The copy is a shard folder like this store's: `EdgeDocumentStore(path=target)` opens it, and
        `needle restore` puts it back.

        :param target: A folder that does not exist yet.
        :returns: The number of documents copied.
        :raises FileExistsError: When `target` exists.
        :raises DocumentStoreError: When the engine fails to flush.
        """
        with self.writes_paused():
            count = self.count_documents()
            copy_shard(self._shard().path, target)
        logger.info("Copied {count} documents from {path} to {target}", count=count, path=self.path, target=target)
        return count

    def verify(self) -> dict[str, Any]:
        """
        Read every stored point with its payload and vectors, and search each kind of vector once; a store not
        open yet is first opened and read in a child process, where a crash of the engine cannot end this one.

        The write-ahead log is read too (`wal.py`): entries past bytes garbled inside it, which the engine
        would drop without a word, are counted in `wal_unreadable`.

        :returns: `points` read, `counted` by the engine, `without_dense` and `without_sparse` vectors,
            `wal_entries` read and `wal_unreadable`.
        :raises IndexDamagedError: When the store's files cannot be read, or the engine crashed reading them.
        """
        if self._opened is None or self._opened.inherited:
            self._shard(probe_mode="read")
        found = super().verify()
        log = read_wal(self._shard().path)
        return {**found, "wal_entries": log.entries, "wal_unreadable": log.unreadable}

    def check_unopened(self) -> None:
        """
        `ManagedStore.check_unopened`: a shard this process has open passes; see `shards.check_unopened` for the
        rest (the shard is opened in a child process, whose crash cannot end this one).
        """
        if self._opened is None or self._opened.inherited:
            check_unopened(self.path)

    def close(self) -> None:
        """Flush and close the shard and unlock the folder; the store reopens on next use."""
        with self._open_lock:
            opened, self._opened = self._opened, None
        if opened is not None:
            opened.close()

    # ----------------------------------------------------------------------------------------------------
    # Haystack's DocumentStore protocol

    def count_values(self, field: str, filters: dict[str, Any] | None = None) -> dict[str, int]:
        """
        `SearchableStore.count_values`: the engine's exact facet count for a field with a keyword index
        (`collection`, the file id, `path`, ...), which reads the index instead of every point's payload (the
        distinct files of SciFact's 12,464 chunks: 0.13 s against 0.5 s for listing them); other fields are
        counted over their listed metadata.
        """
        key = f"meta.{meta_name(field)}"
        if self.payload_indexes.get(key) != "keyword":
            return super().count_values(field, filters)
        self._shard()  # open: whether its indexes wait is known
        if self._indexes_wait and key not in ALWAYS_INDEXED:
            return self._count_listed(meta_name(field), filters)
        condition = edge_filter(filters)
        total = self.count_documents()
        if total == 0:
            return {}
        with _engine_errors("count values"):
            response = self._shard().shard.facet(qe.FacetRequest(key=key, limit=total, exact=True, filter=condition))
        # A value whose points were all deleted can stay in the index with a count of 0.
        return {str(hit.value): int(hit.count) for hit in response.hits if hit.count > 0}

    def _count_listed(self, name: str, filters: dict[str, Any] | None) -> dict[str, int]:
        """What the facet of a keyword field's index counts, over the listed metadata: each value of a list once."""
        counts: dict[str, int] = {}
        for row in self.list_documents_meta(filters=filters, fields=[name]):
            value = row["meta"].get(name)
            for each in value if isinstance(value, list) else [] if value is None else [value]:
                counts[str(each)] = counts.get(str(each), 0) + 1
        return counts

    def count_documents(self) -> int:
        """`SearchableStore.count_documents`, exact."""
        with _engine_errors("count documents"):
            return int(self._shard().shard.count(qe.CountRequest(exact=True)))

    def changes(self) -> tuple[int, int]:
        """
        `ManagedStore.changes`, without counting (the folder is locked: only this process writes to it): the
        shard's opening in this process and its payload cache's generation, which every write moves.
        """
        opened = self._shard()
        return opened.opening, opened.payloads.generation

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """`SearchableStore.filter_documents`, in point-id order."""
        return list(self.iter_documents(filters))

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """
        `SearchableStore.write_documents`, durable on return when `durable_writes` is on. `NONE` and `FAIL`
        raise on an id that is already stored (or repeated in the batch), `SKIP` keeps the stored document.
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
        points = {
            doc_id: to_point(doc, self.embedding_dim, self.use_sparse_embeddings) for doc_id, doc in unique.items()
        }

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
            ensure_space(
                opened.path, len(batch) * (self.embedding_dim * 4 + 4096) / 2**20, "for the batch being written"
            )
            with _engine_errors("write documents"):
                for start in range(0, len(batch), _WRITE_BATCH_SIZE):
                    opened.update(qe.UpdateOperation.upsert_points(batch[start : start + _WRITE_BATCH_SIZE]))
                if self.durable_writes:
                    opened.shard.flush()
            self._unbuilt_kb += len(batch) * self.embedding_dim * 4 / 1024
            if self._indexes_wait and batch:
                self._index_if_grown(opened)  # the write that takes the store past `payload_indexes_from`
            if self.max_segment_size_kb is not None and self._unbuilt_kb >= self.max_segment_size_kb:
                self.optimize()  # the build step (see `max_segment_size_kb`)
        logger.debug("Wrote {count} documents to {path}", count=len(batch), path=opened.path)
        return len(batch)

    def delete_documents(self, document_ids: list[str]) -> None:
        """`SearchableStore.delete_documents`."""
        if not document_ids:
            return
        opened = self._shard()
        with opened.write_lock, _engine_errors("delete documents"):
            opened.update(qe.UpdateOperation.delete_points([point_id(doc_id) for doc_id in document_ids]))
            if self.durable_writes:
                opened.shard.flush()

    # ----------------------------------------------------------------------------------------------------
    # Extended operations

    def iter_documents(self, filters: dict[str, Any] | None = None) -> Iterator[Document]:
        """`SearchableStore.iter_documents`, in point-id order."""
        for record in self._scroll(filters, with_payload=True, with_vectors=True):
            yield to_document(record)

    def delete_all_documents(self, recreate_index: bool = False) -> None:
        """
        Delete every document.

        :param recreate_index: Also drop the shard and create it afresh with this store's configuration
            (vectors and indexes); a query running in another thread at that moment fails. A shard not open
            yet is opened in a child process first; one that cannot be opened there (damaged files, or the
            engine crashes on them) is moved aside unopened (`<folder>.damaged-<time>`) and a new one created.
        """
        if recreate_index:
            try:
                self._shard(probe_mode="open")  # a shard the engine would abort on is moved aside unopened
            except IndexDamagedError:
                set_aside(self.path)
                self._shard()
                logger.info("Created a new index at {path}", path=self.path)
                return
        opened = self._shard()
        with opened.write_lock, _engine_errors("delete all documents"):
            if not recreate_index:
                opened.update(qe.UpdateOperation.delete_points_by_filter(qe.Filter(must=[])))
                if self.durable_writes:
                    opened.shard.flush()
                return
            opened.recreate(self._edge_config())
        self._ensure_indexes(opened)
        logger.info("Recreated the index at {path}", path=opened.path)

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """`ManagedStore.delete_by_filter`; empty filters delete nothing."""
        condition = edge_filter(filters)
        if condition is None:
            return 0
        opened = self._shard()
        with opened.write_lock, _engine_errors("delete documents by filter"):
            count = int(opened.shard.count(qe.CountRequest(exact=True, filter=condition)))
            if count:
                opened.update(qe.UpdateOperation.delete_points_by_filter(condition))
                if self.durable_writes:
                    opened.shard.flush()
        return count

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """`SearchableStore.update_by_filter`; a `meta` that is not a dictionary is a `ValueError`."""
        if not isinstance(meta, dict):
            raise ValueError(f"meta must be a dictionary, got {type(meta).__name__}")
        condition = edge_filter(filters)
        if condition is None or not meta:
            return 0
        opened = self._shard()
        with opened.write_lock, _engine_errors("update documents by filter"):
            count = int(opened.shard.count(qe.CountRequest(exact=True, filter=condition)))
            if count:
                opened.update(qe.UpdateOperation.set_payload_by_filter(condition, meta, key="meta"))
                if self.durable_writes:
                    opened.shard.flush()
        return count

    def get_documents_by_id(self, document_ids: list[str]) -> list[Document]:
        """
        Fetch documents, with their vectors, by id; unknown ids are skipped.

        :param document_ids: The ids to fetch.
        :returns: The stored documents.
        """
        if not document_ids:
            return []
        with _engine_errors("retrieve documents"):
            records = self._shard().shard.retrieve([point_id(doc_id) for doc_id in document_ids], True, True)
        return [to_document(record) for record in records]

    # ----------------------------------------------------------------------------------------------------
    # Search (`best_scores` and `list_documents_meta` come from `NeedleStoreMixin`)

    def query_dense(
        self,
        query_embedding: QueryVector,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
        fields: list[str] | None = None,
    ) -> list[Document]:
        """`SearchableStore.query_dense`, through the HNSW graph with this store's search parameters."""
        check_top_k(top_k)
        query = _nearest(self._dense_query(query_embedding))
        return self._query(query, top_k, filters, return_embedding, fields, params=self._search_params)

    def query_sparse(
        self,
        query_sparse_embedding: SparseEmbedding,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
        fields: list[str] | None = None,
    ) -> list[Document]:
        """`SearchableStore.query_sparse`."""
        check_top_k(top_k)
        query = _nearest(self._sparse_query(query_sparse_embedding, "query_sparse()"))
        return self._query(query, top_k, filters, return_embedding, fields)

    def query_text(
        self, query: str, top_k: int = 10, filters: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[Document]:
        """`SearchableStore.query_text`, over the store's full-text index (`text_index`, its `text_language`, `bm25_k` and `bm25_b`)."""
        check_top_k(top_k)
        if not self.text_index:
            raise DocumentStoreError("query_text() needs a store created with text_index=True")
        if not query or not query.strip():
            return []
        opened = self._shard()
        if self._text_waits:
            self._text_index_now(opened)
        text_query = qe.TextQuery("content", query, qe.Bm25Params(k=self.bm25_k, b=self.bm25_b))
        return self._query(text_query, top_k, filters, return_embedding=False, fields=fields)

    # ----------------------------------------------------------------------------------------------------
    # Helpers

    def _query(
        self,
        query: Any,
        top_k: int,
        filters: dict[str, Any] | None,
        return_embedding: bool,
        fields: list[str] | None = None,
        params: Any = None,
    ) -> list[Document]:
        # Fewer metadata fields make lighter documents: Haystack deep-copies every stage's inputs.
        payload: Any = True if fields is None else ["id", "content", "blob", *(f"meta.{meta_name(f)}" for f in fields)]
        opened = self._shard()
        cache = opened.payloads
        cached = cache.limit > 0 and not return_embedding
        request = qe.QueryRequest(
            limit=top_k,
            query=query,
            filter=edge_filter(filters),
            with_payload=False if cached else payload,
            with_vector=return_embedding,
            params=params,
        )
        generation = cache.generation
        with _engine_errors("search"):
            points = opened.shard.query(request)
        if not cached:
            return [to_document(point, score=point.score) for point in points]
        # Ids and scores from the search; each hit's document from the cache, or read once for the others.
        key = None if fields is None else tuple(payload)
        known = cache.found(key, (point.id for point in points))
        missing = [point.id for point in points if point.id not in known]
        if missing:
            with _engine_errors("search"):
                records = opened.shard.retrieve(missing, payload, False)
            read = {record.id: to_document(record) for record in records}
            cache.keep(key, generation, read)
            known.update(read)
        # A copy per hit, with its own metadata dict: a stage that changed it would change every later search.
        return [
            replace(known[point.id], score=point.score, meta=dict(known[point.id].meta))
            for point in points
            if point.id in known
        ]

    def read_ahead(self, batch: int = 64, pause: float = 0.001) -> int:
        """
        `ManagedStore.read_ahead`: the stored documents into the payload cache,
        for each set of fields the searches so far asked for, then the points' vectors (read and dropped),
        each up to the cache's limit of points. An owner calls it once, on a thread of its own, after its
        first search.

        Why: in a process that just opened the index, the engine's first read of a point costs more than a
        later one (its storage pages are touched for the first time in this process), so a query whose hits
        were never read answered slower than the same query asked again (`python eval/hotpath.py http`, the
        first pass against the later ones). Reading ahead moves that cost off the queries.

        It reads in small batches, each under the shard's write lock (a write or `close()` waits for at most
        one batch), pausing between them so that searches go first; it stops when the shard closes or the
        store opens another. A write empties the cache as usual (`PayloadCache`).

        :param batch: Points read at a time.
        :param pause: Seconds between batches.
        :returns: The points read (each pass counted).
        """
        opened = self._opened
        if opened is None or opened.inherited or opened.payloads.limit <= 0:
            return 0
        total = 0
        for fields in opened.payloads.asked():
            payload = True if fields is None else list(cast(tuple[str, ...], fields))
            total += self._read_pass(opened, payload, fields, batch, pause)
        return total + self._read_pass(opened, False, None, batch, pause)

    def _read_pass(self, opened: OpenShard, payload: Any, fields: Any, batch: int, pause: float) -> int:
        """
        One pass of `read_ahead`: with `payload`, the documents kept in the cache under `fields`; without, the
        vectors, read and dropped. Returns the points read.
        """
        cache, offset, read = opened.payloads, None, 0
        while read < cache.limit and (payload is False or cache.kept(fields) < cache.limit):
            with opened.write_lock:
                if opened.closed or self._opened is not opened:
                    break
                generation = cache.generation
                request = qe.ScrollRequest(
                    offset=offset, limit=batch, filter=None, with_payload=payload, with_vector=payload is False
                )
                with _engine_errors("read ahead"):
                    records, offset = opened.shard.scroll(request)
                if payload is not False:
                    cache.keep(fields, generation, {record.id: to_document(record) for record in records})
            read += len(records)
            if offset is None:
                break
            time.sleep(pause)
        return read

    def _best_scores(self, requests: list[BestScoreRequest]) -> list[float | None]:
        exact = self._exact_params
        # One engine query per distinct vector: a file's searches share the query's, and converting a dense
        # vector into the engine's type costs more than the search of one file's chunks.
        nearest: dict[int, Any] = {}
        for request in requests:
            if id(request.query) not in nearest:
                nearest[id(request.query)] = _nearest(request.query)
        batch = [
            qe.QueryRequest(
                limit=1,
                query=nearest[id(request.query)],
                filter=None if request.key is None else _match(request.key, request.value),
                with_payload=False,
                with_vector=False,
                params=exact if request.exact else (self._search_params if request.query.indices is None else None),
            )
            for request in requests
        ]
        with _engine_errors("search"):
            results = self._shard().shard.query_batch(qe.QueryBatchRequest(batch))
        return [float(points[0].score) if points else None for points in results]

    def _scroll_payloads(self, filters: dict[str, Any] | None, include: list[str]) -> Iterator[tuple[Any, dict]]:
        for record in self._scroll(filters, with_payload=include, with_vectors=False):
            yield record.id, record.payload or {}

    def _scroll(self, filters: dict[str, Any] | None, with_payload: Any, with_vectors: bool) -> Iterator[Any]:
        condition = edge_filter(filters)
        shard = self._shard().shard
        offset = None
        while True:
            request = qe.ScrollRequest(
                offset=offset,
                limit=self.scroll_size,
                filter=condition,
                with_payload=with_payload,
                with_vector=with_vectors,
            )
            with _engine_errors("list documents"):
                records, offset = shard.scroll(request)
            yield from records
            if offset is None:
                return


def _nearest(query: VectorQuery) -> Any:
    """The engine's nearest-neighbour query for a dense or sparse vector."""
    vector = query.values if query.indices is None else qe.SparseVector(query.indices, query.values)
    return qe.Query.Nearest(vector, using=query.using)


@functools.lru_cache(maxsize=8192)
def _match(key: str, value: Any) -> Any:
    """
    Points whose payload `key` holds `value` (a file's chunks: the rerank stage asks for each candidate's),
    built once per file: a filter costs more to build than the batch entry that uses it.
    """
    return qe.Filter(must=[qe.FieldCondition(key, match=qe.MatchValue(value))])


# What the engine says when a file of the shard cannot be read: the index is damaged, not the request wrong.
_DAMAGE_SIGNS = (
    "io error",
    "not readable",
    "out of bounds",
    "failed to load",
    "deserializ",
    "corrupt",
    "unexpected end",
    "checksum",
    "no such file",
    "mmap",
    "invalid utf-8",
)


@contextmanager
def _engine_errors(action: str) -> Iterator[None]:
    """
    Turn the engine's bare `Exception`s into `DocumentStoreError`s that say what failed, and failures to read
    the shard's files (or the engine's panics on them) into `IndexDamagedError`s that say how to heal.
    """
    try:
        yield
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:
        panicked = type(error).__name__ == "PanicException"
        if type(error) is not Exception and not panicked:
            raise
        detail = f"Qdrant Edge failed to {action}: {error}"
        if panicked or any(sign in str(error).lower() for sign in _DAMAGE_SIGNS):
            raise IndexDamagedError(None, detail) from error
        raise DocumentStoreError(detail) from error
