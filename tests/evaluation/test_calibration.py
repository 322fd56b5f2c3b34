"""The calibration measures, the weight fit and the off-topic question set."""

import math
import random
from pathlib import Path

import pytest
import yaml

from needle.evaluation import calibration
from needle.runtime.loader import read_graph

REPO = Path(__file__).resolve().parents[2]


def offtopic_module():
    """The generator of the off-topic questions (`python -m eval.offtopic`)."""
    from eval import offtopic

    return offtopic


def row(confidence: float, relevant: bool, label: str = "PASS", source: str = "s", **signals: float) -> dict:
    return {"confidence": confidence, "relevant": relevant, "label": label, "source": source, "signals": signals}


class TestMeasures:
    def test_auc_counts_ordered_pairs_and_ties_half(self):
        assert calibration.roc_auc([0.9, 0.8, 0.2, 0.1], [True, True, False, False]) == 1.0
        assert calibration.roc_auc([0.1, 0.2, 0.8, 0.9], [True, True, False, False]) == 0.0
        assert calibration.roc_auc([0.5, 0.5], [True, False]) == 0.5
        assert calibration.roc_auc([0.9, 0.3, 0.5], [True, True, False]) == 0.5
        assert calibration.roc_auc([0.9], [True]) is None

    def test_reliability_bins_hold_mean_confidence_and_share_relevant(self):
        table = calibration.reliability([0.05, 0.15, 0.95, 1.0], [False, True, True, True], bins=10)
        assert [(b["lo"], b["count"]) for b in table] == [(0.0, 1), (0.1, 1), (0.9, 2)]
        assert table[2]["confidence"] == pytest.approx(0.975) and table[2]["relevant"] == 1.0

    def test_summary_of_a_perfectly_calibrated_set(self):
        rows = [row(1.0, True), row(0.0, False, label="IRRELEVANT")]
        s = calibration.summary(rows)
        assert (s["auc"], s["ece"], s["brier"], s["pass_rate"], s["pass_precision"]) == (1.0, 0.0, 0.0, 0.5, 1.0)

    def test_fit_recovers_the_weights_that_made_the_labels(self):
        rng = random.Random(0)
        rows = []
        for _ in range(4000):
            x = {"cosine": rng.random(), "bm25": rng.random()}
            p = 1 / (1 + math.exp(-(-3.0 + 4.0 * x["cosine"] + 2.0 * x["bm25"])))
            rows.append(row(0.0, rng.random() < p, **x))
        weights, bias = calibration.fit_logistic(rows, ["cosine", "bm25"], l2=0.0)
        assert weights["cosine"] == pytest.approx(4.0, abs=0.4) and weights["bm25"] == pytest.approx(2.0, abs=0.4)
        assert bias == pytest.approx(-3.0, abs=0.4)

    def test_fit_needs_both_classes(self):
        with pytest.raises(ValueError, match="cannot fit"):
            calibration.fit_logistic([row(0.5, True, cosine=0.5)], ["cosine"])

    def test_features_seen_leave_out_the_unfitted_filter(self):
        assert calibration.fitted_features([row(0, True, margin=0.1, cosine=0.2, filter=0.0)]) == ["cosine", "margin"]

    def test_rescoring_relabels_by_the_threshold_but_keeps_no_results(self):
        rows = [row(0.9, True, cosine=1.0), row(0.0, False, label="NO_RESULTS")]
        out = calibration.rescore(rows, {"cosine": -10.0}, 0.0, threshold=0.5)
        assert out[0]["label"] == "IRRELEVANT" and out[0]["confidence"] < 0.01 and out[1] == rows[1]


class TestGraphs:
    @pytest.mark.parametrize("graph", ["search", "vsearch", "query", "search-native", "query-plain"])
    def test_every_search_graph_scores_a_confidence_that_its_label_passes_on(self, graph):
        components = read_graph(graph)["components"]
        assert (
            components["confidence"]["type"]
            == "haystack_integrations.components.classifiers.needle.confidence_scorer.ConfidenceScorer"
        )
        assert components["confidence"]["init_parameters"]["weights"]
        assert calibration.threshold_of(graph) == components["label"]["init_parameters"]["min_confidence"] == 0.85

    def test_write_weights_changes_only_the_two_lines(self, tmp_path):
        text = (REPO / "pipelines" / "query.yml").read_text()
        path = tmp_path / "g.yml"
        path.write_text(text)
        calibration.write_weights(str(path), {"cosine": 1.5, "filter": 0.0}, -2.25)
        changed = [(a, b) for a, b in zip(text.splitlines(), path.read_text().splitlines()) if a != b]
        assert [b.strip() for _, b in changed] == ["weights: {cosine: 1.5, filter: 0.0}", "bias: -2.25"]
        scorer = yaml.safe_load(path.read_text())["components"]["confidence"]["init_parameters"]
        assert scorer["weights"] == {"cosine": 1.5, "filter": 0.0} and scorer["bias"] == -2.25

    def test_write_weights_refuses_a_graph_without_a_scorer(self, tmp_path):
        path = tmp_path / "g.yml"
        path.write_text("components: {}\n")
        with pytest.raises(ValueError, match="no ConfidenceScorer"):
            calibration.write_weights(str(path), {}, 0.0)


class TestOfftopic:
    def test_the_committed_file_is_what_the_generator_writes(self):
        module = offtopic_module()
        committed = yaml.safe_load((REPO / "eval" / "golden" / "offtopic.yml").read_text())
        assert {k: committed[k] for k in ("train", "test")} == module.generate()
        assert committed["seed"] == module.SEED

    def test_splits_have_a_hundred_distinct_questions_and_share_no_subject(self):
        module = offtopic_module()
        questions = module.generate()
        assert [len(set(questions[s])) for s in ("train", "test")] == [100, 100]

        def subjects(split):
            return {s for s in module.SUBJECTS if any(s in q for q in questions[split])}

        assert not subjects("train") & subjects("test")

    def test_no_subject_names_a_word_of_the_demo_notes(self):
        assert offtopic_module().check([REPO / "needle" / "demo" / "notes"]) == []

    def test_loading_a_split(self):
        path = REPO / "eval" / "golden" / "offtopic.yml"
        assert len(calibration.offtopic_questions(path, "test")) == 100
        with pytest.raises(ValueError, match="no list of questions under 'dev'"):
            calibration.offtopic_questions(path, "dev")


@pytest.mark.integration
def test_a_calibration_run_on_the_demo_index(demo_needle, golden_set, tmp_path):
    cases = [calibration.Case(q.id, q.query, "demo", frozenset(q.expected)) for q in golden_set.queries[:8]]
    questions = calibration.offtopic_questions(REPO / "eval" / "golden" / "offtopic.yml", "test")[:8]
    runs = [
        (demo_needle, cases, lambda h: h.path),
        (demo_needle, calibration.offtopic_cases(questions, "off-topic on demo"), lambda h: h.path),
    ]
    report = calibration.evaluate(runs, ["query"], fit=False)
    result = report["pipelines"]["query"]
    assert set(result["summaries"]) == {"demo", "off-topic on demo", "demo + off-topic"}
    assert result["summaries"]["demo"]["relevant"] >= 6
    assert result["false_confidence"]["demo"]["questions"] == 8
    assert all((r["label"] == "PASS") == (r["confidence"] >= 0.5) for r in result["rows"])
    png = calibration.plot_reliability(report, tmp_path / "reliability.png")
    assert png.read_bytes().startswith(b"\x89PNG")
    assert "| query | demo + off-topic |" in calibration.format_report(report)
