"""pipelines/query-llm.yml end to end against a real OpenAI-compatible server (llama.cpp, a tiny model).

The model is far too small to expand queries or judge relevance well; what is tested is the real path:
the graph loads, calls the server for expansion and for rerank judgements, falls back where the output
is unusable, and still answers with ranked, labelled results.
"""

import pytest

from components.result_labeler import LABELS
from tests.llm_server import MODEL_NAME, llm_server  # noqa: F401

pytestmark = pytest.mark.integration


def test_llm_graph_expands_reranks_and_answers(demo_needle, llm_server, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    settings = demo_needle.settings.model_copy(
        update={
            "llm": demo_needle.settings.llm.model_copy(
                update={"url": llm_server, "model": MODEL_NAME, "max_tokens": 40, "timeout": 60.0, "max_lex": 1, "max_vec": 1}
            ),
            "rerank": demo_needle.settings.rerank.model_copy(update={"candidates": 2, "top_n": 2}),
        }
    )
    answer = demo_needle.derive(settings).ask("sourdough starter feeding schedule", mode="query-llm", top_k=3)
    assert answer["label"] in LABELS
    results = answer["results"]
    assert results and results[0].path.startswith("recipes/sourdough")
    reranked = [r for r in results if (r.meta.get("rerank") or {}).get("input_rank")]
    assert reranked, "the rerank stage should have seen the leading candidates"


def test_llm_graph_falls_back_when_the_server_is_down(demo_needle, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    settings = demo_needle.settings.model_copy(
        update={
            "llm": demo_needle.settings.llm.model_copy(update={"url": "http://127.0.0.1:9/v1", "timeout": 2.0}),
            "rerank": demo_needle.settings.rerank.model_copy(update={"candidates": 2, "top_n": 2}),
        }
    )
    results = demo_needle.derive(settings).search("sourdough starter feeding schedule", mode="query-llm", top_k=3)
    assert results and results[0].path.startswith("recipes/sourdough")
