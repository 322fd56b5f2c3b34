import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from needle.core.globs import CollectionRules
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


class TestBuiltCorpora:
    """`corpus: build:NAME`: a corpus built from this machine's files, found in the corpora cache."""

    def golden_file(self, tmp_path: Path, expected: str = "1/find.md") -> Path:
        data = golden_data(expected=[expected])
        return write_golden(tmp_path, {**data, "corpus": "build:manpages"})

    def test_an_unbuilt_corpus_names_the_command_that_builds_it(self, tmp_path, monkeypatch):
        monkeypatch.setenv(golden_eval.CORPORA_CACHE_ENV, str(tmp_path / "corpora"))
        with pytest.raises(GoldenError) as error:
            golden_eval.load_golden(self.golden_file(tmp_path))
        assert "corpus build:manpages is not built in" in str(error.value)
        assert "`python -m eval.corpora build manpages`" in str(error.value)

    def test_a_build_that_did_not_finish_is_not_read(self, tmp_path, monkeypatch):
        monkeypatch.setenv(golden_eval.CORPORA_CACHE_ENV, str(tmp_path / "corpora"))
        (tmp_path / "corpora" / "manpages" / "1").mkdir(parents=True)
        (tmp_path / "corpora" / "manpages" / "1" / "find.md").write_text("# find - search for files\n")
        with pytest.raises(GoldenError, match="corpus build:manpages is not finished"):
            golden_eval.load_golden(self.golden_file(tmp_path))

    def test_a_finished_build_is_the_corpus_and_its_list_is_not_part_of_it(self, tmp_path, monkeypatch):
        monkeypatch.setenv(golden_eval.CORPORA_CACHE_ENV, str(tmp_path / "corpora"))
        folder = golden_eval.built_corpus("manpages")
        (folder / "1").mkdir(parents=True)
        (folder / "1" / "find.md").write_text("# find - search for files\n")
        digest = golden_eval.corpus_digest(folder)
        (folder / golden_eval.BUILT_MANIFEST).write_text("1/find.md\n")
        golden = golden_eval.load_golden(self.golden_file(tmp_path))
        assert golden.corpus == folder == tmp_path / "corpora" / "manpages"
        assert golden_eval.corpus_digest(folder) == digest
        assert CollectionRules().why_not_served(golden_eval.BUILT_MANIFEST) is not None
        with pytest.raises(GoldenError, match=r"expected file '1/ls\.md' is not in the corpus"):
            golden_eval.load_golden(self.golden_file(tmp_path, "1/ls.md"))

    def test_the_build_writes_its_list_last_under_a_hidden_name(self, tmp_path, monkeypatch):
        from eval.corpora import built_corpora

        site = tmp_path / "site-packages"
        (site / "otters-1.0.dist-info").mkdir(parents=True)
        body = "# Otters\n\n" + "Otters hold hands while they sleep. " * 150
        (site / "otters-1.0.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: otters\nVersion: 1.0\nDescription-Content-Type: text/markdown\n\n{body}"
        )
        monkeypatch.setenv("BUILD_SITE_PACKAGES", str(site))
        monkeypatch.setenv(golden_eval.CORPORA_CACHE_ENV, str(tmp_path / "corpora"))
        dest = golden_eval.built_corpus("readmes")
        (dest).mkdir(parents=True)
        (dest / "MANIFEST.txt").write_text("otters.md\n")  # where a build before wrote it, indexed as a note
        built_corpora.build("readmes", dest)
        assert sorted(p.name for p in dest.iterdir()) == [golden_eval.BUILT_MANIFEST, "otters.md"]
        assert (dest / golden_eval.BUILT_MANIFEST).read_text() == "otters.md\n"
        assert "Otters hold hands" in (dest / "otters.md").read_text()


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

    def test_unanswerable_rows_score_no_retrieval_metric(self):
        per_query = {
            "e1": row("easy", ["a"], ["a"]),
            "u1": {"difficulty": "unanswerable", "answerable": False, "label": "PASS", "latency_ms": 5.0},
            "u2": {"difficulty": "unanswerable", "answerable": False, "label": "IRRELEVANT", "latency_ms": 5.0},
        }
        summary = golden_eval.summarise(per_query)
        assert list(summary) == ["easy", "all"] and summary["all"]["queries"] == 1
        assert summary["all"]["hit@1"] == 1.0
        apart = golden_eval.summarise_answers(per_query)["unanswerable"]
        assert apart == {"queries": 2, "passed": 1, "labels": {"PASS": 1, "IRRELEVANT": 1}}

    def test_an_answer_is_shown_when_a_top_3_snippet_holds_it_below_its_location_line(self):
        query = golden_eval.GoldenQuery(
            "q", "wal level", ("a.md",), "easy", ("query",), answers=("wal_level = logical",)
        )

        def hit(path: str, snippet: str) -> SimpleNamespace:
            return SimpleNamespace(path=path, snippet=snippet)

        shown = [hit("x.md", "@@ x.md:1 @@\nnothing"), hit("a.md", "@@ a.md:3 @@\nset wal_level = logical")]
        assert golden_eval.answer_shown(query, shown) is True
        assert golden_eval.answer_shown(query, [hit("a.md", "@@ a.md:9 @@\nmax_wal_senders = 4")]) is False
        assert golden_eval.answer_shown(query, [hit("a.md", "@@ wal_level = logical @@\nmax_wal_senders")]) is False
        fourth = [hit("x.md", "x"), hit("y.md", "y"), hit("z.md", "z"), hit("a.md", "wal_level = logical")]
        assert golden_eval.answer_shown(query, fourth) is None  # not found in the top 3: nothing to show it in
        assert golden_eval.answer_shown(dataclasses.replace(query, answers=()), shown) is None

    def test_answers_shown_are_counted_among_the_queries_found(self):
        rows = {
            "a": {**row("easy", ["a"], ["a"]), "answerable": True, "answer_keys": 1, "answer_shown": True},
            "b": {**row("easy", ["a"], ["a"]), "answerable": True, "answer_keys": 2, "answer_shown": False},
            "c": {**row("easy", ["x"], ["a"]), "answerable": True, "answer_keys": 1, "answer_shown": None},
            "d": {**row("easy", ["a"], ["a"]), "answerable": True, "answer_keys": 0, "answer_shown": None},
        }
        shown = golden_eval.summarise_answers(rows)["answer_shown"]
        assert shown == {"with_answers": 3, "found": 2, "shown": 1, "rate": 0.5}
        report = {
            "golden": "g.yml",
            "corpus": "notes",
            "modes": {"query": {"summary": golden_eval.summarise(rows), **golden_eval.summarise_answers(rows)}},
            "thresholds": {"checks": []},
        }
        assert "| query | 0.500 (1 of 2; 3 with answers) | – |" in golden_eval.format_table(report)


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
class TestUnanswerableAndAnswersOnTheDemoIndex:
    def test_unanswerable_queries_are_reported_apart_with_their_labels(self, demo_needle, golden_set):
        root = DEMO_NOTES.parents[2] / "eval" / "golden"
        unanswerable = golden_eval.load_golden(root / "demo-unanswerable.yml")
        mixed = dataclasses.replace(golden_set, queries=(*golden_set.queries[:4], *unanswerable.queries[:5]))
        report = golden_eval.evaluate_golden(demo_needle, mixed, ["query"])
        result = report["modes"]["query"]
        assert result["summary"]["all"]["queries"] == 4
        assert "unanswerable" not in result["summary"]
        assert result["unanswerable"]["queries"] == 5
        assert sum(result["unanswerable"]["labels"].values()) == 5
        assert result["unanswerable"]["passed"] == result["unanswerable"]["labels"].get("PASS", 0)
        rows = [r for r in result["per_query"].values() if not r["answerable"]]
        assert len(rows) == 5 and all("label" in r and "hit@3" not in r for r in rows)
        assert "unanswerable queries labelled PASS" in golden_eval.format_table(report)

    def test_answers_shown_count_the_queries_whose_expected_file_is_in_the_top_3(self, golden_report, golden_set):
        for mode in golden_eval.MODES:
            result = golden_report["modes"][mode]
            keyed = [q for q in golden_set.for_mode(mode) if q.answers]
            found = [q for q in keyed if result["per_query"][q.id]["hit@3"] == 1.0]
            shown = result["answer_shown"]
            assert shown["with_answers"] == len(keyed) > 0
            assert shown["found"] == len(found)
            assert 0 < shown["shown"] <= shown["found"]


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
