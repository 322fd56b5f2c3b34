"""What feeding and reading a graph through its contract costs per query, beside the query itself.

    python -m eval.contract_overhead [--repeat 20]

Indexes the demo notes into a temporary folder, then for each search graph prints the median time of a
whole `Needle.search` and of the contract's own work in it (`feed` of the request into run data, `read` of
the named outputs, the stages to include), measured on the same request and the same run's output. The
machine may be shared: every number is a median.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

from eval.corpus_index import needle_with_collection, scratch
from eval.demo_data import DEMO_NOTES
from eval.stopwatch import median_seconds
from needle.core.requests import IndexRequest, SearchRequest, graph_inputs
from needle.facade.api import Needle, reported_stages
from needle.runtime.contract import GraphContract

QUERIES = ("sourdough starter feeding", "kubernetes pod memory limit", "restic backup to s3", "vim macros")


def _median_us(action: Callable[[], Any], repeat: int) -> float:
    return median_seconds(action, repeat) * 1e6


def _measure(needle: Needle, graph: str, repeat: int) -> tuple[float, float]:
    """Median µs of a whole search, and of the contract's feed, stages and read on the same request and output."""
    pipeline = needle.pipeline(graph)
    contract = GraphContract.of(pipeline, graph)
    values = {
        **graph_inputs(SearchRequest(query=QUERIES[0])),
        **({"languages": needle.query_languages()} if contract.accepts("languages") else {}),
    }
    output = pipeline.run(contract.feed(values), include_outputs_from=reported_stages(pipeline, contract))
    search_us = statistics.median(
        _median_us(lambda q=q: needle.search(SearchRequest(query=q), pipeline=graph), repeat) for q in QUERIES
    )

    def mapping() -> None:
        for _ in range(100):
            contract.feed(values, {})
            reported_stages(pipeline, contract)
            contract.read(output)

    return search_us, _median_us(mapping, repeat) / 100


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.contract_overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    with scratch("needle-contract-") as folder:
        needle = needle_with_collection(folder / "data", DEMO_NOTES)
        needle.index(IndexRequest())
        print("| graph | search median (ms) | contract feed + read + stages median (µs) | share |")
        print("|---|---|---|---|")
        for graph in ("search", "vsearch", "query"):
            search_us, mapped_us = _measure(needle, graph, args.repeat)
            print(f"| {graph} | {search_us / 1000:.1f} | {mapped_us:.1f} | {mapped_us / search_us:.4%} |")
        needle.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
