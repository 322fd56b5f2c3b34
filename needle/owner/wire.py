"""HTTP/1.1 over one loopback socket, as small as a thin client needs it to reach an index owner.

The standard library's `http.client` imports the `email` package and `ssl` on the way: a fifth of what a
command sent to an owner spends before it sends anything. An owner speaks plain HTTP/1.1 on a loopback
address only (`needle.owner.record` refuses any other), so this module sends a request with a body of known length
and reads the answer: its status, its headers, then its body whole or line by line, sized by
`Content-Length` or chunked (a streamed answer), on one kept-alive connection. Every read is bounded: a body
or a line longer than the caller's limit, or one that does not arrive by the caller's deadline (a listener
that trickles bytes forever), is a `WireError` or a `TimeoutError`, never a client that grows without end.
Standard library `socket` only.

Usage example:
```python
connection = Connection("127.0.0.1", 8000, timeout=2.0)
connection.request("GET", "/needle/hello?nonce=00ff")
response = connection.getresponse()
body = response.read()
connection.close()
```
"""

from __future__ import annotations

import io
import socket
import time
from collections.abc import Mapping

# Longest status or header line, and most header lines, an answer may have.
MAX_LINE = 65_536
MAX_HEADERS = 100


class WireError(OSError):
    """The answer is not HTTP/1.x as this client reads it (malformed, oversized, or cut short)."""


class _Socket(io.RawIOBase):
    """
    A socket read with a per-read timeout and, when set, a deadline for everything read until it is cleared.
    """

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self.sock, self.timeout = sock, timeout
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the answer did not arrive in time")
            self.sock.settimeout(min(self.timeout, left))
        return self.sock.recv_into(buffer)


class Response:
    """An answer's status and headers; its body is read with `read` or `readline`."""

    def __init__(self, reader: io.BufferedReader[_Socket], status: int, headers: dict[str, str]) -> None:
        """
        :param reader: The connection's buffered reader, positioned at the body.
        :param status: The status code.
        :param headers: The headers, names in lower case.
        """
        self._reader = reader
        self.status = status
        self.headers = headers
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        if not self._chunked and length is not None and not length.strip().isdigit():
            raise WireError(f"bad Content-Length {length!r}")
        self._left: int | None = None if self._chunked or length is None else int(length)
        self._buffer = b""
        self._ended = False

    def _more(self) -> bytes:
        """The next piece of the body; empty once it ended."""
        if self._ended:
            return b""
        if self._chunked:
            size_line = self._reader.readline(MAX_LINE)
            if not size_line.endswith(b"\n"):
                raise WireError("the answer ended inside a chunk's size line")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise WireError(f"bad chunk size {size_line[:40]!r}") from None
            if size == 0:
                while self._reader.readline(MAX_LINE) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                self._ended = True
                return b""
            data = self._exactly(size)
            self._exactly(2)  # the chunk's CRLF
            return data
        if self._left is None:  # no length: the body runs until the connection closes
            data = self._reader.read1(MAX_LINE)
            self._ended = not data
            return data
        data = self._reader.read1(min(self._left, MAX_LINE)) if self._left else b""
        if self._left and not data:
            raise WireError("the answer ended before its Content-Length")
        self._left -= len(data)
        self._ended = self._left == 0
        return data

    def _exactly(self, size: int) -> bytes:
        data = self._reader.read(size)
        if len(data) != size:
            raise WireError("the answer ended inside a chunk")
        return data

    def readline(self, limit: int = MAX_LINE) -> bytes:
        """
        The body's next line, its newline included; empty at the end of the body.

        :param limit: The longest line accepted, in bytes.
        :raises WireError: When the line is longer.
        """
        parts, size, data = [], 0, self._buffer
        self._buffer = b""
        while b"\n" not in data:
            parts.append(data)
            size += len(data)
            if size > limit:
                raise WireError(f"a line of the answer is longer than {limit} bytes")
            data = self._more()
            if not data:
                return b"".join(parts)
        head, _, self._buffer = data.partition(b"\n")
        if size + len(head) >= limit:
            raise WireError(f"a line of the answer is longer than {limit} bytes")
        parts.append(head + b"\n")
        return b"".join(parts)

    def read(self, limit: int | None = None) -> bytes:
        """
        The rest of the body.

        :param limit: The longest body accepted, in bytes; `None`: any.
        :raises WireError: When the body is longer.
        """
        parts = [self._buffer]
        size = len(self._buffer)
        self._buffer = b""
        while data := self._more():
            parts.append(data)
            size += len(data)
            if limit is not None and size > limit:
                raise WireError(f"the answer is longer than {limit} bytes")
        return b"".join(parts)


class Connection:
    """One kept-alive HTTP/1.1 connection to `host:port`; requests on it reach the same listening process."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        """
        :param host: An IP address (an owner's record names a loopback one).
        :param port: The port.
        :param timeout: Seconds to connect, and then to wait for each read or write.
        :raises OSError: When nothing takes the connection in time.
        """
        self.host, self.port = host, port
        # Straight to the address: `socket.create_connection` resolves it first, and resolving imports the
        # IDNA codec (with `unicodedata` and `stringprep`), a few milliseconds of every command for nothing.
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect((host, port))
        except BaseException:
            sock.close()
            raise
        self.sock: socket.socket | None = sock
        self._raw = _Socket(self.sock, timeout)
        self._reader = io.BufferedReader(self._raw)

    def set_timeout(self, timeout: float) -> None:
        """Seconds each later read (or write) may wait."""
        self._raw.timeout = timeout
        if self.sock is not None:
            self.sock.settimeout(timeout)

    def deadline(self, seconds: float | None) -> None:
        """
        Everything read from now on must arrive within `seconds` (`None`: no deadline, only the per-read timeout).
        """
        self._raw.deadline = None if seconds is None else time.monotonic() + seconds
        if seconds is None and self.sock is not None:
            self.sock.settimeout(self._raw.timeout)

    def request(
        self, method: str, path: str, body: bytes | str = b"", headers: Mapping[str, str] | None = None
    ) -> None:
        """
        Send one request.

        :raises OSError: When the connection is closed or the write times out.
        """
        if self.sock is None:
            raise WireError("the connection is closed")
        data = body.encode() if isinstance(body, str) else body
        host = f"[{self.host}]" if ":" in self.host else self.host
        lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{self.port}", f"Content-Length: {len(data)}"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)

    def getresponse(self) -> Response:
        """
        Read an answer's status line and headers.

        :raises WireError: When they are not HTTP/1.x.
        :raises OSError: When the connection closes or the read times out.
        """
        status_line = self._reader.readline(MAX_LINE)
        if not status_line:
            raise WireError("the connection closed before an answer came")
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise WireError(f"not an HTTP answer: {status_line[:40]!r}")
        headers: dict[str, str] = {}
        for _ in range(MAX_HEADERS):
            line = self._reader.readline(MAX_LINE)
            if line in (b"\r\n", b"\n"):
                return Response(self._reader, int(parts[1]), headers)
            name, colon, value = line.decode("latin-1").partition(":")
            if not colon or not line.endswith(b"\n"):
                raise WireError(f"bad header line {line[:40]!r}")
            headers[name.strip().lower()] = value.strip()
        raise WireError("too many header lines")

    def close(self) -> None:
        """Close the connection."""
        if self.sock is not None:
            self._reader.close()
            self.sock.close()
            self.sock = None


__all__ = ["Connection", "Response", "WireError"]
