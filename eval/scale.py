"""Scale benchmark: Needle's embedded store (Qdrant Edge) against qdrant-client's local mode, on synthetic chunks.

    python eval/scale.py --sizes 100000
    python eval/scale.py --sizes 1000000 --budget-seconds 3600 --build-budget-seconds 7200

For each size N and store, a fresh subprocess (so memory numbers do not mix) writes N synthetic chunks in
streaming batches (random unit vectors of 384 dims, BM25-like sparse vectors of 20-60 terms from a 30k
vocabulary, Zipf-distributed pseudo-word text), builds the HNSW graph and times dense, sparse and BM25 text
queries (top 10). Stores:

- `edge`: `needle.document_stores.EdgeDocumentStore`, written with `DuplicatePolicy.OVERWRITE`,
  `durable_writes=False` and one `flush()` at the end (counted in the upsert time; `--durable-writes` flushes
  after every batch instead); `optimize()` is the HNSW build.
- `qdrant-local`: qdrant-haystack's `QdrantDocumentStore(path=...)`, i.e. qdrant-client's pure-Python local
  mode. It has no HNSW (brute force) and no full-text index, so those cells read `n/a`.

Every phase has a time budget. A phase over budget stops and reads "did not finish in N s"; nothing is
extrapolated, and a store whose upsert did not finish is not queried. A phase stuck in one blocking call is
killed by the parent shortly after its budget, and so is a process whose RSS passes `--max-rss-mb`.
Upsert seconds count the store calls only, not generating the documents (the budget is wall time of both).
Peak RSS is the subprocess's VmHWM, Python and library imports included (the baseline is in the JSON).
Prints a markdown table and writes it with the raw numbers to eval/reports/scale-<timestamp>.json.
"""

from __future__ import annotations

import argparse
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
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "eval" / "reports"
STORES = ("edge", "qdrant-local")
QUERY_KINDS = ("dense", "sparse", "text")
DIM = 384
WORDS = 30_000
SPARSE_VOCAB = 30_000
WORDS_PER_CHUNK = (60, 180)
SPARSE_TERMS = (20, 60)
QUERY_SPARSE_TERMS = (3, 8)
QUERY_WORDS = (2, 5)
EXACT_QUERIES = 30
KILL_GRACE_SECONDS = 30


# ----------------------------------------------------------------------------------------------------------
# Synthetic data


class Synthetic:
    """Deterministic synthetic chunks and queries; batch `start` is the same whatever the batch order."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        rng = np.random.default_rng(seed)
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
        dense = _unit_vectors(rng, count).tolist()
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
        return {"dense": _unit_vectors(rng, count).tolist(), "sparse": sparse, "text": texts}

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
    vectors = rng.standard_normal((count, DIM), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


# ----------------------------------------------------------------------------------------------------------
# The child process: one store, one size


class Child:
    """Runs the phases of one store and reports each one as a JSON line on the event pipe."""

    def __init__(self, args: argparse.Namespace, events: Any) -> None:
        self.args = args
        self.events = events

    def emit(self, **event: Any) -> None:
        event["vm_hwm_mb"] = _status_mb(os.getpid(), "VmHWM")
        self.events.write(json.dumps(event) + "\n")
        self.events.flush()

    def run(self) -> None:
        args = self.args
        synthetic = Synthetic(args.seed)
        queries = synthetic.queries(args.queries)
        store = _open_store(args.child_store, args.child_path, args)
        self.emit(event="ready", rss_baseline_mb=_status_mb(os.getpid(), "VmRSS"))
        try:
            self._phases(store, synthetic, queries)
        finally:
            store.close()
        self.emit(event="done", disk_mb=_folder_mb(args.child_path))

    def _phases(self, store: Any, synthetic: Synthetic, queries: dict[str, list[Any]]) -> None:
        from haystack.document_stores.types import DuplicatePolicy
        from tqdm import tqdm

        args, n = self.args, self.args.child_size

        # Upsert
        budget = args.budget_seconds
        self.emit(event="start", phase="upsert", budget=budget)
        started = time.monotonic()
        write_s = generate_s = 0.0
        written = 0
        finished = True
        with tqdm(total=n, unit="doc", desc=f"{args.child_store} upsert {n:,}", mininterval=2, smoothing=0.05) as bar:
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
        self.emit(
            event="end",
            phase="upsert",
            finished=finished,
            seconds=write_s,
            generate_seconds=generate_s,
            flush_seconds=flush_s,
            wall_seconds=time.monotonic() - started,
            written=written,
            docs_per_second=written / write_s if write_s else None,
        )
        if not finished:
            return

        # HNSW build
        if args.child_store == "edge":
            self.emit(event="start", phase="build", budget=args.build_budget_seconds or budget)
            before = _shard_info(store)
            t0 = time.perf_counter()
            changed = store.optimize()
            seconds = time.perf_counter() - t0
            self.emit(
                event="end", phase="build", finished=True, seconds=seconds, changed=changed,
                shard_before=before, shard_after=_shard_info(store), count=store.count_documents(),
            )
        else:
            self.emit(event="end", phase="build", finished=True, seconds=None, na="no HNSW, brute force")

        # Queries
        query_budget = args.query_budget_seconds or budget
        for kind in QUERY_KINDS:
            search = _searcher(args.child_store, store, kind)
            if search is None:
                self.emit(event="end", phase=kind, finished=True, na="no full-text index")
                continue
            self.emit(event="start", phase=kind, budget=query_budget)
            self.emit(event="end", phase=kind, **_time_queries(search, queries[kind], query_budget, kind))
        if args.child_store == "edge":
            self.emit(event="start", phase="dense_exact", budget=query_budget)
            exact = _time_queries(_exact_dense(store), queries["dense"][:EXACT_QUERIES], query_budget, "exact")
            self.emit(event="end", phase="dense_exact", **exact)


def _open_store(kind: str, path: str, args: argparse.Namespace) -> Any:
    if kind == "edge":
        from needle.document_stores import EdgeDocumentStore

        return EdgeDocumentStore(
            path=path, embedding_dim=DIM, use_sparse_embeddings=True, sparse_idf=True, text_index=True,
            durable_writes=args.durable_writes,
        )
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    return QdrantDocumentStore(
        path=path, index="Document", embedding_dim=DIM, use_sparse_embeddings=True, sparse_idf=True,
        recreate_index=True, write_batch_size=args.batch_size, progress_bar=False,
    )


def _searcher(kind: str, store: Any, query_kind: str) -> Callable[[Any], Any] | None:
    if kind == "edge":
        return {
            "dense": lambda q: store.query_dense(q, top_k=10),
            "sparse": lambda q: store.query_sparse(q, top_k=10),
            "text": lambda q: store.query_text(q, top_k=10),
        }[query_kind]
    # What qdrant-haystack's QdrantEmbeddingRetriever and QdrantSparseEmbeddingRetriever call.
    return {
        "dense": lambda q: store._query_by_embedding(query_embedding=q, top_k=10),
        "sparse": lambda q: store._query_by_sparse(query_sparse_embedding=q, top_k=10),
        "text": None,
    }[query_kind]


def _exact_dense(store: Any) -> Callable[[list[float]], Any]:
    """Brute-force dense search on the same shard, to tell whether `query_dense` really used the graph."""
    import qdrant_edge as qe
    from haystack_integrations.document_stores.qdrant.converters import DENSE_VECTORS_NAME

    shard = store._shard().shard

    def search(vector: list[float]) -> Any:
        return shard.query(
            qe.QueryRequest(
                limit=10, query=qe.Query.Nearest(vector, using=DENSE_VECTORS_NAME),
                params=qe.SearchParams(exact=True), with_payload=True,
            )
        )

    return search


def _time_queries(search: Callable[[Any], Any], queries: list[Any], budget: float, label: str) -> dict[str, Any]:
    from tqdm import tqdm

    started = time.monotonic()
    search(queries[0])  # warm-up, not timed
    latencies, hits = [], 0
    for query in tqdm(queries, desc=f"{label} queries", unit="q", mininterval=2, leave=False):
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
            p50_ms=float(np.percentile(latencies, 50)), p95_ms=float(np.percentile(latencies, 95)),
            mean_ms=float(np.mean(latencies)), mean_hits=hits / done,
        )
    return result


def _shard_info(store: Any) -> dict[str, Any]:
    info = store._shard().shard.info()
    return {
        "segments": info.segments_count,
        "points": info.points_count,
        "indexed_vectors": info.indexed_vectors_count,
    }


def _status_mb(pid: int, field: str) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _folder_mb(path: str) -> float:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(folder, name))
            except OSError:
                pass
    return total / 2**20


# ----------------------------------------------------------------------------------------------------------
# The parent: one subprocess per store and size, watched


def run_store(store: str, size: int, args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    """Run one store at one size in a subprocess; returns its phases, killed or not."""
    path = data_dir / f"{store}-{size}"
    shutil.rmtree(path, ignore_errors=True)
    read_fd, write_fd = os.pipe()
    command = [
        sys.executable, str(Path(__file__).resolve()), "--child-store", store, "--child-size", str(size),
        "--child-path", str(path), "--child-fd", str(write_fd), "--seed", str(args.seed),
        "--batch-size", str(args.batch_size), "--queries", str(args.queries),
        "--budget-seconds", str(args.budget_seconds), "--query-budget-seconds", str(args.query_budget_seconds or 0),
        "--build-budget-seconds", str(args.build_budget_seconds or 0),
    ]
    if args.durable_writes:
        command.append("--durable-writes")
    env = {**os.environ, "HAYSTACK_TELEMETRY_ENABLED": "False", "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    proc = subprocess.Popen(command, pass_fds=(write_fd,), env=env, cwd=ROOT)
    os.close(write_fd)
    events: queue.Queue = queue.Queue()
    threading.Thread(target=_read_events, args=(read_fd, events), daemon=True).start()

    result: dict[str, Any] = {"store": store, "n": size, "phases": {}, "peak_rss_mb": None}
    phase, deadline, peak = None, None, 0.0
    while True:
        try:
            event = events.get(timeout=0.5)
        except queue.Empty:
            event = None
        hwm = _status_mb(proc.pid, "VmHWM")
        rss = _status_mb(proc.pid, "VmRSS") or 0.0
        peak = max(peak, hwm or 0.0)
        if event is not None:
            if event is _EOF:
                break
            peak = max(peak, event.get("vm_hwm_mb") or 0.0)
            kind = event.pop("event")
            if kind == "ready":
                result["rss_baseline_mb"] = event["rss_baseline_mb"]
            elif kind == "start":
                phase = event["phase"]
                deadline = time.monotonic() + event["budget"] + max(KILL_GRACE_SECONDS, 0.1 * event["budget"])
            elif kind == "end":
                result["phases"][event.pop("phase")] = event
                phase, deadline = None, None
            elif kind == "done":
                result["disk_mb"] = event["disk_mb"]
        reason = None
        if deadline is not None and time.monotonic() > deadline:
            reason = "budget"
        elif rss > args.max_rss_mb:
            reason = f"rss over {args.max_rss_mb:.0f} MB"
        if reason:
            proc.kill()
            result["phases"][phase or "unknown"] = {"finished": False, "killed": reason}
            break
    code = proc.wait()
    os.close(read_fd)
    result["peak_rss_mb"] = peak or None
    result["exit_code"] = code
    killed = any(phase.get("killed") for phase in result["phases"].values())
    result["crashed"] = code != 0 and not killed
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
    """The cells of one store and size."""
    phases = result["phases"]
    query_budget = args.query_budget_seconds or args.budget_seconds
    upsert_done = phases.get("upsert", {}).get("finished", False)
    killed = any(phase.get("killed") for phase in phases.values())

    def cell(name: str, key: str, digits: int, budget: float) -> str:
        phase = phases.get(name)
        if phase is None:
            if result.get("crashed"):
                return "crashed"
            return "not run" if not upsert_done or killed else "failed"
        if phase.get("na"):
            return f"n/a ({phase['na']})"
        if not phase.get("finished"):
            return f"did not finish in {budget:.0f} s"
        return f"{phase[key]:.{digits}f}"

    return {
        "store": result["store"],
        "N": f"{result['n']:,}",
        "upsert s": cell("upsert", "seconds", 1, args.budget_seconds),
        "HNSW build s": cell("build", "seconds", 1, args.build_budget_seconds or args.budget_seconds),
        "peak RSS MB": f"{result['peak_rss_mb']:.0f}" if result.get("peak_rss_mb") else "?",
        "p50 dense ms": cell("dense", "p50_ms", 2, query_budget),
        "p50 sparse ms": cell("sparse", "p50_ms", 2, query_budget),
        "p50 text ms": cell("text", "p50_ms", 2, query_budget),
    }


def markdown(rows: list[dict[str, str]]) -> str:
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row[column] for column in header) + " |" for row in rows]
    return "\n".join(lines)


def notes(result: dict[str, Any]) -> list[str]:
    """What the table cannot say: partial query counts, kills, whether the HNSW graph was really built."""
    out, phases, label = [], result["phases"], f"{result['store']} at {result['n']:,}"
    for name, phase in phases.items():
        if phase.get("killed"):
            out.append(f"{label}: killed during {name} ({phase['killed']})")
        elif name == "upsert" and not phase.get("finished"):
            out.append(
                f"{label}: upsert wrote {phase['written']:,} of {result['n']:,} chunks within the budget "
                f"({phase['docs_per_second']:.0f} chunks/s while it ran)"
            )
        elif name in QUERY_KINDS and not phase.get("finished") and "queries" in phase:
            out.append(f"{label}: {name} answered {phase['queries']} of {phase['of']} queries within the budget")
    build, exact, dense = phases.get("build", {}), phases.get("dense_exact", {}), phases.get("dense", {})
    if "shard_after" in build:
        after = build["shard_after"]
        out.append(
            f"{label}: after optimize() {after['segments']} segment(s), {after['indexed_vectors']:,} of "
            f"{after['points']:,} points' vectors indexed (dense + sparse counted by the engine)"
        )
    if exact.get("p50_ms") and dense.get("p50_ms"):
        out.append(
            f"{label}: dense p50 {dense['p50_ms']:.2f} ms through HNSW vs {exact['p50_ms']:.2f} ms brute force "
            f"(exact=True, {exact['queries']} queries)"
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000], help="chunk counts to run")
    parser.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    parser.add_argument("--batch-size", type=int, default=1000, help="Documents per write_documents() call")
    parser.add_argument("--queries", type=int, default=200, help="queries per kind (plus one untimed warm-up)")
    parser.add_argument("--budget-seconds", type=float, default=600, help="budget of the upsert (and default of the others)")
    parser.add_argument("--build-budget-seconds", type=float, default=None,
                        help="budget of the HNSW build (default: --budget-seconds)")
    parser.add_argument("--query-budget-seconds", type=float, default=None,
                        help="budget of each query kind (default: --budget-seconds)")
    parser.add_argument("--durable-writes", action="store_true",
                        help="edge: flush after every batch instead of once at the end")
    parser.add_argument("--max-rss-mb", type=float, default=0.8 * (_status_mb_total() or 16_384),
                        help="kill a store's process above this RSS (default: 80%% of RAM)")
    parser.add_argument("--data-dir", type=Path, default=None, help="where the stores are written (default: a temp dir)")
    parser.add_argument("--keep-data", action="store_true", help="keep the stores' folders")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--child-store", help=argparse.SUPPRESS)
    parser.add_argument("--child-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-path", help=argparse.SUPPRESS)
    parser.add_argument("--child-fd", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.batch_size <= 0 or args.queries <= 0 or args.budget_seconds <= 0:
        parser.error("--batch-size, --queries and --budget-seconds must be > 0")
    args.query_budget_seconds = args.query_budget_seconds or None
    args.build_budget_seconds = args.build_budget_seconds or None

    if args.child_store:
        with os.fdopen(args.child_fd, "w") as events:
            Child(args, events).run()
        return 0

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="needle-scale-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    report: dict[str, Any] = {
        "started": datetime.now().isoformat(timespec="seconds"),
        "args": {key: (str(value) if isinstance(value, Path) else value)
                 for key, value in vars(args).items() if not key.startswith("child")},
        "machine": _machine(),
        "settings": {
            "dim": DIM, "words": WORDS, "sparse_vocab": SPARSE_VOCAB, "words_per_chunk": WORDS_PER_CHUNK,
            "sparse_terms": SPARSE_TERMS, "query_sparse_terms": QUERY_SPARSE_TERMS, "query_words": QUERY_WORDS,
            "edge_durable_writes": args.durable_writes, "top_k": 10,
        },
        "results": [],
    }
    rows = []
    for size in args.sizes:
        for store in args.stores:
            print(f"\n== {store}, {size:,} chunks ==", file=sys.stderr, flush=True)
            result = run_store(store, size, args, data_dir)
            report["results"].append(result)
            rows.append(table_row(result, args))
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
    REPORTS.mkdir(parents=True, exist_ok=True)
    out = REPORTS / f"scale-{stamp}.json"
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


def _status_mb_total() -> float | None:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _machine() -> dict[str, Any]:
    versions = {}
    for package in ("qdrant-edge-py", "qdrant-client", "qdrant-haystack", "haystack-ai", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "cpus": os.cpu_count(),
        "mem_total_mb": _status_mb_total(),
        "python": platform.python_version(),
        "load_average_start": os.getloadavg(),
        "versions": versions,
    }


if __name__ == "__main__":
    sys.exit(main())
