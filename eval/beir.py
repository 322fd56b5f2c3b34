"""Score query pipelines on a BEIR-format dataset.

    python eval/beir.py --dataset ../shared/datasets/scifact --pipeline search --pipeline vsearch --pipeline query

Prints nDCG@10, Recall@10, Recall@100, MRR@10 and queries per second, and writes a JSON report to
eval/reports/. The first run on a dataset builds its index (cached under ~/.cache/needle/eval).
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from needle.evaluation.beir import DEFAULT_CACHE, evaluate, format_table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    parser.add_argument("--pipeline", action="append", required=True, help="pipeline name or YAML path (repeatable)")
    parser.add_argument("--split", default="test", help="qrels split to score (default: test)")
    parser.add_argument("--candidates", type=int, default=300, help="chunk results per query before grouping")
    parser.add_argument("--limit", type=int, default=None, help="only the first N queries")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where built indexes are kept")
    parser.add_argument("--reports", type=Path, default=Path(__file__).parent / "reports")
    args = parser.parse_args()
    report = evaluate(
        args.dataset,
        args.pipeline,
        split=args.split,
        candidates=args.candidates,
        limit=args.limit,
        cache=args.cache,
        reports_dir=args.reports,
    )
    print(format_table(report))
    print(f"\nreport: {report['report_file']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
