import pytest
from haystack import Document, Pipeline

from haystack_integrations.components.joiners.needle.weighted_rrf_joiner import WeightedRRFJoiner
from needle.runtime.loader import loads_pipeline


def docs(*ids: str) -> list[Document]:
    return [Document(id=i, content=f"text {i}", score=10.0 - n) for n, i in enumerate(ids)]


class TestWeightedRRFJoiner:
    def test_init_defaults(self):
        joiner = WeightedRRFJoiner()
        assert joiner.inputs == ["bm25", "vector"]
        assert joiner.weights == {}
        assert joiner.k == 60
        assert joiner.top_k is None

    def test_custom_params(self):
        joiner = WeightedRRFJoiner(inputs=["a", "b", "c"], weights={"a": 2.0}, k=10, top_k=5)
        assert (joiner.inputs, joiner.weights, joiner.k, joiner.top_k) == (["a", "b", "c"], {"a": 2.0}, 10, 5)

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"inputs": []}, "non-empty"),
            ({"inputs": ["a", "a"]}, "distinct"),
            ({"inputs": ["a"], "weights": {"b": 1.0}}, "do not exist"),
            ({"weights": {"bm25": -1.0}}, ">= 0"),
            ({"k": -1}, "k must be"),
            ({"top_k": 0}, "top_k must be > 0"),
            ({"inputs": ["top_k"]}, "reserved"),
            ({"inputs": ["lists"]}, "reserved"),
            ({"expansion_weight": -1.0}, ">= 0"),
        ],
    )
    def test_bad_params_raise(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            WeightedRRFJoiner(**kwargs)

    def test_to_dict(self):
        data = WeightedRRFJoiner(inputs=["x", "y"], weights={"x": 2.0}, k=30, top_k=7).to_dict()
        assert data == {
            "type": "haystack_integrations.components.joiners.needle.weighted_rrf_joiner.WeightedRRFJoiner",
            "init_parameters": {
                "inputs": ["x", "y"],
                "weights": {"x": 2.0},
                "k": 30,
                "top_k": 7,
                "expansion_weight": 1.0,
                "group_by": None,
                "normalise": False,
            },
        }

    def test_from_dict_round_trip(self):
        joiner = WeightedRRFJoiner(inputs=["x", "y"], weights={"x": 2.0}, k=30, top_k=7)
        again = WeightedRRFJoiner.from_dict(joiner.to_dict())
        assert again.to_dict() == joiner.to_dict()

    def test_score_is_weight_over_k_plus_rank_plus_one(self):
        out = WeightedRRFJoiner(inputs=["bm25", "vector"], weights={"bm25": 2.0}, k=60).run(
            bm25=docs("a", "b"), vector=docs("b", "c")
        )["documents"]
        scores = {d.id: d.score for d in out}
        assert scores["a"] == pytest.approx(2.0 / 61)
        assert scores["b"] == pytest.approx(2.0 / 62 + 1.0 / 61)
        assert scores["c"] == pytest.approx(1.0 / 62)
        assert [d.id for d in out] == ["b", "a", "c"]

    def test_original_query_counts_twice(self):
        # "a" is first in the heavy list, "z" first in the light one: the heavy list wins.
        out = WeightedRRFJoiner(inputs=["original", "expansion"], weights={"original": 2.0}).run(
            original=docs("a", "z"), expansion=docs("z", "a")
        )["documents"]
        assert [d.id for d in out][:1] == ["a"]

    def test_equal_weights_ties_keep_first_seen_order(self):
        out = WeightedRRFJoiner().run(bm25=docs("a"), vector=docs("b"))["documents"]
        assert [d.id for d in out] == ["a", "b"]
        assert out[0].score == out[1].score

    def test_fusion_trace_keeps_ranks_and_raw_scores(self):
        out = WeightedRRFJoiner().run(bm25=docs("a", "b"), vector=docs("b"))["documents"]
        b = next(d for d in out if d.id == "b")
        assert b.meta["fusion"] == {
            "bm25": {"rank": 1, "score": 9.0, "kind": None},
            "vector": {"rank": 0, "score": 10.0, "kind": None},
        }

    def test_incoming_documents_are_not_mutated(self):
        original = docs("a")
        WeightedRRFJoiner().run(bm25=original)
        assert original[0].score == 10.0 and "fusion" not in original[0].meta

    def test_top_k_at_run_overrides_init_and_is_validated(self):
        joiner = WeightedRRFJoiner(top_k=3)
        assert len(joiner.run(bm25=docs("a", "b", "c", "d"), top_k=2)["documents"]) == 2
        assert len(joiner.run(bm25=docs("a", "b", "c", "d"))["documents"]) == 3
        with pytest.raises(ValueError):
            joiner.run(bm25=docs("a"), top_k=0)

    def test_missing_lists_count_as_empty(self):
        assert [d.id for d in WeightedRRFJoiner().run(vector=docs("x"))["documents"]] == ["x"]
        assert WeightedRRFJoiner().run()["documents"] == []

    def test_duplicate_in_one_list_counts_once(self):
        out = WeightedRRFJoiner().run(bm25=docs("a", "a"))["documents"]
        assert len(out) == 1 and out[0].score == pytest.approx(1 / 61)

    def test_pipeline_round_trip_gives_same_result(self):
        pipeline = Pipeline()
        pipeline.add_component("fuse", WeightedRRFJoiner(weights={"bm25": 2.0}))
        data = {"fuse": {"bm25": docs("a", "b"), "vector": docs("c", "a")}}
        again = loads_pipeline(pipeline.dumps())
        first = pipeline.run(data)["fuse"]["documents"]
        second = again.run(data)["fuse"]["documents"]
        assert [(d.id, d.score) for d in first] == [(d.id, d.score) for d in second]

    def test_expansion_lists_weigh_expansion_weight(self):
        joiner = WeightedRRFJoiner(weights={"bm25": 2.0, "vector": 2.0}, expansion_weight=0.5)
        out = joiner.run(bm25=docs("a"), lists={"lex_1": docs("b"), "vec_1": docs("b", "a")})["documents"]
        scores = {d.id: d.score for d in out}
        assert scores["a"] == pytest.approx(2.0 / 61 + 0.5 / 62)
        assert scores["b"] == pytest.approx(0.5 / 61 + 0.5 / 61)
        assert set(out[1].meta["fusion"]) == {"lex_1", "vec_1"}

    def test_expansion_list_cannot_reuse_an_input_name(self):
        with pytest.raises(ValueError, match="declared input"):
            WeightedRRFJoiner().run(lists={"bm25": docs("a")})

    def test_group_by_ranks_files_not_chunks(self):
        def chunk(doc_id: str, source: str) -> Document:
            return Document(id=doc_id, content=doc_id, meta={"source_doc_id": source})

        bm25 = [chunk("a1", "A"), chunk("a2", "A"), chunk("b1", "B")]
        vector = [chunk("b2", "B"), chunk("a1", "A")]
        out = WeightedRRFJoiner(group_by="source_doc_id").run(bm25=bm25, vector=vector)["documents"]
        # A: rank 0 in bm25, rank 1 in vector; B: rank 1 in bm25 (second file, not third chunk), rank 0 in vector.
        assert out[0].score == pytest.approx(1 / 61 + 1 / 62)
        assert {d.id: d.score for d in out}["b1"] == pytest.approx(1 / 62 + 1 / 61)
        # every chunk of a file carries the file's score, best-placed chunk first
        assert [d.id for d in out] == ["a1", "a2", "b2", "b1"]
        assert out[0].meta["fusion"] == {
            "bm25": {"rank": 0, "score": None, "kind": None},
            "vector": {"rank": 1, "score": None, "kind": None},
        }

    def test_group_by_top_k_counts_files(self):
        chunks = [Document(id=f"{s}{i}", content="x", meta={"source_doc_id": s}) for s in "AB" for i in range(3)]
        out = WeightedRRFJoiner(group_by="source_doc_id", top_k=1).run(bm25=chunks)["documents"]
        assert [d.id for d in out] == ["A0", "A1", "A2"]

    def test_normalised_scores_read_as_a_share_of_the_best_possible(self):
        joiner = WeightedRRFJoiner(inputs=["x", "y"], weights={"x": 2.0}, k=60, normalise=True)
        out = joiner.run(x=docs("a", "b"), y=docs("a"))["documents"]
        assert out[0].id == "a" and out[0].score == pytest.approx(1.0)  # first in both lists
        assert out[1].score == pytest.approx((2.0 / 62) / (3.0 / 61))
        plain = WeightedRRFJoiner(inputs=["x", "y"], weights={"x": 2.0}, k=60).run(x=docs("a", "b"), y=docs("a"))
        assert [d.id for d in plain["documents"]] == [d.id for d in out]

    def test_a_single_result_set_comes_back_in_its_own_order(self):
        # Nothing to fuse it with (no sub-question or expansion found anything): the one list is the result.
        ranked = docs("c", "a", "b")
        out = WeightedRRFJoiner().run(bm25=ranked, vector=[], lists={"sub_1_bm25": []})["documents"]
        assert [d.id for d in out] == ["c", "a", "b"]
        assert [d.meta["fusion"] for d in out] == [
            {"bm25": {"rank": r, "score": 10.0 - r, "kind": None}} for r in range(3)
        ]
