import pytest
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError

from haystack_integrations.components.caching.needle.chunk_differ import ChunkDiffer
from haystack_integrations.components.query.needle.pseudo_relevance_expander import PseudoRelevanceExpander
from haystack_integrations.components.rankers.needle.hybrid_score_ranker import HybridScoreRanker
from haystack_integrations.components.retrievers.needle.dense_retriever import DenseRetriever
from haystack_integrations.components.retrievers.needle.keyword_retriever import KeywordRetriever
from haystack_integrations.components.retrievers.needle.sparse_retriever import SparseRetriever
from haystack_integrations.components.retrievers.needle.variant_retriever import VariantRetriever
from haystack_integrations.components.writers.needle.index_writer import IndexWriter
from haystack_integrations.document_stores.needle import (
    BestScore,
    EdgeDocumentStore,
    ManagedStore,
    NeedleDocumentStore,
    QdrantServerDocumentStore,
    SearchableStore,
    searchable,
)
from haystack_integrations.document_stores.needle.protocol import MANAGED_METHODS, SEARCHABLE_METHODS
from tests.document_stores.stub_store import StubStore

UNREACHABLE = "http://127.0.0.1:9"
COMPONENTS = [
    DenseRetriever,
    SparseRetriever,
    KeywordRetriever,
    ChunkDiffer,
    IndexWriter,
    PseudoRelevanceExpander,
    VariantRetriever,
    HybridScoreRanker,
]


def edge(tmp_path, **params):
    return EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4, **params)


def server(tmp_path, **params):
    return QdrantServerDocumentStore(url=UNREACHABLE, embedding_dim=4, **params)


def without(method: str) -> object:
    """A store that lacks one method of the protocol."""
    return type("PartialStore", (StubStore,), {method: None})()


class TestStoreProtocols:
    @pytest.mark.parametrize("make", [edge, server])
    def test_both_stores_satisfy_both_protocols_without_opening(self, tmp_path, make):
        store = make(tmp_path)
        assert isinstance(store, SearchableStore) and isinstance(store, ManagedStore)
        assert searchable(store) is store
        assert not (tmp_path / "edge").exists()

    def test_the_index_store_of_a_graph_implements_both_by_handing_calls_to_its_engine(self, settings):
        from needle.core.settings import using_settings

        with using_settings(settings):
            store = NeedleDocumentStore(role="files")
        assert isinstance(store, ManagedStore)
        assert searchable(store) is store.engine
        assert store.engine.to_dict()["init_parameters"]["path"] == str(settings.index_dir / "edge_files")

    def test_components_call_what_searchable_store_lists_and_the_application_manages_the_rest(self):
        assert set(SEARCHABLE_METHODS) == {
            "to_dict",
            "count_documents",
            "filter_documents",
            "iter_documents",
            "write_documents",
            "delete_documents",
            "update_by_filter",
            "list_documents_meta",
            "count_values",
            "query_dense",
            "query_sparse",
            "query_text",
            "best_scores",
            "flush",
            "deferred_flush",
            "optimize",
        }
        assert set(MANAGED_METHODS) - set(SEARCHABLE_METHODS) == {
            "delete_by_filter",
            "delete_all_documents",
            "verify",
            "check_unopened",
            "changes",
            "read_ahead",
            "writes_paused",
            "close",
        }

    def test_a_stub_with_every_method_passes(self):
        assert isinstance(StubStore(), SearchableStore)
        assert searchable(StubStore()) is not None

    def test_a_missing_method_is_named_with_the_class(self):
        with pytest.raises(ValueError, match=r"^PartialStore does not provide best_scores\(\): "):
            searchable(without("best_scores"))
        with pytest.raises(
            ValueError, match=r"object does not provide to_dict\(\), count_documents\(\), .*optimize\(\)"
        ):
            searchable(object())

    @pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.__name__)
    @pytest.mark.parametrize("method", ["query_dense", "list_documents_meta", "flush"])
    def test_components_refuse_a_store_lacking_a_method(self, component, method):
        with pytest.raises(ValueError, match=rf"PartialStore does not provide {method}\(\)"):
            component(document_store=without(method))

    def test_the_rankers_file_store_is_checked_too(self):
        with pytest.raises(ValueError, match=r"PartialStore does not provide best_scores\(\)"):
            HybridScoreRanker(document_store=StubStore(), file_document_store=without("best_scores"))

    def test_a_best_score_search_takes_one_query(self):
        with pytest.raises(ValueError, match="exactly one"):
            BestScore()
        with pytest.raises(ValueError, match="exactly one"):
            BestScore.per_value("path", ["a.md"])
        with pytest.raises(ValueError, match="together"):
            BestScore(dense=[1.0], field="path")
        terms = BestScore.per_term(SparseEmbedding(indices=[3, 9], values=[1.0, 2.0]))
        assert [(t.sparse.indices, t.sparse.values, t.field) for t in terms] == [([3], [1.0], None), ([9], [2.0], None)]


class TestOneErrorForOneCondition:
    """Both stores raise the same exception, with the same words, for the same misuse."""

    @pytest.mark.parametrize(("make", "holder"), [(edge, "store"), (server, "collection")])
    def test_sparse_queries_on_a_store_without_sparse_vectors(self, tmp_path, make, holder):
        store = make(tmp_path, use_sparse_embeddings=False)
        terms = SparseEmbedding(indices=[1], values=[1.0])
        expected = f"needs a {holder} with sparse vectors \\(use_sparse_embeddings=True\\)"
        with pytest.raises(DocumentStoreError, match=rf"^query_sparse\(\) {expected}"):
            store.query_sparse(terms)
        with pytest.raises(DocumentStoreError, match=rf"^best_scores\(\) with a sparse query {expected}"):
            store.best_scores(BestScore.per_term(terms))
        with pytest.raises(DocumentStoreError, match=rf"^best_scores\(\) with a sparse query {expected}"):
            store.best_scores(BestScore.per_value("path", ["a.md"], sparse=terms))
        store.close()

    @pytest.mark.parametrize("make", [edge, server])
    def test_bad_arguments_are_value_errors(self, tmp_path, make):
        store = make(tmp_path)
        with pytest.raises(ValueError, match="4 values"):
            store.best_scores(BestScore.per_value("path", ["a.md"], dense=[1.0]))
        with pytest.raises(ValueError, match="top_k must be > 0, got 0"):
            store.query_dense([1.0, 0.0, 0.0, 0.0], top_k=0)
        assert store.best_scores(BestScore.per_value("path", [], dense=[1.0, 0.0, 0.0, 0.0])) == []
        store.close()


def test_the_point_layout_is_qdrant_haystacks():
    from haystack_integrations.document_stores.qdrant import converters

    from haystack_integrations.document_stores.needle import layout

    assert (layout.DENSE_VECTORS_NAME, layout.SPARSE_VECTORS_NAME) == (
        converters.DENSE_VECTORS_NAME,
        converters.SPARSE_VECTORS_NAME,
    )
    assert layout.convert_id("notes:a.md#0") == converters.convert_id("notes:a.md#0")


def test_the_embedded_store_does_not_import_qdrant_client():
    import subprocess
    import sys

    code = "import sys, needle.facade.api, needle.shells.cli; from haystack_integrations.document_stores.needle import EdgeDocumentStore; print('qdrant_client' in sys.modules, 'openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
