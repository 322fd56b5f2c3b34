"""ASGI guards in front of every route of `needle serve` (HTTP endpoints, `/mcp`, `/sse`, chat): body size
and the browser's `Origin`.

Starlette and hayhooks have neither: uvicorn reads any body a client sends (a 300 MB body doubled the
server's memory), and CORS middleware only decides which responses a browser may read, after the request
has already run. These guards answer before any route runs, with the `{"detail": ...}` body every other
refusal uses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

Scope = dict[str, Any]


async def refuse(send: Any, status: int, detail: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """Answer a request with `status` and `{"detail": ...}` (plus `headers`) before any route sees it."""
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimitMiddleware:
    """
    Refuses request bodies over `max_bytes` with 413, without reading more than that into memory.

    A declared `Content-Length` over the limit is refused before a byte is read; a chunked body (no length)
    is counted as it arrives, and the request ends with 413 the moment it passes the limit: the route sees
    a disconnected client, and whatever it would still send is dropped.
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        """
        :param app: The ASGI app to protect.
        :param max_bytes: Largest request body accepted, in bytes.
        :raises ValueError: When `max_bytes` is not positive.
        """
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
        self.app = app
        self.max_bytes = max_bytes

    def _message(self) -> str:
        return f"request body too large: the limit is {self.max_bytes} bytes (serve.max_body_bytes)"

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Pass bodies within the limit on; answer larger ones with 413."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                too_large = int(declared) > self.max_bytes
            except ValueError:
                await refuse(send, 400, "Content-Length is not a number")
                return
            if too_large:
                await refuse(send, 413, self._message())
                return
        state = {"received": 0, "refused": False, "started": False}

        async def counted_receive() -> dict[str, Any]:
            if state["refused"]:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                state["received"] += len(message.get("body", b""))
                if state["received"] > self.max_bytes:
                    state["refused"] = True
                    if not state["started"]:
                        state["started"] = True
                        await refuse(send, 413, self._message())
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: dict[str, Any]) -> None:
            if state["refused"]:
                return
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        await self.app(scope, counted_receive, guarded_send)


class OriginMiddleware:
    """
    Refuses requests that a web page on another origin sends (403), on every route, MCP included.

    A request without `Origin` (curl, agents, the CLI) passes. One with `Origin` passes when it is the
    server's own origin (the origin's host and port are the request's `Host`) or is listed in
    `allowed_origins`. The MCP streamable-HTTP transport asks servers to check `Origin` against DNS
    rebinding; CORS alone would still let a foreign page's request run (it only hides the response).
    """

    def __init__(self, app: Any, allowed_origins: Iterable[str] = ()) -> None:
        """
        :param app: The ASGI app to protect.
        :param allowed_origins: Origins also let in, such as `https://notes.example.org` (scheme, host and
            port, no path); `*` lets every origin in.
        """
        self.app = app
        self.allowed_origins = {origin.rstrip("/").lower() for origin in allowed_origins}

    def _allowed(self, origin: str, host: str) -> bool:
        origin = origin.strip().rstrip("/").lower()
        if "*" in self.allowed_origins or origin in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and bool(parts.netloc) and parts.netloc == host.strip().lower()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Pass same-origin, allowed and origin-less requests on; answer the others with 403."""
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            origin = headers.get(b"origin")
            if origin is not None:
                text = origin.decode("latin-1")
                if not self._allowed(text, headers.get(b"host", b"").decode("latin-1")):
                    detail = (
                        f"origin {text[:200]!r} is not allowed: add it to serve.allowed_origins "
                        "(NEEDLE_SERVE__ALLOWED_ORIGINS) to let a web page on it use this server"
                    )
                    await refuse(send, 403, detail)
                    return
        await self.app(scope, receive, send)


__all__ = ["BodyLimitMiddleware", "OriginMiddleware"]
