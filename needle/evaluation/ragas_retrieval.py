"""ragas' id-based retrieval metrics next to ours and Haystack's, on the same pipeline runs (no LLM).

Each judged query runs through a pipeline YAML with the golden or BEIR runner, unchanged; its document
ranking (chunk hits grouped by document, best first, each document once) is cut to the first `k` and
scored three ways:

- ours (`needle.evaluation.metrics`, trec_eval conventions): precision@k, recall@k, hit@k, MRR@k, nDCG@k;
- ragas' `IDBasedContextPrecision` and `IDBasedContextRecall`, called directly on `SingleTurnSample`s of
  retrieved and reference ids (ragas-haystack's `RagasEvaluator` takes neither these metrics nor ids);
- Haystack's `DocumentNDCGEvaluator`, `DocumentMRREvaluator` and `DocumentRecallEvaluator` (multi and
  single hit), matching documents by id, graded judgements as ground-truth scores.

What each computes, per query, with R the relevant ids (grade > 0) and D the distinct retrieved ids:

| metric | computes | empty cases |
|---|---|---|
| ragas id precision | abs(D ∩ R) / abs(D) | no D: NaN |
| precision@k (ours) | abs(D ∩ R) / k | no D: 0 |
| ragas id recall | abs(D ∩ R) / abs(R) | no R: NaN |
| recall@k (ours), Haystack multi_hit | abs(D ∩ R) / abs(R) | no R: 0 |
| nDCG@k (ours) | ideal DCG over the best k grades | no R: 0 |
| Haystack nDCG | ideal DCG over every relevant grade | no R: 0 |

So ragas' precision divides by what was retrieved and ours by k (they differ when fewer than k documents
came back), ragas says NaN where the others say 0, and Haystack's nDCG is lower than ours when a query
has more than k relevant documents. ragas and Haystack count each id once (sets, first match), as ours
do after grouping; since all three get the same deduplicated list, duplicates cannot make them differ.
Ties in score do not matter either: every scorer reads the same order, and the set-based ones no order.
`agreement` compares the pairs that define the same quantity, query by query, and counts (but does not
compare) the queries where a definition differs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haystack import Document
from haystack.components.evaluators import DocumentMRREvaluator, DocumentNDCGEvaluator, DocumentRecallEvaluator

from needle.evaluation import metrics
from needle.evaluation._ragas import IDBasedContextPrecision, IDBasedContextRecall, SingleTurnSample

MAX_K = 10  # the golden and BEIR runners keep each query's first 10 documents
TOLERANCE = 1e-9


@dataclass(frozen=True)
class JudgedRanking:
    """
    One query's document ranking, best first, and its relevance judgements.

    A repeated id keeps its first place (as grouping chunk hits by document does), so that the first k
    of `ranking` are k distinct documents for every scorer.
    """

    id: str
    ranking: tuple[str, ...]
    qrels: Mapping[str, int]

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranking", tuple(dict.fromkeys(self.ranking)))

    @property
    def relevant(self) -> list[str]:
        """Ids judged relevant (grade > 0)."""
        return [doc for doc, grade in self.qrels.items() if grade > 0]


def check_k(k: int) -> None:
    """:raises ValueError: Unless 1 <= k <= 10 (the runners keep the first 10 documents of each query)."""
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k must be between 1 and {MAX_K}, got {k}")


def our_scores(run: JudgedRanking, k: int) -> dict[str, float]:
    """Our metrics at `k`."""
    return {
        f"precision@{k}": metrics.precision_at_k(run.ranking, run.qrels, k),
        f"recall@{k}": metrics.recall_at_k(run.ranking, run.qrels, k),
        f"hit@{k}": metrics.hit_at_k(run.ranking, run.qrels, k),
        f"mrr@{k}": metrics.mrr_at_k(run.ranking, run.qrels, k),
        f"ndcg@{k}": metrics.ndcg_at_k(run.ranking, run.qrels, k),
    }


def ragas_scores(runs: Sequence[JudgedRanking], k: int) -> list[dict[str, float]]:
    """ragas' id-based context precision and recall of each run's first `k` ids (NaN where undefined)."""
    precision, recall = IDBasedContextPrecision(), IDBasedContextRecall()
    scores = []
    for run in runs:
        sample = SingleTurnSample(retrieved_context_ids=list(run.ranking[:k]), reference_context_ids=run.relevant)
        scores.append(
            {
                "id_context_precision": float(precision.single_turn_score(sample)),
                "id_context_recall": float(recall.single_turn_score(sample)),
            }
        )
    return scores


def haystack_scores(runs: Sequence[JudgedRanking], k: int) -> list[dict[str, float]]:
    """Haystack's document evaluators on each run's first `k` ids (documents matched by id)."""
    if not runs:
        return []
    truth = [[Document(id=doc, score=float(grade)) for doc, grade in run.qrels.items() if grade > 0] for run in runs]
    retrieved = [[Document(id=doc) for doc in run.ranking[:k]] for run in runs]
    columns: dict[str, Any] = {
        "ndcg": DocumentNDCGEvaluator(document_comparison_field="id"),
        "mrr": DocumentMRREvaluator(document_comparison_field="id"),
        "recall_multi_hit": DocumentRecallEvaluator(mode="multi_hit", document_comparison_field="id"),
        "recall_single_hit": DocumentRecallEvaluator(mode="single_hit", document_comparison_field="id"),
    }
    values = {
        name: evaluator.run(ground_truth_documents=truth, retrieved_documents=retrieved)["individual_scores"]
        for name, evaluator in columns.items()
    }
    return [{name: float(values[name][i]) for name in columns} for i in range(len(runs))]


def score_rankings(runs: Sequence[JudgedRanking], k: int = MAX_K) -> dict[str, dict[str, Any]]:
    """
    Score each run three ways at `k`.

    :param runs: The judged rankings.
    :param k: The cut-off, 1 to 10.
    :returns: Per query id: `retrieved` (ids in the first k), `relevant` (relevant ids), the first k ids
        (`ranking`) and the scores `ours`, `ragas` and `haystack`.
    :raises ValueError: When `k` is out of range.
    """
    check_k(k)
    ragas, haystack = ragas_scores(runs, k), haystack_scores(runs, k)
    return {
        run.id: {
            "retrieved": len(run.ranking[:k]),
            "relevant": len(run.relevant),
            "ranking": list(run.ranking[:k]),
            "ours": our_scores(run, k),
            "ragas": ragas[i],
            "haystack": haystack[i],
        }
        for i, run in enumerate(runs)
    }


def _pairs(k: int) -> list[tuple[str, str, str, Any]]:
    """(other score, our score, why queries are left out, which rows to compare) for each pair that should agree."""
    return [
        (
            "ragas.id_context_recall",
            f"recall@{k}",
            "no relevant document: ragas gives NaN, ours 0",
            lambda row: row["relevant"] > 0,
        ),
        (
            "ragas.id_context_precision",
            f"precision@{k}",
            f"fewer than {k} documents retrieved: ragas divides by the number retrieved (NaN for none), ours by k",
            lambda row: row["retrieved"] == k,
        ),
        (
            "haystack.ndcg",
            f"ndcg@{k}",
            f"more than {k} relevant documents: Haystack's ideal DCG counts all of them, ours the best {k}",
            lambda row: row["relevant"] <= k,
        ),
        ("haystack.mrr", f"mrr@{k}", "", lambda row: True),
        ("haystack.recall_multi_hit", f"recall@{k}", "", lambda row: True),
        ("haystack.recall_single_hit", f"hit@{k}", "", lambda row: True),
    ]


def agreement(rows: Mapping[str, Mapping[str, Any]], k: int = MAX_K) -> list[dict[str, Any]]:
    """
    Check, query by query, that the scores defining the same quantity are equal.

    ragas' precision over fewer than k retrieved documents is checked too, against ours rescaled to the
    number retrieved (precision@k · k / retrieved), which is what ragas defines.

    :param rows: What `score_rankings` returned.
    :param k: Its cut-off.
    :returns: One check per pair: `other`, `ours`, `compared` (queries), `left_out` (queries where the
        definitions differ) and `why_left_out`, `max_abs_diff` over the compared queries (0.0 when none)
        and `agree`.
    """
    checks = []
    for other, ours, why, comparable in _pairs(k):
        source, name = other.split(".")
        diffs = [abs(row[source][name] - row["ours"][ours]) for row in rows.values() if comparable(row)]
        checks.append(_check(other, ours, diffs, len(rows) - len(diffs), why))
    short = [row for row in rows.values() if 0 < row["retrieved"] < k]
    diffs = [
        abs(row["ragas"]["id_context_precision"] - row["ours"][f"precision@{k}"] * k / row["retrieved"])
        for row in short
    ]
    checks.append(
        _check(
            "ragas.id_context_precision",
            f"precision@{k} × {k} / retrieved",
            diffs,
            len(rows) - len(short),
            f"{k} or no documents retrieved (compared above)",
        )
    )
    return checks


def _check(other: str, ours: str, diffs: list[float], left_out: int, why: str) -> dict[str, Any]:
    worst = max(diffs, default=0.0)
    return {
        "other": other,
        "ours": ours,
        "compared": len(diffs),
        "left_out": left_out,
        "why_left_out": why if left_out else "",
        "max_abs_diff": worst,
        "agree": not math.isnan(worst) and worst <= TOLERANCE,
    }


def summarise(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """
    Mean of every score over the queries where it is defined.

    :returns: Per source (`ours`, `ragas`, `haystack`) and score: `mean` (NaN when never defined) and
        `undefined` (queries where it was NaN).
    """
    collected: dict[str, dict[str, list[float]]] = {}
    for row in rows.values():
        for source in ("ours", "ragas", "haystack"):
            for name, value in row[source].items():
                collected.setdefault(source, {}).setdefault(name, []).append(value)
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for source, scores in collected.items():
        for name, values in scores.items():
            defined = [v for v in values if not math.isnan(v)]
            summary.setdefault(source, {})[name] = {
                "mean": metrics.mean(defined) if defined else math.nan,
                "undefined": len(values) - len(defined),
            }
    return summary


def golden_rankings(
    needle: Any, golden: Any, pipeline: str, candidates: int, limit: int | None = None, progress: bool = False
) -> list[JudgedRanking]:
    """
    Run a golden set's queries through a pipeline with the golden runner.

    :param needle: A `Needle` bound to an index of the golden corpus.
    :param golden: The `GoldenSet`; a mode runs the queries tagged with it, another pipeline every query.
    :param pipeline: A mode, a pipeline name in `pipelines/` or a YAML path.
    :param candidates: Chunk results requested per query.
    :param limit: Only the first `limit` queries.
    :param progress: Whether to show a progress bar.
    :returns: Each answerable query's first 10 documents (paths) and its expected paths as relevant.
    """
    from needle.evaluation import golden as golden_eval

    queries = golden_eval.answerable_only(golden.for_mode(pipeline))
    queries = queries[:limit] if limit else queries
    rows = golden_eval.run_queries(needle, queries, pipeline, candidates, progress, golden.today)
    return [JudgedRanking(q.id, tuple(rows[q.id]["ranking"]), dict.fromkeys(q.expected, 1)) for q in queries]


def beir_rankings(
    needle: Any, dataset: Any, pipeline: str, candidates: int, limit: int | None = None
) -> list[JudgedRanking]:
    """
    Run a BEIR dataset's judged queries through a pipeline with the BEIR runner (it shows a progress bar).

    :returns: Each query's first 10 corpus ids and its graded judgements.
    """
    from needle.evaluation import beir

    run = beir.run_pipeline(needle, dataset, pipeline, candidates, limit)
    return [JudgedRanking(qid, tuple(ranking), dataset.qrels[qid]) for qid, ranking in run["rankings"].items()]


def format_retrieval(section: Mapping[str, Any]) -> str:
    """A markdown summary of a retrieval section: the means, then every agreement check."""
    k = section["k"]
    lines = [
        f"{Path(section['pipeline']).stem}: {section['queries']} queries, first {k} documents",
        "",
        "| source | score | mean | undefined |",
        "|---|---|---|---|",
    ]
    for source, scores in section["summary"].items():
        for name, entry in scores.items():
            lines.append(f"| {source} | {name} | {entry['mean']:.4f} | {entry['undefined']} |")
    lines += ["", "| other | ours | compared | left out | max abs diff | agree |", "|---|---|---|---|---|---|"]
    for c in section["agreement"]:
        lines.append(
            f"| {c['other']} | {c['ours']} | {c['compared']} | {c['left_out']} | {c['max_abs_diff']:.2e} | "
            f"{'yes' if c['agree'] else 'NO'} |"
        )
    return "\n".join(lines)


def retrieval_section(runs: Sequence[JudgedRanking], pipeline: str, k: int = MAX_K) -> dict[str, Any]:
    """
    The retrieval part of a ragas report.

    :returns: `pipeline`, `k`, `queries`, `summary`, `agreement`, `agree` (all checks) and `per_query`.
    :raises ValueError: When `k` is out of range.
    """
    rows = score_rankings(runs, k)
    checks = agreement(rows, k)
    return {
        "pipeline": pipeline,
        "k": k,
        "queries": len(rows),
        "summary": summarise(rows),
        "agreement": checks,
        "agree": all(c["agree"] for c in checks),
        "per_query": rows,
    }
