"""`needle mcp` and `needle watch`: processes that own the embedded index while their main job is elsewhere.

They own it like `needle serve`: other `needle` commands reach them through the same routes
(`needle.shells.http.server.create_app`), served from a thread on 127.0.0.1 at a port the system picks, with a token
of their own, both named in the owner record (`needle.owner.record`). A second `needle mcp` finds the owner and
serves its tools through it (`needle.owner.remote.RemoteNeedle`).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from needle.owner import record as records

# Builds the routes an owner serves: the HTTP shell's `create_app`, handed in by the command that starts the owner.
AppFactory = Callable[..., Any]

logger = logging.getLogger(__name__)


def quiet_graph_runs() -> None:
    """
    Keep Haystack's line per stage run ("Running component …", at INFO) out of a server's log.

    The MCP SDK sets the root logger to INFO with a rich handler when its server is built, and Haystack logs
    every stage of every query at INFO: rendering those lines took 40% of a search's time in `needle serve`
    (py-spy, `python -m eval.hotpath http`). Haystack's warnings still show; `HAYHOOKS_LOG_LEVEL` or `LOG`,
    when set, is left to rule, for someone debugging a graph.
    """
    if not logs_asked_for():
        logging.getLogger("haystack").setLevel(logging.WARNING)


def logs_asked_for() -> bool:
    """
    Whether someone set hayhooks' log level (`HAYHOOKS_LOG_LEVEL` or `LOG`), debugging the server: then
    Haystack logs each stage, and the routes stay hayhooks' own, which log each request with its fields.
    """
    return bool(os.getenv("HAYHOOKS_LOG_LEVEL") or os.getenv("LOG"))


def quiet_request_logs() -> None:
    """
    Keep the requests that other `needle` commands send an owner out of its terminal: hayhooks logs each run
    of an endpoint with its parameters (a user's queries) and Haystack each component it runs, at INFO, which
    a `needle watch` (whose own lines are the index runs) or a `needle mcp` (an agent's child) should not
    print. Warnings and errors still show; `HAYHOOKS_LOG_LEVEL` or `LOG`, when set, is left to rule.
    """
    if os.getenv("HAYHOOKS_LOG_LEVEL") or os.getenv("LOG"):
        return
    from hayhooks.server.logger import formatter
    from hayhooks.server.logger import log as hayhooks_log

    hayhooks_log.remove()
    hayhooks_log.add(sys.stderr, level="WARNING", format=formatter)
    quiet_graph_runs()


def _Server(config: Any) -> Any:
    """A uvicorn server with an event set once it listens (or its start-up failed): `up`."""
    import uvicorn

    class Server(uvicorn.Server):
        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.up = threading.Event()

        async def startup(self, sockets: Any = None) -> None:
            try:
                await super().startup(sockets=sockets)
            finally:
                self.up.set()

    return Server(config)


class BackgroundServer:
    """
    The routes of `create_app` in a uvicorn server on its own thread; the owner record lives as long as it.

    Usage example:
    ```python
    server = BackgroundServer(command="watch", app=create_app)
    server.start()   # returns once the endpoints are loaded and the owner record is written
    ...
    server.stop()
    ```
    """

    def __init__(
        self,
        command: str,
        app: AppFactory,
        watch: bool = False,
        start_timeout: float = 600.0,
        staged: bool = False,
        mcp: bool = True,
    ) -> None:
        """
        :param command: The command that owns the index (`mcp`, `watch`), written into the record.
        :param app: Builds the routes (the HTTP shell's `create_app`), given the owner record's token and record.
        :param watch: Keep the index up to date while serving (`needle.lifecycle.watch`).
        :param start_timeout: Seconds the endpoints may take to load.
        :param staged: Answer other commands (`/needle/hello`, `/needle/cli`) as soon as the index is held,
            and build the other routes when `build_full` is called (`needle.owner.staged.StagedApp`): what a
            background owner does, whose first command waits for it.
        :param mcp: Serve the MCP transports too (`/mcp`, `/sse`). A background owner leaves them out: only
            `needle` commands reach it (a joining `needle mcp` through the tools' routes), and the MCP SDK
            would cost it about 25 MB.
        :raises ValueError: When `start_timeout` is not positive.
        """
        if start_timeout <= 0:
            raise ValueError(f"start_timeout must be > 0, got {start_timeout}")
        self.command = command
        self.app = app
        self.watch = watch
        self.start_timeout = start_timeout
        self.staged = staged
        self.mcp = mcp
        self._app: Any = None
        self.record: records.OwnerRecord | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    def start(self) -> records.OwnerRecord:
        """
        Bind a loopback port, load the endpoints and write the owner record.

        :returns: The record other commands read.
        :raises RuntimeError: When the endpoints fail to load (the index is locked, a model is missing...).
        """
        import uvicorn

        from needle.owner.served_facade import get_needle

        records.hold_index(get_needle())  # take the index first: a locked one fails here, with its holder
        sock = records.loopback_socket()
        port = sock.getsockname()[1]
        self.record = records.new_record(f"http://127.0.0.1:{port}", records.new_token(), self.command)
        if self.staged:
            from needle.owner.staged import StagedApp

            quiet_graph_runs()
            self._app = StagedApp(self.record, build=self._full_app)
        else:
            self._app = self._full_app(own_record=True)
        config = uvicorn.Config(self._app, log_level="warning", lifespan="on", access_log=False)
        self._server = _Server(config)
        self._thread = threading.Thread(target=self._run, args=(sock,), name="needle-owner-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.start_timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"the routes of needle {self.command} failed to start: {self._failure or 'see the messages above'}"
                )
            self._server.up.wait(0.05)  # set as soon as it listens: no polling interval added to the start
        return self.record

    def _full_app(self, own_record: bool = False) -> Any:
        """Every route (`self.app`), for this process's record."""
        assert self.record is not None
        app = self.app(
            host="127.0.0.1",
            token=self.record.token,
            owner=self.record,
            watch=self.watch,
            own_record=own_record,
            warm_ingest=self.watch,  # without a watcher, index runs load the ingest graph and let it go after
            mcp=self.mcp,
        )
        quiet_request_logs()
        return app

    def build_full(self) -> bool:
        """
        A staged server: build and start every other route now (the owner routes answer meanwhile); does
        nothing on a server that is not staged.

        :returns: Whether every route serves.
        """
        if not self.staged or self._app is None:
            return True
        return bool(self._app.build_full(self.start_timeout))

    def full_wanted(self) -> bool:
        """A staged server: whether a request for a route other than the owner's waits for `build_full`."""
        return bool(self.staged and self._app is not None and self._app.wanted.is_set())

    def _run(self, sock: Any) -> None:
        try:
            self._server.run(sockets=[sock])
        except BaseException as error:
            self._failure = error
        finally:
            sock.close()

    def stop(self) -> None:
        """Stop serving; the owner record is removed as the app shuts down."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)


def run_mcp(app: AppFactory, serve_stdio: Callable[[Callable[[], None]], int], watch: bool = False) -> int:
    """
    `needle mcp`: serve the MCP tools over stdin/stdout until the client closes them, answering the protocol at
    once; meanwhile, on a thread, own the index (its routes in the background) or join the owner that answers.
    When that fails (a missing model, a damaged index), every tool call says so in one line.

    :param app: Builds the routes an owner serves (the HTTP shell's `create_app`).
    :param serve_stdio: Serves the MCP tools over stdio until the client closes them, calling its argument first
        on a thread (the MCP shell's `run_stdio`).
    :param watch: Keep the index live while owning it (`needle.lifecycle.watch`); an owner that does not watch is left so.
    :returns: The exit code.
    """

    servers: list[BackgroundServer] = []

    def prepare() -> None:
        server = _own_or_join(watch, app)
        if server is not None:
            servers.append(server)

    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return serve_stdio(prepare)
    finally:
        signal.signal(signal.SIGTERM, previous)
        for running in [*servers, *_TAKEN_OVER]:
            running.stop()


def _interrupt(*_: Any) -> None:
    """SIGTERM as Ctrl-C: the owner stops its routes and removes its record on the way out."""
    raise KeyboardInterrupt


def _own_or_join(watch: bool, app: AppFactory) -> BackgroundServer | None:
    """
    Own the index (start its routes, named in the owner record), or serve through the owner that answers.

    :returns: The routes' server when this process owns the index, else `None`.
    """
    from needle.core.errors import is_lock_error
    from needle.core.settings import load_settings
    from needle.owner.remote import RemoteNeedle
    from needle.owner.served_facade import get_needle, use_needle

    settings = load_settings()
    if not records.uses_owner(settings):
        if watch:
            from needle.lifecycle.watch import Watcher

            Watcher.from_settings(get_needle()).start()
        return None
    # Any owner that answers is joined, a background one included: this process is then a thin client of
    # it (its first tool call answered as soon as the owner answers), and it is still there after the session.
    record = records.live_owner(settings)
    if record is None:
        server = BackgroundServer(command="mcp", app=app, watch=watch)
        try:
            # The models and the index first, outside the routes' start-up: a missing model or a damaged index
            # fails here as Needle's one line (what to run), not as the start-up errors of every endpoint.
            get_needle().warm("query")
            server.start()
            return server
        except Exception as error:
            if not is_lock_error(error):
                raise
            record = records.wait_for_owner(settings, OWNER_WAIT_SECONDS)
            if record is None:
                raise
    from needle.owner.code_stamp import code_stamp

    if record.code != code_stamp():
        logger.warning(
            "The owner (pid %s, needle %s) runs other code than this needle mcp (started before Needle "
            "changed): its tools may not match; restart it to use this code",
            record.pid,
            record.command or "serve",
        )
    logger.info("The index is open in process %s: serving its tools through %s", record.pid, record.address)
    use_needle(RemoteNeedle(settings, record, on_gone=lambda: _take_over(settings, watch, app)))
    if settings.owner.standby and record.command != records.BACKGROUND:
        # Ready to take over from another window's owner when it closes; a background owner outlives the
        # session (it exits only when idle), so joining it loads nothing here.
        _STANDBY.start(settings)
    return None


class Standby:
    """
    A `Needle` of this process with the graphs an owner's routes serve already loaded, the index not opened:
    a `needle mcp` that serves through another process's owner takes the index over with it in a couple of
    seconds when that owner goes away, instead of loading every model first (`owner.standby`).

    Usage example:
    ```python
    standby = Standby()
    standby.start(settings)        # loads on a thread
    needle = standby.take()        # waits for it; None when it failed
    ```
    """

    # What an owner's routes warm at start-up (`server/pipelines/*/pipeline_wrapper.py`): the tools' searches,
    # then the modules that serving the routes imports, then the ingest graph.
    GRAPHS = ("search", "query", "vsearch")
    LATER = ("ingest",)
    MODULES = ("uvicorn", "hayhooks.server.app", "needle.shells.http.server")

    def __init__(self) -> None:
        self._needle: Any = None
        self._thread: threading.Thread | None = None

    def start(self, settings: Any) -> None:
        """Begin loading on a daemon thread; a second call does nothing."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._load, args=(settings,), name="needle-standby", daemon=True)
        self._thread.start()

    def _load(self, settings: Any) -> None:
        from needle.facade.api import Needle

        try:
            with contextlib.redirect_stdout(sys.stderr):  # stdout carries the MCP protocol
                needle = Needle(settings)
                self._needle = needle  # taken as it is if the owner goes before the graphs are warm
                for name in self.GRAPHS:
                    needle.warm(name)
                for module in self.MODULES:  # what serving the routes imports, loaded while nothing waits
                    importlib.import_module(module)
                for name in self.LATER:
                    needle.warm(name)
        except Exception as error:
            logger.warning("Could not prepare to take the index over: %s", error)

    def take(self) -> Any:
        """The standby `Needle` (its graphs warming on, when not all are loaded yet), or `None` when there is none."""
        needle, self._needle = self._needle, None
        return needle


_STANDBY = Standby()


# The routes this process started when it took the index over from an owner that went away.
_TAKEN_OVER: list[BackgroundServer] = []
_TAKE_OVER_LOCK = threading.Lock()


def _take_over(settings: Any, watch: bool, app: AppFactory) -> records.OwnerRecord | None:
    """
    The owner went away: use the one that took its place, or become the owner. Becoming it, this process
    takes the index's lock with its standby `Needle` (`Standby`), serves its own calls with it at once (the
    call that met the closed connection runs again here: `records.TookOver`), and starts its routes for
    other processes on a thread meanwhile.

    :returns: The owner to send requests to from now on, or `None` when none could be found or started.
    :raises TookOver: When this process holds the index now (the request runs again on its own `Needle`).
    """
    from needle.core.errors import is_lock_error
    from needle.facade.api import Needle
    from needle.owner.served_facade import use_needle

    with _TAKE_OVER_LOCK:
        if _TAKEN_OVER:
            raise records.TookOver()
        try:
            record = records.live_owner(settings)
        except ConnectionError:
            record = None
        if record is not None:
            return record
        local = _STANDBY.take() or Needle(settings)
        try:
            records.hold_index(local)
        except Exception as error:
            local.close()
            if not is_lock_error(error):
                logger.error("Could not take the index over: %s", error)
                return None
            return records.wait_for_owner(settings, OWNER_WAIT_SECONDS)
        server = BackgroundServer(command="mcp", app=app, watch=watch)
        _TAKEN_OVER.append(server)
        use_needle(local)
        threading.Thread(target=_serve_taken_over, args=(server,), name="needle-take-over", daemon=True).start()
        raise records.TookOver()


def _serve_taken_over(server: BackgroundServer) -> None:
    """Start the routes of an index this process took over, for the other processes' commands."""
    try:
        with contextlib.redirect_stdout(sys.stderr):  # stdout carries the MCP protocol
            record = server.start()
    except Exception as error:
        logger.error("Took the index over, but its routes did not start: %s", error)
        return
    logger.info("The owner went away: this process holds the index now (%s)", record.address)


def _swap_needle(needle: Any) -> Any:
    """Serve this process's endpoints with `needle`; returns the one served before."""
    from needle.owner import served_facade as service

    previous = service._needle
    service.use_needle(needle)
    return previous


def run_watch(app: AppFactory) -> int:
    """
    `needle watch`: own the index, serve its routes to other commands, and keep it live until interrupted
    (Ctrl-C or SIGTERM); with a Qdrant server, only keep it live.

    :returns: The exit code.
    :raises IndexOwnedError: When another process already owns the index.
    """
    from needle.core.settings import load_settings

    settings = load_settings()
    stopped = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        if records.uses_owner(settings):
            records.refuse_second_owner(settings)
            running: Any = BackgroundServer(command="watch", app=app, watch=True)
            record = running.start()
            print(
                f"needle watch: watching the collections (pid {record.pid}); other needle commands reach the index "
                f"at {record.address}",
                file=sys.stderr,
                flush=True,
            )
        else:
            from needle.facade.api import Needle
            from needle.lifecycle.watch import Watcher

            running = Watcher.from_settings(Needle(settings))
            running.start()
        try:
            while not stopped.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            running.stop()
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def run_owner(app: AppFactory, first: list[str] | None = None, ready_fd: int | None = None) -> int:
    """
    `needle owner run`: hold the index and serve other commands' requests until idle for `owner.idle_minutes`
    (or SIGTERM, `needle owner stop`, or a `needle serve`, `mcp` or `watch` that takes over). This is what a
    command starts in the background when no owner runs (`needle.owner.thin_client.start_owner`).

    Its routes start staged (`needle.owner.staged.StagedApp`): other commands are answered as soon as the index
    is held and the first graphs are warm; the HTTP API's other routes are built after that.

    :param first: Warm only these graphs before answering (the command that started this owner needs them);
        the other routes are built and the others graphs load once its request is answered (or after
        `FIRST_REQUEST_WAIT` seconds without one). `None` builds and warms everything before answering.
    :param ready_fd: A file descriptor (a pipe the starting command holds) written to and closed once this
        owner answers, so that the command does not poll for it.
    :returns: The exit code.
    :raises IndexOwnedError: When another process already owns the index.
    """
    from needle.core.settings import load_settings
    from needle.owner.routes import ACTIVITY
    from needle.owner.served_facade import warm_first, warm_on_demand

    settings = load_settings()
    if not records.uses_owner(settings):
        print("needle owner: the index is on a Qdrant server, which needs no owner", file=sys.stderr)
        return 2
    records.refuse_second_owner(settings)
    stopped = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    idle = settings.owner.idle_minutes * 60
    ready = [] if ready_fd is None else [ready_fd]
    # The ingest graph is loaded by each index run and let go of after it, the first run included (which
    # may end before the routes that say so are built).
    warm_on_demand(["ingest"])
    if first is not None:
        warm_first(first)
    try:
        server = BackgroundServer(command=records.BACKGROUND, app=app, staged=True, mcp=False)
        record = server.start()
        if first is None:
            server.build_full()
        else:
            from needle.owner.served_facade import get_needle

            for name in first:  # one instance of the command's graph before it is told to come
                get_needle().local("warming the first graphs").pipeline(name)
            threading.Thread(
                target=_complete_after_first_request, args=(server,), name="needle-warm", daemon=True
            ).start()
        _tell_ready(ready)
        print(
            f"needle owner: holding the index (pid {record.pid}) at {record.address}; exits after "
            f"{settings.owner.idle_minutes:g} min without a request",
            file=sys.stderr,
            flush=True,
        )
        if first is not None:
            print(
                f"needle owner: answering with {', '.join(first) or 'no graph'} warm; the other routes and graphs "
                "load once the first request is answered",
                file=sys.stderr,
                flush=True,
            )
        try:
            while not stopped.wait(1.0):
                if ACTIVITY.retire_when_idle and ACTIVITY.close_if_idle():
                    print(
                        "needle owner: exiting, idle now, to make way for other code (a command of another "
                        "Needle version or checkout asked)",
                        file=sys.stderr,
                        flush=True,
                    )
                    break
                if ACTIVITY.idle_seconds() >= idle and ACTIVITY.close_if_idle():
                    print(
                        f"needle owner: no request for {settings.owner.idle_minutes:g} min, exiting",
                        file=sys.stderr,
                        flush=True,
                    )
                    break
        except KeyboardInterrupt:
            pass
        finally:
            server.stop()
    finally:
        _tell_ready(ready, answering=False)  # a start that failed closes it unwritten: the command runs itself
        signal.signal(signal.SIGTERM, previous)
    return 0


def _tell_ready(fds: list[int], answering: bool = True) -> None:
    """
    Tell the starting command once (the list is emptied): a line when this owner answers, then the pipe
    closed; closed without a line when its start failed (the command then runs in its own process and prints
    the same one-line error as it would without an owner).
    """
    while fds:
        fd = fds.pop()
        if answering:
            with contextlib.suppress(OSError):
                os.write(fd, b"ready\n")
        with contextlib.suppress(OSError):
            os.close(fd)


# How long a background owner that warmed only its first command's graph waits for that command's request
# before it builds its other routes and warms the other graphs anyway.
FIRST_REQUEST_WAIT = 30.0


def _complete_after_first_request(server: BackgroundServer) -> None:
    """
    Once the request of the command that started this owner is answered (or a request for another route
    waits), build the routes and warm the graphs put off (the routes first: their wrappers find the graphs
    put off and leave them to this thread).
    """
    from needle.owner.routes import ACTIVITY
    from needle.owner.served_facade import warm_deferred

    deadline = time.monotonic() + FIRST_REQUEST_WAIT
    # A request under way (an index run of many minutes) is waited for past the deadline: what it loads and
    # lets go of (the ingest graph, its model) is given back before the search graphs load, not mixed with them.
    while not ACTIVITY.served and not server.full_wanted() and (time.monotonic() < deadline or ACTIVITY.running):
        time.sleep(0.05)
    if server.build_full():
        print("needle owner: every HTTP route answers", file=sys.stderr, flush=True)
    warmed = warm_deferred()
    print(f"needle owner: warmed every graph in full ({', '.join(warmed) or 'none'})", file=sys.stderr, flush=True)


# How long a `needle mcp` that finds the index locked waits for the owner's routes to answer.
OWNER_WAIT_SECONDS = 60.0

__all__ = ["BackgroundServer", "run_mcp", "run_owner", "run_watch"]
