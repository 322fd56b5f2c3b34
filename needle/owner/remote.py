"""`RemoteNeedle`: what the CLI and a second `needle mcp` call on `Needle`, run by the process that owns the index.

The embedded index serves one process at a time. When `needle serve`, `needle mcp` or `needle watch` holds
it, its owner record (`needle.owner.record`) names the loopback address and token of its HTTP routes
(`server/pipelines/`), and this client calls them: each method sends its request's fields (`needle.core.requests`)
to the command's route (`needle.commands.table`) and validates the answer into the command's result model
(`needle.core.results`, `needle.core.index_results`, `needle.core.files`), the very models the owner's facade returned, so a
command prints exactly what it would have printed locally. A refusal comes back with the owner's message and exit
code (`needle.core.errors.RemoteFailure`). Collections and contexts are plain files in the data folder: they are
read and written here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import TypeAdapter

from needle.commands.table import BY_NAME, BY_ROUTE, Command
from needle.core import requests
from needle.core.collections import CollectionRegistry
from needle.core.contexts import ContextRegistry
from needle.core.errors import EXIT_CODE_HEADER, RemoteFailure
from needle.core.files.batches import FileBatch
from needle.core.files.reading import FileText
from needle.core.index_results import BackupReport, CheckReport, IndexedFile, IndexReport, OptimizeReport, Status
from needle.core.link_results import LinkReport, RelatedReport
from needle.core.results import Answer, SearchAnswer
from needle.core.settings import Settings
from needle.owner import record as records
from needle.owner.record import OwnerRecord

# The search graphs an owner serves, one route each (`search`, `vsearch`, `query`).
SEARCH_ROUTES = tuple(route for route, c in BY_ROUTE.items() if c.result == "needle.core.results:SearchAnswer")
# Routes whose work may take minutes (an index run, an LLM's answer, reading the whole index): they wait
# as long as the owner's process runs and is not stopped, checked every `answer_timeout` seconds.
LONG_ROUTES = ("index", "answer", "check", "backup", "collection_remove")
MISCONFIGURED = "server misconfigured: "


@cache
def _adapter(command: Command) -> TypeAdapter[Any]:
    """What validates the owner's answer to a command into its result model."""
    return TypeAdapter(command.result_type())


def payload(command: Command, request: Any) -> dict[str, Any]:
    """A route's JSON body: the request's set values of the fields the route's request declares and takes."""
    if request is None:
        return {}
    taken = requests.named(command.request) if command.request is not None else {}
    return {name: value for name, value in requests.values(request, "http").items() if name in taken}


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

    def call(self, name: str, request: Any = None) -> Any:
        """
        Send a command's request to its route (`needle.commands.table`) and validate the answer into its result.

        :param name: The command, as the table names it.
        :param request: Its request; `None` for a command that takes none.
        """
        command = BY_NAME[name]
        answer = self.post(command.route or name, payload(command, request))
        return _adapter(command).validate_python(answer)

    # ---- what the shells call -----------------------------------------------------------------------
    def warm(self, name: str) -> None:
        """Nothing to warm here: the owner warmed its graphs."""
        return None

    def search(
        self, request: requests.SearchRequest, pipeline: str = "query", init_overrides: bool = True
    ) -> SearchAnswer:
        """
        `Needle.search` through the owner's `search`, `vsearch` or `query` route (`set` must hold run inputs).

        :raises RemoteFailure: For another graph than those three, and for whatever the owner refuses.
        """
        if pipeline not in SEARCH_ROUTES:
            raise RemoteFailure(
                f"graph {pipeline!r} runs only in the process that holds the index ({self._who()}), which serves "
                f"{', '.join(SEARCH_ROUTES)}",
                2,
                400,
            )
        answer = self.post(pipeline, payload(BY_ROUTE[pipeline], request))
        return SearchAnswer.model_validate(answer)

    def answer(self, request: requests.AnswerRequest, pipeline: str = "rag") -> Answer:
        """
        `Needle.answer` through the owner's `answer` route (its graph, `rag`, with the owner's configuration).

        :raises RemoteFailure: For another graph or parameter overrides, and for whatever the owner refuses.
        """
        if pipeline != "rag" or request.set:
            raise RemoteFailure(
                f"another answer graph or --set run only in the process that holds the index ({self._who()}), "
                "which answers with rag as configured",
                2,
                400,
            )
        return self.call("answer", request)

    def index(
        self, request: requests.IndexRequest, progress: Callable[[IndexReport], None] | None = None
    ) -> IndexReport:
        """
        `Needle.index` through the owner's `index` route, `paths` included (absolute, or relative to a collection
        root, as the owner's scanner reads them). `progress` is not called: the owner answers with the whole
        run's report once it ends.

        :raises RemoteFailure: For `rebuild` or `set`, and for whatever the owner refuses.
        """
        if request.rebuild:
            raise self.needs_the_index("--rebuild")
        if request.set:
            raise self.needs_the_index("index --set")
        return self.call("index", request)

    def status(self) -> Status:
        """`Needle.status` from the owner (with its watcher, when it watches)."""
        return self.call("status")

    def ls(self, request: requests.ListRequest) -> list[IndexedFile]:
        """`Needle.ls` through the owner's `ls` route."""
        return self.call("ls", request)

    def read(self, request: requests.GetRequest) -> FileText:
        """`Needle.read` through the owner's `get` route."""
        return self.call("get", request)

    def read_many(self, request: requests.MultiGetRequest) -> FileBatch:
        """`Needle.read_many` through the owner's route of the same request."""
        return self.call("multi-get", request)

    def links(self, request: requests.LinksRequest) -> LinkReport:
        """`Needle.links` through the owner's `links` route."""
        return self.call("links", request)

    def related(self, request: requests.RelatedRequest) -> RelatedReport:
        """`Needle.related` through the owner's `related` route."""
        return self.call("related", request)

    def remove_collection(self, request: requests.CollectionRemoveRequest) -> int:
        """`Needle.remove_collection` through the owner's `collection_remove` route."""
        return int(self.call("collection remove", request))

    @property
    def store(self) -> Any:
        """The index itself cannot be lent out."""
        raise self.needs_the_index("this command")

    def optimize(self) -> OptimizeReport:
        """Refused: the owner holds the index."""
        raise self.needs_the_index("needle optimize")

    def backup(self, request: requests.BackupRequest) -> BackupReport:
        """`Needle.backup` through the owner's `backup` route, `path` made absolute here (the owner's working
        folder is not this command's)."""
        absolute = replace(request, path=str(Path(request.path).expanduser().resolve()))
        return self.call("backup", absolute)

    def restore(self, request: requests.RestoreRequest) -> BackupReport:
        """Refused: the owner holds the index."""
        raise self.needs_the_index("needle restore")

    def check(self, request: requests.CheckRequest) -> CheckReport:
        """`Needle.check` through the owner's `check` route (it waits for an index run the owner is in)."""
        return self.call("check", request)


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


__all__ = ["RemoteNeedle", "payload"]


if TYPE_CHECKING:
    from needle.facade.api import Needle
    from needle.facade.interface import NeedleInterface

    def _both_facades_conform(local: Needle, remote: RemoteNeedle) -> tuple[NeedleInterface, NeedleInterface]:
        """Where mypy proves that the in-process facade and this remote client both implement the interface."""
        return local, remote
