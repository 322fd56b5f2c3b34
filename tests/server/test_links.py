"""A note's links over HTTP (`POST /links/run`, the backlink count of `/get/run`) and MCP (the `links` tool)."""

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.server.conftest import clean_env, start_server, stop, wait_ready

pytestmark = pytest.mark.integration

NOTES = {
    "Recipes/Snert.md": "---\naliases: Dutch pea soup\n---\n# Snert\n\nSplit peas, a hock, celeriac. ^soak\n",
    "Home.md": "# Home\n\nWinter: [[Snert]].\n\nSoak first: [[Snert#^soak|soak]]; see [[Pancakes]].\n",
    "Daily/2026-09-28.md": "# Monday\n\nCooked [[Dutch pea soup]] for eight.\n",
}


@pytest.fixture(scope="module")
def linked_server(tmp_path_factory: pytest.TempPathFactory, model_dir: Path):
    base = tmp_path_factory.mktemp("links")
    for rel, text in NOTES.items():
        (base / "vault" / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / "vault" / rel).write_text(text)
    env = clean_env(base / "data", model_dir)
    for args in (["collection", "add", str(base / "vault"), "--name", "vault"], ["index"]):
        subprocess.run([sys.executable, "-m", "needle.shells.cli", *args], env=env, check=True, timeout=600)
    server = start_server(base / "data", model_dir, base / "server.log")
    try:
        wait_ready(server)
        yield server
    finally:
        stop(server)


def test_links_and_backlinks_over_http(linked_server) -> None:
    with linked_server.client() as http:
        report = http.post("/links/run", json={"ref": "Dutch pea soup"}).json()["result"]
        text = http.post("/get/run", json={"ref": "vault/Recipes/Snert.md"}).json()["result"]
        home = http.post("/links/run", json={"ref": "vault/Home.md"}).json()["result"]
        missing = http.post("/links/run", json={"ref": "Tokyo trip"})
    assert (report["collection"], report["path"]) == ("vault", "Recipes/Snert.md")
    assert [(b["source"], b["line"], b["raw"]) for b in report["backlinks"]] == [
        ("Daily/2026-09-28.md", 3, "[[Dutch pea soup]]"),
        ("Home.md", 3, "[[Snert]]"),
        ("Home.md", 5, "[[Snert#^soak|soak]]"),
    ]
    assert text["backlinks"] == 3
    assert [(o["line"], o["target"], o["block"]) for o in home["outgoing"]] == [
        (3, "Recipes/Snert.md", None),
        (5, "Recipes/Snert.md", "soak"),
        (5, None, None),
    ]
    assert missing.status_code == 404 and "no indexed note 'Tokyo trip'" in missing.text


def test_related_notes_over_http(linked_server) -> None:
    with linked_server.client() as http:
        report = http.post("/related/run", json={"ref": "vault/Recipes/Snert.md", "limit": 5}).json()["result"]
    reasons = {note["path"]: note["reasons"] for note in report["related"]}
    assert reasons["Home.md"][0] == "links here" and reasons["Daily/2026-09-28.md"][0] == "links here"
    assert all("similar" in r for r in reasons.values())


def test_the_links_tool_over_mcp_with_related_notes(linked_server) -> None:
    async def go():
        async with Client(f"{linked_server.url}/mcp") as client:
            return await client.call_tool("links", {"ref": "Snert", "related": 2})

    call = anyio.run(go)
    assert not call.is_error, call.content[0].text
    report = json.loads(call.content[0].text)
    assert len(report["backlinks"]) == 3 and not report.get("outgoing")
    assert len(report["related"]) == 2 and all("links here" in note["reasons"] for note in report["related"])
