"""`needle serve`'s lean `/<name>/run` routes answer exactly as hayhooks' generic route does: same bytes, same
refusals, same OpenAPI document; only hayhooks' per-request log lines and trace span are gone."""

from __future__ import annotations

import io
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hayhooks import BasePipelineWrapper
from hayhooks.server.logger import log

from needle.commands.table import BY_NAME
from needle.shells.http.endpoints import route_signature, user_error
from needle.shells.http.run_routes import RunShortcut, lean_run_routes


class PipelineWrapper(BasePipelineWrapper):
    """An endpoint wrapper shaped as Needle's are (`run_api` takes a request's fields, as `endpoint` gives it)."""

    def setup(self) -> None:
        self.pipeline = None

    def run_api(self, **request: Any) -> dict[str, Any]:
        """
        Echo the request, with scores that JSON renders in more than one way.

        :returns: The request and the scores.
        """
        bound = route_signature(BY_NAME["vsearch"], dict[str, Any]).bind(self, **request)
        bound.apply_defaults()
        request = {key: value for key, value in bound.arguments.items() if key != "self"}
        if request["query"] == "missing":
            raise user_error(404, "no note matches 'missing'")
        if request["query"] == "boom":
            raise RuntimeError("the engine went away")
        return {"request": request, "scores": [0.1, 1e-05, 2.5, 1 / 3], "text": "naïve — café"}


PipelineWrapper.run_api.__signature__ = route_signature(BY_NAME["vsearch"], dict[str, Any])  # type: ignore[attr-defined]


def _app(lean: bool) -> tuple[FastAPI, list[str]]:
    """An app with hayhooks' route for the wrapper, deployed the way hayhooks deploys one; lean or as built."""
    from hayhooks.server.pipelines.registry import registry
    from hayhooks.server.utils.deploy_utils import add_pipeline_api_route, create_pipeline_metadata
    from hayhooks.server.utils.module_loader import _set_method_implementation_flags

    wrapper = PipelineWrapper()
    _set_method_implementation_flags(wrapper)
    wrapper.setup()
    name = "echo"
    if registry.get(name) is not None:
        registry.remove(name)
    registry.add(name, wrapper, metadata=create_pipeline_metadata(name, wrapper))
    app = FastAPI()
    add_pipeline_api_route(app, name, wrapper)
    if not lean:
        return app, []
    runs: dict[str, Any] = {}
    app.add_middleware(RunShortcut, runs=runs)  # as `needle serve` has it, in front of the routes
    return app, lean_run_routes(app, registry, runs)


@pytest.fixture(scope="module")
def clients() -> dict[str, Any]:
    generic, _ = _app(lean=False)
    lean, replaced = _app(lean=True)
    assert replaced == ["echo"]
    return {"lean": TestClient(lean), "generic": TestClient(generic)}


BODIES = [
    {"query": "return the gradient of an array"},
    {"query": "tls renewal", "limit": 3, "collections": ["notes"], "where": ["status=draft"], "explain": True},
    {"query": "missing"},
    {"query": "boom"},
    {"query": ""},
    {"query": "x", "limit": 0},
    {"limit": 3},
    {"query": "x", "unknown": 1},
    ["query"],
    "tls renewal",
]
RAW = [  # bodies FastAPI refuses before validating: the shortcut leaves their wording to it
    (b'{"query": "tls', "application/json"),
    (b"", "application/json"),
    (b'{"query": "tls renewal"}', "text/plain"),
    (b'{"query": "tls renewal"}', "application/vnd.api+json"),
    (b'{"query": "tls renewal"}', "application/json; charset=utf-8"),
    (b"\xff\xfe", "application/json"),
    (b"[" * 100_000 + b"]" * 100_000, "application/json"),
]


@pytest.mark.parametrize("body", BODIES)
def test_the_lean_route_answers_the_same_bytes_and_refusals(clients, body):
    lean = clients["lean"].post("/echo/run", json=body)
    generic = clients["generic"].post("/echo/run", json=body)
    assert (lean.status_code, lean.content) == (generic.status_code, generic.content)
    assert lean.headers["content-type"] == generic.headers["content-type"]


@pytest.mark.parametrize("body, kind", RAW)
def test_the_lean_route_answers_raw_bodies_as_fastapi_does(clients, body, kind):
    lean = clients["lean"].post("/echo/run", content=body, headers={"content-type": kind})
    generic = clients["generic"].post("/echo/run", content=body, headers={"content-type": kind})
    assert (lean.status_code, lean.content) == (generic.status_code, generic.content)


def test_the_shortcut_answers_well_formed_requests_without_the_router():
    app, _ = _app(lean=True)
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", "") != "/echo/run"]
    client = TestClient(app)
    answer = client.post("/echo/run", json={"query": "tls renewal", "limit": 3})
    assert answer.status_code == 200 and answer.json()["result"]["request"]["limit"] == 3
    refused = client.post("/echo/run", json={"query": "missing"})  # the endpoint's own refusal
    assert refused.status_code == 404 and "no note matches" in refused.json()["detail"]
    assert client.post("/echo/run", json={"limit": 3}).status_code == 404  # invalid: left to the (gone) route


def test_the_lean_route_keeps_the_openapi_document(clients):
    assert clients["lean"].get("/openapi.json").json() == clients["generic"].get("/openapi.json").json()


def test_the_lean_route_writes_no_line_with_the_request_to_the_log(clients):
    # hayhooks' route logs every request's fields (the query's words) and its time, two lines a request.
    lines = io.StringIO()
    sink = log.add(lines, level="DEBUG", format="{message} {extra}")
    try:
        clients["lean"].post("/echo/run", json={"query": "private words"})
        assert "private words" not in lines.getvalue()
        clients["generic"].post("/echo/run", json={"query": "private words"})
        assert "private words" in lines.getvalue()  # what the generic route would have written
    finally:
        log.remove(sink)


@pytest.mark.parametrize("env, asked", [({}, False), ({"HAYHOOKS_LOG_LEVEL": "INFO"}, True), ({"LOG": "DEBUG"}, True)])
def test_a_log_level_set_for_debugging_keeps_hayhooks_routes_and_their_lines(monkeypatch, env, asked):
    from needle.owner.processes import logs_asked_for

    for name in ("HAYHOOKS_LOG_LEVEL", "LOG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert logs_asked_for() is asked
