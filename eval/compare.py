"""A/B-compare two pipeline YAMLs on the same queries and index (same as `needle eval compare`).

    python eval/compare.py pipelines/search.yml pipelines/query.yml --golden eval/golden/demo.yml
    python eval/compare.py query my-query.yml --dataset ../shared/datasets/scifact --limit 200 --margin 0.01

Prints per metric A, B, B−A with a 95% bootstrap interval, the paired randomisation test's p-value and
per-query wins/losses/ties; writes a JSON report, a markdown summary and a PNG chart to eval/reports/;
exits 1 when B trails A on the primary metric (nDCG@10) by more than --margin.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from needle.shells.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["eval", "compare", *sys.argv[1:]]))
