"""Safe by default: reads stay inside collection roots, the token guards every route, errors stay clean."""

import pytest

from tests.server.conftest import SECRET, TOKEN

pytestmark = pytest.mark.integration
ESCAPES = [
    "../../etc/passwd",
    "notes/../../../etc/passwd",
    "notes/howto/../../secret.txt",
    "/etc/passwd",
    "notes//etc/passwd",
    "notes:/etc/passwd",
    "~/.ssh/id_rsa",
    "notes/howto/escape.md",
    "notes/logs/outside/secret.txt",
    "notes/howto/sqlite-wal-mode.md\x00.txt",
    "notes/%2e%2e%2f%2e%2e%2fsecret.txt",
    "%2e%2e%2fsecret.txt",
    "notes/howto/%2E%2E/%2E%2E/secret.txt",
    "..\\..\\secret.txt",
]


class TestContainment:
    @pytest.mark.parametrize("ref", ESCAPES)
    def test_get_refuses_every_way_out(self, http, ref):
        response = http.post("/get/run", json={"ref": ref})
        assert 400 <= response.status_code < 500, response.text
        assert SECRET.strip() not in response.text and "root:" not in response.text
        assert "Traceback" not in response.text

    @pytest.mark.parametrize("ref", ESCAPES)
    def test_multi_get_refs_refuse_every_way_out(self, http, ref):
        response = http.post("/multi_get/run", json={"refs": ["notes/howto/git-rebase-onto.md", ref]})
        assert 400 <= response.status_code < 500, response.text
        assert SECRET.strip() not in response.text

    @pytest.mark.parametrize("pattern", ["../*", "notes/../../*", "/etc/*", "%2e%2e/*", "**/../../*"])
    def test_multi_get_patterns_refuse_a_way_out(self, http, pattern):
        response = http.post("/multi_get/run", json={"pattern": pattern})
        assert response.status_code == 400, response.text

    def test_a_glob_never_reads_through_links_that_leave(self, http):
        batch = http.post("/multi_get/run", json={"pattern": "**/*"}).json()["result"]
        assert all(SECRET.strip() not in f["text"] for f in batch["files"])
        assert "notes/howto/escape.md" in [s["path"] for s in batch["skipped"]]
        assert not [f for f in batch["files"] if f["path"].startswith("logs/outside")]


class TestToken:
    @pytest.mark.parametrize(
        "method, path",
        [
            ("POST", "/search/run"), ("POST", "/get/run"), ("POST", "/index/run"), ("GET", "/status"),
            ("GET", "/openapi.json"), ("GET", "/docs"), ("POST", "/v1/chat/completions"),
            ("POST", "/mcp"), ("GET", "/sse"), ("POST", "/messages/?session_id=x"),
        ],
    )
    @pytest.mark.parametrize("token", [None, "wrong", TOKEN + "x"])
    def test_every_route_needs_the_token(self, locked_server, method, path, token):
        with locked_server.client(token) as http:
            response = http.request(method, path, json={"query": "certbot"})
        assert response.status_code == 401
        assert "Authorization: Bearer" in response.json()["detail"] and TOKEN not in response.text

    def test_the_right_token_is_let_in(self, locked_server):
        with locked_server.client(TOKEN) as http:
            response = http.post("/search/run", json={"query": "certbot renew", "limit": 1})
        assert response.status_code == 200
        assert response.json()["result"]["results"][0]["path"] == "howto/certbot-tls-renewal.md"

    def test_without_a_token_configured_no_header_is_needed(self, http):
        assert http.post("/status/run", json={}).status_code == 200


class TestBrowsersAndHosts:
    def test_no_cross_origin_grant(self, http):
        response = http.options(
            "/search/run", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
        )
        assert response.headers.get("access-control-allow-origin") is None

    def test_a_foreign_host_header_is_refused_on_loopback(self, http):
        response = http.post("/status/run", json={}, headers={"Host": "evil.example"})
        assert response.status_code == 400


class TestGeneratorErrors:
    def test_an_unreachable_generator_is_a_clean_502(self, locked_server, closed_port):
        with locked_server.client(TOKEN) as http:
            response = http.post(
                "/v1/chat/completions",
                json={"model": "answer", "messages": [{"role": "user", "content": "how do I renew certificates?"}]},
            )
        assert response.status_code == 502, response.text
        detail = response.json()["detail"]
        assert f"127.0.0.1:{closed_port}" in detail and "Traceback" not in response.text

    def test_a_chat_without_a_question_is_a_400(self, locked_server):
        with locked_server.client(TOKEN) as http:
            response = http.post("/v1/chat/completions", json={"model": "answer", "messages": [{"role": "system", "content": "x"}]})
        assert response.status_code == 400 and "user message" in response.json()["detail"]
