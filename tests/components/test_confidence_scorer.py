import math

import pytest
from haystack import Document

from haystack_integrations.components.classifiers.needle.confidence_scorer import (
    FEATURES,
    ConfidenceScorer,
    collect_signals,
    contains_term,
    exact_terms,
    sentences_of,
)
from haystack_integrations.components.classifiers.needle.result_labeler import ResultLabeler
from needle.core.model_files import LOCAL_DENSE_MODEL, dense_embedder_params

WEIGHTS = {
    "rerank": 1.6,
    "cosine": 3.6,
    "bm25": 2.8,
    "unknown": -2.5,
    "exact": 0.4,
    "exact_missing": -0.2,
    "agreement": 0.1,
    "support": -0.5,
    "margin": 4.8,
    "filter": 0.0,
}


def result(
    path: str = "howto/pg.md",
    content: str = "",
    rerank: float | None = None,
    cosine: float | None = None,
    bm25: float | None = None,
    ceiling: float = 10.0,
    unknown: float = 0.0,
    ranks: tuple[int | None, int | None] = (0, 0),
) -> Document:
    """A final result as the query graph leaves it: fusion trace, rerank score, the rescore's exact scores."""
    fusion = {}
    if ranks[0] is not None:
        fusion["bm25"] = {"rank": ranks[0], "score": 0.9, "kind": "bm25"}
    if ranks[1] is not None:
        fusion["vector"] = {"rank": ranks[1], "score": cosine or 0.0, "kind": "cosine"}
    hybrid = {}
    if cosine is not None:
        hybrid["cosine"] = cosine
    if bm25 is not None:
        hybrid.update({"bm25": bm25 * ceiling, "bm25_ceiling": ceiling, "bm25_unknown": unknown})
    meta = {"path": path, "title": path, "fusion": fusion, "hybrid": hybrid}
    if rerank is not None:
        meta["rerank"] = {"score": rerank, "input_rank": 1}
    return Document(content=content, score=rerank, meta=meta)


class TestExactTerms:
    @pytest.mark.parametrize(
        "query, expected",
        [
            ("pg_dump custom format", ["pg_dump"]),
            ("git rebase --onto main", ["--onto"]),
            ("exit code 137 container memory", ["137"]),
            ("asyncio TaskGroup CancelledError", ["TaskGroup", "CancelledError"]),
            ('what is "logical replication" about', ["logical replication"]),
            ("sqlite WAL mode", ["WAL"]),
            ("how do I feed my sourdough starter", []),
        ],
    )
    def test_identifiers_and_quoted_phrases(self, query, expected):
        assert exact_terms(query) == expected

    def test_a_term_matches_whole_words_only(self):
        assert contains_term("Use pg_dump -Fc", "pg_dump")
        assert not contains_term("Use pg_dumpall", "pg_dump")
        assert contains_term("git rebase --onto main", "--onto")


class TestConfidenceScorer:
    def test_init_defaults(self):
        scorer = ConfidenceScorer()
        assert scorer.weights == {} and scorer.bias == 0.0 and scorer.coverage_weight == 0.5

    def test_custom_params(self):
        scorer = ConfidenceScorer(weights={"cosine": 2}, bias=-1, coverage_weight=1.0, support_depth=2)
        assert scorer.weights == {"cosine": 2.0} and scorer.bias == -1.0 and scorer.support_depth == 2

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"weights": {"vibes": 1.0}}, "unknown signals"),
            ({"weights": {"cosine": float("nan")}}, "finite"),
            ({"weights": {"cosine": "high"}}, "finite"),
            ({"bias": float("inf")}, "finite"),
            ({"coverage_weight": 1.5}, "coverage_weight"),
            ({"support_min": -0.1}, "support_min"),
            ({"agreement_depth": 0}, "agreement_depth"),
        ],
    )
    def test_bad_params_raise(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            ConfidenceScorer(**kwargs)

    def test_to_dict_and_from_dict(self):
        data = ConfidenceScorer(weights={"cosine": 2.0}, bias=-1.0).to_dict()
        assert data == {
            "type": "haystack_integrations.components.classifiers.needle.confidence_scorer.ConfidenceScorer",
            "init_parameters": {
                "weights": {"cosine": 2.0},
                "bias": -1.0,
                "coverage_weight": 0.5,
                "agreement_depth": 5,
                "support_depth": 4,
                "support_min": 0.5,
                "sentence_check": False,
                "max_sentences": 24,
                "threads": None,
                "dense_embedder": None,
            },
        }
        assert ConfidenceScorer.from_dict(data).to_dict() == data
        # The index's model, from Needle's settings, fills in what was left out (and is not written back).
        assert ConfidenceScorer.from_dict(data).dense_model == "local/all-MiniLM-L6-v2-int8"

    def test_no_results_means_zero(self):
        assert ConfidenceScorer(bias=5.0).run(documents=[], query="x") == {"confidence": 0.0, "signals": {}}

    def test_is_the_logistic_of_the_weighted_signals(self):
        out = ConfidenceScorer(weights={"cosine": 2.0, "rerank": 1.0}, bias=-1.0).run(
            documents=[result(rerank=0.5, cosine=0.8)], query="x"
        )
        assert out["signals"]["cosine"] == 0.8 and out["signals"]["rerank"] == 0.5
        assert out["confidence"] == pytest.approx(1 / (1 + math.exp(-(-1.0 + 1.6 + 0.5))), abs=1e-4)

    def test_off_topic_scores_low_and_is_not_floored(self):
        scorer = ConfidenceScorer(weights=WEIGHTS, bias=-4.8)
        weak = [
            result(rerank=0.5, cosine=0.2, bm25=0.0, unknown=1.0, ranks=(None, 0)),
            result(path="b.md", rerank=0.49, cosine=0.19, ranks=(None, 1)),
        ]
        weaker = [
            result(rerank=0.5, cosine=0.05, bm25=0.0, unknown=1.0, ranks=(None, 0)),
            result(path="b.md", rerank=0.49, cosine=0.04, ranks=(None, 1)),
        ]
        low, lower = (
            scorer.run(documents=weak, query="tune a cello")["confidence"],
            scorer.run(documents=weaker, query="tune a cello")["confidence"],
        )
        assert low < 0.1 and lower < low

    def test_an_exact_identifier_hit_scores_high_and_higher_than_a_miss(self):
        scorer = ConfidenceScorer(weights=WEIGHTS, bias=-4.8)
        hit = [
            result(content="pg_dump -Fc writes the custom format", rerank=0.98, cosine=0.47, bm25=0.99),
            result(path="b.md", rerank=0.37, cosine=0.2, bm25=0.3, ranks=(1, 4)),
        ]
        miss = [
            result(content="pg_restore reads archives", rerank=0.98, cosine=0.47, bm25=0.99),
            result(path="b.md", rerank=0.37, cosine=0.2, bm25=0.3, ranks=(1, 4)),
        ]
        hit_out = scorer.run(documents=hit, query="pg_dump custom format")
        miss_out = scorer.run(documents=miss, query="pg_dump custom format")
        assert hit_out["signals"]["exact"] == 1.0 and miss_out["signals"]["exact_missing"] == 1.0
        assert hit_out["confidence"] > 0.9 and hit_out["confidence"] > miss_out["confidence"]

    def test_unknown_query_terms_lower_the_bm25_share(self):
        signals = collect_signals([result(bm25=1.0, unknown=0.5)], "cost of chameleons")
        assert signals["bm25"] == 0.5 and signals["unknown"] == 0.5

    def test_agreement_counts_files_leading_both_lists(self):
        docs = [
            result(ranks=(0, 1)),
            result(ranks=(1, 0)),
            result(ranks=(2, None)),
            result(ranks=(None, 2)),
            result(ranks=(9, 9)),
        ]
        assert collect_signals(docs, "x")["agreement"] == pytest.approx(2 / 5)

    def test_agreement_needs_both_kinds_of_list(self):
        assert "agreement" not in collect_signals([result(ranks=(0, None)), result(ranks=(1, None))], "x")

    def test_support_and_margin_come_from_the_candidates_not_the_cut_results(self):
        top = result(rerank=0.9, cosine=0.7)
        candidates = [
            top,
            result(rerank=0.6, cosine=0.65, ranks=(None, 1)),
            result(rerank=0.5, cosine=0.1, bm25=0.7),
            result(rerank=0.4, cosine=0.1, ranks=(None, 3)),
        ]
        signals = collect_signals([top], "x", candidates=candidates)
        assert signals["support"] == pytest.approx(2 / 4)
        assert signals["margin"] == pytest.approx(0.3)

    def test_filter_engaged_is_a_signal_of_its_own(self):
        scorer = ConfidenceScorer(weights={"filter": 1.0})
        off = scorer.run(documents=[result()], query="x")
        on = scorer.run(documents=[result()], query="x", filters_engaged=True)
        assert off["signals"]["filter"] == 0.0 and on["signals"]["filter"] == 1.0
        assert on["confidence"] > off["confidence"] == 0.5

    def test_coverage_scales_the_confidence(self):
        scorer = ConfidenceScorer(bias=10.0, coverage_weight=0.5)
        full = scorer.run(documents=[result()], query="x", coverage=1.0)["confidence"]
        none = scorer.run(documents=[result()], query="x", coverage=0.0)
        assert full == pytest.approx(1.0, abs=1e-4) and none["confidence"] == pytest.approx(0.5, abs=1e-4)
        assert none["signals"]["coverage"] == 0.0

    def test_a_given_confidence_gets_only_the_coverage(self):
        out = ConfidenceScorer(weights={"cosine": 9.0}, coverage_weight=0.5).run(
            documents=[result(cosine=0.9)], query="x", confidence=0.8, coverage=0.5
        )
        assert out["confidence"] == pytest.approx(0.6) and out["signals"] == {"search": 0.8, "coverage": 0.5}

    def test_words_the_top_result_holds_and_words_no_candidate_holds(self):
        top = result(path="home/plants.md", content="Water the ferns when the soil is dry.")
        other = result(path="home/bike.md", content="Degrease the chain after rain.")
        signals = collect_signals([top], "watering ferns and paragliding", candidates=[top, other])
        # "watering" is held by its stem "water"; "paragliding" by no candidate at all.
        assert signals["words"] == pytest.approx(2 / 3) and signals["words_unseen"] == pytest.approx(1 / 3)

    def test_a_split_question_is_read_by_the_part_its_top_result_holds(self):
        top = result(path="health/knee.md", content="Clamshells and glute bridges, daily.")
        query = "clamshells glute bridges, and also sourdough starter"
        parts = [
            {"kind": "sub", "text": "clamshells glute bridges", "origin": "split"},
            {"kind": "sub", "text": "sourdough starter", "origin": "split"},
        ]
        whole = ConfidenceScorer().run(documents=[top], query=query)["signals"]
        split = ConfidenceScorer().run(documents=[top], query=query, sub_questions=parts)["signals"]
        assert whole["words"] == pytest.approx(3 / 5) and whole["words_unseen"] == pytest.approx(2 / 5)
        assert split["words"] == 1.0 and split["words_unseen"] == 0.0

    def test_every_signal_is_on_zero_to_one(self):
        docs = [result(content="pg_dump", rerank=1.0, cosine=1.0, bm25=1.0)] + [result(rerank=0.0) for _ in range(5)]
        signals = collect_signals(docs, "pg_dump", filters_engaged=True)
        assert set(signals) <= set(FEATURES) and all(0.0 <= v <= 1.0 for v in signals.values())


class TestSentenceSignal:
    def test_sentences_are_content_lines_split_at_sentence_ends(self):
        text = "# Tools\n\n```\n- multitool with chain breaker\n- Flip it when bubbles pop. Keep it warm.\n---\nok\n"
        assert sentences_of(text) == ["multitool with chain breaker", "Flip it when bubbles pop.", "Keep it warm."]
        assert sentences_of(text, limit=2) == ["multitool with chain breaker", "Flip it when bubbles pop."]

    def test_off_by_default_and_serialised(self):
        assert (
            "sentence"
            not in ConfidenceScorer().run(documents=[result(content="Flip the pancakes.")], query="x")["signals"]
        )
        scorer = ConfidenceScorer(sentence_check=True, max_sentences=8, dense_model="m", threads=1)
        data = scorer.to_dict()
        assert data["init_parameters"]["sentence_check"] is True and data["init_parameters"]["max_sentences"] == 8
        assert ConfidenceScorer.from_dict(data).to_dict() == data
        with pytest.raises(ValueError, match="max_sentences"):
            ConfidenceScorer(max_sentences=0)

    @pytest.mark.integration
    def test_a_paraphrase_finds_its_sentence_and_a_stock_phrase_does_not(self, model_dir):
        params = dense_embedder_params(LOCAL_DENSE_MODEL, model_dir)
        scorer = ConfidenceScorer(
            weights={"sentence": 1.0},
            sentence_check=True,
            dense_model=params["model"],
            dense_model_kwargs=params["model_kwargs"],
            dense_local_files_only=True,
        )
        scorer.warm_up()
        recipe = result(
            path="recipes/crepes.md",
            content=(
                "# Crepes\n\n- 250 ml milk, 2 eggs, 120 g flour\n- Rest the batter for half an hour.\n"
                "- Turn each one over when the edges go golden and lift from the pan."
            ),
        )
        kit = result(path="home/kit.md", content="## Tools\n\n- hex keys, a pump\n- tyre levers and a spare tube")
        paraphrase = scorer.run(documents=[recipe], query="when do I flip my thin french breakfast wraps")
        stock = scorer.run(documents=[kit], query="which tools do I need for windsurfing")
        assert 0.0 < stock["signals"]["sentence"] < paraphrase["signals"]["sentence"] <= 1.0
        assert paraphrase["confidence"] > stock["confidence"]
        # A split question is read by its best part.
        parts = [
            {"text": "when do I flip my thin french breakfast wraps", "origin": "split"},
            {"text": "what is the capital of Peru", "origin": "split"},
        ]
        whole = "what is the capital of Peru, and also when do I flip my thin french breakfast wraps"
        split = scorer.run(documents=[recipe], query=whole, sub_questions=parts)
        assert split["signals"]["sentence"] == pytest.approx(paraphrase["signals"]["sentence"], abs=1e-3)


class TestLabelAgreesWithConfidence:
    @pytest.mark.parametrize("confidence", [0.0, 0.2, 0.49, 0.5, 0.51, 0.93, 1.0])
    def test_pass_exactly_at_or_above_the_threshold(self, confidence):
        label = ResultLabeler(min_confidence=0.5).run(documents=[result(cosine=0.1)], confidence=confidence)["label"]
        assert (label == "PASS") == (confidence >= 0.5)
