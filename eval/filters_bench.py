"""Filtered search against unfiltered search on a SciFact-sized index, and where recency is cheapest to compute.

    python -m eval.filters_bench --dataset ../shared/datasets/scifact

SciFact's abstracts have no frontmatter, so a copy of the dataset's cached evaluation index (built by
`needle eval beir` on first use; the cache itself is left untouched) is first brought up to date by an index run
(timed: an index built before file metadata has each file's metadata written, nothing embedded), then gets
synthetic metadata for this run only:
each abstract one of 20 tags, one of 10 folders, a status (draft, review, final) and a date spread over
2022-2024, written with `update_by_filter` on both stores. Then --queries test queries run per mode with
each filter (the filters go into the stores' own searches) and without, top 10, p50/p95 latency and the
results' share of the unfiltered results. Last, recency for one query's ten results: the Python stage
(`RecencyRanker`) against the engine's own score formula (an exponential decay over `meta.date`, one
Qdrant Edge query restricted to those results). Numbers, not assertions: the machine decides them.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from eval.corpus_index import scratch
from needle.core.requests import IndexRequest, SearchRequest
from needle.core.settings import load_settings
from needle.evaluation import metrics
from needle.evaluation.beir import DEFAULT_CACHE, eval_settings, load_dataset, prepare_index
from needle.facade.api import Needle

TAGS = 20
FOLDERS = 10
STATUSES = ("draft", "review", "final")
MONTHS = 36  # 2022-01 .. 2024-12

FILTERS: dict[str, dict[str, Any]] = {
    "none": {"self_query": False},
    "tag (1 of 20)": {"tags": ["t07"], "self_query": False},
    "folder (1 of 10)": {"path": "f3/", "self_query": False},
    "field status=final (1 of 3)": {"where": ["status=final"], "self_query": False},
    "date, one quarter (1 of 12)": {"after": "2024-07-01", "before": "2024-10-01", "self_query": False},
    "tag + date (1 of 240)": {"tags": ["t07"], "after": "2024-07-01", "before": "2024-10-01", "self_query": False},
    "glob 1*.md (1 of 9)": {"path": "1*.md", "self_query": False},
    "none, recency on": {"recent": True, "self_query": False},
}


def synthetic(source_doc_id: str) -> tuple[int, int]:
    """A file's tag number and month number, from a hash of its id."""
    digest = int(hashlib.sha256(source_doc_id.encode()).hexdigest(), 16)
    return digest % TAGS, (digest // TAGS) % MONTHS


def label_files(needle: Needle) -> None:
    """Give every file (its chunks and whole-file document) synthetic tags, a folder, a status and a date."""
    groups: dict[tuple[int, int], list[str]] = defaultdict(list)
    for row in needle.file_store.list_documents_meta(fields=["source_doc_id"]):
        source_doc_id = row["meta"]["source_doc_id"]
        groups[synthetic(source_doc_id)].append(source_doc_id)
    started = time.perf_counter()
    stores = (needle.store, needle.file_store)
    for store in stores:
        store.durable_writes = False  # one flush at the end, not one per update
    for (tag, month), ids in groups.items():
        folder = f"f{tag % FOLDERS}"
        status = STATUSES[tag % len(STATUSES)]
        meta = {
            "tags": [f"t{tag:02d}"],
            "folder": folder,
            "folders": [folder],
            "frontmatter": {"status": status},
            "fields": [f"status={status}"],
            "date": f"{2022 + month // 12}-{month % 12 + 1:02d}-15T00:00:00Z",
        }
        where = {"field": "meta.source_doc_id", "operator": "in", "value": ids}
        for store in stores:
            store.update_by_filter(where, meta)
    for store in stores:
        store.durable_writes = True
        store.flush()
    print(
        f"synthetic metadata on {sum(len(v) for v in groups.values())} files in {len(groups)} groups: "
        f"{time.perf_counter() - started:.1f} s"
    )


def bench(needle: Needle, texts: list[str], modes: list[str]) -> None:
    print(f"\n{len(texts)} queries per mode and filter, top 10")
    print("| mode | filter | p50 ms | p95 ms | results per query |")
    print("|---|---|---|---|---|")
    for mode in modes:
        needle.search(SearchRequest(query=texts[0], limit=10), pipeline=mode)  # warm-up
        for name, filters in FILTERS.items():
            latencies, counts = [], []
            for text in texts:
                started = time.perf_counter()
                answer = needle.search(SearchRequest(query=text, limit=10, **filters), pipeline=mode)
                latencies.append(1000 * (time.perf_counter() - started))
                counts.append(len(answer.results))
            print(
                f"| {mode} | {name} | {metrics.percentile(latencies, 50):.1f} | {metrics.percentile(latencies, 95):.1f} | "
                f"{metrics.mean(counts):.1f} |"
            )


def recency_cost(needle: Needle, texts: list[str]) -> None:
    """Python decay over ten results against the engine's formula over the same ten."""
    import qdrant_edge as qe

    from haystack_integrations.components.rankers.needle.recency_ranker import RecencyRanker
    from haystack_integrations.document_stores.needle.edge.converters import point_id

    graph = needle.pipeline("query")
    embedder = graph.get_component("dense_embedder")
    ranker = RecencyRanker(half_life_days=30, weight=0.3, reference="now")
    shard = needle.store._shard().shard
    python_ms, native_ms = [], []
    for text in texts:
        docs = graph.run({"request": {"query": text, "self_query": False}}, include_outputs_from={"blend"})["blend"][
            "documents"
        ]
        docs = [d for d in docs if d.meta.get("date")][:10]
        if not docs:
            continue
        started = time.perf_counter()
        ranker.run(documents=docs, enabled=True, now="2025-01-01T00:00:00Z")
        python_ms.append(1000 * (time.perf_counter() - started))
        vector = embedder.run(text=text)["embedding"]
        decay = qe.Expression.Decay(
            qe.DecayKind.Exp,
            qe.Expression.DatetimeKey("meta.date"),
            target=qe.Expression.Datetime("2025-01-01T00:00:00Z"),
            midpoint=0.5,
            scale=30 * 86400.0,
        )
        formula = qe.Formula(
            qe.Expression.Sum(
                [
                    qe.Expression.Mult([qe.Expression.Constant(0.7), qe.Expression.Variable("$score")]),
                    qe.Expression.Mult([qe.Expression.Constant(0.3), decay]),
                ]
            )
        )
        ids = qe.Filter(must=[qe.HasIdCondition({point_id(d.id) for d in docs})])
        request = qe.QueryRequest(
            limit=len(docs),
            query=formula,
            with_payload=False,
            prefetches=[
                qe.Prefetch(
                    limit=len(docs), query=qe.Query.Nearest(list(map(float, vector)), using="text-dense"), filter=ids
                )
            ],
        )
        started = time.perf_counter()
        shard.query(request)
        native_ms.append(1000 * (time.perf_counter() - started))
    print(
        f"\nrecency over ten results, {len(python_ms)} queries: Python stage p50 {metrics.percentile(python_ms, 50):.3f} ms; "
        f"engine formula (one query restricted to them) p50 {metrics.percentile(native_ms, 50):.3f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.filters_bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--mode", action="append", dest="modes")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args(argv)
    dataset = load_dataset(args.dataset, "test")
    source = eval_settings(load_settings(), dataset, args.cache)
    cached, _ = prepare_index(dataset, source)  # builds the cache on first use
    cached.close()
    with scratch("needle-filters-") as tmp:
        copy = tmp / "data"
        shutil.copytree(source.data_dir, copy)
        needle = Needle(source.model_copy(update={"data_dir": copy}))
        started = time.perf_counter()
        report = needle.index(IndexRequest())
        print(
            f"index run on the copy: {report.files_seen} files, {report.chunks_embedded} chunks and "
            f"{report.files_embedded} whole files embedded, {time.perf_counter() - started:.1f} s "
            "(an index built before file metadata gets it here, nothing embedded again)"
        )
        label_files(needle)
        texts = [dataset.queries[q] for q in sorted(dataset.queries)][: args.queries]
        bench(needle, texts, args.modes or ["search", "vsearch", "query"])
        recency_cost(needle, texts[:50])
        needle.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
