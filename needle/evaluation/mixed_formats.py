"""Documents beside notes, measured: retrieval per format on a mixed golden set, and ingest throughput.

`build_corpus` writes the mixed folder of `eval/golden/formats.yml`: the bundled demo notes plus every
`eval/golden/documents/NAME.FMT.md` rendered as `documents/NAME.FMT` (PDF, DOCX or HTML; in a PDF each `##`
section starts a new page). `evaluate` scores hit@3 per format (markdown from demo.yml's query-mode queries
on the same index) and, for PDF queries, whether the best chunk of the expected file is on the expected
page. `throughput` indexes the same texts as markdown, PDF, DOCX and HTML into fresh indexes and times the
stages: extraction (pages per second for PDF), chunking and embedding apart.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from needle.core.file_formats import DOCUMENT_INCLUDE, format_of
from needle.core.globs import DEFAULT_INCLUDE
from needle.core.index_results import IndexReport
from needle.core.requests import IndexRequest, SearchRequest
from needle.core.settings import PROJECT_ROOT, Settings, load_settings
from needle.evaluation import golden as golden_eval
from needle.evaluation import sample_documents as make

GOLDEN_FILE = PROJECT_ROOT / "eval" / "golden" / "formats.yml"
DEMO_GOLDEN = PROJECT_ROOT / "eval" / "golden" / "demo.yml"
SOURCES = PROJECT_ROOT / "eval" / "golden" / "documents"
DEMO_NOTES = PROJECT_ROOT / "needle" / "demo" / "notes"
FORMATS = ("markdown", "pdf", "docx", "html")  # what `throughput` writes
SCORED = ("markdown", "text", "pdf", "docx", "html")  # what `evaluate` scores
COLLECTION = "mixed"


def render(text: str, fmt: str) -> bytes:
    """A document in `fmt` from markdown-subset text (its first `#` heading is its title)."""
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), "")
    if fmt == "pdf":
        return make.pdf_bytes([p for p in re.split(r"\n(?=## )", text.strip()) if p.strip()], title=title)
    if fmt == "docx":
        return make.docx_bytes(text, title=title)
    if fmt == "html":
        return make.html_bytes(text, title=title)
    raise ValueError(f"cannot render {fmt!r}")


def build_corpus(target: Path) -> Path:
    """The mixed folder: the demo notes, and the golden documents rendered under `documents/`."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(DEMO_NOTES, target)
    for source in sorted(SOURCES.glob("*.md")):
        name = source.name[: -len(".md")]
        make.write(target / "documents" / name, render(source.read_text(encoding="utf-8"), format_of(name)))
    return target


def load() -> tuple[golden_eval.GoldenSet, dict[str, Any]]:
    """The formats golden set (corpus still the sources folder) and its extra keys (pages, thresholds)."""
    data = yaml.safe_load(GOLDEN_FILE.read_text(encoding="utf-8"))
    return golden_eval.parse_golden(data, GOLDEN_FILE, check_files=False), data


def index_corpus(corpus: Path, settings: Settings) -> tuple[Any, IndexReport, dict[str, float]]:
    """Index the mixed folder into `settings.data_dir`; the Needle, the run's report and seconds per stage."""
    from needle.core.collections import Collection, CollectionRegistry
    from needle.evaluation.timing import ComponentTimer
    from needle.facade.api import Needle

    include = [*DEFAULT_INCLUDE, *DOCUMENT_INCLUDE]
    CollectionRegistry(settings.collections_file).save({COLLECTION: Collection(COLLECTION, str(corpus), include)})
    needle = Needle(settings)
    needle.pipeline("ingest")  # model loading is not ingest time
    with ComponentTimer.active() as timer:
        report = needle.index(IndexRequest(collections=[COLLECTION]))
    return needle, report, dict(timer.seconds)


def evaluate(needle: Any, pipeline: str = "query", candidates: int = golden_eval.DEFAULT_CANDIDATES) -> dict[str, Any]:
    """
    hit@3 per format on the mixed index, and how often a PDF hit points at the answer's page.

    :returns: `formats` (per format: queries, hit@1, hit@3, hit@5, mrr@10), `pdf_page` (share of PDF queries
        whose expected file's best chunk is on the expected page), per-query rows and threshold checks.
    """
    golden, extra = load()
    demo = golden_eval.load_golden(DEMO_GOLDEN)
    pages = {str(k): int(v) for k, v in (extra.get("pages") or {}).items()}
    queries = [*golden.for_mode(pipeline), *demo.for_mode(pipeline)]
    rows: dict[str, dict[str, Any]] = {}
    for q in queries:
        results = needle.search(SearchRequest(query=q.query, limit=candidates), pipeline).results
        ranking = golden_eval.group_by_document(results)
        best = next((h for h in results if h.path in q.expected), None)
        rows[q.id] = {
            "format": format_of(q.expected[0]),
            "ranking": ranking[:5],
            "page": best.page if best else None,
            "expected_page": pages.get(q.id),
            **golden_eval.score_ranking(ranking, q.expected),
        }
    summary: dict[str, dict[str, float]] = {}
    for fmt in SCORED:
        group = [r for r in rows.values() if r["format"] == fmt]
        if group:
            summary[fmt] = {
                "queries": len(group),
                **{m: sum(r[m] for r in group) / len(group) for m in ("hit@1", "hit@3", "hit@5", "mrr@10")},
            }
    paged = [r for r in rows.values() if r["expected_page"] is not None]
    pdf_page = sum(r["page"] == r["expected_page"] for r in paged) / len(paged) if paged else 0.0
    checks = []
    for key, minimum in (extra.get("thresholds") or {}).items():
        actual = pdf_page if key == "pdf_page" else summary.get(key, {}).get("hit@3")
        checks.append(
            {
                "name": key,
                "minimum": float(minimum),
                "actual": actual,
                "passed": actual is not None and actual >= float(minimum) - 1e-9,
            }
        )
    return {"pipeline": pipeline, "formats": summary, "pdf_page": pdf_page, "per_query": rows, "checks": checks}


def throughput(
    texts: list[tuple[str, str]], pages_per_file: int = 10, base: Settings | None = None
) -> list[dict[str, Any]]:
    """
    Index the same texts as markdown files and as PDF, DOCX and HTML files (each file `pages_per_file`
    texts: one per PDF page, one per `##` section otherwise) into fresh indexes, timing each stage.

    :param texts: `(title, body)` pairs.
    :returns: One row per format: files, pages, chunks, seconds to write the fixtures (not counted),
        extraction, chunking, embedding, store and in all, and PDF pages per second.
    """
    from needle.core.collections import Collection, CollectionRegistry
    from needle.evaluation.timing import ComponentTimer
    from needle.facade.api import Needle

    base = base or load_settings()
    groups = [texts[i : i + pages_per_file] for i in range(0, len(texts), pages_per_file)]
    rows = []
    for fmt in FORMATS:
        with tempfile.TemporaryDirectory(prefix=f"needle-formats-{fmt}-") as tmp:
            folder = Path(tmp) / "docs"
            started = time.perf_counter()
            for number, group in enumerate(groups):
                if fmt == "markdown":
                    for index, (title, body) in enumerate(group):
                        make.write(folder / f"{number:04d}-{index:02d}.md", f"# {title}\n\n{body}\n".encode())
                    continue
                if fmt == "pdf":
                    data = make.pdf_bytes([f"## {title}\n\n{body}" for title, body in group], title=f"Part {number}")
                else:
                    text = "\n\n".join(f"## {title}\n\n{body}" for title, body in group)
                    data = render(f"# Part {number}\n\n{text}", fmt)
                make.write(folder / f"{number:04d}.{fmt}", data)
            written = time.perf_counter() - started
            settings = base.model_copy(update={"data_dir": Path(tmp) / "data"})
            CollectionRegistry(settings.collections_file).save(
                {"bench": Collection("bench", str(folder), [*DEFAULT_INCLUDE, *DOCUMENT_INCLUDE])}
            )
            needle = Needle(settings)
            needle.pipeline("ingest")
            with ComponentTimer.active() as timer:
                started = time.perf_counter()
                report = needle.index(IndexRequest(collections=["bench"]))
                total = time.perf_counter() - started
            needle.close()
        s = timer.seconds
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


def demo_texts() -> list[tuple[str, str]]:
    """The demo notes as `(title, body)`: the title is the first heading or the file name."""
    texts = []
    for path in sorted(DEMO_NOTES.rglob("*")):
        if path.is_file() and path.suffix in (".md", ".txt"):
            body = path.read_text(encoding="utf-8")
            body = re.sub(r"(?s)\A---\n.*?\n---\n", "", body)
            title = next((line.lstrip("# ").strip() for line in body.splitlines() if line.startswith("# ")), path.stem)
            lines = [line for line in body.splitlines() if not line.startswith("# ")]
            # Headings below the title become plain lines, so that one text stays one page or section.
            rows = [line.lstrip("#").strip() if line.startswith("#") else line for line in lines]
            texts.append((title, "\n".join(rows).strip()))
    return texts


def format_tables(quality: dict[str, Any] | None, speed: list[dict[str, Any]] | None) -> str:
    """Markdown tables of what `evaluate` and `throughput` measured."""
    lines: list[str] = []
    if quality:
        lines += [
            f"retrieval per format ({quality['pipeline']}, mixed index)",
            "",
            "| format | queries | hit@1 | hit@3 | hit@5 | MRR@10 |",
            "|---|---|---|---|---|---|",
        ]
        for fmt, s in quality["formats"].items():
            lines.append(
                f"| {fmt} | {int(s['queries'])} | {s['hit@1']:.3f} | {s['hit@3']:.3f} | {s['hit@5']:.3f} | "
                f"{s['mrr@10']:.3f} |"
            )
        lines.append(
            f"\nPDF queries whose best chunk of the expected file is on the answer's page: {quality['pdf_page']:.3f}"
        )
        lines += [
            f"threshold {c['name']} >= {c['minimum']:.2f}: {c['actual']:.3f} {'pass' if c['passed'] else 'FAIL'}"
            for c in quality["checks"]
        ]
    if speed:
        lines += [
            "",
            "| format | files | PDF pages | chunks | extraction s | PDF pages/s | chunking s | embedding s | total s |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in speed:
            rate = f"{r['pdf_pages_per_s']:.0f}" if r["pdf_pages_per_s"] else "—"
            lines.append(
                f"| {r['format']} | {r['files']} | {r['pages'] or '—'} | {r['chunks']} | {r['extraction_s']:.2f} | "
                f"{rate} | {r['chunking_s']:.2f} | {r['embedding_s']:.1f} | {r['total_s']:.1f} |"
            )
    return "\n".join(lines)


def progress(message: str) -> None:
    """Print a progress line to standard error."""
    print(message, file=sys.stderr, flush=True)
