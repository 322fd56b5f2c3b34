"""Documents beside notes: hit@3 per format on a mixed golden set, and ingest throughput per format.

    python eval/formats.py                                   # the golden set (eval/golden/formats.yml)
    python eval/formats.py --throughput demo                 # the demo notes as md, PDF, DOCX and HTML
    python eval/formats.py --throughput scifact --dataset ../shared/datasets/scifact --docs 300

The golden run builds the mixed folder (the demo notes plus eval/golden/documents/ rendered as PDF, DOCX
and HTML) in a temporary folder, indexes it, and prints hit@3 per format and the PDF page check; it exits
1 when a threshold of formats.yml fails. The throughput run indexes the same texts once per format into
fresh indexes (ten texts per file: one per PDF page) and prints extraction, chunking and embedding time.
Writes a JSON report to eval/reports/.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from needle.core.settings import load_settings
from needle.evaluation import mixed_formats as formats

REPORTS = Path(__file__).resolve().parent / "reports"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--throughput", choices=["demo", "scifact"], help="time ingestion per format instead")
    parser.add_argument("--dataset", type=Path, help="a BEIR folder (for --throughput scifact)")
    parser.add_argument("--docs", type=int, default=300, help="corpus documents (for --throughput scifact)")
    parser.add_argument("--pages-per-file", type=int, default=10)
    parser.add_argument("--pipeline", default="query")
    args = parser.parse_args()
    report: dict = {"kind": "formats", "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    code = 0
    if args.throughput:
        if args.throughput == "scifact":
            if not args.dataset:
                parser.error("--throughput scifact needs --dataset")
            from needle.evaluation.beir import load_dataset

            corpus = load_dataset(args.dataset).corpus
            texts = [(d["title"] or doc_id, d["text"]) for doc_id, d in list(corpus.items())[: args.docs]]
        else:
            texts = formats.demo_texts()
        report["throughput"] = {
            "source": args.throughput,
            "texts": len(texts),
            "rows": formats.throughput(texts, args.pages_per_file),
        }
        print(formats.format_tables(None, report["throughput"]["rows"]))
    else:
        with tempfile.TemporaryDirectory(prefix="needle-formats-") as tmp:
            corpus = formats.build_corpus(Path(tmp) / "corpus")
            settings = load_settings().model_copy(update={"data_dir": Path(tmp) / "data"})
            needle, index_report, seconds = formats.index_corpus(corpus, settings)
            quality = formats.evaluate(needle, args.pipeline)
            needle.close()
        report.update(quality=quality, index={"report": index_report, "seconds": seconds})
        print(formats.format_tables(quality, None))
        code = 0 if all(c["passed"] for c in quality["checks"]) else 1
    REPORTS.mkdir(exist_ok=True)
    out = REPORTS / f"formats-{args.throughput or 'golden'}-{report['time'].replace(':', '')}.json"
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"\nreport: {out}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
