"""Needle's HTTP routes served from a thread on a loopback port, for processes whose main job is elsewhere.

`needle mcp` (stdio) and `needle watch` own the embedded index like `needle serve`: other `needle` commands
reach them through the same routes (`needle.http.app.create_app`), on 127.0.0.1 at a port the system picks,
with a token of their own, both named in the owner record.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from needle import owner as records

logger = logging.getLogger(__name__)


class BackgroundServer:
    """
    The routes of `create_app` in a uvicorn server on its own thread; the owner record lives as long as it.

    Usage example:
    ```python
    server = BackgroundServer(command="watch")
    server.start()   # returns once the endpoints are loaded and the owner record is written
    ...
    server.stop()
    ```
    """

    def __init__(self, command: str, watch: bool = False, start_timeout: float = 600.0) -> None:
        """
        :param command: The command that owns the index (`mcp`, `watch`), written into the record.
        :param watch: Keep the index up to date while serving (`needle.watch`).
        :param start_timeout: Seconds the endpoints may take to load.
        :raises ValueError: When `start_timeout` is not positive.
        """
        if start_timeout <= 0:
            raise ValueError(f"start_timeout must be > 0, got {start_timeout}")
        self.command = command
        self.watch = watch
        self.start_timeout = start_timeout
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

        from needle.http.app import create_app
        from needle.http.service import get_needle

        get_needle().store.count_documents()  # take the index first: a locked one fails here, with its holder
        sock = records.loopback_socket()
        port = sock.getsockname()[1]
        self.record = records.new_record(f"http://127.0.0.1:{port}", records.new_token(), self.command)
        app = create_app(host="127.0.0.1", token=self.record.token, owner=self.record, watch=self.watch)
        config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, args=(sock,), name="needle-owner-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.start_timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the routes of needle {self.command} failed to start: {self._failure or 'see the messages above'}")
            time.sleep(0.05)
        return self.record

    def _run(self, sock: Any) -> None:
        try:
            self._server.run(sockets=[sock])
        except BaseException as error:  # noqa: BLE001 - reported by start()
            self._failure = error
        finally:
            sock.close()

    def stop(self) -> None:
        """Stop serving; the owner record is removed as the app shuts down."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)


__all__ = ["BackgroundServer"]
