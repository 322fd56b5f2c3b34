"""ragas' LLM metrics over the answers of an answer graph (`pipelines/rag.yml`), judged by the `llm:` server.

Each question is answered through `Needle.answer`, so the answers, and the chunks the LLM was given as
their contexts, are what users get. Then each answer is scored through Haystack's ragas integration
(`RagasEvaluator` of ragas-haystack), one evaluator per metric so that a metric that fails (a judgement
that does not parse, a timeout, a context too long for the model) scores NaN with its reason while the
others still run:

- `faithfulness`: the share of the answer's statements that the contexts support;
- `answer_relevancy`: how well questions generated back from the answer match the question (cosine of
  embeddings, made offline by Needle's own embedding model);
- `context_utilization`: LLM context precision judged against the answer (no reference needed);
- `context_precision` and `context_recall`: LLM context precision and recall against a reference
  answer (the golden file's `reference:`); NaN with that reason for questions without one.

The judge is its own model (`eval.judge` in the configuration, `--judge-url`/`--judge-model` on the command
line; the `llm` section's server and model when left empty), with its own timeout per request
(`eval.judge.timeout`): an answer or a judgement that times out scores NaN for its sample with the reason, and
the run goes on. Both servers are reached once before any work (`reachable`), so a server that is down ends
the run at once with one line. The judge's structured output goes through instructor in `tools` mode (a
forced function call, which llama.cpp's server turns into a grammar, so even a tiny model's judgement parses)
or `json` mode (ragas' own choice, JSON object output).

The scores also come as Haystack's `EvaluationRunResult` (`run_result`), as Haystack's own evaluators give
them: its `detailed_report()` and `aggregated_report()`, or `comparative_detailed_report()` against another run.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from needle.core.errors import LLMError
from needle.evaluation import metrics
from needle.evaluation._ragas import BaseRagasEmbedding, InstructorLLM, RagasEvaluator, llm_metrics

METRICS = ("faithfulness", "answer_relevancy", "context_utilization", "context_precision", "context_recall")
NEEDS_REFERENCE = ("context_precision", "context_recall")
STRUCTURED_OUTPUT = ("tools", "json")
# Seconds `reachable` waits for a server's model list: long enough for a busy server, short for a dead one.
PROBE_TIMEOUT = 10.0


def check_options(
    structured_output: str = "tools",
    max_tokens: int = 1024,
    retries: int = 1,
    strictness: int = 3,
    top_k: int = 1,
    metrics: Sequence[str] = METRICS,
) -> None:
    """
    Validate the options of an answer evaluation before any work starts.

    :raises ValueError: On an unknown `structured_output` or metric, no metric, `max_tokens`, `strictness` or
        `top_k` below 1, or `retries` below 0.
    """
    unknown = [name for name in metrics if name not in METRICS]
    if unknown or not metrics:
        raise ValueError(f"metrics must be some of {', '.join(METRICS)}, got {', '.join(unknown) or 'none'}")
    if structured_output not in STRUCTURED_OUTPUT:
        raise ValueError(f"structured_output must be one of {', '.join(STRUCTURED_OUTPUT)}, got {structured_output!r}")
    for name, value in (("max_tokens", max_tokens), ("strictness", strictness), ("top_k", top_k)):
        if value < 1:
            raise ValueError(f"{name} must be > 0, got {value}")
    if retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")


class HaystackTextEmbedding(BaseRagasEmbedding):
    """
    ragas embeddings from any Haystack text embedder (Needle passes its offline fastembed model).

    ragas' own `HaystackEmbeddingsWrapper` implements the older interface and accepts only four embedder
    classes, none of them offline; answer relevancy needs the newer `BaseRagasEmbedding`.
    """

    PROVIDER_NAME = "haystack"

    def __init__(self, embedder: Any, model: str) -> None:
        """
        Wrap an embedder.

        :param embedder: A Haystack text embedder (`run(text=...)` returning `embedding`), warmed up or not.
        :param model: The model's name, for reports.
        """
        super().__init__()
        self.embedder = embedder
        self.model = model
        self._warmed_up = False

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        """The embedding of one text."""
        if not self._warmed_up and hasattr(self.embedder, "warm_up"):
            self.embedder.warm_up()
        self._warmed_up = True
        return [float(x) for x in self.embedder.run(text=text)["embedding"]]

    async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
        """The embedding of one text (computed in this thread: the model is local and fast)."""
        return self.embed_text(text)


def offline_embedding(settings: Any) -> HaystackTextEmbedding:
    """The query embedder of Needle's graphs (the configured model, offline when bundled) for ragas."""
    from haystack_integrations.components.embedders.fastembed import FastembedTextEmbedder
    from needle.core.model_files import dense_embedder_params

    params = dense_embedder_params(settings.embedding.model, settings.model_dir)
    embedder = FastembedTextEmbedder(
        **params, prefix=settings.embedding.query_prefix or "", threads=1, progress_bar=False
    )
    return HaystackTextEmbedding(embedder, settings.embedding.model)


def judge_settings(
    settings: Any, url: str | None = None, model: str | None = None, timeout: float | None = None
) -> Any:
    """
    The judge's server, model, key and timeout: those given, then `eval.judge`'s, then the `llm` section's
    (its timeout is `eval.judge.timeout`, never `llm.timeout`, which governs the answers).

    :param settings: Needle's settings.
    :param url: `--judge-url`.
    :param model: `--judge-model`.
    :param timeout: `--judge-timeout`, seconds per request.
    :returns: An `LLMSettings` naming the judge.
    :raises ValueError: When `timeout` is not positive.
    """
    if timeout is not None and timeout <= 0:
        raise ValueError(f"the judge's timeout must be > 0 seconds, got {timeout}")
    judge, llm = settings.eval.judge, settings.llm
    return llm.model_copy(
        update={
            "url": url or judge.url or llm.url,
            "model": model or judge.model or llm.model,
            "api_key_env": judge.api_key_env or llm.api_key_env,
            "timeout": timeout or judge.timeout,
        }
    )


def _judge_error(judge: Any, error: BaseException) -> LLMError:
    """An OpenAI client error of the judge, naming the settings that point at it."""
    import openai

    what = "no judge answered" if isinstance(error, openai.APIConnectionError) else "cannot use the judge"
    return LLMError(
        f"{what} at {judge.url} (model {judge.model}): {str(error).strip().rstrip('.') or type(error).__name__}. "
        "Point `eval.judge` (or --judge-url and --judge-model) at an OpenAI-compatible server; its API key is read "
        f"from ${judge.api_key_env} (any value for a local server)."
    )


def reachable(settings: Any, judge: Any | None = None) -> None:
    """
    Check once that a server listens (its model list), before any answer or judgement: a server that is down
    ends the run with one line instead of failing every sample. A server without a model list passes, and so
    does one too busy to list its models in time (its answers then time out, or not, one by one).

    :param settings: Needle's settings (the `llm` section, or the judge's section through `judge`).
    :param judge: The judge (`judge_settings`); `None` checks the `llm` server.
    :raises LLMError: When nothing answers at the URL, or the client cannot start (no API key).
    """
    import openai

    from needle.core.errors import llm_error

    target = judge or settings.llm
    try:
        client = openai.OpenAI(
            base_url=target.url,
            api_key=os.environ.get(target.api_key_env),
            timeout=PROBE_TIMEOUT,
            max_retries=0,
        )
        client.models.list()
    except openai.APIStatusError:
        return  # something answered: a server without a model list still chats
    except openai.APITimeoutError:
        return  # something took the connection: a busy server answers later, or its answers time out one by one
    except openai.OpenAIError as error:
        raise (_judge_error(target, error) if judge is not None else llm_error(settings, error)) from None


def judge_llm(
    settings: Any, structured_output: str = "tools", max_tokens: int = 1024, retries: int = 1, judge: Any = None
) -> Any:
    """
    The ragas judge; build it inside the event loop that will use it.

    :param settings: Needle's settings (`eval.judge`, else the `llm` section, names the judge).
    :param judge: The judge's `LLMSettings` (`judge_settings`); from `settings` when `None`.
    :param structured_output: `tools` or `json` (see the module's docstring).
    :param max_tokens: Tokens per judgement.
    :param retries: Times instructor asks again after a judgement that does not parse.
    :returns: A ragas `InstructorLLM`.
    :raises ValueError: On an unknown `structured_output`, or `max_tokens` < 1 or `retries` < 0.
    :raises LLMError: When the OpenAI client refuses to start (no API key).
    """
    import instructor
    import openai

    check_options(structured_output, max_tokens, retries)
    llm = judge or judge_settings(settings)
    try:
        client = openai.AsyncOpenAI(
            base_url=llm.url, api_key=os.environ.get(llm.api_key_env), timeout=llm.timeout, max_retries=0
        )
    except openai.OpenAIError as error:
        raise _judge_error(llm, error) from None
    mode = instructor.Mode.TOOLS if structured_output == "tools" else instructor.Mode.JSON
    return InstructorLLM(
        client=instructor.from_openai(client, mode=mode),
        model=llm.model,
        provider="openai",
        max_tokens=max_tokens,
        temperature=0.0,
        max_retries=retries,
    )


def answer_metrics(llm: Any, embeddings: Any, strictness: int = 3, names: Sequence[str] = METRICS) -> dict[str, Any]:
    """
    The named ragas metrics of `METRICS`, each with the judge.

    :param strictness: Questions answer relevancy generates back from each answer.
    :param names: Which metrics.
    :raises ValueError: If `strictness` is below 1 or a name is unknown.
    """
    check_options(strictness=strictness, metrics=names)
    factories = {
        "faithfulness": lambda: llm_metrics.Faithfulness(llm=llm),
        "answer_relevancy": lambda: llm_metrics.AnswerRelevancy(llm=llm, embeddings=embeddings, strictness=strictness),
        "context_utilization": lambda: llm_metrics.ContextUtilization(llm=llm),
        "context_precision": lambda: llm_metrics.ContextPrecision(llm=llm),
        "context_recall": lambda: llm_metrics.ContextRecall(llm=llm),
    }
    return {name: factories[name]() for name in METRICS if name in names}


def failure_reason(error: BaseException) -> str:
    """One line saying why a metric failed: the last attempt's error when instructor gave up retrying."""
    attempts = getattr(error, "failed_attempts", None) or []
    last = attempts[-1].exception if attempts else error
    first_line = next((line.strip() for line in str(last).splitlines() if line.strip()), "")
    prefix = f"no usable judgement after {len(attempts)} attempt(s): " if attempts else ""
    return f"{prefix}{type(last).__name__}: {first_line}"[:500]


async def score_answer(evaluators: Mapping[str, Any], sample: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """
    Score one answer with each evaluator; a metric that fails scores NaN with the reason.

    :param evaluators: Metric name to a `RagasEvaluator` holding that one metric.
    :param sample: `question`, `answer`, `contexts` (texts) and `reference` (or `None`).
    :returns: Per metric: `value` (a float, NaN when undefined or failed), `reason` (`None` for a number)
        and `seconds`.
    """
    scores: dict[str, dict[str, Any]] = {}
    for name, evaluator in evaluators.items():
        started = time.perf_counter()
        if name in NEEDS_REFERENCE and not sample["reference"]:
            value, reason = math.nan, "needs a reference answer (`reference:` in the golden file)"
        elif not sample["answer"]:
            value, reason = math.nan, "no answer to score"
        else:
            try:
                result = (
                    await evaluator.run_async(
                        query=sample["question"],
                        response=sample["answer"],
                        documents=list(sample["contexts"]),
                        reference=sample["reference"],
                    )
                )["result"][name]
                value, reason = float(result.value), result.reason
            except Exception as error:
                value, reason = math.nan, failure_reason(error)
            if math.isnan(value) and not reason:
                reason = "ragas found nothing to score in the judgement (e.g. no statements, no verdicts)"
        scores[name] = {"value": value, "reason": reason, "seconds": round(time.perf_counter() - started, 2)}
    return scores


def generate_answers(
    needle: Any, cases: Sequence[Mapping[str, Any]], pipeline: str = "rag", top_k: int = 3, progress: bool = False
) -> list[dict[str, Any]]:
    """
    Answer each question through an answer graph.

    A question the LLM cannot answer (a timeout, a refusal) is recorded with its error and an empty answer,
    which scores NaN for that sample; the others go on. `reachable` checks the server first.

    :param needle: A `Needle` bound to the index the questions are about.
    :param cases: `id`, `question` and `reference` (or `None`) each.
    :param pipeline: The answer graph (`rag` or a YAML path).
    :param top_k: Chunks given to the LLM per question.
    :param progress: Whether to show a progress bar.
    :returns: Per question: `id`, `question`, `reference`, `answer`, `contexts` (chunk texts), `context_refs`
        (`collection/path:start-end`), `cited` (refs of the chunks the answer cites), `unknown_citations`,
        `seconds` and `error` (`None` when answered).
    """
    from tqdm import tqdm

    from needle.core.requests import AnswerRequest
    from needle.core.results import Answer

    answers = []
    for case in tqdm(cases, desc=f"{pipeline} answers", unit="q", disable=not progress):
        started = time.perf_counter()
        try:
            answer = needle.answer(AnswerRequest(question=case["question"], limit=top_k), pipeline)
            error = None
        except LLMError as failure:
            answer = Answer(answer="", label="NO_RESULTS", results=[], cited=[], unknown_citations=[])
            error = str(failure)
        answers.append(
            {
                "id": case["id"],
                "question": case["question"],
                "reference": case.get("reference"),
                "answer": answer.answer,
                "contexts": [r.text for r in answer.results],
                "context_refs": [f"{r.collection}/{r.path}:{r.start_line}-{r.end_line}" for r in answer.results],
                "cited": [f"{r.collection}/{r.path}:{r.start_line}-{r.end_line}" for r in answer.cited],
                "unknown_citations": answer.unknown_citations,
                "seconds": round(time.perf_counter() - started, 2),
                "error": error,
            }
        )
    return answers


def score_answers(
    answers: Sequence[Mapping[str, Any]],
    settings: Any,
    embeddings: Any = None,
    structured_output: str = "tools",
    max_tokens: int = 1024,
    retries: int = 1,
    strictness: int = 3,
    metrics: Sequence[str] = METRICS,
    progress: bool = False,
    judge: Any = None,
) -> list[dict[str, dict[str, Any]]]:
    """
    Score answers with ragas' LLM metrics through ragas-haystack's `RagasEvaluator`, one per metric.

    Everything runs in one event loop, which the judge's async client belongs to.

    :param answers: `question`, `answer`, `contexts` and `reference` each (what `generate_answers` returns).
    :param settings: Needle's settings; the `llm` section names the judge.
    :param embeddings: ragas embeddings for answer relevancy; Needle's offline model when `None`.
    :param structured_output: The judge's `tools` or `json` mode.
    :param max_tokens: Tokens per judgement.
    :param retries: Times the judge is asked again after output that does not parse.
    :param strictness: Questions answer relevancy generates per answer.
    :param metrics: Which of `METRICS` to score.
    :param progress: Whether to show a progress bar.
    :param judge: The judge's `LLMSettings` (`judge_settings`); from `settings` when `None`.
    :returns: Per answer, what `score_answer` returns.
    :raises ValueError: On a bad option.
    :raises LLMError: When the judge's client cannot start (no API key).
    """
    check_options(structured_output, max_tokens, retries, strictness, metrics=metrics)
    if embeddings is None and "answer_relevancy" in metrics:
        embeddings = offline_embedding(settings)

    async def score_all() -> list[dict[str, dict[str, Any]]]:
        from tqdm import tqdm

        llm = judge_llm(settings, structured_output, max_tokens, retries, judge)
        evaluators = {
            name: RagasEvaluator(ragas_metrics=[metric])
            for name, metric in answer_metrics(llm, embeddings, strictness, metrics).items()
        }
        return [
            await score_answer(evaluators, sample)
            for sample in tqdm(answers, desc="ragas judgements", unit="answer", disable=not progress)
        ]

    return asyncio.run(score_all())


def summarise(per_query: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per metric that ran: `mean` over the answers it scored (NaN when none), `scored` and `nan` counts."""
    summary = {}
    for name in METRICS:
        values = [row["metrics"][name]["value"] for row in per_query.values() if name in row["metrics"]]
        if not values:
            continue
        numbers = [v for v in values if not math.isnan(v)]
        summary[name] = {
            "mean": metrics.mean(numbers) if numbers else math.nan,
            "scored": len(numbers),
            "nan": len(values) - len(numbers),
        }
    return summary


def answers_section(
    needle: Any,
    cases: Sequence[Mapping[str, Any]],
    pipeline: str = "rag",
    top_k: int = 3,
    structured_output: str = "tools",
    max_tokens: int = 1024,
    retries: int = 1,
    strictness: int = 3,
    metrics: Sequence[str] = METRICS,
    embeddings: Any = None,
    progress: bool = False,
    judge: Any = None,
) -> dict[str, Any]:
    """
    Answer the questions and score the answers with ragas' LLM metrics.

    :param needle: A `Needle` bound to the index the questions are about; its `llm` settings name the server.
    :param cases: `id`, `question` and `reference` (or `None`) each.
    :param pipeline: The answer graph.
    :param top_k: Chunks given to the LLM per question.
    :param structured_output: The judge's `tools` or `json` mode.
    :param max_tokens: Tokens per judgement.
    :param retries: Times the judge is asked again after output that does not parse.
    :param strictness: Questions answer relevancy generates per answer.
    :param metrics: Which of `METRICS` to score.
    :param embeddings: ragas embeddings for answer relevancy; Needle's offline model when `None`.
    :param progress: Whether to show progress bars.
    :param judge: The judge's `LLMSettings` (`judge_settings`); `eval.judge`, else the `llm` section, when `None`.
    :returns: `pipeline`, `answered_by` (url, model, timeout), `judge` (url, model, timeout, structured output),
        `contexts`, `summary` and `per_query` (each answer, its contexts and citations, and per metric `value`
        and `reason`).
    :raises ValueError: On a bad option.
    :raises LLMError: When the answering server or the judge does not answer at all, or cannot start.
    """
    check_options(structured_output, max_tokens, retries, strictness, top_k, metrics)
    settings = needle.settings
    judge = judge or judge_settings(settings)
    reachable(settings)
    if (judge.url, judge.api_key_env) != (settings.llm.url, settings.llm.api_key_env):
        reachable(settings, judge)
    answers = generate_answers(needle, cases, pipeline, top_k, progress)
    scored = score_answers(
        answers, settings, embeddings, structured_output, max_tokens, retries, strictness, metrics, progress, judge
    )
    per_query = {answer["id"]: {**answer, "metrics": scores} for answer, scores in zip(answers, scored)}
    return {
        "pipeline": pipeline,
        "answered_by": {"url": settings.llm.url, "model": settings.llm.model, "timeout": settings.llm.timeout},
        "judge": {
            "url": judge.url,
            "model": judge.model,
            "timeout": judge.timeout,
            "structured_output": structured_output,
        },
        "contexts": top_k,
        "summary": summarise(per_query),
        "per_query": per_query,
    }


def run_result(section: Mapping[str, Any], run_name: str | None = None) -> Any:
    """
    The answers' scores as Haystack's `EvaluationRunResult`: inputs `question`, `answer`, `contexts`,
    `reference`, `error`; per metric that ran, the mean `score` and the `individual_scores` (NaN where it failed).

    :param section: What `answers_section` returns (or the `answers` of a report read back from JSON, where
        NaN is `null`).
    :param run_name: The run's name; the answer graph's by default.
    """
    from haystack.evaluation import EvaluationRunResult

    rows = list(section["per_query"].values())

    def number(value: Any) -> float:
        return math.nan if value is None else float(value)

    results = {
        name: {
            "score": number(summary["mean"]),
            "individual_scores": [number(row["metrics"][name]["value"]) for row in rows],
        }
        for name, summary in section["summary"].items()
    }
    inputs = {
        "question": [row["question"] for row in rows],
        "answer": [row["answer"] for row in rows],
        "contexts": [list(row["contexts"]) for row in rows],
        "reference": [row.get("reference") for row in rows],
        "error": [row.get("error") for row in rows],
    }
    return EvaluationRunResult(run_name or str(section["pipeline"]), inputs=inputs, results=results)


def format_answers(section: Mapping[str, Any]) -> str:
    """A markdown summary: per metric the mean, answers scored and NaN; then the NaN reasons."""
    judge = section["judge"]
    answered = section.get("answered_by") or {}
    failed = sum(bool(row.get("error")) for row in section["per_query"].values())
    lines = [
        f"{section['pipeline']} answers by {answered.get('model', '?')}, judged by {judge['model']} at {judge['url']} "
        f"({judge['structured_output']} mode), {section['contexts']} contexts each"
        + (f"; {failed} answer(s) failed (NaN)" if failed else ""),
        "",
        "| metric | mean | scored | NaN |",
        "|---|---|---|---|",
    ]
    for name, s in section["summary"].items():
        lines.append(f"| {name} | {s['mean']:.4f} | {s['scored']} | {s['nan']} |")
    reasons = sorted(
        {
            f"{name}: {m['reason']}"
            for row in section["per_query"].values()
            for name, m in row["metrics"].items()
            if math.isnan(m["value"])
        }
    )
    if reasons:
        lines += ["", "NaN reasons:", *(f"- {r}" for r in reasons)]
    return "\n".join(lines)
