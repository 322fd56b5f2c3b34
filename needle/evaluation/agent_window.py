"""One agent window for benchmarks and tests: a `needle mcp` driven by the MCP SDK's own stdio client.

`python -m eval.client` times a handover between two of them and `tests/test_handover.py` checks it; both drive the
server the same way, so they share this class.

Usage example:
```python
window = AgentWindow(StdioServerParameters(command=sys.executable, args=["-m", "needle.shells.cli", "mcp"]))
result = await window.search({"query": "certbot renew", "limit": 2})  # the SDK's CallToolResult
await window.close()
```
"""

from __future__ import annotations

import asyncio
from typing import Any


class AgentWindow:
    """A `needle mcp` on a task of its own, answering `search` calls one at a time (call from a running loop)."""

    def __init__(self, params: Any, timeout: float = 600) -> None:
        """
        :param params: The server's `mcp.StdioServerParameters`.
        :param timeout: Seconds a call may wait for its answer.
        """
        self.params = params
        self.timeout = timeout
        self.calls: asyncio.Queue = asyncio.Queue()
        self.results: asyncio.Queue = asyncio.Queue()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client

        async with stdio_client(self.params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            while (arguments := await self.calls.get()) is not None:
                await self.results.put(await session.call_tool("search", arguments))

    async def search(self, arguments: dict[str, Any]) -> Any:
        """
        The `search` tool's result for `arguments`.

        :raises RuntimeError: When the server ended, or did not answer within `timeout` seconds.
        """
        await self.calls.put(arguments)
        getter = asyncio.ensure_future(self.results.get())
        done, _ = await asyncio.wait({getter, self.task}, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED)
        if getter not in done:
            getter.cancel()
            raise RuntimeError(
                f"the agent's needle mcp ended: {self.task.exception() if self.task.done() else 'timeout'}"
            )
        return getter.result()

    async def close(self) -> None:
        """Close the window: the client ends the session and the server exits."""
        await self.calls.put(None)
        await self.task


__all__ = ["AgentWindow"]
