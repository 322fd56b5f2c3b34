"""Ablation of the query pipeline on a BEIR dataset: add one stage at a time.

    python eval/ablation.py --dataset ../shared/datasets/scifact --split test

Every row runs pipelines/query.yml (or the plain graph for the first rows) with configuration
overrides on the same cached index, and prints nDCG@10, Recall@100 and p50 latency per row. Quality is
scored on `--candidates` results per query (Recall@100 needs them); latency is timed in a second pass
over the first `--latency-queries` queries as users run them (the configured candidate counts, top 10).
Tune on `--split train`, report on `--split test`.
"""

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from needle.app import Needle  # noqa: E402
from needle.evaluation.beir import DEFAULT_CACHE, eval_settings, load_dataset, prepare_index, run_pipeline  # noqa: E402
from needle.evaluation import metrics  # noqa: E402
from needle.settings import Settings, load_settings  # noqa: E402

NO_BONUS = {"rank1_bonus": 0.0, "rank23_bonus": 0.0}
NO_RERANK = {"enabled": False}
QMD_BLEND = {"blend_top_weight": 0.75, "blend_mid_weight": 0.60, "blend_tail_weight": 0.40}

# (label, pipeline, overrides applied over the configuration) — each row adds one stage to the last.
STAGES: list[tuple[str, str, dict[str, Any]]] = [
    ("BM25 only, best chunk per file (search, file_weight 0)", "search", {"retrieval": {"file_weight": 0.0}}),
    ("BM25 only, + whole files (search)", "search", {}),
    ("vectors only, best chunk per file (vsearch, file_weight 0)", "vsearch", {"retrieval": {"file_weight": 0.0}}),
    ("vectors only, + whole files (vsearch)", "vsearch", {}),
    ("hybrid: plain RRF over chunks", "pipelines/query-plain.yml", {}),
    ("+ fusion by file", "query", {"expansion": {"enabled": False}, "rerank": NO_RERANK,
                                    "retrieval": {**NO_BONUS, "original_weight": 1.0}}),
    ("+ top-rank bonus", "query", {"expansion": {"enabled": False}, "rerank": NO_RERANK,
                                    "retrieval": {"original_weight": 1.0}}),
    ("+ expansion (PRF), equal weights", "query", {"expansion": {"enabled": True}, "rerank": NO_RERANK,
                                                    "retrieval": {"original_weight": 1.0}}),
    ("+ weights (original 2x)", "query", {"expansion": {"enabled": True}, "rerank": NO_RERANK,
                                           "retrieval": {"original_weight": 2.0}}),
    ("expansion off again (it lost on train)", "query", {"expansion": {"enabled": False}, "rerank": NO_RERANK}),
    ("+ rerank (hybrid exact scores, best chunk)", "query", {"expansion": {"enabled": False},
                                                             "retrieval": {"file_weight": 0.0}}),
    ("+ whole-file scores in the rerank", "query", {"expansion": {"enabled": False}}),
    ("+ blend (qmd 0.75 / 0.60 / 0.40)", "query", {"expansion": {"enabled": False}, "rerank": QMD_BLEND}),
    ("shipped default (query.yml as configured)", "query", {}),
]


def merged(settings: Settings, overrides: dict[str, Any]) -> Settings:
    data = settings.model_dump()
    for section, values in overrides.items():
        data[section] = {**data[section], **values}
    return Settings.model_validate(data)


def row_settings(start: Settings, pipeline: str, overrides: dict[str, Any], extra: dict[str, Any]) -> Settings:
    """A row's settings: its overrides over `start`, then the `--set` extras for the query.yml rows."""
    settings = merged(start, overrides)
    return merged(settings, extra) if pipeline == "query" else settings


def latency_p50(settings: Settings, dataset: Any, pipeline: str, queries: int) -> float:
    """Median milliseconds per query of `pipeline` as users run it: the configured sizes, top 10."""
    needle = Needle(settings)
    needle.pipeline(pipeline)
    latencies = []
    for qid in sorted(dataset.queries)[:queries]:
        started = time.perf_counter()
        needle.search(dataset.queries[qid], mode=pipeline, top_k=settings.retrieval.top_k)
        latencies.append(time.perf_counter() - started)
    needle.close()
    return 1000 * metrics.percentile(latencies, 50)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--candidates", type=int, default=300)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--only", action="append", help="run only rows whose label contains this text")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="extra override for every query.yml row (for tuning)")
    parser.add_argument("--latency-queries", type=int, default=100, help="queries timed per row at the configured sizes")
    parser.add_argument("--reports", type=Path, default=Path(__file__).parent / "reports")
    args = parser.parse_args()

    dataset = load_dataset(args.dataset, args.split)
    configured = load_settings()
    base = eval_settings(configured, dataset, args.cache, args.candidates)
    timed = base.model_copy(update={"retrieval": configured.retrieval})
    prepare_index(dataset, base)[0].close()  # each row opens the index with its own Needle
    extra: dict[str, dict[str, Any]] = {}
    for item in args.set:
        key, _, value = item.partition("=")
        section, _, name = key.partition(".")
        extra.setdefault(section, {})[name] = json.loads(value)

    rows = []
    for label, pipeline, overrides in STAGES:
        if args.only and not any(o in label for o in args.only):
            continue
        needle = Needle(row_settings(base, pipeline, overrides, extra))
        result = run_pipeline(needle, dataset, pipeline, args.candidates, args.limit)
        needle.close()  # the timing pass opens the index again, at the configured sizes
        result["latency_ms_p50"] = latency_p50(row_settings(timed, pipeline, overrides, extra), dataset, pipeline, args.latency_queries)
        rows.append({"stage": label, "pipeline": pipeline, "overrides": overrides, **{k: v for k, v in result.items() if k not in ("per_query", "rankings")}})
        print(f"{label}: nDCG@10 {result['ndcg@10']:.4f}  R@100 {result['recall@100']:.4f}  p50 {result['latency_ms_p50']:.1f} ms", flush=True)

    print(f"\nAblation on {dataset.name} {args.split} ({rows[0]['queries'] if rows else 0} queries)\n")
    print("| stage | nDCG@10 | Recall@100 | p50 ms |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row['stage']} | {row['ndcg@10']:.3f} | {row['recall@100']:.3f} | {row['latency_ms_p50']:.1f} |")
    args.reports.mkdir(parents=True, exist_ok=True)
    out = args.reports / f"ablation-{dataset.name}-{args.split}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"dataset": dataset.name, "split": args.split, "extra": extra, "rows": rows}, indent=2))
    print(f"\nreport: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
