"""`needle eval interactions`' per-variant table from an interaction log: counts, latency, clicks, judgements."""

from __future__ import annotations

import json

import pytest

from needle.evaluation.interactions import format_table, read_log, variant_table
from needle.shells.http.variants import Split


def _write(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _request(id_, variant, latency, paths, status=200):
    return {
        "kind": "request",
        "id": id_,
        "variant": variant,
        "query": "q",
        "results": [f"#{p}" for p in paths],
        "paths": paths,
        "latency_ms": latency,
        "status": status,
    }


def test_the_table_counts_each_variant_and_reads_feedback_by_id(tmp_path):
    log = _write(
        tmp_path / "log.jsonl",
        [
            {"kind": "feedback", "id": "2", "clicks": ["b.md"], "judgements": {"b.md": 2, "z.md": 1}},
            _request("1", "query", 10.0, ["a.md", "b.md"]),
            _request("2", "qb", 30.0, ["a.md", "b.md"]),
            _request("3", "qb", 50.0, []),
            _request("4", "qb", 5.0, [], status=503),
            {"kind": "feedback", "id": "1", "clicks": ["#a.md"]},
        ],
    )
    rows = {row["variant"]: row for row in variant_table(read_log(log))}
    assert (rows["qb"]["requests"], rows["qb"]["errors"], rows["qb"]["latency_ms_mean"]) == (3, 1, 40.0)
    assert rows["qb"]["no_results"] == 0.5 and rows["qb"]["clicked"] == 0.5
    assert rows["qb"]["mrr_first_click"] == 0.5 and rows["query"]["mrr_first_click"] == 1.0
    ideal = 2 + 1 / 1.5849625007211563
    assert rows["qb"]["ndcg@10"] == pytest.approx((2 / 1.5849625007211563) / ideal)
    assert rows["query"]["ndcg@10"] is None and rows["query"]["clicked"] == 1.0
    table = format_table(list(rows.values()))
    assert table.splitlines()[0].startswith("| variant | requests") and "| qb | 3 | 1 |" in table


def test_a_line_that_is_not_an_interaction_is_named(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(_request("1", "query", 1.0, [])) + "\nnot json\n")
    with pytest.raises(ValueError, match=r"log.jsonl:2 is not a line"):
        read_log(log)
    with pytest.raises(ValueError, match="no interaction log"):
        read_log(tmp_path / "missing.jsonl")


def test_a_key_gets_the_same_variant_in_every_process(tmp_path):
    split = Split(["query", "qb"], tmp_path / "log.jsonl")
    assert [split.choose(f"user-{n}") for n in range(6)] == [split.choose(f"user-{n}") for n in range(6)]
    # SHA-256, not Python's salted hash(): fixed values, whatever the process.
    assert [split.choose(k) for k in ("alice", "bob", "carol", "dave")] == ["qb", "query", "query", "qb"]
    assert {split.choose(f"user-{n}") for n in range(20)} == {"query", "qb"}


def test_the_split_is_between_query_and_the_variants_it_names(tmp_path):
    from needle.core.settings import Settings
    from needle.shells.http.variants import split_between

    graph = tmp_path / "b.yml"
    graph.write_text("components: {}\n")
    settings = Settings(data_dir=tmp_path, serve={"split": ["qb", "search"]})
    with pytest.raises(ValueError, match=r"serve\.split names search: name query or the served variants"):
        split_between({"qb": str(graph)}, settings, registry=None)
    assert split_between({}, settings, registry=None) == []
