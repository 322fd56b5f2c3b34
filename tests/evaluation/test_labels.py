"""The trust label's fit (`python -m eval.labels`): weights per graph, one PASS threshold, measured apart."""

from __future__ import annotations

import importlib

labels = importlib.import_module("eval.labels")


def row(graph: str, kind: str, cosine: float, relevant: bool, split: str = "train", label: str = "IRRELEVANT"):
    return {
        "graph": graph,
        "set": "demo",
        "id": "q",
        "split": split,
        "kind": kind,
        "relevant": relevant,
        "label": label,
        "confidence": 0.0,
        "signals": {"cosine": cosine},
    }


def training_rows() -> list[dict]:
    rows = []
    for graph in labels.GRAPHS:
        rows += [row(graph, "answerable", 0.6 + i / 100, True) for i in range(40)]
        rows += [row(graph, "answerable", 0.1 + i / 100, False) for i in range(40)]
        rows += [row(graph, "unanswerable", 0.2 + i / 100, False) for i in range(50)]
    return rows


def test_the_threshold_is_the_smallest_that_keeps_training_unanswerable_questions_below_pass_in_every_graph():
    fitted = labels.fit(training_rows())
    threshold = fitted["threshold"]
    assert 0.5 <= threshold <= 0.95 and round(threshold * 20) == threshold * 20
    for graph in labels.GRAPHS:
        got = fitted["graphs"][graph]
        assert got["weights"]["cosine"] > 0 and got["train_unanswerable_pass"] <= labels.MAX_TRAIN_PASS
        unanswered = [r for r in training_rows() if r["graph"] == graph and r["kind"] == "unanswerable"]
        lower = labels._passes(unanswered, got["weights"], got["bias"], threshold - 0.05)
        assert threshold == 0.5 or sum(lower) / len(lower) > labels.MAX_TRAIN_PASS


def test_measuring_counts_pass_precision_false_alarms_and_unanswerable_pass_on_test_questions_only():
    rows = [
        row("query", "answerable", 0.9, True, "test", "PASS"),
        row("query", "answerable", 0.9, False, "test", "PASS"),
        row("query", "answerable", 0.5, True, "test", "IRRELEVANT"),
        row("query", "unanswerable", 0.9, False, "test", "PASS"),
        row("query", "unanswerable", 0.2, False, "test", "IRRELEVANT"),
        row("query", "unanswerable", 0.9, False, "train", "PASS"),
    ]
    pooled = next(p for p in labels.measure(rows)["pooled"] if p["graph"] == "query")
    assert pooled["PASS precision (answered in the top 3)"] == "0.500 (1/2)"
    assert pooled["false alarms (answered, not PASS)"] == "0.500 (1/2)"
    assert pooled["unanswerable PASS"] == "0.500 (1/2)"
    irrelevant = next(r for r in labels.measure(rows)["labels"] if r["graph"] == "query" and r["label"] == "IRRELEVANT")
    assert irrelevant["answered in the top 3"] == "1.000 (1/1)"
