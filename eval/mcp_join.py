"""An agent joins the warm owner: how soon `needle mcp` answers its first `query`, and whether the owner stays.

    python -m eval.mcp_join --data-dir /tmp/x --repeat 3

With a background owner running on the data folder (started here with `needle owner start` if none runs),
each repeat spawns `needle mcp` through the MCP SDK's own stdio client, times from spawn to the first
`query` answer, closes the session, and checks that the owner's pid is the same before and after. Prints
each repeat and the median. Set `NEEDLE_MODEL_DIR` as for any command; the owner is stopped at the end
unless `--keep-owner`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from eval.owner_memory import owner_pid

REPO = Path(__file__).resolve().parent.parent


@contextlib.asynccontextmanager
async def needle_mcp(data: Path) -> AsyncIterator[Any]:
    """An initialised session of the MCP SDK's stdio client with a `needle mcp` it spawns on the data folder."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {**os.environ, "NEEDLE_DATA_DIR": str(data)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "needle.shells.cli", "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def first_query(data: Path, query: str) -> float:
    """
    Seconds from spawning `needle mcp` to its first `query` tool answer. The MCP SDK's client is imported
    before the clock starts: an agent has it loaded already, and its import (half a second) is this script's.
    """
    import mcp.client.stdio  # noqa: F401

    started = time.monotonic()
    async with needle_mcp(data) as session:
        result = await session.call_tool("query", {"query": query, "limit": 3})
        took = time.monotonic() - started
        if result.is_error:
            raise RuntimeError(f"the query failed: {result.content}")
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__name__}", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--query", default="renew the TLS certificate with certbot")
    parser.add_argument("--keep-owner", action="store_true")
    args = parser.parse_args(argv)
    env = {**os.environ, "NEEDLE_DATA_DIR": str(args.data_dir)}
    cli = [sys.executable, "-m", "needle.shells.cli"]
    subprocess.run([*cli, "owner", "start"], env=env, check=True, capture_output=True)
    times = []
    try:
        for repeat in range(args.repeat):
            before = owner_pid(args.data_dir)
            took = asyncio.run(first_query(args.data_dir, args.query))
            time.sleep(0.5)
            after = owner_pid(args.data_dir)
            times.append(took)
            print(f"repeat {repeat + 1}: first query {took:.2f} s after spawn; owner before {before}, after {after}")
    finally:
        if not args.keep_owner:
            subprocess.run([*cli, "owner", "stop"], env=env, capture_output=True)
    print(f"median first query after spawn: {statistics.median(times):.2f} s over {len(times)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
