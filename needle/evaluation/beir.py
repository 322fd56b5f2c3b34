"""Run any query pipeline YAML over a BEIR-format dataset and score it.

A BEIR folder holds `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl` (`_id`, `text`) and
`qrels/<split>.tsv` (`query-id`, `corpus-id`, `score`; CRLF line ends are fine). The runner writes each
corpus document as a markdown file (`# title`, then the text) and indexes that folder with Needle's own
ingestion graph, so the evaluation measures exactly what users run. The built index is cached, keyed by
the corpus and every setting the index depends on, and reused by every later run with the same
ingestion settings. Chunk hits are grouped back to their document (best chunk first) before scoring.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from tqdm import tqdm

from needle.core.collections import Collection, CollectionRegistry
from needle.core.requests import IndexRequest, SearchRequest
from needle.core.settings import Settings, load_settings
from needle.evaluation import metrics
from needle.facade.api import Needle, configured_graph
from needle.lifecycle import provenance as index_info
from needle.runtime.loader import read_graph

COLLECTION = "beir"
DEFAULT_CACHE = Path(os.environ.get("NEEDLE_EVAL_CACHE", "~/.cache/needle/eval")).expanduser()


@dataclass
class BeirDataset:
    """A BEIR dataset in memory."""

    name: str
    folder: Path
    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    corpus_sha256: str


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """
    Read a qrels TSV (header optional, CRLF tolerated).

    :returns: Relevance grades by query id, then document id.
    """
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.strip().split("\t")
        if len(parts) < 3 or parts[0] == "query-id":
            continue
        try:
            grade = int(float(parts[2]))
        except ValueError:
            continue
        qrels.setdefault(parts[0], {})[parts[1]] = grade
    return qrels


def load_dataset(folder: str | Path, split: str = "test") -> BeirDataset:
    """
    Load a BEIR folder.

    :param folder: The dataset folder.
    :param split: Which qrels file to score against (`test`, `train`, `dev`).
    :returns: The dataset, with only the queries that have judgements in that split.
    :raises FileNotFoundError: When a required file is missing.
    """
    folder = Path(folder)
    corpus_file = folder / "corpus.jsonl"
    digest = hashlib.sha256(corpus_file.read_bytes()).hexdigest()
    corpus = {
        str(row["_id"]): {"title": row.get("title") or "", "text": row.get("text") or ""}
        for row in _read_jsonl(corpus_file)
    }
    qrels = read_qrels(folder / "qrels" / f"{split}.tsv")
    queries = {
        str(row["_id"]): row["text"] for row in _read_jsonl(folder / "queries.jsonl") if str(row["_id"]) in qrels
    }
    return BeirDataset(folder.name, folder, corpus, queries, {q: qrels[q] for q in queries}, digest)


def doc_filename(doc_id: str) -> str:
    """A safe, reversible file name for a corpus id."""
    return quote(doc_id, safe="") + ".md"


def doc_id_from_path(path: str) -> str:
    """The corpus id of a materialised file."""
    return unquote(Path(path).name[: -len(".md")])


def materialise(dataset: BeirDataset, folder: Path) -> None:
    """Write each corpus document as a markdown file (once; a marker records completion)."""
    marker = folder / ".complete"
    if marker.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    for doc_id, doc in tqdm(dataset.corpus.items(), desc="writing corpus", unit="doc"):
        body = (
            f"# {doc['title'].strip()}\n\n{doc['text'].strip()}\n"
            if doc["title"].strip()
            else f"{doc['text'].strip()}\n"
        )
        (folder / doc_filename(doc_id)).write_text(body, encoding="utf-8")
    marker.write_text(dataset.corpus_sha256)


def eval_settings(base: Settings, dataset: BeirDataset, cache: Path, candidates: int | None = None) -> Settings:
    """
    Settings whose data folder is the cached index for this corpus and these ingestion settings.

    :param candidates: Unused (kept for callers); the candidate pool is set per search, see `candidate_pool`.
    """
    key = json.dumps(
        {"corpus": dataset.corpus_sha256, **index_info.fingerprint(base, configured_graph("ingest", base))},
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    data_dir = cache / f"{dataset.name}-{dataset.corpus_sha256[:8]}-{digest}"
    return base.model_copy(update={"data_dir": data_dir})


# Init parameters that size a graph's candidate lists, by component class.
_POOL_PARAMETERS = {
    "SparseRetriever": ("top_k",),
    "DenseRetriever": ("top_k",),
    "KeywordRetriever": ("top_k",),
    "VariantRetriever": ("bm25_top_k", "vector_top_k"),
    "PseudoRelevanceExpander": ("probe_top_k",),
    "WeightedRRFJoiner": ("top_k",),
}


def candidate_pool(pipeline: str, candidates: int) -> dict[str, int]:
    """
    Overrides that make every candidate list of a graph `candidates` long (retrievers, expansion probe, fusion).

    An evaluation asks for `candidates` chunks per query and groups them into documents; the lists before the
    cut must be at least that long.

    :param pipeline: A graph name or path.
    :param candidates: Candidate list length.
    :returns: `component.parameter` → `candidates` for the components the graph has.
    """
    pool: dict[str, int] = {}
    for name, component in read_graph(pipeline)["components"].items():
        for parameter in _POOL_PARAMETERS.get(component.get("type", "").rsplit(".", 1)[-1], ()):
            pool[f"{name}.{parameter}"] = candidates
    return pool


def index_is_built(marker: Path) -> bool:
    """
    Whether a cached evaluation index is complete: its marker holds the report of the run that built it.

    An index built before whole files were embedded (its report lacks `files_embedded`) is not: an
    ordinary incremental run brings it up to date, embedding only the file documents.
    """
    return marker.exists() and "files_embedded" in json.loads(marker.read_text() or "{}")


def prepare_index(dataset: BeirDataset, settings: Settings) -> tuple[Needle, dict[str, Any] | None]:
    """
    Build (or reuse) the dataset's index.

    :returns: A Needle bound to that index, and the index run's report (`None` when it was reused).
    """
    docs_dir = settings.data_dir / "docs"
    materialise(dataset, docs_dir)
    registry = CollectionRegistry(settings.collections_file)
    registry.save({COLLECTION: Collection(name=COLLECTION, root=str(docs_dir), include=["*.md"])})
    needle = Needle(settings, progress_bar=True)
    done = settings.data_dir / ".indexed"
    if index_is_built(done):
        if index_info.pending_layout(settings):
            # Another layout (`index:` settings) is a rebuild of the segments, not a new embedding.
            print(f"laying the cached index out as configured: {needle.optimize()}", file=sys.stderr)
        return needle, None
    report = needle.index(IndexRequest(collections=[COLLECTION])).model_dump(mode="json")
    done.write_text(json.dumps(report))
    return needle, report


def run_pipeline(
    needle: Needle,
    dataset: BeirDataset,
    pipeline: str,
    candidates: int,
    limit: int | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """
    Run every judged query through a pipeline and score the ranking.

    :param needle: Needle bound to the dataset's index.
    :param dataset: The dataset.
    :param pipeline: A pipeline name in `pipelines/` or a YAML path.
    :param candidates: Chunk results requested per query (grouped to documents afterwards).
    :param limit: Only the first `limit` queries (for quick checks).
    :param overrides: Graph overrides (`component.parameter` → value) on top of the candidate pool.
    :returns: Aggregate metrics, queries per second, latency percentiles, per-query scores and each
        query's top 10 document ids (`rankings`).
    """
    query_ids = sorted(dataset.queries)[:limit] if limit else sorted(dataset.queries)
    pool = {**candidate_pool(pipeline, candidates), **(overrides or {})}
    needle.pipeline(pipeline, pool)  # load and warm up outside the timed loop
    per_query: dict[str, dict[str, float]] = {}
    rankings: dict[str, list[str]] = {}
    latencies: list[float] = []
    for qid in tqdm(query_ids, desc=f"{Path(pipeline).stem} queries", unit="q"):
        started = time.perf_counter()
        results = needle.search(SearchRequest(query=dataset.queries[qid], limit=candidates, set=pool), pipeline).results
        latencies.append(time.perf_counter() - started)
        ranking = [doc_id_from_path(r.path) for r in results]
        ranking = list(dict.fromkeys(ranking))
        rankings[qid] = ranking[:10]
        qrels = dataset.qrels[qid]
        per_query[qid] = {
            "ndcg@10": metrics.ndcg_at_k(ranking, qrels, 10),
            "recall@10": metrics.recall_at_k(ranking, qrels, 10),
            "recall@100": metrics.recall_at_k(ranking, qrels, 100),
            "mrr@10": metrics.mrr_at_k(ranking, qrels, 10),
        }
    names = ["ndcg@10", "recall@10", "recall@100", "mrr@10"]
    return {
        "pipeline": pipeline,
        "queries": len(query_ids),
        **{name: metrics.mean([row[name] for row in per_query.values()]) for name in names},
        "qps": len(latencies) / sum(latencies) if latencies else 0.0,
        "latency_ms_p50": 1000 * metrics.percentile(latencies, 50),
        "latency_ms_p95": 1000 * metrics.percentile(latencies, 95),
        "per_query": per_query,
        "rankings": rankings,
    }


def evaluate(
    dataset_dir: str | Path,
    pipelines: list[str],
    split: str = "test",
    candidates: int = 300,
    limit: int | None = None,
    cache: Path = DEFAULT_CACHE,
    settings: Settings | None = None,
    reports_dir: Path | None = None,
) -> dict[str, Any]:
    """
    Evaluate pipelines on one dataset and write a JSON report.

    :returns: The report: dataset, split, index run, and one result per pipeline.
    """
    dataset = load_dataset(dataset_dir, split)
    settings = eval_settings(settings or load_settings(), dataset, Path(cache), candidates)
    needle, index_report = prepare_index(dataset, settings)
    report = {
        "dataset": dataset.name,
        "split": split,
        "documents": len(dataset.corpus),
        "index": str(settings.data_dir),
        "index_report": index_report,
        "settings": index_info.fingerprint(settings, needle.ingest_graph()),
        "results": [run_pipeline(needle, dataset, p, candidates, limit) for p in pipelines],
    }
    if reports_dir is not None:
        reports_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = reports_dir / f"beir-{dataset.name}-{split}-{stamp}.json"
        path.write_text(json.dumps(report, indent=2))
        report["report_file"] = str(path)
    return report


def format_table(report: dict[str, Any]) -> str:
    """A markdown table of a report's results."""
    lines = [
        f"BEIR {report['dataset']} ({report['split']}, {report['results'][0]['queries'] if report['results'] else 0} queries, "
        f"{report['documents']} documents)",
        "",
        "| pipeline | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | QPS | p50 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        lines.append(
            f"| {Path(r['pipeline']).stem} | {r['ndcg@10']:.3f} | {r['recall@10']:.3f} | {r['recall@100']:.3f} | "
            f"{r['mrr@10']:.3f} | {r['qps']:.1f} | {r['latency_ms_p50']:.1f} |"
        )
    return "\n".join(lines)
