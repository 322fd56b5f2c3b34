"""What feeding and reading a graph through its contract costs per query, beside the query itself.

    python eval/contract_overhead.py [--repeat 20]

Indexes the demo notes into a temporary folder, then for each search graph prints the median time of a
whole `Needle.search` and of the contract's own work in it (`feed` of the request into run data, `read` of
the named outputs, the stages to include), measured on the same request and the same run's output. The
machine may be shared: every number is a median.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from needle.core.settings import load_settings
from needle.facade.api import Needle, reported_stages
from needle.runtime.contract import GraphContract

ROOT = Path(__file__).resolve().parent.parent

QUERIES = ("sourdough starter feeding", "kubernetes pod memory limit", "restic backup to s3", "vim macros")


def _median_us(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def _measure(needle: Needle, graph: str, repeat: int) -> tuple[float, float]:
    """Median µs of a whole search, and of the contract's feed, stages and read on the same request and output."""
    pipeline = needle.pipeline(graph)
    contract = GraphContract.of(pipeline, graph)
    request = needle._request(QUERIES[0], None, None, None, None, None, False)
    values = {**request, **({"languages": needle.query_languages()} if contract.accepts("languages") else {})}
    output = pipeline.run(contract.feed(values), include_outputs_from=reported_stages(pipeline, contract))
    search_us = statistics.median(_median_us(lambda q=q: needle.search(q, pipeline=graph), repeat) for q in QUERIES)

    def mapping() -> None:
        for _ in range(100):
            contract.feed(values, {})
            reported_stages(pipeline, contract)
            contract.read(output)

    return search_us, _median_us(mapping, repeat) / 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        needle = Needle(load_settings(env={"NEEDLE_DATA_DIR": folder}))
        needle.collections.add(ROOT / "needle" / "demo" / "notes", "notes")
        needle.index()
        print("| graph | search median (ms) | contract feed + read + stages median (µs) | share |")
        print("|---|---|---|---|")
        for graph in ("search", "vsearch", "query"):
            search_us, mapped_us = _measure(needle, graph, args.repeat)
            print(f"| {graph} | {search_us / 1000:.1f} | {mapped_us:.1f} | {mapped_us / search_us:.4%} |")
        needle.close()


if __name__ == "__main__":
    main()
