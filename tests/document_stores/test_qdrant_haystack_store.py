"""Needle's stages over qdrant-haystack's own `QdrantDocumentStore`: a collection a Haystack user already has.

The collection is filled the way a Haystack project fills one (its own pipeline writing chunks with dense and
sparse vectors), here with Needle's chunker and embedders so that the chunks carry the metadata Needle's later
stages read; then Needle's retrievers, fusion, bonus, dedupe, rerank and snippets search it, in Python and as the
shipped graph with its two stores pointed at the collection.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from haystack import Document, Pipeline
from haystack.document_stores.types import DuplicatePolicy
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

from haystack_integrations.components.embedders.needle.dense_document_embedder import DenseDocumentEmbedder
from haystack_integrations.components.embedders.needle.dense_query_embedder import DenseQueryEmbedder
from haystack_integrations.components.embedders.needle.fastembed_sparse_query_embedder import (
    FastembedSparseQueryEmbedder,
)
from haystack_integrations.components.embedders.needle.multilingual_sparse_document_embedder import (
    MultilingualSparseDocumentEmbedder,
)
from haystack_integrations.components.extractors.needle.snippet_extractor import SnippetExtractor
from haystack_integrations.components.joiners.needle.weighted_rrf_joiner import WeightedRRFJoiner
from haystack_integrations.components.preprocessors.needle.markdown_chunker import MarkdownChunker
from haystack_integrations.components.rankers.needle.best_chunk_selector import BestChunkSelector
from haystack_integrations.components.rankers.needle.candidate_reranker import CandidateReranker
from haystack_integrations.components.rankers.needle.hybrid_score_ranker import HybridScoreRanker
from haystack_integrations.components.rankers.needle.top_rank_bonus import TopRankBonus
from haystack_integrations.components.retrievers.needle.dense_retriever import DenseRetriever
from haystack_integrations.components.retrievers.needle.sparse_retriever import SparseRetriever
from haystack_integrations.document_stores.needle import QdrantSearch, searchable
from needle.core.resources import PIPELINES_DIR
from tests.conftest import DEMO_NOTES

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::UserWarning")]

NOTES = [
    "runbooks/k8s-oomkilled-debugging.md",
    "reference/kubectl-oneliners.md",
    "incidents/2024-05-thumbnailer-restarts.md",
    "howto/restic-laptop-backups.md",
    "howto/sqlite-wal-mode.md",
    "howto/certbot-tls-renewal.md",
    "recipes/sourdough-starter-feeding.md",
]
QUESTION = "pod keeps restarting with exit code 137"
EXPECTED = "runbooks/k8s-oomkilled-debugging.md"
STORE = {"use_sparse_embeddings": True, "sparse_idf": True, "embedding_dim": 384}


def fill(store: QdrantDocumentStore) -> int:
    """Chunk, embed and write a few of the demo notes, as a Haystack project's indexing pipeline would."""
    files = [Document(content=(DEMO_NOTES / n).read_text(), meta={"collection": "notes", "path": n}) for n in NOTES]
    chunks = MarkdownChunker().run(documents=files)["documents"]
    dense = DenseDocumentEmbedder(meta_fields_to_embed=["context"], progress_bar=False)
    sparse = MultilingualSparseDocumentEmbedder(meta_fields_to_embed=["context"], progress_bar=False)
    embedded = sparse.run(documents=dense.run(documents=chunks)["documents"])["documents"]
    return store.write_documents(embedded, policy=DuplicatePolicy.OVERWRITE)


def hybrid_pipeline(store: QdrantDocumentStore) -> Pipeline:
    """Needle's hybrid search stages, written out in Python, over the user's store."""
    pipeline = Pipeline()
    pipeline.add_component("sparse_embedder", FastembedSparseQueryEmbedder(progress_bar=False))
    pipeline.add_component("dense_embedder", DenseQueryEmbedder())
    pipeline.add_component("bm25", SparseRetriever(document_store=store, top_k=20, score_kind="bm25"))
    pipeline.add_component("vector", DenseRetriever(document_store=store, top_k=20, score_kind="cosine"))
    pipeline.add_component("fuse", WeightedRRFJoiner(inputs=["bm25", "vector"], group_by="source_doc_id"))
    pipeline.add_component("best_chunk", BestChunkSelector())
    pipeline.add_component("bonus", TopRankBonus())
    ranker = HybridScoreRanker(document_store=store)
    pipeline.add_component("rerank", CandidateReranker(ranker=ranker, cache_path=None, top_k=5))
    pipeline.add_component("snippets", SnippetExtractor())
    for sender, receiver in [
        ("sparse_embedder.sparse_embedding", "bm25.query_sparse_embedding"),
        ("dense_embedder.embedding", "vector.query_embedding"),
        ("bm25.documents", "fuse.bm25"),
        ("vector.documents", "fuse.vector"),
        ("fuse.documents", "best_chunk.documents"),
        ("best_chunk.documents", "bonus.documents"),
        ("bonus.documents", "rerank.documents"),
        ("dense_embedder.embedding", "rerank.query_embedding"),
        ("sparse_embedder.sparse_embedding", "rerank.query_sparse_embedding"),
        ("rerank.documents", "snippets.documents"),
    ]:
        pipeline.connect(sender, receiver)
    return pipeline


def test_needles_stages_search_a_qdrant_haystack_store_in_local_mode():
    store = QdrantDocumentStore(":memory:", index="notes", **STORE)
    assert fill(store) > len(NOTES)
    assert isinstance(searchable(store), QdrantSearch)
    inputs = {"text": QUESTION}
    out = hybrid_pipeline(store).run(
        {
            "sparse_embedder": inputs,
            "dense_embedder": inputs,
            "best_chunk": {"query": QUESTION},
            "rerank": {"query": QUESTION},
            "snippets": {"query": QUESTION},
        }
    )
    results = out["snippets"]["documents"]
    assert results[0].meta["path"] == EXPECTED
    assert results[0].meta["rerank"]["score"] is not None and results[0].meta["snippet"]
    assert len({doc.meta["path"] for doc in results}) == len(results)  # one result per file


def test_the_shipped_graph_runs_over_a_qdrant_haystack_collection_named_in_its_stores(tmp_path):
    folder = str(tmp_path / "qdrant")
    store = QdrantDocumentStore(path=folder, index="notes", **STORE)
    fill(store)
    store.close()  # qdrant-client's local mode lets one client open a folder
    mine = (
        "{type: haystack_integrations.document_stores.qdrant.document_store.QdrantDocumentStore, init_parameters: "
        f"{{path: {folder}, index: notes, use_sparse_embeddings: true, sparse_idf: true, embedding_dim: 384}}}}"
    )
    text = (PIPELINES_DIR / "query.yml").read_text()
    stores = "stores:\n" + f"  chunks: &chunks {mine}\n" + f"  files: &files {mine}\n"
    start = text.index("stores:\n")
    end = text.index("components:\n")
    pipeline = Pipeline.loads(text[:start] + stores + text[end:])
    out = pipeline.run({"request": {"query": QUESTION}}, include_outputs_from={"snippets"})
    assert out["snippets"]["documents"][0].meta["path"] == EXPECTED
    # Every component searched through one client of the folder.
    adapters = {id(searchable(c.document_store)) for _, c in pipeline.walk() if hasattr(c, "document_store")}
    assert len(adapters) == 1


def test_a_qdrant_haystack_store_written_by_haystacks_own_writer_is_listed_cheaply():
    from haystack.components.writers import DocumentWriter

    store = QdrantDocumentStore(":memory:", index="plain", **STORE)
    DocumentWriter(document_store=store).run(
        documents=[Document(id="a", content="alpha", meta={"path": "a.md"}, embedding=[0.1] * 384)]
    )
    search = searchable(store)
    assert search.list_documents_meta(fields=["path"]) == [{"id": "a", "meta": {"path": "a.md"}}]
    assert search.count_values("path") == {"a.md": 1}
    assert Path(search.to_dict()["type"]).suffix == ".QdrantDocumentStore"
