import math

import numpy as np
import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from haystack_integrations.components.query.needle.pseudo_relevance_expander import PseudoRelevanceExpander
from haystack_integrations.document_stores.needle import EdgeDocumentStore
from tests.document_stores.stub_store import StubStore

# Sparse term ids of the tiny vocabulary below; the store applies IDF.
WAL, BACKUP, ARCHIVING, SEGMENTS, EXACT, OTHER = 1, 2, 3, 4, 5, 6


def chunk(
    source: str, text: str, terms: dict[int, float], embedding: list[float], collection: str = "notes"
) -> Document:
    return Document(
        id=f"{source}-{len(text)}",
        content=text,
        embedding=embedding,
        sparse_embedding=SparseEmbedding(indices=sorted(terms), values=[terms[t] for t in sorted(terms)]),
        meta={"source_doc_id": source, "collection": collection},
    )


@pytest.fixture
def store(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=2, durable_writes=False)
    store.write_documents(
        [
            chunk(
                "A",
                "wal archiving keeps segments; archiving uses archive_command",
                {WAL: 1.0, ARCHIVING: 1.5, SEGMENTS: 1.0},
                [0.0, 1.0],
            ),
            chunk(
                "B",
                "archiving segments to object storage for backup",
                {ARCHIVING: 1.0, SEGMENTS: 1.0, BACKUP: 0.8},
                [0.0, 1.0],
            ),
            chunk("C", "an unrelated note about other things", {OTHER: 1.0}, [1.0, 0.0], collection="elsewhere"),
        ]
    )
    yield store
    store.close()


def sparse(*terms: int) -> SparseEmbedding:
    return SparseEmbedding(indices=list(terms), values=[1.0] * len(terms))


class TestPseudoRelevanceExpander:
    def test_defaults_bad_params_round_trip(self, store):
        expander = PseudoRelevanceExpander(document_store=store)
        assert (expander.feedback_docs, expander.lex_terms, expander.enabled, expander.probe_top_k) == (5, 8, True, 40)
        with pytest.raises(ValueError):
            PseudoRelevanceExpander(document_store=store, feedback_docs=0)
        with pytest.raises(ValueError):
            PseudoRelevanceExpander(document_store=store, rocchio_beta=-1)
        with pytest.raises(ValueError, match="query_sparse"):
            PseudoRelevanceExpander(document_store=object())
        data = PseudoRelevanceExpander(document_store=store, lex_terms=3).to_dict()
        assert data["init_parameters"]["document_store"]["type"].endswith("EdgeDocumentStore")
        assert PseudoRelevanceExpander.from_dict(data).to_dict() == data

    def test_lexical_variant_adds_feedback_terms_not_query_or_stopwords(self, store):
        expander = PseudoRelevanceExpander(document_store=store, lex_terms=2, include_vec=False)
        out = expander.run(query="wal backup", query_sparse_embedding=sparse(WAL, BACKUP))
        assert out["skipped"] is None
        lex = out["variants"][0]
        assert lex["kind"] == "lex" and lex["text"].startswith("wal backup ")
        assert lex["text"].split()[2:] == ["archiving", "segments"]

    def test_rocchio_moves_towards_feedback_and_stays_unit_length(self, store):
        expander = PseudoRelevanceExpander(document_store=store, include_lex=False, rocchio_beta=1.0, feedback_docs=1)
        out = expander.run(
            query="q", query_embedding=np.array([1.0, 0.0], dtype=np.float32), query_sparse_embedding=sparse(OTHER, WAL)
        )
        vec = out["variants"][0]
        # The nearest file to [1, 0] is C ([1, 0]) itself: the vector stays put; feedback from A/B moves it.
        assert vec["kind"] == "vec" and vec["embedding"] == pytest.approx([1.0, 0.0])
        towards = expander.run(query="q", query_embedding=[0.6, 0.8], query_sparse_embedding=sparse(OTHER, WAL))
        moved = towards["variants"][0]["embedding"]
        assert moved == pytest.approx([0.6 / math.hypot(0.6, 1.8), 1.8 / math.hypot(0.6, 1.8)])
        assert all(type(v) is float for v in moved)

    def test_feedback_respects_the_request_filters(self, store):
        expander = PseudoRelevanceExpander(document_store=store, include_lex=False, rocchio_beta=1.0, feedback_docs=1)
        only_notes = {"field": "meta.collection", "operator": "==", "value": "notes"}
        out = expander.run(
            query="q", query_embedding=[1.0, 0.0], query_sparse_embedding=sparse(OTHER, WAL), filters=only_notes
        )
        # C (the nearest, in another collection) is filtered out, so A or B ([0, 1]) is the feedback.
        assert out["variants"][0]["embedding"] == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2)])

    def test_decisive_bm25_probe_skips_expansion(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "decisive"), embedding_dim=2, durable_writes=False)
        store.write_documents(
            [
                chunk("A", "exact exact exact", {EXACT: 30.0}, [0.0, 1.0]),
                chunk("B", "weak", {OTHER: 0.1}, [1.0, 0.0]),
                chunk("C", "filler", {WAL: 1.0}, [1.0, 0.0]),
            ]
        )
        out = PseudoRelevanceExpander(document_store=store).run(
            query="exact", query_sparse_embedding=sparse(EXACT, OTHER)
        )
        assert out == {"variants": [], "skipped": "strong BM25 signal"}
        store.close()

    def test_request_switch_overrides_default_and_off_reads_nothing(self, store):
        class Unreadable(StubStore):
            def query_sparse(self, *args, **kwargs):
                raise AssertionError("a switched-off expander must not query the store")

            query_dense = query_sparse

        assert PseudoRelevanceExpander(document_store=Unreadable()).run(query="x", enabled=False)["variants"] == []
        off = PseudoRelevanceExpander(document_store=store, enabled=False, include_vec=False)
        assert off.run(query="wal", query_sparse_embedding=sparse(WAL))["variants"] == []
        assert off.run(query="wal", query_sparse_embedding=sparse(WAL), enabled=True)["variants"]
