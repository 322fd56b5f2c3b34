import math
import time
import warnings
from dataclasses import replace

import pytest
from haystack import Document, Pipeline, component
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.core.serialization import component_to_dict
from haystack.utils import Secret

from haystack_integrations.components.needle import _llm_cache as llm_cache
from haystack_integrations.components.rankers.needle.candidate_reranker import CandidateReranker, sigmoid
from haystack_integrations.components.rankers.needle.llm_judge_ranker import LLMJudgeRanker
from needle.runtime.loader import loads_pipeline
from tests.llm_server import MODEL_NAME, free_port


@pytest.fixture(autouse=True)
def _placeholder_api_key(monkeypatch):
    """Haystack 2.x builds the OpenAI client in `__init__`, which refuses to start without some key."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder-for-a-local-server")


@component
class FakeRanker:
    """Scores a document by the number its content ends with; records which documents it saw."""

    def __init__(self, model_name: str = "fake-ranker", fail: bool = False, skip: tuple[str, ...] = ()) -> None:
        self.model_name = model_name
        self.fail = fail
        self.skip = skip
        self.seen: list[list[str]] = []

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict:
        self.seen.append([d.id for d in documents])
        if self.fail:
            raise RuntimeError("ranker down")
        with warnings.catch_warnings():  # mutates its input, as some rankers do
            warnings.simplefilter("ignore")
            for doc in documents:
                doc.score = float(doc.content.split()[-1])
        ranked = sorted((d for d in documents if d.id not in self.skip), key=lambda d: -d.score)
        return {"documents": ranked[:top_k]}


def docs(*scores: float) -> list[Document]:
    """Fused documents d0, d1, ... whose rerank score will be the given numbers."""
    return [
        Document(id=f"d{i}", content=f"text {s}", score=1.0 - i / 100, meta={"checksum": f"c{i}"})
        for i, s in enumerate(scores)
    ]


def judge(url: str = "http://127.0.0.1:9/v1", **kwargs) -> LLMJudgeRanker:
    generator = OpenAIChatGenerator(
        api_key=Secret.from_env_var("OPENAI_API_KEY", strict=False),
        model=MODEL_NAME,
        api_base_url=url,
        max_retries=0,
        **kwargs,
    )
    return LLMJudgeRanker(chat_generator=generator)


class TestCandidateReranker:
    def test_init_defaults(self, monkeypatch, tmp_path):
        monkeypatch.setenv("NEEDLE_DATA_DIR", str(tmp_path))
        reranker = CandidateReranker(ranker=FakeRanker())
        assert (reranker.cache_path, reranker.cache_ttl_hours, reranker.model_name) == (
            str(tmp_path / "cache.sqlite"),
            168,
            None,
        )
        assert "cache_path" not in reranker.to_dict()["init_parameters"]  # the settings' data folder, again
        assert (reranker.candidates, reranker.top_k, reranker.score_transform) == (40, 10, "auto")

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"candidates": 0}, "candidates"),
            ({"top_k": 0}, "top_k"),
            ({"cache_ttl_hours": -1}, "cache_ttl_hours"),
            ({"score_transform": "softmax"}, "score_transform"),
            ({"ranker": {"init_parameters": {}}}, "type"),
        ],
    )
    def test_bad_params_raise(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            CandidateReranker(**{"ranker": FakeRanker(), **kwargs})

    def test_to_dict(self):
        inner = judge()
        data = CandidateReranker(ranker=inner, cache_path="/tmp/c.sqlite", candidates=20, model_name="m").to_dict()
        assert data == {
            "type": "haystack_integrations.components.rankers.needle.candidate_reranker.CandidateReranker",
            "init_parameters": {
                "ranker": component_to_dict(inner, "ranker"),
                "cache_path": "/tmp/c.sqlite",
                "cache_ttl_hours": 168,
                "model_name": "m",
                "candidates": 20,
                "top_k": 10,
                "score_transform": "auto",
                "enabled": True,
            },
        }
        assert data["init_parameters"]["ranker"]["init_parameters"]["chat_generator"]["type"].endswith(
            "OpenAIChatGenerator"
        )

    def test_from_dict_round_trip_rebuilds_nested_components(self):
        reranker = CandidateReranker(cache_path=None, ranker=judge(timeout=3.0), score_transform="none", top_k=5)
        again = CandidateReranker.from_dict(reranker.to_dict())
        assert isinstance(again.ranker, LLMJudgeRanker)
        assert isinstance(again.ranker.chat_generator, OpenAIChatGenerator)
        assert again.to_dict() == reranker.to_dict()

    def test_pipeline_yaml_round_trip(self):
        pipeline = Pipeline()
        pipeline.add_component("rerank", CandidateReranker(cache_path=None, ranker=judge(), candidates=5))
        assert loads_pipeline(pipeline.dumps()).to_dict() == pipeline.to_dict()

    def test_reranks_candidates_and_keeps_the_rest_in_order(self):
        out = CandidateReranker(cache_path=None, ranker=FakeRanker(), candidates=3, top_k=1).run(
            query="q", documents=docs(0.2, 0.9, 0.5, 0.8, 0.1)
        )["documents"]
        assert [d.id for d in out] == ["d1", "d2", "d0", "d3", "d4"]
        assert out[0].meta["rerank"] == {"score": 0.9, "raw": 0.9, "input_rank": 2}
        assert out[3].meta["rerank"] == {"input_rank": 4}
        assert [d.score for d in out] == [0.99, 0.98, 1.0, 0.97, 0.96]  # fused scores untouched

    def test_metadata_the_ranker_adds_is_kept_on_fresh_scores(self):
        @component
        class TracingRanker:
            @component.output_types(documents=list[Document])
            def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict:
                return {
                    "documents": [replace(d, score=0.5, meta={**d.meta, "hybrid": {"bm25": 1.0}}) for d in documents]
                }

        out = CandidateReranker(cache_path=None, ranker=TracingRanker(), candidates=2, top_k=2).run(
            query="q", documents=docs(0.1, 0.2, 0.3)
        )["documents"]
        assert [d.meta.get("hybrid") for d in out] == [{"bm25": 1.0}, {"bm25": 1.0}, None]
        assert out[0].meta["checksum"] == "c0"

    def test_top_k_above_candidates_reranks_more(self):
        reranker = CandidateReranker(cache_path=None, ranker=FakeRanker(), candidates=2)
        out = reranker.run(query="q", documents=docs(0.1, 0.2, 0.3, 0.4), top_k=3)["documents"]
        assert [d.id for d in out] == ["d2", "d1", "d0", "d3"]

    def test_partial_cache_hits_rerank_only_the_misses(self, tmp_path):
        ranker = FakeRanker()
        reranker = CandidateReranker(ranker=ranker, cache_path=str(tmp_path / "c.sqlite"), candidates=10)
        reranker.run(query="q", documents=docs(0.3, 0.7))
        documents = docs(0.3, 0.7, 0.5, 0.9)
        out = reranker.run(query="q", documents=documents)["documents"]
        assert ranker.seen == [["d0", "d1"], ["d2", "d3"]]
        assert [d.id for d in out] == ["d3", "d1", "d2", "d0"]
        reranker.run(query="q", documents=documents)
        assert len(ranker.seen) == 2

    def test_cache_key_holds_query_and_model(self, tmp_path):
        path = str(tmp_path / "c.sqlite")
        ranker = FakeRanker()
        CandidateReranker(ranker=ranker, cache_path=path).run(query="q", documents=docs(0.3))
        CandidateReranker(ranker=ranker, cache_path=path).run(query="other", documents=docs(0.3))
        CandidateReranker(ranker=ranker, cache_path=path, model_name="m2").run(query="q", documents=docs(0.3))
        assert len(ranker.seen) == 3

    def test_expired_scores_are_reranked(self, tmp_path, monkeypatch):
        ranker = FakeRanker()
        reranker = CandidateReranker(ranker=ranker, cache_path=str(tmp_path / "c.sqlite"), cache_ttl_hours=1)
        reranker.run(query="q", documents=docs(0.3, 0.7))
        later = time.time() + 3601
        monkeypatch.setattr(llm_cache.time, "time", lambda: later)
        reranker.run(query="q", documents=docs(0.3, 0.7))
        assert ranker.seen == [["d0", "d1"], ["d0", "d1"]]

    def test_documents_with_one_checksum_are_reranked_once(self):
        ranker = FakeRanker()
        documents = docs(0.3, 0.7)
        documents[1].meta["checksum"] = "c0"
        out = CandidateReranker(cache_path=None, ranker=ranker).run(query="q", documents=documents)["documents"]
        assert ranker.seen == [["d0"]]
        assert [d.meta["rerank"]["score"] for d in out] == [0.3, 0.3]

    def test_without_cache_every_call_reranks(self):
        ranker = FakeRanker()
        reranker = CandidateReranker(cache_path=None, ranker=ranker)
        reranker.run(query="q", documents=docs(0.3))
        reranker.run(query="q", documents=docs(0.3))
        assert len(ranker.seen) == 2

    def test_ranker_that_is_not_cacheable_always_reranks_every_candidate(self, tmp_path):
        ranker = FakeRanker()
        ranker.cacheable = False
        reranker = CandidateReranker(ranker=ranker, cache_path=str(tmp_path / "c.sqlite"))
        reranker.run(query="q", documents=docs(0.3, 0.7))
        reranker.run(query="q", documents=docs(0.3, 0.7, 0.5))
        assert ranker.seen == [["d0", "d1"], ["d0", "d1", "d2"]]

    def test_query_embeddings_reach_only_rankers_that_take_them(self):
        @component
        class EmbeddingRanker:
            def __init__(self) -> None:
                self.received: list = []

            @component.output_types(documents=list[Document])
            def run(
                self,
                query: str,
                documents: list[Document],
                top_k: int | None = None,
                query_embedding: list[float] | None = None,
            ) -> dict:
                self.received.append(query_embedding)
                return {"documents": [replace(d, score=0.5) for d in documents]}

        taker, plain = EmbeddingRanker(), FakeRanker()
        CandidateReranker(cache_path=None, ranker=taker).run(query="q", documents=docs(0.3), query_embedding=[0.1, 0.2])
        CandidateReranker(cache_path=None, ranker=plain).run(query="q", documents=docs(0.3), query_embedding=[0.1, 0.2])
        assert taker.received == [[0.1, 0.2]]
        assert plain.seen == [["d0"]]

    def test_disabled_passes_documents_through_untouched(self):
        ranker = FakeRanker()
        documents = docs(0.2, 0.9)
        out = CandidateReranker(cache_path=None, ranker=ranker).run(query="q", documents=documents, enabled=False)[
            "documents"
        ]
        assert out is documents and ranker.seen == []

    def test_logits_go_through_a_sigmoid_in_auto_mode(self):
        out = CandidateReranker(cache_path=None, ranker=FakeRanker()).run(query="q", documents=docs(-2.0, 3.0))[
            "documents"
        ]
        assert [d.meta["rerank"]["raw"] for d in out] == [3.0, -2.0]
        assert [d.meta["rerank"]["score"] for d in out] == pytest.approx([sigmoid(3.0), sigmoid(-2.0)])

    @pytest.mark.parametrize("transform, expected", [("none", 0.25), ("sigmoid", 1 / (1 + math.exp(-0.25)))])
    def test_forced_score_transform(self, transform, expected):
        out = CandidateReranker(cache_path=None, ranker=FakeRanker(), score_transform=transform).run(
            query="q", documents=docs(0.25)
        )
        assert out["documents"][0].meta["rerank"]["score"] == pytest.approx(expected)

    def test_failed_ranker_keeps_fused_order_and_caches_nothing(self, tmp_path):
        ranker = FakeRanker(fail=True)
        reranker = CandidateReranker(ranker=ranker, cache_path=str(tmp_path / "c.sqlite"))
        out = reranker.run(query="q", documents=docs(0.2, 0.9))["documents"]
        assert [(d.id, d.meta["rerank"]["score"]) for d in out] == [("d0", None), ("d1", None)]
        reranker.run(query="q", documents=docs(0.2, 0.9))
        assert len(ranker.seen) == 2

    def test_document_the_ranker_left_out_keeps_its_position(self):
        out = CandidateReranker(cache_path=None, ranker=FakeRanker(skip=("d1",))).run(
            query="q", documents=docs(0.2, 0.5, 0.9)
        )
        assert [(d.id, d.meta["rerank"]["score"]) for d in out["documents"]] == [("d2", 0.9), ("d1", None), ("d0", 0.2)]

    def test_does_not_mutate_input_documents(self):
        documents = docs(0.2, 0.9)
        CandidateReranker(cache_path=None, ranker=FakeRanker()).run(query="q", documents=documents)
        assert [(d.score, "rerank" in d.meta) for d in documents] == [(1.0, False), (0.99, False)]

    def test_a_ranker_that_rescores_is_asked_for_scores_not_documents(self):
        @component
        class RescoringRanker:
            """Scores by the number the content ends with; its `run` must not be called."""

            def __init__(self) -> None:
                self.seen: list[list[str]] = []

            def rescore(self, documents: list[Document]) -> list[tuple[float, dict]]:
                self.seen.append([d.id for d in documents])
                return [
                    (float(d.content.split()[-1]), {"hybrid": {"bm25": 1.0}, "checksum": "ignored"}) for d in documents
                ]

            @component.output_types(documents=list[Document])
            def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict:
                raise AssertionError("run called")

        ranker = RescoringRanker()
        documents = docs(0.2, 0.9, 0.5)
        before = [d.to_dict() for d in documents]
        out = CandidateReranker(cache_path=None, ranker=ranker, candidates=2, top_k=1).run(
            query="q", documents=documents
        )["documents"]
        assert ranker.seen == [["d0", "d1"]]
        assert [(d.id, d.score, d.meta["rerank"]) for d in out] == [
            ("d1", 0.99, {"score": 0.9, "raw": 0.9, "input_rank": 2}),
            ("d0", 1.0, {"score": 0.2, "raw": 0.2, "input_rank": 1}),
            ("d2", 0.98, {"input_rank": 3}),
        ]
        # Metadata the ranker adds is kept, but never overrides what the document already had.
        assert [d.meta.get("hybrid") for d in out] == [{"bm25": 1.0}, {"bm25": 1.0}, None]
        assert [d.meta["checksum"] for d in out] == ["c1", "c0", "c2"]
        assert [d.to_dict() for d in documents] == before
        assert not any(o is d for o in out for d in documents)

    def test_model_name_defaults_to_the_rankers(self, tmp_path):
        path = str(tmp_path / "c.sqlite")
        CandidateReranker(ranker=FakeRanker(model_name="x"), cache_path=path).run(query="q", documents=docs(0.4))
        failing = FakeRanker(model_name="y", fail=True)
        out = CandidateReranker(ranker=failing, cache_path=path, model_name="x").run(query="q", documents=docs(0.4))
        assert failing.seen == [] and out["documents"][0].meta["rerank"]["score"] == 0.4


@pytest.mark.integration
class TestCandidateRerankerWithServer:
    @pytest.fixture(autouse=True)
    def api_key(self, monkeypatch):
        """A local server takes any key, but the OpenAI client refuses to start without one."""
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")

    def test_llm_judge_scores_are_cached(self, llm_server, tmp_path):
        path = str(tmp_path / "c.sqlite")
        kwargs = {"max_tokens": 2, "temperature": 0, "extra_body": {"grammar": "root ::= [0-9]"}}
        live = CandidateReranker(ranker=judge(llm_server, timeout=60.0, generation_kwargs=kwargs), cache_path=path)
        documents = [
            Document(id="a", content="Docker Compose networks connect services.", meta={"checksum": "ca"}),
            Document(id="b", content="Bananas are yellow.", meta={"checksum": "cb"}),
        ]
        first = live.run(query="docker networking", documents=documents)["documents"]
        assert all(d.meta["rerank"]["score"] is not None for d in first)
        # Same model name, dead server: only cache hits can score.
        dead = CandidateReranker(ranker=judge(f"http://127.0.0.1:{free_port()}/v1", timeout=2.0), cache_path=path)
        assert dead.run(query="docker networking", documents=documents)["documents"] == first


class TestCandidateRerankerSwitch:
    def test_disabled_by_default_never_loads_the_ranker(self):
        @component
        class Unloadable(FakeRanker):
            def warm_up(self) -> None:
                raise RuntimeError("would download a model")

        reranker = CandidateReranker(cache_path=None, ranker=Unloadable(), enabled=False)
        reranker.warm_up()  # what Pipeline.warm_up() calls: must not touch the ranker
        documents = docs(0.1, 0.9)
        assert reranker.run(query="q", documents=documents)["documents"] == documents

    def test_request_switch_overrides_the_default(self):
        ranker = FakeRanker()
        reranker = CandidateReranker(cache_path=None, ranker=ranker, enabled=False)
        out = reranker.run(query="q", documents=docs(0.1, 0.9), enabled=True)["documents"]
        assert [d.id for d in out] == ["d1", "d0"] and ranker.seen
        on = CandidateReranker(cache_path=None, ranker=FakeRanker())
        assert on.run(query="q", documents=docs(0.1, 0.9), enabled=False)["documents"][0].id == "d0"
