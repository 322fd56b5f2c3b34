"""`StagedApp`: an owner's routes in two stages, so that a background owner answers its first command sooner.

Building the full app (`needle.shells.http.server.create_app`: hayhooks, FastAPI, the MCP transports and twelve
endpoints) takes a second or more, which the command that started a background owner would wait through
although it needs two routes only: the challenge (`GET /needle/hello`) and the CLI (`POST /needle/cli`,
`needle.owner.routes`). A `StagedApp` serves those two at once from a small Starlette app; the full app
is built when `build_full` is called (a background owner does it once its first command is answered), and
from then on it serves every request, those two included. A request for another route that comes before
waits for the full app (and is answered 503 if it failed to build). The owner record is written when the
staged app starts (the index is held by then) and removed when it stops, as the full app does for itself.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

from needle.owner.record import HELLO_PATH, OwnerRecord

logger = logging.getLogger(__name__)

CLI_PATH = "/needle/cli"
EARLY_PATHS = (HELLO_PATH, CLI_PATH)


class StagedApp:
    """
    An ASGI app: the owner routes at once, every route once the full app is built.

    Usage example:
    ```python
    app = StagedApp(record, build=lambda: create_app(host="127.0.0.1", owner=record, own_record=False))
    # serve it with uvicorn; once the first command is answered, on another thread:
    app.build_full()   # returns once the full app's routes answer
    ```
    """

    def __init__(self, owner: OwnerRecord, build: Callable[[], Any]) -> None:
        """
        :param owner: This process's owner record: written at start-up, removed at shutdown; its token opens the CLI.
        :param build: Builds the full ASGI app (its lifespan must not write the record: this app does).
        """
        from starlette.applications import Starlette

        from needle.owner.routes import ActivityMiddleware, owner_routes

        self.owner = owner
        self._build = build
        self._early = ActivityMiddleware(Starlette(routes=owner_routes(owner)))
        self._full: Any = None
        self.failure: BaseException | None = None
        self.ready = threading.Event()  # set once the full app serves, or failed to build
        self.wanted = threading.Event()  # set when a request for another route waits for the full app
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready_async: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        """Serve the owner routes at once, every other route once the full app is built (503 if it failed)."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if self._full is None and scope["type"] == "http" and scope.get("path") in EARLY_PATHS:
            await self._early(scope, receive, send)
            return
        if self._full is None and self._ready_async is not None:
            self.wanted.set()  # whoever builds the full app does it now, not after the first command
            await self._ready_async.wait()
        if self._full is None:
            from needle.owner.asgi_guards import refuse

            await refuse(send, 503, f"this owner's routes failed to start: {self.failure or 'not started'}")
            return
        await self._full(scope, receive, send)

    def build_full(self, timeout: float = 600.0) -> bool:
        """
        Build the full app and start it (its lifespan loads the endpoints); called from a thread other than
        the server's. Meanwhile the owner routes keep answering.

        :param timeout: Seconds to wait for it.
        :returns: Whether the full app serves now (`failure` says why not).
        """
        if self._loop is None or self._task is not None:
            return self.ready.wait(timeout) and self._full is not None
        try:
            app = self._build()
        except Exception as error:
            logger.error("The owner's HTTP routes failed to build: %s", error)
            self.failure = error
            self._set_ready()
            return False
        try:
            self._loop.call_soon_threadsafe(self._start_full, app)
        except RuntimeError:  # the server stopped meanwhile
            return False
        self.ready.wait(timeout)
        return self._full is not None

    def _start_full(self, app: Any) -> None:
        self._task = asyncio.ensure_future(self._serve_full(app))

    async def _serve_full(self, app: Any) -> None:
        """Run the full app's lifespan in one task (its task groups enter and exit there) until shutdown."""
        assert self._stop is not None
        try:
            async with app.router.lifespan_context(app):
                self._full = app
                self._set_ready()
                await self._stop.wait()
        except Exception as error:
            logger.error("The owner's HTTP routes failed to start: %s", error)
            self.failure = error
        finally:
            self._set_ready()

    def _set_ready(self) -> None:
        self.ready.set()
        if self._loop is not None and self._ready_async is not None:
            self._loop.call_soon_threadsafe(self._ready_async.set)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        """Hold the owner record from start-up to shutdown; stop the full app's lifespan at shutdown."""
        from needle.owner.served_facade import owned

        message = await receive()
        assert message["type"] == "lifespan.startup"
        self._loop = asyncio.get_running_loop()
        self._ready_async, self._stop = asyncio.Event(), asyncio.Event()
        holding = owned(self.owner)
        try:
            holding.__enter__()
        except Exception as error:
            await send({"type": "lifespan.startup.failed", "message": str(error)})
            return
        try:
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
            self._stop.set()
            if self._task is not None:
                await self._task
            self._ready_async.set()  # requests still waiting for the full app are answered 503
            await send({"type": "lifespan.shutdown.complete"})
        finally:
            holding.__exit__(None, None, None)


__all__ = ["StagedApp"]
