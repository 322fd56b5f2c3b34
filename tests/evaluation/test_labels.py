"""The trust label's fit (`python -m eval.labels`): weights per graph, one PASS threshold, measured apart."""

from __future__ import annotations

import importlib
from pathlib import Path

import yaml

labels = importlib.import_module("eval.labels")
REPO = Path(__file__).resolve().parents[2]


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


def test_writing_puts_weights_and_threshold_into_each_graph_and_those_sharing_its_scorer(tmp_path, monkeypatch):
    import shutil

    from needle.evaluation import calibration

    for name in (*labels.GRAPHS, *labels.SHARED["query"]):
        shutil.copy(REPO / "pipelines" / f"{name}.yml", tmp_path / f"{name}.yml")
    monkeypatch.setattr(calibration, "pipeline_path", lambda name: tmp_path / f"{name}.yml")
    fitted = {
        "threshold": 0.9,
        "graphs": {g: {"weights": {"cosine": 1.25}, "bias": -0.5} for g in labels.GRAPHS},
    }
    labels.write(fitted)
    for name in (*labels.GRAPHS, *labels.SHARED["query"]):
        graph = yaml.safe_load((tmp_path / f"{name}.yml").read_text())["components"]
        assert graph["confidence"]["init_parameters"]["weights"] == {"cosine": 1.25}, name
        assert graph["confidence"]["init_parameters"]["bias"] == -0.5, name
        assert graph["label"]["init_parameters"]["min_confidence"] == 0.9, name
