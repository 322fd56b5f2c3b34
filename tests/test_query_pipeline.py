"""pipelines/query.yml end to end on the demo notes: every stage observable in the results."""

from pathlib import Path

import pytest

from needle.core.requests import CollectionRemoveRequest, IndexRequest, QueryRequest, SearchRequest
from needle.core.results import SearchAnswer

pytestmark = pytest.mark.integration
NOTES = Path(__file__).resolve().parent.parent / "needle" / "demo" / "notes"


def test_one_result_per_file_unless_chunks_are_asked_for(demo_needle):
    results = demo_needle.search(SearchRequest(query="kubernetes pod memory limit OOMKilled", limit=10)).results
    paths = [r.path for r in results]
    assert len(paths) == len(set(paths))
    assert paths[0] == "runbooks/k8s-oomkilled-debugging.md"
    chunks = demo_needle.search(
        SearchRequest(query="kubernetes pod memory limit OOMKilled", limit=10, chunks=True)
    ).results
    assert len({r.path for r in chunks}) < len(chunks)


def test_expansion_adds_routed_variant_lists_and_can_be_switched_off(demo_needle):
    query = "espresso grind too sour"
    expanded = demo_needle.search(QueryRequest(query=query, limit=5, expand=True, explain=True)).results
    lists = set().union(*(r.explain.get("lists", {}).keys() for r in expanded))
    assert {"prf_lex", "prf_vec"} & lists
    plain = demo_needle.search(QueryRequest(query=query, limit=5, expand=False, explain=True)).results
    assert set().union(*(r.explain["lists"].keys() for r in plain)) <= {"bm25", "vector"}


def test_fused_ranks_bonus_and_scores_are_explained(demo_needle):
    top = demo_needle.search(SearchRequest(query="certbot renew deploy hook", limit=3, explain=True)).results[0]
    explain = top.explain
    assert explain["bonus"] in (0.05, 0.02, 0.0)
    for entry in explain["lists"].values():
        assert entry["rank"] >= 1 and 0.0 <= entry["score"] <= 1.0 and entry["kind"] in ("bm25", "cosine")
    assert explain["final_score"] == top.score


def test_snippets_are_line_anchored_to_the_file(demo_needle):
    hunks = 0
    for result in demo_needle.search(SearchRequest(query="WAL checkpoint readers writers", limit=5)).results:
        lines = (NOTES / result.path).read_text().split("\n")
        # A snippet is one or more hunks (the file's next answering chunks follow the best), each its own `@@`.
        text = result.snippet.split("\n")
        assert text[0].startswith("@@ -")
        starts = [i for i, line in enumerate(text) if line.startswith("@@ -")]
        for first, end in zip(starts, [*starts[1:], len(text)]):
            header, body = text[first], text[first + 1 : end]
            assert header.endswith(f"@@ notes/{result.path}")
            start, count = (int(x) for x in header.split()[1][1:].split(","))
            assert len(body) == count
            # A line too long to show whole is cut at a word, with "…" where it is cut.
            assert all(b.strip("… ") in line for b, line in zip(body, lines[start - 1 :]))
            hunks += 1
    assert hunks >= 5


def test_collection_filter_applies_to_every_list(demo_needle, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "espresso.md").write_text("# Espresso\n\nSour espresso means the grind is too coarse.\n")
    needle = demo_needle
    needle.collections.add(other, "other")
    try:
        needle.index(IndexRequest(collections=["other"]))
        only_other = needle.search(
            QueryRequest(query="espresso grind too sour", collections=["other"], expand=True)
        ).results
        assert only_other and {r.collection for r in only_other} == {"other"}
    finally:
        needle.remove_collection(CollectionRemoveRequest(name="other"))


def test_gate_answers_no_results_instead_of_bad_hits(demo_needle):
    strict = {"gate.min_similarity": 0.95, "gate.min_bm25": 0.99}
    answer = demo_needle.search(SearchRequest(query="quantum chromodynamics of lattice gluons", set=strict))
    assert answer == SearchAnswer(results=[], label="NO_RESULTS", confidence=0.0)
    assert demo_needle.search(SearchRequest(query="sourdough starter feeding")).label == "PASS"


def test_run_inputs_can_be_set_per_search_and_init_parameters_refused_when_asked(demo_needle):
    narrow = demo_needle.search(
        SearchRequest(query="certbot renew deploy hook", set={"bm25_retriever.top_k": 1, "vector_retriever.top_k": 1})
    )
    assert len(narrow.results) == 1
    with pytest.raises(ValueError, match=r"fuse\.k.*not a run input"):
        demo_needle.search(SearchRequest(query="certbot", set={"fuse.k": 30}), init_overrides=False)


def test_every_instance_of_a_warmed_pool_answers_its_first_search_without_scrolling_the_index(demo_needle, monkeypatch):
    from contextlib import ExitStack

    from needle.runtime.loader import load_pipeline
    from needle.runtime.pool import GraphPool

    def build():
        graph = load_pipeline("search", demo_needle.environment)
        graph.warm_up()
        return graph

    pool = GraphPool(build, size=3)
    pool.fill()
    store = demo_needle.file_store
    scrolls = []
    listing = store.list_documents_meta
    monkeypatch.setattr(store, "list_documents_meta", lambda **kw: scrolls.append(kw) or listing(**kw))
    with ExitStack() as held:
        copies = [held.enter_context(pool.lend()) for _ in range(3)]  # three different instances
        assert len({id(copy) for copy in copies}) == 3
        for copy in copies:
            documents = copy.run({"request": {"query": "kubernetes pod memory limit in notes"}})["snippets"][
                "documents"
            ]
            assert documents[0].meta["path"] == "runbooks/k8s-oomkilled-debugging.md"
    assert len(scrolls) <= 1  # the index's vocabulary is read once for the process, not once per instance


def test_a_server_runs_one_search_once_its_first_graph_is_warm(demo_needle, monkeypatch):
    from needle.owner import served_facade as service

    primed = []
    monkeypatch.setattr(
        demo_needle,
        "prime",
        lambda: primed.append(demo_needle.search(SearchRequest(query="warm up", limit=1), pipeline="search")),
    )
    monkeypatch.setattr(service, "_prime_done", False)
    previous = service._needle
    service.use_needle(demo_needle)
    try:
        assert service.warm("search") is demo_needle.pipeline("search")
        service.warm("vsearch")
    finally:
        service.use_needle(previous)
    assert len(primed) == 1  # once per process, after the first graph warmed


def test_a_graph_left_on_demand_is_not_warmed_at_start_up(demo_needle, monkeypatch):
    from needle.owner import served_facade as service

    warmed = []
    monkeypatch.setattr(demo_needle, "warm", lambda name: warmed.append(name))
    monkeypatch.setattr(service, "_prime_done", True)
    previous = service._needle
    service.use_needle(demo_needle)
    service.warm_on_demand(["ingest"])
    try:
        assert service.warm("ingest") is None
        service.warm("search")
        assert service.warm_deferred() == [] and warmed == ["search"]
    finally:
        service.warm_on_demand(())
        service.use_needle(previous)
