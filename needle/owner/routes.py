"""The routes an index owner serves other `needle` commands: the challenge it proves itself with, and the CLI.

`GET /needle/hello?nonce=N` answers `{"pid", "proof"}`, an HMAC of the nonce and the pid under the owner
record's token (`needle.owner.record.proof`): it needs no token, gives none away, and only the process that wrote
the record can answer it. `POST /needle/cli` (the record's token only) runs a parsed command as the command
would have run it (`needle.commands.dispatch.run` on this process's `Needle`) and streams JSON lines: `{"alive": 1}`
every second while it works, `{"progress": LINE}` after each index batch, then
`{"done": {"code", "stdout", "stderr"}}`. `Activity` counts requests, so that a background owner knows
when it has been idle.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import io
import json
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from needle.owner.record import BACKGROUND, HELLO_PATH, OwnerRecord, proof
from needle.runtime.pool import give_back_memory

CLI_PATH = "/needle/cli"
RETIRE_PATH = "/needle/retire"
# What a closed owner (exiting) answers, with 503: the request did not run.
EXITING = "this owner is exiting: send the request to the next one"
HEARTBEAT_SECONDS = 1.0
_NONCE = re.compile(r"[0-9a-f]{16,128}")
_SECONDS = re.compile(r", [0-9]+ s so far")


class Activity:
    """
    Requests under way, how many ended and when the last one did: how long this owner has been idle. A command
    that needs the index to itself (`needle restore`) runs `exclusive`: it waits for the requests under way
    to end, and new ones wait (`admit`) until it is done.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0
        self.served = 0
        self.last = time.monotonic()
        self._exclusive = False
        self._queued = 0  # exclusive commands waiting for their turn (their own requests count as running)
        self.closed = False  # the owner exits: new requests are refused (`close_if_idle`)
        self.retire_when_idle = False  # a client of other code asked it to exit once idle (`/needle/retire`)

    def close_if_idle(self, own: int = 0) -> bool:
        """
        Refuse every new request from now on if none is under way (besides the caller's `own`), atomically:
        an owner that exits this way cuts no request short.

        :returns: Whether it is closed now.
        """
        with self._lock:
            if self.running <= own and not self._exclusive:
                self.closed = True
            return self.closed

    def admit(self) -> bool:
        """Count a new request in, unless an exclusive command runs or waits to (then try again later)."""
        with self._lock:
            if self._exclusive or self.closed:
                return False
            self.running += 1
            return True

    @contextmanager
    def exclusive(self, waiting: Callable[[int], None], poll: float = 0.2) -> Iterator[None]:
        """
        Run the block alone: new requests wait meanwhile, and the block starts once every other request under
        way (not the caller's own, which is counted) has ended.

        :param waiting: Called with the number of other requests still under way, while it waits for them.
        :param poll: Seconds between checks.
        """
        with self._lock:
            self._queued += 1
        try:
            while True:
                with self._lock:
                    if not self._exclusive:
                        self._exclusive = True
                        break
                waiting(-1)  # another exclusive command goes first
                time.sleep(poll)
        finally:
            with self._lock:
                self._queued -= 1
        try:
            while True:
                with self._lock:
                    others = self.running - 1 - self._queued
                if others <= 0:
                    break
                waiting(others)
                time.sleep(poll)
            yield
        finally:
            with self._lock:
                self._exclusive = False

    def idle_seconds(self) -> float:
        """Seconds since the last request ended; 0 while one runs."""
        with self._lock:
            return 0.0 if self.running else time.monotonic() - self.last

    def __enter__(self) -> Activity:
        with self._lock:
            self.running += 1
        return self

    def __exit__(self, *_: Any) -> None:
        self.leave()

    def leave(self) -> None:
        """Count a request out (one `admit` or `with` let in)."""
        with self._lock:
            self.running -= 1
            self.served += 1
            self.last = time.monotonic()


ACTIVITY = Activity()


class ActivityMiddleware:
    """Counts every HTTP request (a streamed one until its last line) in `ACTIVITY`."""

    def __init__(self, app: Any, activity: Activity = ACTIVITY) -> None:
        self.app = app
        self.activity = activity

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        """Pass the request on, counted; wait while an exclusive command runs, answer 503 once the owner exits."""
        if scope["type"] != "http" or scope.get("path") == HELLO_PATH:
            await self.app(scope, receive, send)
            return
        while not self.activity.admit():  # an exclusive command (a restore) runs: wait for it
            if self.activity.closed:
                from needle.owner.asgi_guards import refuse

                await refuse(send, 503, EXITING)
                return
            await asyncio.sleep(0.05)
        try:
            await self.app(scope, receive, send)
        finally:
            self.activity.leave()


def owner_routes(owner: OwnerRecord) -> list[Any]:
    """
    The challenge and CLI routes of the process that `owner` names.

    :param owner: This process's owner record (its token signs the challenge and opens the CLI route).
    :returns: Starlette routes to add to the app.
    """
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    expected = f"Bearer {owner.token}".encode()

    async def hello(request: Request) -> Response:
        nonce = request.query_params.get("nonce", "")
        if not _NONCE.fullmatch(nonce):
            return JSONResponse({"detail": "nonce: 16 to 128 hexadecimal digits"}, status_code=400)
        return JSONResponse({"pid": os.getpid(), "proof": proof(owner.token, nonce, os.getpid())})

    async def cli(request: Request) -> Response:
        provided = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(provided, expected):
            return JSONResponse(
                {"detail": "this route serves only the needle commands of the user who started this process"},
                status_code=403,
            )
        try:
            body = await request.json()
            arguments, cwd, tty = body["args"], str(body["cwd"]), bool(body.get("tty"))
            if not isinstance(arguments, dict) or not isinstance(arguments.get("command"), str):
                raise TypeError("args")
        except (ValueError, KeyError, TypeError):
            return JSONResponse(
                {"detail": 'expected {"args": {"command": str, ...}, "cwd": str, "tty": bool}'}, status_code=400
            )
        return StreamingResponse(_stream(arguments, cwd, tty), media_type="application/x-ndjson")

    async def retire(request: Request) -> Response:
        provided = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(provided, expected):
            return JSONResponse(
                {"detail": "this route serves only the needle commands of the user who started this process"},
                status_code=403,
            )
        if owner.command != BACKGROUND:
            return JSONResponse(
                {"detail": f"needle {owner.command or 'serve'} was started by its user: it exits when they stop it"},
                status_code=409,
            )
        return JSONResponse(retire_answer(ACTIVITY))

    return [
        Route(HELLO_PATH, hello, methods=["GET"]),
        Route(CLI_PATH, cli, methods=["POST"]),
        Route(RETIRE_PATH, retire, methods=["POST"]),
    ]


def retire_answer(activity: Activity) -> dict[str, Any]:
    """
    A background owner asked to make way for other code (`POST /needle/retire`): it closes now when idle (this
    request aside: new requests are refused from now on, and the caller stops the process with SIGTERM, as
    `needle owner stop` does), else it is marked
    to exit once the requests under way end (an index run is not cut short).

    :returns: `{"exiting": true}`, or `{"exiting": false, "busy": LINE}` saying what runs.
    """
    activity.retire_when_idle = True
    if activity.close_if_idle(own=1):
        return {"exiting": True}
    from needle.owner.served_facade import get_needle

    others = max(activity.running - 1, 1)
    busy = f"{others} request{'s' if others > 1 else ''} under way{_run_under_way(get_needle())}"
    return {"exiting": False, "busy": busy}


async def _stream(arguments: dict[str, Any], cwd: str, tty: bool) -> AsyncIterator[bytes]:
    """Run the command on a worker thread; a line a second while it runs, its progress, then its result."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str] = asyncio.Queue()

    def progress(report: Any) -> None:
        from needle.commands.render import index_progress_line

        loop.call_soon_threadsafe(lines.put_nowait, index_progress_line(report))

    def notice(line: str) -> None:
        loop.call_soon_threadsafe(lines.put_nowait, line)

    task = loop.run_in_executor(None, execute, arguments, cwd, progress if tty else None, notice)
    while True:
        getter = asyncio.ensure_future(lines.get())
        waited: set[asyncio.Future[Any]] = {task, getter}
        finished, _ = await asyncio.wait(waited, timeout=HEARTBEAT_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        if getter in finished:
            yield _line({"progress": getter.result()})
            continue
        getter.cancel()
        if task in finished:
            break
        yield _line({"alive": 1})
    while not lines.empty():
        yield _line({"progress": lines.get_nowait()})
    yield _line({"done": task.result()})


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


# Commands that need the index to themselves: they wait for every request under way, new ones wait for them.
EXCLUSIVE = {"restore"}
# Commands that read the whole index: they wait for index runs under way and hold off writes meanwhile.
WRITES_PAUSED = {"migrate"}
# Seconds between two lines saying what a command still waits for (one at once, and when it changes).
NOTICE_SECONDS = 5.0


def execute(
    arguments: dict[str, Any], cwd: str, progress: Any = None, notice: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """
    Run a parsed command on this process's `Needle`, as `needle` would have run it in the client's folder.

    :param arguments: The client's parsed arguments (`vars` of its `argparse.Namespace`).
    :param cwd: The client's working folder (relative paths in the command are read from there).
    :param progress: Called with an index run's report after each batch, or `None`.
    :param notice: Called with a line saying what the command waits for (`EXCLUSIVE`, `WRITES_PAUSED`).
    :returns: `code`, `stdout` and `stderr`, exactly what the command prints.
    """
    from needle.commands.dispatch import failed, run
    from needle.owner.served_facade import get_needle

    args = argparse.Namespace(**arguments)
    out, err = io.StringIO(), io.StringIO()
    for name in ("pipeline", "path"):  # a graph file, a backup folder: the client's relative paths
        value = getattr(args, name, None)
        if name == "path" and args.command not in ("backup", "restore"):
            continue
        if (
            isinstance(value, str)
            and not os.path.isabs(value)
            and (name == "path" or os.path.exists(os.path.join(cwd, value)))
        ):
            setattr(args, name, os.path.join(cwd, os.path.expanduser(value)))
    try:
        with _turn(args.command, notice or (lambda line: None)):
            code = run(args, get_needle(), out=out, progress=progress)
    except BaseException as error:
        code = failed(args, error, err)
    if args.command in GIVES_BACK:
        # An index run that let go of its ingest graph has collected the garbage (`GraphRuntime.release`).
        give_back_memory(collect=args.command != "index")
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


# Commands after which the owner gives the memory its run freed back to the system (`give_back_memory`).
GIVES_BACK = frozenset({"index", "optimize", "migrate", "restore", "check", "collection remove"})


@contextmanager
def _turn(command: str, notice: Callable[[str], None]) -> Iterator[None]:
    """
    Wait for the command's turn, saying what it waits for: a command in `EXCLUSIVE` for the requests under way
    (new ones wait for it) and for index runs, one in `WRITES_PAUSED` for index runs (writes wait for it).
    """
    if command not in EXCLUSIVE | WRITES_PAUSED:
        yield
        return
    from needle.owner.served_facade import get_needle

    needle: Any = get_needle()  # the in-process `Needle`: its index lock and `writes_paused`
    said: dict[str, Any] = {"line": "", "at": 0.0}

    def tell(line: str) -> None:
        what = _SECONDS.sub("", line)  # a new line when what it waits for changes, not its clock
        if what != said["line"] or time.monotonic() - said["at"] >= NOTICE_SECONDS:
            notice(f"needle {command}: {line}")
            said.update(line=what, at=time.monotonic())

    def requests(others: int) -> None:
        if others < 0:
            tell("waiting for another command that needs the index to itself to finish")
        else:
            tell(
                f"waiting for {others} request{'s' if others > 1 else ''} under way in the owner (pid {os.getpid()}) "
                f"to finish{_run_under_way(needle)}; new ones wait for this {command}"
            )

    if command in EXCLUSIVE:
        with ACTIVITY.exclusive(requests), _index_turn(needle, tell):
            yield
    else:
        with _index_turn(needle, tell), needle.writes_paused():
            yield


@contextmanager
def _index_turn(needle: Any, tell: Callable[[str], None]) -> Iterator[None]:
    """Hold the `Needle`'s index lock (index runs, optimising and backups take turns on it), saying what holds it."""
    lock = needle.index_lock
    while not lock.acquire(timeout=0.5):
        tell(
            f"waiting for the index run under way to finish{_run_under_way(needle) or ' (or an optimize, backup or check)'}"
        )
    try:
        yield
    finally:
        lock.release()


def _run_under_way(needle: Any) -> str:
    """`: LINE` for the index run under way in `needle` (`needle.commands.render.index_run_line`), else nothing."""
    run = getattr(needle, "index_run", None)
    if not run:
        return ""
    from needle.commands.render import index_run_line

    return ": " + index_run_line(run)


__all__ = [
    "ACTIVITY",
    "CLI_PATH",
    "EXCLUSIVE",
    "EXITING",
    "RETIRE_PATH",
    "WRITES_PAUSED",
    "Activity",
    "ActivityMiddleware",
    "execute",
    "owner_routes",
    "retire_answer",
]
