import math

import pytest

from needle.evaluation import metrics


class TestMetrics:
    def test_ndcg_binary_hand_computed(self):
        # relevant at ranks 1 and 3 of two relevant docs
        value = metrics.ndcg_at_k(["a", "x", "b"], {"a": 1, "b": 1}, 10)
        dcg = 1 / math.log2(2) + 1 / math.log2(4)
        idcg = 1 / math.log2(2) + 1 / math.log2(3)
        assert value == pytest.approx(dcg / idcg)

    def test_ndcg_graded_uses_linear_gain_and_ideal_order(self):
        value = metrics.ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10)
        dcg = 1 / math.log2(2) + 2 / math.log2(3)
        idcg = 2 / math.log2(2) + 1 / math.log2(3)
        assert value == pytest.approx(dcg / idcg)

    def test_ndcg_cut_at_k(self):
        assert metrics.ndcg_at_k(["x", "a"], {"a": 1}, 1) == 0.0

    def test_no_relevant_documents_scores_zero(self):
        for fn in (metrics.ndcg_at_k, metrics.mrr_at_k):
            assert fn(["a"], {}, 10) == 0.0
        assert metrics.recall_at_k(["a"], {"a": 0}, 10) == 0.0

    def test_recall_precision_hit_mrr(self):
        ranking = ["x", "a", "y", "b"]
        qrels = {"a": 1, "b": 1, "c": 1}
        assert metrics.recall_at_k(ranking, qrels, 2) == pytest.approx(1 / 3)
        assert metrics.recall_at_k(ranking, qrels, 10) == pytest.approx(2 / 3)
        assert metrics.precision_at_k(ranking, qrels, 4) == pytest.approx(0.5)
        assert metrics.hit_at_k(ranking, qrels, 1) == 0.0
        assert metrics.hit_at_k(ranking, qrels, 2) == 1.0
        assert metrics.mrr_at_k(ranking, qrels, 10) == pytest.approx(0.5)
        assert metrics.mrr_at_k(ranking, qrels, 1) == 0.0

    def test_duplicates_in_ranking_count_once(self):
        assert metrics.precision_at_k(["a", "a"], {"a": 1}, 2) == pytest.approx(0.5)
        assert metrics.ndcg_at_k(["a", "a"], {"a": 1}, 10) == pytest.approx(1.0)

    def test_ties_in_judgements_do_not_change_ideal(self):
        assert metrics.ndcg_at_k(["b", "a"], {"a": 1, "b": 1}, 10) == pytest.approx(1.0)

    def test_percentile_and_mean(self):
        assert metrics.percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
        assert metrics.percentile([5], 95) == 5
        assert metrics.percentile([], 50) == 0.0
        assert metrics.mean([]) == 0.0
