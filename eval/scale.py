"""Scale benchmark: Needle's embedded store (Qdrant Edge) at 100k and 1M synthetic chunks, per index layout.

    python -m eval.scale --sizes 100000 --layout today --layout int8-disk --layout binary-disk
    nice -n 19 python -m eval.scale --sizes 1000000 --layout int8-disk --budget-seconds 3600 --build-budget-seconds 7200
    python -m eval.scale --sizes 100000 --layout "m32:hnsw_m=32,quantization=int8"   # any layout, by store parameter

For each size N and layout, a fresh subprocess (so memory numbers do not mix) writes N synthetic chunks in
streaming batches (384-dim unit vectors, BM25-like sparse vectors of 20-60 terms from a 30k vocabulary,
Zipf-distributed pseudo-word text) and builds the index; a second fresh subprocess opens the
built index, as `needle serve` would, and times dense, sparse, BM25 text and hybrid queries (top 10) and
measures the recall@10 of the approximate dense search against exact search on the same index.

Layouts are `EdgeDocumentStore` parameters (the `index:` section of Needle's configuration):

- `today`: the layout before index settings existed: float32 vectors and HNSW in RAM, one build at the end.
- `defaults`: Needle's defaults (the `index:` section of config/needle.yml).
- `int8-disk`: int8 scalar quantization in RAM (rescored with the originals), original vectors on disk,
  built in steps of `--segment-kb`; the engine's default search (hnsw_ef 100, no oversampling).
- `binary-disk`: the same with binary quantization, `quantization_oversampling` 3.
- `NAME:key=value,...`: any store parameters, e.g. `m32:hnsw_m=32,quantization=int8`.

Vectors (`--vectors`): `lowrank` (default) draws them like sentence embeddings: a Gaussian whose singular
values fall as i^-0.41 and a shared mean of norm 0.32, which is what MiniLM's vectors of SciFact's chunks
measure; at 12,464 vectors its HNSW recall@10 (0.97) is a little below the real vectors' (0.996), so it errs
on the hard side. `uniform` draws uniform random unit vectors, which have no structure at all: HNSW
reaches recall@10 0.54 on 12,464 of them, so they tell nothing about recall on real text.

`--store qdrant-local` times qdrant-haystack's `QdrantDocumentStore(path=...)` (qdrant-client's pure-Python
local mode, no HNSW, no text index) for comparison; its layout is fixed.

Memory: peak RSS is the process's VmHWM (reset with `/proc/self/clear_refs` at each phase, so each phase
has its own); it counts memory-mapped file pages the process touched, which the kernel can drop under
pressure. Peak anonymous memory (RssAnon, sampled every 0.2 s) is what it cannot drop. Every phase has a
time budget; a phase over budget stops and reads "did not finish in N s", nothing is extrapolated. The
parent kills a child whose RSS passes `--max-rss-mb` (default 16 GB) or when the machine's available
memory falls under `--min-available-mb`: the machine is shared.
Prints a markdown table and writes it with the raw numbers to eval/reports/scale-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from eval.demo_data import REPO
from eval.result_files import REPORTS, RESULTS, pyplot, save_figure, write_json
from needle.evaluation.memory import process_memory_mb, reset_peak_memory, system_memory_mb

STORES = ("edge", "qdrant-local")
QUERY_KINDS = ("dense", "sparse", "text", "hybrid")
DIM = 384
WORDS = 30_000
SPARSE_VOCAB = 30_000
VECTOR_KINDS = ("lowrank", "uniform")
SPECTRUM_DECAY = 0.41  # singular values of MiniLM's SciFact chunk vectors fall as i^-0.41 (components 1-200)
MEAN_NORM = 0.32  # and their mean has this norm (sentence embeddings share a direction)
WORDS_PER_CHUNK = (60, 180)
SPARSE_TERMS = (20, 60)
QUERY_SPARSE_TERMS = (3, 8)
QUERY_WORDS = (2, 5)
HYBRID_CANDIDATES = 40
RRF_K = 60
KILL_GRACE_SECONDS = 30
SAMPLE_SECONDS = 0.2
DEFAULT_SEGMENT_KB = 131_072
LAYOUTS: dict[str, dict[str, Any]] = {
    "today": {},
    "int8-disk": {"quantization": "int8", "vectors_on_disk": True},
    "binary-disk": {"quantization": "binary", "vectors_on_disk": True, "quantization_oversampling": 3.0},
}
STEPPED = ("int8-disk", "binary-disk")


def _defaults() -> dict[str, Any]:
    from needle.core.settings import IndexSettings

    return IndexSettings().model_dump()


LAYOUTS["defaults"] = _defaults()


# ----------------------------------------------------------------------------------------------------------
# Synthetic data


class Synthetic:
    """Deterministic synthetic chunks and queries; batch `start` is the same whatever the batch order."""

    def __init__(self, seed: int, vectors: str = "lowrank") -> None:
        self.seed = seed
        self.vectors = vectors
        rng = np.random.default_rng(seed)
        shape = np.random.default_rng([seed, 1])
        self.basis = np.linalg.qr(shape.standard_normal((DIM, DIM)))[0].astype(np.float32)
        self.scales = (np.arange(1, DIM + 1) ** -SPECTRUM_DECAY).astype(np.float32)
        mean = shape.standard_normal(DIM).astype(np.float32)
        self.mean = MEAN_NORM * mean / np.linalg.norm(mean)
        syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
        words: set[str] = set()
        while len(words) < WORDS:
            parts = rng.integers(0, len(syllables), size=rng.integers(2, 5))
            words.add("".join(syllables[p] for p in parts))
        self.words = np.array(sorted(words, key=lambda w: (len(w), w)))  # short words are the frequent ones
        self.word_cdf = _zipf_cdf(WORDS)
        self.sparse_cdf = _zipf_cdf(SPARSE_VOCAB)

    def documents(self, start: int, count: int) -> list[Any]:
        """Chunks `start` .. `start + count - 1` as Haystack Documents."""
        from haystack import Document
        from haystack.dataclasses.sparse_embedding import SparseEmbedding

        rng = np.random.default_rng([self.seed, start])
        dense = self._dense(rng, count).tolist()
        lengths = rng.integers(WORDS_PER_CHUNK[0], WORDS_PER_CHUNK[1] + 1, size=count)
        words = self.words[np.searchsorted(self.word_cdf, rng.random(int(lengths.sum())))]
        bounds = np.concatenate(([0], np.cumsum(lengths)))
        docs = []
        for i in range(count):
            indices, values = self._sparse(rng, SPARSE_TERMS)
            number = start + i
            docs.append(
                Document(
                    id=f"scale-{number:08d}",
                    content=" ".join(words[bounds[i] : bounds[i + 1]]),
                    embedding=dense[i],
                    sparse_embedding=SparseEmbedding(indices=indices, values=values),
                    meta={"collection": "scale", "path": f"notes/{number // 20:06d}.md", "chunk": number % 20},
                )
            )
        return docs

    def queries(self, count: int) -> dict[str, list[Any]]:
        """`count` dense, sparse and text queries, drawn from the corpus' distributions."""
        from haystack.dataclasses.sparse_embedding import SparseEmbedding

        rng = np.random.default_rng([self.seed, 2**31])
        sparse = []
        for _ in range(count):
            indices, _values = self._sparse(rng, QUERY_SPARSE_TERMS)
            sparse.append(SparseEmbedding(indices=indices, values=[1.0] * len(indices)))
        texts = []
        for _ in range(count):
            size = int(rng.integers(QUERY_WORDS[0], QUERY_WORDS[1] + 1))
            texts.append(" ".join(self.words[np.searchsorted(self.word_cdf, rng.random(size))]))
        dense = self._dense(rng, count).tolist()
        return {"dense": dense, "sparse": sparse, "text": texts, "hybrid": list(zip(dense, sparse))}

    def _dense(self, rng: np.random.Generator, count: int) -> np.ndarray:
        if self.vectors == "uniform":
            return _unit_vectors(rng, count)
        spread = _unit((rng.standard_normal((count, DIM), dtype=np.float32) * self.scales) @ self.basis.T)
        return _unit(spread * (1 - MEAN_NORM) + self.mean)

    def _sparse(self, rng: np.random.Generator, terms: tuple[int, int]) -> tuple[list[int], list[float]]:
        wanted = int(rng.integers(terms[0], terms[1] + 1))
        indices = np.unique(np.searchsorted(self.sparse_cdf, rng.random(wanted * 2)))
        indices = rng.permutation(indices)[:wanted]
        indices.sort()
        values = 0.3 + rng.gamma(2.0, 0.5, size=len(indices))  # positive, skewed, like BM25 term weights
        return indices.tolist(), values.round(4).tolist()


def _zipf_cdf(size: int, exponent: float = 1.0, shift: float = 2.7) -> np.ndarray:
    weights = 1.0 / (np.arange(size) + shift) ** exponent
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    cdf[-1] = 1.0 + 1e-12  # searchsorted of a draw in [0, 1) stays below `size`
    return cdf


def _unit_vectors(rng: np.random.Generator, count: int) -> np.ndarray:
    return _unit(rng.standard_normal((count, DIM), dtype=np.float32))


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


# ----------------------------------------------------------------------------------------------------------
# The child processes: one builds an index, the next one opens it and queries it


class Child:
    """Runs the phases of one store and reports each one as a JSON line on the event pipe."""

    def __init__(self, args: argparse.Namespace, events: Any) -> None:
        self.args = args
        self.events = events

    def emit(self, **event: Any) -> None:
        event["vm_hwm_mb"] = process_memory_mb(os.getpid()).get("VmHWM")
        self.events.write(json.dumps(event) + "\n")
        self.events.flush()

    def start(self, phase: str, budget: float) -> None:
        reset_peak_memory()
        self.emit(event="start", phase=phase, budget=budget)

    def run(self) -> None:
        args = self.args
        store = _open_store(args.child_store, args.child_path, args)
        self.emit(event="ready", rss_baseline_mb=process_memory_mb(os.getpid()).get("VmRSS"))
        try:
            if args.child_mode == "build":
                self._build(store)
            else:
                self._query(store)
        finally:
            store.close()
        self.emit(event="done", disk_mb=_folder_mb(args.child_path))

    def _build(self, store: Any) -> None:
        from haystack.document_stores.types import DuplicatePolicy
        from tqdm import tqdm

        args, n = self.args, self.args.child_size
        synthetic = Synthetic(args.seed, args.vectors)
        built = _count_builds(store)

        budget = args.budget_seconds
        self.start("upsert", budget)
        started = time.monotonic()
        write_s = generate_s = 0.0
        written = 0
        finished = True
        with tqdm(total=n, unit="doc", desc=f"{args.child_store} upsert {n:,}", mininterval=5, smoothing=0.05) as bar:
            for start in range(0, n, args.batch_size):
                if time.monotonic() - started > budget:
                    finished = False
                    break
                t0 = time.perf_counter()
                docs = synthetic.documents(start, min(args.batch_size, n - start))
                t1 = time.perf_counter()
                store.write_documents(docs, policy=DuplicatePolicy.OVERWRITE)
                t2 = time.perf_counter()
                generate_s += t1 - t0
                write_s += t2 - t1
                written += len(docs)
                bar.update(len(docs))
        flush_s = None
        if finished and args.child_store == "edge" and not args.durable_writes:
            t0 = time.perf_counter()
            store.flush()
            flush_s = time.perf_counter() - t0
            write_s += flush_s
        step_s, steps = built["seconds"], built["count"]
        self.emit(
            event="end",
            phase="upsert",
            finished=finished,
            seconds=write_s - step_s,
            step_build_seconds=step_s,
            step_builds=steps,
            generate_seconds=generate_s,
            flush_seconds=flush_s,
            wall_seconds=time.monotonic() - started,
            written=written,
            docs_per_second=written / (write_s - step_s) if write_s > step_s else None,
        )
        if not finished:
            return
        if args.child_store != "edge":
            self.emit(event="end", phase="build", finished=True, seconds=None, na="no HNSW, brute force")
            return
        self.start("build", args.build_budget_seconds or budget)
        before = _shard_info(store)
        t0 = time.perf_counter()
        changed = store.optimize()
        seconds = time.perf_counter() - t0
        self.emit(
            event="end",
            phase="build",
            finished=True,
            seconds=seconds + step_s,
            final_seconds=seconds,
            step_seconds=step_s,
            changed=changed,
            shard_before=before,
            shard_after=_shard_info(store),
            count=store.count_documents(),
        )

    def _query(self, store: Any) -> None:
        args = self.args
        queries = Synthetic(args.seed, args.vectors).queries(args.queries)
        query_budget = args.query_budget_seconds or args.budget_seconds
        self.start("open", query_budget)
        t0 = time.perf_counter()
        count = store.count_documents()
        self.emit(event="end", phase="open", finished=True, seconds=time.perf_counter() - t0, count=count)
        for kind in QUERY_KINDS:
            search = _searcher(args.child_store, store, kind)
            if search is None:
                self.emit(event="end", phase=kind, finished=True, na="no full-text index")
                continue
            self.start(kind, query_budget)
            self.emit(event="end", phase=kind, **_time_queries(search, queries[kind], query_budget, kind))
        if args.child_store == "edge":
            self.start("recall", query_budget)
            self.emit(
                event="end", phase="recall", **_recall(store, queries["dense"][: args.recall_queries], query_budget)
            )


def _count_builds(store: Any) -> dict[str, float]:
    """Wrap `store.optimize` to add up the builds a write runs itself (the build steps)."""
    built = {"seconds": 0.0, "count": 0}
    optimize = getattr(store, "optimize", None)
    if optimize is None:
        return built

    def timed() -> bool:
        t0 = time.perf_counter()
        try:
            return optimize()
        finally:
            built["seconds"] += time.perf_counter() - t0
            built["count"] += 1

    store.optimize = timed
    return built


def layout_params(spec: str, segment_kb: int) -> tuple[str, dict[str, Any]]:
    """A layout's name and store parameters, from a preset name or `NAME:key=value,...`."""
    import yaml

    name, _, assignments = spec.partition(":")
    if not assignments:
        if name not in LAYOUTS:
            raise ValueError(f"unknown layout {name!r}: use one of {', '.join(LAYOUTS)} or NAME:key=value,...")
        params = dict(LAYOUTS[name])
        if name in STEPPED:
            params["max_segment_size_kb"] = segment_kb
        return name, params
    params = {}
    for pair in assignments.split(","):
        key, _, value = pair.partition("=")
        params[key.strip()] = yaml.safe_load(value)
    return name, params


def _open_store(kind: str, path: str, args: argparse.Namespace) -> Any:
    if kind == "edge":
        from haystack_integrations.document_stores.needle import EdgeDocumentStore

        return EdgeDocumentStore(
            path=path,
            embedding_dim=DIM,
            use_sparse_embeddings=True,
            sparse_idf=True,
            text_index=True,
            durable_writes=args.durable_writes,
            **json.loads(args.child_layout or "{}"),
        )
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    return QdrantDocumentStore(
        path=path,
        index="Document",
        embedding_dim=DIM,
        use_sparse_embeddings=True,
        sparse_idf=True,
        recreate_index=args.child_mode == "build",
        write_batch_size=args.batch_size,
        progress_bar=False,
    )


def _qdrant_dense(store: Any, q: Any, top_k: int) -> Any:
    """What qdrant-haystack's QdrantEmbeddingRetriever calls."""
    return store._query_by_embedding(query_embedding=q, top_k=top_k)


def _qdrant_sparse(store: Any, q: Any, top_k: int) -> Any:
    """What qdrant-haystack's QdrantSparseEmbeddingRetriever calls."""
    return store._query_by_sparse(query_sparse_embedding=q, top_k=top_k)


def _searcher(kind: str, store: Any, query_kind: str) -> Callable[[Any], Any] | None:
    text: Callable[[Any], Any] | None
    if kind == "edge":
        dense, sparse = store.query_dense, store.query_sparse
        text = partial(store.query_text, top_k=10)
    else:
        dense, sparse = partial(_qdrant_dense, store), partial(_qdrant_sparse, store)
        text = None
    return {
        "dense": lambda q: dense(q, top_k=10),
        "sparse": lambda q: sparse(q, top_k=10),
        "text": text,
        "hybrid": lambda q: _hybrid(dense, sparse, q),
    }[query_kind]


def _hybrid(dense: Callable[..., Any], sparse: Callable[..., Any], query: tuple[Any, Any]) -> list[str]:
    """What the hybrid graphs' retrieval does: both searches for 40 candidates, fused by reciprocal rank."""
    scores: dict[str, float] = {}
    for docs in (dense(query[0], top_k=HYBRID_CANDIDATES), sparse(query[1], top_k=HYBRID_CANDIDATES)):
        for rank, doc in enumerate(docs):
            scores[doc.id] = scores.get(doc.id, 0.0) + 1.0 / (RRF_K + rank + 1)
    return sorted(scores, key=scores.__getitem__, reverse=True)[:10]


RECALL_EF = (64, 100, 200, 300, 500)


def _recall(store: Any, queries: list[list[float]], budget: float) -> dict[str, Any]:
    """
    Recall@10 of `query_dense` (the graph, quantized vectors, rescoring) against exact search on the originals,
    and of the same search with other `hnsw_ef` values (`by_ef`: recall and engine-side p50 ms).
    """
    import qdrant_edge as qe
    from haystack_integrations.document_stores.qdrant.converters import DENSE_VECTORS_NAME

    from haystack_integrations.document_stores.needle.edge.shard_schema import search_params

    shard = store._shard().shard
    quantized = getattr(store, "quantization", "none") != "none"
    rescore = getattr(store, "quantization_rescore", True)
    oversampling = getattr(store, "quantization_oversampling", None)
    started = time.monotonic()
    recalls, exact_ms = [], []
    by_ef: dict[int, dict[str, list[float]]] = {ef: {"recall": [], "ms": []} for ef in RECALL_EF}

    def nearest(vector: list[float], params: Any) -> set[str]:
        request = qe.QueryRequest(
            limit=10, query=qe.Query.Nearest(vector, using=DENSE_VECTORS_NAME), with_payload=["id"], params=params
        )
        return {point.payload["id"] for point in shard.query(request)}

    for vector in queries:
        if time.monotonic() - started > budget:
            break
        approximate = {doc.id for doc in store.query_dense(vector, top_k=10, fields=[])}
        t0 = time.perf_counter()
        truth = nearest(vector, qe.SearchParams(exact=True, quantization=qe.QuantizationSearchParams(ignore=True)))
        exact_ms.append(1000 * (time.perf_counter() - t0))
        recalls.append(len(approximate & truth) / max(len(truth), 1))
        for ef, found in by_ef.items():
            t0 = time.perf_counter()
            hits = nearest(vector, search_params(ef, quantized, rescore, oversampling))
            found["ms"].append(1000 * (time.perf_counter() - t0))
            found["recall"].append(len(hits & truth) / max(len(truth), 1))
    done = len(recalls)
    return {
        "finished": done == len(queries),
        "queries": done,
        "of": len(queries),
        "recall_at_10": float(np.mean(recalls)) if recalls else None,
        "min_recall_at_10": float(np.min(recalls)) if recalls else None,
        "exact_p50_ms": float(np.percentile(exact_ms, 50)) if exact_ms else None,
        "by_ef": {
            str(ef): {"recall_at_10": float(np.mean(f["recall"])), "engine_p50_ms": float(np.percentile(f["ms"], 50))}
            for ef, f in by_ef.items()
            if f["recall"]
        },
    }


def _time_queries(search: Callable[[Any], Any], queries: list[Any], budget: float, label: str) -> dict[str, Any]:
    from tqdm import tqdm

    started = time.monotonic()
    search(queries[0])  # warm-up, not timed
    latencies, hits = [], 0
    for query in tqdm(queries, desc=f"{label} queries", unit="q", mininterval=5, leave=False):
        if time.monotonic() - started > budget:
            break
        t0 = time.perf_counter()
        results = search(query)
        latencies.append(1000 * (time.perf_counter() - t0))
        hits += len(results)
    done = len(latencies)
    result: dict[str, Any] = {"finished": done == len(queries), "queries": done, "of": len(queries)}
    if latencies:
        result.update(
            p50_ms=float(np.percentile(latencies, 50)),
            p95_ms=float(np.percentile(latencies, 95)),
            mean_ms=float(np.mean(latencies)),
            mean_hits=hits / done,
        )
    return result


def _shard_info(store: Any) -> dict[str, Any]:
    info = store._shard().shard.info()
    return {"segments": info.segments_count, "points": info.points_count, "indexed_vectors": info.indexed_vectors_count}


def _folder_mb(path: str) -> float:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(folder, name))
    return total / 2**20


# ----------------------------------------------------------------------------------------------------------
# The parent: one subprocess per phase group, watched


def run_child(
    mode: str, store: str, size: int, layout: dict[str, Any], path: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """Run the build or the query child; returns its phases, killed or not, with memory peaks."""
    read_fd, write_fd = os.pipe()
    command = [
        sys.executable,
        "-m",
        "eval.scale",
        "--child-mode",
        mode,
        "--child-store",
        store,
        "--child-size",
        str(size),
        "--child-path",
        str(path),
        "--child-fd",
        str(write_fd),
        "--child-layout",
        json.dumps(layout),
        "--seed",
        str(args.seed),
        "--vectors",
        args.vectors,
        "--batch-size",
        str(args.batch_size),
        "--queries",
        str(args.queries),
        "--recall-queries",
        str(args.recall_queries),
        "--budget-seconds",
        str(args.budget_seconds),
        "--query-budget-seconds",
        str(args.query_budget_seconds or 0),
        "--build-budget-seconds",
        str(args.build_budget_seconds or 0),
    ]
    if args.durable_writes:
        command.append("--durable-writes")
    env = {**os.environ, "HAYSTACK_TELEMETRY_ENABLED": "False"}
    proc = subprocess.Popen(command, pass_fds=(write_fd,), env=env, cwd=REPO)
    os.close(write_fd)
    events: queue.Queue = queue.Queue()
    threading.Thread(target=_read_events, args=(read_fd, events), daemon=True).start()

    result: dict[str, Any] = {"phases": {}}
    phase, deadline = None, None
    peak_rss = peak_anon = phase_anon = 0.0
    while True:
        try:
            event = events.get(timeout=SAMPLE_SECONDS)
        except queue.Empty:
            event = None
        memory = process_memory_mb(proc.pid)
        rss = memory.get("VmRSS", 0.0)
        anon = memory.get("RssAnon", 0.0)
        peak_rss = max(peak_rss, memory.get("VmHWM", 0.0), rss)
        peak_anon, phase_anon = max(peak_anon, anon), max(phase_anon, anon)
        if event is not None:
            if event is _EOF:
                break
            peak_rss = max(peak_rss, event.get("vm_hwm_mb") or 0.0)
            kind = event.pop("event")
            if kind == "ready":
                result["rss_baseline_mb"] = event["rss_baseline_mb"]
            elif kind == "start":
                phase, phase_anon = event["phase"], anon
                deadline = time.monotonic() + event["budget"] + max(KILL_GRACE_SECONDS, 0.1 * event["budget"])
            elif kind == "end":
                name = event.pop("phase")
                event["peak_rss_mb"] = event.pop("vm_hwm_mb")
                event["peak_anon_mb"] = phase_anon
                result["phases"][name] = event
                phase, deadline = None, None
            elif kind == "done":
                result["disk_mb"] = event["disk_mb"]
        reason = None
        available = system_memory_mb("MemAvailable")
        if deadline is not None and time.monotonic() > deadline:
            reason = "budget"
        elif rss > args.max_rss_mb:
            reason = f"rss over {args.max_rss_mb:.0f} MB"
        elif available is not None and available < args.min_available_mb:
            reason = f"machine's available memory under {args.min_available_mb:.0f} MB"
        if reason:
            proc.kill()
            result["phases"][phase or "unknown"] = {"finished": False, "killed": reason}
            break
    code = proc.wait()
    os.close(read_fd)
    result["peak_rss_mb"] = peak_rss or None
    result["peak_anon_mb"] = peak_anon or None
    result["exit_code"] = code
    killed = any(p.get("killed") for p in result["phases"].values())
    result["crashed"] = code != 0 and not killed
    return result


def run_layout(
    store: str, size: int, name: str, layout: dict[str, Any], args: argparse.Namespace, data_dir: Path
) -> dict[str, Any]:
    """Build one index in one process, then open and query it in another."""
    path = data_dir / f"{store}-{name}-{size}"
    shutil.rmtree(path, ignore_errors=True)
    started = time.monotonic()
    build = run_child("build", store, size, layout, path, args)
    result: dict[str, Any] = {"store": store, "layout": name, "params": layout, "n": size, "build": build}
    built = build["phases"].get("build", {}).get("finished") and not build["crashed"]
    if built:
        result["serve"] = run_child("query", store, size, layout, path, args)
        result["disk_mb"] = result["serve"].get("disk_mb")
    result["wall_seconds"] = time.monotonic() - started
    if not args.keep_data:
        shutil.rmtree(path, ignore_errors=True)
    return result


_EOF = object()


def _read_events(fd: int, events: queue.Queue) -> None:
    with os.fdopen(fd, "r", closefd=False) as pipe:
        for line in pipe:
            if line.strip():
                events.put(json.loads(line))
    events.put(_EOF)


def table_row(result: dict[str, Any], args: argparse.Namespace) -> dict[str, str]:
    """The cells of one layout and size."""
    build, serve = result["build"], result.get("serve") or {"phases": {}}
    phases = {**build["phases"], **serve["phases"]}
    query_budget = args.query_budget_seconds or args.budget_seconds

    def cell(name: str, key: str, digits: int, budget: float) -> str:
        phase = phases.get(name)
        if phase is None:
            return "crashed" if build.get("crashed") or serve.get("crashed") else "not run"
        if phase.get("killed"):
            return f"killed ({phase['killed']})"
        if phase.get("na"):
            return "n/a"
        if not phase.get("finished"):
            return f"did not finish in {budget:.0f} s"
        value = phase.get(key)
        return "n/a" if value is None else f"{value:,.{digits}f}"

    def ms(name: str) -> str:
        p50, p95 = cell(name, "p50_ms", 1, query_budget), cell(name, "p95_ms", 1, query_budget)
        return p50 if p50 == p95 or not p95[0].isdigit() else f"{p50} / {p95}"

    build_peak = build["phases"].get("build", {})
    upsert_peak = build["phases"].get("upsert", {})
    return {
        "layout": result["layout"] if result["store"] == "edge" else result["store"],
        "chunks": f"{result['n']:,}",
        "upsert s": cell("upsert", "seconds", 0, args.budget_seconds),
        "build s": cell("build", "seconds", 0, args.build_budget_seconds or args.budget_seconds),
        "peak RSS MB (anon)": _peak(build),
        "upsert / build peak MB": f"{upsert_peak.get('peak_rss_mb') or 0:,.0f} / {build_peak.get('peak_rss_mb') or 0:,.0f}",
        "serving RSS MB (anon)": _serving_peak(serve) if serve["phases"] else "not run",
        "disk MB": f"{result['disk_mb']:,.0f}" if result.get("disk_mb") else "?",
        "dense ms p50 / p95": ms("dense"),
        "sparse ms": ms("sparse"),
        "text ms": ms("text"),
        "hybrid ms": ms("hybrid"),
        "recall@10": cell("recall", "recall_at_10", 3, query_budget),
    }


def _serving_peak(serve: dict[str, Any]) -> str:
    """Peak memory while answering queries: the recall check's exact scans, which read every vector, left out."""
    phases = [serve["phases"].get(name, {}) for name in ("open", *QUERY_KINDS)]
    rss = max((phase.get("peak_rss_mb") or 0 for phase in phases), default=0)
    anon = max((phase.get("peak_anon_mb") or 0 for phase in phases), default=0)
    return f"{rss:,.0f} ({anon:,.0f})" if rss else _peak(serve)


def _peak(run: dict[str, Any]) -> str:
    if not run.get("peak_rss_mb"):
        return "?"
    return f"{run['peak_rss_mb']:,.0f} ({run['peak_anon_mb'] or 0:,.0f})"


def markdown(rows: list[dict[str, str]]) -> str:
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row[column] for column in header) + " |" for row in rows]
    return "\n".join(lines)


def notes(result: dict[str, Any]) -> list[str]:
    """What the table cannot say: partial runs, kills, the segments the build left."""
    out, label = [], f"{result['layout']} at {result['n']:,}"
    for run in ("build", "serve"):
        for name, phase in (result.get(run) or {}).get("phases", {}).items():
            if phase.get("killed"):
                out.append(f"{label}: killed during {name} ({phase['killed']})")
            elif name == "upsert" and not phase.get("finished"):
                out.append(f"{label}: upsert wrote {phase['written']:,} of {result['n']:,} chunks within the budget")
            elif name in QUERY_KINDS and not phase.get("finished") and "queries" in phase:
                out.append(f"{label}: {name} answered {phase['queries']} of {phase['of']} queries within the budget")
    build = result["build"]["phases"].get("build", {})
    upsert = result["build"]["phases"].get("upsert", {})
    if "shard_after" in build:
        after = build["shard_after"]
        out.append(
            f"{label}: {upsert.get('step_builds', 0)} build steps during the writes ({upsert.get('step_build_seconds', 0):.0f} s), "
            f"then {build['final_seconds']:.0f} s; {after['segments']} segment(s) after the build"
        )
    recall = (result.get("serve") or {}).get("phases", {}).get("recall", {})
    if recall.get("exact_p50_ms"):
        out.append(
            f"{label}: exact search p50 {recall['exact_p50_ms']:.1f} ms; lowest recall@10 of a query {recall['min_recall_at_10']:.1f}"
        )
    if recall.get("by_ef"):
        sweep = ", ".join(
            f"ef {ef}: {v['recall_at_10']:.3f} ({v['engine_p50_ms']:.2f} ms)" for ef, v in recall["by_ef"].items()
        )
        out.append(f"{label}: recall@10 (engine p50) by hnsw_ef: {sweep}")
    return out


def plot(reports: list[Path], out: Path) -> None:
    """
    Chart of several reports: peak memory of the build (anonymous and file pages) and of serving, dense
    query latency and recall@10, per layout and size.
    """
    plt = pyplot()
    results = [
        _current(result)
        for path in reports
        for result in json.loads(path.read_text())["results"]
        if result.get("store", "edge") == "edge"
    ]
    labels = [f"{r['layout']}\n{r['n'] // 1000:,}k" for r in results]
    x = np.arange(len(results))
    build = [r["build"] for r in results]
    serve = [r.get("serve") or {"phases": {}} for r in results]
    anon = [b.get("peak_anon_mb") for b in build]
    total = [b.get("peak_rss_mb") or 0 for b in build]
    serving = [
        max((s["phases"].get(name, {}).get("peak_rss_mb") or 0 for name in ("open", *QUERY_KINDS)), default=0)
        for s in serve
    ]
    fig, (memory, speed) = plt.subplots(1, 2, figsize=(12, 4.8))
    known = [a or 0 for a in anon]
    memory.bar(x - 0.2, known, 0.4, label="build: anonymous (must fit in RAM)", color="#c0392b")
    memory.bar(
        x - 0.2,
        [t - a if a is not None else 0 for t, a in zip(total, anon)],
        0.4,
        bottom=known,
        label="build: file pages (evictable)",
        color="#f5b7b1",
    )
    memory.bar(
        x - 0.2,
        [t if a is None else 0 for t, a in zip(total, anon)],
        0.4,
        label="build: total (split not measured)",
        color="#aab7b8",
    )
    memory.bar(x + 0.2, serving, 0.4, label="serving queries: peak RSS", color="#2e86c1")
    memory.axhline(4096, color="black", linestyle="--", linewidth=1)
    memory.text(len(results) - 0.5, 4200, "4 GB target", ha="right")
    memory.set_xticks(x, labels, fontsize=8)
    memory.set_ylabel("MB")
    memory.set_title("Peak memory")
    memory.legend(fontsize=8)
    dense = [s["phases"].get("dense", {}).get("p50_ms") or 0 for s in serve]
    recall = [s["phases"].get("recall", {}).get("recall_at_10") or np.nan for s in serve]
    speed.bar(x, dense, 0.5, color="#7d3c98", label="dense p50 ms")
    speed.axhline(10, color="#7d3c98", linestyle="--", linewidth=1)
    speed.set_xticks(x, labels, fontsize=8)
    speed.set_ylabel("dense query p50 (ms)")
    twin = speed.twinx()
    twin.plot(x, recall, "o", color="#27ae60", label="recall@10")
    twin.axhline(0.95, color="#27ae60", linestyle=":", linewidth=1)
    twin.set_ylim(0, 1.02)
    twin.set_ylabel("recall@10 against exact search")
    speed.set_title("Dense latency (bars, target 10 ms) and recall (dots, target 0.95)")
    save_figure(fig, out)
    print(f"wrote {out}")


def _current(result: dict[str, Any]) -> dict[str, Any]:
    """A result of this script, or of its version before layouts (one process built and queried; no anon peak)."""
    if "build" in result:
        return result
    return {
        "layout": "before",
        "n": result["n"],
        "build": {"peak_rss_mb": result.get("peak_rss_mb"), "phases": result["phases"]},
        "serve": {"phases": result["phases"]},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.scale", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000], help="chunk counts to run")
    parser.add_argument("--store", choices=STORES, default="edge")
    parser.add_argument(
        "--layout",
        action="append",
        dest="layouts",
        metavar="NAME|NAME:key=value,...",
        help=f"index layout (repeatable; presets {', '.join(LAYOUTS)}; default today)",
    )
    parser.add_argument(
        "--segment-kb",
        type=int,
        default=DEFAULT_SEGMENT_KB,
        help="max_segment_size_kb (the build step) of the stepped presets",
    )
    parser.add_argument("--batch-size", type=int, default=1000, help="Documents per write_documents() call")
    parser.add_argument("--queries", type=int, default=200, help="queries per kind (plus one untimed warm-up)")
    parser.add_argument("--recall-queries", type=int, default=100, help="dense queries checked against exact search")
    parser.add_argument(
        "--budget-seconds", type=float, default=600, help="budget of the upsert (and default of the others)"
    )
    parser.add_argument(
        "--build-budget-seconds", type=float, default=None, help="budget of the HNSW build (default: --budget-seconds)"
    )
    parser.add_argument(
        "--query-budget-seconds", type=float, default=None, help="budget of each query kind (default: --budget-seconds)"
    )
    parser.add_argument(
        "--durable-writes", action="store_true", help="edge: flush after every batch instead of once at the end"
    )
    parser.add_argument("--max-rss-mb", type=float, default=16_000, help="kill a child above this RSS (default 16000)")
    parser.add_argument(
        "--min-available-mb",
        type=float,
        default=1_500,
        help="kill a child when the machine's available memory falls under this (default 1500)",
    )
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="where the stores are written (default: a temp dir)"
    )
    parser.add_argument("--keep-data", action="store_true", help="keep the stores' folders")
    parser.add_argument(
        "--vectors", choices=VECTOR_KINDS, default="lowrank", help="synthetic dense vectors (see above)"
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--plot", type=Path, nargs="+", metavar="REPORT", help="chart these reports' results (no run)")
    parser.add_argument("--plot-out", type=Path, default=RESULTS / "scale.png")
    for hidden in ("--child-mode", "--child-store", "--child-path", "--child-layout"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    parser.add_argument("--child-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-fd", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.batch_size <= 0 or args.queries <= 0 or args.budget_seconds <= 0:
        parser.error("--batch-size, --queries and --budget-seconds must be > 0")
    args.query_budget_seconds = args.query_budget_seconds or None
    args.build_budget_seconds = args.build_budget_seconds or None

    if args.child_mode:
        with os.fdopen(args.child_fd, "w") as events:
            Child(args, events).run()
        return 0
    if args.plot:
        results = [_current(r) for path in args.plot for r in json.loads(path.read_text())["results"]]
        print(
            markdown(
                [
                    table_row(r, args)
                    for r in results
                    if "build" in r
                    and "phases" in r["build"]
                    and r["build"]["phases"].get("upsert", {}).get("peak_rss_mb")
                ]
            )
        )
        plot(args.plot, args.plot_out)
        return 0

    try:
        layouts = [layout_params(spec, args.segment_kb) for spec in (args.layouts or ["today"])]
    except ValueError as error:
        parser.error(str(error))
    if args.store != "edge":
        layouts = [(args.store, {})]
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="needle-scale-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    report: dict[str, Any] = {
        "started": datetime.now().isoformat(timespec="seconds"),
        "args": {
            key: (str(value) if isinstance(value, Path) else value)
            for key, value in vars(args).items()
            if not key.startswith("child")
        },
        "machine": _machine(),
        "settings": {
            "dim": DIM,
            "words": WORDS,
            "sparse_vocab": SPARSE_VOCAB,
            "words_per_chunk": WORDS_PER_CHUNK,
            "sparse_terms": SPARSE_TERMS,
            "query_sparse_terms": QUERY_SPARSE_TERMS,
            "query_words": QUERY_WORDS,
            "vectors": args.vectors,
            "spectrum_decay": SPECTRUM_DECAY,
            "mean_norm": MEAN_NORM,
            "edge_durable_writes": args.durable_writes,
            "top_k": 10,
            "hybrid_candidates": HYBRID_CANDIDATES,
        },
        "results": [],
    }
    rows = []
    for size in args.sizes:
        for name, layout in layouts:
            print(f"\n== {name} {layout}, {size:,} chunks ==", file=sys.stderr, flush=True)
            result = run_layout(args.store, size, name, layout, args, data_dir)
            report["results"].append(result)
            rows.append(table_row(result, args))
            print(markdown([rows[-1]]), file=sys.stderr, flush=True)
    if args.data_dir is None and not args.keep_data:
        shutil.rmtree(data_dir, ignore_errors=True)

    table = markdown(rows)
    remarks = [line for result in report["results"] for line in notes(result)]
    report["finished"] = datetime.now().isoformat(timespec="seconds")
    report["load_average_end"] = os.getloadavg()
    report["table"] = rows
    report["table_markdown"] = table
    report["notes"] = remarks
    print()
    print(table)
    if remarks:
        print()
        print("\n".join(f"- {line}" for line in remarks))
    out = write_json(REPORTS / f"scale-{stamp}.json", report)
    print(f"\nwrote {out.relative_to(REPO)}")
    return 0


def _machine() -> dict[str, Any]:
    versions = {}
    for package in ("qdrant-edge-py", "qdrant-client", "qdrant-haystack", "haystack-ai", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "cpus": os.cpu_count(),
        "mem_total_mb": system_memory_mb("MemTotal"),
        "python": platform.python_version(),
        "load_average_start": os.getloadavg(),
        "nice": os.nice(0),
        "versions": versions,
    }


if __name__ == "__main__":
    sys.exit(main())
