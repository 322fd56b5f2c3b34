"""Ablation of the query pipeline on a BEIR dataset: add one stage at a time.

    python -m eval.ablation --dataset ../shared/datasets/scifact --split test

Every row runs pipelines/query.yml (or the plain graph for the first rows) with graph overrides by
component and parameter on the same cached index, and prints nDCG@10, Recall@100 and p50 latency per row.
Quality is scored on `--candidates` results per query (Recall@100 needs them); latency is timed in a
second pass over the first `--latency-queries` queries as users run them (the graph's sizes, top 10).
Tune on `--split train`, report on `--split test`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from eval.result_files import REPORTS, write_json
from needle.core.requests import SearchRequest
from needle.core.settings import load_settings, parse_assignments
from needle.evaluation import metrics
from needle.evaluation.beir import DEFAULT_CACHE, eval_settings, load_dataset, prepare_index, run_pipeline
from needle.facade.api import Needle

EQUAL = {"fuse.weights": {"bm25": 1.0, "vector": 1.0}}
NO_BONUS = {"bonus.rank1_bonus": 0.0, "bonus.rank23_bonus": 0.0}
OFF = {"expander.enabled": False, "rerank.enabled": False}
QMD_BLEND = {"blend.top_weight": 0.75, "blend.mid_weight": 0.60, "blend.tail_weight": 0.40}

# (label, pipeline, graph overrides by component and parameter) — each row adds one stage to the last.
STAGES: list[tuple[str, str, dict[str, Any]]] = [
    ("BM25 only, best chunk per file (search, file_weight 0)", "search", {"rescore.file_weight": 0.0}),
    ("BM25 only, + whole files (search)", "search", {}),
    ("vectors only, best chunk per file (vsearch, file_weight 0)", "vsearch", {"rescore.file_weight": 0.0}),
    ("vectors only, + whole files (vsearch)", "vsearch", {}),
    ("hybrid: plain RRF over chunks", "pipelines/query-plain.yml", {}),
    ("+ fusion by file", "query", {**OFF, **NO_BONUS, **EQUAL}),
    ("+ top-rank bonus", "query", {**OFF, **EQUAL}),
    ("+ expansion (PRF), equal weights", "query", {**OFF, "expander.enabled": True, **EQUAL}),
    ("+ weights (original 2x)", "query", {**OFF, "expander.enabled": True}),
    ("expansion off again (it lost on train)", "query", OFF),
    (
        "+ rerank (hybrid exact scores, best chunk)",
        "query",
        {"expander.enabled": False, "rerank.ranker.file_weight": 0.0},
    ),
    ("+ whole-file scores in the rerank", "query", {"expander.enabled": False}),
    ("+ blend (qmd 0.75 / 0.60 / 0.40)", "query", {"expander.enabled": False, **QMD_BLEND}),
    ("shipped default (query.yml as it is)", "query", {}),
]


def row_overrides(pipeline: str, overrides: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """A row's overrides, then the `--set` extras for the query.yml rows."""
    return {**overrides, **extra} if pipeline == "query" else dict(overrides)


def latency_p50(needle: Needle, dataset: Any, pipeline: str, overrides: dict[str, Any], queries: int) -> float:
    """Median milliseconds per query of `pipeline` as users run it: the graph's sizes, top 10."""
    needle.pipeline(pipeline, overrides)
    latencies = []
    for qid in sorted(dataset.queries)[:queries]:
        started = time.perf_counter()
        needle.search(SearchRequest(query=dataset.queries[qid], limit=10, set=overrides), pipeline=pipeline)
        latencies.append(time.perf_counter() - started)
    return 1000 * metrics.percentile(latencies, 50)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.ablation", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--candidates", type=int, default=300)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--only", action="append", help="run only rows whose label contains this text")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="COMPONENT.PARAM=VALUE",
        help="extra override for every query.yml row (for tuning)",
    )
    parser.add_argument(
        "--latency-queries", type=int, default=100, help="queries timed per row at the configured sizes"
    )
    parser.add_argument("--reports", type=Path, default=REPORTS)
    args = parser.parse_args(argv)

    dataset = load_dataset(args.dataset, args.split)
    needle, _ = prepare_index(dataset, eval_settings(load_settings(), dataset, args.cache))
    extra: dict[str, Any] = {}
    for item in args.set:
        extra.update(parse_assignments(item))

    rows = []
    for label, pipeline, overrides in STAGES:
        if args.only and not any(o in label for o in args.only):
            continue
        chosen = row_overrides(pipeline, overrides, extra)
        result = run_pipeline(needle, dataset, pipeline, args.candidates, args.limit, overrides=chosen)
        result["latency_ms_p50"] = latency_p50(needle, dataset, pipeline, chosen, args.latency_queries)
        rows.append(
            {
                "stage": label,
                "pipeline": pipeline,
                "overrides": overrides,
                **{k: v for k, v in result.items() if k not in ("per_query", "rankings")},
            }
        )
        print(
            f"{label}: nDCG@10 {result['ndcg@10']:.4f}  R@100 {result['recall@100']:.4f}  p50 {result['latency_ms_p50']:.1f} ms",
            flush=True,
        )

    print(f"\nAblation on {dataset.name} {args.split} ({rows[0]['queries'] if rows else 0} queries)\n")
    print("| stage | nDCG@10 | Recall@100 | p50 ms |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row['stage']} | {row['ndcg@10']:.3f} | {row['recall@100']:.3f} | {row['latency_ms_p50']:.1f} |")
    out = args.reports / f"ablation-{dataset.name}-{args.split}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    write_json(out, {"dataset": dataset.name, "split": args.split, "extra": extra, "rows": rows})
    print(f"\nreport: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
