"""Documents over the shells: a folder with a PDF and a DOCX, added with `--documents` and indexed by the CLI,
searched and read back by page and section over HTTP and MCP."""

import subprocess
import sys

import pytest
from mcp import Client

from needle.evaluation import sample_documents as make
from tests.server.conftest import clean_env, start_server, stop, wait_ready
from tests.server.test_mcp import result_of, run

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory, model_dir):
    base = tmp_path_factory.mktemp("docs-server")
    folder = base / "papers"
    make.write(
        folder / "raft.pdf",
        make.pdf_bytes(
            [
                "# Raft consensus\n\nA cluster of five servers tolerates two failures.",
                "## Leader election\n\nA follower that hears no heartbeat within the election timeout becomes a candidate.",
            ],
            title="Raft consensus",
        ),
    )
    make.write(
        folder / "deploy.docx",
        make.docx_bytes(
            "# Deploy spec\n\nHow the billing service ships.\n\n## Canary rollout\n\nFive percent of the traffic goes "
            "to the canary for one hour."
        ),
    )
    make.write(folder / "scan.pdf", make.scanned_pdf_bytes())
    data = base / "data"
    env = clean_env(data, model_dir)
    added = subprocess.run(
        [
            sys.executable,
            "-m",
            "needle.shells.cli",
            "collection",
            "add",
            str(folder),
            "--name",
            "papers",
            "--documents",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert added.returncode == 0 and "**/*.pdf, **/*.docx, **/*.html" in added.stdout, added.stderr
    indexed = subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", "index"], env=env, capture_output=True, text=True, timeout=600
    )
    assert indexed.returncode == 0, indexed.stderr
    assert "skipped papers/scan.pdf: no text layer" in indexed.stdout
    server = start_server(data, model_dir, base / "server.log")
    try:
        wait_ready(server)
        yield server
    finally:
        stop(server)


def test_http_search_and_get_by_page_and_section(docs_server):
    with docs_server.client() as http:
        answer = http.post("/query/run", json={"query": "follower heartbeat election timeout", "limit": 2}).json()
        top = answer["result"]["results"][0]
        assert (top["path"], top["format"], top["page"]) == ("raft.pdf", "pdf", 2)
        assert top["snippet"].startswith("@@ page 2 -1,") and top["anchor"].startswith("papers/raft.pdf#page=2:1:")
        chunk = http.post("/get/run", json={"ref": top["anchor"]}).json()["result"]
        assert chunk["text"] == top["text"] and chunk["page_from"] == 2
        page = http.post("/get/run", json={"ref": "papers/raft.pdf#page=2"}).json()["result"]
        assert page["text"].startswith("Leader election\nA follower") and page["page_from"] == 2
        missing = http.post("/get/run", json={"ref": "papers/raft.pdf#page=9"})
        assert missing.status_code == 400 and "has 2 pages" in missing.text


def test_mcp_search_and_get_by_section(docs_server):
    async def go():
        async with Client(f"{docs_server.url}/mcp") as client:
            hits = result_of(await client.call_tool("search", {"query": "canary traffic rollout", "limit": 1}))
            section = result_of(await client.call_tool("get", {"ref": hits["results"][0]["anchor"]}))
            return hits["results"][0], section

    hit, section = run(go)
    # An MCP hit leaves out the document's own title (its path names the file); `get` of the anchor gives the full place.
    assert (hit["path"], hit["format"], hit["heading_path"]) == ("deploy.docx", "docx", ["Canary rollout"])
    assert section["section"] == "Deploy spec › Canary rollout" and "Five percent" in section["text"]
