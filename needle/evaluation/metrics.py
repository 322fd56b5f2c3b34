"""Ranking metrics over one query: the document ids retrieved, in order, and graded relevance judgements.

Conventions follow trec_eval (which BEIR uses): linear gain for nDCG, ideal ranking from the judgements,
binary relevance (grade > 0) for recall, precision, hit and reciprocal rank. A query without relevant
documents scores 0 everywhere; callers usually leave such queries out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def _relevant(qrels: Mapping[str, int]) -> set[str]:
    return {doc for doc, grade in qrels.items() if grade > 0}


def _dedupe(ranking: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranking))


def ndcg_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Normalised discounted cumulative gain at `k` with linear gains."""
    ranking = _dedupe(ranking)
    dcg = sum(max(qrels.get(doc, 0), 0) / math.log2(i + 2) for i, doc in enumerate(ranking[:k]))
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the first `k`."""
    relevant = _relevant(qrels)
    if not relevant:
        return 0.0
    return len(relevant & set(_dedupe(ranking)[:k])) / len(relevant)


def precision_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Share of the first `k` positions holding a relevant document (divided by `k`, as trec_eval does)."""
    relevant = _relevant(qrels)
    return sum(1 for d in _dedupe(ranking)[:k] if d in relevant) / k


def hit_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """1.0 when a relevant document is in the first `k`, else 0.0."""
    relevant = _relevant(qrels)
    return 1.0 if any(d in relevant for d in _dedupe(ranking)[:k]) else 0.0


def mrr_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document within the first `k` (0 when none)."""
    relevant = _relevant(qrels)
    for i, doc in enumerate(_dedupe(ranking)[:k]):
        if doc in relevant:
            return 1.0 / (i + 1)
    return 0.0


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean; 0.0 for no values."""
    return sum(values) / len(values) if values else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The `q`-th percentile (0..100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
