"""A fault-injecting embedding server on 127.0.0.1 for the tests, and its session fixtures.

The server: Needle's offline model (all-MiniLM-L6-v2 int8, through the same fastembed backend Needle runs
in-process) behind OpenAI's `/v1/embeddings` and Ollama's `/api/embed`, under the names given with `--model`,
so that Needle's served embedders are tested (and measured, `python -m eval.served_embedders`) against a real
HTTP server with the real OpenAI and Ollama clients, and their vectors compared with in-process ones. Faults
are switched on at run time with `POST /_faults`, to test what Needle does when a server is slow,
rate-limited, failing, refuses large batches, wants a key or answers vectors of the wrong size; `GET /_stats`
counts requests and texts.

    python -m tests.embedding_server --port 8089 --model minilm --model nomic-embed-text

Faults (`POST /_faults` with any of these; `{}` clears them):
- `delay`: seconds before each answer;
- `rate_limit`: the next N requests get 429 (with `Retry-After: 0`);
- `fail`: the next N requests get 500 (with `message` as their error text, when given); `fail_after`: after N more answered requests, every request gets 500;
- `max_batch`: requests of more texts get 413;
- `dim`: vectors are cut to this many values;
- `key`: requests must carry `Authorization: Bearer <key>` (a 401 repeats the key it got, as some servers do);
- `spoil`: `{"marker": "nan" | "inf" | "zero"}`: a text containing the marker gets a vector of NaN, of infinite
  values or of zeros (sent as JSON's `NaN` and `Infinity`, which Python's and most clients' parsers read);
- `not_json`: answers are a plain-text page with status 200, as a proxy's error page can be.
- `translations`: `{text: sentence}`, each text embedded as its sentence, as a multilingual model puts a
  translation beside its original (the offline MiniLM is English-only).

The fixtures: one server per session, a real process. tests/conftest.py registers this module as a plugin
(`pytest_plugins`): a test asks for `embedding_server`, or for `served` (faults and statistics cleared before
and after it), and switches faults on with `served.faults(rate_limit=2)`. The server is a module-level
singleton: the first fixture instance starts it, the last to tear down stops it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from tests.llm_server import free_port

REPO = Path(__file__).resolve().parent.parent
SERVER_HELP = "A small embedding server over fastembed that speaks OpenAI's `/v1/embeddings` and Ollama's `/api/embed`."

# The names the server answers to (MiniLM under each): a plain one, and one whose prefixes Needle knows.
MODEL = "minilm"
NOMIC = "nomic-embed-text"
STARTUP_TIMEOUT = 120.0
_server: dict[str, Any] = {"process": None, "handle": None, "users": 0}


@dataclass
class EmbeddingServer:
    """The running server: its root URL, and its fault and statistics endpoints."""

    root: str

    @property
    def openai_url(self) -> str:
        """The OpenAI-compatible base URL."""
        return f"{self.root}/v1"

    def _call(self, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.root + path, data=data, headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def faults(self, **faults: Any) -> None:
        """Switch faults on (see the module's docstring); `faults()` clears them."""
        self._call("/_faults", faults)

    def stats(self) -> dict[str, Any]:
        """Requests answered, texts embedded and each request's batch size, since the last reset."""
        return self._call("/_stats")

    def reset(self) -> None:
        """Clear faults and statistics."""
        self._call("/_faults", {})
        self._call("/_stats/reset", {})


def _start() -> EmbeddingServer:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "tests.embedding_server",
        "--port",
        str(port),
        "--model",
        MODEL,
        "--model",
        NOMIC,
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    # The server keeps writing to its own descriptor of the log once this process's is closed (after start-up).
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        server = EmbeddingServer(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(
                    f"embedding server exited with {process.returncode}: {log.read().decode(errors='replace')[-2000:]}"
                )
            try:
                server._call("/health")
                _server.update(process=process, handle=server)
                return server
            except OSError:
                time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"embedding server not ready after {STARTUP_TIMEOUT:.0f} s")


@pytest.fixture(scope="session")
def embedding_server() -> Iterator[EmbeddingServer]:
    """The session's embedding server (started on first use)."""
    server = _server["handle"] or _start()
    _server["users"] += 1
    try:
        yield server
    finally:
        _server["users"] -= 1
        if _server["users"] == 0 and _server["process"] is not None:
            process = _server["process"]
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
            _server.update(process=None, handle=None)


@pytest.fixture
def served(embedding_server: EmbeddingServer) -> Iterator[EmbeddingServer]:
    """The server with no faults and fresh statistics, cleared again after the test."""
    embedding_server.reset()
    yield embedding_server
    embedding_server.reset()


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (a server that is down)."""
    return f"http://127.0.0.1:{free_port()}"


# ---------------------------------------------------------------------------------------------- the server


class Faults:
    """The faults in force and the counters, shared by the request threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.settings: dict[str, Any] = {}
        self.requests = 0
        self.texts = 0
        self.batches: list[int] = []

    def check(self, texts: int, authorization: str | None) -> tuple[int, Any] | None:
        """An error (status, body detail) this request gets, or None; counts the request."""
        with self.lock:
            self.requests += 1
            faults = self.settings
            delay = float(faults.get("delay") or 0)
            key = faults.get("key")
            if key and authorization != f"Bearer {key}":
                given = (authorization or "").removeprefix("Bearer ")
                return 401, f"Incorrect API key provided: {given}"
            if faults.get("rate_limit", 0) > 0:
                faults["rate_limit"] -= 1
                return 429, "rate limit reached, retry later"
            if faults.get("fail", 0) > 0:
                faults["fail"] -= 1
                return 500, faults.get("message") or "the model runner crashed"
            if "fail_after" in faults:
                if faults["fail_after"] <= 0:
                    return 500, "the model runner crashed"
                faults["fail_after"] -= 1
            if faults.get("max_batch") and texts > faults["max_batch"]:
                return 413, f"batch of {texts} texts exceeds max_client_batch_size {faults['max_batch']}"
            self.texts += texts
            self.batches.append(texts)
        if delay:
            time.sleep(delay)
        return None


def create_app(model_dir: Path, names: list[str]) -> FastAPI:
    """
    The server's app.

    :param model_dir: Needle's model folder (the offline MiniLM, provisioned by `make models`).
    :param names: Model names it answers to; any other is "not found", as on a real server.
    """
    from haystack_integrations.components.embedders.fastembed.embedding_backend.fastembed_backend import (
        _FastembedEmbeddingBackendFactory,
    )
    from needle.core.model_files import LOCAL_DENSE_MODEL, dense_embedder_params

    params = dense_embedder_params(LOCAL_DENSE_MODEL, model_dir)
    backend = _FastembedEmbeddingBackendFactory.get_embedding_backend(
        model_name=params["model"],
        cache_dir=params.get("cache_dir"),
        threads=None,
        local_files_only=params["local_files_only"],
        model_kwargs=params.get("model_kwargs"),
    )
    app = FastAPI(title="Needle test embedding server")
    faults = Faults()
    app.state.faults = faults

    def embed(texts: list[str]) -> list[list[float]]:
        # A multilingual model's behaviour for a test's few sentences: a text given as a translation is embedded
        # as the sentence it translates, so both get one vector.
        same = faults.settings.get("translations") or {}
        asked = texts
        texts = [same.get(text, text) for text in texts]
        vectors = [list(map(float, v)) for v in backend.embed(texts, progress_bar=False)]
        cut = faults.settings.get("dim")
        vectors = [v[:cut] for v in vectors] if cut else vectors
        return [_spoiled(text, vector, faults.settings.get("spoil") or {}) for text, vector in zip(asked, vectors)]

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/_faults")
    def set_faults(body: dict[str, Any]) -> dict[str, Any]:
        with faults.lock:
            faults.settings = dict(body)
        return faults.settings

    @app.get("/_stats")
    def stats() -> dict[str, Any]:
        with faults.lock:
            return {"requests": faults.requests, "texts": faults.texts, "batches": list(faults.batches)}

    @app.post("/_stats/reset")
    def reset_stats() -> dict[str, Any]:
        with faults.lock:
            faults.requests, faults.texts, faults.batches = 0, 0, []
        return {}

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "needle"} for name in names]}

    @app.post("/v1/embeddings")
    async def openai_embeddings(request: Request) -> JSONResponse:
        body = await request.json()
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        error = await _in_thread(faults.check, len(texts), request.headers.get("authorization"))
        if error is not None:
            status, message = error
            headers = {"Retry-After": "0"} if status == 429 else {}
            return JSONResponse(
                {"error": {"message": message, "type": "server_error", "code": status}}, status, headers
            )
        if body.get("model") not in names:
            return JSONResponse(
                {
                    "error": {
                        "message": f"The model `{body.get('model')}` does not exist",
                        "type": "invalid_request_error",
                        "code": "model_not_found",
                    }
                },
                404,
            )
        if faults.settings.get("not_json"):
            return PlainTextResponse("<html><body>502 Bad Gateway</body></html>")
        vectors = await _in_thread(embed, texts)
        return NaNJSONResponse(
            {
                "object": "list",
                "model": body["model"],
                "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                "usage": {
                    "prompt_tokens": sum(len(t.split()) for t in texts),
                    "total_tokens": sum(len(t.split()) for t in texts),
                },
            }
        )

    @app.post("/api/embed")
    async def ollama_embed(request: Request) -> JSONResponse:
        body = await request.json()
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        error = await _in_thread(faults.check, len(texts), request.headers.get("authorization"))
        if error is not None:
            return JSONResponse({"error": error[1]}, error[0])
        if body.get("model") not in names:
            return JSONResponse({"error": f'model "{body.get("model")}" not found, try pulling it first'}, 404)
        if faults.settings.get("not_json"):
            return PlainTextResponse("<html><body>502 Bad Gateway</body></html>")
        started = time.perf_counter_ns()
        vectors = await _in_thread(embed, texts)
        return NaNJSONResponse(
            {
                "model": body["model"],
                "embeddings": vectors,
                "total_duration": time.perf_counter_ns() - started,
                "load_duration": 0,
                "prompt_eval_count": sum(len(t.split()) for t in texts),
            }
        )

    return app


def _spoiled(text: str, vector: list[float], spoil: dict[str, str]) -> list[float]:
    """The vector, or the spoiled one asked for texts containing a marker (see the module's docstring)."""
    for marker, kind in spoil.items():
        if marker in text:
            value = {"nan": float("nan"), "inf": float("inf"), "zero": 0.0}[kind]
            return [value] * len(vector)
    return vector


class NaNJSONResponse(JSONResponse):
    """JSON with `NaN` and `Infinity` written as Python's encoder writes them (starlette's refuses them)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode()


async def _in_thread(function: Any, *args: Any) -> Any:
    """Run blocking work (the model, a delay) off the event loop, so that requests are served side by side."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(function, *args)


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted."""
    from needle.core.settings import load_settings

    parser = argparse.ArgumentParser(prog="python -m tests.embedding_server", description=SERVER_HELP)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument(
        "--model", action="append", help="a name the model is served under (repeatable; default: minilm)"
    )
    parser.add_argument(
        "--model-dir", type=Path, default=None, help="Needle's model folder (default: the configured one)"
    )
    args = parser.parse_args(argv)
    model_dir = args.model_dir or load_settings().model_dir
    app = create_app(model_dir, args.model or ["minilm"])
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
