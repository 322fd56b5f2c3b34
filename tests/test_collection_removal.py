"""Removing a collection changes the index and the collection list together, or neither; an index run drops the
chunks of collections no longer listed, and `status` names them until it does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from needle.shells.cli import main

pytestmark = pytest.mark.integration

HOLD_THE_INDEX = """
import sys
from needle.facade.api import Needle
needle = Needle()
needle.store.count_documents()
print("holding", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def two_collections(tmp_path: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch):
    """Two small indexed collections; commands run in-process as a shell would, returning (code, out, err)."""
    monkeypatch.setenv("NEEDLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("NEEDLE_MODEL_DIR", str(model_dir))
    for name, text in (
        ("work", "Deploy the billing service with the blue-green runbook."),
        ("home", "Repot the fiddle leaf fig in spring with fresh soil."),
    ):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{name}.md").write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
        assert main(["collection", "add", str(folder), "--name", name]) == 0
    assert main(["index"]) == 0
    return tmp_path / "data"


def run(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def status(capsys: pytest.CaptureFixture) -> dict:
    code, out, err = run(capsys, "status", "--json")
    assert code == 0, err
    return json.loads(out)


def unlist(data: Path, name: str) -> None:
    """Take a collection off the list by hand (as an older Needle did before failing to delete its chunks)."""
    path = data / "collections.yml"
    listed = yaml.safe_load(path.read_text())
    listed["collections"] = [c for c in listed["collections"] if c["name"] != name]
    path.write_text(yaml.safe_dump(listed))


def test_remove_while_another_process_holds_the_index_changes_nothing(two_collections, capsys):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_INDEX],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        code, _, err = run(capsys, "collection", "remove", "home")
        assert code == 1 and "already open" in err and len(err.strip().splitlines()) == 1
    finally:
        holder.communicate("", timeout=60)
    listed = yaml.safe_load((two_collections / "collections.yml").read_text())
    assert "home" in str(listed)
    assert {c["name"]: c["chunks"] for c in status(capsys)["collections"]}["home"] > 0

    code, out, _ = run(capsys, "collection", "remove", "home")
    assert code == 0 and "removed collection 'home'" in out
    after = status(capsys)
    assert [c["name"] for c in after["collections"]] == ["work"] and after["orphaned"] == {}
    code, out, _ = run(capsys, "search", "fiddle leaf fig", "--json")
    assert code == 0 and json.loads(out)["results"] == []


def test_index_drops_chunks_of_collections_no_longer_listed_and_status_names_them(two_collections, capsys):
    unlist(two_collections, "home")

    before = status(capsys)
    assert before["orphaned"].get("home", 0) > 0
    _, text, _ = run(capsys, "status")
    assert "home" in text and "no longer listed" in text

    code, out, _ = run(capsys, "index", "--json")
    assert code == 0 and json.loads(out)["chunks_deleted"] >= before["orphaned"]["home"]
    assert status(capsys)["orphaned"] == {}
    code, out, _ = run(capsys, "search", "fiddle leaf fig", "--json")
    assert json.loads(out)["results"] == []


def test_remove_drops_the_chunks_of_a_collection_only_the_index_remembers(two_collections, capsys):
    unlist(two_collections, "home")
    code, out, _ = run(capsys, "collection", "remove", "home")
    assert code == 0 and "removed collection 'home'" in out
    assert status(capsys)["orphaned"] == {}
    code, _, err = run(capsys, "collection", "remove", "home")
    assert code == 2 and "no collection named 'home'" in err
