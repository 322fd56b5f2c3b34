import math

import pytest
from haystack import Document

from components.pseudo_relevance_expander import PseudoRelevanceExpander


def hit(source: str, text: str, score: float, embedding: list[float] | None = None) -> Document:
    return Document(content=text, score=score, embedding=embedding, meta={"source_doc_id": source})


class TestPseudoRelevanceExpander:
    def test_defaults_bad_params_round_trip(self):
        expander = PseudoRelevanceExpander()
        assert (expander.feedback_docs, expander.lex_terms, expander.enabled) == (5, 8, True)
        with pytest.raises(ValueError):
            PseudoRelevanceExpander(feedback_docs=0)
        with pytest.raises(ValueError):
            PseudoRelevanceExpander(rocchio_beta=-1)
        data = PseudoRelevanceExpander(lex_terms=3).to_dict()
        assert PseudoRelevanceExpander.from_dict(data).to_dict() == data

    def test_lexical_variant_adds_feedback_terms_not_query_or_stopwords(self):
        probe = [
            hit("A", "wal archiving keeps segments; archiving uses archive_command", 0.6),
            hit("B", "archiving segments to object storage", 0.5),
        ]
        out = PseudoRelevanceExpander(lex_terms=2, include_vec=False).run(query="wal backup", probe_documents=probe)
        assert out["skipped"] is None
        lex = out["variants"][0]
        assert lex["kind"] == "lex" and lex["text"].startswith("wal backup ")
        assert lex["text"].split()[2:] == ["archiving", "segments"]

    def test_rocchio_moves_towards_feedback_and_stays_unit_length(self):
        q = [1.0, 0.0]
        docs = [hit("A", "x", 0.9, [0.0, 1.0])]
        out = PseudoRelevanceExpander(include_lex=False, rocchio_beta=1.0).run(
            query="q", query_embedding=q, vector_documents=docs
        )
        vec = out["variants"][0]
        assert vec["kind"] == "vec" and vec["embedding"] == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2)])

    def test_decisive_bm25_probe_skips_expansion(self):
        probe = [hit("A", "exact", 0.95), hit("B", "weak", 0.5)]
        out = PseudoRelevanceExpander().run(query="exact", probe_documents=probe)
        assert out == {"variants": [], "skipped": "strong BM25 signal"}

    def test_request_switch_overrides_default(self):
        probe = [hit("A", "alpha beta gamma", 0.5)]
        assert PseudoRelevanceExpander().run(query="x", probe_documents=probe, enabled=False)["variants"] == []
        off = PseudoRelevanceExpander(enabled=False, include_vec=False)
        assert off.run(query="x", probe_documents=probe)["variants"] == []
        assert off.run(query="x", probe_documents=probe, enabled=True)["variants"]
