import math
from typing import Any

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from haystack_integrations.components.rankers.needle.hybrid_score_ranker import HybridScoreRanker
from haystack_integrations.document_stores.needle import BestScore, EdgeDocumentStore

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
    """A's second chunk is its best vector match, B only matches words, C only meaning; E has no whole-file document."""
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
            chunk("e1", "E", [0.6, 0.8, 0.0, 0.0], []),
        ]
    )
    yield document_store
    document_store.close()


def candidates(*ids: str) -> list[Document]:
    files = {"a1": "A", "b1": "B", "c1": "C", "e1": "E"}
    return [Document(id=i, content=i, score=0.1, meta={"source_doc_id": files[i]}) for i in ids]


class TestHybridScoreRanker:
    def test_init_defaults(self, store):
        ranker = HybridScoreRanker(document_store=store)
        assert (ranker.bm25_weight, ranker.group_by, ranker.file_weight) == (0.5, "source_doc_id", 0.5)
        assert ranker.cacheable is False

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"bm25_weight": 1.5}, "bm25_weight"),
            ({"bm25_weight": -0.1}, "bm25_weight"),
            ({"cosine_scale": "minmax"}, "cosine_scale"),
            ({"file_weight": 1.1}, "file_weight"),
            ({"common_bm25_weight": 1.5}, "common_bm25_weight"),
            ({"specificity": [0.5, 0.4]}, "specificity"),
            ({"specificity": [0.3]}, "specificity"),
            ({"specific_terms": 0}, "specific_terms"),
            ({"lead_margin": 0.0}, "lead_margin"),
            ({"lead_margin": 1.5}, "lead_margin"),
            ({"lead_floor": -0.1}, "lead_floor"),
            ({"balance_samples": -1}, "balance_samples"),
            ({"balance_leads": [0.3, 0.1]}, "balance_leads"),
            ({"balance_floor": 1.5}, "balance_floor"),
        ],
    )
    def test_bad_params_raise(self, store, kwargs, message):
        with pytest.raises(ValueError, match=message):
            HybridScoreRanker(document_store=store, **kwargs)

    def test_store_without_scores_is_refused(self):
        with pytest.raises(ValueError, match="best_scores"):
            HybridScoreRanker(document_store=object())

    def test_to_dict(self, store):
        data = HybridScoreRanker(document_store=store, bm25_weight=0.3, group_by="path").to_dict()
        assert data["type"] == "haystack_integrations.components.rankers.needle.hybrid_score_ranker.HybridScoreRanker"
        assert data["init_parameters"]["document_store"] == store.to_dict()
        assert {k: v for k, v in data["init_parameters"].items() if k != "document_store"} == {
            "bm25_weight": 0.3,
            "group_by": "path",
            "file_document_store": None,
            "file_weight": 0.5,
            "cosine_scale": "best",
            "common_bm25_weight": None,
            "specificity": [0.3, 0.45],
            "specific_terms": 2,
            "lead_margin": None,
            "lead_floor": 0.8,
            "balance_samples": 0,
            "balance_leads": [0.15, 0.3],
            "balance_floor": 0.2,
        }

    def test_from_dict_round_trip(self, store):
        ranker = HybridScoreRanker(
            document_store=store,
            bm25_weight=0.7,
            cosine_scale="raw",
            common_bm25_weight=0.2,
            specificity=[0.2, 0.5],
            lead_margin=0.1,
        )
        again = HybridScoreRanker.from_dict(ranker.to_dict())
        assert again.to_dict() == ranker.to_dict()
        assert isinstance(again.document_store, EdgeDocumentStore)

    def test_each_file_counts_its_best_chunk_per_signal(self, store):
        ranker = HybridScoreRanker(document_store=store, bm25_weight=0.0)
        out = ranker.run(
            query="q", documents=candidates("a1", "b1", "c1"), query_embedding=QUERY, query_sparse_embedding=TERMS
        )["documents"]
        # By cosine alone: C (0.95) before A (0.8 through its chunk a2, not the candidate a1) before B (0).
        assert [d.id for d in out] == ["c1", "a1", "b1"]
        assert out[1].meta["hybrid"]["cosine"] == pytest.approx(0.8, abs=1e-4)
        assert [d.score for d in out] == pytest.approx([1.0, (0.8 - 0.0) / 0.95, 0.0], abs=1e-3)

    def test_bm25_weight_one_ranks_by_words_alone(self, store):
        ranker = HybridScoreRanker(document_store=store, bm25_weight=1.0)
        out = ranker.run(
            query="q", documents=candidates("c1", "a1", "b1"), query_embedding=QUERY, query_sparse_embedding=TERMS
        )["documents"]
        assert [d.id for d in out] == ["b1", "a1", "c1"]
        assert out[2].meta["hybrid"]["bm25"] == 0.0

    def test_lexical_part_is_relative_to_what_the_query_could_reach(self, store):
        # Neither candidate has term 2: min-max scaling would give A's lone match a full 1.0. The ceiling is
        # the best score each query term reaches anywhere (B and D hold both terms), so A gets a fraction.
        ranker = HybridScoreRanker(document_store=store, bm25_weight=1.0)
        out = ranker.run(
            query="q", documents=candidates("a1", "c1"), query_embedding=QUERY, query_sparse_embedding=TERMS
        )["documents"]
        hybrid = out[0].meta["hybrid"]
        assert out[0].id == "a1"
        assert hybrid["bm25_ceiling"] > hybrid["bm25"] > 0
        assert out[0].score == pytest.approx(hybrid["bm25"] / hybrid["bm25_ceiling"])
        assert out[0].score < 0.5
        assert out[1].score == 0.0

    def test_the_share_of_query_terms_no_document_has_is_traced(self, store):
        ranker = HybridScoreRanker(document_store=store, bm25_weight=1.0)
        half_unknown = SparseEmbedding(indices=[1, 99], values=[1.0, 1.0])
        out = ranker.run(query="q", documents=candidates("b1"), query_sparse_embedding=half_unknown)["documents"]
        assert out[0].meta["hybrid"]["bm25_unknown"] == 0.5
        known = ranker.run(query="q", documents=candidates("b1"), query_sparse_embedding=TERMS)["documents"]
        assert known[0].meta["hybrid"]["bm25_unknown"] == 0.0
        assert out[0].score == pytest.approx(known[0].score)  # the ranking itself ignores unknown terms, as before

    def test_no_candidates_need_no_embeddings(self, store):
        assert HybridScoreRanker(document_store=store).run(query="q", documents=[]) == {"documents": []}

    def test_file_with_every_query_term_reaches_the_ceiling(self, store):
        ranker = HybridScoreRanker(document_store=store, bm25_weight=1.0)
        out = ranker.run(query="q", documents=candidates("b1"), query_embedding=QUERY, query_sparse_embedding=TERMS)[
            "documents"
        ]
        assert out[0].score == pytest.approx(1.0)

    def test_balanced_mix_lifts_the_file_both_signals_like(self, store):
        ranker = HybridScoreRanker(document_store=store, bm25_weight=0.5)
        out = ranker.run(
            query="q", documents=candidates("b1", "c1", "a1"), query_embedding=QUERY, query_sparse_embedding=TERMS
        )["documents"]
        # A has some of each signal; B and C only one each.
        assert out[0].id == "a1"

    def test_top_k_and_input_untouched(self, store):
        documents = candidates("a1", "b1", "c1")
        out = HybridScoreRanker(document_store=store).run(
            query="q", documents=documents, top_k=1, query_embedding=QUERY, query_sparse_embedding=TERMS
        )["documents"]
        assert len(out) == 1
        assert all(d.score == 0.1 and "hybrid" not in d.meta for d in documents)

    def test_top_k_returns_the_leading_documents_of_the_full_ranking(self, store):
        ranker = HybridScoreRanker(document_store=store)
        documents = candidates("c1", "b1", "e1", "a1")
        before = [d.to_dict() for d in documents]

        def run(**kw: Any) -> list[Document]:
            return ranker.run(
                query="q", documents=documents, query_embedding=QUERY, query_sparse_embedding=TERMS, **kw
            )["documents"]

        full, cut = run(), run(top_k=2)
        assert [d.to_dict() for d in cut] == [d.to_dict() for d in full[:2]]
        assert [d.to_dict() for d in documents] == before
        assert not any(o is d for o in full for d in documents)

    def test_rescore_gives_runs_scores_and_metadata_in_input_order(self, store):
        ranker = HybridScoreRanker(document_store=store)
        documents = candidates("b1", "c1", "a1", "e1")
        before = [d.to_dict() for d in documents]
        scored = ranker.rescore(documents, query_embedding=QUERY, query_sparse_embedding=TERMS)
        ranked = ranker.run(query="q", documents=documents, query_embedding=QUERY, query_sparse_embedding=TERMS)[
            "documents"
        ]
        by_id = {d.id: (d.score, {"hybrid": d.meta["hybrid"]}) for d in ranked}
        assert scored == [by_id[d.id] for d in documents]
        assert [d.to_dict() for d in documents] == before
        assert ranker.rescore([], query_embedding=None, query_sparse_embedding=None) == []
        with pytest.raises(ValueError, match="query_sparse_embedding"):
            ranker.rescore(documents, query_embedding=QUERY)

    def test_missing_embeddings_and_bad_top_k_raise(self, store):
        ranker = HybridScoreRanker(document_store=store)
        with pytest.raises(ValueError, match="query_sparse_embedding"):
            ranker.run(query="q", documents=candidates("a1"), query_embedding=QUERY)
        with pytest.raises(ValueError, match="needs query_embedding"):
            ranker.run(query="q", documents=candidates("a1"), query_sparse_embedding=TERMS)
        with pytest.raises(ValueError, match="top_k"):
            ranker.run(
                query="q", documents=candidates("a1"), top_k=0, query_embedding=QUERY, query_sparse_embedding=TERMS
            )

    def test_no_candidates_no_queries(self, store):
        out = HybridScoreRanker(document_store=store).run(
            query="q", documents=[], query_embedding=QUERY, query_sparse_embedding=TERMS
        )
        assert out == {"documents": []}


@pytest.fixture(scope="module")
def file_store(tmp_path_factory):
    """Whole-file documents: A's text holds both query terms (its chunks one each), B's and C's as their chunks."""
    document_store = EdgeDocumentStore(
        path=str(tmp_path_factory.mktemp("hybrid-files") / "edge"), embedding_dim=4, durable_writes=False
    )
    document_store.write_documents(
        [
            chunk("fa", "A", [0.6, 0.8, 0.0, 0.0], [1, 2]),
            chunk("fb", "B", [0.0, 0.0, 1.0, 0.0], [1, 2]),
            chunk("fc", "C", [0.95, 0.0, 0.31, 0.0], []),
            chunk("fd", "D", [1.0, 0.0, 0.0, 0.0], [1, 2]),
        ]
    )
    yield document_store
    document_store.close()


class TestHybridScoreRankerWithFiles:
    def test_round_trip_keeps_the_file_store(self, store, file_store):
        ranker = HybridScoreRanker(document_store=store, file_document_store=file_store, file_weight=0.3)
        data = ranker.to_dict()
        assert data["init_parameters"]["file_document_store"] == file_store.to_dict()
        again = HybridScoreRanker.from_dict(data)
        assert isinstance(again.file_document_store, EdgeDocumentStore)
        assert again.to_dict() == data

    def test_file_store_without_scores_is_refused(self, store):
        with pytest.raises(ValueError, match="best_scores"):
            HybridScoreRanker(document_store=store, file_document_store=object())

    def test_words_spread_over_chunks_count_through_the_whole_file(self, store, file_store):
        # A's chunks hold one query term at most; its whole text holds both, as B's single chunk does.
        docs = candidates("a1", "b1")
        alone = HybridScoreRanker(document_store=store, bm25_weight=1.0).run(
            query="q", documents=docs, query_sparse_embedding=TERMS
        )["documents"]
        mixed = HybridScoreRanker(document_store=store, file_document_store=file_store, bm25_weight=1.0).run(
            query="q", documents=docs, query_sparse_embedding=TERMS
        )["documents"]
        a_alone = next(d for d in alone if d.id == "a1")
        a_mixed = next(d for d in mixed if d.id == "a1")
        assert a_mixed.score > a_alone.score
        hybrid = a_mixed.meta["hybrid"]
        assert hybrid["file_bm25"] > 0 and hybrid["file_bm25_ceiling"] > 0
        expected = 0.5 * hybrid["bm25"] / hybrid["bm25_ceiling"] + 0.5 * min(
            hybrid["file_bm25"] / hybrid["file_bm25_ceiling"], 1.0
        )
        assert a_mixed.score == pytest.approx(expected)

    def test_file_weight_one_ranks_by_whole_files_alone(self, store, file_store):
        ranker = HybridScoreRanker(
            document_store=store, file_document_store=file_store, bm25_weight=0.0, file_weight=1.0
        )
        out = ranker.run(query="q", documents=candidates("a1", "b1", "c1"), query_embedding=QUERY)["documents"]
        # Whole-file cosines: C 0.95, A 0.6, B 0; the chunk level is not read at all.
        assert [d.id for d in out] == ["c1", "a1", "b1"]
        assert "cosine" not in out[0].meta["hybrid"]
        assert out[1].meta["hybrid"]["file_cosine"] == pytest.approx(0.6, abs=1e-4)

    def test_single_signal_rankers_need_only_their_embedding(self, store, file_store):
        lexical = HybridScoreRanker(document_store=store, file_document_store=file_store, bm25_weight=1.0)
        semantic = HybridScoreRanker(document_store=store, file_document_store=file_store, bm25_weight=0.0)
        assert lexical.run(query="q", documents=candidates("b1"), query_sparse_embedding=TERMS)["documents"]
        assert semantic.run(query="q", documents=candidates("c1"), query_embedding=QUERY)["documents"]
        with pytest.raises(ValueError, match="query_sparse_embedding"):
            lexical.run(query="q", documents=candidates("b1"), query_embedding=QUERY)

    def test_a_file_without_a_whole_file_document_keeps_its_chunk_score(self, store, file_store):
        # E was indexed before whole files were (no file document): its chunk cosine (0.6) stands in.
        ranker = HybridScoreRanker(
            document_store=store, file_document_store=file_store, bm25_weight=0.0, cosine_scale="raw"
        )
        out = ranker.run(query="q", documents=candidates("e1", "c1"), query_embedding=QUERY)["documents"]
        scores = {d.id: d.score for d in out}
        assert scores["e1"] == pytest.approx(0.6, abs=1e-4)
        assert scores["c1"] == pytest.approx(0.95, abs=1e-3)  # chunk and whole file alike

    def test_each_store_gets_one_batch_of_engine_calls_with_the_same_scores(self, store, file_store, monkeypatch):
        # Both signals and the query terms' best scores at both levels: one batch per store, not three.
        ranker = HybridScoreRanker(document_store=store, file_document_store=file_store)
        docs = candidates("a1", "b1", "c1", "e1")
        batches: list[int] = []
        for each in (store, file_store):
            engine = each._best_scores
            monkeypatch.setattr(
                each, "_best_scores", lambda requests, engine=engine: batches.append(len(requests)) or engine(requests)
            )
        out = ranker.run(query="q", documents=docs, query_embedding=QUERY, query_sparse_embedding=TERMS)["documents"]
        assert batches == [4 + 2 + 4, 4 + 2 + 4]
        files = ["A", "B", "C", "E"]
        for name, each in (("", store), ("file_", file_store)):
            bm25 = each.best_scores(BestScore.per_value("source_doc_id", files, sparse=TERMS))
            cosine = each.best_scores(BestScore.per_value("source_doc_id", files, dense=QUERY))
            ceiling = sum(s or 0.0 for s in each.best_scores(BestScore.per_term(TERMS)))
            for doc in out:
                at = files.index(doc.meta["source_doc_id"])
                assert doc.meta["hybrid"][f"{name}bm25"] == (bm25[at] or 0.0)
                assert doc.meta["hybrid"][f"{name}cosine"] == (cosine[at] or 0.0)
                assert doc.meta["hybrid"][f"{name}bm25_ceiling"] == ceiling


COMMON = SparseEmbedding(indices=[1, 2], values=[1.0, 1.0])
RARE = SparseEmbedding(indices=[7, 8], values=[1.0, 1.0])


@pytest.fixture(scope="module")
def reference_store(tmp_path_factory):
    """
    Forty short reference pages that nearly all share the words 1 and 2 (common), as man pages share "file" and
    "command". W matches both words but not the meaning; M has the meaning without the words; R alone holds the
    rare words 7 and 8.
    """
    document_store = EdgeDocumentStore(
        path=str(tmp_path_factory.mktemp("reference") / "edge"), embedding_dim=4, durable_writes=False
    )
    pages = [chunk(f"p{i}", f"P{i}", [0.0, 0.0, 0.0, 1.0], [1, 2, 10 + i]) for i in range(37)]
    pages += [
        chunk("w1", "W", [0.5, 0.0, 0.0, 0.87], [1, 2]),
        chunk("m1", "M", [0.9, 0.0, 0.0, 0.44], [3]),
        chunk("r1", "R", [0.0, 0.0, 1.0, 0.0], [7, 8]),
    ]
    document_store.write_documents(pages)
    yield document_store
    document_store.close()


def pages(*ids: str) -> list[Document]:
    return [Document(id=i, content=i, score=0.1, meta={"source_doc_id": i[0].upper()}) for i in ids]


class TestKeywordsOfCommonWords:
    def test_specificity_is_read_off_the_second_most_specific_term(self, reference_store):
        ranker = HybridScoreRanker(document_store=reference_store, common_bm25_weight=0.1)
        reachable = 2.2 * math.log(1.0 + (40 - 0.5) / 1.5)
        assert ranker.specificity_of([reachable, reachable / 4, 0.0], documents=40) == pytest.approx(0.25)
        assert ranker.specificity_of([reachable / 4], documents=40) == pytest.approx(0.25)  # one term: its own
        assert ranker.specificity_of([0.0, 0.0], documents=40) == 0.0
        assert [ranker.weight_for(s) for s in (0.1, 0.3, 0.375, 0.45, 0.9)] == pytest.approx([0.1, 0.1, 0.3, 0.5, 0.5])
        assert HybridScoreRanker(document_store=reference_store).weight_for(0.1) == 0.5  # off: always bm25_weight

    def test_a_query_of_common_words_leans_on_meaning(self, reference_store):
        docs = pages("w1", "m1")
        fixed = HybridScoreRanker(document_store=reference_store, bm25_weight=0.5)
        adaptive = HybridScoreRanker(document_store=reference_store, bm25_weight=0.5, common_bm25_weight=0.1)
        run = {"query": "q", "documents": docs, "query_embedding": QUERY, "query_sparse_embedding": COMMON}
        assert [d.id for d in fixed.run(**run)["documents"]] == ["w1", "m1"]
        leaning = adaptive.run(**run)["documents"]
        assert [d.id for d in leaning] == ["m1", "w1"]
        assert leaning[0].meta["hybrid"]["specificity"] < 0.3
        assert leaning[0].meta["hybrid"]["bm25_weight"] == pytest.approx(0.1)

    def test_a_query_of_rare_words_keeps_its_keywords_full_weight(self, reference_store):
        ranker = HybridScoreRanker(document_store=reference_store, bm25_weight=0.5, common_bm25_weight=0.1)
        out = ranker.run(query="q", documents=pages("r1", "m1"), query_embedding=QUERY, query_sparse_embedding=RARE)
        top = out["documents"][0]
        assert top.id == "r1"
        assert top.meta["hybrid"]["specificity"] >= 0.45 and top.meta["hybrid"]["bm25_weight"] == 0.5


class TestKeywordsThatPickNoFile:
    def test_the_weight_follows_the_lead_up_to_lead_margin(self, reference_store):
        ranker = HybridScoreRanker(document_store=reference_store, bm25_weight=0.5, lead_margin=0.2, lead_floor=0.6)
        assert ranker.lead_of({"A": 0.9, "B": 0.85, "C": 0.1}) == pytest.approx(0.05)
        assert ranker.lead_of({"A": 0.4}) == pytest.approx(0.4)  # alone: its own score
        assert ranker.lead_of({}) == 0.0
        weights = [ranker.weighed_by_lead(0.5, lead) for lead in (0.0, 0.1, 0.2, 0.6)]
        assert weights == pytest.approx([0.3, 0.4, 0.5, 0.5])
        assert HybridScoreRanker(document_store=reference_store).weighed_by_lead(0.5, 0.0) == 0.5  # off

    def test_words_many_pages_share_about_equally_weigh_less(self, reference_store):
        # W and P0 both hold the query's two words, so neither leads on keywords; M has the meaning.
        docs = [*pages("w1"), Document(id="p0", content="p0", score=0.1, meta={"source_doc_id": "P0"}), *pages("m1")]
        run = {"query": "q", "documents": docs, "query_embedding": QUERY, "query_sparse_embedding": COMMON}
        fixed = HybridScoreRanker(document_store=reference_store, bm25_weight=0.5)
        assert fixed.run(**run)["documents"][0].id == "w1"
        leading = HybridScoreRanker(document_store=reference_store, bm25_weight=0.5, lead_margin=0.2, lead_floor=0.0)
        out = leading.run(**run)["documents"]
        assert out[0].id == "m1"
        assert out[0].meta["hybrid"]["bm25_lead"] < 0.2
        assert out[0].meta["hybrid"]["bm25_weight"] < 0.5

    def test_words_that_pick_out_one_file_keep_their_weight(self, reference_store):
        ranker = HybridScoreRanker(document_store=reference_store, bm25_weight=0.5, lead_margin=0.2, lead_floor=0.0)
        out = ranker.run(query="q", documents=pages("r1", "m1"), query_embedding=QUERY, query_sparse_embedding=RARE)
        top = out["documents"][0]
        assert top.id == "r1"
        assert top.meta["hybrid"]["bm25_lead"] >= 0.2 and top.meta["hybrid"]["bm25_weight"] == 0.5


@pytest.mark.parametrize(
    ("rule", "traced"),
    [({"common_bm25_weight": 0.1}, "bm25_weight"), ({"lead_margin": 0.2}, "bm25_lead")],
    ids=["common-words", "lead"],
)
def test_single_signal_rankers_ignore_the_per_question_rules(reference_store, rule, traced):
    # A keywords-only ranker has no other side to give weight to: neither rule runs, nor shows in the trace.
    ranker = HybridScoreRanker(document_store=reference_store, bm25_weight=1.0, **rule)
    out = ranker.run(query="q", documents=pages("w1", "m1"), query_sparse_embedding=COMMON)["documents"]
    assert out[0].id == "w1" and traced not in out[0].meta["hybrid"]


def page(doc_id: str, collection: str, embedding: list[float], terms: list[int]) -> Document:
    doc = chunk(doc_id, doc_id.upper(), embedding, terms)
    return Document(
        id=doc.id,
        content=doc.content,
        meta={**doc.meta, "collection": collection},
        embedding=doc.embedding,
        sparse_embedding=doc.sparse_embedding,
    )


@pytest.fixture
def collections_store(tmp_path):
    """
    Two collections. `manual`: twenty pages sharing four words, each with a name of its own (a man page's), so
    a page's own words less its name pick out no page; W holds the question's words, M its meaning. `papers`:
    twenty pages whose words are their own, so a page's words pick it out.
    """
    document_store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4, durable_writes=False)
    manual = [page(f"s{i}", "manual", [0.0, 0.0, 0.0, 1.0], [1, 2, 3, 4, 100 + i]) for i in range(20)]
    manual += [
        page("w1", "manual", [0.5, 0.0, 0.0, 0.87], [1, 2]),
        page("m1", "manual", [0.9, 0.0, 0.0, 0.44], [3]),
    ]
    papers = [page(f"t{i}", "papers", [0.0, 0.0, 1.0, 0.0], list(range(200 + 6 * i, 206 + 6 * i))) for i in range(20)]
    document_store.write_documents(manual + papers)
    yield document_store
    document_store.close()


class TestABalanceEachCollectionTeaches:
    def test_pages_that_share_their_words_give_bm25_the_floor(self, collections_store):
        ranker = HybridScoreRanker(document_store=collections_store, balance_samples=10, balance_floor=0.2)
        questions = ranker.pseudo_questions("manual")
        assert 8 <= len(questions) <= 10  # W's and M's words are too few to make one
        assert all(len(q.indices) == 2 for q in questions)  # five terms less the three rarest
        assert all(set(q.indices) <= {1, 2, 3, 4} for q in questions)  # a page's own name is dropped
        lead, multiplier = ranker.balance_of("manual")
        assert lead == pytest.approx(0.0) and multiplier == pytest.approx(0.2)
        lead, multiplier = ranker.balance_of("papers")
        assert lead is not None and lead > 0.3 and multiplier == 1.0

    def test_the_multiplier_follows_the_lead_over_balance_leads(self, collections_store):
        ranker = HybridScoreRanker(document_store=collections_store, balance_leads=[0.1, 0.3], balance_floor=0.4)
        assert [ranker.multiplier_for(lead) for lead in (0.0, 0.1, 0.2, 0.3, 0.9)] == pytest.approx(
            [0.4, 0.4, 0.7, 1.0, 1.0]
        )
        assert ranker.balance_of("manual") == (None, 1.0)  # off without balance_samples

    def test_a_collection_of_shared_words_leans_on_meaning(self, collections_store):
        docs = [
            Document(id=i, content=i, score=0.1, meta={"source_doc_id": i.upper(), "collection": "manual"})
            for i in ("w1", "m1")
        ]
        run = {"query": "q", "documents": docs, "query_embedding": QUERY, "query_sparse_embedding": COMMON}
        fixed = HybridScoreRanker(document_store=collections_store, bm25_weight=0.6)
        assert fixed.run(**run)["documents"][0].id == "w1"
        taught = HybridScoreRanker(document_store=collections_store, bm25_weight=0.6, balance_samples=10)
        top = taught.run(**run)["documents"][0]
        assert top.id == "m1"
        assert top.meta["hybrid"]["collection_lead"] == pytest.approx(0.0)
        assert top.meta["hybrid"]["collection_balance"] == pytest.approx(0.2)
        assert top.meta["hybrid"]["bm25_weight"] == pytest.approx(0.12)

    def test_it_is_measured_once_and_again_when_the_collection_grew(self, collections_store, monkeypatch):
        ranker = HybridScoreRanker(document_store=collections_store, balance_samples=10)
        measured: list[str] = []
        keyword_lead = ranker.keyword_lead
        monkeypatch.setattr(ranker, "keyword_lead", lambda c: measured.append(c) or keyword_lead(c))
        ranker.balance_of("papers")
        ranker.balance_of("papers")
        assert measured == ["papers"]
        collections_store.write_documents([page("t99", "papers", [0.0, 0.0, 1.0, 0.0], [900, 901, 902, 903, 904])])
        ranker.balance_of("papers")  # one chunk more in twenty: the same balance
        assert measured == ["papers"]
        more = [
            page(f"u{i}", "papers", [0.0, 0.0, 1.0, 0.0], list(range(1000 + 6 * i, 1006 + 6 * i))) for i in range(5)
        ]
        collections_store.write_documents(more)
        ranker.balance_of("papers")
        assert measured == ["papers", "papers"]

    def test_whole_files_make_the_pseudo_questions_when_there_are_some(self, collections_store):
        ranker = HybridScoreRanker(
            document_store=collections_store, file_document_store=collections_store, balance_samples=5
        )
        assert len(ranker.pseudo_questions("papers")) == 5
        assert ranker.balance_of("papers")[1] == 1.0

    def test_single_signal_rankers_ignore_it(self, collections_store):
        ranker = HybridScoreRanker(document_store=collections_store, bm25_weight=1.0, balance_samples=10)
        docs = [Document(id="w1", content="w1", score=0.1, meta={"source_doc_id": "W1", "collection": "manual"})]
        out = ranker.run(query="q", documents=docs, query_sparse_embedding=COMMON)["documents"]
        assert "collection_balance" not in out[0].meta["hybrid"]

    def test_a_store_that_cannot_measure_it_keeps_the_weight(self, collections_store, monkeypatch):
        ranker = HybridScoreRanker(document_store=collections_store, balance_samples=10)

        def broken(collection: str) -> float:
            raise RuntimeError("no sparse vectors")

        monkeypatch.setattr(ranker, "keyword_lead", broken)
        assert ranker.balance_of("manual") == (None, 1.0)
