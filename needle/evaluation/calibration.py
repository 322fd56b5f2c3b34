"""How well a graph's confidence tells a relevant top result from a wrong one, and the fit of its weights.

Each query runs through the graph as a user's would (top 10, explain on); its row keeps the confidence,
the label, the signals the confidence was computed from, and whether the top result is relevant: judged in
the qrels (BEIR), expected (golden set), or never (off-topic questions about subjects absent from the
corpus, see `python -m eval.offtopic`). Reported per data source and graph: ROC AUC of the confidence for "the top
result is relevant", expected calibration error, Brier score, how often the label is PASS and how often a
PASS is right, and for the off-topic questions the false-confidence rate (the share labelled PASS, i.e. at
or above the graph's threshold). A reliability diagram (confidence bins against the share relevant) goes to
a PNG. With `fit`, the rows' signals fit each graph's logistic weights (`ConfidenceScorer`), which `--write`
puts into the graph's YAML.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from haystack_integrations.components.classifiers.needle.confidence_scorer import FEATURES
from needle.core.requests import SearchRequest
from needle.runtime.loader import pipeline_path, read_graph

# Signals no evaluation query exercises: a filter engaged. Its weight is left as the YAML sets it.
UNFITTED = ("filter",)


@dataclass(frozen=True)
class Case:
    """One query and what counts as a relevant top result (nothing, for an off-topic question)."""

    id: str
    query: str
    source: str
    relevant: frozenset[str]


def offtopic_questions(path: Path, split: str) -> list[str]:
    """
    The off-topic questions of one split of a file written by `python -m eval.offtopic`.

    :raises ValueError: When the file has no such split or it is not a list of questions.
    """
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    questions = data.get(split)
    if not isinstance(questions, list) or not all(isinstance(q, str) and q.strip() for q in questions):
        raise ValueError(f"{path} has no list of questions under '{split}'")
    return questions


def offtopic_cases(questions: Sequence[str], source: str) -> list[Case]:
    """Off-topic questions as cases: no result is relevant."""
    return [Case(f"offtopic-{i}", q, source, frozenset()) for i, q in enumerate(questions)]


def run_cases(
    needle: Any, cases: Sequence[Case], pipeline: str, key: Any, progress: bool = False
) -> list[dict[str, Any]]:
    """
    Run each case through a graph and record its confidence, label, signals and the top result's relevance.

    :param needle: A `Needle` bound to the cases' index.
    :param cases: The queries.
    :param pipeline: A graph name or path.
    :param key: Maps a `Hit` to the id the cases' `relevant` sets use (a BEIR id, a golden path).
    :returns: One row per case.
    """
    from tqdm import tqdm

    needle.pipeline(pipeline)
    rows = []
    for case in tqdm(
        cases, desc=f"{Path(pipeline).stem} {cases[0].source if cases else ''}", unit="q", disable=not progress
    ):
        answer = needle.search(SearchRequest(query=case.query, limit=10, explain=True), pipeline)
        top = key(answer.results[0]) if answer.results else None
        rows.append(
            {
                "id": case.id,
                "source": case.source,
                "query": case.query,
                "top": top,
                "relevant": top is not None and top in case.relevant,
                "confidence": float(answer.confidence if answer.confidence is not None else 0.0),
                "label": answer.label,
                "signals": (answer.explain or {}).get("confidence") or {},
            }
        )
    return rows


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """
    The area under the ROC curve (ties count half): the chance that a random relevant row scores above a
    random other one. `None` when either class is missing.
    """
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    if not pos or not neg:
        return None
    order = np.argsort(np.asarray(scores, dtype=float), kind="mergesort")
    values = np.asarray(scores, dtype=float)[order]
    ranks = np.empty(len(values))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        ranks[i : j + 1] = (i + j) / 2 + 1
        i = j + 1
    rank_of = np.empty(len(values))
    rank_of[order] = ranks
    pos_ranks = sum(r for r, y in zip(rank_of, labels) if y)
    return float((pos_ranks - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def reliability(scores: Sequence[float], labels: Sequence[bool], bins: int = 10) -> list[dict[str, float]]:
    """Equal-width confidence bins: each bin's bounds, row count, mean confidence and share relevant (empty bins left out)."""
    out = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = [(s, y) for s, y in zip(scores, labels) if lo <= s < hi or (b == bins - 1 and s == 1.0)]
        if inside:
            out.append(
                {
                    "lo": lo,
                    "hi": hi,
                    "count": len(inside),
                    "confidence": float(np.mean([s for s, _ in inside])),
                    "relevant": float(np.mean([y for _, y in inside])),
                }
            )
    return out


def summary(rows: Sequence[dict[str, Any]], bins: int = 10) -> dict[str, Any]:
    """AUC (of the confidence, and of each signal alone), calibration error, Brier score and PASS rates of some rows."""
    scores = [r["confidence"] for r in rows]
    labels = [bool(r["relevant"]) for r in rows]
    table = reliability(scores, labels, bins)
    passed = [r for r in rows if r["label"] == "PASS"]
    seen = [f for f in FEATURES if f not in UNFITTED and any(f in r["signals"] for r in rows)]
    return {
        "queries": len(rows),
        "relevant": sum(labels),
        "auc": roc_auc(scores, labels),
        "signal_auc": {f: roc_auc([r["signals"].get(f, 0.0) for r in rows], labels) for f in seen},
        "ece": sum(b["count"] * abs(b["confidence"] - b["relevant"]) for b in table) / len(rows) if rows else None,
        "brier": float(np.mean([(s - y) ** 2 for s, y in zip(scores, labels)])) if rows else None,
        "mean_confidence": float(np.mean(scores)) if rows else None,
        "pass_rate": len(passed) / len(rows) if rows else None,
        "pass_precision": sum(r["relevant"] for r in passed) / len(passed) if passed else None,
        "reliability": table,
    }


def fitted_features(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The signals that occur in some row, in `FEATURES` order, minus the ones no evaluation exercises."""
    seen = {name for row in rows for name in row["signals"]}
    return [f for f in FEATURES if f in seen and f not in UNFITTED]


def fit_logistic(
    rows: Sequence[dict[str, Any]], features: Sequence[str], l2: float = 1.0
) -> tuple[dict[str, float], float]:
    """
    Logistic regression of "the top result is relevant" on the rows' signals (a missing signal is 0),
    by Newton's method with an L2 penalty on the weights (not the bias).

    :returns: The weights by signal and the bias, rounded to 3 places.
    :raises ValueError: When the rows hold only one class.
    """
    y = np.asarray([1.0 if r["relevant"] else 0.0 for r in rows])
    if y.min() == y.max():
        raise ValueError("cannot fit: every row is relevant, or none is")
    x = np.asarray([[float(r["signals"].get(f, 0.0)) for f in features] for r in rows])
    xb = np.hstack([np.ones((len(rows), 1)), x])
    penalty = l2 * np.eye(xb.shape[1])
    penalty[0, 0] = 0.0
    w = np.zeros(xb.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -30, 30)))
        hessian = xb.T @ (xb * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, xb.T @ (p - y) + penalty @ w)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return {f: round(float(v), 3) for f, v in zip(features, w[1:])}, round(float(w[0]), 3)


def rescore(
    rows: Sequence[dict[str, Any]], weights: dict[str, float], bias: float, threshold: float
) -> list[dict[str, Any]]:
    """The rows with confidence and label recomputed from other weights (labels past NO_RESULTS only)."""
    out = []
    for row in rows:
        if row["label"] == "NO_RESULTS":
            out.append(row)
            continue
        z = bias + sum(weights.get(name, 0.0) * value for name, value in row["signals"].items())
        confidence = 1.0 / (1.0 + math.exp(-z))
        out.append({**row, "confidence": confidence, "label": "PASS" if confidence >= threshold else "IRRELEVANT"})
    return out


def threshold_of(pipeline: str) -> float:
    """The confidence a graph's label needs to PASS (its `ResultLabeler`'s `min_confidence`)."""
    for component in read_graph(pipeline)["components"].values():
        if component.get("type", "").endswith(".ResultLabeler"):
            return float((component.get("init_parameters") or {}).get("min_confidence", 0.5))
    return 0.5


def write_weights(pipeline: str, weights: dict[str, float], bias: float) -> Path:
    """
    Put fitted weights into a graph's YAML: the `weights:` and `bias:` lines of its `ConfidenceScorer`
    (the rest of the file, comments included, is left as it is).

    :returns: The file changed.
    :raises ValueError: When the file does not define a `ConfidenceScorer` itself (an overlay inherits one).
    """
    path = pipeline_path(pipeline)
    text = path.read_text(encoding="utf-8")
    block = re.search(r"(type: [\w.]+\.ConfidenceScorer\n(?:\s+.*\n)*?)(\s+)weights: .*\n\s+bias: .*\n", text)
    if block is None:
        raise ValueError(f"{path} defines no ConfidenceScorer with weights and bias lines")
    indent = block.group(2)
    inline = ", ".join(f"{name}: {value}" for name, value in weights.items())
    replacement = f"{block.group(1)}{indent}weights: {{{inline}}}\n{indent.lstrip(chr(10))}bias: {bias}\n"
    path.write_text(text[: block.start()] + replacement + text[block.end() :], encoding="utf-8")
    return path


def format_report(report: dict[str, Any]) -> str:
    """A markdown summary: per graph and data source, the calibration metrics; then fitted weights, if any."""
    lines = [
        f"Confidence calibration ({', '.join(report['data'])})",
        "",
        "| graph | data | queries | relevant top | ROC AUC | ECE | Brier | PASS rate | PASS precision |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def cell(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    for name, result in report["pipelines"].items():
        for source, s in result["summaries"].items():
            lines.append(
                f"| {Path(name).stem} | {source} | {s['queries']} | {s['relevant']} | {cell(s['auc'])} | {cell(s['ece'])} | "
                f"{cell(s['brier'])} | {cell(s['pass_rate'])} | {cell(s['pass_precision'])} |"
            )
    signals = [
        (n, src, s["signal_auc"])
        for n, res in report["pipelines"].items()
        for src, s in res["summaries"].items()
        if s["auc"] is not None and s["signal_auc"]
    ]
    if signals:
        names = [f for f in FEATURES if f not in UNFITTED]
        lines += [
            "",
            "ROC AUC of each signal alone (below 0.5: the signal counts against; the confidence combines them):",
            "",
            "| graph | data | " + " | ".join(names) + " |",
            "|---|---|" + "---|" * len(names),
        ]
        for name, source, aucs in signals:
            lines.append(f"| {Path(name).stem} | {source} | " + " | ".join(cell(aucs.get(f)) for f in names) + " |")
    offtopic = [(n, src, r) for n, res in report["pipelines"].items() for src, r in res["false_confidence"].items()]
    if offtopic:
        lines += [
            "",
            "| graph | off-topic questions on | questions | PASS (confidence ≥ threshold) | rate | max confidence |",
            "|---|---|---|---|---|---|",
        ]
        for name, source, r in offtopic:
            lines.append(
                f"| {Path(name).stem} | {source} | {r['questions']} | {r['passed']} | {r['rate']:.3f} | "
                f"{r['max_confidence']:.3f} |"
            )
    fits = [(n, r["fit"]) for n, r in report["pipelines"].items() if r.get("fit")]
    if fits:
        lines += ["", "Fitted weights (logistic regression on these rows):", ""]
        for name, fit in fits:
            lines.append(f"- {Path(name).stem}: bias {fit['bias']}, weights {fit['weights']}")
    return "\n".join(lines)


def plot_reliability(report: dict[str, Any], path: Path) -> Path:
    """
    A reliability diagram per graph (confidence bins against the share of relevant top results, with the
    diagonal a calibrated confidence would follow) and, below, the confidence histograms.

    :raises ImportError: Without matplotlib.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report["pipelines"])
    fig, axes = plt.subplots(2, len(names), figsize=(4.2 * len(names), 7.5), squeeze=False)
    for column, name in enumerate(names):
        result = report["pipelines"][name]
        top, bottom = axes[0][column], axes[1][column]
        top.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
        for source, s in result["summaries"].items():
            table = s["reliability"]
            if not table or source.startswith("off-topic"):  # all wrong by construction: the histogram shows them
                continue
            top.plot(
                [b["confidence"] for b in table],
                [b["relevant"] for b in table],
                marker="o",
                label=f"{source} (AUC {s['auc']:.2f})" if s["auc"] is not None else source,
            )
        top.axvline(result["threshold"], color="red", linewidth=0.8, linestyle="--")
        top.set_title(Path(name).stem)
        top.set_xlabel("confidence")
        top.set_ylabel("share of top results relevant")
        top.set_xlim(0, 1)
        top.set_ylim(0, 1)
        top.legend(fontsize=7, loc="upper left")
        rows = result["rows"]
        bottom.hist(
            [[r["confidence"] for r in rows if r["relevant"]], [r["confidence"] for r in rows if not r["relevant"]]],
            bins=20,
            range=(0, 1),
            label=["top result relevant", "not relevant / off-topic"],
            stacked=False,
        )
        bottom.axvline(result["threshold"], color="red", linewidth=0.8, linestyle="--")
        bottom.set_xlabel("confidence")
        bottom.set_ylabel("queries")
        bottom.legend(fontsize=7)
    fig.suptitle("Confidence reliability (" + ", ".join(report["data"]) + ")", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def evaluate(
    runs: Sequence[tuple[Any, Sequence[Case], Any]],
    pipelines: Sequence[str],
    fit: bool = False,
    l2: float = 1.0,
    bins: int = 10,
    progress: bool = False,
) -> dict[str, Any]:
    """
    Run every case set through every graph; summarise per data source, and per index with its off-topic
    questions; optionally fit each graph's weights on all the rows.

    :param runs: (a `Needle` bound to an index, the cases on it, the key of a hit) per data source.
    :param pipelines: Graph names or paths.
    :param fit: Fit weights (reported; the summaries then use the fitted weights).
    :param l2: The fit's L2 penalty.
    :returns: The report: per graph its rows, summaries, false-confidence rates, threshold and fit.
    """
    report: dict[str, Any] = {
        "kind": "calibration",
        "data": sorted({c.source for _, cases, _ in runs for c in cases}),
        "pipelines": {},
    }
    for pipeline in pipelines:
        rows: list[dict[str, Any]] = []
        for needle, cases, key in runs:
            rows += run_cases(needle, cases, pipeline, key, progress)
        threshold = threshold_of(pipeline)
        result: dict[str, Any] = {"threshold": threshold}
        if fit:
            features = fitted_features(rows)
            weights, bias = fit_logistic(rows, features, l2)
            weights.update(dict.fromkeys(UNFITTED, 0.0))
            result["fit"] = {"weights": weights, "bias": bias, "features": features, "l2": l2}
            rows = rescore(rows, weights, bias, threshold)
        result["rows"] = rows
        sources = list(dict.fromkeys(r["source"] for r in rows))
        result["summaries"] = {source: summary([r for r in rows if r["source"] == source], bins) for source in sources}
        on_topic = [s for s in sources if not s.startswith("off-topic")]
        for source in on_topic:
            index = source.split(" ")[0]
            mixed = [r for r in rows if r["source"] in (source, f"off-topic on {index}")]
            if len(mixed) > len([r for r in rows if r["source"] == source]):
                result["summaries"][f"{source} + off-topic"] = summary(mixed, bins)
        result["false_confidence"] = {}
        for source in sources:
            if source.startswith("off-topic"):
                off = [r for r in rows if r["source"] == source]
                passed = sum(1 for r in off if r["label"] == "PASS")
                result["false_confidence"][source.removeprefix("off-topic on ")] = {
                    "questions": len(off),
                    "passed": passed,
                    "rate": passed / len(off),
                    "max_confidence": max(r["confidence"] for r in off),
                }
        report["pipelines"][pipeline] = result
    return report


__all__ = [
    "Case",
    "evaluate",
    "fit_logistic",
    "format_report",
    "offtopic_cases",
    "offtopic_questions",
    "plot_reliability",
    "reliability",
    "roc_auc",
    "summary",
    "write_weights",
]
