import contextlib
import os
import socket
import threading

import pytest
from haystack import Document, Pipeline, component
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret

from haystack_integrations.components.query.needle.llm_query_expander import (
    LLMQueryExpander,
    build_messages,
    parse_expansion,
)
from needle.runtime.loader import loads_pipeline
from tests.llm_server import MODEL_NAME, free_port


@pytest.fixture(autouse=True)
def _placeholder_api_key(monkeypatch):
    """Haystack 2.x builds the OpenAI client in `__init__`, which refuses to start without some key."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder-for-a-local-server")


QUERY = "docker compose networking"


@component
class FakeChatGenerator:
    """Answers each call with the next scripted text (or raises it) and records the messages."""

    def __init__(self, answers: list, model: str = "fake-llm") -> None:
        self.answers = list(answers)
        self.model = model
        self.calls: list[list[ChatMessage]] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict:
        self.calls.append(messages)
        answer = self.answers[min(len(self.calls), len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return {"replies": [ChatMessage.from_assistant(answer)]}


def openai_generator(url: str = "http://127.0.0.1:9/v1", **kwargs) -> OpenAIChatGenerator:
    return OpenAIChatGenerator(
        api_key=Secret.from_env_var("OPENAI_API_KEY", strict=False),
        model=MODEL_NAME,
        api_base_url=url,
        max_retries=0,
        **kwargs,
    )


GOOD_ANSWER = """lex: docker compose network bridge
vec: how do docker compose services reach each other
hyde: Docker Compose puts every service on one bridge network."""


def probe(*scores: float) -> list[Document]:
    return [Document(content=f"d{i}", score=s, meta={"source_doc_id": f"f{i}"}) for i, s in enumerate(scores)]


class TestParseExpansion:
    def test_reads_one_variant_per_tagged_line(self):
        assert parse_expansion(GOOD_ANSWER, QUERY) == [
            {"kind": "lex", "text": "docker compose network bridge"},
            {"kind": "vec", "text": "how do docker compose services reach each other"},
            {"kind": "hyde", "text": "Docker Compose puts every service on one bridge network."},
        ]

    @pytest.mark.parametrize(
        "line",
        [
            "LEX: docker bridge",
            "Lex : docker bridge",
            "- lex: docker bridge",
            "* lex: docker bridge",
            "• lex: docker bridge",
            "1. lex: docker bridge",
            "2) lex: docker bridge",
            "(3) lex: docker bridge",
            "**lex:** docker bridge",
            "`lex`: docker bridge",
            '  lex: "docker bridge"  ',
            "lex = docker bridge",
            "lex:   docker    bridge",
        ],
    )
    def test_tolerates_case_markers_numbering_and_quotes(self, line):
        assert parse_expansion(line, QUERY) == [{"kind": "lex", "text": "docker bridge"}]

    def test_ignores_commentary_blank_lines_and_missing_tags(self):
        text = "Sure! Here are your expansions:\n\n\nvec: docker compose service networking explained\n\nHope it helps."
        assert parse_expansion(text, QUERY) == [{"kind": "vec", "text": "docker compose service networking explained"}]

    def test_answer_without_tags_gives_nothing(self):
        assert parse_expansion("1. 2. 3. 4. 5.\ndocker docker docker", QUERY) == []
        assert parse_expansion("", QUERY) == []

    def test_drops_variants_sharing_no_word_with_the_query(self):
        text = "lex: kubernetes ingress\nvec: cooking pasta at home\nhyde: Bananas are yellow.\nlex: docker bridge"
        assert parse_expansion(text, QUERY) == [{"kind": "lex", "text": "docker bridge"}]

    def test_word_stems_count_as_shared(self):
        assert parse_expansion("lex: network bridges", QUERY) == [{"kind": "lex", "text": "network bridges"}]

    def test_short_and_filler_words_do_not_count_as_shared(self):
        assert parse_expansion("lex: how to do it with it", "how to use docker with it") == []

    def test_query_without_topic_words_keeps_every_variant(self):
        assert parse_expansion("lex: anything at all", "how to do it") == [{"kind": "lex", "text": "anything at all"}]

    def test_drops_the_query_itself_and_duplicates(self):
        text = "lex: Docker Compose  Networking!\nlex: docker bridge\nlex: DOCKER BRIDGE\nvec: docker bridge"
        assert parse_expansion(text, QUERY) == [
            {"kind": "lex", "text": "docker bridge"},
            {"kind": "vec", "text": "docker bridge"},
        ]

    def test_caps_counts_per_kind(self):
        text = (
            "\n".join(f"lex: docker {w}" for w in ["abc", "def", "ghi", "jkl"]) + "\nhyde: docker one\nhyde: docker two"
        )
        variants = parse_expansion(text, QUERY, max_lex=2, max_vec=0)
        assert [v["text"] for v in variants] == ["docker abc", "docker def", "docker one"]

    def test_hyde_left_out_when_not_wanted(self):
        assert [v["kind"] for v in parse_expansion(GOOD_ANSWER, QUERY, include_hyde=False)] == ["lex", "vec"]

    def test_groups_kinds_in_lex_vec_hyde_order(self):
        text = "hyde: docker passage\nvec: docker sentence\nlex: docker words"
        assert [v["kind"] for v in parse_expansion(text, QUERY)] == ["lex", "vec", "hyde"]

    def test_negative_counts_raise(self):
        with pytest.raises(ValueError, match="max_lex"):
            parse_expansion(GOOD_ANSWER, QUERY, max_lex=-1)


class TestBuildMessages:
    def test_prompt_asks_only_for_wanted_kinds(self):
        system, user = build_messages(QUERY, max_lex=2, max_vec=0, include_hyde=False)
        assert "1 to 2 lex lines" in system.text and "vec lines" not in system.text
        assert "\nhyde: Docker" not in system.text
        assert user.text == f"Query: {QUERY}"


class TestLLMQueryExpander:
    def test_init_defaults(self):
        expander = LLMQueryExpander(chat_generator=FakeChatGenerator([GOOD_ANSWER]))
        assert (expander.max_lex, expander.max_vec, expander.include_hyde) == (3, 3, True)
        assert (expander.cache_path, expander.cache_ttl_hours, expander.model_name) == (
            os.path.join(os.environ["NEEDLE_DATA_DIR"], "cache.sqlite"),
            168,
            None,
        )
        assert (expander.strong_signal_min_score, expander.strong_signal_min_gap) == (0.85, 0.15)

    def test_custom_params(self, tmp_path):
        expander = LLMQueryExpander(
            chat_generator=FakeChatGenerator([]),
            max_lex=1,
            max_vec=2,
            include_hyde=False,
            cache_path=str(tmp_path / "c.sqlite"),
            cache_ttl_hours=1,
            strong_signal_min_score=0.5,
            strong_signal_min_gap=0.1,
            model_name="m",
        )
        assert (expander.max_lex, expander.max_vec, expander.include_hyde, expander.model_name) == (1, 2, False, "m")

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"max_lex": -1}, "max_lex"),
            ({"max_lex": 0, "max_vec": 0, "include_hyde": False}, "nothing to expand"),
            ({"cache_ttl_hours": 0}, "cache_ttl_hours"),
            ({"strong_signal_min_score": 1.5}, "strong_signal_min_score"),
            ({"strong_signal_min_gap": -0.1}, "strong_signal_min_gap"),
            ({"chat_generator": {"init_parameters": {}}}, "type"),
        ],
    )
    def test_bad_params_raise(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            LLMQueryExpander(**{"chat_generator": FakeChatGenerator([]), **kwargs})

    def test_to_dict(self):
        generator = openai_generator(timeout=5.0)
        data = LLMQueryExpander(chat_generator=generator, max_lex=2, cache_path="/tmp/c.sqlite").to_dict()
        assert data == {
            "type": "haystack_integrations.components.query.needle.llm_query_expander.LLMQueryExpander",
            "init_parameters": {
                "chat_generator": component_to_dict(generator, "chat_generator"),
                "max_lex": 2,
                "max_vec": 3,
                "include_hyde": True,
                "cache_path": "/tmp/c.sqlite",
                "cache_ttl_hours": 168,
                "strong_signal_min_score": 0.85,
                "strong_signal_min_gap": 0.15,
                "model_name": None,
            },
        }
        assert data["init_parameters"]["chat_generator"]["type"].endswith("OpenAIChatGenerator")

    def test_from_dict_round_trip_rebuilds_the_generator(self):
        expander = LLMQueryExpander(chat_generator=openai_generator(timeout=5.0), max_vec=1, model_name="m")
        again = LLMQueryExpander.from_dict(expander.to_dict())
        assert isinstance(again.chat_generator, OpenAIChatGenerator)
        assert again.chat_generator.timeout == 5.0
        assert again.to_dict() == expander.to_dict()

    def test_pipeline_yaml_round_trip(self):
        pipeline = Pipeline()
        pipeline.add_component("expand", LLMQueryExpander(chat_generator=openai_generator(), include_hyde=False))
        again = loads_pipeline(pipeline.dumps())
        assert again.to_dict() == pipeline.to_dict()

    def test_expands_and_caches_the_answer(self, tmp_path):
        generator = FakeChatGenerator([GOOD_ANSWER])
        expander = LLMQueryExpander(chat_generator=generator, cache_path=str(tmp_path / "c.sqlite"))
        first = expander.run(query=QUERY)
        second = expander.run(query=QUERY)
        assert first == second == {"variants": parse_expansion(GOOD_ANSWER, QUERY), "skipped": None}
        assert len(generator.calls) == 1

    def test_cache_key_holds_model_and_counts(self, tmp_path):
        path = str(tmp_path / "c.sqlite")
        generator = FakeChatGenerator([GOOD_ANSWER])
        LLMQueryExpander(chat_generator=generator, cache_path=path).run(query=QUERY)
        LLMQueryExpander(chat_generator=generator, cache_path=path, max_lex=1).run(query=QUERY)
        LLMQueryExpander(chat_generator=generator, cache_path=path, model_name="other").run(query=QUERY)
        assert len(generator.calls) == 3

    def test_strong_bm25_signal_skips_without_a_call(self):
        generator = FakeChatGenerator([GOOD_ANSWER])
        out = LLMQueryExpander(chat_generator=generator).run(query=QUERY, probe_documents=probe(0.93, 0.40))
        assert out == {"variants": [], "skipped": "strong BM25 signal"}
        assert generator.calls == []

    def test_close_probe_scores_still_expand(self):
        generator = FakeChatGenerator([GOOD_ANSWER])
        out = LLMQueryExpander(chat_generator=generator).run(query=QUERY, probe_documents=probe(0.93, 0.90))
        assert out["skipped"] is None and out["variants"]

    def test_disabled_skips_without_a_call(self):
        generator = FakeChatGenerator([GOOD_ANSWER])
        assert LLMQueryExpander(chat_generator=generator).run(query=QUERY, enabled=False) == {
            "variants": [],
            "skipped": "disabled",
        }
        assert generator.calls == []

    @pytest.mark.parametrize(
        "answer, reason",
        [
            (RuntimeError("boom"), "expansion failed: RuntimeError: boom"),
            ("   ", "expansion failed: empty answer"),
            ("1. 2. 3.", "expansion failed: no usable lex/vec/hyde line in the answer"),
            ("lex: cooking pasta", "expansion failed: no usable lex/vec/hyde line in the answer"),
        ],
    )
    def test_failures_fall_back_to_no_variants_and_are_not_cached(self, tmp_path, answer, reason):
        generator = FakeChatGenerator([answer, GOOD_ANSWER])
        expander = LLMQueryExpander(chat_generator=generator, cache_path=str(tmp_path / "c.sqlite"))
        assert expander.run(query=QUERY) == {"variants": [], "skipped": reason}
        assert expander.run(query=QUERY)["variants"]
        assert len(generator.calls) == 2

    def test_model_name_defaults_to_the_generators_model(self, tmp_path):
        path = str(tmp_path / "c.sqlite")
        LLMQueryExpander(chat_generator=FakeChatGenerator([GOOD_ANSWER], model="x"), cache_path=path).run(query=QUERY)
        named = FakeChatGenerator([RuntimeError("no call expected")], model="y")
        assert LLMQueryExpander(chat_generator=named, cache_path=path, model_name="x").run(query=QUERY)["variants"]
        assert named.calls == []


@pytest.fixture
def silent_server():
    """A local socket that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        accepted = []
        stop = threading.Event()

        def accept() -> None:
            sock.settimeout(0.1)
            while not stop.is_set():
                with contextlib.suppress(OSError):
                    accepted.append(sock.accept()[0])

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()


# Forces the answer into one tagged line that keeps a query word, so the tiny model's reply always parses.
LEX_GRAMMAR = r'root ::= "lex: docker compose " [a-z]+ [a-z]+ "\n"'


@pytest.mark.integration
class TestLLMQueryExpanderWithServer:
    @pytest.fixture(autouse=True)
    def api_key(self, monkeypatch):
        """A local server takes any key, but the OpenAI client refuses to start without one."""
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")

    def test_real_answer_is_parsed_or_falls_back_cleanly(self, llm_server):
        generator = openai_generator(llm_server, timeout=60.0, generation_kwargs={"max_tokens": 16, "temperature": 0})
        out = LLMQueryExpander(chat_generator=generator).run(query=QUERY)
        if out["skipped"] is None:
            assert out["variants"] and all(v["kind"] in {"lex", "vec", "hyde"} and v["text"] for v in out["variants"])
        else:
            assert out["variants"] == [] and out["skipped"].startswith("expansion failed")

    def test_second_identical_query_makes_no_request(self, llm_server, tmp_path):
        path = str(tmp_path / "c.sqlite")
        kwargs = {"max_tokens": 12, "temperature": 0, "extra_body": {"grammar": LEX_GRAMMAR}}
        live = openai_generator(llm_server, timeout=60.0, generation_kwargs=kwargs)
        first = LLMQueryExpander(chat_generator=live, cache_path=path).run(query=QUERY)
        assert first["skipped"] is None
        assert first["variants"][0]["text"].startswith("docker compose ")
        # Same model name, dead server: only a cache hit can answer.
        dead = openai_generator(f"http://127.0.0.1:{free_port()}/v1", timeout=2.0)
        assert LLMQueryExpander(chat_generator=dead, cache_path=path).run(query=QUERY) == first

    def test_server_down_falls_back(self, tmp_path):
        dead = openai_generator(f"http://127.0.0.1:{free_port()}/v1", timeout=2.0)
        expander = LLMQueryExpander(chat_generator=dead, cache_path=str(tmp_path / "c.sqlite"))
        out = expander.run(query=QUERY)
        assert out["variants"] == [] and out["skipped"].startswith("expansion failed: APIConnectionError")
        assert expander._cache.get("expansion", QUERY, MODEL_NAME, expander.cache_extra) is None

    def test_server_too_slow_falls_back(self, silent_server):
        slow = openai_generator(silent_server, timeout=0.5)
        out = LLMQueryExpander(chat_generator=slow).run(query=QUERY)
        assert out["variants"] == [] and out["skipped"].startswith("expansion failed: APITimeoutError")
