from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from needle.evaluation import golden as golden_eval
from needle.evaluation.golden import GoldenError

DEMO_NOTES = Path(__file__).resolve().parents[2] / "needle" / "demo" / "notes"


def golden_data(**overrides) -> dict:
    query = {
        "id": "q1",
        "query": "postgres logical replication slot",
        "expected": ["howto/postgres-logical-replication.md"],
        "difficulty": "easy",
        "modes": ["search", "query"],
    }
    query.update(overrides)
    return {"version": 1, "corpus": str(DEMO_NOTES), "queries": [query]}


def write_golden(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "golden.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def row(difficulty: str, ranking: list[str], expected: list[str], latency: float = 10.0) -> dict:
    return {"difficulty": difficulty, "latency_ms": latency, **golden_eval.score_ranking(ranking, expected)}


class TestLoadGolden:
    def test_repository_golden_file_is_valid(self, golden_set):
        assert golden_set.corpus == DEMO_NOTES.resolve()
        assert len(golden_set.queries) >= 40
        assert {q.difficulty for q in golden_set.queries} == {"easy", "medium", "hard", "fusion"}
        assert all(set(q.modes) <= set(golden_eval.MODES) for q in golden_set.queries)

    def test_valid_file_loads_with_corpus_relative_to_the_file(self, tmp_path):
        (tmp_path / "notes").symlink_to(DEMO_NOTES)
        (tmp_path / "sub").mkdir()
        golden = golden_eval.load_golden(write_golden(tmp_path / "sub", {**golden_data(), "corpus": "../notes"}))
        assert golden.corpus == DEMO_NOTES.resolve()
        assert golden.queries[0].expected == ("howto/postgres-logical-replication.md",)
        assert golden.queries[0].modes == ("search", "query")
        assert golden.name == "golden"

    def test_reference_answer_is_optional_and_must_be_text(self, tmp_path):
        plain = golden_eval.load_golden(write_golden(tmp_path, golden_data()))
        assert plain.queries[0].reference is None
        golden = golden_eval.load_golden(write_golden(tmp_path, golden_data(reference="  Set wal_level to logical. ")))
        assert golden.queries[0].reference == "Set wal_level to logical."
        with pytest.raises(GoldenError, match=r"q1: reference must be a non-empty answer text"):
            golden_eval.load_golden(write_golden(tmp_path, golden_data(reference=["a list"])))

    def test_repository_filter_file_has_a_reference_date_and_filter_and_time_questions(self):
        filters = golden_eval.load_golden(DEMO_NOTES.parents[2] / "eval" / "golden" / "filters.yml")
        assert filters.today == "2024-12-01" and filters.corpus == DEMO_NOTES.resolve()
        assert {q.difficulty for q in filters.queries} == {"filter", "time"} and len(filters.queries) >= 20

    def test_today_must_be_a_date(self, tmp_path):
        with pytest.raises(GoldenError, match="today must be a date"):
            golden_eval.load_golden(write_golden(tmp_path, {**golden_data(), "today": "soon"}))

    def test_repository_answers_file_has_a_reference_for_every_question(self):
        answers = golden_eval.load_golden(DEMO_NOTES.parents[2] / "eval" / "golden" / "answers.yml")
        assert len(answers.queries) == 5 and all(q.reference for q in answers.queries)

    def test_unknown_difficulty_is_named_with_the_choices(self, tmp_path):
        with pytest.raises(
            GoldenError, match=r"q1: unknown difficulty 'trivial'; use one of easy, medium, hard, fusion"
        ):
            golden_eval.load_golden(write_golden(tmp_path, golden_data(difficulty="trivial")))

    def test_unknown_mode_is_named_with_the_choices(self, tmp_path):
        with pytest.raises(GoldenError, match=r"q1: unknown mode 'bm25'; use one of search, vsearch, query"):
            golden_eval.load_golden(write_golden(tmp_path, golden_data(modes=["search", "bm25"])))

    def test_missing_expected_file_is_named(self, tmp_path):
        with pytest.raises(GoldenError, match=r"q1: expected file 'howto/nope.md' is not in the corpus"):
            golden_eval.load_golden(write_golden(tmp_path, golden_data(expected=["howto/nope.md"])))

    def test_missing_expected_file_allowed_when_not_checking_files(self, tmp_path):
        golden = golden_eval.load_golden(
            write_golden(tmp_path, golden_data(expected=["howto/nope.md"])), check_files=False
        )
        assert golden.queries[0].expected == ("howto/nope.md",)

    def test_every_problem_is_reported_at_once(self, tmp_path):
        data = golden_data(difficulty="trivial", modes=[], expected=[])
        data["queries"].append(dict(data["queries"][0], query=" "))
        with pytest.raises(GoldenError) as error:
            golden_eval.load_golden(write_golden(tmp_path, data))
        message = str(error.value)
        for part in ("unknown difficulty", "modes must be", "expected must be", "duplicate id", "query must be"):
            assert part in message

    def test_missing_corpus_and_bad_version(self, tmp_path):
        data = golden_data()
        data.update(version=2, corpus=str(tmp_path / "nowhere"))
        with pytest.raises(GoldenError, match="version must be 1") as error:
            golden_eval.load_golden(write_golden(tmp_path, data))
        assert "does not exist" in str(error.value)

    def test_missing_file_and_non_mapping(self, tmp_path):
        with pytest.raises(GoldenError, match="no such file"):
            golden_eval.load_golden(tmp_path / "absent.yml")
        path = tmp_path / "list.yml"
        path.write_text("- a\n- b\n")
        with pytest.raises(GoldenError, match="expected a mapping"):
            golden_eval.load_golden(path)

    def test_golden_error_is_a_value_error_so_the_cli_exits_2(self):
        assert issubclass(GoldenError, ValueError)

    def test_for_mode_selects_tagged_queries_and_all_for_other_pipelines(self, golden_set):
        search = golden_set.for_mode("search")
        assert search and all("search" in q.modes for q in search)
        assert golden_set.for_mode("my-pipeline.yml") == list(golden_set.queries)


class TestThresholds:
    def test_repository_thresholds(self):
        thresholds = golden_eval.load_thresholds(
            Path(__file__).resolve().parents[2] / "eval" / "golden" / "thresholds.yml"
        )
        found = {(t.mode, t.difficulty, t.metric): t.minimum for t in thresholds}
        assert found == {
            ("search", "easy", "hit@3"): 0.90,
            ("search", "fusion", "hit@3"): 0.85,
            ("vsearch", "medium", "hit@3"): 0.90,
            ("vsearch", "hard", "hit@5"): 0.80,
            ("query", "easy", "hit@3"): 0.90,
            ("query", "medium", "hit@3"): 0.85,
            ("query", "hard", "hit@5"): 0.75,
            ("query", "fusion", "hit@3"): 0.90,
        }

    def test_unknown_names_and_bad_values_are_reported(self, tmp_path):
        data = {
            "version": 1,
            "thresholds": {
                "hybrid": {"easy": {"hit@3": 0.5}},
                "query": {"trivial": {"hit@3": 0.5}, "easy": {"hit@2": 0.5, "mrr@10": 1.5}},
            },
        }
        with pytest.raises(GoldenError) as error:
            golden_eval.parse_thresholds(data, tmp_path / "t.yml")
        message = str(error.value)
        for part in (
            "unknown mode 'hybrid'",
            "unknown difficulty 'trivial'",
            "unknown metric 'hit@2'",
            "from 0 to 1, got 1.5",
        ):
            assert part in message

    def test_check_passes_fails_and_fails_on_absent_difficulty(self):
        summaries = {"query": {"easy": {"hit@3": 0.9}, "all": {"hit@3": 0.7}}}
        thresholds = [
            golden_eval.Threshold("query", "easy", "hit@3", 0.85),
            golden_eval.Threshold("query", "all", "hit@3", 0.8),
            golden_eval.Threshold("query", "hard", "hit@5", 0.4),
            golden_eval.Threshold("search", "easy", "hit@3", 0.8),  # mode not evaluated: not checked
        ]
        checks = golden_eval.check_thresholds(summaries, thresholds)
        assert [(c["difficulty"], c["passed"]) for c in checks] == [("easy", True), ("all", False), ("hard", False)]
        assert checks[2]["actual"] is None


class TestScoring:
    def test_chunk_hits_group_by_document_best_first(self):
        hits = [SimpleNamespace(path=p) for p in ["b.md", "a.md", "b.md", "c.md", "a.md"]]
        assert golden_eval.group_by_document(hits) == ["b.md", "a.md", "c.md"]

    def test_any_expected_file_counts_as_a_hit(self):
        scores = golden_eval.score_ranking(["x", "b", "a"], ["a", "b"])
        assert scores["hit@1"] == 0.0
        assert scores["hit@3"] == 1.0
        assert scores["mrr@10"] == pytest.approx(0.5)
        assert scores["recall@5"] == 1.0
        assert scores["precision@5"] == pytest.approx(2 / 5)
        assert set(scores) == set(golden_eval.METRICS)

    def test_summary_per_difficulty_on_hand_built_rankings(self):
        per_query = {
            "e1": row("easy", ["a", "x"], ["a"], latency=10),
            "e2": row("easy", ["x", "y", "a"], ["a"], latency=30),
            "h1": row("hard", ["x", "y", "z", "w", "a"], ["a"], latency=20),
            "h2": row("hard", ["x"], ["a"], latency=40),
        }
        summary = golden_eval.summarise(per_query)
        assert list(summary) == ["easy", "hard", "all"]  # no medium or fusion queries: no row
        assert summary["easy"]["queries"] == 2
        assert summary["easy"]["hit@1"] == pytest.approx(0.5)
        assert summary["easy"]["hit@3"] == pytest.approx(1.0)
        assert summary["easy"]["mrr@10"] == pytest.approx((1 + 1 / 3) / 2)
        assert summary["hard"]["hit@3"] == 0.0
        assert summary["hard"]["hit@5"] == pytest.approx(0.5)
        assert summary["hard"]["recall@10"] == pytest.approx(0.5)
        assert summary["all"]["queries"] == 4
        assert summary["all"]["hit@5"] == pytest.approx(0.75)
        assert summary["all"]["latency_ms_p50"] == pytest.approx(25.0)
        assert summary["easy"]["latency_ms_p95"] == pytest.approx(29.0)

    def test_table_lists_modes_difficulties_and_checks(self):
        report = {
            "golden": "g.yml",
            "corpus": "notes",
            "modes": {"query": {"summary": golden_eval.summarise({"e1": row("easy", ["a"], ["a"])})}},
            "thresholds": {
                "checks": [
                    {
                        "mode": "query",
                        "difficulty": "easy",
                        "metric": "hit@3",
                        "minimum": 0.85,
                        "actual": 1.0,
                        "passed": True,
                    }
                ]
            },
        }
        table = golden_eval.format_table(report)
        assert "| query | easy | 1 | 1.000 |" in table
        assert "| query easy hit@3 | 0.85 | 1.000 | pass |" in table


@pytest.mark.integration
class TestDemoIndex:
    def test_demo_index_meets_the_thresholds(self, golden_report):
        table = golden_eval.format_table(golden_report)
        print("\n" + table)
        failed = [c for c in golden_report["thresholds"]["checks"] if not c["passed"]]
        assert len(golden_report["thresholds"]["checks"]) == 8
        assert not failed, f"golden thresholds failed: {failed}\n{table}"

    def test_each_mode_runs_its_tagged_queries_with_latency(self, golden_report, golden_set):
        for mode in golden_eval.MODES:
            result = golden_report["modes"][mode]
            assert result["summary"]["all"]["queries"] == len(golden_set.for_mode(mode))
            assert result["summary"]["all"]["latency_ms_p95"] >= result["summary"]["all"]["latency_ms_p50"] > 0
            assert all(len(r["ranking"]) <= 10 for r in result["per_query"].values())


@pytest.mark.integration
class TestFilterQuestions:
    def test_filter_and_time_questions_meet_their_thresholds_with_self_query(self, demo_needle):
        root = DEMO_NOTES.parents[2] / "eval" / "golden"
        filters = golden_eval.load_golden(root / "filters.yml")
        report = golden_eval.evaluate_golden(
            demo_needle,
            filters,
            golden_eval.MODES,
            thresholds=golden_eval.load_thresholds(root / "filters-thresholds.yml"),
        )
        table = golden_eval.format_table(report)
        print("\n" + table)
        failed = [c for c in report["thresholds"]["checks"] if not c["passed"]]
        assert len(report["thresholds"]["checks"]) == 8
        assert not failed, f"filter thresholds failed: {failed}\n{table}"

    def test_self_query_is_what_answers_them(self, demo_needle):
        from needle.core.requests import SearchRequest

        filters = golden_eval.load_golden(DEMO_NOTES.parents[2] / "eval" / "golden" / "filters.yml")
        hits = {}
        for on in (True, False):
            found = 0
            for q in filters.queries:
                results = demo_needle.search(
                    SearchRequest(query=q.query, limit=10, now=filters.today, self_query=on)
                ).results
                ranking = golden_eval.group_by_document(results)
                found += bool(ranking) and ranking[0] in q.expected
            hits[on] = found / len(filters.queries)
        assert hits[True] >= hits[False] + 0.3, hits
