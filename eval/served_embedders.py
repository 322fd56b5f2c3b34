"""Index throughput and query latency with the dense model served over HTTP, next to fastembed in-process.

    python -m eval.served_embedders --repeat 3

Starts the tests' embedding server (`python -m tests.embedding_server`: the offline MiniLM behind OpenAI's `/v1/embeddings` and Ollama's `/api/embed`)
on 127.0.0.1, then for each provider (fastembed in-process, openai, ollama; in turns, `--repeat` rounds)
indexes the bundled notes (needle/demo/notes) into a fresh folder and runs the golden queries of
eval/golden/demo.yml through `vsearch` and `query`. Prints texts embedded per second of the whole index run
and p50/p95 query milliseconds (medians over rounds), and writes eval/results/served-embedders.{json,png}.
The server shares the machine with Needle here; on a GPU box the served numbers move with the GPU.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from eval.corpus_index import needle_with_collection, scratch
from eval.demo_data import DEMO_GOLDEN, DEMO_NOTES, REPO
from eval.result_files import RESULTS, pyplot, save_figure, write_json
from eval.servers import stop
from needle.core.requests import IndexRequest, SearchRequest
from needle.evaluation.golden import load_golden

PROVIDERS = ("fastembed", "openai", "ollama")
MODEL = "minilm"


def start_server(port: int) -> subprocess.Popen:
    """The tests' embedding server (tests/embedding_server.py) as a process, once it answers."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.embedding_server", "--port", str(port), "--model", MODEL],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).close()
            return process
        except OSError:
            time.sleep(0.2)
    stop(process)
    raise RuntimeError("the embedding server did not start")


def provider_env(provider: str, root: str) -> dict[str, str]:
    """The settings that send the dense model's work to `provider` at `root` (none for fastembed in-process)."""
    if provider == "fastembed":
        return {}
    return {
        "NEEDLE_EMBEDDING__PROVIDER": provider,
        "NEEDLE_EMBEDDING__MODEL": MODEL,
        "NEEDLE_EMBEDDING__URL": f"{root}/v1" if provider == "openai" else root,
    }


def one_round(provider: str, root: str, queries: list[str]) -> dict[str, Any]:
    """Index the demo notes afresh with one provider, then time the queries."""
    with scratch(f"needle-served-{provider}-") as data_dir:
        needle = needle_with_collection(data_dir, DEMO_NOTES, **provider_env(provider, root))
        report = needle.index(IndexRequest())
        out: dict[str, Any] = {
            "texts": report.texts_embedded,
            "index_seconds": report.seconds,
            "texts_per_second": report.texts_embedded / report.seconds,
        }
        for pipeline in ("vsearch", "query"):
            needle.search(SearchRequest(query=queries[0]), pipeline=pipeline)  # loads and warms the graph
            times = []
            for query in queries:
                started = time.perf_counter()
                needle.search(SearchRequest(query=query), pipeline=pipeline)
                times.append((time.perf_counter() - started) * 1000)
            times.sort()
            out[f"{pipeline}_p50_ms"] = statistics.median(times)
            out[f"{pipeline}_p95_ms"] = times[min(len(times) - 1, int(0.95 * len(times)))]
        needle.close()
        return out


def plot(summary: dict[str, dict[str, float]], path: Path) -> None:
    fig, (left, right) = pyplot().subplots(1, 2, figsize=(9, 3.4))
    names = list(summary)
    left.bar(names, [summary[n]["texts_per_second"] for n in names], color=["#4c72b0", "#dd8452", "#55a868"])
    left.set_title("index run: texts embedded / s")
    width = 0.38
    xs = range(len(names))
    right.bar([x - width / 2 for x in xs], [summary[n]["vsearch_p50_ms"] for n in names], width, label="vsearch")
    right.bar([x + width / 2 for x in xs], [summary[n]["query_p50_ms"] for n in names], width, label="query")
    right.set_xticks(list(xs), names)
    right.set_title("query p50 ms")
    right.legend()
    fig.suptitle(
        "Dense model in-process (fastembed) vs served over HTTP on 127.0.0.1 (shared 2-core machine)", fontsize=9
    )
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.served_embedders",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds per provider (taken in turns)")
    parser.add_argument("--port", type=int, default=18189)
    parser.add_argument("--queries", type=int, default=30, help="golden queries timed per graph")
    parser.add_argument("--out", type=Path, default=RESULTS / "served-embedders")
    args = parser.parse_args(argv)
    queries = [q.query for q in load_golden(DEMO_GOLDEN, check_files=False).queries][: args.queries]
    server = start_server(args.port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server on the way out
    root = f"http://127.0.0.1:{args.port}"
    rounds: dict[str, list[dict[str, Any]]] = {p: [] for p in PROVIDERS}
    try:
        for round_number in range(args.repeat):
            for provider in PROVIDERS:
                result = one_round(provider, root, queries)
                rounds[provider].append(result)
                print(
                    f"round {round_number + 1} {provider}: {json.dumps({k: round(v, 1) for k, v in result.items()})}",
                    flush=True,
                )
    finally:
        stop(server, timeout=10)
    keys = ("texts_per_second", "index_seconds", "vsearch_p50_ms", "vsearch_p95_ms", "query_p50_ms", "query_p95_ms")
    summary = {p: {k: statistics.median(r[k] for r in rounds[p]) for k in keys} for p in PROVIDERS}
    texts = rounds["fastembed"][0]["texts"]
    print(f"\nmedians of {args.repeat} rounds, {texts} texts (needle/demo/notes), {len(queries)} queries per graph")
    print(f"{'provider':<10} {'texts/s':>8} {'index s':>8} {'vsearch p50':>12} {'p95':>7} {'query p50':>10} {'p95':>7}")
    for provider, row in summary.items():
        print(
            f"{provider:<10} {row['texts_per_second']:>8.1f} {row['index_seconds']:>8.1f} {row['vsearch_p50_ms']:>12.1f} "
            f"{row['vsearch_p95_ms']:>7.1f} {row['query_p50_ms']:>10.1f} {row['query_p95_ms']:>7.1f}"
        )
    write_json(
        args.out.with_suffix(".json"), {"texts": texts, "queries": len(queries), "summary": summary, "rounds": rounds}
    )
    plot(summary, args.out.with_suffix(".png"))
    print(f"\nwrote {args.out.with_suffix('.json')} and {args.out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
