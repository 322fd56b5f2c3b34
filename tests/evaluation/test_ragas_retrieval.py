"""ragas' id-based context precision and recall next to our metrics and Haystack's document evaluators.

Hand-made rankings pin down what each computes, including where the definitions differ (fewer than k
retrieved, nothing relevant, nothing retrieved, more than k relevant); real runs of the query graph on the
golden set and on a tiny BEIR dataset show that the scores that define the same quantity are equal.
"""

import json
import math
from typing import ClassVar

import pytest

pytest.importorskip("ragas", reason="the ragas extra is not installed")

from needle.evaluation import beir
from needle.evaluation import golden as golden_eval
from needle.evaluation.ragas_retrieval import (
    JudgedRanking,
    agreement,
    beir_rankings,
    golden_rankings,
    retrieval_section,
    score_rankings,
)
from needle.shells.cli import main
from tests.evaluation.conftest import GOLDEN_FILE
from tests.evaluation.test_compare import write_tiny_beir

TEN = tuple(f"d{i}" for i in range(10))


def one(ranking, qrels, k=10) -> dict:
    return score_rankings([JudgedRanking("q", tuple(ranking), qrels)], k)["q"]


class TestDefinitions:
    def test_full_ranking_all_three_agree(self):
        row = one(TEN, {"d0": 1, "d3": 2, "x": 1})
        assert row["ragas"]["id_context_precision"] == row["ours"]["precision@10"] == pytest.approx(2 / 10)
        assert row["ragas"]["id_context_recall"] == row["ours"]["recall@10"] == pytest.approx(2 / 3)
        assert row["haystack"]["recall_multi_hit"] == pytest.approx(2 / 3)
        assert row["haystack"]["ndcg"] == pytest.approx(row["ours"]["ndcg@10"])
        assert row["haystack"]["mrr"] == row["ours"]["mrr@10"] == 1.0

    def test_fewer_than_k_retrieved_ragas_divides_by_what_came_back(self):
        row = one(["x", "a"], {"a": 1})
        assert row["ragas"]["id_context_precision"] == pytest.approx(1 / 2)
        assert row["ours"]["precision@10"] == pytest.approx(1 / 10)

    def test_nothing_relevant_is_nan_for_ragas_recall_and_zero_for_ours_and_haystack(self):
        row = one(["a", "b"], {"a": 0})
        assert math.isnan(row["ragas"]["id_context_recall"])
        assert row["ours"]["recall@10"] == row["haystack"]["recall_multi_hit"] == 0.0
        assert row["ragas"]["id_context_precision"] == 0.0

    def test_nothing_retrieved_is_nan_for_ragas_precision(self):
        row = one([], {"a": 1})
        assert math.isnan(row["ragas"]["id_context_precision"])
        assert row["ragas"]["id_context_recall"] == row["ours"]["recall@10"] == 0.0
        assert row["haystack"]["ndcg"] == row["haystack"]["mrr"] == 0.0

    def test_more_relevant_than_k_haystack_ndcg_is_lower(self):
        row = one(TEN[:2], dict.fromkeys(TEN[:5], 1), k=2)
        assert row["ours"]["ndcg@2"] == pytest.approx(1.0)
        assert row["haystack"]["ndcg"] < 0.7

    def test_duplicates_count_once_for_everyone(self):
        assert one(["a", "x", "a", "b"], {"a": 1, "b": 1}, k=3) == one(["a", "x", "b"], {"a": 1, "b": 1}, k=3)
        row = one(["a", "x", "a", "b"], {"a": 1, "b": 1}, k=3)
        assert row["ranking"] == ["a", "x", "b"]
        assert row["ragas"]["id_context_precision"] == row["ours"]["precision@3"] == pytest.approx(2 / 3)

    def test_graded_judgements_reach_haystack_ndcg(self):
        row = one(["b", "a"], {"a": 3, "b": 1})
        assert row["haystack"]["ndcg"] == pytest.approx(row["ours"]["ndcg@10"]) and row["ours"]["ndcg@10"] < 1.0

    def test_k_is_checked(self):
        with pytest.raises(ValueError, match="k must be between 1 and 10, got 11"):
            score_rankings([], 11)


class TestAgreement:
    RUNS: ClassVar[list[JudgedRanking]] = [
        JudgedRanking("full", TEN, {"d0": 1, "d3": 2}),
        JudgedRanking("short", ("x", "a"), {"a": 1}),
        JudgedRanking("none-relevant", ("a", "b"), {"a": 0}),
        JudgedRanking("empty", (), {"a": 1}),
        JudgedRanking("many-relevant", TEN, {f"d{i}": 1 for i in range(12)}),
    ]

    def test_every_check_agrees_and_counts_what_it_leaves_out(self):
        section = retrieval_section(self.RUNS, "hand-made", 10)
        assert section["agree"] is True
        checks = {(c["other"], c["ours"]): c for c in section["agreement"]}
        recall = checks[("ragas.id_context_recall", "recall@10")]
        assert (recall["compared"], recall["left_out"]) == (4, 1) and "NaN" in recall["why_left_out"]
        precision = checks[("ragas.id_context_precision", "precision@10")]
        assert (precision["compared"], precision["left_out"]) == (2, 3)
        rescaled = checks[("ragas.id_context_precision", "precision@10 × 10 / retrieved")]
        assert rescaled["compared"] == 2
        ndcg = checks[("haystack.ndcg", "ndcg@10")]
        assert (ndcg["compared"], ndcg["left_out"]) == (4, 1)
        assert checks[("haystack.mrr", "mrr@10")]["compared"] == 5
        assert section["summary"]["ragas"]["id_context_recall"]["undefined"] == 1

    def test_a_score_that_differs_is_flagged(self):
        rows = score_rankings(self.RUNS, 10)
        rows["full"]["ragas"]["id_context_recall"] += 0.01
        failed = [c for c in agreement(rows, 10) if not c["agree"]]
        assert [(c["other"], c["ours"]) for c in failed] == [("ragas.id_context_recall", "recall@10")]
        assert failed[0]["max_abs_diff"] == pytest.approx(0.01)


@pytest.mark.integration
def test_query_graph_on_the_golden_set_agrees_everywhere(demo_needle, golden_set):
    runs = golden_rankings(demo_needle, golden_set, "query", golden_eval.DEFAULT_CANDIDATES)
    section = retrieval_section(runs, "query", 10)
    assert section["queries"] == len(golden_set.for_mode("query")) > 40
    assert section["agree"], section["agreement"]
    summary = section["summary"]
    assert summary["ragas"]["id_context_recall"]["mean"] == pytest.approx(summary["ours"]["recall@10"]["mean"])
    assert summary["haystack"]["mrr"]["mean"] == pytest.approx(summary["ours"]["mrr@10"]["mean"])
    assert summary["haystack"]["ndcg"]["mean"] == pytest.approx(summary["ours"]["ndcg@10"]["mean"])
    assert all(row["ranking"] for row in section["per_query"].values())


@pytest.mark.integration
def test_tiny_beir_run_compares_short_rankings_rescaled(tmp_path, settings):
    dataset = beir.load_dataset(write_tiny_beir(tmp_path / "tiny"))
    beir_settings = beir.eval_settings(settings, dataset, tmp_path / "cache", candidates=20)
    needle, _ = beir.prepare_index(dataset, beir_settings)
    section = retrieval_section(beir_rankings(needle, dataset, "search", 20), "search", 10)
    assert section["queries"] == 3 and section["agree"], section["agreement"]
    checks = {(c["other"], c["ours"]): c for c in section["agreement"]}
    assert checks[("ragas.id_context_precision", "precision@10 × 10 / retrieved")]["compared"] == 3
    assert section["per_query"]["1"]["ranking"][0] == "d1"


@pytest.mark.integration
def test_cli_writes_a_json_report(demo_needle, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(golden_eval, "prepare_index", lambda golden, settings=None, cache=None: demo_needle)
    code = main(
        [
            "eval",
            "ragas",
            "--golden",
            str(GOLDEN_FILE),
            "--pipeline",
            "search",
            "--k",
            "5",
            "--limit",
            "6",
            "--reports",
            str(tmp_path / "reports"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "| ragas.id_context_recall | recall@5 |" in out
    report_file = next((tmp_path / "reports").glob("ragas-search-demo-*.json"))
    report = json.loads(report_file.read_text())
    assert report["kind"] == "ragas" and report["answers"] is None
    assert report["retrieval"]["k"] == 5 and report["retrieval"]["queries"] == 6
    assert report["retrieval"]["agree"] is True
