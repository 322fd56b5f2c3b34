import json
from typing import Any

import pytest
from haystack import Document, component
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret

from haystack_integrations.components.query.needle.llm_self_query_extractor import LLMSelfQueryExtractor
from haystack_integrations.document_stores.needle import EdgeDocumentStore

NOW = "2024-06-15T12:00:00Z"


@component
class ScriptedChat:
    """A chat generator that answers from a script (or raises)."""

    def __init__(self, answer: str = "{}", fail: bool = False) -> None:
        self.answer = answer
        self.fail = fail
        self.calls = 0

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict:
        self.calls += 1
        if self.fail:
            raise TimeoutError("no answer in 20 s")
        return {"replies": [ChatMessage.from_assistant(self.answer)]}


@pytest.fixture
def file_store(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "files"), embedding_dim=2, use_sparse_embeddings=False)
    store.write_documents(
        [
            Document(
                id="a",
                content="x",
                embedding=[1.0, 0.0],
                meta={
                    "collection": "notes",
                    "path": "travel/japan.md",
                    "source_doc_id": "notes:travel/japan.md",
                    "folders": ["travel"],
                    "tags": ["travel", "japan"],
                    "frontmatter": {"status": "planning"},
                },
            ),
        ]
    )
    return store


def reading(**values) -> str:
    return "Sure! " + json.dumps({"query": "trip plans", **values}) + " Hope that helps."


class TestLLMSelfQueryExtractor:
    def test_round_trip_keeps_the_nested_generator(self, file_store, monkeypatch):
        monkeypatch.setenv("OPENAI_API_KEY", "unused")  # Haystack 2.x opens the client in __init__
        generator = OpenAIChatGenerator(
            api_key=Secret.from_env_var("OPENAI_API_KEY", strict=False), model="m", timeout=5.0
        )
        extractor = LLMSelfQueryExtractor(chat_generator=generator, document_store=file_store, cache_ttl_hours=2)
        data = extractor.to_dict()
        assert data["init_parameters"]["chat_generator"]["type"].endswith("OpenAIChatGenerator")
        assert (data["init_parameters"]["min_results"], data["init_parameters"]["cache_ttl_hours"]) == (3, 2)
        again = LLMSelfQueryExtractor.from_dict(data).to_dict()

        def own(d: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in d["init_parameters"].items() if k != "chat_generator"}

        assert own(again) == own(data)
        generator_again = again["init_parameters"]["chat_generator"]
        assert generator_again["type"] == data["init_parameters"]["chat_generator"]["type"]
        assert generator_again["init_parameters"]["model"] == "m"

    def test_bad_params_raise(self):
        with pytest.raises(ValueError, match="cache_ttl_hours"):
            LLMSelfQueryExtractor(chat_generator=ScriptedChat(), cache_ttl_hours=0)

    def test_the_model_fills_what_the_rules_missed(self, file_store):
        chat = ScriptedChat(
            reading(tags=["Japan"], folder="travel/", where={"status": "planning"}, after="2024-01-01", recent=True)
        )
        out = LLMSelfQueryExtractor(chat_generator=chat, document_store=file_store).run(
            query="my trip plans for japan", now=NOW
        )
        assert out["query"] == "trip plans" and out["recent"] is True
        assert out["filters"] == {
            "operator": "AND",
            "conditions": [
                {"field": "meta.tags", "operator": "==", "value": "japan"},
                {"field": "meta.folders", "operator": "==", "value": "travel"},
                {"field": "meta.fields", "operator": "==", "value": "status=planning"},
                {"field": "meta.date", "operator": ">=", "value": "2024-01-01T00:00:00Z"},
            ],
        }
        assert out["self_query"]["llm"]["added"]["tags"] == ["japan"]

    def test_the_rules_win_where_they_read_something(self, file_store):
        chat = ScriptedChat(reading(tags=["japan"]))
        out = LLMSelfQueryExtractor(chat_generator=chat, document_store=file_store).run(
            query="#travel trip plans", now=NOW
        )
        assert out["filters"] == {"field": "meta.tags", "operator": "==", "value": "travel"}
        assert out["query"] == "trip plans"

    @pytest.mark.parametrize(
        "chat, reason",
        [
            (ScriptedChat(fail=True), "the model failed: TimeoutError"),
            (ScriptedChat("I think the user wants travel notes."), "no JSON object"),
            (ScriptedChat(reading(after="last spring")), "does not validate"),
            (ScriptedChat(reading(tags=["made-up"])), "tags the index does not have"),
            (ScriptedChat(reading(folder="secret")), "a folder the index does not have"),
            (ScriptedChat(reading(where={"owner": "me"})), "fields the index does not have"),
            (ScriptedChat(reading(after="2024-05-01", before="2024-01-01")), "date range is empty"),
            (ScriptedChat(json.dumps({"query": "completely different words"})), "words the question does not"),
        ],
    )
    def test_any_failure_leaves_the_rules_reading(self, file_store, chat, reason):
        out = LLMSelfQueryExtractor(chat_generator=chat, document_store=file_store).run(query="my trip plans", now=NOW)
        assert (out["query"], out["filters"]) == ("my trip plans", None)
        assert reason in out["self_query"]["llm"]["reason"]

    def test_valid_readings_are_cached(self, file_store, tmp_path):
        chat = ScriptedChat(reading(tags=["japan"]))
        extractor = LLMSelfQueryExtractor(
            chat_generator=chat, document_store=file_store, cache_path=str(tmp_path / "c.sqlite")
        )
        first = extractor.run(query="my trip plans", now=NOW)
        second = extractor.run(query="my trip plans", now=NOW)
        assert first["filters"] == second["filters"] and chat.calls == 1
