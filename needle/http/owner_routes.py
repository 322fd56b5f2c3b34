"""The routes an index owner serves other `needle` commands: the challenge it proves itself with, and the CLI.

`GET /needle/hello?nonce=N` answers `{"pid", "proof"}`, an HMAC of the nonce and the pid under the owner
record's token (`needle.owner.proof`): it needs no token, gives none away, and only the process that wrote
the record can answer it. `POST /needle/cli` (the record's token only) runs a parsed command as the command
would have run it (`needle.commands.run` on this process's `Needle`) and streams JSON lines: `{"alive": 1}`
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
from collections.abc import AsyncIterator
from typing import Any

from needle.owner import HELLO_PATH, OwnerRecord, proof

CLI_PATH = "/needle/cli"
HEARTBEAT_SECONDS = 1.0
_NONCE = re.compile(r"[0-9a-f]{16,128}")


class Activity:
    """Requests under way, how many ended and when the last one did: how long this owner has been idle."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0
        self.served = 0
        self.last = time.monotonic()

    def idle_seconds(self) -> float:
        """Seconds since the last request ended; 0 while one runs."""
        with self._lock:
            return 0.0 if self.running else time.monotonic() - self.last

    def __enter__(self) -> Activity:
        with self._lock:
            self.running += 1
        return self

    def __exit__(self, *_: Any) -> None:
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
        if scope["type"] != "http" or scope.get("path") == HELLO_PATH:
            await self.app(scope, receive, send)
            return
        with self.activity:
            await self.app(scope, receive, send)


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
            return JSONResponse({"detail": "this route serves only the needle commands of the user who started this process"}, status_code=403)
        try:
            body = await request.json()
            arguments, cwd, tty = body["args"], str(body["cwd"]), bool(body.get("tty"))
            if not isinstance(arguments, dict) or not isinstance(arguments.get("command"), str):
                raise TypeError("args")
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"detail": 'expected {"args": {"command": str, ...}, "cwd": str, "tty": bool}'}, status_code=400)
        return StreamingResponse(_stream(arguments, cwd, tty), media_type="application/x-ndjson")

    return [Route(HELLO_PATH, hello, methods=["GET"]), Route(CLI_PATH, cli, methods=["POST"])]


async def _stream(arguments: dict[str, Any], cwd: str, tty: bool) -> AsyncIterator[bytes]:
    """Run the command on a worker thread; a line a second while it runs, its progress, then its result."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str] = asyncio.Queue()

    def progress(report: dict[str, Any]) -> None:
        from needle.output import index_progress_line

        loop.call_soon_threadsafe(lines.put_nowait, index_progress_line(report))

    task = loop.run_in_executor(None, execute, arguments, cwd, progress if tty else None)
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


def execute(arguments: dict[str, Any], cwd: str, progress: Any = None) -> dict[str, Any]:
    """
    Run a parsed command on this process's `Needle`, as `needle` would have run it in the client's folder.

    :param arguments: The client's parsed arguments (`vars` of its `argparse.Namespace`).
    :param cwd: The client's working folder (relative paths in the command are read from there).
    :param progress: Called with an index run's report after each batch, or `None`.
    :returns: `code`, `stdout` and `stderr`, exactly what the command prints.
    """
    from needle.commands import failed, run
    from needle.http.service import get_needle

    args = argparse.Namespace(**arguments)
    out, err = io.StringIO(), io.StringIO()
    for name in ("pipeline", "path"):  # a graph file, a backup folder: the client's relative paths
        value = getattr(args, name, None)
        if name == "path" and args.command not in ("backup", "restore"):
            continue
        if isinstance(value, str) and not os.path.isabs(value) and (name == "path" or os.path.exists(os.path.join(cwd, value))):
            setattr(args, name, os.path.join(cwd, os.path.expanduser(value)))
    try:
        code = run(args, get_needle(), out=out, progress=progress)
    except BaseException as error:  # noqa: BLE001 - shown to the client as the CLI shows it
        code = failed(args, error, err)
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


__all__ = ["ACTIVITY", "Activity", "ActivityMiddleware", "CLI_PATH", "execute", "owner_routes"]
