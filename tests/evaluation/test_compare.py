import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from needle.evaluation import compare
from needle.evaluation import golden as golden_eval
from needle.shells.cli import main

REPO = Path(__file__).resolve().parents[2]
GOLDEN_FILE = REPO / "eval" / "golden" / "demo.yml"


def hand_report(diffs: list[float]) -> dict:
    a = {f"q{i}": {"ndcg@10": 0.5, "hit@3": 0.0} for i in range(len(diffs))}
    b = {f"q{i}": {"ndcg@10": 0.5 + d, "hit@3": 1.0 if d > 0 else 0.0} for i, d in enumerate(diffs)}
    comparison = compare.compare_per_query(a, b, permutations=2000)
    latency = {"latency_ms_p50": 1.0, "latency_ms_p95": 2.0}
    return {
        "kind": "compare",
        "data": "hand-made",
        "data_name": "hand",
        "a": "search",
        "b": "mine.yml",
        **comparison,
        "latency": {"a": latency, "b": latency},
    }


def polluted_vsearch(tmp_path: Path) -> Path:
    """vsearch with a wrong query prefix: every query embedding drifts towards recipes (a real misconfiguration)."""
    data = yaml.safe_load((REPO / "pipelines" / "vsearch.yml").read_text())
    data["components"]["dense_embedder"]["init_parameters"]["prefix"] = "Recipe for pancakes, sourdough bread and dal: "
    path = tmp_path / "vsearch-polluted.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


class TestPermutationTest:
    def test_consistent_improvement_over_20_queries_is_significant(self):
        a = [0.2 + 0.01 * i for i in range(20)]
        b = [x + 0.1 + 0.005 * i for i, x in enumerate(a)]
        assert compare.permutation_test(a, b) < 0.01

    def test_symmetric_differences_are_not_significant(self):
        diffs = [0.3, -0.3, 0.1, -0.1, 0.5, -0.5, 0.2, -0.2, 0.4, -0.4] * 2
        a = [0.5] * 20
        b = [0.5 + d for d in diffs]
        assert compare.permutation_test(a, b) > 0.9

    def test_identical_scores_give_p_one(self):
        scores = [0.1, 0.7, 1.0, 0.0]
        assert compare.permutation_test(scores, scores) == 1.0

    def test_seeded_and_two_sided(self):
        a = [0.5] * 12
        b = [0.6, 0.55, 0.4, 0.7, 0.5, 0.65, 0.45, 0.6, 0.52, 0.58, 0.61, 0.49]
        p = compare.permutation_test(a, b, seed=3)
        assert p == compare.permutation_test(a, b, seed=3)
        assert p == pytest.approx(compare.permutation_test(b, a, seed=3))  # swapping A and B keeps p
        assert 0 < p < 1

    def test_never_zero_with_the_observed_assignment_counted(self):
        assert compare.permutation_test([0.0] * 20, [1.0] * 20, permutations=100) == pytest.approx(1 / 101, abs=0.03)

    def test_bad_input_raises(self):
        with pytest.raises(ValueError, match="same length"):
            compare.permutation_test([1.0], [1.0, 2.0])
        with pytest.raises(ValueError, match="must not be empty"):
            compare.permutation_test([], [])
        with pytest.raises(ValueError, match="permutations must be > 0, got 0"):
            compare.permutation_test([1.0], [2.0], permutations=0)


class TestBootstrap:
    def test_interval_brackets_the_mean(self):
        diffs = [0.1, 0.2, -0.05, 0.3, 0.0, 0.15, 0.05, 0.25]
        low, high = compare.bootstrap_ci(diffs)
        assert low < sum(diffs) / len(diffs) < high
        assert (low, high) == compare.bootstrap_ci(diffs)

    def test_constant_differences_have_a_point_interval(self):
        assert compare.bootstrap_ci([0.2] * 5) == pytest.approx((0.2, 0.2))

    def test_bad_confidence_raises(self):
        with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
            compare.bootstrap_ci([0.1], confidence=1.0)


class TestComparePerQuery:
    def test_wins_losses_ties_and_regression_margin(self):
        a = {"q1": {"ndcg@10": 1.0}, "q2": {"ndcg@10": 0.5}, "q3": {"ndcg@10": 0.5}, "q4": {"ndcg@10": 0.2}}
        b = {
            "q1": {"ndcg@10": 0.9},
            "q2": {"ndcg@10": 0.5},
            "q3": {"ndcg@10": 0.6},
            "q4": {"ndcg@10": 0.0},
            "q5": {"ndcg@10": 1.0},
        }
        result = compare.compare_per_query(a, b, permutations=500)
        m = result["metrics"]["ndcg@10"]
        assert result["queries"] == 4  # q5 was not run by A
        assert (m["wins"], m["losses"], m["ties"]) == (1, 2, 1)
        assert m["diff"] == pytest.approx(-0.05)
        assert result["regression"] is True
        assert compare.compare_per_query(a, b, margin=0.05, permutations=500)["regression"] is False
        assert compare.compare_per_query(a, b, margin=0.04, permutations=500)["regression"] is True

    def test_every_query_tied_warns_that_the_change_does_not_reach_the_ranking(self):
        a = {"q1": {"ndcg@10": 1.0, "hit@3": 1.0}, "q2": {"ndcg@10": 0.5, "hit@3": 1.0}}
        tied = compare.compare_per_query(a, a, permutations=100)
        assert tied["warning"] == compare.TIED
        moved = compare.compare_per_query(a, {**a, "q2": {"ndcg@10": 0.6, "hit@3": 1.0}}, permutations=100)
        assert moved["warning"] is None
        rankings = compare.same_rankings({"q1": ["x", "y"], "q2": ["y", "x"]}, {"q1": ["x", "y"], "q2": ["x", "y"]})
        assert rankings == {"queries": 2, "same": 1}
        report = {**hand_report([0.0, 0.0]), **compare._with_rankings(tied, rankings)}
        assert compare.format_comparison(report).splitlines()[-1] == (
            "warning: every query ties on every metric: B's change moved 1 of 2 top-10 rankings, "
            "none across a relevant document."
        )
        untouched = {**hand_report([0.0, 0.0]), **compare._with_rankings(tied, {"queries": 2, "same": 2})}
        assert compare.format_comparison(untouched).splitlines()[-1] == (
            "warning: every query ties on every metric: B's change does not reach the ranking "
            "(2 of 2 top-10 rankings are identical)."
        )

    def test_unknown_primary_metric_and_negative_margin_raise(self):
        runs = {"q1": {"ndcg@10": 1.0}}
        with pytest.raises(ValueError, match="primary metric 'mrr@10'"):
            compare.compare_per_query(runs, runs, primary="mrr@10")
        with pytest.raises(ValueError, match="margin must be >= 0"):
            compare.compare_per_query(runs, runs, margin=-0.1)

    def test_summary_and_chart(self, tmp_path):
        pytest.importorskip("matplotlib", reason="the chart comes with the eval extra")
        report = hand_report([0.1, 0.2, -0.1, 0.0, 0.3, 0.05])
        summary = compare.format_comparison(report)
        assert "| ndcg@10 (primary) | 0.500 | 0.592 | +0.092 |" in summary
        assert summary.splitlines()[-1].startswith("no regression: mine − search on ndcg@10 is +0.0917")
        png = compare.plot_comparison(report, tmp_path / "chart.png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.stat().st_size > 10_000


@pytest.mark.integration
class TestCompareOnDemoIndex:
    def test_pipeline_against_itself_differs_nowhere(self, demo_needle, golden_set):
        report = compare.compare_golden(demo_needle, golden_set, "search", str(REPO / "pipelines" / "search.yml"))
        assert report["queries"] == len(golden_set.queries)
        for name, m in report["metrics"].items():
            assert m["diff"] == 0.0, name
            assert m["p_value"] == 1.0
            assert m["wins"] == m["losses"] == 0
            assert m["ci95"] == [0.0, 0.0]
        assert report["regression"] is False
        assert report["same_rankings"] == {"queries": len(golden_set.queries), "same": len(golden_set.queries)}
        assert report["warning"].startswith("every query ties on every metric: B's change does not reach the ranking")

    def test_broken_pipeline_is_flagged_by_the_cli(self, demo_needle, tmp_path, monkeypatch, capsys):
        monkeypatch.setattr(golden_eval, "prepare_index", lambda golden, settings=None, cache=None: demo_needle)
        broken = polluted_vsearch(tmp_path)
        code = main(
            [
                "eval",
                "compare",
                "vsearch",
                str(broken),
                "--golden",
                str(GOLDEN_FILE),
                "--reports",
                str(tmp_path / "reports"),
                "--permutations",
                "2000",
            ]
        )
        out = capsys.readouterr().out
        assert code == 1, out
        assert "REGRESSION: vsearch-polluted − vsearch on ndcg@10" in out
        reports = sorted((tmp_path / "reports").iterdir())
        assert [p.suffix for p in reports] == [".json", ".md"] + ([".png"] if _has_matplotlib() else [])
        assert reports[0].name.startswith("vsearch-vs-vsearch-polluted-demo-")
        report = json.loads(reports[0].read_text())
        ndcg = report["metrics"]["ndcg@10"]
        assert ndcg["diff"] < -0.1 and ndcg["losses"] > ndcg["wins"]
        assert ndcg["p_value"] < 0.01
        assert ndcg["ci95"][1] < 0
        if _has_matplotlib():
            assert reports[2].stat().st_size > 10_000


def _has_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def write_tiny_beir(folder: Path) -> Path:
    docs = {
        "d1": ("Logical replication", "A replication slot keeps WAL on the primary until the subscriber confirms it."),
        "d2": ("Sourdough starter", "Feed the starter flour and water at a 1:1:1 ratio every day."),
        "d3": ("Restic backups", "Restic encrypts snapshots and prunes old ones with forget --prune."),
        "d4": ("Vim macros", "Record keystrokes into a register with q and replay them with @."),
    }
    queries = {"1": "replication slot WAL", "2": "starter feeding ratio", "3": "encrypted backups prune"}
    folder.mkdir(parents=True)
    (folder / "qrels").mkdir()
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n" for k, (t, x) in docs.items())
    )
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": t}) + "\n" for k, t in queries.items()))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\r\n1\td1\t1\r\n2\td2\t1\r\n3\td3\t1\r\n")
    return folder


@pytest.mark.integration
def test_beir_comparison_runs_both_pipelines_on_one_cached_index(tmp_path, settings):
    dataset = write_tiny_beir(tmp_path / "tiny")
    report = compare.compare_beir(
        dataset,
        "search",
        str(REPO / "pipelines" / "search.yml"),
        cache=tmp_path / "cache",
        settings=settings,
        candidates=20,
        permutations=500,
    )
    assert report["queries"] == 3
    assert set(report["metrics"]) == {"ndcg@10", "recall@10", "recall@100", "mrr@10"}
    assert all(m["diff"] == 0.0 and m["p_value"] == 1.0 for m in report["metrics"].values())
    assert report["same_rankings"] == {"queries": 3, "same": 3} and "does not reach the ranking" in report["warning"]
    assert report["runs"]["a"]["rankings"]["1"][0] == "d1"
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [Path(report["index"]).name]
