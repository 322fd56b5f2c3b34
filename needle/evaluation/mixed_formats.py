"""Documents beside notes, measured: retrieval per format on a mixed golden set.

`build_corpus` writes the mixed folder of `eval/golden/formats.yml`: the bundled demo notes plus every
`eval/golden/documents/NAME.FMT.md` rendered as `documents/NAME.FMT` (PDF, DOCX or HTML; in a PDF each `##`
section starts a new page). `evaluate` scores hit@3 per format (markdown from demo.yml's query-mode queries
on the same index) and, for PDF queries, whether the best chunk of the expected file is on the expected
page. `python -m eval.formats` runs it (and times ingest per format); `tests/evaluation/test_formats.py`
checks its thresholds.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from needle.core.file_formats import DOCUMENT_INCLUDE, format_of
from needle.core.globs import DEFAULT_INCLUDE
from needle.core.index_results import IndexReport
from needle.core.requests import IndexRequest, SearchRequest
from needle.core.settings import PROJECT_ROOT, Settings
from needle.evaluation import golden as golden_eval
from needle.evaluation import sample_documents as make

GOLDEN_FILE = PROJECT_ROOT / "eval" / "golden" / "formats.yml"
DEMO_GOLDEN = PROJECT_ROOT / "eval" / "golden" / "demo.yml"
SOURCES = PROJECT_ROOT / "eval" / "golden" / "documents"
DEMO_NOTES = PROJECT_ROOT / "needle" / "demo" / "notes"
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


def format_quality(quality: dict[str, Any]) -> str:
    """A markdown table of what `evaluate` measured, then the PDF page check and the thresholds."""
    lines = [
        f"retrieval per format ({quality['pipeline']}, mixed index)",
        "",
        "| format | queries | hit@1 | hit@3 | hit@5 | MRR@10 |",
        "|---|---|---|---|---|---|",
    ]
    for fmt, s in quality["formats"].items():
        lines.append(
            f"| {fmt} | {int(s['queries'])} | {s['hit@1']:.3f} | {s['hit@3']:.3f} | {s['hit@5']:.3f} | {s['mrr@10']:.3f} |"
        )
    lines.append(
        f"\nPDF queries whose best chunk of the expected file is on the answer's page: {quality['pdf_page']:.3f}"
    )
    lines += [
        f"threshold {c['name']} >= {c['minimum']:.2f}: {c['actual']:.3f} {'pass' if c['passed'] else 'FAIL'}"
        for c in quality["checks"]
    ]
    return "\n".join(lines)
