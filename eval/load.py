"""Load benchmark: N concurrent clients for T seconds against the `query` and `search` endpoints.

Talks to a running `needle serve` on this machine, or starts one on 127.0.0.1 against `--data-dir` and
stops it afterwards. Prints requests per second, p50/p95/p99 latency and errors, per endpoint and overall.
Bounded: at most 64 clients and 600 seconds, loopback addresses only.

    python -m eval.load --clients 4 --seconds 20                # against http://127.0.0.1:1416
    python -m eval.load --data-dir .demo --seconds 10           # starts its own server
    python -m eval.load --data-dir DIR --clients 1 --clients 4 --clients 16 --instances 1 --instances 4

With several `--clients` and `--instances` (warmed instances of each graph, `serve.graph_instances`; one
instance is how `needle serve` ran before: one request per graph at a time), it starts one server per
instance count and runs every client count against it, then prints one markdown table of them all.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import httpx

from eval.demo_data import QUERIES
from eval.result_files import markdown_table
from eval.servers import auth_headers, start_serve, stop
from eval.stopwatch import nearest_rank

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def read_queries(dataset: Path | None) -> list[str]:
    """The queries to send: a BEIR folder's `queries.jsonl`, or a few about the bundled notes."""
    if dataset is None:
        return QUERIES
    with (dataset / "queries.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle if line.strip()]


def run_load(
    url: str, clients: int, seconds: float, endpoints: list[str], limit: int, queries: list[str] = QUERIES
) -> dict[str, dict]:
    """
    Send requests from `clients` threads for `seconds`, each thread cycling through endpoints and queries.

    :returns: Per endpoint: latencies (seconds) of successful requests and the error count.
    """
    stats = {e: {"latencies": [], "errors": 0, "first_error": None} for e in endpoints}
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(offset: int) -> None:
        pairs = itertools.cycle([(e, q) for q in queries for e in endpoints])
        for _ in range(offset):
            next(pairs)
        with httpx.Client(base_url=url, timeout=60, headers=auth_headers()) as http:
            while time.monotonic() < stop_at:
                endpoint, query = next(pairs)
                started = time.perf_counter()
                try:
                    response = http.post(f"/{endpoint}/run", json={"query": query, "limit": limit})
                    ok, detail = response.status_code == 200, f"HTTP {response.status_code}: {response.text[:200]}"
                except httpx.HTTPError as error:
                    ok, detail = False, repr(error)
                elapsed = time.perf_counter() - started
                with lock:
                    if ok:
                        stats[endpoint]["latencies"].append(elapsed)
                    else:
                        stats[endpoint]["errors"] += 1
                        stats[endpoint]["first_error"] = stats[endpoint]["first_error"] or detail

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return stats


def report(stats: dict[str, dict], seconds: float) -> str:
    """Requests per second, p50/p95/p99 latency (ms) and errors, per endpoint and overall."""
    rows = [f"{'endpoint':<10} {'requests':>8} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>6}"]
    everything: list[float] = []
    errors = 0
    for name, entry in [*stats.items(), ("all", None)]:
        if entry is None:
            latencies, count_errors = everything, errors
        else:
            latencies, count_errors = entry["latencies"], entry["errors"]
            everything += latencies
            errors += count_errors
        ms = [v * 1000 for v in latencies]
        rows.append(
            f"{name:<10} {len(ms):>8} {len(ms) / seconds:>7.1f} {nearest_rank(ms, 50):>8.1f} "
            f"{nearest_rank(ms, 95):>8.1f} {nearest_rank(ms, 99):>8.1f} {count_errors:>6}"
        )
    for name, entry in stats.items():
        if entry["first_error"]:
            rows.append(f"first {name} error: {entry['first_error']}")
    if everything:
        rows.append(f"mean latency {statistics.mean(everything) * 1000:.1f} ms")
    return "\n".join(rows)


def table_rows(stats: dict[str, dict], seconds: float, instances: int | str, clients: int) -> list[dict[str, str]]:
    """One markdown row per endpoint and one for all of them."""
    rows, everything, errors = [], [], 0
    for name, entry in [*stats.items(), ("all", None)]:
        if entry is None:
            latencies, count = everything, errors
        else:
            latencies, count = entry["latencies"], entry["errors"]
            everything, errors = everything + latencies, errors + count
        ms = [v * 1000 for v in latencies]
        rows.append(
            {
                "instances": str(instances),
                "clients": str(clients),
                "endpoint": name,
                "requests": str(len(ms)),
                "req/s": f"{len(ms) / seconds:.1f}",
                "p50 ms": f"{nearest_rank(ms, 50):.1f}",
                "p95 ms": f"{nearest_rank(ms, 95):.1f}",
                "p99 ms": f"{nearest_rank(ms, 99):.1f}",
                "errors": str(count),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m eval.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:1416", help="a running server (loopback only)")
    parser.add_argument("--data-dir", type=Path, help="start a server on 127.0.0.1 against this data dir instead")
    parser.add_argument(
        "--clients", type=int, action="append", help="concurrent clients, 1 to 64 (repeatable; default 4)"
    )
    parser.add_argument(
        "--instances",
        type=int,
        action="append",
        help="with --data-dir: warmed instances of each graph in the server (repeatable; default: the configuration's)",
    )
    parser.add_argument("--seconds", type=float, default=20, help="duration of each run (1 to 600)")
    parser.add_argument(
        "--endpoint", action="append", choices=["query", "search", "vsearch"], help="default: query and search"
    )
    parser.add_argument("--limit", type=int, default=10, help="results per request")
    parser.add_argument("--dataset", type=Path, default=None, help="send this BEIR folder's queries (queries.jsonl)")
    args = parser.parse_args(argv)
    clients_list = args.clients or [4]
    if not all(1 <= c <= 64 for c in clients_list) or not 1 <= args.seconds <= 600:
        parser.error("--clients must be 1 to 64 and --seconds 1 to 600")
    if args.instances and not args.data_dir:
        parser.error("--instances needs --data-dir (the benchmark starts the servers)")
    if not args.data_dir and urlparse(args.url).hostname not in LOOPBACK:
        parser.error(f"{args.url} is not a loopback address; this benchmark only loads this machine")
    endpoints = args.endpoint or ["query", "search"]
    queries = read_queries(args.dataset)
    rows: list[dict[str, str]] = []
    failed = False
    for instances in args.instances or [None]:
        proc, url = start_serve(args.data_dir, instances=instances) if args.data_dir else (None, args.url)
        try:
            httpx.post(f"{url}/{endpoints[0]}/run", json={"query": "warm up"}, headers=auth_headers(), timeout=60)
            for clients in clients_list:
                label = "configured" if instances is None else instances
                print(
                    f"{clients} clients for {args.seconds:g} s against {url} ({', '.join(endpoints)}; instances {label})"
                )
                stats = run_load(url, clients, args.seconds, endpoints, args.limit, queries)
                print(report(stats, args.seconds), flush=True)
                rows += table_rows(stats, args.seconds, label, clients)
                failed = failed or bool(sum(e["errors"] for e in stats.values()))
        finally:
            if proc is not None:
                stop(proc)
    if len(rows) > 3:
        print()
        print(markdown_table(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
