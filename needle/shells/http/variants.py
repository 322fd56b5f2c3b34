"""Online A/B tests on `needle serve`: graph variants beside the shipped graphs, a split route, its log and counts.

A variant is a YAML graph served at `POST /<name>/run` with the `query` route's request and answer
(`needle serve --pipeline qb=my-query.yml`, or `serve.pipelines: {qb: my-query.yml}` in the configuration).
`POST /split/run` takes the same request plus a `key` that names the caller (a user or session id): the
key's hash picks the variant, so the same key always gets the same one; the answer names it (`variant`, and
the `X-Needle-Variant` header) and carries the request's `id`, which `POST /split/feedback` takes with the
results the caller clicked or judged. Each split request is one line of the interaction log
(`needle.evaluation.interactions`, which reads it for `needle eval interactions`); `status` reports each
variant's requests, errors and latency since the server started.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field, create_model

from needle.core.arguments import Arguments, arguments_model
from needle.core.requests import QueryRequest
from needle.core.resources import SERVER_PIPELINES_DIR
from needle.core.results import SearchAnswer
from needle.evaluation.interactions import FEEDBACK, REQUEST
from needle.owner.served_facade import warm
from needle.shells.http.endpoints import Endpoint

if TYPE_CHECKING:
    from fastapi import FastAPI
    from fastapi.routing import APIRoute

    from needle.core.settings import Settings
    from needle.facade.interface import NeedleInterface

SPLIT = "split"
SPLIT_ROUTE = f"/{SPLIT}/run"
FEEDBACK_ROUTE = f"/{SPLIT}/feedback"
VARIANT_HEADER = "X-Needle-Variant"
BASELINE = "query"
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
# Latencies kept per variant for the percentiles `status` reports (the counts cover every request).
_KEPT = 10_000


def parse_pipelines(given: Sequence[str]) -> dict[str, str]:
    """
    `--pipeline NAME=FILE` values as a map.

    :raises ValueError: When a value is not `NAME=FILE`.
    """
    variants: dict[str, str] = {}
    for item in given:
        name, found, file = item.partition("=")
        if not found or not name or not file:
            raise ValueError(f"--pipeline takes NAME=FILE (e.g. qb=my-query.yml), got {item!r}")
        variants[name.strip()] = file.strip()
    return variants


def shipped_routes() -> set[str]:
    """The routes of `server/pipelines/` (a variant may not take their names), and the split route's."""
    return {p.name for p in SERVER_PIPELINES_DIR.iterdir() if (p / "pipeline_wrapper.py").is_file()} | {SPLIT}


def served_variants(settings: Settings, given: Sequence[str] = ()) -> dict[str, str]:
    """
    The variants `needle serve` serves: `serve.pipelines`, then `--pipeline` values (which win), files made absolute.

    :param settings: Needle's settings.
    :param given: `--pipeline NAME=FILE` values.
    :returns: Route name → absolute YAML path.
    :raises ValueError: When a name is not a route name or is taken, or a file does not exist.
    """
    variants = {**settings.serve.pipelines, **parse_pipelines(given)}
    taken = shipped_routes()
    resolved = {}
    for name, file in variants.items():
        if not _NAME.fullmatch(name):
            raise ValueError(f"variant name {name!r}: use lowercase letters, digits, '-' and '_' (e.g. qb)")
        if name in taken:
            raise ValueError(f"variant name {name!r} is a route Needle serves: pick another name")
        path = Path(file).expanduser().resolve()
        if not path.is_file():
            raise ValueError(f"variant {name}: no graph file at {path}; give an existing YAML file")
        resolved[name] = str(path)
    return resolved


class VariantEndpoint(Endpoint):
    """Hybrid search with a variant of the query graph, for A/B tests: the `query` route's request and answer."""

    command = "query"
    graph: ClassVar[str] = ""

    def setup(self) -> None:
        """Load and warm the variant's graph at start-up, so that its first request is as quick as the others."""
        self.pipeline = warm(self.graph)

    def serve(self, needle: NeedleInterface, request: Any) -> Any:
        """Run the search on the variant's graph."""
        return needle.search(request, self.graph, init_overrides=False)


def variant_wrapper(name: str, graph: str) -> VariantEndpoint:
    """A wrapper serving `graph` at `/<name>/run` (not an MCP tool: agents keep the shipped tools)."""
    doc = f"Hybrid search with the variant `{name}` ({Path(graph).name}), for A/B tests: the `query` route's request."
    cls: type[VariantEndpoint] = type(
        f"Variant_{name.replace('-', '_')}", (VariantEndpoint,), {"__doc__": doc, "graph": graph}
    )
    cls.skip_mcp = True
    return cls()


def deploy_variants(app: FastAPI, registry: Any, variants: Mapping[str, str]) -> None:
    """
    Set up each variant's wrapper and add it to hayhooks' registry and routes, as hayhooks deploys a wrapper.

    :param app: The app hayhooks serves.
    :param registry: hayhooks' pipeline registry.
    :param variants: Route name → YAML path (`served_variants`).
    """
    from hayhooks.server.pipelines.models import create_pipeline_metadata
    from hayhooks.server.utils.deploy_utils import add_pipeline_api_route
    from hayhooks.server.utils.module_loader import _set_method_implementation_flags

    for name, graph in variants.items():
        wrapper = variant_wrapper(name, graph)
        _set_method_implementation_flags(wrapper)
        wrapper.setup()
        registry.add(name, wrapper, metadata=create_pipeline_metadata(name, wrapper))
        add_pipeline_api_route(app, name, wrapper, _defer_openapi_rebuild=True)
    app.openapi_schema = None


class _Counts:
    """One variant's requests, errors and recent latencies."""

    def __init__(self) -> None:
        self.requests = 0
        self.errors = 0
        self.latencies: deque[float] = deque(maxlen=_KEPT)

    def report(self) -> dict[str, Any]:
        kept = sorted(self.latencies)
        return {
            "requests": self.requests,
            "errors": self.errors,
            "latency_ms_mean": round(statistics.fmean(kept), 1) if kept else None,
            "latency_ms_p50": round(statistics.median(kept), 1) if kept else None,
            "latency_ms_p95": round(kept[min(len(kept) - 1, int(0.95 * len(kept)))], 1) if kept else None,
        }


class Split:
    """
    The split route's assignment, counts and interaction log.

    Usage example:
    ```python
    split = Split(["query", "qb"], Path("interactions.jsonl"))
    split.choose("user-17")  # the same variant for this key on every call, in every process
    ```
    """

    def __init__(self, variants: Sequence[str], log: Path, graphs: Mapping[str, str] | None = None) -> None:
        """
        :param variants: The routes requests are split between, in a fixed order (the hash picks by position).
        :param log: The interaction log (JSONL), appended to.
        :param graphs: Each variant's YAML file, for `status`.
        """
        if not variants:
            raise ValueError("the split route needs at least one variant: serve one with --pipeline NAME=FILE")
        self.variants = list(variants)
        self.log = log
        self.graphs = dict(graphs or {})
        self._counts = {name: _Counts() for name in self.variants}
        self._lock = threading.Lock()

    def choose(self, key: str) -> str:
        """The variant for a caller's key: a stable hash (SHA-256) of the key, modulo the number of variants."""
        digest = hashlib.sha256(key.encode("utf-8")).digest()
        return self.variants[int.from_bytes(digest[:8], "big") % len(self.variants)]

    def record(self, entry: dict[str, Any]) -> None:
        """Count a request (or feedback) and append its line to the log."""
        line = json.dumps({"time": _now(), **entry}, ensure_ascii=False)
        with self._lock:
            if entry["kind"] == REQUEST:
                counts = self._counts[entry["variant"]]
                counts.requests += 1
                if entry["status"] >= 400:
                    counts.errors += 1
                else:
                    counts.latencies.append(entry["latency_ms"])
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with self.log.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")

    def report(self) -> dict[str, Any]:
        """What `status` shows: the variants split between, the log, and each variant's counts and latency."""
        with self._lock:
            counts = {name: {"graph": self.graphs.get(name, name), **c.report()} for name, c in self._counts.items()}
        return {"split": list(self.variants), "interaction_log": str(self.log), "variants": counts}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_current: Split | None = None


def current() -> Split | None:
    """The split of this process's server, `None` when it serves no variants."""
    return _current


def use_split(split: Split | None) -> None:
    """Make `split` the one `status` reports (`create_app`)."""
    global _current
    _current = split


class SplitAnswer(BaseModel):
    """A search answered by the variant the caller's key picked."""

    variant: str = Field(description="The variant (route name) that answered")
    id: str = Field(description="This request's id in the interaction log: send it back with feedback")
    result: SearchAnswer


class Feedback(Arguments):
    """What the caller learned of a split request's results: what was clicked, or graded."""

    id: str = Field(min_length=1, max_length=64, description="The request's id, from its answer")
    clicks: list[str] = Field(default_factory=list, max_length=100, description="Results clicked: docids or paths")
    judgements: dict[str, float] = Field(
        default_factory=dict, description="Results graded: docid or path → grade (0 not relevant, higher better)"
    )


class Recorded(BaseModel):
    """Feedback appended to the interaction log."""

    id: str


def split_body() -> type[Arguments]:
    """The split route's body: the `query` route's fields and the caller's `key`."""
    base = arguments_model(SPLIT, QueryRequest, "http")
    key = Field(
        min_length=1, max_length=200, description="Who asks (a user or session id): the same key, the same variant"
    )
    return create_model(f"{SPLIT}RunRequest", __base__=base, key=(str, key))


def split_routes(split: Split, registry: Any) -> list[APIRoute]:
    """
    `POST /split/run` (a search answered by the key's variant) and `POST /split/feedback` (clicks and grades).

    :param split: The split, its counts and log.
    :param registry: hayhooks' registry, holding the variants' wrappers once the app started.
    """
    from fastapi import HTTPException, Response
    from fastapi.routing import APIRoute
    from starlette.concurrency import run_in_threadpool

    body = split_body()

    async def run(run_req: Arguments, response: Response) -> SplitAnswer:
        fields = run_req.model_dump()
        key = fields.pop("key")
        variant = split.choose(key)
        request_id = uuid.uuid4().hex
        response.headers[VARIANT_HEADER] = variant
        started = time.perf_counter()
        status, answer = 200, None
        try:
            answer = await run_in_threadpool(registry.get(variant).run_api, **fields)
        except HTTPException as error:
            status = error.status_code
            error.headers = {**(error.headers or {}), VARIANT_HEADER: variant}
            raise
        except Exception:
            status = 500
            raise
        finally:
            hits = answer.results if isinstance(answer, SearchAnswer) else []
            split.record(
                {
                    "kind": REQUEST,
                    "id": request_id,
                    "variant": variant,
                    "query": fields["query"],
                    "results": [h.docid for h in hits],
                    "paths": [h.path for h in hits],
                    "latency_ms": round((time.perf_counter() - started) * 1000, 2),
                    "status": status,
                }
            )
        return SplitAnswer(variant=variant, id=request_id, result=answer)

    async def feedback(feedback_req: Feedback) -> Recorded:
        split.record({"kind": FEEDBACK, **feedback_req.model_dump()})
        return Recorded(id=feedback_req.id)

    run.__annotations__ = {"run_req": body, "response": Response, "return": SplitAnswer}
    description = (
        "Hybrid search answered by one of the variants under test, picked by the hash of `key`: the same key always "
        f"gets the same variant ({', '.join(split.variants)}). The answer names the variant and the request's `id`."
    )
    return [
        APIRoute(SPLIT_ROUTE, run, methods=["POST"], response_model=SplitAnswer, tags=["a/b"], description=description),
        APIRoute(
            FEEDBACK_ROUTE,
            feedback,
            methods=["POST"],
            response_model=Recorded,
            tags=["a/b"],
            description="Record what the caller clicked or graded among a split request's results (by its `id`).",
        ),
    ]


def split_between(variants: Mapping[str, str], settings: Settings, registry: Any) -> list[APIRoute]:
    """
    The split routes between `serve.split` (default: `query` and every variant), made this process's split;
    none, and no split, without variants.

    :param variants: Route name → YAML path (`served_variants`).
    :param settings: Needle's settings (`serve.split`, `serve.interaction_log`, the data folder).
    :param registry: hayhooks' registry, holding the variants' wrappers once the app started.
    """
    if not variants:
        use_split(None)
        return []
    log = Path(settings.serve.interaction_log or settings.data_dir / "interactions.jsonl").expanduser()
    names = settings.serve.split or [BASELINE, *variants]
    unknown = [n for n in names if n not in variants and n != BASELINE]
    if unknown:
        raise ValueError(f"serve.split names {', '.join(unknown)}: name {BASELINE} or the served variants")
    split = Split(names, log, variants)
    use_split(split)
    return split_routes(split, registry)


__all__ = [
    "Split",
    "SplitAnswer",
    "VariantEndpoint",
    "current",
    "deploy_variants",
    "parse_pipelines",
    "served_variants",
    "split_between",
    "split_routes",
    "use_split",
]
