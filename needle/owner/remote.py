"""`RemoteNeedle`: what the CLI and a second `needle mcp` call on `Needle`, run by the process that owns the index.

The embedded index serves one process at a time. When `needle serve`, `needle mcp` or `needle watch` holds
it, its owner record (`needle.owner.record`) names the loopback address and token of its HTTP routes
(`server/pipelines/`), and this client calls them: the same facade runs there, and the answers come back in
the same schema (`needle.core.results`, `needle.core.files`), so a command prints exactly what it would have printed
locally. A refusal comes back with the owner's message and exit code (`needle.core.errors.RemoteFailure`).
Collections and contexts are plain files in the data folder: they are read and written here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from needle.core import requests
from needle.core.collections import CollectionRegistry
from needle.core.contexts import ContextRegistry
from needle.core.errors import EXIT_CODE_HEADER, RemoteFailure
from needle.core.files.multi_get import FileBatch
from needle.core.files.reading import FileText
from needle.core.results import Answer, SearchAnswer, SearchFilters
from needle.core.settings import Settings
from needle.owner import record as records
from needle.owner.record import OwnerRecord

SEARCH_ROUTES = tuple(requests.SEARCHES)
# Routes whose work may take minutes (an index run, an LLM's answer, reading the whole index): they wait
# as long as the owner's process runs and is not stopped, checked every `answer_timeout` seconds.
LONG_ROUTES = ("index", "answer", "check", "backup", "collection_remove")
MISCONFIGURED = "server misconfigured: "


class RemoteFiles:
    """`Needle.files` through the owner's `get` and `multi_get` routes."""

    def __init__(self, remote: RemoteNeedle) -> None:
        self.remote = remote

    def read(self, ref: str, from_line: int = 1, max_lines: int | None = None) -> FileText:
        """A file or a range of its lines (`needle.core.files.reading.FileReader.read`)."""
        payload = body(requests.GET, {"ref": ref, "from_line": from_line, "max_lines": max_lines})
        return FileText.model_validate(self.remote.post("get", payload))

    def read_many(
        self, pattern: str | None = None, refs: list[str] | None = None, max_bytes: int = requests.DEFAULT_MAX_BYTES
    ) -> FileBatch:
        """The files a glob or a list of references names (`needle.core.files.multi_get.FileAccess.read_many`)."""
        payload = body(requests.MULTI_GET, {"pattern": pattern, "refs": refs, "max_bytes": max_bytes})
        return FileBatch.model_validate(self.remote.post("multi_get", payload))


class RemoteNeedle:
    """
    The calls of `needle.facade.api.Needle` that the CLI and the MCP tools make, through the index owner's routes.

    Usage example:
    ```python
    record = owner.live_owner(settings)
    if record is not None:
        needle = RemoteNeedle(settings, record)
        needle.search("certbot renew", pipeline="search")
    ```
    """

    def __init__(
        self,
        settings: Settings,
        record: OwnerRecord,
        connect_timeout: float = records.CONNECT_TIMEOUT,
        on_gone: Callable[[], OwnerRecord | None] | None = None,
    ) -> None:
        """
        :param settings: Needle's settings (the data folder's collections and contexts are read here).
        :param record: The owner to call; it must prove itself first (`needle.owner.record.connect`).
        :param connect_timeout: Seconds to wait for a connection.
        :param on_gone: Called when the owner went away (connection refused or closed mid-request): the owner
            to use from then on (another process's, or this process's own after it took the index over), or
            `None`. The request is then sent again, once. It raises `needle.owner.record.TookOver` when this process
            took the index over itself (the caller runs the request on its own `Needle`).
        :raises UntrustedOwnerError: When the record or the listener fails the owner's checks.
        :raises OwnerSilentError: When the owner does not answer its challenge.
        """
        self.settings = settings
        self.collections = CollectionRegistry(settings.collections_file)
        self.contexts = ContextRegistry(Path(settings.data_dir) / "contexts.yml")
        self.files = RemoteFiles(self)
        self.connect_timeout = connect_timeout
        self.answer_timeout = float(getattr(getattr(settings, "owner", None), "answer_timeout", 10.0))
        self.on_gone = on_gone
        self._client: httpx.Client | None = None
        self._use(record)

    def _use(self, record: OwnerRecord) -> None:
        """Talk to this owner from now on, once it has proved itself."""
        records.connect(record, self.connect_timeout).close()
        if self._client is not None:
            self._client.close()
        self.record = record
        timeout = httpx.Timeout(self.answer_timeout, connect=self.connect_timeout)
        self._client = httpx.Client(base_url=record.address, headers=record.headers, timeout=timeout)

    # ---- transport ----------------------------------------------------------------------------------
    def post(self, route: str, payload: Mapping[str, Any]) -> Any:
        """
        Call `POST /<route>/run` and return its result.

        :raises RemoteFailure: With the owner's message and exit code when it refuses the request.
        :raises ConnectionError: When the owner does not answer (`OwnerSilentError` when it stopped answering).
        """
        try:
            response = self._send(route, payload)
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as error:
            record = self.on_gone() if self.on_gone is not None else None
            if record is None:
                raise ConnectionError(
                    f"the process that holds the index ({self._who()}) did not answer: {error or type(error).__name__}"
                ) from None
            self._use(record)
            response = self._send(route, payload)
        if response.status_code >= 400:
            raise _failure(response)
        return response.json()["result"]

    def _send(self, route: str, payload: Mapping[str, Any]) -> httpx.Response:
        """One request; a long route waits while the owner runs and is not stopped."""
        client = self._client
        assert client is not None
        if route not in LONG_ROUTES:
            return self._timed(lambda: client.post(f"/{route}/run", json=dict(payload)))
        timeout = httpx.Timeout(None, connect=self.connect_timeout)
        import threading

        done: dict[str, Any] = {}

        def run() -> None:
            try:
                done["response"] = client.post(f"/{route}/run", json=dict(payload), timeout=timeout)
            except BaseException as error:
                done["error"] = error

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        while True:
            worker.join(self.answer_timeout)
            if not worker.is_alive():
                break
            if records.pid_stopped(self.record.pid):
                raise records.OwnerSilentError(self._silent())
        if "error" in done:
            raise done["error"]
        return done["response"]

    def _timed(self, request: Callable[[], httpx.Response]) -> httpx.Response:
        try:
            return request()
        except httpx.TimeoutException as error:
            if isinstance(error, httpx.ConnectTimeout):
                raise records.OwnerSilentError(
                    f"the owner ({self._who()}) took no connection within {self.connect_timeout:g} s"
                ) from None
            raise records.OwnerSilentError(self._silent()) from None

    def _silent(self) -> str:
        stopped = (
            f" (it is stopped: `kill -CONT {self.record.pid}` resumes it)"
            if records.pid_stopped(self.record.pid)
            else ""
        )
        return f"the owner (pid {self.record.pid}) has not answered for {self.answer_timeout:g} s: it may be stopped{stopped}"

    def _who(self) -> str:
        return f"process {self.record.pid}, needle {self.record.command or 'serve'}, {self.record.address}"

    def needs_the_index(self, what: str) -> RemoteFailure:
        """The refusal of a command that only the process holding the index can run (exit code 1, HTTP 503)."""
        return RemoteFailure(
            f"{what} needs the index to itself, and it is open in {self._who()}: stop that process first", 1, 503
        )

    def local(self, what: str) -> Needle:
        """
        Refuse a command that reads the index's stores itself: they are open in the owner.

        :raises RemoteFailure: Always (`needs_the_index`).
        """
        raise self.needs_the_index(what)

    def close(self) -> None:
        """Close the connection."""
        if self._client is not None:
            self._client.close()

    # ---- what the shells call -----------------------------------------------------------------------
    def warm(self, name: str) -> None:
        """Nothing to warm here: the owner warmed its graphs."""
        return None

    def search(
        self,
        query: str,
        pipeline: str = "query",
        top_k: int | None = None,
        collections: list[str] | None = None,
        min_score: float | None = None,
        expand: bool | None = None,
        rerank: bool | None = None,
        chunks: bool = False,
        explain: bool = False,
        overrides: Mapping[str, Any] | None = None,
        init_overrides: bool = True,
        filters: SearchFilters | None = None,
        decompose: bool | None = None,
    ) -> SearchAnswer:
        """
        `Needle.search` through the owner's `search`, `vsearch` or `query` route (`overrides` must be run inputs).

        :raises RemoteFailure: For another graph than those three, and for whatever the owner refuses.
        """
        if pipeline not in SEARCH_ROUTES:
            raise RemoteFailure(
                f"graph {pipeline!r} runs only in the process that holds the index ({self._who()}), which serves "
                f"{', '.join(SEARCH_ROUTES)}",
                2,
                400,
            )
        values = {
            "query": query,
            "limit": top_k,
            "collections": collections,
            "min_score": min_score,
            "chunks": chunks,
            "explain": explain,
            "expand": expand,
            "rerank": rerank,
            "decompose": decompose,
            "set": dict(overrides or {}) or None,
            **(filters or SearchFilters()).request_inputs(),
        }
        return SearchAnswer.model_validate(self.post(pipeline, body(requests.SEARCHES[pipeline], values)))

    def answer(
        self,
        question: str,
        top_k: int | None = None,
        collections: list[str] | None = None,
        min_score: float | None = None,
        expand: bool | None = None,
        rerank: bool | None = None,
        pipeline: str = "rag",
        overrides: Mapping[str, Any] | None = None,
        filters: SearchFilters | None = None,
        decompose: bool | None = None,
        retry: bool | None = None,
    ) -> Answer:
        """
        `Needle.answer` through the owner's `answer` route (its graph, `rag`, with the owner's configuration).

        :raises RemoteFailure: For another graph or parameter overrides, and for whatever the owner refuses.
        """
        if pipeline != "rag" or overrides or expand is not None or rerank is not None:
            raise RemoteFailure(
                f"another answer graph, --set, --expand or --rerank run only in the process that holds the index "
                f"({self._who()}), which answers with rag as configured",
                2,
                400,
            )
        values = {
            "question": question,
            "collections": collections,
            "limit": top_k,
            "min_score": min_score,
            "decompose": decompose,
            "retry": retry,
            **(filters or SearchFilters()).request_inputs(),
        }
        return Answer.model_validate(self.post("answer", body(requests.ANSWER, values)))

    def index(
        self,
        names: list[str] | None = None,
        rebuild: bool = False,
        overrides: Mapping[str, Any] | None = None,
        paths: list[str] | None = None,
        progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """
        `Needle.index` through the owner's `index` route, `paths` included (absolute, or relative to a collection
        root, as the owner's scanner reads them). `progress` is not called: the owner answers with the whole
        run's report once it ends.

        :raises RemoteFailure: For `rebuild` or overrides, and for whatever the owner refuses.
        """
        if rebuild:
            raise self.needs_the_index("--rebuild")
        if overrides:
            raise self.needs_the_index("index --set")
        payload: dict[str, Any] = {"collections": names or None}
        if paths is not None:
            payload["paths"] = list(paths)
        return self.post("index", payload)

    def status(self) -> dict[str, Any]:
        """`Needle.status` from the owner (with its watcher, when it watches)."""
        return self.post("status", {})

    def indexed_files(self, collection: str | None = None) -> list[dict[str, Any]]:
        """`Needle.indexed_files` through the owner's `ls` route."""
        return self.post("ls", {"collection": collection} if collection else {})

    def remove_collection(self, name: str) -> int:
        """`Needle.remove_collection` through the owner's `collection_remove` route."""
        return int(self.post("collection_remove", {"name": name}))

    @property
    def store(self) -> Any:
        """The index itself cannot be lent out."""
        raise self.needs_the_index("this command")

    def optimize(self) -> dict[str, Any]:
        """Refused: the owner holds the index."""
        raise self.needs_the_index("needle optimize")

    def backup(self, path: str) -> dict[str, Any]:
        """`Needle.backup` through the owner's `backup` route, `path` made absolute here (the owner's working
        folder is not this command's)."""
        return self.post("backup", {"path": str(Path(path).expanduser().resolve())})

    def restore(self, path: str) -> dict[str, Any]:
        """Refused: the owner holds the index."""
        raise self.needs_the_index("needle restore")

    def check(self, repair: bool = False) -> dict[str, Any]:
        """`Needle.check` through the owner's `check` route (it waits for an index run the owner is in)."""
        return self.post("check", {"repair": repair})


def body(params: tuple[requests.Param, ...], values: Mapping[str, Any]) -> dict[str, Any]:
    """
    A route's JSON body: the values of the fields its request declares (`needle.core.requests`) that the route takes
    and that are set; the route fills in the rest with the same defaults.
    """
    return {p.name: values[p.name] for p in params if p.http and values.get(p.name) is not None}


def _failure(response: httpx.Response) -> RemoteFailure:
    """The owner's refusal as the exception the CLI shows: its message and exit code."""
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = None
    if not isinstance(detail, str):
        detail = response.text.strip() or f"HTTP {response.status_code}"
    detail = " ".join(detail.split())  # relayed as one line, whatever the owner sent
    status = response.status_code
    code = response.headers.get(EXIT_CODE_HEADER)
    exit_code = int(code) if code and code.isdigit() else (2 if status < 500 else 1)
    return RemoteFailure(detail.removeprefix(MISCONFIGURED), exit_code, status)


__all__ = ["RemoteFiles", "RemoteNeedle", "body"]


if TYPE_CHECKING:
    from needle.facade.api import Needle
    from needle.facade.interface import NeedleInterface

    def _both_facades_conform(local: Needle, remote: RemoteNeedle) -> tuple[NeedleInterface, NeedleInterface]:
        """Where mypy proves that the in-process facade and this remote client both implement the interface."""
        return local, remote
