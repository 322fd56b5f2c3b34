"""qdrant-haystack's store as a store of Needle's index: its searches, listings and life (`ManagedStore`)."""

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import httpx
from haystack import default_from_dict, logging
from haystack.document_stores.errors import DocumentStoreError
from haystack.utils import Secret, deserialize_secrets_inplace
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from haystack_integrations.document_stores.qdrant.converters import DENSE_VECTORS_NAME
from pydantic import ValidationError
from qdrant_client.http import models as rest
from qdrant_client.http.exceptions import ResponseHandlingException

from haystack_integrations.document_stores.needle.qdrant_search import QdrantSearchMixin
from needle.core.schema import FILE_ID

logger = logging.getLogger(__name__)

DEFAULT_PAYLOAD_FIELDS_TO_INDEX: list[dict[str, str]] = [
    {"field_name": "meta.collection", "field_schema": "keyword"},
    {"field_name": "meta.path", "field_schema": "keyword"},
    {"field_name": f"meta.{FILE_ID}", "field_schema": "keyword"},
    {"field_name": "meta.content_checksum", "field_schema": "keyword"},
    {"field_name": "meta.tags", "field_schema": "keyword"},
    {"field_name": "meta.folders", "field_schema": "keyword"},
    {"field_name": "meta.fields", "field_schema": "keyword"},
    {"field_name": "meta.identifiers", "field_schema": "keyword"},
    {"field_name": "meta.language", "field_schema": "keyword"},
    {"field_name": "meta.date", "field_schema": "datetime"},
]


class QdrantServerDocumentStore(QdrantSearchMixin, QdrantDocumentStore):
    """
    A Qdrant server (or Qdrant Cloud) collection with the interface of Needle's embedded store.

    It is qdrant-haystack's `QdrantDocumentStore`, with Needle's defaults (384-dimensional dense vectors,
    IDF-weighted sparse vectors, keyword indexes on the metadata Needle filters by), the searches Needle's
    components call (`SearchableStore`, from `QdrantSearchMixin`) and what the application manages
    (`ManagedStore`: layout changes through `optimize`, snapshots for backups). The data layout is the one `EdgeDocumentStore` writes, so a snapshot of the embedded index serves here
    unchanged. A server collection has no BM25-scored text index here: keyword search runs through
    `SparseRetriever` and a BM25 sparse embedder, and `query_text` raises.

    Usage example:
    ```python
    store = QdrantServerDocumentStore(url="http://localhost:6333", index="notes", embedding_dim=384)
    store.query_dense([0.1] * 384, top_k=5)
    ```
    """

    def __init__(
        self,
        url: str | None = None,
        index: str = "Document",
        embedding_dim: int = 384,
        similarity: str = "cosine",
        use_sparse_embeddings: bool = True,
        sparse_idf: bool = True,
        api_key: Secret | None = None,
        timeout: int | None = None,
        prefer_grpc: bool = False,
        payload_fields_to_index: list[dict] | None = None,
        hnsw_config: dict | None = None,
        on_disk: bool = False,
        on_disk_payload: bool | None = None,
        quantization_config: dict | None = None,
        optimizers_config: dict | None = None,
        search_params: dict | None = None,
        recreate_index: bool = False,
        write_batch_size: int = 100,
        scroll_size: int = 10_000,
        progress_bar: bool = False,
        client_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """
        Configure the store; nothing connects until first use.

        :param url: The server, e.g. `http://localhost:6333` or a Qdrant Cloud URL; `None` means localhost.
        :param index: Name of the collection.
        :param embedding_dim: Size of the dense vectors.
        :param similarity: `cosine`, `dot_product` or `l2`.
        :param use_sparse_embeddings: Whether the collection has sparse vectors (`text-sparse`).
        :param sparse_idf: Whether the server weights sparse vectors by inverse document frequency.
        :param api_key: API key of the server (e.g. `Secret.from_env_var("QDRANT_API_KEY", strict=False)`).
        :param timeout: Seconds before a request to the server fails.
        :param prefer_grpc: Talk gRPC instead of REST where possible.
        :param payload_fields_to_index: Payload indexes created with the collection, as in qdrant-haystack;
            `None` indexes `meta.collection`, `meta.path`, the file id, `meta.tags`, `meta.folders`,
            `meta.fields` and `meta.identifiers` as keywords and `meta.date` as a datetime.
        :param hnsw_config: HNSW parameters of a new collection (`{"m": 16, "ef_construct": 100}`).
        :param on_disk: Keep vectors on disk rather than in RAM.
        :param on_disk_payload: Keep the payload on disk; `None` for the server's default.
        :param quantization_config: Quantization of a new collection, as Qdrant's REST API takes it
            (`{"scalar": {"type": "int8", "quantile": 0.99, "always_ram": true}}`).
        :param optimizers_config: Optimizer settings of a new collection (`{"max_segment_size": 131072}`).
        :param search_params: Search parameters of every dense query (`{"hnsw_ef": 128, "quantization":
            {"rescore": true, "oversampling": 2.0}}`).
        :param recreate_index: Drop and recreate the collection on first use.
        :param write_batch_size: Points per upsert request.
        :param scroll_size: Points per page when listing documents.
        :param progress_bar: Show a progress bar while writing.
        :param client_kwargs: Further arguments of `QdrantClient` (`port`, `https`, `prefix`, ...).
        :raises ValueError: When a parameter is out of range or unknown.
        """
        if embedding_dim <= 0:
            raise ValueError(f"embedding_dim must be > 0, got {embedding_dim}")
        if similarity not in self.SIMILARITY:
            raise ValueError(f"similarity must be one of {', '.join(self.SIMILARITY)}, got {similarity!r}")
        if write_batch_size <= 0:
            raise ValueError(f"write_batch_size must be > 0, got {write_batch_size}")
        if scroll_size <= 0:
            raise ValueError(f"scroll_size must be > 0, got {scroll_size}")
        for name, value, model in (
            ("hnsw_config", hnsw_config, rest.HnswConfigDiff),
            ("optimizers_config", optimizers_config, rest.OptimizersConfigDiff),
            ("search_params", search_params, rest.SearchParams),
        ):
            _check_model(name, value, model)
        if quantization_config is not None:
            _check_quantization(quantization_config)
        self.search_params = search_params
        self._search_params = rest.SearchParams(**search_params) if search_params else None
        super().__init__(
            url=url,
            index=index,
            embedding_dim=embedding_dim,
            similarity=similarity,
            use_sparse_embeddings=use_sparse_embeddings,
            sparse_idf=sparse_idf,
            api_key=api_key,
            timeout=timeout,
            prefer_grpc=prefer_grpc,
            payload_fields_to_index=[
                dict(field) for field in (payload_fields_to_index or DEFAULT_PAYLOAD_FIELDS_TO_INDEX)
            ],
            hnsw_config=hnsw_config,
            on_disk=on_disk,
            on_disk_payload=on_disk_payload,
            quantization_config=quantization_config,
            optimizers_config=optimizers_config,
            recreate_index=recreate_index,
            write_batch_size=write_batch_size,
            scroll_size=scroll_size,
            progress_bar=progress_bar,
            client_kwargs=client_kwargs,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QdrantServerDocumentStore":
        """
        Rebuild a store from `to_dict()` output.

        :param data: The serialised store.
        :returns: The store, not yet connected.
        """
        init_parameters = dict(data.get("init_parameters", {}))
        deserialize_secrets_inplace(init_parameters, keys=["api_key"])
        return default_from_dict(cls, {**data, "init_parameters": init_parameters})

    def _initialize_client(self) -> None:
        """
        Connect and set up the collection on first use, naming the server when it cannot be reached.

        :raises ConnectionError: When the server does not answer.
        """
        if self._client is not None:
            return
        try:
            super()._initialize_client()
        except (ResponseHandlingException, httpx.TransportError) as error:
            # The parent keeps a client whose collection was never set up: drop it so the next call retries.
            self._client = None
            raise ConnectionError(f"cannot reach the Qdrant server at {self._address()}: {error}") from error

    @property
    def _qdrant(self) -> QdrantDocumentStore:
        return self

    def check_unopened(self) -> None:
        """Nothing to check: the server keeps the collection's files."""

    def changes(self) -> Any:
        """`ManagedStore.changes`: the collection's count (other processes may write to a server)."""
        return self.count_documents()

    def read_ahead(self) -> int:
        """Nothing to read ahead: the server keeps its own caches warm."""
        return 0

    def writes_paused(self) -> AbstractContextManager[None]:
        """Nothing to pause: backups of a server collection are the server's snapshots."""
        return nullcontext()

    def _address(self) -> str:
        if self.url:
            return self.url
        if self.location:
            return self.location
        return f"{self.host or 'localhost'}:{self.port}"

    def optimize(self) -> bool:
        """
        Apply this store's layout (HNSW, quantization, on-disk vectors, optimizer settings) to an existing
        collection whose configuration differs; the server rebuilds its segments in the background.

        :returns: Whether the collection's configuration was changed.
        :raises ConnectionError: When the server cannot be reached.
        """
        self._initialize_client()
        assert self._client is not None
        config = self._client.get_collection(self.index).config
        changes: dict[str, Any] = {}
        if self.hnsw_config and _differs(self.hnsw_config, config.hnsw_config):
            changes["hnsw_config"] = rest.HnswConfigDiff(**self.hnsw_config)
        if self.optimizers_config and _differs(self.optimizers_config, config.optimizer_config):
            changes["optimizers_config"] = rest.OptimizersConfigDiff(**self.optimizers_config)
        wanted = self.quantization_config
        current = config.quantization_config.model_dump(exclude_none=True) if config.quantization_config else None
        if wanted != current and (wanted or current):
            changes["quantization_config"] = _quantization(wanted) if wanted else rest.Disabled.DISABLED
        vectors = config.params.vectors
        dense = vectors.get(DENSE_VECTORS_NAME) if isinstance(vectors, dict) else vectors
        if dense is not None and bool(dense.on_disk) != self.on_disk:
            name = DENSE_VECTORS_NAME if isinstance(vectors, dict) else ""
            changes["vectors_config"] = {name: rest.VectorParamsDiff(on_disk=self.on_disk)}
        if not changes:
            return False
        self._client.update_collection(collection_name=self.index, **changes)
        logger.info("Asked the server to lay out {index} anew: {keys}", index=self.index, keys=", ".join(changes))
        return True

    # ---- snapshots (the server's own API) --------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """
        Ask the server for a snapshot of the collection (it stays on the server, in its snapshot folder).

        :returns: The snapshot's `name`, `creation_time` and `size` in bytes.
        :raises DocumentStoreError: When the server takes no snapshots (qdrant-client's local mode).
        :raises ConnectionError: When the server cannot be reached.
        """
        with _snapshots("create a snapshot of", self.index):
            description = self._connected().create_snapshot(collection_name=self.index, wait=True)
        if description is None:
            raise DocumentStoreError(f"the Qdrant server did not report the snapshot of {self.index}")
        return description.model_dump(include={"name", "creation_time", "size"})

    def list_snapshots(self) -> list[dict[str, Any]]:
        """
        The collection's snapshots on the server, oldest first.

        :returns: Each snapshot's `name`, `creation_time` and `size`.
        :raises DocumentStoreError: When the server takes no snapshots.
        """
        with _snapshots("list the snapshots of", self.index):
            found = self._connected().list_snapshots(collection_name=self.index)
        rows = [item.model_dump(include={"name", "creation_time", "size"}) for item in found]
        return sorted(rows, key=lambda row: (row.get("creation_time") or "", row["name"]))

    def delete_snapshot(self, name: str) -> None:
        """
        Delete one of the collection's snapshots on the server.

        :raises DocumentStoreError: When the server takes no snapshots.
        """
        with _snapshots("delete a snapshot of", self.index):
            self._connected().delete_snapshot(collection_name=self.index, snapshot_name=name, wait=True)

    def restore_snapshot(self, name: str) -> None:
        """
        Replace the collection's points with one of its snapshots on the server.

        :param name: The snapshot's name (`snapshot()`, `list_snapshots()`).
        :raises DocumentStoreError: When the server takes no snapshots.
        """
        location = f"{self._base_url()}/collections/{self.index}/snapshots/{name}"
        api_key = self.api_key.resolve_value() if self.api_key else None
        with _snapshots("restore a snapshot of", self.index):
            self._connected().recover_snapshot(
                collection_name=self.index, location=location, api_key=api_key, wait=True
            )

    def _connected(self) -> Any:
        self._initialize_client()
        assert self._client is not None
        return self._client

    def _base_url(self) -> str:
        address = self._address()
        return address.rstrip("/") if "://" in address else f"http://{address}"


def layout_parameters(
    hnsw_m: int = 16,
    hnsw_ef_construct: int = 100,
    hnsw_ef: int | None = None,
    quantization: str = "none",
    quantization_rescore: bool = True,
    quantization_oversampling: float | None = None,
    vectors_on_disk: bool = False,
    hnsw_on_disk: bool = False,
    sparse_on_disk: bool = False,
    payload_on_disk: bool = True,
    max_segment_size_kb: int | None = None,
) -> dict[str, Any]:
    """
    Needle's index settings (the `index:` section) as this store's parameters, in Qdrant's REST shapes.

    The same settings make the same layout as on the embedded engine, with one difference: qdrant-haystack
    keeps the sparse index where the dense vectors are (`on_disk`), so `sparse_on_disk` has no say here.

    :returns: `hnsw_config`, `on_disk`, `on_disk_payload`, `quantization_config`, `optimizers_config` and
        `search_params` for `QdrantServerDocumentStore`.
    """
    del sparse_on_disk  # follows on_disk on a server collection (see above)
    quantization_config = None
    if quantization == "int8":
        quantization_config = {"scalar": {"type": "int8", "quantile": 0.99, "always_ram": True}}
    elif quantization == "binary":
        quantization_config = {"binary": {"always_ram": True}}
    search: dict[str, Any] = {}
    if hnsw_ef is not None:
        search["hnsw_ef"] = hnsw_ef
    if quantization_config is not None:
        search["quantization"] = {"rescore": quantization_rescore}
        if quantization_oversampling is not None:
            search["quantization"]["oversampling"] = quantization_oversampling
    return {
        "hnsw_config": {"m": hnsw_m, "ef_construct": hnsw_ef_construct, "on_disk": hnsw_on_disk},
        "on_disk": vectors_on_disk,
        "on_disk_payload": payload_on_disk,
        "quantization_config": quantization_config,
        "optimizers_config": None if max_segment_size_kb is None else {"max_segment_size": max_segment_size_kb},
        "search_params": search or None,
    }


def _check_model(name: str, value: dict | None, model: Any) -> None:
    """:raises ValueError: Naming the parameter, when `value` is not a valid `model`."""
    if value is None:
        return
    try:
        model(**value)
    except (TypeError, ValidationError) as error:
        raise ValueError(f"{name} is not valid: {error}") from None


def _quantization(config: dict) -> Any:
    """A quantization mapping (`{"scalar": {...}}` or `{"binary": {...}}`) as the client's model."""
    if set(config) == {"scalar"}:
        return rest.ScalarQuantization(scalar=rest.ScalarQuantizationConfig(**config["scalar"]))
    if set(config) == {"binary"}:
        return rest.BinaryQuantization(binary=rest.BinaryQuantizationConfig(**config["binary"]))
    raise ValueError(f"quantization_config must hold 'scalar' or 'binary', got {sorted(config)}")


def _check_quantization(config: dict) -> None:
    """:raises ValueError: When the quantization mapping is not one the server takes."""
    try:
        _quantization(config)
    except (TypeError, ValidationError) as error:
        raise ValueError(f"quantization_config is not valid: {error}") from None


def _differs(wanted: dict, current: Any) -> bool:
    """Whether a configuration object differs from the wanted values (keys not wanted are left alone)."""

    def same(value: Any, found: Any) -> bool:
        return bool(found) == value if isinstance(value, bool) else found == value

    return not all(same(value, getattr(current, key, None)) for key, value in wanted.items())


@contextmanager
def _snapshots(action: str, index: str) -> Iterator[None]:
    """Say so when this Qdrant takes no snapshots (qdrant-client's local mode raises `NotImplementedError`)."""
    try:
        yield
    except NotImplementedError as error:
        raise DocumentStoreError(f"cannot {action} {index}: this Qdrant takes no snapshots ({error})") from None
