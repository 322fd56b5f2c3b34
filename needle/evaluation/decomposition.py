"""Multi-part questions made of two golden questions: does the search find both parts, with and without splitting?

Pairs of golden queries whose expected notes differ are drawn with a fixed seed and joined into one question
("A, and also B"; other joiners on request). Each joined question runs through a graph with decomposition
off and on (`SearchRequest.decompose`), top 10 results; a pair counts as found when a note expected for A
and a note expected for B are both among them. Reported per joiner: both found, each part found, and the
latency, off and on.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from needle.core.requests import QueryRequest
from needle.evaluation import metrics

JOINERS = ("{a}, and also {b}", "{a}; {b}", "{a}? And {b}")


def pairs_of(queries: Sequence[Any], count: int, seed: int = 0) -> list[tuple[Any, Any]]:
    """
    `count` distinct ordered pairs of queries whose expected notes do not overlap, drawn with `seed`.

    :raises ValueError: When fewer than two queries are given.
    """
    if len(queries) < 2:
        raise ValueError("pairing needs at least two golden queries")
    candidates = [(a, b) for a in queries for b in queries if a.id != b.id and not set(a.expected) & set(b.expected)]
    rng = random.Random(seed)
    rng.shuffle(candidates)
    return candidates[:count]


def join_questions(template: str, a: str, b: str) -> str:
    """
    Two questions as one, by a joiner of `JOINERS` (`"{a}, and also {b}"`): the first loses its closing mark
    where the joiner brings its own, the second starts upper-case after a question mark.
    """
    first = (
        a.rstrip(" ?.!")
        if template.startswith("{a}?") or template.startswith("{a};") or template.startswith("{a},")
        else a
    )
    return template.format(a=first, b=b[0].upper() + b[1:] if template.startswith("{a}?") else b)


def evaluate(
    needle: Any,
    golden: Any,
    pipeline: str = "query",
    pairs: int = 60,
    seed: int = 0,
    joiners: Sequence[str] = JOINERS,
    top_k: int = 10,
    progress: bool = False,
) -> dict[str, Any]:
    """
    Run every joined pair with decomposition off and on.

    :param needle: A `Needle` bound to the golden corpus's index.
    :param golden: The golden set.
    :param pipeline: A graph with a decomposition stage.
    :param pairs: How many pairs.
    :param seed: The pairing's seed.
    :param joiners: Templates with `{a}` and `{b}`.
    :returns: The report: per joiner and switch, the share of pairs with both parts found in the top `top_k`
        and in the top 5, the first and the second part found, latency percentiles, and the rows.
    """
    from tqdm import tqdm

    drawn = pairs_of(list(golden.queries), pairs, seed)
    needle.pipeline(pipeline)
    report: dict[str, Any] = {
        "kind": "decompose",
        "golden": str(golden.path),
        "pipeline": pipeline,
        "pairs": len(drawn),
        "seed": seed,
        "top_k": top_k,
        "joiners": {},
    }
    for template in joiners:
        result: dict[str, Any] = {}
        for switch in (False, True):
            rows: list[dict[str, Any]] = []
            for a, b in tqdm(drawn, desc=f"{template} decompose={switch}", unit="q", disable=not progress):
                text = join_questions(template, a.query, b.query)
                started = time.perf_counter()
                answer = needle.search(QueryRequest(query=text, limit=top_k, decompose=switch, explain=True), pipeline)
                latency = 1000 * (time.perf_counter() - started)
                found = {h.path for h in answer.results}
                top5 = {h.path for h in answer.results[:5]}
                rows.append(
                    {
                        "query": text,
                        "a": bool(found & set(a.expected)),
                        "b": bool(found & set(b.expected)),
                        "both@5": bool(top5 & set(a.expected)) and bool(top5 & set(b.expected)),
                        "sub_questions": (answer.explain or {}).get("sub_questions") or [],
                        "latency_ms": latency,
                    }
                )
            latencies = [r["latency_ms"] for r in rows]
            result["on" if switch else "off"] = {
                "both": metrics.mean([float(r["a"] and r["b"]) for r in rows]),
                "both@5": metrics.mean([float(r["both@5"]) for r in rows]),
                "first": metrics.mean([float(r["a"]) for r in rows]),
                "second": metrics.mean([float(r["b"]) for r in rows]),
                "split": metrics.mean([float(len(r["sub_questions"]) > 1) for r in rows]),
                "latency_ms_p50": metrics.percentile(latencies, 50),
                "latency_ms_p95": metrics.percentile(latencies, 95),
                "rows": rows,
            }
        report["joiners"][template] = result
    return report


def format_report(report: dict[str, Any]) -> str:
    """A markdown table: per joiner, decomposition off and on."""
    lines = [
        f"Multi-part questions from {report['pairs']} pairs of {report['golden']} (seed {report['seed']}), "
        f"{Path(report['pipeline']).stem}, top {report['top_k']}",
        "",
        f"| joined as | decompose | split | both parts in top {report['top_k']} | both in top 5 | first found | "
        "second found | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for template, result in report["joiners"].items():
        for switch in ("off", "on"):
            r = result[switch]
            lines.append(
                f"| `{template}` | {switch} | {r['split']:.2f} | {r['both']:.3f} | {r['both@5']:.3f} | {r['first']:.3f} | "
                f"{r['second']:.3f} | "
                f"{r['latency_ms_p50']:.1f} | {r['latency_ms_p95']:.1f} |"
            )
    return "\n".join(lines)


__all__ = ["JOINERS", "evaluate", "format_report", "pairs_of"]
