"""pipelines/query-llm.yml end to end against a real OpenAI-compatible server (llama.cpp, a tiny model).

The model is far too small to expand queries or judge relevance well; what is tested is the real path:
the graph loads, calls the server for expansion and for rerank judgements, falls back where the output
is unusable, and still answers with ranked, labelled results.
"""

import pytest

from haystack_integrations.components.classifiers.needle.result_labeler import LABELS
from needle.core.requests import SearchRequest
from needle.facade.api import Needle
from tests.llm_server import MODEL_NAME

pytestmark = pytest.mark.integration


# What the settings' `max_tokens`, `max_lex`, `max_vec` and the rerank section's `candidates`/`top_n` were
# before the knobs moved into the graph: overrides by component and parameter.
SMALL = {
    "expander.max_lex": 1,
    "expander.max_vec": 1,
    "expander.chat_generator.generation_kwargs": {"max_tokens": 40, "temperature": 0.0},
    "rerank.ranker.chat_generator.generation_kwargs": {"max_tokens": 40, "temperature": 0.0},
    "rerank.candidates": 2,
    "rerank.top_k": 2,
}


def with_llm(needle: Needle, **llm: object) -> Needle:
    settings = needle.settings.model_copy(update={"llm": needle.settings.llm.model_copy(update=llm)})
    return Needle(settings, environment=needle.environment.derive(settings))


def test_llm_graph_expands_reranks_and_answers(demo_needle, llm_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    needle = with_llm(demo_needle, url=llm_server, model=MODEL_NAME, timeout=60.0)
    answer = needle.search(
        SearchRequest(query="sourdough starter feeding schedule", limit=3, explain=True, set=SMALL),
        pipeline="query-llm",
    )
    assert answer.label in LABELS
    results = answer.results
    assert results and results[0].path.startswith("recipes/sourdough")
    reranked = [r for r in results if (r.explain.get("rerank") or {}).get("input_rank")]
    assert reranked, "the rerank stage should have seen the leading candidates"


def test_llm_graph_falls_back_when_the_server_is_down(demo_needle, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    needle = with_llm(demo_needle, url="http://127.0.0.1:9/v1", timeout=2.0)
    results = needle.search(
        SearchRequest(query="sourdough starter feeding schedule", limit=3, set=SMALL), pipeline="query-llm"
    ).results
    assert results and results[0].path.startswith("recipes/sourdough")
