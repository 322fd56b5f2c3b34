"""Our metric functions agree with Haystack's document evaluators on the same rankings.

Like is compared with like: Haystack's evaluators have no cut-off, so they get the first k documents
of the (deduplicated) ranking; its recall `single_hit` is our hit@k and `multi_hit` our recall@k; graded
judgements go in as ground-truth document scores. One convention differs: for nDCG Haystack's ideal DCG
sums every relevant document, trec_eval's (ours) only the best k, so the two agree whenever a query has
at most k relevant documents and ours is higher otherwise.
"""

import math

import pytest
from haystack import Document
from haystack.components.evaluators import DocumentMRREvaluator, DocumentNDCGEvaluator, DocumentRecallEvaluator

from needle.evaluation import metrics

K = 10
RANKINGS = [
    (["a", "x", "b", "y", "z"], {"a": 1, "b": 1}),
    (["x", "y", "z", "a"], {"a": 1}),
    (["x", "y"], {"a": 1}),
    (["b", "a", "c", "x"], {"a": 3, "b": 1, "c": 2}),
    (["x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "a"], {"a": 1}),  # relevant at rank 11
    (["p", "q", "r", "s", "t", "u", "v", "w", "a", "b", "c"], {"a": 2, "b": 1, "c": 1, "d": 1}),
]


def ground_truth(qrels: dict[str, int], graded: bool) -> list[Document]:
    return [Document(content=doc, score=float(grade) if graded else None) for doc, grade in qrels.items() if grade > 0]


def retrieved(ranking: list[str]) -> list[Document]:
    return [Document(content=doc) for doc in list(dict.fromkeys(ranking))[:K]]


def haystack_scores(evaluator, graded: bool = False) -> list[float]:
    result = evaluator.run(
        ground_truth_documents=[ground_truth(q, graded) for _, q in RANKINGS],
        retrieved_documents=[retrieved(r) for r, _ in RANKINGS],
    )
    return result["individual_scores"]


def test_ndcg_agrees_with_document_ndcg_evaluator_graded_and_binary():
    graded = haystack_scores(DocumentNDCGEvaluator(), graded=True)
    assert [metrics.ndcg_at_k(r, q, K) for r, q in RANKINGS] == pytest.approx(graded)
    binary = haystack_scores(DocumentNDCGEvaluator(), graded=False)
    assert [metrics.ndcg_at_k(r, {d: 1 for d, g in q.items() if g > 0}, K) for r, q in RANKINGS] == pytest.approx(
        binary
    )


def test_mrr_agrees_with_document_mrr_evaluator():
    assert [metrics.mrr_at_k(r, q, K) for r, q in RANKINGS] == pytest.approx(haystack_scores(DocumentMRREvaluator()))


def test_recall_multi_hit_is_recall_at_k_and_single_hit_is_hit_at_k():
    multi = haystack_scores(DocumentRecallEvaluator(mode="multi_hit"))
    single = haystack_scores(DocumentRecallEvaluator(mode="single_hit"))
    assert [metrics.recall_at_k(r, q, K) for r, q in RANKINGS] == pytest.approx(multi)
    assert [metrics.hit_at_k(r, q, K) for r, q in RANKINGS] == pytest.approx(single)


def test_ndcg_differs_only_when_more_relevant_documents_than_k():
    ranking, qrels = ["a", "x"], {"a": 1, "b": 1, "c": 1}
    ours = metrics.ndcg_at_k(ranking, qrels, 2)  # ideal: the best 2 of 3
    result = DocumentNDCGEvaluator().run(
        ground_truth_documents=[ground_truth(qrels, graded=False)],
        retrieved_documents=[[Document(content=d) for d in ranking]],
    )
    assert ours == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert result["score"] == pytest.approx(1 / (1 + 1 / math.log2(3) + 1 / math.log2(4)))
    assert ours > result["score"]
