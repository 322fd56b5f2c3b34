"""Online A/B on a real `needle serve`: a graph variant beside `/query/run`, the split route between them, its
counts in `status`, its interaction log read by `needle eval interactions`, and `/v1/models` listing what chats."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from needle.shells.http.variants import Split
from tests.server.conftest import REPO, clean_env, copy_data, start_server, stop, wait_ready

pytestmark = pytest.mark.integration
QUERY = "git rebase onto another branch"
EXPECTED = "howto/git-rebase-onto.md"


@pytest.fixture(scope="module")
def ab_server(demo_index, model_dir):
    """`needle serve --pipeline qb=FILE`: the variant keeps fewer candidates than the shipped query graph."""
    base = demo_index["base"]
    variant = base / "query-b.yml"
    variant.write_text((REPO / "pipelines" / "query.yml").read_text().replace("top_k: 40", "top_k: 20"))
    log = base / "ab" / "interactions.jsonl"
    server = start_server(
        copy_data(demo_index, "data-ab"),
        model_dir,
        base / "ab.log",
        "--pipeline",
        f"qb={variant}",
        NEEDLE_SERVE__INTERACTION_LOG=str(log),
    )
    try:
        wait_ready(server)
        server.interaction_log = log  # type: ignore[attr-defined]
        yield server
    finally:
        stop(server)


@pytest.fixture
def http(ab_server):
    with ab_server.client() as client:
        yield client


def test_models_lists_only_the_endpoint_that_chats(http):
    models = http.get("/v1/models")
    assert models.status_code == 200
    assert [m["id"] for m in models.json()["data"]] == ["answer"]


def test_the_variant_is_served_beside_query_with_the_same_request_schema(http):
    spec = http.get("/openapi.json").json()

    def body_schema(path: str) -> dict:
        ref = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        return spec["components"]["schemas"][ref.rsplit("/", 1)[1]]

    assert body_schema("/qb/run")["properties"] == body_schema("/query/run")["properties"]
    assert body_schema("/qb/run").get("additionalProperties") is False
    split = body_schema("/split/run")
    assert set(split["properties"]) == {*body_schema("/query/run")["properties"], "key"} and "key" in split["required"]
    answer = http.post("/qb/run", json={"query": QUERY, "limit": 3})
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["results"][0]["path"] == EXPECTED
    assert http.post("/qb/run", json={"query": QUERY, "bogus": 1}).status_code == 422


def test_the_split_route_gives_a_key_the_same_variant_and_says_which_answered(http, ab_server):
    split = Split(["query", "qb"], ab_server.interaction_log)  # the server's assignment, computed here
    keys = [f"user-{n}" for n in range(8)]
    seen = {}
    for key in keys * 2:
        answer = http.post("/split/run", json={"query": QUERY, "limit": 3, "key": key})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["variant"] == answer.headers["x-needle-variant"] == split.choose(key)
        assert seen.setdefault(key, body["variant"]) == body["variant"]
        assert body["result"]["results"][0]["path"] == EXPECTED and body["id"]
    assert set(seen.values()) == {"query", "qb"}  # eight keys reach both variants
    assert http.post("/split/run", json={"query": QUERY}).status_code == 422  # no key

    ab = http.post("/status/run", json={}).json()["result"]["ab"]
    counts = {name: v["requests"] for name, v in ab["variants"].items()}
    expected = {name: 2 * sum(v == name for v in seen.values()) for name in ("query", "qb")}
    assert counts == expected and ab["split"] == ["query", "qb"]
    assert all(v["latency_ms_p95"] > 0 for v in ab["variants"].values())

    lines = [json.loads(line) for line in ab_server.interaction_log.read_text().splitlines()]
    assert len(lines) == 16 and {line["variant"] for line in lines} == {"query", "qb"}
    first = lines[0]
    assert first["query"] == QUERY and first["paths"][0] == EXPECTED and first["latency_ms"] > 0
    clicked = http.post("/split/feedback", json={"id": first["id"], "clicks": [EXPECTED]})
    assert clicked.status_code == 200

    table = subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", "eval", "interactions", str(ab_server.interaction_log), "--json"],
        env=clean_env(ab_server.data_dir, ab_server.data_dir),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = {row["variant"]: row for row in json.loads(table.stdout)}
    assert {name: row["requests"] for name, row in rows.items()} == expected
    assert rows[first["variant"]]["mrr_first_click"] == 1.0


def test_a_variant_may_not_take_a_shipped_route(demo_index, model_dir, tmp_path):
    graph = tmp_path / "q.yml"
    graph.write_text((REPO / "pipelines" / "query.yml").read_text())
    refused = subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", "serve", "--port", "1", "--pipeline", f"search={graph}"],
        env=clean_env(tmp_path / "data", model_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode != 0 and "is a route Needle serves" in refused.stderr
