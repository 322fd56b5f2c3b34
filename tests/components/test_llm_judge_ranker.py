import pytest
from haystack import Document, Pipeline, component
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret

from haystack_integrations.components.rankers.needle.llm_judge_ranker import (
    LLMJudgeRanker,
    order_known_scores,
    parse_judgement,
)
from needle.runtime.loader import loads_pipeline
from tests.llm_server import MODEL_NAME


@pytest.fixture(autouse=True)
def _placeholder_api_key(monkeypatch):
    """Haystack 2.x builds the OpenAI client in `__init__`, which refuses to start without some key."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder-for-a-local-server")


@component
class FakeJudge:
    """Rates a passage by the number its text ends with (or raises for passages containing 'boom')."""

    def __init__(self, model: str = "fake-judge") -> None:
        self.model = model
        self.prompts: list[str] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict:
        prompt = messages[-1].text
        self.prompts.append(prompt)
        passage = prompt.split("Passage:\n", 1)[1].split("\n\n", 1)[0]
        if "boom" in passage:
            raise RuntimeError("judge down")
        return {"replies": [ChatMessage.from_assistant(f"Score: {passage.split()[-1]}")]}


def openai_generator(url: str = "http://127.0.0.1:9/v1", **kwargs) -> OpenAIChatGenerator:
    return OpenAIChatGenerator(
        api_key=Secret.from_env_var("OPENAI_API_KEY", strict=False),
        model=MODEL_NAME,
        api_base_url=url,
        max_retries=0,
        **kwargs,
    )


def docs(*texts: str) -> list[Document]:
    return [Document(id=f"d{i}", content=text, score=1.0 - i / 10) for i, text in enumerate(texts)]


class TestParseJudgement:
    @pytest.mark.parametrize(
        "text, expected",
        [
            ("7", 0.7),
            ("0", 0.0),
            ("10", 1.0),
            ("Score: 8/10", 0.8),
            ("I'd rate it 6.5 out of 10.", 0.65),
            ("**9**", 0.9),
            ("Relevance: 3\nbecause...", 0.3),
            ("The 2024 notes, rated 4", 0.4),
            ("Passage 1 scores 8/10", 0.8),
        ],
    )
    def test_reads_the_rating(self, text, expected):
        assert parse_judgement(text) == pytest.approx(expected)

    @pytest.mark.parametrize("text", ["", None, "relevant", "eleven", "42"])
    def test_no_rating_is_none(self, text):
        assert parse_judgement(text) is None


class TestOrderKnownScores:
    def test_unknown_scores_keep_their_position(self):
        assert order_known_scores(docs("a", "b", "c", "d"), [0.1, None, 0.9, 0.5]) == [2, 1, 3, 0]

    def test_all_unknown_keeps_input_order(self):
        assert order_known_scores(docs("a", "b"), [None, None]) == [0, 1]

    def test_ties_keep_input_order(self):
        assert order_known_scores(docs("a", "b", "c"), [0.5, 0.5, 0.7]) == [2, 0, 1]


class TestLLMJudgeRanker:
    def test_init_defaults(self):
        ranker = LLMJudgeRanker(chat_generator=FakeJudge())
        assert (ranker.top_k, ranker.max_chars) == (None, 2000)

    @pytest.mark.parametrize("kwargs, message", [({"top_k": 0}, "top_k"), ({"max_chars": 0}, "max_chars")])
    def test_bad_params_raise(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            LLMJudgeRanker(chat_generator=FakeJudge(), **kwargs)

    def test_to_dict(self):
        generator = openai_generator(generation_kwargs={"max_tokens": 3})
        assert LLMJudgeRanker(chat_generator=generator, top_k=5).to_dict() == {
            "type": "haystack_integrations.components.rankers.needle.llm_judge_ranker.LLMJudgeRanker",
            "init_parameters": {
                "chat_generator": component_to_dict(generator, "chat_generator"),
                "top_k": 5,
                "max_chars": 2000,
            },
        }

    def test_from_dict_round_trip_rebuilds_the_generator(self):
        ranker = LLMJudgeRanker(chat_generator=openai_generator(generation_kwargs={"max_tokens": 3}), max_chars=50)
        again = LLMJudgeRanker.from_dict(ranker.to_dict())
        assert isinstance(again.chat_generator, OpenAIChatGenerator)
        assert again.to_dict() == ranker.to_dict()

    def test_pipeline_yaml_round_trip(self):
        pipeline = Pipeline()
        pipeline.add_component("judge", LLMJudgeRanker(chat_generator=openai_generator(), top_k=3))
        assert loads_pipeline(pipeline.dumps()).to_dict() == pipeline.to_dict()

    def test_orders_by_rating_with_one_call_per_document(self):
        judge = FakeJudge()
        ranked = LLMJudgeRanker(chat_generator=judge).run(query="q", documents=docs("a 2", "b 9", "c 5"))["documents"]
        assert [(d.id, d.score) for d in ranked] == [("d1", 0.9), ("d2", 0.5), ("d0", 0.2)]
        assert len(judge.prompts) == 3 and judge.prompts[0].startswith("Query: q\n")

    def test_failed_judgement_keeps_input_position_unscored(self):
        ranked = LLMJudgeRanker(chat_generator=FakeJudge()).run(
            query="q", documents=docs("a 2", "boom", "c 9", "no number here")
        )["documents"]
        assert [(d.id, d.score) for d in ranked] == [("d2", 0.9), ("d1", None), ("d0", 0.2), ("d3", None)]

    def test_all_failed_keeps_retrieval_order(self):
        ranked = LLMJudgeRanker(chat_generator=FakeJudge()).run(query="q", documents=docs("boom 1", "boom 2"))
        assert [d.id for d in ranked["documents"]] == ["d0", "d1"]

    def test_top_k_cuts_and_run_overrides_init(self):
        ranker = LLMJudgeRanker(chat_generator=FakeJudge(), top_k=1)
        assert len(ranker.run(query="q", documents=docs("a 1", "b 2", "c 3"))["documents"]) == 1
        assert len(ranker.run(query="q", documents=docs("a 1", "b 2", "c 3"), top_k=2)["documents"]) == 2
        with pytest.raises(ValueError, match="top_k"):
            ranker.run(query="q", documents=[], top_k=0)

    def test_sends_at_most_max_chars(self):
        judge = FakeJudge()
        LLMJudgeRanker(chat_generator=judge, max_chars=5).run(query="q", documents=docs("abcdefghij 7"))
        assert "Passage:\nabcde\n\n" in judge.prompts[0]

    def test_does_not_mutate_input_documents(self):
        documents = docs("a 2", "b 9")
        LLMJudgeRanker(chat_generator=FakeJudge()).run(query="q", documents=documents)
        assert [d.score for d in documents] == [1.0, 0.9]


@pytest.mark.integration
class TestLLMJudgeRankerWithServer:
    @pytest.fixture(autouse=True)
    def api_key(self, monkeypatch):
        """A local server takes any key, but the OpenAI client refuses to start without one."""
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")

    def test_judges_with_a_real_model(self, llm_server):
        # The grammar makes the tiny model answer a single digit; its judgement itself is meaningless.
        kwargs = {"max_tokens": 2, "temperature": 0, "extra_body": {"grammar": "root ::= [0-9]"}}
        ranker = LLMJudgeRanker(chat_generator=openai_generator(llm_server, timeout=60.0, generation_kwargs=kwargs))
        documents = docs("Docker Compose networks connect services.", "Bananas are yellow.")
        ranked = ranker.run(query="docker networking", documents=documents)["documents"]
        assert sorted(d.id for d in ranked) == ["d0", "d1"]
        assert all(d.score is not None and 0.0 <= d.score <= 0.9 for d in ranked)
