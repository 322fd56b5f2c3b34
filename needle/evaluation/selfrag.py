"""Self-RAG measured: each golden question answered with the retry loop off, then on; coverage before and after.

Every question of a golden file runs through an answer graph twice with the configured LLM: once with
`retry` off (the first answer and its claim coverage) and once on (the answer after at most the retry
budget). With a deterministic generator (temperature 0) the first round of the second run is the first run,
so the two coverages are the coverage before and after the retry. Reported: per question the coverages,
the retries, the labels, the confidences and the seconds; overall the mean coverage off and on (over the
questions whose answers make claims), how many questions were retried, improved or got worse.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from needle.core.requests import AnswerRequest
from needle.evaluation import metrics


def _answer(
    needle: Any, question: str, pipeline: str, contexts: int, retry: bool, overrides: dict[str, Any]
) -> dict[str, Any]:
    started = time.perf_counter()
    answer = needle.answer(
        AnswerRequest(question=question, limit=contexts, retry=retry, set=overrides or None), pipeline
    )
    return {
        "coverage": answer.coverage,
        "retries": answer.retries,
        "label": answer.label,
        "confidence": answer.confidence,
        "uncovered": answer.uncovered_claims,
        "chunks": len(answer.results),
        "cited": len(answer.cited),
        "seconds": time.perf_counter() - started,
        "answer": answer.answer,
        "warnings": answer.warnings,
    }


def evaluate(
    needle: Any,
    queries: Sequence[Any],
    pipeline: str = "rag",
    contexts: int = 3,
    overrides: dict[str, Any] | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """
    Answer each question with the retry loop off and on.

    :param needle: A `Needle` bound to the golden corpus's index, its `llm:` pointing at a server.
    :param queries: Golden queries.
    :param pipeline: An answer graph with a `retry` stage.
    :param contexts: Chunks given to the LLM.
    :param overrides: Graph overrides for both runs (e.g. `generate.generation_kwargs.max_tokens`).
    :returns: The report: rows per question and the summary.
    :raises LLMError: When the LLM cannot be reached.
    """
    from tqdm import tqdm

    rows = []
    for q in tqdm(queries, desc="answers off/on", unit="q", disable=not progress):
        off = _answer(needle, q.query, pipeline, contexts, False, dict(overrides or {}))
        on = _answer(needle, q.query, pipeline, contexts, True, dict(overrides or {}))
        rows.append({"id": q.id, "question": q.query, "off": off, "on": on})
    claimed = [r for r in rows if r["off"]["coverage"] is not None and r["on"]["coverage"] is not None]
    summary = {
        "questions": len(rows),
        "with_claims": len(claimed),
        "coverage_off": metrics.mean([r["off"]["coverage"] for r in claimed]) if claimed else None,
        "coverage_on": metrics.mean([r["on"]["coverage"] for r in claimed]) if claimed else None,
        "retried": sum(1 for r in rows if r["on"]["retries"]),
        "improved": sum(1 for r in claimed if r["on"]["coverage"] > r["off"]["coverage"]),
        "worse": sum(1 for r in claimed if r["on"]["coverage"] < r["off"]["coverage"]),
        "pass_off": sum(1 for r in rows if r["off"]["label"] == "PASS"),
        "pass_on": sum(1 for r in rows if r["on"]["label"] == "PASS"),
        "seconds_off": metrics.mean([r["off"]["seconds"] for r in rows]) if rows else None,
        "seconds_on": metrics.mean([r["on"]["seconds"] for r in rows]) if rows else None,
    }
    return {
        "kind": "selfrag",
        "pipeline": pipeline,
        "contexts": contexts,
        "overrides": dict(overrides or {}),
        "summary": summary,
        "rows": rows,
    }


def format_report(report: dict[str, Any], model: str = "") -> str:
    """A markdown table per question, then the summary."""

    def cell(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    s = report["summary"]
    lines = [
        f"Self-RAG on {s['questions']} questions ({report['pipeline']}, {report['contexts']} chunks{', ' + model if model else ''})",
        "",
        "| question | coverage off | coverage on | retries | label off → on | confidence off → on | s off | s on |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        off, on = r["off"], r["on"]
        lines.append(
            f"| {r['id']} | {cell(off['coverage'])} | {cell(on['coverage'])} | {on['retries']} | {off['label']} → {on['label']} | "
            f"{cell(off['confidence'])} → {cell(on['confidence'])} | {off['seconds']:.1f} | {on['seconds']:.1f} |"
        )
    lines += [
        "",
        f"mean coverage {cell(s['coverage_off'])} → {cell(s['coverage_on'])} over the {s['with_claims']} answers that make "
        f"claims; {s['retried']} retried, {s['improved']} improved, {s['worse']} worse; PASS {s['pass_off']} → {s['pass_on']}; "
        f"mean seconds {cell(s['seconds_off'])} → {cell(s['seconds_on'])}",
    ]
    return "\n".join(lines)


__all__ = ["evaluate", "format_report"]
