"""Documents beside notes: hit@3 per format on a mixed golden set, and ingest throughput per format.

    python -m eval.formats                                   # the golden set (eval/golden/formats.yml)
    python -m eval.formats --throughput demo                 # the demo notes as md, PDF, DOCX and HTML
    python -m eval.formats --throughput scifact --dataset ../shared/datasets/scifact --docs 300

The golden run builds the mixed folder (the demo notes plus eval/golden/documents/ rendered as PDF, DOCX
and HTML; `needle.evaluation.mixed_formats`) in a temporary folder, indexes it, and prints hit@3 per format
and the PDF page check; it exits 1 when a threshold of formats.yml fails (`tests/evaluation/test_formats.py`
checks the same in CI). The throughput run indexes the same texts once per format into fresh indexes (ten
texts per file: one per PDF page, one per `##` section otherwise) and prints extraction, chunking and
embedding time, the fixtures' writing not counted. Writes a JSON report to eval/reports/.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from eval.corpus_index import index_timed, needle_with_collection, scratch
from eval.demo_data import demo_texts
from eval.result_files import REPORTS, write_json
from needle.core.file_formats import DOCUMENT_INCLUDE
from needle.core.globs import DEFAULT_INCLUDE
from needle.core.settings import load_settings
from needle.evaluation import mixed_formats as formats
from needle.evaluation import sample_documents as make

FORMATS = ("markdown", "pdf", "docx", "html")  # what `throughput` writes


def write_fixtures(folder: Path, texts: list[tuple[str, str]], fmt: str, pages_per_file: int) -> None:
    """`texts` as files of one format, `pages_per_file` texts a file (one markdown file each)."""
    groups = [texts[i : i + pages_per_file] for i in range(0, len(texts), pages_per_file)]
    for number, group in enumerate(groups):
        if fmt == "markdown":
            for index, (title, body) in enumerate(group):
                make.write(folder / f"{number:04d}-{index:02d}.md", f"# {title}\n\n{body}\n".encode())
            continue
        if fmt == "pdf":
            data = make.pdf_bytes([f"## {title}\n\n{body}" for title, body in group], title=f"Part {number}")
        else:
            text = "\n\n".join(f"## {title}\n\n{body}" for title, body in group)
            data = formats.render(f"# Part {number}\n\n{text}", fmt)
        make.write(folder / f"{number:04d}.{fmt}", data)


def throughput(texts: list[tuple[str, str]], pages_per_file: int = 10) -> list[dict[str, Any]]:
    """
    Index the same texts as markdown files and as PDF, DOCX and HTML files into fresh indexes, timing each stage.

    :param texts: `(title, body)` pairs.
    :returns: One row per format: files, pages, chunks, seconds to write the fixtures (not counted),
        extraction, chunking, embedding, store and in all, and PDF pages per second.
    """
    rows = []
    for fmt in FORMATS:
        with scratch(f"needle-formats-{fmt}-") as tmp:
            started = time.perf_counter()
            write_fixtures(tmp / "docs", texts, fmt, pages_per_file)
            written = time.perf_counter() - started
            needle = needle_with_collection(
                tmp / "data", tmp / "docs", "bench", include=[*DEFAULT_INCLUDE, *DOCUMENT_INCLUDE]
            )
            report, total, s = index_timed(needle, ["bench"])
            needle.close()
        extraction = s.get("converter", 0.0) + s.get("reader", 0.0)
        pages = report.documents.get("pdf", {}).get("pages", 0)
        rows.append(
            {
                "format": fmt,
                "files": report.files_read,
                "pages": pages,
                "chunks": report.chunks,
                "skipped": len(report.skipped),
                "write_fixtures_s": written,
                "extraction_s": extraction,
                "chunking_s": s.get("chunker", 0.0),
                "embedding_s": s.get("dense_embedder", 0.0) + s.get("sparse_embedder", 0.0),
                "store_s": sum(s.get(n, 0.0) for n in ("writer", "file_writer", "differ", "file_differ")),
                "total_s": total,
                "pdf_pages_per_s": pages / extraction if pages and extraction else None,
            }
        )
    return rows


def throughput_table(rows: list[dict[str, Any]]) -> str:
    """The throughput rows as a markdown table."""
    lines = [
        "| format | files | PDF pages | chunks | extraction s | PDF pages/s | chunking s | embedding s | total s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rate = f"{r['pdf_pages_per_s']:.0f}" if r["pdf_pages_per_s"] else "—"
        lines.append(
            f"| {r['format']} | {r['files']} | {r['pages'] or '—'} | {r['chunks']} | {r['extraction_s']:.2f} | "
            f"{rate} | {r['chunking_s']:.2f} | {r['embedding_s']:.1f} | {r['total_s']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.formats", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--throughput", choices=["demo", "scifact"], help="time ingestion per format instead")
    parser.add_argument("--dataset", type=Path, help="a BEIR folder (for --throughput scifact)")
    parser.add_argument("--docs", type=int, default=300, help="corpus documents (for --throughput scifact)")
    parser.add_argument("--pages-per-file", type=int, default=10)
    parser.add_argument("--pipeline", default="query")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"kind": "formats", "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    code = 0
    if args.throughput:
        if args.throughput == "scifact":
            if not args.dataset:
                parser.error("--throughput scifact needs --dataset")
            from needle.evaluation.beir import load_dataset

            corpus = load_dataset(args.dataset).corpus
            texts = [(d["title"] or doc_id, d["text"]) for doc_id, d in list(corpus.items())[: args.docs]]
        else:
            texts = demo_texts()
        rows = throughput(texts, args.pages_per_file)
        report["throughput"] = {"source": args.throughput, "texts": len(texts), "rows": rows}
        print(throughput_table(rows))
    else:
        with scratch("needle-formats-") as tmp:
            corpus = formats.build_corpus(tmp / "corpus")
            settings = load_settings().model_copy(update={"data_dir": tmp / "data"})
            needle, index_report, seconds = formats.index_corpus(corpus, settings)
            quality = formats.evaluate(needle, args.pipeline)
            needle.close()
        report.update(quality=quality, index={"report": index_report, "seconds": seconds})
        print(formats.format_quality(quality))
        code = 0 if all(c["passed"] for c in quality["checks"]) else 1
    out = write_json(REPORTS / f"formats-{args.throughput or 'golden'}-{report['time'].replace(':', '')}.json", report)
    print(f"\nreport: {out}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
