"""The HTTP endpoints of `needle serve` end to end: a real server process, a real index, httpx."""

import json
import stat
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.server.conftest import NOTES, TOKEN

pytestmark = pytest.mark.integration
HIT_FIELDS = {
    "docid",
    "collection",
    "path",
    "title",
    "heading_path",
    "start_line",
    "end_line",
    "score",
    "snippet",
    "text",
    "explain",
    "format",
    "page",
    "page_end",
    "anchor",
    "context",
}


def hits(http, endpoint, **body):
    response = http.post(f"/{endpoint}/run", json=body)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    if isinstance(result, dict) and "results" in result and "label" in result:
        return result["results"]
    return result


class TestSearchEndpoints:
    @pytest.mark.parametrize(
        "endpoint, query, expected",
        [
            ("search", "pg_replication_slots logical replication", "howto/postgres-logical-replication.md"),
            ("search", "certbot renew", "howto/certbot-tls-renewal.md"),
            (
                "vsearch",
                "why does my container keep getting killed for using too much memory",
                "runbooks/k8s-oomkilled-debugging.md",
            ),
            ("vsearch", "backing up my laptop to an encrypted repository", "howto/restic-laptop-backups.md"),
            ("query", "git rebase onto another branch", "howto/git-rebase-onto.md"),
            ("query", "sqlite write-ahead log concurrent readers", "howto/sqlite-wal-mode.md"),
        ],
    )
    def test_expected_note_is_the_top_hit(self, http, endpoint, query, expected):
        assert hits(http, endpoint, query=query, limit=3)[0]["path"] == expected

    def test_a_search_writes_no_line_per_stage_to_the_server_log(self, http, server):
        # Haystack logs each stage run at INFO, and the MCP SDK turns the root logger to INFO: rendering
        # those lines cost a served search more time than its graph.
        hits(http, "query", query="certbot renewal hook", limit=3)
        assert "Running component" not in server.log.read_text(errors="replace")

    def test_a_request_writes_no_line_with_its_fields_to_the_server_log(self, http, server):
        # hayhooks' generic route logs each request's fields (the query's words) and its time; the served
        # routes are Needle's lean ones (needle/shells/http/run_routes.py), which keep only the access line.
        hits(http, "search", query="renewal hook zebra-words", limit=3)
        # `needle serve` keeps its log in DATA_DIR/serve.log (its terminal gets the ready line only).
        log = server.log.read_text(errors="replace") + (server.data_dir / "serve.log").read_text(errors="replace")
        assert "zebra-words" not in log and "Running pipeline" not in log
        assert '"POST /search/run HTTP/1.1" 200' in log

    def test_result_has_the_documented_fields_and_lines_match_the_file(self, http, demo_index):
        for hit in hits(http, "query", query="certbot renewal hook", limit=3):
            assert set(hit) == HIT_FIELDS
            assert hit["docid"].startswith("#") and hit["collection"] == "notes"
            count = hit["end_line"] - hit["start_line"] + 1
            assert (hit["format"], hit["page"], hit["anchor"]) == (
                "markdown",
                None,
                f"notes/{hit['path']}:{hit['start_line']}:{count}",
            )
            lines = (demo_index["notes"] / hit["path"]).read_text().split("\n")
            assert hit["text"].strip() in "\n".join(lines[hit["start_line"] - 1 : hit["end_line"]])
            header, *body = hit["snippet"].split("\n")
            start = int(header.split()[1].split(",")[0][1:])
            assert header.endswith(f"@@ notes/{hit['path']}") and body[0] in lines[start - 1]

    def test_every_result_list_carries_a_confidence_that_agrees_with_its_label(self, http):
        for endpoint in ("search", "vsearch", "query"):
            on = http.post(f"/{endpoint}/run", json={"query": "certbot renewal hook", "limit": 3}).json()["result"]
            off = http.post(f"/{endpoint}/run", json={"query": "how do I tune a cello", "limit": 3}).json()["result"]
            assert on["label"] == "PASS" and on["confidence"] >= 0.5, endpoint
            assert off["label"] != "PASS" and off["confidence"] < 0.5, endpoint

    def test_decompose_searches_each_part_of_a_multi_part_question(self, http):
        question = "how do I renew the TLS certificate, and also why was my container OOMKilled"
        body = {"query": question, "limit": 5, "decompose": True, "explain": True}
        result = http.post("/query/run", json=body).json()["result"]
        assert result["explain"]["sub_questions"] == [
            "how do I renew the TLS certificate",
            "why was my container OOMKilled",
        ]
        paths = [h["path"] for h in result["results"]]
        assert "howto/certbot-tls-renewal.md" in paths and "runbooks/k8s-oomkilled-debugging.md" in paths
        assert "sub_1_bm25" in result["results"][0]["explain"]["lists"]

    def test_limit_collections_and_defaults(self, http):
        assert len(hits(http, "search", query="backup", limit=2, collections=["notes"])) == 2
        assert 1 <= len(hits(http, "query", query="sqlite")) <= 10

    def test_min_score_can_leave_nothing(self, http):
        assert hits(http, "vsearch", query="sourdough", min_score=0.9999) == []

    def test_concurrent_requests_all_succeed(self, http):
        queries = [("query", "sqlite wal"), ("search", "certbot"), ("vsearch", "encrypted backups")] * 3

        def run(pair):
            endpoint, query = pair
            return http.post(f"/{endpoint}/run", json={"query": query, "limit": 3})

        with ThreadPoolExecutor(max_workers=6) as pool:
            responses = list(pool.map(run, queries))
        assert [r.status_code for r in responses] == [200] * len(queries)
        assert all(r.json()["result"]["results"] for r in responses)


class TestValidation:
    @pytest.mark.parametrize(
        "endpoint, body, status, message",
        [
            ("search", {"query": ""}, 422, "query: String should have at least 1 character"),
            ("search", {"query": "   "}, 400, "query must be a non-empty string"),
            ("query", {}, 422, "query: Field required"),
            ("query", {"query": "x", "limit": 0}, 422, "limit: Input should be greater than or equal to 1"),
            ("query", {"query": "x", "limit": 10000}, 422, "limit: Input should be less than or equal to 1000"),
            ("vsearch", {"query": "x" * 100_000}, 422, "query: String should have at most 2000 characters"),
            ("search", {"query": 42}, 422, "query: Input should be a valid string"),
            ("search", {"query": "x", "limit": "5"}, 422, "limit: Input should be a valid integer"),
            ("search", {"query": "x", "limit": True}, 422, "limit: Input should be a valid integer"),
            ("search", {"query": "x", "min_score": -1}, 422, "min_score: Input should be greater than or equal to 0"),
            ("search", {"query": "x", "collections": "notes"}, 422, "collections: Input should be a valid list"),
            ("search", {"query": "x", "collections": ["nope"]}, 400, "unknown collection(s): nope"),
            ("get", {"ref": "notes/howto/sqlite-wal-mode.md", "from_line": 0}, 422, "from_line"),
            ("get", {"ref": "notes/howto/sqlite-wal-mode.md", "from_line": 100000}, 400, "past the end"),
            ("get", {"ref": "notes/howto/no-such-note.md"}, 404, "no file"),
            ("get", {"ref": "#ffffff"}, 404, "no indexed file has docid"),
            ("multi_get", {}, 400, "neither was sent"),
            ("multi_get", {"pattern": "*.md", "refs": ["x"]}, 400, "give either 'pattern'"),
            ("multi_get", {"pattern": "**/*.md", "max_bytes": 0}, 422, "max_bytes"),
            ("index", {"collections": ["nope"]}, 400, "unknown collection(s): nope"),
            ("index", {"paths": ["/etc/passwd"]}, 400, "path '/etc/passwd' is in no collection being indexed"),
            ("index", {"paths": "howto/sqlite-wal-mode.md"}, 422, "paths"),
            ("query", {"query": "x", "where": ["status"]}, 400, "where must read field=value"),
            ("search", {"query": "x", "after": "someday"}, 400, "not a date"),
            ("vsearch", {"query": "x", "tags": "homelab"}, 422, "tags"),
        ],
    )
    def test_bad_input_is_a_4xx_with_a_message_and_no_trace(self, http, endpoint, body, status, message):
        response = http.post(f"/{endpoint}/run", json=body)
        assert response.status_code == status, response.text
        assert message in response.json()["detail"]
        assert "Traceback" not in response.text and len(response.text) < 2000

    def test_malformed_json_is_a_422(self, http):
        response = http.post("/search/run", content=b"{not json", headers={"content-type": "application/json"})
        assert response.status_code == 422 and "Traceback" not in response.text


class TestFilters:
    def test_the_filters_have_the_cli_names(self, http):
        assert [
            h["path"] for h in hits(http, "query", query="databases", tags=["databases"], tags_none=["postgres"])
        ] == ["howto/sqlite-wal-mode.md"]
        assert [h["path"] for h in hits(http, "search", query="memory", path="runbooks/")] == [
            "runbooks/k8s-oomkilled-debugging.md"
        ]
        assert [h["path"] for h in hits(http, "vsearch", query="certificates", where=["status=done"])] == [
            "howto/certbot-tls-renewal.md"
        ]
        dated = hits(http, "query", query="notes", after="2024-01-01", before="2024-03", self_query=False, limit=10)
        assert {h["path"] for h in dated} == {"howto/sqlite-wal-mode.md", "howto/restic-laptop-backups.md"}

    def test_the_answer_says_what_the_question_filtered_by(self, http):
        response = http.post("/query/run", json={"query": "#databases write-ahead log", "limit": 3})
        answer = response.json()["result"]
        assert answer["self_query"]["filters"] == {"tags": ["databases"]}
        assert answer["self_query"]["query"] == "write-ahead log" and answer["self_query"]["applied"] is True
        assert answer["results"][0]["path"] == "howto/sqlite-wal-mode.md"


class TestFiles:
    def test_get_whole_file_and_line_range(self, http, demo_index):
        path = demo_index["notes"] / "howto" / "sqlite-wal-mode.md"
        lines = path.read_text().splitlines()
        whole = http.post("/get/run", json={"ref": "notes/howto/sqlite-wal-mode.md"}).json()["result"]
        assert whole["text"] == "\n".join(lines) and whole["total_lines"] == len(lines)
        part = http.post("/get/run", json={"ref": "howto/sqlite-wal-mode.md", "from_line": 3, "max_lines": 2}).json()[
            "result"
        ]
        assert part["text"].split("\n") == lines[2:4]
        assert (part["from_line"], part["to_line"], part["path"], part["collection"]) == (
            3,
            4,
            "howto/sqlite-wal-mode.md",
            "notes",
        )

    def test_get_by_docid_of_a_search_hit(self, http):
        hit = hits(http, "search", query="sqlite wal", limit=1)[0]
        result = http.post(
            "/get/run", json={"ref": hit["docid"], "from_line": hit["start_line"], "max_lines": 3}
        ).json()["result"]
        assert result["path"] == hit["path"] and result["docid"] == hit["docid"]

    def test_multi_get_by_glob(self, http):
        batch = http.post("/multi_get/run", json={"pattern": "notes/howto/*.md"}).json()["result"]
        read = sorted(f["path"] for f in batch["files"])
        assert read == sorted(n for n in NOTES if n.startswith("howto/"))
        assert [s["path"] for s in batch["skipped"]] == ["notes/howto/escape.md"]
        assert "outside the collection" in batch["skipped"][0]["reason"]

    def test_multi_get_skips_files_over_the_cap_with_a_reason(self, http, demo_index):
        size = (demo_index["notes"] / "howto" / "certbot-tls-renewal.md").stat().st_size
        pattern = "notes/howto/certbot*.md"
        batch = http.post("/multi_get/run", json={"pattern": pattern, "max_bytes": size - 1}).json()["result"]
        assert batch["files"] == []
        assert batch["skipped"][0]["path"] == "notes/howto/certbot-tls-renewal.md"
        assert f"{size} bytes is over max_bytes={size - 1}" in batch["skipped"][0]["reason"]
        batch = http.post("/multi_get/run", json={"pattern": pattern, "max_bytes": size}).json()["result"]
        assert [f["bytes"] for f in batch["files"]] == [size]

    def test_files_the_collection_does_not_include_are_not_served(self, http):
        # logs/big.log is in the collection's folder, but its masks include notes only.
        assert (
            http.post("/multi_get/run", json={"pattern": "**/*.log", "max_bytes": 40_000}).json()["result"]["files"]
            == []
        )
        response = http.post("/get/run", json={"ref": "notes/logs/big.log"})
        assert response.status_code == 404 and "no file" in response.json()["detail"]

    def test_multi_get_by_refs(self, http):
        refs = ["notes/howto/git-rebase-onto.md", "runbooks/k8s-oomkilled-debugging.md"]
        batch = http.post("/multi_get/run", json={"refs": refs}).json()["result"]
        assert [f["path"] for f in batch["files"]] == [
            "howto/git-rebase-onto.md",
            "runbooks/k8s-oomkilled-debugging.md",
        ]


class TestStatusIndexAndSchema:
    def test_status_lists_the_collection_with_counts(self, http):
        status = http.post("/status/run", json={}).json()["result"]
        notes = status["collections"][0]
        assert notes["name"] == "notes" and notes["files"] == len(NOTES) and notes["chunks"] > 0
        assert status["embedding_model"] == "local/all-MiniLM-L6-v2-int8"

    def test_index_returns_the_report_and_skips_the_link_out(self, http):
        report = http.post("/index/run", json={"collections": ["notes"]}).json()["result"]
        assert report["collections"] == ["notes"] and report["files_unchanged"] == len(NOTES)
        assert report["chunks_embedded"] == 0
        assert any(s["path"] == "howto/escape.md" for s in report["skipped"])
        assert report["files_read"] == 0 and report["files_skipped_by_stat"] == len(NOTES)

    def test_index_paths_reads_only_those_files(self, http):
        report = http.post("/index/run", json={"paths": ["howto/sqlite-wal-mode.md"]}).json()["result"]
        assert (report["files_seen"], report["files_read"], report["files_unchanged"]) == (1, 1, 1)
        assert report["texts_embedded"] == 0 and report["deleted"] == 0

    def test_openapi_documents_every_endpoint(self, http):
        schema = http.get("/openapi.json").json()
        for name in ("search", "vsearch", "query", "get", "multi_get", "status", "index"):
            operation = schema["paths"][f"/{name}/run"]["post"]
            assert operation["description"], name
        properties = next(
            s for k, s in schema["components"]["schemas"].items() if k.startswith("queryRun") and k.endswith("Request")
        )["properties"]
        assert {"query", "collections", "limit", "min_score"} <= set(properties)
        assert properties["limit"]["maximum"] == 1000 and properties["query"]["description"]

    def test_serve_owns_the_index_in_its_owner_record(self, server, http):
        record_file = server.data_dir / "owner.json"
        record = json.loads(record_file.read_text())
        assert record["pid"] == server.process.pid and record["address"] == server.url and record["command"] == "serve"
        assert stat.S_IMODE(record_file.stat().st_mode) == 0o600
        listed = http.post("/ls/run", json={"collection": "notes"}).json()["result"]
        assert sorted(f["path"] for f in listed) == sorted(NOTES)

    def test_backup_serves_only_the_owner_token(self, server, locked_server, http, tmp_path):
        target = tmp_path / "backup"
        assert http.post("/backup/run", json={"path": str(target)}).status_code == 403  # no token at all
        with locked_server.client(TOKEN) as api_client:  # the API token is not the owner's
            assert api_client.post("/backup/run", json={"path": str(target)}).status_code == 403
        assert not target.exists()
        record = json.loads((server.data_dir / "owner.json").read_text())
        owner = {"Authorization": f"Bearer {record['token']}"}
        relative = http.post("/backup/run", json={"path": "backup"}, headers=owner)
        assert relative.status_code == 400 and "absolute" in relative.json()["detail"]
        done = http.post("/backup/run", json={"path": str(target)}, headers=owner)
        assert done.status_code == 200, done.text
        assert (target / "needle_backup.json").is_file()

    def test_deploy_undeploy_and_draw_routes_are_not_served(self, http):
        paths = http.get("/openapi.json").json()["paths"]
        assert not [p for p in paths if p.startswith(("/deploy", "/undeploy", "/draw"))]
        assert http.post("/deploy_files", json={"name": "x", "files": {}}).status_code in (404, 405)

    def test_openai_routes_needle_does_not_use_are_not_served(self, http):
        paths = http.get("/openapi.json").json()["paths"]
        assert not [p for p in paths if p.rstrip("/").endswith(("/files", "/responses"))]
        for path in ("/files", "/v1/files", "/responses", "/v1/responses"):
            assert http.post(path, json={"model": "answer", "input": "hi"}).status_code in (404, 405), path
        assert "/v1/chat/completions" in paths and "/v1/models" in paths


class TestChat:
    def test_without_an_llm_the_chat_says_how_to_configure_one(self, http):
        response = http.post(
            "/v1/chat/completions", json={"model": "answer", "messages": [{"role": "user", "content": "hi"}]}
        )
        assert response.status_code == 502
        assert "NEEDLE_LLM__URL" in response.json()["detail"] and "Traceback" not in response.text

    def test_the_answer_endpoint_runs_the_answer_graph(self, http, closed_port):
        response = http.post("/answer/run", json={"question": "how do I renew certificates?"})
        assert response.status_code == 502
        assert f"127.0.0.1:{closed_port}" in response.json()["detail"]
