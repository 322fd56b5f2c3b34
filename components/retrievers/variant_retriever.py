"""Retrieve every query variant on its route: lexical to BM25, semantic to vectors."""

from typing import Any

from haystack import Document, component, default_to_dict, logging
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import SparseEmbedding

from haystack_integrations.components.embedders.fastembed.embedding_backend.fastembed_backend import (
    _FastembedEmbeddingBackendFactory,
    _FastembedSparseEmbeddingBackendFactory,
)
from haystack_integrations.components.needle._index_models import by_name, without
from haystack_integrations.components.needle._index_models import prefixes as index_prefixes
from haystack_integrations.components.needle._llm_cache import load_component
from haystack_integrations.components.needle._scores import normalised
from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.document_stores.needle.access import searchable

logger = logging.getLogger(__name__)
ROUTES = {"lex": "bm25", "vec": "cosine", "hyde": "cosine", "sub": "both"}


@component
class VariantRetriever:
    """
    Runs each query variant through its own route and returns one ranked list per variant.

    Routing follows qmd: lexical variants go to BM25 only; semantic variants and the hypothetical answer
    passage (HyDE) go to the vectors only (a variant that already carries an embedding, such as a Rocchio
    vector, is searched as is). A sub-question of a multi-part question (`sub`, see `QueryDecomposer`) is
    searched like the question itself, through both: its lists are `<name>_bm25` and `<name>_vector`. A
    Haystack graph has a fixed shape, while the number of variants changes per query, so this one
    component embeds and retrieves them all and hands the lists to the fusion
    stage by name (`lex_1`, `vec_1`, `hyde`, ...). It reuses fastembed-haystack's shared model backends,
    so no model loads twice, and puts scores on 0..1 like the retrievers (`score_kind`).

    Usage example:
    ```python
    retriever = VariantRetriever(document_store=store, dense_model="BAAI/bge-small-en-v1.5")
    retriever.run(variants=[{"kind": "lex", "text": "wal slot lag"}])["lists"]  # {"lex_1": [...]}
    ```
    """

    def __init__(
        self,
        document_store: Any,
        sparse_model: str | None = None,
        dense_model: str | None = None,
        sparse_model_kwargs: dict[str, Any] | None = None,
        dense_model_kwargs: dict[str, Any] | None = None,
        sparse_local_files_only: bool | None = None,
        dense_local_files_only: bool | None = None,
        sparse_cache_dir: str | None = None,
        dense_cache_dir: str | None = None,
        threads: int | None = None,
        query_prefix: str | None = None,
        document_prefix: str | None = None,
        bm25_top_k: int = 40,
        vector_top_k: int = 40,
        meta_fields: list[str] | None = None,
        dense_embedder: Any = None,
    ) -> None:
        """
        Create the retriever.

        :param document_store: A Needle document store (or qdrant-haystack's `QdrantDocumentStore`); its `query_sparse()` and `query_dense()` are called.
        :param sparse_model: fastembed sparse model for lexical variants; default: the index's (BM25).
        :param dense_model: fastembed dense model for semantic variants; default: the index's. The `sparse_*`
            and `dense_*` parameters left out are filled in from Needle's settings with the model.
        :param sparse_model_kwargs: Extra fastembed arguments (e.g. `specific_model_path`).
        :param dense_model_kwargs: Extra fastembed arguments for the dense model.
        :param sparse_local_files_only: Load the sparse model without a hub.
        :param dense_local_files_only: Load the dense model without a hub.
        :param sparse_cache_dir: fastembed cache folder for the sparse model.
        :param dense_cache_dir: fastembed cache folder for the dense model.
        :param threads: ONNX threads.
        :param query_prefix: Prefix for semantic variants; default: the index's query prefix.
        :param document_prefix: Prefix for HyDE passages (they read like documents); default: the index's.
        :param bm25_top_k: Results per lexical variant.
        :param vector_top_k: Results per semantic variant.
        :param meta_fields: Metadata fields the documents carry; `None` carries all (see `StoreRetriever`).
        :param dense_embedder: A served query embedder (or its mapping) that embeds semantic variants in place of
            the fastembed model (it adds no prefix); default, when the index's model runs on a server: that server's.
        :raises ValueError: On a top_k below 1, or a store that is not one Needle's components can search (`searchable`).
        """
        if bm25_top_k < 1 or vector_top_k < 1:
            raise ValueError(f"top_k values must be > 0, got {bm25_top_k} and {vector_top_k}")
        self._store = searchable(document_store)
        self.document_store = document_store
        embedder = load_component(dense_embedder, "dense_embedder") if dense_embedder is not None else None
        sparse, from_sparse = by_name(
            "sparse", sparse_model, sparse_model_kwargs, sparse_local_files_only, sparse_cache_dir
        )
        dense, from_dense = by_name(
            "dense", dense_model, dense_model_kwargs, dense_local_files_only, dense_cache_dir, embedder
        )
        self._from_settings = from_sparse | from_dense
        if query_prefix is None or document_prefix is None:
            prefixes = index_prefixes()
            self._from_settings |= {
                name
                for name, value in (("query_prefix", query_prefix), ("document_prefix", document_prefix))
                if value is None
            }
            query_prefix = prefixes[0] if query_prefix is None else query_prefix
            document_prefix = prefixes[1] if document_prefix is None else document_prefix
        self.sparse_model = sparse["sparse_model"]
        self.dense_model = dense["dense_model"]
        self.sparse_model_kwargs = sparse["sparse_model_kwargs"]
        self.dense_model_kwargs = dense["dense_model_kwargs"]
        self.sparse_local_files_only = sparse["sparse_local_files_only"]
        self.dense_local_files_only = dense["dense_local_files_only"]
        self.sparse_cache_dir = sparse["sparse_cache_dir"]
        self.dense_cache_dir = dense["dense_cache_dir"]
        self.threads = threads
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.bm25_top_k = bm25_top_k
        self.vector_top_k = vector_top_k
        self.meta_fields = meta_fields
        self.dense_embedder = dense["dense_embedder"]
        self._sparse: Any = None
        self._dense: Any = None

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        data = default_to_dict(
            self,
            document_store=self.document_store.to_dict(),
            sparse_model=self.sparse_model,
            dense_model=self.dense_model,
            sparse_model_kwargs=self.sparse_model_kwargs,
            dense_model_kwargs=self.dense_model_kwargs,
            sparse_local_files_only=self.sparse_local_files_only,
            dense_local_files_only=self.dense_local_files_only,
            sparse_cache_dir=self.sparse_cache_dir,
            dense_cache_dir=self.dense_cache_dir,
            threads=self.threads,
            query_prefix=self.query_prefix,
            document_prefix=self.document_prefix,
            bm25_top_k=self.bm25_top_k,
            vector_top_k=self.vector_top_k,
            meta_fields=self.meta_fields,
            dense_embedder=component_to_dict(self.dense_embedder, "dense_embedder") if self.dense_embedder else None,
        )
        return without(data, self._from_settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "VariantRetriever":
        """Deserialise the component."""
        return cls(**with_document_store(data)["init_parameters"])

    def warm_up(self) -> None:
        """Load (or share) the fastembed models; a second call does nothing."""
        if self._sparse is None:
            self._sparse = _FastembedSparseEmbeddingBackendFactory.get_embedding_backend(
                model_name=self.sparse_model,
                cache_dir=self.sparse_cache_dir,
                threads=self.threads,
                local_files_only=self.sparse_local_files_only,
                model_kwargs=self.sparse_model_kwargs,
            )
        if self._dense is None and self.dense_embedder is not None:
            self._dense = self.dense_embedder  # a served embedder: `embed(texts)` like fastembed's backend
        if self._dense is None:
            self._dense = _FastembedEmbeddingBackendFactory.get_embedding_backend(
                model_name=self.dense_model,
                cache_dir=self.dense_cache_dir,
                threads=self.threads,
                local_files_only=self.dense_local_files_only,
                model_kwargs=self.dense_model_kwargs,
            )

    @component.output_types(lists=dict[str, list[Document]])
    def run(self, variants: list[dict[str, Any]], filters: dict[str, Any] | None = None) -> dict[str, Any]:
        """
        Retrieve every variant.

        :param variants: `{"kind": "lex"|"vec"|"hyde"|"sub", "text": str, "name": optional, "embedding": optional}`.
        :param filters: Haystack filters (e.g. the collection filter) applied to every list.
        :returns: A dictionary with `lists`: ranked, normalised documents by variant name.
        :raises ValueError: On a variant of unknown kind.
        """
        if not variants:
            return {"lists": {}}
        self.warm_up()
        counts: dict[str, int] = {}
        names = []
        for variant in variants:
            kind = variant.get("kind")
            if kind not in ROUTES:
                raise ValueError(f"unknown variant kind {kind!r}; expected one of {sorted(ROUTES)}")
            counts[kind] = counts.get(kind, 0) + 1
            names.append(variant.get("name") or (kind if kind == "hyde" else f"{kind}_{counts[kind]}"))

        lists: dict[str, list[Document]] = {}
        to_embed = [(i, v) for i, v in enumerate(variants) if ROUTES[v["kind"]] != "bm25" and not v.get("embedding")]
        texts = [(self.document_prefix if v["kind"] == "hyde" else self.query_prefix) + v["text"] for _, v in to_embed]
        dense = dict(zip((i for i, _ in to_embed), self._dense.embed(texts, progress_bar=False))) if texts else {}
        for i, variant in enumerate(variants):
            route = ROUTES[variant["kind"]]
            if route in ("bm25", "both"):
                sparse = next(iter(self._sparse.model.query_embed([variant["text"]])))
                embedding = SparseEmbedding(indices=sparse.indices.tolist(), values=[float(v) for v in sparse.values])
                docs = self._store.query_sparse(
                    embedding, top_k=self.bm25_top_k, filters=filters, fields=self.meta_fields
                )
                lists[f"{names[i]}_bm25" if route == "both" else names[i]] = normalised(docs, "bm25")
            if route in ("cosine", "both"):
                vector = variant.get("embedding")
                vector = dense[i] if vector is None else vector
                docs = self._store.query_dense(
                    list(vector), top_k=self.vector_top_k, filters=filters, fields=self.meta_fields
                )
                lists[f"{names[i]}_vector" if route == "both" else names[i]] = normalised(docs, "cosine")
        return {"lists": lists}
