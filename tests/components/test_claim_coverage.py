import pytest
from haystack import Document, component
from haystack.dataclasses import ChatMessage

from haystack_integrations.components.validators.needle.claim_coverage import (
    ClaimCoverage,
    claim_terms,
    sentences,
    stem,
    term_overlap,
)
from needle.core.model_files import dense_embedder_params
from needle.core.settings import Settings

WAL = Document(
    id="wal",
    content="Switch with PRAGMA journal_mode=WAL. The setting persists in the database file. "
    "Set busy_timeout on every connection.",
    meta={"path": "howto/sqlite.md", "start_line": 1, "end_line": 9},
)
SLOT = Document(
    id="slot",
    content="Create a replication slot on the publisher before the subscription.",
    meta={"path": "howto/pg.md", "start_line": 3, "end_line": 7},
)


@component
class FakeJudge:
    def __init__(self, reply: str = "yes", fail: bool = False) -> None:
        self.reply, self.fail, self.calls = reply, fail, 0

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict:
        self.calls += 1
        if self.fail:
            raise ConnectionError("judge down")
        return {"replies": [ChatMessage.from_assistant(self.reply)]}


def offline(**kwargs) -> ClaimCoverage:
    """The term-overlap check alone (no embedding model)."""
    return ClaimCoverage(min_similarity=1.0, **kwargs)


class TestHelpers:
    def test_sentences_keep_the_citations_that_follow_them(self):
        answer = "Use WAL mode. [howto/sqlite.md:1-9] Then set busy_timeout.\n- Create a slot first [howto/pg.md:3-7]."
        assert sentences(answer) == [
            "Use WAL mode. [howto/sqlite.md:1-9]",
            "Then set busy_timeout.",
            "Create a slot first [howto/pg.md:3-7].",
        ]

    def test_terms_are_stemmed_topic_words_without_citations(self):
        assert stem("renewed") == "renew" and stem("slots") == "slot" and stem("cat") == "cat"
        assert claim_terms("Create replication slots [howto/pg.md:3-7].") == ["create", "replic", "slot"]

    def test_term_overlap_is_the_share_of_claim_words_found(self):
        assert term_overlap("create a replication slot", SLOT.content) == 1.0
        assert term_overlap("rotate the kafka brokers", SLOT.content) == 0.0


class TestClaimCoverage:
    def test_init_defaults(self):
        coverage = ClaimCoverage()
        assert (coverage.min_term_overlap, coverage.min_similarity, coverage.min_claim_terms) == (0.6, 0.6, 3)
        assert coverage.chat_generator is None

    def test_custom_params(self):
        coverage = ClaimCoverage(min_term_overlap=0.3, min_claim_terms=2, threads=1)
        assert coverage.min_term_overlap == 0.3 and coverage.min_claim_terms == 2 and coverage.threads == 1

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"min_term_overlap": 1.5}, "min_term_overlap"),
            ({"min_similarity": -1}, "min_similarity"),
            ({"min_claim_terms": 0}, "min_claim_terms"),
            ({"max_sentences": 0}, "max_sentences"),
        ],
    )
    def test_bad_params_raise(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            ClaimCoverage(**kwargs)

    def test_to_dict_and_from_dict(self):
        data = ClaimCoverage(dense_model="m").to_dict()
        assert data["type"] == "haystack_integrations.components.validators.needle.claim_coverage.ClaimCoverage"
        assert data["init_parameters"]["dense_model"] == "m" and data["init_parameters"]["chat_generator"] is None
        assert ClaimCoverage.from_dict(data).to_dict() == data

    def test_each_sentence_is_checked_against_the_chunks_it_cites(self):
        answer = (
            "Switch with PRAGMA journal_mode=WAL [howto/sqlite.md:1-9]. "
            "Create a replication slot on the publisher [howto/sqlite.md:1-9]."
        )
        out = offline().run(answer=answer, documents=[WAL, SLOT])
        assert out["coverage"] == 0.5
        assert [c["covered"] for c in out["claims"]] == [True, False]
        assert out["uncovered"] == ["Create a replication slot on the publisher ."]
        assert out["claims"][1]["citations"] == ["howto/sqlite.md:1-9"]

    def test_an_uncited_sentence_is_checked_against_every_cited_chunk(self):
        answer = "Create a replication slot on the publisher. See [howto/pg.md:3-7]."
        assert offline().run(answer=answer, documents=[WAL, SLOT])["coverage"] == 1.0

    def test_an_answer_that_cites_nothing_covers_nothing(self):
        out = offline().run(answer="Create a replication slot on the publisher.", documents=[SLOT])
        assert out["coverage"] == 0.0 and out["claims"][0]["citations"] == []

    def test_no_claims_no_coverage(self):
        out = offline().run(answer="The notes do not mention kafka brokers at all. Yes.", documents=[SLOT])
        assert out == {"coverage": None, "claims": [], "uncovered": [], "warnings": []}

    def test_the_judge_decides_when_configured_and_its_failure_falls_back(self):
        answer = "Create a replication slot on the publisher [howto/pg.md:3-7]."
        assert offline(chat_generator=FakeJudge("No.")).run(answer=answer, documents=[SLOT])["coverage"] == 0.0
        out = offline(chat_generator=FakeJudge(fail=True)).run(answer=answer, documents=[SLOT])
        assert out["coverage"] == 1.0 and "checked offline" in out["warnings"][0]

    @pytest.mark.integration
    def test_a_paraphrase_is_covered_by_meaning(self, model_dir):
        params = dense_embedder_params(Settings().embedding.model, model_dir)
        coverage = ClaimCoverage(
            min_term_overlap=1.0,
            dense_model=params["model"],
            dense_model_kwargs=params["model_kwargs"],
            dense_local_files_only=True,
        )
        paraphrase = "Every connection needs its own busy timeout [howto/sqlite.md:1-9]."
        unrelated = "Kafka brokers rebalance partitions when a consumer leaves [howto/sqlite.md:1-9]."
        out = coverage.run(answer=f"{paraphrase} {unrelated}", documents=[WAL])
        assert [c["covered"] for c in out["claims"]] == [True, False]
        assert out["claims"][0]["similarity"] > out["claims"][1]["similarity"]
