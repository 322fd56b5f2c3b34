"""Score the search modes on a golden query set and check its thresholds (same as `needle eval golden`).

    python eval/golden.py [--file eval/golden/demo.yml] [--mode query] [--no-thresholds]

Prints hit@k, recall, MRR, nDCG@10 and latency per mode and difficulty, writes a JSON report and a
markdown summary to eval/reports/, and exits 1 when a threshold in eval/golden/thresholds.yml fails.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from needle.shells.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["eval", "golden", *sys.argv[1:]]))
