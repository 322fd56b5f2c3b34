"""Hot-path benchmark: where a query's time goes, per route over HTTP and per graph in-process, and `status`.

    python -m eval.hotpath corpus --out /tmp/hp/notes               # ~7,500 notes (no internet needed)
    python -m eval.hotpath build --data-dir /tmp/hp/data --notes /tmp/hp/notes
    python -m eval.hotpath http --data-dir /tmp/hp/data             # p50/p95 per route, server RSS
    python -m eval.hotpath stages --data-dir /tmp/hp/data           # in-process per graph, stage breakdown
    python -m eval.hotpath load --data-dir /tmp/hp/data             # query throughput at 1, 4, 16 clients
    python -m eval.hotpath scheduling --data-dir /tmp/hp/data       # Haystack's scheduling against Needle's
    python -m eval.hotpath builds --data-dir /tmp/hp/data           # Documents each stage builds a query
    python -m eval.hotpath big --data-dir /tmp/hp/big --chunks 300000   # status and RSS at 300k chunks
    python -m eval.hotpath clients --data-dir /tmp/hp/data          # httpx against needle.owner.wire, paired
    python -m eval.hotpath shortcut --data-dir /tmp/hp/data         # the served app with and without RunShortcut
    python -m eval.hotpath pair --data-dir /tmp/hp/data --before CHECKOUT   # two servers taking turns

The corpus: one markdown note per documented function or class of the Python standard library and of the
libraries in `LIBRARIES` (its docstring as the note's text, with frontmatter: title, tags, date, status,
priority), read from source with `ast` (nothing imported), so it is the same on every machine with the same
Python and constraints.txt; technical prose with code,
like a developer's notes or tldr-pages. Queries are 80 of the notes' first sentences, shortened to a few
words, as a user would type them. Every number is a median over `--repeat` runs; the machine may be shared.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import statistics
import subprocess
import sysconfig
import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval.corpus_index import needle_on
from eval.demo_data import QUERIES
from eval.result_files import RESULTS, pyplot, save_figure
from eval.servers import CLI, auth_headers, start_serve, stop
from eval.stopwatch import nearest_rank as percentile
from needle.core.requests import SearchRequest
from needle.evaluation.memory import process_memory_mb as rss_mb

if TYPE_CHECKING:
    from needle.evaluation.timing import ComponentTimer

GRAPHS = ("search", "vsearch", "query")
ROUTES = ("get", "search", "vsearch", "query", "status")
STATUSES = ("draft", "review", "done", "archived")
NOTES = 7_500
TRAILING = {
    "the",
    "a",
    "an",
    "of",
    "in",
    "to",
    "that",
    "for",
    "from",
    "with",
    "using",
    "by",
    "and",
    "or",
    "is",
    "are",
    "on",
    "as",
    "if",
    "be",
    "can",
    "this",
    "it",
}
QUERY_COUNT = 80
MAX_NOTE_CHARS = 1_600
# Libraries of Needle's own environment whose docstrings join the standard library's (fixed by constraints.txt).
LIBRARIES = (
    "numpy",
    "haystack",
    "pydantic",
    "httpx",
    "starlette",
    "fastapi",
    "networkx",
    "jinja2",
    "yaml",
    "dateutil",
    "onnxruntime",
    "qdrant_client",
    "openai",
)


# ----------------------------------------------------------------------------------------------------------
# The corpus


def _docstrings(source: Path) -> list[tuple[str, str, str]]:
    """(module, qualified name, docstring) of every documented public function and class of one file."""
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return []
    found: list[tuple[str, str]] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith(
                "_"
            ):
                doc = ast.get_docstring(node)
                if doc and len(doc) >= 80:
                    found.append((prefix + node.name, doc))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    module = source.stem
    return [(module, name, doc) for name, doc in found]


def _stamp(text: str) -> int:
    """A stable number from a text (the same on every run and machine)."""
    return int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)


def make_corpus(out: Path, count: int = NOTES) -> list[str]:
    """
    Write `count` notes under `out` from the standard library's docstrings; returns the queries.

    :returns: `QUERY_COUNT` short queries taken from the notes' first sentences.
    """
    roots = [Path(sysconfig.get_paths()["stdlib"])]
    roots += [Path(sysconfig.get_paths()["purelib"]) / name for name in LIBRARIES]
    sources = [
        (root, p)
        for root in roots
        for p in sorted(root.rglob("*.py"))
        if not {"test", "tests", "site-packages"} & set(p.relative_to(root).parts)
    ]
    entries: list[tuple[str, str, str, str]] = []
    seen: set[str] = set()
    for root, source in sources:
        package = root.name if root.name in LIBRARIES else source.relative_to(root).parts[0].removesuffix(".py")
        for module, name, doc in _docstrings(source):
            key = f"{package}/{module}/{name}"
            if key.lower() in seen:
                continue
            seen.add(key.lower())
            entries.append((package, module, name, doc))
    entries.sort(key=lambda e: _stamp("/".join(e[:3])))
    entries = entries[:count]
    if len(entries) < count:
        raise SystemExit(f"the libraries have {len(entries)} documented names, fewer than {count}")
    out.mkdir(parents=True, exist_ok=True)
    first_day = date(2023, 1, 1)
    queries: list[str] = []
    for package, module, name, doc in entries:
        stamp = _stamp(f"{package}.{module}.{name}")
        text = doc if len(doc) <= MAX_NOTE_CHARS else doc[:MAX_NOTE_CHARS].rsplit("\n", 1)[0]
        summary, _, rest = text.partition("\n")
        tags = [package.lower(), "class" if name[:1].isupper() else "function"]
        frontmatter = (
            f"---\ntitle: {module}.{name}\ntags: [{', '.join(tags)}]\n"
            f"date: {first_day + timedelta(days=stamp % 900)}\n"
            f"status: {STATUSES[stamp % len(STATUSES)]}\npriority: {1 + stamp % 3}\n---\n\n"
        )
        body = f"# {module}.{name}\n\n> {summary.strip()}\n\n{rest.strip()}\n"
        path = out / package / f"{module}.{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(frontmatter + body, encoding="utf-8")
        words = re.findall(r"[A-Za-z][A-Za-z'-]+", summary.lower())[: 3 + stamp % 5]
        while words and words[-1] in TRAILING:
            words.pop()
        if len(queries) < QUERY_COUNT and len(words) >= 3 and stamp % 7 == 0:
            queries.append(" ".join(words))
    (out.parent / "queries.json").write_text(json.dumps(queries, indent=1))
    return queries


# ----------------------------------------------------------------------------------------------------------
# Shared measuring helpers


def read_queries(data_dir: Path) -> list[str]:
    """The queries written beside the notes (`corpus`), found through the collection's root."""
    from needle.core.collections import CollectionRegistry

    for collection in CollectionRegistry(data_dir / "collections.yml").load().values():
        found = Path(collection.root).parent / "queries.json"
        if found.exists():
            return json.loads(found.read_text())
    return QUERIES


# ----------------------------------------------------------------------------------------------------------
# In-process: each graph's time, stage by stage


class Timed:
    """
    Adds up the seconds spent in the wrapped callables (the engine's calls, Haystack's deep copies), and the deep
    copies' seconds by the stage running at the time (`by_stage`).
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.by_stage: dict[str, float] = {}

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started

        return timed


class _EngineProxy:
    """The engine's shard with its calls timed (a measuring instrument of this script only)."""

    def __init__(self, shard: Any, timed: Timed, role: str) -> None:
        self._shard, self._timed, self._role = shard, timed, role

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._shard, name)
        return self._timed.wrap(f"engine.{name}", value) if callable(value) else value


def instrument(needle: Any, timer: ComponentTimer) -> Timed:
    """Time the engine's calls (both stores) and Haystack's deep copies of stage inputs in this process."""
    import haystack.core.pipeline.pipeline as pipeline_module
    from haystack.core.pipeline import base

    timed = Timed()
    for role, store in (("chunks", needle.store), ("files", needle.file_store)):
        opened = store._shard()
        if not isinstance(opened.shard, _EngineProxy):
            opened.shard = _EngineProxy(opened.shard, timed, role)

    def copies(function: Callable[..., Any]) -> Callable[..., Any]:
        def timed_copy(value: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(value)
            finally:
                elapsed = time.perf_counter() - started
                timed.seconds["haystack.deepcopy"] = timed.seconds.get("haystack.deepcopy", 0.0) + elapsed
                timed.by_stage[timer.current] = timed.by_stage.get(timer.current, 0.0) + elapsed

        return timed_copy

    pipeline_module._deepcopy_with_exceptions = copies(pipeline_module._deepcopy_with_exceptions)
    base._deepcopy_with_exceptions = copies(base._deepcopy_with_exceptions)
    return timed


def time_graphs(needle: Any, queries: list[str], graphs: tuple[str, ...], rounds: int) -> dict[str, Any]:
    """p50/p95 of `Needle.search` per graph (no tracer), `rounds` passes over the queries."""
    out: dict[str, Any] = {}
    for graph in graphs:
        needle.search(SearchRequest(query=queries[0]), graph)
        latencies = []
        for _ in range(rounds):
            for query in queries:
                started = time.perf_counter()
                needle.search(SearchRequest(query=query), graph)
                latencies.append((time.perf_counter() - started) * 1000)
        out[graph] = {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95), "n": len(latencies)}
    return out


def stage_breakdown(needle: Any, queries: list[str], graphs: tuple[str, ...]) -> dict[str, Any]:
    """
    Mean ms per query of each stage (its own work, without Haystack's copy of its inputs), of the engine's calls, of Haystack's deep copies and scheduling, and of
    Needle's facade around the graph, per graph (one traced pass over the queries).
    """
    from haystack import tracing

    from needle.evaluation.timing import ComponentTimer

    timer = ComponentTimer()
    timed = instrument(needle, timer)
    out: dict[str, Any] = {}
    tracing.enable_tracing(timer)
    try:
        for graph in graphs:
            needle.search(SearchRequest(query=queries[0]), graph)
            stages: dict[str, float] = {}
            copied: dict[str, float] = {}
            pipeline = total = 0.0
            timed.seconds.clear()
            for query in queries:
                timer.reset()
                timed.by_stage.clear()
                started = time.perf_counter()
                needle.search(SearchRequest(query=query), graph)
                total += time.perf_counter() - started
                pipeline += timer.pipeline_seconds
                for name, seconds in timer.seconds.items():
                    stages[name] = stages.get(name, 0.0) + seconds - timed.by_stage.get(name, 0.0)
                for name, seconds in timed.by_stage.items():
                    copied[name] = copied.get(name, 0.0) + seconds
            n = len(queries)
            copies = timed.seconds.get("haystack.deepcopy", 0.0)
            engine = sum(v for k, v in timed.seconds.items() if k.startswith("engine."))
            out[graph] = {
                "total": 1000 * total / n,
                "graph": 1000 * pipeline / n,
                "stages": {name: 1000 * seconds / n for name, seconds in sorted(stages.items(), key=lambda kv: -kv[1])},
                "engine": 1000 * engine / n,
                "engine_calls": {k: 1000 * v / n for k, v in timed.seconds.items() if k.startswith("engine.")},
                "haystack_copies": 1000 * copies / n,
                "copies_by_stage": {name: 1000 * seconds / n for name, seconds in copied.items()},
                "haystack_other": 1000 * (pipeline - sum(stages.values())) / n - 1000 * copies / n,
                "facade": 1000 * (total - pipeline) / n,
            }
    finally:
        tracing.disable_tracing()
    return out


def run_stages(args: argparse.Namespace) -> dict[str, Any]:
    needle = needle_on(args.data_dir)
    queries = read_queries(args.data_dir)
    for graph in args.graphs:
        needle.warm(graph)
    runs = [time_graphs(needle, queries, tuple(args.graphs), 1) for _ in range(args.repeat)]
    timing = {g: {k: statistics.median(r[g][k] for r in runs) for k in ("p50", "p95")} for g in args.graphs}
    breakdown = stage_breakdown(needle, queries, tuple(args.graphs))
    for graph in args.graphs:
        b = breakdown[graph]
        print(
            f"\n{graph}: p50 {timing[graph]['p50']:.1f} ms, p95 {timing[graph]['p95']:.1f} ms (untraced, median of {args.repeat})"
        )
        print(
            f"  traced mean {b['total']:.1f} ms = facade {b['facade']:.1f} + graph {b['graph']:.1f} "
            f"(stages {sum(b['stages'].values()):.1f}, Haystack's input copies {b['haystack_copies']:.1f}, "
            f"Haystack's scheduling {b['haystack_other']:.1f})"
        )
        print(
            f"  engine calls {b['engine']:.1f} ms: "
            + ", ".join(f"{k[7:]} {v:.2f}" for k, v in b["engine_calls"].items())
        )
        for name, ms in b["stages"].items():
            print(f"    {name:<18} {ms:7.2f} ms")
    return {"timing": timing, "breakdown": breakdown}


def run_builds(args: argparse.Namespace) -> dict[str, Any]:
    """
    How many Haystack `Document`s a query builds per graph (`dataclasses.replace` calls counted by cProfile over
    one pass of the queries, by calling line) and what one such build costs (timeit on a result-sized document).
    """
    import cProfile
    import pstats
    import timeit
    from dataclasses import replace

    from haystack import Document

    needle = needle_on(args.data_dir)
    queries = read_queries(args.data_dir)
    out: dict[str, Any] = {}
    for graph in args.graphs:
        needle.warm(graph)
        needle.search(SearchRequest(query=queries[0]), graph)
        profile = cProfile.Profile()
        profile.enable()
        for query in queries:
            needle.search(SearchRequest(query=query), graph)
        profile.disable()
        n = len(queries)
        by_caller: dict[str, float] = {}
        for (file, _line, name), (_cc, _nc, _tt, _ct, callers) in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
            if name == "replace" and file.endswith("dataclasses.py"):
                for (caller, line, function), (_c, calls, *_rest) in callers.items():
                    by_caller[f"{Path(caller).name}:{line} {function}"] = calls / n
        total = sum(by_caller.values())
        print(f"\n{graph}: {total:.1f} Document rebuilds (dataclasses.replace) a query")
        for where, calls in sorted(by_caller.items(), key=lambda kv: -kv[1]):
            print(f"  {calls:6.1f}  {where}")
        out[graph] = {"per_query": total, "by_caller": by_caller}
    meta = {
        key: f"value of {key}"
        for key in (
            "collection",
            "path",
            "title",
            "heading_path",
            "start_line",
            "end_line",
            "checksum",
            "source_doc_id",
            "format",
            "date",
            "fusion",
            "bonus",
            "term_hits",
        )
    }
    doc = Document(content="word " * 200, score=0.5, meta=meta)
    rounds = 2000
    best = min(timeit.repeat(lambda: replace(doc, score=0.4, meta={**doc.meta, "rerank": {}}), number=rounds, repeat=5))
    out["replace_us"] = 1e6 * best / rounds
    print(f"\none dataclasses.replace of a result-sized Document: {out['replace_us']:.1f} µs (timeit, best of 5)")
    return out


def run_scheduling(args: argparse.Namespace) -> dict[str, Any]:
    """
    Haystack's scheduling against Needle's (`NeedlePipeline._fill_queue`) in one process, on the same warmed
    graphs: passes over the queries alternate between the two, so both see the same load; p50 per graph and
    the stages' readiness checks of one query.
    """
    from haystack import Pipeline
    from haystack.core.pipeline.base import PipelineBase

    from needle.runtime.pipeline import NeedlePipeline

    needle = needle_on(args.data_dir)
    queries = read_queries(args.data_dir)
    ours = NeedlePipeline.__dict__["_fill_queue"]
    modes = {"haystack": Pipeline._fill_queue, "needle": ours}
    out: dict[str, Any] = {}
    try:
        for graph in args.graphs:
            needle.warm(graph)
            needle.search(SearchRequest(query=queries[0]), graph)
            latencies: dict[str, list[float]] = {mode: [] for mode in modes}
            for round_ in range(2 * args.repeat):
                for mode in ("haystack", "needle") if round_ % 2 == 0 else ("needle", "haystack"):
                    NeedlePipeline._fill_queue = modes[mode]  # type: ignore[method-assign]
                    for query in queries:
                        started = time.perf_counter()
                        needle.search(SearchRequest(query=query), graph)
                        latencies[mode].append((time.perf_counter() - started) * 1000)
            checks: dict[str, int] = {}
            calculate = PipelineBase.__dict__["_calculate_priority"]
            for mode in modes:
                counted = [0]

                def counting(
                    comp: Any, comp_inputs: Any, counted: list[int] = counted, original: Any = calculate
                ) -> Any:
                    counted[0] += 1
                    return original.__func__(comp, comp_inputs)

                NeedlePipeline._fill_queue = modes[mode]  # type: ignore[method-assign]
                PipelineBase._calculate_priority = staticmethod(counting)  # type: ignore[method-assign]
                try:
                    needle.search(SearchRequest(query=queries[1]), graph)
                finally:
                    PipelineBase._calculate_priority = calculate  # type: ignore[method-assign]
                checks[mode] = counted[0]
            out[graph] = {
                mode: {
                    "p50": percentile(latencies[mode], 50),
                    "p95": percentile(latencies[mode], 95),
                    "checks": checks[mode],
                    "n": len(latencies[mode]),
                }
                for mode in modes
            }
    finally:
        NeedlePipeline._fill_queue = ours  # type: ignore[method-assign]
    print(f"\nscheduling, in-process, {len(queries)} queries x {args.repeat} passes each, alternating")
    print(
        "| graph | p50 Haystack's | p50 Needle's | p95 Haystack's | p95 Needle's | readiness checks a query |\n|---|---|---|---|---|---|"
    )
    for graph, row in out.items():
        h, n = row["haystack"], row["needle"]
        print(
            f"| {graph} | {h['p50']:.1f} | {n['p50']:.1f} | {h['p95']:.1f} | {n['p95']:.1f} | {h['checks']} → {n['checks']} |"
        )
    return out


# ----------------------------------------------------------------------------------------------------------
# Over HTTP: each route against `needle serve`


class WireClient:
    """
    The client `needle` commands reach an owner with (`needle.owner.wire`: one kept-alive socket, no `http.client`),
    behind the few calls of `httpx.Client` the timing uses: what the server costs with less of the client's own.
    """

    class Answer:
        def __init__(self, status: int, body: bytes) -> None:
            self.status_code, self.content = status, body

        def json(self) -> Any:
            return json.loads(self.content)

        def raise_for_status(self) -> None:
            if self.status_code >= 400:
                raise RuntimeError(f"HTTP {self.status_code}: {self.content[:200]!r}")

    def __init__(self, base_url: str, headers: dict[str, str]) -> None:
        from urllib.parse import urlsplit

        from needle.owner.wire import Connection

        parts = urlsplit(base_url)
        self.connection = Connection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=120)
        self.headers = {"Content-Type": "application/json", **headers}

    def post(self, path: str, json: Any) -> WireClient.Answer:
        import json as json_module

        self.connection.request("POST", path, json_module.dumps(json).encode(), self.headers)
        response = self.connection.getresponse()
        return WireClient.Answer(response.status, response.read())

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *_: Any) -> None:
        self.connection.close()


def http_client(url: str, kind: str = "httpx") -> Any:
    """A client of the server at `url`: `httpx` (what most programs use), or `wire` (what `needle` commands use)."""
    import httpx

    if kind == "wire":
        return WireClient(url, auth_headers())
    return httpx.Client(base_url=url, timeout=120, headers=auth_headers())


def time_routes(
    url: str, queries: list[str], rounds: int, status_calls: int = 20, client: str = "httpx"
) -> dict[str, list[float]]:
    """Latencies (ms) per route, one client: `get` of the first hits' files, the searches, `status`."""
    latencies: dict[str, list[float]] = {route: [] for route in ROUTES}
    with http_client(url, client) as http:
        first = http.post("/search/run", json={"query": queries[0], "limit": 3}).json()
        refs = [r["docid"] if "docid" in r else r["path"] for r in first.get("results", [])] or ["#000000"]
        for graph in ("search", "vsearch", "query"):
            http.post(f"/{graph}/run", json={"query": queries[0]})
        for _ in range(rounds):
            for query in queries:
                for graph in ("search", "vsearch", "query"):
                    started = time.perf_counter()
                    response = http.post(f"/{graph}/run", json={"query": query, "limit": 10})
                    latencies[graph].append((time.perf_counter() - started) * 1000)
                    response.raise_for_status()
                started = time.perf_counter()
                http.post("/get/run", json={"ref": refs[0]})
                latencies["get"].append((time.perf_counter() - started) * 1000)
        for _ in range(status_calls):
            started = time.perf_counter()
            http.post("/status/run", json={}).raise_for_status()
            latencies["status"].append((time.perf_counter() - started) * 1000)
    return latencies


def run_http(args: argparse.Namespace) -> dict[str, Any]:
    queries = read_queries(args.data_dir)
    proc, url = start_serve(args.data_dir)
    try:
        memory = {"started": rss_mb(proc.pid)}
        runs = [time_routes(url, queries, 1, client=args.client) for _ in range(args.repeat)]
        memory["after"] = rss_mb(proc.pid)
    finally:
        stop(proc)
    table = {
        route: {
            "p50": statistics.median(percentile(run[route], 50) for run in runs),
            "p95": statistics.median(percentile(run[route], 95) for run in runs),
            # The first pass meets every query for the first time in this server: nothing of its hits is in
            # the process's caches or mapped pages yet, as for a query a user has not asked before.
            "first_pass_p50": percentile(runs[0][route], 50),
        }
        for route in ROUTES
    }
    print(f"\nover HTTP, one {args.client} client, {len(queries)} queries, median of {args.repeat} passes")
    print("| route | p50 ms | p95 ms | first pass p50 ms |\n|---|---|---|---|")
    for route, row in table.items():
        print(f"| {route} | {row['p50']:.1f} | {row['p95']:.1f} | {row['first_pass_p50']:.1f} |")
    print(f"serving RSS: {memory['after']} MB (at start {memory['started']})")
    return {"routes": table, "memory": memory, "client": args.client}


def paired(sides: tuple[str, str], rounds: int, queries: list[str], call: Any) -> dict[str, dict[str, float]]:
    """
    p50 ms per route and side, the two sides taking turns request by request (which goes first alternates),
    so that the machine's speed, which drifts by a fifth from minute to minute here, weighs on both alike.
    """
    times: dict[tuple[str, str], list[float]] = {}
    for round_ in range(rounds):
        for i, query in enumerate(queries):
            for route in ("search", "vsearch", "query", "status"):
                payload = {} if route == "status" else {"query": query, "limit": 10}
                for side in sides if (i + round_) % 2 == 0 else sides[::-1]:
                    times.setdefault((route, side), []).append(call(side, route, payload))
    table: dict[str, dict[str, float]] = {}
    for (route, side), values in times.items():
        table.setdefault(route, {})[side] = statistics.median(values)
    print(f"| route | {sides[0]} p50 ms | {sides[1]} p50 ms |\n|---|---|---|")
    for route, row in table.items():
        print(f"| {route} | {row[sides[0]]:.2f} | {row[sides[1]]:.2f} |")
    return table


def timed_post(client: Any, route: str, payload: dict[str, Any]) -> float:
    """Milliseconds one `POST /<route>/run` took, answered without an error."""
    started = time.perf_counter()
    client.post(f"/{route}/run", json=payload).raise_for_status()
    return (time.perf_counter() - started) * 1000


def run_clients(args: argparse.Namespace) -> dict[str, Any]:
    """One `needle serve`, two clients taking turns: what `httpx` costs over Needle's own `needle.owner.wire`."""
    queries = read_queries(args.data_dir)
    proc, url = start_serve(args.data_dir)
    try:
        clients = {kind: http_client(url, kind) for kind in ("httpx", "wire")}
        for client in clients.values():
            for query in queries[:10]:
                client.post("/search/run", json={"query": query, "limit": 10}).raise_for_status()

        def call(side: str, route: str, payload: dict[str, Any]) -> float:
            return timed_post(clients[side], route, payload)

        print(
            f"\nover HTTP, one server, httpx and needle.owner.wire taking turns, {len(queries)} queries x {args.repeat}"
        )
        table = paired(("httpx", "wire"), args.repeat, queries, call)
    finally:
        stop(proc)
    return {"clients": table}


def run_shortcut(args: argparse.Namespace) -> dict[str, Any]:
    """
    The app `needle serve` runs, called in-process through ASGI (no socket, no client), each request answered
    with `RunShortcut` and then without it (FastAPI's router and request handling) in turns; answers compared.
    """
    import asyncio

    os.environ["NEEDLE_DATA_DIR"] = str(args.data_dir)
    from needle.shells.http.run_routes import RunShortcut
    from needle.shells.http.server import create_app

    queries = read_queries(args.data_dir)
    app = create_app(host="127.0.0.1", warm_ingest=False)

    async def answer(route: str, payload: dict[str, Any]) -> bytes:
        body = json.dumps(payload).encode()
        headers = [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": f"/{route}/run",
            "raw_path": f"/{route}/run".encode(),
            "root_path": "",
            "query_string": b"",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
            "state": {},
        }
        messages = [{"type": "http.request", "body": body, "more_body": False}]
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop()
            await asyncio.sleep(3600)  # no disconnect while the answer is written
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app(scope, receive, send)
        if sent[0]["status"] != 200:
            raise RuntimeError(f"{route}: HTTP {sent[0]['status']}: {sent[1].get('body', b'')[:200]!r}")
        return b"".join(m.get("body", b"") for m in sent[1:])

    async def measure() -> dict[str, Any]:
        async with app.router.lifespan_context(app):
            await answer("status", {})
            shortcut = app.middleware_stack
            while shortcut is not None and not isinstance(shortcut, RunShortcut):
                shortcut = getattr(shortcut, "app", None)
            assert shortcut is not None, "the app has no RunShortcut"
            runs, last = shortcut.runs, {}
            loop = asyncio.get_running_loop()

            def call(side: str, route: str, payload: dict[str, Any]) -> float:
                shortcut.runs = runs if side == "shortcut" else {}
                started = time.perf_counter()
                body = asyncio.run_coroutine_threadsafe(answer(route, payload), loop).result()
                elapsed = (time.perf_counter() - started) * 1000
                if (
                    route != "status"
                    and last.get(route, (None, None))[0] == payload["query"]
                    and last[route][1] != body
                ):
                    raise RuntimeError(f"{route}: the two paths answered {payload['query']!r} differently")
                last[route] = (payload.get("query"), body)
                return elapsed

            print(f"\nthe served app in-process, with RunShortcut and without, taking turns, {len(queries)} queries")
            return await asyncio.to_thread(paired, ("shortcut", "fastapi"), args.repeat, queries, call)

    return {"shortcut": asyncio.run(measure())}


def run_pair(args: argparse.Namespace) -> dict[str, Any]:
    """
    Before and after over HTTP in one go: `needle serve` from `--before` (another checkout) on a copy of the
    index and from this checkout on the index itself, each request sent to one then the other (in turns), so
    that the machine's drift weighs on both alike; p50 over every round, and over the first (queries neither
    server met before).
    """
    import shutil
    import tempfile

    queries = read_queries(args.data_dir)
    twin = Path(tempfile.mkdtemp(prefix="needle-pair-")) / "data"
    shutil.copytree(args.data_dir, twin, ignore=shutil.ignore_patterns("*.lock", "owner.json", "*.log"))
    # `python -m needle.shells.cli` puts its working folder first on the import path: start it in the checkout.
    path, here = os.environ.get("PYTHONPATH"), os.getcwd()
    try:
        os.environ["PYTHONPATH"] = str(args.before.resolve())
        os.chdir(args.before)
        before, before_url = start_serve(twin)
    finally:
        os.chdir(here)
        if path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = path
    try:
        after, after_url = start_serve(args.data_dir)
        try:
            clients = {"before": http_client(before_url), "after": http_client(after_url)}
            for client in clients.values():  # every graph loaded, one query each
                for graph in ("search", "vsearch", "query"):
                    client.post(f"/{graph}/run", json={"query": "warm up"}).raise_for_status()
            first: dict[tuple[str, str], list[float]] = {}

            def call(side: str, route: str, payload: dict[str, Any]) -> float:
                elapsed = timed_post(clients[side], route, payload)
                seen = first.setdefault((route, side), [])
                if len(seen) < len(queries):
                    seen.append(elapsed)
                return elapsed

            print(
                f"\nover HTTP, {args.before} against this checkout, taking turns, {len(queries)} queries x {args.repeat}"
            )
            table = paired(("before", "after"), args.repeat, queries, call)
            print("first round only (queries neither server met before):")
            print("| route | before p50 ms | after p50 ms |\n|---|---|---|")
            for route in table:
                print(
                    f"| {route} | {statistics.median(first[(route, 'before')]):.2f} | "
                    f"{statistics.median(first[(route, 'after')]):.2f} |"
                )
        finally:
            stop(after)
    finally:
        stop(before)
        shutil.rmtree(twin.parent, ignore_errors=True)
    return {"pair": table, "first_round": {f"{r} {s}": statistics.median(v) for (r, s), v in first.items()}}


def run_status(args: argparse.Namespace) -> dict[str, Any]:
    """`status` in-process and over HTTP (median ms of `--calls` each), with the serving process's RSS."""
    import httpx

    needle = needle_on(args.data_dir)
    needle.status()
    inproc = []
    for _ in range(args.calls):
        started = time.perf_counter()
        answer = needle.status()
        inproc.append((time.perf_counter() - started) * 1000)
    chunks = sum(c["chunks"] for c in answer["collections"])
    needle.close()
    proc, url = start_serve(args.data_dir)
    try:
        over_http = []
        with httpx.Client(base_url=url, timeout=120, headers=auth_headers()) as http:
            for _ in range(args.calls):
                started = time.perf_counter()
                http.post("/status/run", json={}).raise_for_status()
                over_http.append((time.perf_counter() - started) * 1000)
        memory = rss_mb(proc.pid)
    finally:
        stop(proc)
    result = {
        "chunks": chunks,
        "in_process_ms": statistics.median(inproc),
        "http_ms": statistics.median(over_http),
        "rss": memory,
    }
    print(
        f"status at {chunks} chunks: {result['in_process_ms']:.1f} ms in-process, {result['http_ms']:.1f} ms over HTTP "
        f"(medians of {args.calls}); serving RSS {memory} MB"
    )
    return result


def run_load(args: argparse.Namespace) -> dict[str, Any]:
    """`query` throughput at each client count, over HTTP (`python -m eval.load`'s clients)."""
    from eval.load import run_load as load

    queries = read_queries(args.data_dir)
    proc, url = start_serve(args.data_dir)
    rows: dict[str, Any] = {}
    try:
        import httpx

        httpx.post(f"{url}/query/run", json={"query": queries[0]}, timeout=120)
        for clients in args.clients:
            runs = []
            for _ in range(args.repeat):
                stats = load(url, clients, args.seconds, ["query"], 10, queries)
                ms = [v * 1000 for v in stats["query"]["latencies"]]
                runs.append(
                    {
                        "qps": len(ms) / args.seconds,
                        "p50": percentile(ms, 50),
                        "p95": percentile(ms, 95),
                        "errors": stats["query"]["errors"],
                    }
                )
            rows[str(clients)] = {k: statistics.median(r[k] for r in runs) for k in ("qps", "p50", "p95", "errors")}
        rows["rss"] = rss_mb(proc.pid)
    finally:
        stop(proc)
    print(f"\nquery throughput, {args.seconds:g} s per run, median of {args.repeat}")
    print("| clients | queries/s | p50 ms | p95 ms | errors |\n|---|---|---|---|---|")
    for clients in args.clients:
        row = rows[str(clients)]
        print(f"| {clients} | {row['qps']:.1f} | {row['p50']:.1f} | {row['p95']:.1f} | {row['errors']:.0f} |")
    print(f"serving RSS after the load: {rows['rss']} MB")
    return rows


def dump_results(data_dir: Path, out: Path, compare: Path | None) -> int:
    """
    Every graph's answer to every query (files, lines, scores, label, confidence, snippets) in a JSON file;
    with `compare`, the first difference from an earlier dump (the same code path must give the same answers).
    """
    needle = needle_on(data_dir)
    answers: dict[str, Any] = {}
    for graph in GRAPHS:
        for query in read_queries(data_dir):
            answer = needle.search(SearchRequest(query=query, explain=True), graph)
            answers[f"{graph}: {query}"] = {
                "label": answer.label,
                "confidence": answer.confidence,
                "explain": answer.explain,
                "results": [[r.docid, r.start_line, r.end_line, r.score, r.snippet, r.explain] for r in answer.results],
            }
    out.write_text(json.dumps(answers, indent=0))
    if compare is None:
        print(f"{len(answers)} answers written to {out}")
        return 0
    earlier = json.loads(compare.read_text())
    differing = [key for key in answers if answers[key] != earlier.get(key)]
    for key in differing[:5]:
        print(f"differs: {key}\n  before {earlier.get(key)}\n  now    {answers[key]}")
    print(f"{len(answers) - len(differing)} of {len(answers)} answers identical to {compare}")
    return 1 if differing else 0


def record_big(needle: Any) -> None:
    """Record the provenance an index run would, with the collection's languages, fields and tags."""
    from needle.lifecycle import field_summary as index_summary
    from needle.lifecycle import provenance as index_info

    index_info.record(
        needle.settings,
        needle.ingest_graph(),
        languages={"scale": ["en"]},
        summaries=index_summary.summaries(needle.store, needle.file_store, ["scale"]),
    )


def build_big(data_dir: Path, chunks: int, per_file: int = 20, batch: int = 1000) -> int:
    """
    A large index with cheap vectors: `python -m eval.scale`'s synthetic chunks (MiniLM-like low-rank dense vectors,
    BM25-like sparse vectors, Zipf pseudo-words), `per_file` chunks a file, written through Needle's own
    stores with the metadata an index run gives them (collection, path, tags, frontmatter fields, language),
    one whole-file document per file, then laid out as the configuration says. No model runs.
    """
    from dataclasses import replace

    from haystack import Document

    from eval.scale import Synthetic
    from needle.core.collections import Collection

    needle = needle_on(data_dir)
    notes = data_dir / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    needle.collections.save({"scale": Collection(name="scale", root=str(notes), include=["**/*.md"])})
    from haystack.document_stores.types import DuplicatePolicy

    synthetic = Synthetic(seed=13)
    for store in (needle.store, needle.file_store):
        store.durable_writes = False  # a bulk load: flushed once at the end, as `python -m eval.scale` does
    started = time.perf_counter()
    for start in range(0, chunks, batch):
        docs, files = [], []
        for doc in synthetic.documents(start, min(batch, chunks - start)):
            number = int(doc.id.rsplit("-", 1)[1])
            file, part = divmod(number, per_file)
            stamp = _stamp(str(file))
            path = f"area-{file % 50:02d}/note-{file:06d}.md"
            frontmatter = {
                "status": STATUSES[stamp % len(STATUSES)],
                "priority": 1 + stamp % 3,
                "owner": f"person-{stamp % 40}",
            }
            meta = {
                "collection": "scale",
                "path": path,
                "source_doc_id": f"scale:{path}",
                "title": f"note {file}",
                "tags": [f"topic-{stamp % 30}", "scale"],
                "frontmatter": frontmatter,
                "fields": [f"{k}={v}" for k, v in frontmatter.items()],
                "folders": [f"area-{file % 50:02d}"],
                "language": "en",
                "start_line": 1 + part * 10,
                "end_line": 10 + part * 10,
                "chunk": part,
            }
            docs.append(replace(doc, meta=meta))
            if part == 0:
                files.append(
                    Document(
                        id=f"file-{file:06d}",
                        content=doc.content,
                        embedding=doc.embedding,
                        sparse_embedding=doc.sparse_embedding,
                        meta={**meta, "kind": "file"},
                    )
                )
        needle.store.write_documents(docs, DuplicatePolicy.OVERWRITE)
        if files:
            needle.file_store.write_documents(files, DuplicatePolicy.OVERWRITE)
        if start % 50_000 == 0:
            print(f"{start + len(docs)} chunks written, {time.perf_counter() - started:.0f} s", flush=True)
    for store in (needle.store, needle.file_store):
        store.flush()
        store.optimize()
    record_big(needle)
    print(f"{chunks} chunks, {chunks // per_file} files in {time.perf_counter() - started:.0f} s")
    return 0


def build_index(data_dir: Path, notes: Path) -> int:
    """Add the notes as collection `lib` and index them (the CLI's own commands)."""
    env = {**os.environ, "NEEDLE_DATA_DIR": str(data_dir)}
    subprocess.run([*CLI, "collection", "add", str(notes), "--name", "lib"], env=env, check=True)
    started = time.perf_counter()
    subprocess.run([*CLI, "index"], env=env, check=True, stdout=subprocess.DEVNULL)
    print(f"indexed in {time.perf_counter() - started:.0f} s")
    return 0


def plot(before: str, after: str, out: Path, http: bool = False) -> None:
    """
    Bars of in-process p50 per graph and of `status` (with `http`: p50 per route over HTTP), and of query
    throughput per client count, before and after: medians over every run whose label starts with `before` /
    `after` (`before-1`, `before-2`...).
    """
    plt = pyplot()
    saved = json.loads((RESULTS / "hotpath.json").read_text())

    def median(prefix: str, pick: Callable[[dict[str, Any]], float | None]) -> float:
        values = [v for label, run in saved.items() if label.startswith(prefix) for v in [pick(run)] if v is not None]
        return statistics.median(values) if values else float("nan")

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.38
    names = list(ROUTES) if http else [*GRAPHS, "status"]
    for offset, label in ((-width / 2, before), (width / 2, after)):
        if http:
            heights = [
                median(label, lambda run, r=r: run.get("http", {}).get("routes", {}).get(r, {}).get("p50"))
                for r in ROUTES
            ]
        else:
            heights = [
                median(label, lambda run, g=g: run.get("stages", {}).get("timing", {}).get(g, {}).get("p50"))
                for g in GRAPHS
            ] + [
                median(
                    label,
                    lambda run: (
                        run.get("status", {}).get("in_process_ms")
                        if run.get("status", {}).get("chunks", 0) < 100_000
                        else None
                    ),
                )
            ]
        bars = left.bar([i + offset for i in range(len(names))], heights, width, label=label)
        left.bar_label(bars, fmt="%.0f", fontsize=8)
    left.set_xticks(range(len(names)), names)
    left.set_ylabel(f"p50 ms, {'over HTTP, one client' if http else 'in-process'} (shared, loaded machine)")
    left.set_title("latency per route" if http else "latency per graph, and status")
    left.legend()
    clients = ["1", "4", "16"]
    for offset, label in ((-width / 2, before), (width / 2, after)):
        heights = [median(label, lambda run, c=c: run.get("load", {}).get(c, {}).get("qps")) for c in clients]
        bars = right.bar([i + offset for i in range(len(clients))], heights, width, label=label)
        right.bar_label(bars, fmt="%.1f", fontsize=8)
    right.set_xticks(range(len(clients)), [f"{c} clients" for c in clients])
    right.set_ylabel("query requests per second over HTTP")
    right.set_title("query throughput")
    right.legend(loc="lower right")
    save_figure(figure, out)
    print(f"wrote {out}")


def save(command: str, label: str, result: dict[str, Any], path: Path) -> None:
    """Add this run to the results file (eval/results/hotpath.json) under `label`: what the docs' table and plot read."""
    saved = json.loads(path.read_text()) if path.exists() else {}
    saved.setdefault(label or "unlabelled", {})[command] = {
        **result,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path.write_text(json.dumps(saved, indent=1, default=float) + "\n")


# ----------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m eval.hotpath", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    corpus = sub.add_parser("corpus", help="write the notes")
    corpus.add_argument("--out", type=Path, required=True)
    corpus.add_argument("--files", type=int, default=NOTES)
    build = sub.add_parser("build", help="index the notes into a data folder")
    build.add_argument("--data-dir", type=Path, required=True)
    build.add_argument("--notes", type=Path, required=True)
    for name, helps in (
        ("stages", "in-process timing per graph with the stage breakdown"),
        ("http", "p50/p95 per route over HTTP and the server's RSS"),
        ("load", "query throughput at several client counts"),
        ("status", "status in-process and over HTTP, and the serving RSS"),
        ("scheduling", "Haystack's scheduling against Needle's, alternating in one process"),
        ("builds", "Documents built per query and stage (cProfile), and what one build costs"),
        ("clients", "httpx and needle.owner.wire taking turns against one server, p50 per route"),
        ("shortcut", "the served app in-process with and without RunShortcut, taking turns"),
        ("pair", "a server from another checkout and one from this, taking turns, p50 per route"),
    ):
        command = sub.add_parser(name, help=helps)
        command.add_argument("--data-dir", type=Path, required=True)
        command.add_argument("--repeat", type=int, default=3, help="runs; medians are reported")
        command.add_argument("--label", default="", help="a name for this run in the JSON report")
        command.add_argument(
            "--save",
            type=Path,
            default=RESULTS / "hotpath.json",
            help="the results file this run is added to",
        )
        if name in ("stages", "scheduling", "builds"):
            command.add_argument("--graphs", nargs="+", default=list(GRAPHS))
        if name == "status":
            command.add_argument("--calls", type=int, default=20)
        if name == "pair":
            command.add_argument("--before", type=Path, required=True, help="the checkout to compare with")
        if name == "http":
            command.add_argument(
                "--client",
                choices=("httpx", "wire"),
                default="httpx",
                help="httpx, or needle.owner.wire, the client needle commands reach an owner with",
            )
        if name == "load":
            command.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
            command.add_argument("--seconds", type=float, default=15)
    big = sub.add_parser("big", help="a large index with synthetic vectors (no model runs)")
    big.add_argument("--data-dir", type=Path, required=True)
    big.add_argument("--chunks", type=int, default=300_000)
    drawn = sub.add_parser("plot", help="draw two labelled runs from eval/results/hotpath.json")
    drawn.add_argument("--before", default="before")
    drawn.add_argument("--after", default="after")
    drawn.add_argument("--out", type=Path, default=RESULTS / "hotpath.png")
    drawn.add_argument(
        "--http", action="store_true", help="latency per route over HTTP instead of per graph in-process"
    )
    dump = sub.add_parser("results", help="write every graph's answers; --compare checks them against a dump")
    dump.add_argument("--data-dir", type=Path, required=True)
    dump.add_argument("--out", type=Path, required=True)
    dump.add_argument("--compare", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.command == "plot":
        plot(args.before, args.after, args.out, http=args.http)
        return 0
    if args.command == "big":
        return build_big(args.data_dir, args.chunks)
    if args.command == "results":
        return dump_results(args.data_dir, args.out, args.compare)
    if args.command in ("stages", "http", "load", "status", "scheduling", "builds", "clients", "shortcut", "pair"):
        result = {
            "stages": run_stages,
            "http": run_http,
            "load": run_load,
            "status": run_status,
            "scheduling": run_scheduling,
            "builds": run_builds,
            "clients": run_clients,
            "shortcut": run_shortcut,
            "pair": run_pair,
        }[args.command](args)
        save(args.command, args.label, result, args.save)
        return 0
    if args.command == "build":
        return build_index(args.data_dir, args.notes)
    if args.command == "corpus":
        queries = make_corpus(args.out, args.files)
        print(f"{args.files} notes in {args.out}, {len(queries)} queries in {args.out.parent / 'queries.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
