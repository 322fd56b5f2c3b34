"""ragas' LLM metrics over pipelines/rag.yml's answers, through ragas-haystack's RagasEvaluator.

Unit tests pin down how a metric's failure becomes NaN with a reason; the integration tests run the real
path against llama.cpp with a tiny model (plumbing, not quality): answers come back from the answer
graph, every metric gives a number in range or NaN with a reason, and judgements that cannot parse (cut
short by a tiny token budget) do not end the run.
"""

import asyncio
import json
import math
import socket
import threading
from types import SimpleNamespace

import jsonschema
import pytest

pytest.importorskip("ragas", reason="the ragas extra is not installed")

from needle.core.requests import SearchRequest
from needle.evaluation import golden as golden_eval
from needle.evaluation.ragas_answers import (
    METRICS,
    HaystackTextEmbedding,
    answers_section,
    check_options,
    failure_reason,
    format_answers,
    judge_settings,
    run_result,
    score_answer,
    score_answers,
)
from needle.evaluation.reports import without_nan
from needle.facade.api import Needle
from needle.shells.cli import main
from tests.evaluation.conftest import REPO
from tests.evaluation.test_formats_schema import ANSWERS, schemas
from tests.llm_server import MODEL_NAME

ANSWERS_FILE = REPO / "eval" / "golden" / "answers.yml"


class FakeEvaluator:
    """Stands in for a RagasEvaluator holding one metric: returns `value`, or raises `error`."""

    def __init__(self, name: str, value: float = 0.5, reason: str | None = None, error: Exception | None = None):
        self.name, self.value, self.reason, self.error = name, value, reason, error
        self.calls: list[dict] = []

    async def run_async(self, **inputs):
        self.calls.append(inputs)
        if self.error is not None:
            raise self.error
        return {"result": {self.name: SimpleNamespace(value=self.value, reason=self.reason)}}


class RetriesExhausted(Exception):
    """Shaped like instructor's InstructorRetryException: the attempts' errors in `failed_attempts`."""

    def __init__(self, *errors: Exception):
        super().__init__('<failed_attempts>\n<generation number="1">')
        self.failed_attempts = [SimpleNamespace(exception=e) for e in errors]


SAMPLE = {"question": "what?", "answer": "this [a.md:1-2]", "contexts": ["a text"], "reference": "that"}


class TestScoreAnswer:
    def run(self, evaluators, sample=SAMPLE):
        return asyncio.run(score_answer({e.name: e for e in evaluators}, sample))

    def test_values_pass_through_with_the_inputs_ragas_needs(self):
        faith = FakeEvaluator("faithfulness", 0.75)
        scores = self.run([faith])
        assert scores["faithfulness"]["value"] == 0.75 and scores["faithfulness"]["reason"] is None
        assert faith.calls == [
            {"query": "what?", "response": "this [a.md:1-2]", "documents": ["a text"], "reference": "that"}
        ]

    def test_a_failing_metric_is_nan_with_its_reason_and_the_others_still_run(self):
        broken = FakeEvaluator("faithfulness", error=RetriesExhausted(ValueError("1 validation error\nstatements")))
        relevancy = FakeEvaluator("answer_relevancy", 0.9)
        scores = self.run([broken, relevancy])
        assert math.isnan(scores["faithfulness"]["value"])
        assert (
            scores["faithfulness"]["reason"] == "no usable judgement after 1 attempt(s): ValueError: 1 validation error"
        )
        assert scores["answer_relevancy"]["value"] == 0.9

    def test_metrics_that_need_a_reference_are_nan_without_one(self):
        recall = FakeEvaluator("context_recall")
        scores = self.run([recall], {**SAMPLE, "reference": None})
        assert math.isnan(scores["context_recall"]["value"]) and "reference" in scores["context_recall"]["reason"]
        assert recall.calls == []

    def test_no_answer_is_not_sent_to_the_judge(self):
        faith = FakeEvaluator("faithfulness")
        assert self.run([faith], {**SAMPLE, "answer": ""})["faithfulness"]["reason"] == "no answer to score"
        assert faith.calls == []

    def test_nan_without_a_reason_gets_one(self):
        scores = self.run([FakeEvaluator("faithfulness", math.nan)])
        assert "nothing to score" in scores["faithfulness"]["reason"]


def test_failure_reason_of_a_plain_error_is_its_first_line():
    assert failure_reason(TimeoutError("Request timed out.\ndetails")) == "TimeoutError: Request timed out."


def test_bad_options_raise_before_any_work():
    with pytest.raises(ValueError, match="structured_output must be one of tools, json, got 'xml'"):
        check_options(structured_output="xml")
    with pytest.raises(ValueError, match="max_tokens must be > 0, got 0"):
        check_options(max_tokens=0)
    with pytest.raises(ValueError, match="retries must be >= 0, got -1"):
        check_options(retries=-1)
    with pytest.raises(ValueError, match=r"metrics must be some of .*, got bleu"):
        check_options(metrics=["faithfulness", "bleu"])
    with pytest.raises(ValueError, match="top_k must be > 0"):
        answers_section(needle=None, cases=[], top_k=0)


def test_embedding_wraps_a_haystack_embedder_and_warms_it_once():
    class Embedder:
        warmed = 0

        def warm_up(self):
            self.warmed += 1

        def run(self, text):
            return {"embedding": [len(text), 1]}

    embedder = Embedder()
    embedding = HaystackTextEmbedding(embedder, "tiny")
    assert embedding.embed_text("abc") == [3.0, 1.0]
    assert asyncio.run(embedding.aembed_texts(["a", "ab"])) == [[1.0, 1.0], [2.0, 1.0]]
    assert embedder.warmed == 1


def test_summary_names_every_nan_reason():
    section = {
        "pipeline": "rag",
        "contexts": 1,
        "judge": {"model": "m", "url": "u", "structured_output": "tools"},
        "summary": {"faithfulness": {"mean": math.nan, "scored": 0, "nan": 1}},
        "per_query": {"a": {"metrics": {"faithfulness": {"value": math.nan, "reason": "cut short"}}}},
    }
    markdown = format_answers(section)
    assert "| faithfulness | nan | 0 | 1 |" in markdown and "- faithfulness: cut short" in markdown


@pytest.fixture(scope="module")
def judged(demo_needle, llm_server):
    """One golden question answered by rag.yml and judged by the same tiny model."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    llm = demo_needle.settings.llm.model_copy(update={"url": llm_server, "model": MODEL_NAME, "timeout": 120.0})
    settings = demo_needle.settings.model_copy(
        update={"llm": llm, "set": {"generate.generation_kwargs.max_tokens": 48}}
    )
    needle = Needle(settings, environment=demo_needle.environment.derive(settings))
    case = next(q for q in golden_eval.load_golden(ANSWERS_FILE).queries if q.id == "a002")
    section = answers_section(
        needle,
        [{"id": case.id, "question": case.query, "reference": case.reference}],
        top_k=1,
        max_tokens=96,
        retries=0,
        strictness=1,
    )
    yield needle, section
    monkeypatch.undo()


@pytest.mark.integration
def test_answers_are_judged_with_numbers_in_range_or_nan_with_a_reason(judged):
    needle, section = judged
    row = section["per_query"]["a002"]
    assert row["answer"].strip() and row["error"] is None
    searched = needle.search(SearchRequest(query=row["question"], limit=1)).results
    assert row["contexts"] == [r.text for r in searched]
    assert row["context_refs"][0].startswith("notes/howto/postgres-logical-replication.md:")
    assert set(row["metrics"]) == set(METRICS)
    for name, score in row["metrics"].items():
        value = score["value"]
        if math.isnan(value):
            assert score["reason"], name
        else:
            low = -1.0 if name == "answer_relevancy" else 0.0  # a mean cosine similarity
            assert low <= value <= 1.0, (name, value)
    assert sum(s["scored"] + s["nan"] for s in section["summary"].values()) == len(METRICS)
    judge = {"url": needle.settings.llm.url, "model": MODEL_NAME, "timeout": 300.0, "structured_output": "tools"}
    assert section["judge"] == judge  # no `eval.judge`: the answering server and model, the judge's own timeout
    assert section["answered_by"] == {"url": needle.settings.llm.url, "model": MODEL_NAME, "timeout": 120.0}
    jsonschema.validate(json.loads(json.dumps(without_nan(section))), schemas()[ANSWERS])  # as documented


@pytest.mark.integration
def test_judgements_cut_short_do_not_end_the_run(judged):
    needle, section = judged
    answers = [
        {key: row[key] for key in ("question", "answer", "contexts", "reference")}
        for row in section["per_query"].values()
    ]
    chosen = ("faithfulness", "context_recall")
    scores = score_answers(answers, needle.settings, max_tokens=3, retries=0, metrics=chosen)
    assert len(scores) == 1 and set(scores[0]) == set(chosen)
    for name, score in scores[0].items():
        assert math.isnan(score["value"]), name
        assert score["reason"].startswith("no usable judgement after 1 attempt(s): "), (name, score["reason"])


@pytest.mark.integration
def test_cli_llm_run_against_a_down_server_is_one_line(demo_needle, tmp_path, monkeypatch, capsys):
    llm = demo_needle.settings.llm.model_copy(update={"url": "http://127.0.0.1:9/v1", "timeout": 2.0})
    settings = demo_needle.settings.model_copy(update={"llm": llm})
    down = Needle(settings, environment=demo_needle.environment.derive(settings))
    monkeypatch.setattr(golden_eval, "prepare_index", lambda golden, settings=None, cache=None: down)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    code = main(
        [
            "eval",
            "ragas",
            "--golden",
            str(ANSWERS_FILE),
            "--llm",
            "--limit",
            "1",
            "--reports",
            str(tmp_path / "reports"),
        ]
    )
    captured = capsys.readouterr()
    assert code == 1 and captured.err.startswith("error: no LLM answered at http://127.0.0.1:9/v1")
    assert "Traceback" not in captured.err and not (tmp_path / "reports").exists()


@pytest.mark.integration
def test_cli_llm_run_writes_answers_and_judgements_to_the_report(judged, tmp_path, monkeypatch, capsys):
    needle, _ = judged
    monkeypatch.setattr(golden_eval, "prepare_index", lambda golden, settings=None, cache=None: needle)
    code = main(
        [
            "eval",
            "ragas",
            "--golden",
            str(ANSWERS_FILE),
            "--llm",
            "--limit",
            "1",
            "--contexts",
            "1",
            "--metric",
            "context_precision",
            "--max-tokens",
            "64",
            "--retries",
            "0",
            "--reports",
            str(tmp_path / "reports"),
        ]
    )
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0, captured.err + out
    assert "| context_precision |" in out
    report = json.loads(next((tmp_path / "reports").glob("ragas-query+rag-answers-*.json")).read_text())
    assert report["retrieval"]["queries"] == 1 and report["retrieval"]["agree"] is True
    row = report["answers"]["per_query"]["a001"]
    assert row["answer"].strip() and len(row["contexts"]) == 1, row["error"]
    score = row["metrics"]["context_precision"]
    assert set(row["metrics"]) == {"context_precision"}
    assert (score["value"] is None and score["reason"]) or 0.0 <= score["value"] <= 1.0


def test_the_judge_is_eval_judge_else_the_llm_section_and_the_command_line_wins(demo_needle):
    settings = demo_needle.settings
    assert (judge_settings(settings).url, judge_settings(settings).model) == (settings.llm.url, settings.llm.model)
    configured = settings.model_copy(
        update={
            "eval": settings.eval.model_copy(
                update={"judge": settings.eval.judge.model_copy(update={"model": "big", "timeout": 9.0})}
            )
        }
    )
    judge = judge_settings(configured)
    assert (judge.url, judge.model, judge.timeout) == (settings.llm.url, "big", 9.0)
    given = judge_settings(configured, "http://127.0.0.1:8/v1", "bigger", 2.5)
    assert (given.url, given.model, given.timeout) == ("http://127.0.0.1:8/v1", "bigger", 2.5)
    with pytest.raises(ValueError, match="timeout must be > 0"):
        judge_settings(settings, timeout=0)


def test_scores_export_as_haystacks_evaluation_run_result():
    section = {
        "pipeline": "rag",
        "summary": {"faithfulness": {"mean": 0.5, "scored": 1, "nan": 1}},
        "per_query": {
            "a": {
                "question": "q1",
                "answer": "x",
                "contexts": ["c"],
                "reference": None,
                "error": None,
                "metrics": {"faithfulness": {"value": 0.5, "reason": None}},
            },
            "b": {
                "question": "q2",
                "answer": "",
                "contexts": [],
                "reference": "r",
                "error": "timed out",
                "metrics": {"faithfulness": {"value": None, "reason": "no answer to score"}},
            },
        },
    }
    result = run_result(section)
    assert result.run_name == "rag"
    assert result.aggregated_report(output_format="json") == {"metrics": ["faithfulness"], "score": [0.5]}
    detailed = result.detailed_report(output_format="json")
    assert detailed["question"] == ["q1", "q2"] and detailed["error"] == [None, "timed out"]
    assert detailed["faithfulness"][0] == 0.5 and math.isnan(detailed["faithfulness"][1])


@pytest.mark.integration
def test_a_judge_that_does_not_answer_ends_the_run_in_one_line_naming_the_judge(judged, tmp_path, monkeypatch, capsys):
    needle, _ = judged
    monkeypatch.setattr(golden_eval, "prepare_index", lambda golden, settings=None, cache=None: needle)
    code = main(
        [
            "eval",
            "ragas",
            "--golden",
            str(ANSWERS_FILE),
            "--llm",
            "--limit",
            "1",
            "--judge-url",
            "http://127.0.0.1:9/v1",
            "--judge-model",
            "judge-model",
            "--reports",
            str(tmp_path / "reports"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: no judge answered at http://127.0.0.1:9/v1 (model judge-model)")
    assert "--judge-url" in err and not (tmp_path / "reports").exists()


@pytest.fixture
def silent_server():
    """A server that takes connections and never answers (an LLM too slow for its timeout): its `/v1` URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:  # closed
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    listener.close()
    for connection in held:
        connection.close()


@pytest.mark.integration
def test_timed_out_answers_and_judgements_fail_their_samples_not_the_run(demo_needle, silent_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    cases = [
        {"id": q.id, "question": q.query, "reference": q.reference}
        for q in golden_eval.load_golden(ANSWERS_FILE).queries[:2]
    ]
    # The answering model times out on each question: each sample fails with its error, the run goes on.
    llm = demo_needle.settings.llm.model_copy(update={"url": silent_server, "model": "slow", "timeout": 1.0})
    settings = demo_needle.settings.model_copy(update={"llm": llm})
    slow = Needle(settings, environment=demo_needle.environment.derive(settings))
    section = answers_section(slow, cases, top_k=1, retries=0, strictness=1, metrics=["faithfulness"])
    assert len(section["per_query"]) == 2
    for row in section["per_query"].values():
        assert "timed out" in row["error"] and row["answer"] == ""
        assert math.isnan(row["metrics"]["faithfulness"]["value"])
        assert row["metrics"]["faithfulness"]["reason"] == "no answer to score"
    assert "2 answer(s) failed (NaN)" in format_answers(section)
    # The judge (its own server and timeout) times out on each judgement: NaN with the reason, for that sample.
    answered = [
        {**row, "answer": "Set wal_level to logical and restart.", "contexts": ["wal_level = logical needs a restart"]}
        for row in section["per_query"].values()
    ]
    judge = judge_settings(settings, silent_server, "slow-judge", timeout=1.0)
    scores = score_answers(answered, settings, retries=0, metrics=["faithfulness"], judge=judge)
    assert len(scores) == 2
    for score in scores:
        assert math.isnan(score["faithfulness"]["value"]), score
        assert "timed out" in score["faithfulness"]["reason"], score
