"""The error-handling matrix of the design notes (seed 001, Appendix B), row by row, as a user meets each case.

| scenario | Needle's behaviour |
|---|---|
| embedding model file missing at start-up | one line naming the model folder and `needle models`, exit 1 |
| index built with another model or prefixes | search refused, naming `needle index --rebuild`, exit 1 |
| tokenizer file missing | as a missing model file: the folder and `needle models`, exit 1 |
| ONNX runtime failure at query time | BM25 answers alone, a warning says why, the confidence drops |
| self-query extracts an invalid filter value | the self-query stage's own tests (it lives at the head of the query graphs) |
| decomposer produces empty sub-queries | the question is searched alone, exactly as without decomposition |
| RRF receives a single result set | that set comes back in its own order (also `test_weighted_rrf_joiner.py`) |
| self-RAG retry would search the identical query | no retry; the answer stands with a warning saying why |
| coverage still below the threshold after all retries | the answer, a lower confidence, HALLUCINATION_RISK and a warning |

The answer loop runs `pipelines/rag.yml` itself with a scripted chat generator in place of the LLM, so that
what the answers cite (and so the coverage) is known.
"""

from __future__ import annotations

import re
import shutil

import pytest
from haystack import Document, component
from haystack.dataclasses import ChatMessage

from haystack_integrations.components.routers.needle.self_rag_retry import SelfRAGRetry
from needle.core.requests import QueryRequest, SearchRequest
from needle.runtime.contract import GraphContract
from needle.runtime.loader import load_pipeline

pytestmark = pytest.mark.integration
QUESTION = "How do I feed my sourdough starter?"
_LABEL = re.compile(r"^\[([^\[\]\n]+:\d+-\d+)\]$", re.MULTILINE)


@component
class ScriptedChat:
    """Answers each prompt with `script(labels given, round)`; records the labels of every prompt."""

    def __init__(self, script) -> None:
        self.script = script
        self.prompts: list[list[str]] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict:
        labels = _LABEL.findall("\n".join(m.text or "" for m in messages))
        self.prompts.append(labels)
        return {"replies": [ChatMessage.from_assistant(self.script(labels, len(self.prompts)))]}


def rag_with(needle, script, **overrides):
    """`pipelines/rag.yml` in the demo index's environment, its generator replaced by a scripted one."""
    pipeline = load_pipeline("rag", needle.environment, overrides)
    pipeline.remove_component("generate")
    chat = ScriptedChat(script)
    pipeline.add_component("generate", chat)
    pipeline.connect("prompt.prompt", "generate.messages")
    pipeline.connect("generate.replies", "cite.replies")
    return pipeline, chat


def ask(needle, pipeline, retry: bool = True, top_k: int = 2) -> dict:
    request = {"query": QUESTION, "limit": top_k, "chunks": False, "retry": retry}  # the graph's declared inputs
    return pipeline.run(
        GraphContract.of(pipeline, "rag").feed(request),
        include_outputs_from={"retry", "confidence", "answer_confidence", "answer_label", "coverage"},
    )


def first(labels: list[str], word: str) -> str:
    return next(label for label in labels if word in label)


@pytest.fixture
def local_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")


class TestStartUpAndIndex:
    @pytest.mark.parametrize("missing", ["model.onnx", "tokenizer.json"])
    def test_a_missing_model_or_tokenizer_file_names_the_folder_and_the_fix(
        self, cli, demo_needle, tmp_path, monkeypatch, missing
    ):
        models = tmp_path / "models"
        shutil.copytree(demo_needle.settings.model_dir, models, symlinks=True)
        broken = next(p for p in models.rglob(missing))
        broken.unlink()
        monkeypatch.setenv("NEEDLE_MODEL_DIR", str(models))
        code, out, err = cli("query", "sourdough starter")
        assert code == 1 and out == ""
        assert err.startswith("error: the embedding model") and str(broken.parent) in err and "needle models" in err
        assert "Traceback" not in err

    def test_an_index_built_with_another_model_refuses_to_search(self, cli, monkeypatch):
        monkeypatch.setenv("NEEDLE_EMBEDDING__QUERY_PREFIX", "query: ")
        code, out, err = cli("query", "sourdough starter")
        assert code == 1 and out == "" and "needle index --rebuild" in err and "Traceback" not in err


class TestSearch:
    def test_an_onnx_runtime_failure_leaves_bm25_to_answer_with_a_warning(self, demo_needle, monkeypatch):
        from onnxruntime.capi.onnxruntime_pybind11_state import Fail

        query = "how often to feed a sourdough starter at room temperature"
        healthy = demo_needle.search(SearchRequest(query=query, limit=3))
        backend = demo_needle.pipeline("query").get_component("dense_embedder").embedder.embedding_backend

        def fail(*args, **kwargs):
            raise Fail("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Gather node")

        monkeypatch.setattr(backend.model, "embed", fail)
        degraded = demo_needle.search(SearchRequest(query=query, limit=3, explain=True))
        assert degraded.results and degraded.results[0].path == "recipes/sourdough-starter-feeding.md"
        assert degraded.warnings and degraded.warnings[0].startswith(
            "vector search skipped: the embedding model failed"
        )
        assert "cosine" not in degraded.explain["confidence"]
        assert degraded.confidence < healthy.confidence

    def test_empty_sub_questions_fall_back_to_the_question_alone(self, demo_needle):
        query = "; sourdough starter feeding ;"
        split = demo_needle.search(QueryRequest(query=query, limit=5, decompose=True, explain=True))
        assert split.explain["sub_questions"] == []
        assert (
            split.results
            == demo_needle.search(QueryRequest(query=query, limit=5, decompose=False, explain=True)).results
        )

    def test_a_single_result_set_is_not_refused(self, demo_needle):
        # A single-part question with decomposition on fuses only its own lists: the same results as off.
        query = "git rebase onto another branch"
        assert (
            demo_needle.search(QueryRequest(query=query, limit=5, decompose=True)).results
            == demo_needle.search(SearchRequest(query=query, limit=5)).results
        )


class TestAnswerLoop:
    def test_low_coverage_searches_the_gap_and_answers_again(self, demo_needle, local_key):
        def script(labels, round_):
            feeding = first(labels, "sourdough-starter-feeding")
            if round_ == 1:
                return f"Feed the starter flour and water [{feeding}]. Keep the restic repository password in a file."
            restic = first(labels, "restic")
            return f"Feed the starter flour and water [{feeding}]. Keep the restic repository password in a file [{restic}]."

        pipeline, chat = rag_with(demo_needle, script)
        out = ask(demo_needle, pipeline)
        assert len(chat.prompts) == 2 and len(chat.prompts[1]) > len(chat.prompts[0])
        assert any("restic" in label for label in chat.prompts[1])
        assert out["retry"]["retries"] == 1 and out["retry"]["coverage"] == 1.0 and out["retry"]["warnings"] == []
        assert out["retry"]["queries"][0].startswith(QUESTION + " ")
        assert out["answer_label"]["label"] == "PASS"
        assert out["answer_confidence"]["confidence"] == out["confidence"]["confidence"]

    def test_an_identical_retry_query_is_skipped(self):
        # The uncovered claim adds no word the chunks lack: a retry would search the question again.
        given = [Document(id="a", content="Feed the starter equal weights of flour and water every morning.")]
        retry = SelfRAGRetry(retriever=_NeverCalled(), enabled=True)
        out = retry.run(
            query=QUESTION,
            documents=given,
            answer="x",
            coverage=0.0,
            uncovered=["Feed flour and water every morning."],
            claims=[{"text": "Feed flour and water every morning.", "covered": False}],
        )
        assert out["retries"] == 0 and out["answer"] == "x" and "would search the same" in out["warnings"][0]

    def test_coverage_still_low_after_the_retries_is_a_warning_and_a_lower_confidence(self, demo_needle, local_key):
        def script(labels, round_):
            return f"Kafka brokers rebalance partitions nightly [{first(labels, 'sourdough-starter-feeding')}]."

        pipeline, chat = rag_with(demo_needle, script)
        out = ask(demo_needle, pipeline)
        assert len(chat.prompts) == 2 and out["retry"]["retries"] == 1 and out["retry"]["coverage"] == 0.0
        assert out["retry"]["warnings"] == [
            "low coverage: 1 of 1 claims are not supported by the chunks they cite after 1 retry"
        ]
        assert out["retry"]["uncovered"] == ["Kafka brokers rebalance partitions nightly ."]
        assert out["answer_confidence"]["confidence"] == pytest.approx(out["confidence"]["confidence"] * 0.5, abs=1e-4)
        assert out["answer_label"]["label"] == "HALLUCINATION_RISK"

    def test_retry_off_answers_once_and_still_reports_the_coverage(self, demo_needle, local_key):
        pipeline, chat = rag_with(demo_needle, lambda labels, _: "Kafka brokers rebalance partitions nightly.")
        out = ask(demo_needle, pipeline, retry=False)
        assert len(chat.prompts) == 1 and out["retry"]["retries"] == 0 and out["retry"]["coverage"] == 0.0
        assert out["retry"]["warnings"][0].startswith("low coverage: 1 of 1 claims")


@component
class _NeverCalled:
    @component.output_types(lists=dict[str, list[Document]])
    def run(self, variants: list[dict], filters: dict | None = None) -> dict:
        raise AssertionError("the retry searched although the query would be the same")
