import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from components.edge_document_store import EdgeDocumentStore
from components.hybrid_score_ranker import HybridScoreRanker

QUERY = [1.0, 0.0, 0.0, 0.0]
TERMS = SparseEmbedding(indices=[1, 2], values=[1.0, 1.0])


def chunk(doc_id: str, file: str, embedding: list[float], terms: list[int]) -> Document:
    return Document(
        id=doc_id,
        content=doc_id,
        meta={"source_doc_id": file},
        embedding=embedding,
        sparse_embedding=SparseEmbedding(indices=terms, values=[1.0] * len(terms)) if terms else None,
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Three files: A's second chunk is its best vector match, B only matches words, C only meaning."""
    document_store = EdgeDocumentStore(
        path=str(tmp_path_factory.mktemp("hybrid") / "edge"), embedding_dim=4, durable_writes=False
    )
    document_store.write_documents(
        [
            chunk("a1", "A", [0.0, 1.0, 0.0, 0.0], [1]),
            chunk("a2", "A", [0.8, 0.6, 0.0, 0.0], []),
            chunk("b1", "B", [0.0, 0.0, 1.0, 0.0], [1, 2]),
            chunk("c1", "C", [0.95, 0.0, 0.31, 0.0], []),
            chunk("d1", "D", [1.0, 0.0, 0.0, 0.0], [1, 2]),
        ]
    )
    yield document_store
    document_store.close()


def candidates(*ids: str) -> list[Document]:
    files = {"a1": "A", "b1": "B", "c1": "C"}
    return [Document(id=i, content=i, score=0.1, meta={"source_doc_id": files[i]}) for i in ids]


class TestHybridScoreRanker:
    def test_init_defaults(self, store):
        ranker = HybridScoreRanker(document_store=store)
        assert (ranker.bm25_weight, ranker.group_by, ranker.max_chunks_per_file) == (0.5, "source_doc_id", 50)
        assert ranker.cacheable is False

    @pytest.mark.parametrize(
        "kwargs, message",
        [({"bm25_weight": 1.5}, "bm25_weight"), ({"bm25_weight": -0.1}, "bm25_weight"),
         ({"max_chunks_per_file": 0}, "max_chunks_per_file")],
    )
    def test_bad_params_raise(self, store, kwargs, message):
        with pytest.raises(ValueError, match=message):
            HybridScoreRanker(document_store=store, **kwargs)

    def test_store_without_scores_is_refused(self):
        with pytest.raises(ValueError, match="query_scores"):
            HybridScoreRanker(document_store=object())

    def test_to_dict(self, store):
        data = HybridScoreRanker(document_store=store, bm25_weight=0.3, group_by="path").to_dict()
        assert data["type"] == "components.hybrid_score_ranker.HybridScoreRanker"
        assert data["init_parameters"]["document_store"] == store.to_dict()
        assert {k: v for k, v in data["init_parameters"].items() if k != "document_store"} == {
            "bm25_weight": 0.3, "group_by": "path", "max_chunks_per_file": 50,
        }

    def test_from_dict_round_trip(self, store):
        ranker = HybridScoreRanker(document_store=store, bm25_weight=0.7, max_chunks_per_file=5)
        again = HybridScoreRanker.from_dict(ranker.to_dict())
        assert again.to_dict() == ranker.to_dict()
        assert isinstance(again.document_store, EdgeDocumentStore)

    def test_each_file_counts_its_best_chunk_per_signal(self, store):
        ranker = HybridScoreRanker(document_store=store, bm25_weight=0.0)
        out = ranker.run(query="q", documents=candidates("a1", "b1", "c1"), query_embedding=QUERY,
                         query_sparse_embedding=TERMS)["documents"]
        # By cosine alone: C (0.95) before A (0.8 through its chunk a2, not the candidate a1) before B (0).
        assert [d.id for d in out] == ["c1", "a1", "b1"]
        assert out[1].meta["hybrid"]["cosine"] == pytest.approx(0.8, abs=1e-4)
        assert [d.score for d in out] == pytest.approx([1.0, (0.8 - 0.0) / 0.95, 0.0], abs=1e-3)

    def test_bm25_weight_one_ranks_by_words_alone(self, store):
        ranker = HybridScoreRanker(document_store=store, bm25_weight=1.0)
        out = ranker.run(query="q", documents=candidates("c1", "a1", "b1"), query_embedding=QUERY,
                         query_sparse_embedding=TERMS)["documents"]
        assert [d.id for d in out] == ["b1", "a1", "c1"]
        assert out[2].meta["hybrid"]["bm25"] == 0.0

    def test_lexical_part_is_relative_to_what_the_query_could_reach(self, store):
        # Neither candidate has term 2: min-max scaling would give A's lone match a full 1.0. The ceiling is
        # the best score each query term reaches anywhere (B and D hold both terms), so A gets a fraction.
        ranker = HybridScoreRanker(document_store=store, bm25_weight=1.0)
        out = ranker.run(query="q", documents=candidates("a1", "c1"), query_embedding=QUERY,
                         query_sparse_embedding=TERMS)["documents"]
        hybrid = out[0].meta["hybrid"]
        assert out[0].id == "a1"
        assert hybrid["bm25_ceiling"] > hybrid["bm25"] > 0
        assert out[0].score == pytest.approx(hybrid["bm25"] / hybrid["bm25_ceiling"])
        assert out[0].score < 0.5
        assert out[1].score == 0.0

    def test_file_with_every_query_term_reaches_the_ceiling(self, store):
        ranker = HybridScoreRanker(document_store=store, bm25_weight=1.0)
        out = ranker.run(query="q", documents=candidates("b1"), query_embedding=QUERY,
                         query_sparse_embedding=TERMS)["documents"]
        assert out[0].score == pytest.approx(1.0)

    def test_balanced_mix_lifts_the_file_both_signals_like(self, store):
        ranker = HybridScoreRanker(document_store=store, bm25_weight=0.5)
        out = ranker.run(query="q", documents=candidates("b1", "c1", "a1"), query_embedding=QUERY,
                         query_sparse_embedding=TERMS)["documents"]
        # A has some of each signal; B and C only one each.
        assert out[0].id == "a1"

    def test_top_k_and_input_untouched(self, store):
        documents = candidates("a1", "b1", "c1")
        out = HybridScoreRanker(document_store=store).run(
            query="q", documents=documents, top_k=1, query_embedding=QUERY, query_sparse_embedding=TERMS
        )["documents"]
        assert len(out) == 1
        assert all(d.score == 0.1 and "hybrid" not in d.meta for d in documents)

    def test_missing_embeddings_and_bad_top_k_raise(self, store):
        ranker = HybridScoreRanker(document_store=store)
        with pytest.raises(ValueError, match="query_embedding"):
            ranker.run(query="q", documents=candidates("a1"), query_embedding=QUERY)
        with pytest.raises(ValueError, match="top_k"):
            ranker.run(query="q", documents=candidates("a1"), top_k=0, query_embedding=QUERY,
                       query_sparse_embedding=TERMS)

    def test_no_candidates_no_queries(self, store):
        out = HybridScoreRanker(document_store=store).run(
            query="q", documents=[], query_embedding=QUERY, query_sparse_embedding=TERMS
        )
        assert out == {"documents": []}
