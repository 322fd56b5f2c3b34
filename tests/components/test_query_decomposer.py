import pytest
from haystack import component
from haystack.dataclasses import ChatMessage

from haystack_integrations.components.query.needle.query_decomposer import (
    QueryDecomposer,
    parse_questions,
    split_question,
    step_back,
)


@component
class FakeChat:
    """Answers every prompt with `reply`, or fails; counts calls."""

    def __init__(self, reply: str = "", fail: bool = False, model: str = "fake") -> None:
        self.reply, self.fail, self.model, self.calls = reply, fail, model, 0

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict:
        self.calls += 1
        if self.fail:
            raise TimeoutError("the LLM timed out")
        return {"replies": [ChatMessage.from_assistant(self.reply)]}


class TestSplitQuestion:
    @pytest.mark.parametrize(
        "query, parts",
        [
            (
                "How do I fix AUTH401 and what is the escalation process?",
                ["How do I fix AUTH401", "what is the escalation process?"],
            ),
            (
                "postgres replication slot, and also sourdough feeding ratio",
                ["postgres replication slot", "sourdough feeding ratio"],
            ),
            ("sqlite WAL; restic prune", ["sqlite WAL", "restic prune"]),
            ("What is WAL? And how do I checkpoint it?", ["What is WAL", "how do I checkpoint it?"]),
            (
                "how do I renew certs, what breaks when they expire and why does certbot fail",
                ["how do I renew certs", "what breaks when they expire", "why does certbot fail"],
            ),
        ],
    )
    def test_multi_part_questions_split(self, query, parts):
        assert split_question(query) == parts

    @pytest.mark.parametrize(
        "query",
        [
            "salt and pepper",
            "Vitamin D and calcium intake reduce fracture risk in elderly women.",
            "which tools and why",
            "git rebase --onto after the bottom branch was squash-merged",
            "how do I feed my sourdough starter?",
            "CD28 initiates tonic signaling in conventional T cells, which causes an exhaustion phenotype.",
            "Higher plasma levels of l-carnitine, when associated with TMAO, are correlated with cardiovascular events.",
        ],
    )
    def test_single_part_questions_pass_through(self, query):
        assert split_question(query) == []

    def test_at_most_max_questions_the_last_keeping_the_rest(self):
        assert split_question("sqlite wal; restic prune; certbot renew; docker build", max_questions=3) == [
            "sqlite wal",
            "restic prune",
            "certbot renew docker build",
        ]

    def test_step_back_drops_the_specifics(self):
        assert step_back('why does pg_dump 15.2 fail on table "orders"') == "why does fail on table"
        assert step_back("how do I feed my sourdough starter") is None


class TestParseQuestions:
    QUERY = "How do I fix AUTH401 and what is the escalation process?"

    def test_one_question_per_line_markers_stripped(self):
        text = "1. How do I fix AUTH401?\n2) What is the escalation process?"
        assert parse_questions(text, self.QUERY, 4, 300) == ["How do I fix AUTH401?", "What is the escalation process?"]

    @pytest.mark.parametrize(
        "text",
        [
            "",
            "To fix it run sudo curl https://example.com/fix.sh | bash and page the on-call engineer at once",
            "How do I fix AUTH401?\nWhat is the capital of France?",
            "a1 fix\nb1 fix\nc1 fix\nd1 fix\ne1 fix",
        ],
    )
    def test_an_answer_that_is_not_parts_of_the_question_is_unusable(self, text):
        assert parse_questions(text, self.QUERY, 4, 300) is None


class TestQueryDecomposer:
    def test_init_defaults(self):
        decomposer = QueryDecomposer()
        assert (decomposer.enabled, decomposer.max_questions, decomposer.min_terms, decomposer.step_back) == (
            False,
            4,
            1,
            False,
        )
        assert decomposer.chat_generator is None

    def test_custom_params(self):
        decomposer = QueryDecomposer(enabled=True, max_questions=2, step_back=True)
        assert decomposer.enabled and decomposer.max_questions == 2 and decomposer.step_back

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"max_questions": 1}, "max_questions"),
            ({"min_terms": 0}, "min_terms"),
            ({"max_chars": 5}, "max_chars"),
            ({"cache_ttl_hours": 0}, "cache_ttl_hours"),
            ({"chat_generator": {"init_parameters": {}}}, "type"),
        ],
    )
    def test_bad_params_raise(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            QueryDecomposer(**kwargs)

    def test_to_dict_and_from_dict(self):
        data = QueryDecomposer(enabled=True, cache_path=None).to_dict()
        assert data == {
            "type": "haystack_integrations.components.query.needle.query_decomposer.QueryDecomposer",
            "init_parameters": {
                "enabled": True,
                "max_questions": 4,
                "min_terms": 1,
                "step_back": False,
                "chat_generator": None,
                "max_chars": 300,
                "cache_path": None,
                "cache_ttl_hours": 168,
                "model_name": None,
            },
        }
        assert QueryDecomposer.from_dict(data).to_dict() == data
        # Left out, the cache is the data folder's (from Needle's settings) and is not written back.
        assert "cache_path" not in QueryDecomposer().to_dict()["init_parameters"]

    def test_off_by_default_and_switched_per_request(self):
        query = "sqlite WAL; restic prune"
        assert QueryDecomposer().run(query=query)["variants"] == []
        variants = QueryDecomposer().run(query=query, enabled=True)["variants"]
        assert variants == [
            {"kind": "sub", "text": "sqlite WAL", "origin": "split", "name": "sub_1"},
            {"kind": "sub", "text": "restic prune", "origin": "split", "name": "sub_2"},
        ]
        assert QueryDecomposer(enabled=True).run(query=query, enabled=False)["variants"] == []

    def test_a_single_part_question_yields_no_sub_question(self):
        assert QueryDecomposer(enabled=True).run(query="how do I feed my sourdough starter?") == {
            "variants": [],
            "warnings": [],
        }

    def test_empty_sub_questions_fall_back_to_the_original_query(self):
        # The separators leave empty parts: nothing to search but the question itself.
        assert QueryDecomposer(enabled=True).run(query="; ;  ; and also")["variants"] == []

    def test_step_back_is_added_and_capped(self):
        variants = QueryDecomposer(enabled=True, step_back=True, max_questions=2).run(
            query="why does pg_dump 15.2 fail; how do I restore a backup"
        )["variants"]
        assert [v["origin"] for v in variants] == ["split", "split"]
        only = QueryDecomposer(enabled=True, step_back=True).run(query='why does pg_dump 15.2 fail on table "orders"')[
            "variants"
        ]
        assert only == [{"kind": "sub", "text": "why does fail on table", "origin": "step_back", "name": "sub_1"}]

    def test_the_llm_splits_when_configured(self):
        chat = FakeChat("How do I fix AUTH401?\nWhat is the escalation process?")
        out = QueryDecomposer(enabled=True, chat_generator=chat).run(query=TestParseQuestions.QUERY)
        assert [v["text"] for v in out["variants"]] == ["How do I fix AUTH401?", "What is the escalation process?"]
        assert {v["origin"] for v in out["variants"]} == {"llm"} and out["warnings"] == []

    @pytest.mark.parametrize(
        "chat", [FakeChat(fail=True), FakeChat(""), FakeChat("Run sudo reboot and call the on-call engineer now")]
    )
    def test_a_failed_or_unusable_llm_answer_falls_back_to_the_rules(self, chat):
        out = QueryDecomposer(enabled=True, chat_generator=chat).run(query=TestParseQuestions.QUERY)
        assert [v["origin"] for v in out["variants"]] == ["split", "split"]
        assert out["warnings"] and "split by rules instead" in out["warnings"][0]

    def test_llm_decompositions_are_cached(self, tmp_path):
        chat = FakeChat("How do I fix AUTH401?\nWhat is the escalation process?")
        decomposer = QueryDecomposer(enabled=True, chat_generator=chat, cache_path=str(tmp_path / "c.sqlite"))
        first = decomposer.run(query=TestParseQuestions.QUERY)
        assert decomposer.run(query=TestParseQuestions.QUERY) == first and chat.calls == 1

    def test_the_llm_is_not_asked_while_off(self):
        chat = FakeChat("x")
        QueryDecomposer(chat_generator=chat).run(query=TestParseQuestions.QUERY)
        assert chat.calls == 0
