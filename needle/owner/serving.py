"""`needle serve` as a process: for people at a terminal and for scripts.

- Its port is bound before anything loads: a busy port is one line naming `--port`, at once.
- It prints one line, `needle serve: ready at URL`, when it accepts requests; its log (uvicorn's, hayhooks',
  Needle's) goes to `DATA_DIR/serve.log` unless `-v` asks for it on the terminal.
- `--background` starts it detached and returns once it answers (the ready line, with its pid), or with the
  one-line error it failed with: a script's `curl` on the next line then works.

Usage example:
```python
sock = bind("127.0.0.1", 1416)                 # PortBusyError when taken
with logged_to(data_dir / SERVE_LOG) as log:   # None: the terminal
    run_uvicorn(app, sock, "http://127.0.0.1:1416", log)
```
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SERVE_LOG = "serve.log"
# How long `needle serve --background` waits for the server it started to answer.
BACKGROUND_WAIT = 600.0


class PortBusyError(ConnectionError):
    """The address `needle serve` was asked to listen on is taken or cannot be used."""


class ServeFailedError(RuntimeError):
    """The server stopped before it accepted requests (its log says why)."""


def bind(host: str, port: int) -> socket.socket:
    """
    A socket bound to `host:port` (not yet listening: uvicorn listens once the routes are loaded).

    :raises PortBusyError: When the port is taken, or the address cannot be bound.
    """
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as error:
        raise PortBusyError(f"cannot listen on {host}:{port} ({error}): choose another address with --host") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise PortBusyError(
                f"port {port} on {host} is in use (another needle serve, or another program): choose another "
                f"with `needle serve --port {port + 1 if port < 65535 else 8000}`, or stop what uses it"
            ) from None
        raise PortBusyError(
            f"cannot listen on {host}:{port} ({error.strerror}): choose another port with --port or address with --host"
        ) from None
    return sock


@contextlib.contextmanager
def logged_to(log: Path | None) -> Iterator[Path | None]:
    """
    Send this process's standard error (every log line, whoever writes it) to `log` from now on; when the
    block fails, the terminal's is back for the one-line error. `None`: leave it on the terminal.
    """
    if log is None:
        yield None
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield log
    except BaseException as error:
        if not isinstance(error, KeyboardInterrupt):  # Ctrl-C is the normal end: its last lines stay in the log
            sys.stderr.flush()
            os.dup2(saved, 2)
        raise
    finally:
        os.close(saved)


def last_error(log: Path | None, offset: int = 0) -> str:
    """The last error line written to `log` after `offset` (one line, control characters escaped), or where to look."""
    if log is None:
        return "see the messages above"
    from needle.owner.thin_client import one_line

    try:
        with open(log, "rb") as handle:
            handle.seek(offset)
            lines = handle.read(4 << 20).decode("utf-8", "replace").splitlines()
    except OSError:
        lines = []
    found = [line for line in lines if line.startswith("error: ") or "| ERROR" in line or " ERROR " in line]
    if not found:
        return f"see {log}"
    line = found[-1]
    line = line.removeprefix("error: ").split("| ERROR", 1)[-1].strip(" |")
    return f"{one_line(line)} (log: {log})"


def run_uvicorn(app: Any, sock: socket.socket, url: str, log: Path | None, ready_fd: int | None = None) -> None:
    """
    Serve `app` on the bound socket until interrupted; print the ready line once it accepts requests.

    :param ready_fd: A pipe's write end (`--background`'s parent holds the other): the ready line goes there too.
    :raises ServeFailedError: When it stopped before accepting requests.
    """
    import uvicorn
    from hayhooks.server.logger import intercept_stdlib_logging
    from hayhooks.settings import settings

    intercept_stdlib_logging(
        settings.intercepted_loggers, access_log_excluded_path_prefixes=settings.access_log_excluded_path_prefixes
    )
    line = f"needle serve: ready at {url}"

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                print(line, flush=True)
                tell(ready_fd, f"{line} (pid {os.getpid()})")

    server = Server(uvicorn.Config(app, log_config=None, timeout_graceful_shutdown=settings.graceful_shutdown_timeout))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        tell(ready_fd, None)
    if not server.started:
        raise ServeFailedError(f"needle serve stopped before it accepted requests: {last_error(log)}")


def tell(fd: int | None, line: str | None) -> None:
    """Write the ready line to `--background`'s pipe (once) and close it; `None` closes it unwritten."""
    if fd is None:
        return
    with contextlib.suppress(OSError):
        if line is not None:
            os.write(fd, line.encode() + b"\n")
        os.close(fd)


def start_in_background(argv: list[str], log: Path) -> int:
    """
    `needle serve --background`: start `needle serve ARGV` detached, its output in `log`, and return once it
    answers (its ready line, with its pid, on standard output) or failed (its one-line error, exit 1).

    :returns: The exit code.
    """
    import select
    import subprocess
    import time

    log.parent.mkdir(parents=True, exist_ok=True)
    offset = log.stat().st_size if log.exists() else 0
    read_end, write_end = os.pipe()
    try:
        with open(log, "ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "needle.shells.cli", "serve", *argv, f"--ready-fd={write_end}"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                close_fds=True,
                pass_fds=(write_end,),
            )
    finally:
        os.close(write_end)
    answer = b""
    deadline = time.monotonic() + BACKGROUND_WAIT
    try:
        while time.monotonic() < deadline:
            if select.select([read_end], [], [], 1.0)[0]:
                data = os.read(read_end, 4096)
                if not data:
                    break
                answer += data
                if answer.endswith(b"\n"):
                    break
            elif process.poll() is not None:
                break
    finally:
        os.close(read_end)
    if answer.endswith(b"\n"):
        print(f"{answer.decode().strip()}; log {log}; `kill {process.pid}` stops it", flush=True)
        return 0
    with contextlib.suppress(Exception):
        process.wait(30)
    if process.poll() is None:
        print(
            f"error: needle serve (pid {process.pid}) did not answer within {BACKGROUND_WAIT:g} s; see {log}",
            file=sys.stderr,
        )
        return 1
    print(f"error: {last_error(log, offset)}", file=sys.stderr)
    return 1


__all__ = [
    "SERVE_LOG",
    "PortBusyError",
    "ServeFailedError",
    "bind",
    "last_error",
    "logged_to",
    "run_uvicorn",
    "start_in_background",
    "tell",
]
