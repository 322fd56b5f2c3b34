"""Load benchmark: N concurrent clients for T seconds against the `query` and `search` endpoints.

Talks to a running `needle serve` on this machine, or starts one on 127.0.0.1 against `--data-dir` and
stops it afterwards. Prints requests per second, p50/p95/p99 latency and errors, per endpoint and overall.
Bounded: at most 64 clients and 600 seconds, loopback addresses only.

    python eval/load.py --clients 4 --seconds 20                # against http://127.0.0.1:1416
    python eval/load.py --data-dir .demo --seconds 10           # starts its own server
"""

from __future__ import annotations

import argparse
import itertools
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import httpx

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
QUERIES = [
    "why does my pod keep getting killed",
    "certbot renew",
    "sqlite write-ahead log concurrent readers",
    "git rebase onto another branch",
    "backing up my laptop to an encrypted repository",
    "postgres logical replication slot",
    "ssh jump host",
    "sourdough starter feeding",
]


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(data_dir: Path, timeout: float = 300) -> tuple[subprocess.Popen, str]:
    """Start `needle serve` on 127.0.0.1 against `data_dir`; returns the process and its URL once it answers."""
    port = _free_port()
    env = {**os.environ, "NEEDLE_DATA_DIR": str(data_dir)}
    # The server logs every request: send that to a file, never to a pipe nobody reads (a full pipe
    # blocks the server mid-request).
    log = tempfile.NamedTemporaryFile(prefix="needle-load-server-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "needle.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=log,
    )
    proc.log_path = log.name  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = Path(log.name).read_text(errors="replace")[-2000:]
            raise SystemExit(f"the server exited with {proc.returncode}: {tail}")
        try:
            if httpx.get(f"{url}/status", timeout=2, headers=_auth()).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(1)
    proc.terminate()
    raise SystemExit(f"the server did not answer within {timeout:.0f} s")


def _auth() -> dict[str, str]:
    token = os.environ.get("NEEDLE_API_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


def read_queries(dataset: Path | None) -> list[str]:
    """The queries to send: a BEIR folder's `queries.jsonl`, or a few about the bundled notes."""
    if dataset is None:
        return QUERIES
    import json

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
        with httpx.Client(base_url=url, timeout=60, headers=_auth()) as http:
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
            f"{name:<10} {len(ms):>8} {len(ms) / seconds:>7.1f} {_percentile(ms, 50):>8.1f} "
            f"{_percentile(ms, 95):>8.1f} {_percentile(ms, 99):>8.1f} {count_errors:>6}"
        )
    for name, entry in stats.items():
        if entry["first_error"]:
            rows.append(f"first {name} error: {entry['first_error']}")
    if everything:
        rows.append(f"mean latency {statistics.mean(everything) * 1000:.1f} ms")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:1416", help="a running server (loopback only)")
    parser.add_argument("--data-dir", type=Path, help="start a server on 127.0.0.1 against this data dir instead")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients (1 to 64)")
    parser.add_argument("--seconds", type=float, default=20, help="duration (1 to 600)")
    parser.add_argument("--endpoint", action="append", choices=["query", "search", "vsearch"], help="default: query and search")
    parser.add_argument("--limit", type=int, default=10, help="results per request")
    parser.add_argument("--dataset", type=Path, default=None, help="send this BEIR folder's queries (queries.jsonl)")
    args = parser.parse_args(argv)
    if not 1 <= args.clients <= 64 or not 1 <= args.seconds <= 600:
        parser.error("--clients must be 1 to 64 and --seconds 1 to 600")
    proc = None
    url = args.url
    if args.data_dir:
        proc, url = start_server(args.data_dir)
    elif urlparse(url).hostname not in LOOPBACK:
        parser.error(f"{url} is not a loopback address; this benchmark only loads this machine")
    try:
        endpoints = args.endpoint or ["query", "search"]
        httpx.post(f"{url}/{endpoints[0]}/run", json={"query": "warm up"}, headers=_auth(), timeout=60)
        print(f"{args.clients} clients for {args.seconds:g} s against {url} ({', '.join(endpoints)})")
        stats = run_load(url, args.clients, args.seconds, endpoints, args.limit, read_queries(args.dataset))
        print(report(stats, args.seconds))
        return 1 if sum(e["errors"] for e in stats.values()) else 0
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    raise SystemExit(main())
