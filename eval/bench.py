"""Benchmark: ingest throughput and query latency per mode.

    python -m eval.bench --dataset ../shared/datasets/scifact

Ingest: indexes the first --ingest-docs corpus documents into a fresh index and prints documents and
chunks per second, with the seconds spent in each ingestion component (embedding vs store).
Queries: runs --queries test queries per mode against the dataset's cached evaluation index (built by
`needle eval beir` on first use) and prints p50/p95 latency. Numbers, not assertions: the machine decides them.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from eval.corpus_index import index_timed, needle_with_collection, scratch
from needle.core.requests import SearchRequest
from needle.core.settings import load_settings
from needle.evaluation import metrics
from needle.evaluation.beir import DEFAULT_CACHE, BeirDataset, eval_settings, load_dataset, materialise, prepare_index
from needle.evaluation.timing import ComponentTimer
from needle.facade.api import Needle


def bench_ingest(dataset: BeirDataset, docs: int) -> None:
    subset = dict(list(dataset.corpus.items())[:docs])
    part = BeirDataset(dataset.name, dataset.folder, subset, {}, {}, f"subset-{docs}")
    with scratch("needle-bench-") as tmp:
        materialise(part, tmp / "docs")
        needle = needle_with_collection(tmp / "data", tmp / "docs", "bench", include=["*.md"])
        report, total, seconds = index_timed(needle, ["bench"])
        needle.close()  # before the folder goes
    embed = seconds["dense_embedder"] + seconds["sparse_embedder"]
    store = sum(
        seconds.get(name, 0.0)
        for name in (
            "writer",
            "differ",
            "file_writer",
            "file_differ",
            "file_builder",
            "chunk_vectors",
            "file_pool",
            "to_sparse",
            "route",
        )
    )
    parse = seconds["scanner"] + seconds["reader"] + seconds["chunker"]
    print(
        f"\ningest: {docs} documents, {report.chunks} chunks, {report.files_embedded} whole files in {total:.1f} s "
        f"({report.files_pooled} with vectors pooled from their chunks')"
    )
    print(f"  {docs / total:.2f} documents/s, {report.chunks / total:.2f} chunks/s")
    print(
        f"  embedding {report.chunks_embedded} chunks and {report.files_embedded} whole files {embed:.1f} s "
        f"(dense {seconds['dense_embedder']:.1f}, sparse {seconds['sparse_embedder']:.1f}), "
        f"store {store:.2f} s, reading and chunking {parse:.2f} s"
    )


def bench_queries(dataset: BeirDataset, queries: int, modes: list[str], cache: Path) -> None:
    needle, _ = prepare_index(dataset, eval_settings(load_settings(), dataset, cache))
    texts = [dataset.queries[q] for q in sorted(dataset.queries)][:queries]
    print(f"\nquery latency: {len(texts)} queries per mode, top 10, index of {len(dataset.corpus)} documents")
    print("| mode | p50 ms | p95 ms | mean ms |")
    print("|---|---|---|---|")
    stages: list[tuple[str, dict[str, float]]] = []
    for mode in modes:
        needle.search(SearchRequest(query=texts[0], limit=10), pipeline=mode)  # warm-up
        latencies = []
        for text in texts:
            started = time.perf_counter()
            needle.search(SearchRequest(query=text, limit=10), pipeline=mode)
            latencies.append(1000 * (time.perf_counter() - started))
        print(
            f"| {mode} | {metrics.percentile(latencies, 50):.1f} | {metrics.percentile(latencies, 95):.1f} | "
            f"{metrics.mean(latencies):.1f} |"
        )
        # A second pass with the stage timer on, so that tracing does not count in the latencies above.
        with ComponentTimer.active() as timer:
            for text in texts:
                needle.search(SearchRequest(query=text, limit=10), pipeline=mode)
        stages.append((mode, {name: 1000 * s / len(texts) for name, s in timer.seconds.items()}))
    print("\nmean ms per query in each stage (the stage's run and the copy of its inputs):")
    for mode, per_stage in stages:
        ranked = sorted(per_stage.items(), key=lambda item: -item[1])
        print(f"  {mode}: " + ", ".join(f"{name} {ms:.1f}" for name, ms in ranked))
    bench_self_query(needle, texts)


def bench_self_query(needle: Needle, texts: list[str]) -> None:
    """The rule-based self-query extractor alone, on the same queries (it reads every question)."""
    extractor = needle.pipeline("query").get_component("self_query")
    extractor.run(query=texts[0])  # warm-up: the index's vocabulary is read once
    latencies, read = [], 0
    for text in texts:
        started = time.perf_counter()
        out = extractor.run(query=text)
        latencies.append(1000 * (time.perf_counter() - started))
        read += bool(out["self_query"].get("applied") or out["self_query"].get("recent"))
    print(
        f"\nself-query extractor: p50 {metrics.percentile(latencies, 50):.3f} ms, p95 {metrics.percentile(latencies, 95):.3f} ms; "
        f"filters or recency read from {read} of {len(texts)} queries"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--ingest-docs", type=int, default=300)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--mode", action="append", dest="modes")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--skip-ingest", action="store_true")
    args = parser.parse_args(argv)
    dataset = load_dataset(args.dataset, "test")
    if not args.skip_ingest:
        bench_ingest(dataset, args.ingest_docs)
    bench_queries(dataset, args.queries, args.modes or ["search", "vsearch", "query"], args.cache)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
