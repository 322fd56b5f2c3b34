"""A damaged index: every command says so in one line naming the way out, `needle check` finds the damage a
query would trip on, and `needle index --rebuild` heals it from the notes.

The corruption matrix damages one kind of index file at a time (truncated, emptied, garbled) in a copy of a
small real index, then runs the commands in-process as a shell would. Beyond it: an id tracker the engine
aborts on (the first command runs in a process of its own, so that a regression fails the test instead of
ending the run), a chunk store whose segments and log are gone behind the stat record's back, orphaned
data, and 64 garbled bytes inside the write-ahead log.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from haystack_integrations.document_stores.needle.edge.shards import copy_keeping_holes
from needle.core.file_records import FileRecords
from needle.shells.cli import main

REPO = Path(__file__).resolve().parent.parent

NOTES = {
    "sourdough.md": "# Sourdough starter\n\nFeed the starter twice a day at room temperature with equal flour and water.\n",
    "kubernetes.md": "# Pod restarts\n\nA pod killed with OOMKilled exceeded its memory limit; raise the limit or fix the leak.\n",
    "garden.md": "# Tomatoes\n\nWater tomatoes deeply twice a week and mulch to keep the soil moist in summer.\n",
}

# Each kind of file the index keeps, as a glob under the data folder.
KINDS = {
    "engine_config": "index/edge/edge_config.json",
    "segment_state": "index/edge/segments/*/segment.json",
    "segment_version": "index/edge/segments/*/version.info",
    "id_tracker": "index/edge/segments/*/mutable_id_tracker.mappings",
    "payload": "index/edge/segments/*/payload_storage/page_0.dat",
    "dense_vectors": "index/edge/segments/*/vector_storage-text-dense/vectors/chunk_0.mmap",
    "sparse_vectors": "index/edge/segments/*/vector_storage-text-sparse/store/page_0.dat",
    "file_store_config": "index/edge_files/edge_config.json",
    "provenance": "index/needle_index.json",
}
DAMAGES = ("truncated", "emptied", "garbled")


def damage(path: str, how: str) -> None:
    """Truncate to a few bytes, empty, or overwrite the start with bytes no writer produces."""
    size = os.path.getsize(path)
    if how == "none":
        return
    if how == "truncated":
        os.truncate(path, min(size // 2, 64))
    elif how == "emptied":
        os.truncate(path, 0)
    else:
        with open(path, "r+b") as handle:
            handle.write(b"\xff\x00\xfe" * max(1, min(size, 4096) // 3))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Path:
    """A small real index, built once; each case damages a copy."""
    root = tmp_path_factory.mktemp("damage")
    notes = root / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    data = root / "data"
    env = {"NEEDLE_DATA_DIR": str(data), "NEEDLE_MODEL_DIR": str(model_dir)}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        assert main(["collection", "add", str(notes), "--name", "notes"]) == 0
        assert main(["index"]) == 0
    return data


@pytest.fixture
def damaged_copy(pristine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_dir: Path):
    """A copy of the index with one file damaged; commands run against it, returning (code, stdout, stderr)."""

    def make(kind: str, how: str):
        data = tmp_path / "data"
        shutil.copytree(pristine, data, symlinks=True, copy_function=copy_keeping_holes)
        damage(glob.glob(str(data / KINDS[kind]))[0], how)
        monkeypatch.setenv("NEEDLE_DATA_DIR", str(data))
        monkeypatch.setenv("NEEDLE_MODEL_DIR", str(model_dir))
        return data

    return make


def run(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def one_clear_line(code: int, err: str) -> None:
    """A failure is one line on stderr, no traceback, naming the way out when the index is damaged."""
    if code == 0:
        return
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")


@pytest.mark.integration
@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_command_fails_in_one_line_and_check_finds_what_a_query_trips_on(kind, how, damaged_copy, capsys):
    damaged_copy(kind, how)
    status = run(capsys, "status")
    search = run(capsys, "vsearch", "feeding a sourdough starter")
    keyword = run(capsys, "search", "tomatoes mulch")
    check_code, check_out, check_err = run(capsys, "check")
    for code, _, err in (status, search, keyword):
        one_clear_line(code, err)
        if code != 0 and "damaged" in err:
            assert "needle index --rebuild" in err
    if any(code != 0 for code, _, _ in (status, search, keyword)):
        assert check_code == 1, f"check passed an index on which a command failed: {search[2] or status[2]}"
        assert "damaged" in check_out and "needle index --rebuild" in check_out
    assert check_err == "" or check_code != 0


@pytest.mark.integration
@pytest.mark.parametrize(
    ("kind", "how"),
    [
        ("segment_state", "garbled"),
        ("dense_vectors", "emptied"),
        ("payload", "emptied"),
        ("provenance", "garbled"),
        ("file_store_config", "truncated"),
    ],
)
def test_rebuild_heals_any_damage_and_moves_a_store_it_cannot_open_aside(kind, how, damaged_copy, capsys):
    data = damaged_copy(kind, how)
    assert run(capsys, "check")[0] == 1
    code, out, err = run(capsys, "index", "--rebuild", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["files_new"] == len(NOTES) and report["chunks_embedded"] >= len(NOTES)
    for moved in report.get("set_aside", []):
        assert Path(moved).is_dir() and ".damaged-" in moved
    assert run(capsys, "check")[0] == 0
    code, out, _ = run(capsys, "vsearch", "feeding a sourdough starter", "--json")
    assert code == 0 and json.loads(out)["results"][0]["path"] == "sourdough.md"
    assert not list((data / "index").glob("*.damaged-*")) or kind in ("segment_state", "file_store_config")


@pytest.mark.integration
def test_check_passes_a_sound_index(pristine, monkeypatch, capsys, model_dir):
    monkeypatch.setenv("NEEDLE_DATA_DIR", str(pristine))
    monkeypatch.setenv("NEEDLE_MODEL_DIR", str(model_dir))
    code, out, _ = run(capsys, "check", "--json")
    report = json.loads(out)
    assert code == 0 and report["problems"] == []
    assert report["stores"]["chunks"]["points"] == report["stores"]["chunks"]["counted"] >= len(NOTES)
    assert report["stores"]["files"]["points"] == len(NOTES)


def run_in_child(data: Path, model_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """A command in a process of its own: a crash of the engine there cannot end the test run."""
    env = {**os.environ, "NEEDLE_DATA_DIR": str(data), "NEEDLE_MODEL_DIR": str(model_dir), "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def wild_id_tracker(data: Path) -> None:
    """Flip the internal id of the first point of a chunk segment's id tracker: the engine aborts opening it."""
    mappings = glob.glob(str(data / KINDS["id_tracker"]))[0]
    raw = bytearray(Path(mappings).read_bytes())
    for i in range(17, 21):  # change byte, 16-byte UUID, then the u32 internal id
        raw[i] ^= 0xFF
    Path(mappings).write_bytes(bytes(raw))


@pytest.mark.integration
def test_damage_the_engine_aborts_on_is_one_line_and_rebuild_heals_it(damaged_copy, capsys, model_dir):
    data = damaged_copy("provenance", "none")
    wild_id_tracker(data)
    status = run_in_child(data, model_dir, "status")
    assert status.returncode == 1, f"exit {status.returncode}: {status.stderr[-300:]}"
    one_clear_line(status.returncode, status.stderr)
    assert "SIGABRT" in status.stderr and "needle index --rebuild" in status.stderr
    for command in (["check"], ["search", "tomatoes mulch"], ["index"]):
        code, out, err = run(capsys, *command)
        assert code == 1, command
        one_clear_line(code, err or "error: " + out.splitlines()[-1])
        assert "needle index --rebuild" in out + err
    code, out, err = run(capsys, "index", "--rebuild", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["files_new"] == len(NOTES) and Path(report["set_aside"][0]).name.startswith("edge.damaged-")
    assert run(capsys, "check")[0] == 0
    code, out, _ = run(capsys, "search", "tomatoes mulch", "--json")
    assert code == 0 and json.loads(out)["results"][0]["path"] == "garden.md"


def lose_the_chunk_store(data: Path) -> None:
    """Delete the chunk store's segments and write-ahead log behind the stat record's back."""
    edge = data / "index" / "edge"
    shutil.rmtree(edge / "wal")
    for segment in (edge / "segments").iterdir():
        shutil.rmtree(segment)


@pytest.mark.integration
def test_check_finds_chunks_lost_behind_the_records_back_and_the_next_index_reads_them_again(damaged_copy, capsys):
    data = damaged_copy("provenance", "none")
    lose_the_chunk_store(data)
    code, out, _ = run(capsys, "check", "--json")
    report = json.loads(out)
    assert code == 1 and report["lost"] == sorted(f"notes:{name}" for name in NOTES)
    assert not report["damaged"]
    code, out, _ = run(capsys, "index", "--json")
    assert code == 0 and json.loads(out)["chunks_embedded"] >= len(NOTES)
    assert run(capsys, "check")[0] == 0
    code, out, _ = run(capsys, "search", "tomatoes mulch", "--json")
    assert code == 0 and json.loads(out)["results"][0]["path"] == "garden.md"


@pytest.mark.integration
def test_check_repair_heals_lost_and_orphaned_data_without_a_rebuild(damaged_copy, capsys):
    data = damaged_copy("provenance", "none")
    lose_the_chunk_store(data)
    notes = Path(json.loads(run(capsys, "status", "--json")[1])["collections"][0]["root"])
    gone = notes / "kubernetes.md"
    moved = gone.read_text(encoding="utf-8")
    gone.unlink()  # its chunks would stay, and its row is dropped as a lost record would be
    FileRecords(data / "index" / "files.sqlite").forget([("notes", "kubernetes.md")])
    try:
        code, out, _ = run(capsys, "check", "--repair", "--json")
        report = json.loads(out)
        assert code == 0, report["problems"]
        assert report["repaired"]["reindexed"] == len(NOTES) - 1
        assert report["repaired"]["orphans_deleted"] >= 1
        code, out, _ = run(capsys, "ls", "--json")
        assert sorted(row["path"] for row in json.loads(out)) == ["garden.md", "sourdough.md"]
    finally:
        gone.write_text(moved, encoding="utf-8")


@pytest.mark.integration
def test_check_finds_garbled_bytes_inside_the_write_ahead_log_and_rebuild_heals_them(damaged_copy, capsys):
    data = damaged_copy("provenance", "none")
    segment = data / "index" / "edge" / "wal" / "open-1"
    raw = bytearray(segment.read_bytes())
    length = int.from_bytes(raw[8:16], "little")
    second = 8 + 8 + length + ((4 - length) & 7) + 4
    for i in range(second + 16, second + 80):  # 64 flipped bytes
        raw[i] ^= 0xFF
    segment.write_bytes(bytes(raw))
    code, out, _ = run(capsys, "check")
    assert code == 1 and "write-ahead log" in out and "needle index --rebuild" in out
    assert run(capsys, "index", "--rebuild")[0] == 0
    assert run(capsys, "check")[0] == 0


def overwrite_with_nan(path: Path) -> None:
    """Overwrite a whole file with the bytes of float32 NaNs: read back, every vector in it is NaN."""
    size = os.path.getsize(path)
    with open(path, "r+b") as handle:
        handle.write(b"\x00\x00\xc0\x7f" * (size // 4))


@pytest.mark.integration
def test_check_finds_a_dense_vector_file_overwritten_with_nan_and_index_embeds_its_files_again(damaged_copy, capsys):
    data = damaged_copy("provenance", "none")
    overwrite_with_nan(Path(glob.glob(str(data / KINDS["dense_vectors"]))[0]))
    code, out, _ = run(capsys, "check", "--json")
    report = json.loads(out)
    assert code == 1 and not report["damaged"], report
    assert any("NaN, infinite or zero dense vector" in problem for problem in report["problems"]), report
    assert report["stores"]["chunks"]["spoiled_dense"] >= len(NOTES)
    assert report["lost"] == sorted(f"notes:{name}" for name in NOTES)
    code, out, _ = run(capsys, "index", "--json")
    assert code == 0 and json.loads(out)["chunks_embedded"] >= len(NOTES)
    assert run(capsys, "check")[0] == 0
    code, out, _ = run(capsys, "vsearch", "tomatoes mulch", "--json")
    assert code == 0 and json.loads(out)["results"][0]["path"] == "garden.md"


@pytest.mark.integration
def test_check_finds_an_index_whose_provenance_was_deleted(damaged_copy, capsys):
    data = damaged_copy("provenance", "none")
    (data / "index" / "needle_index.json").unlink()
    code, out, _ = run(capsys, "check", "--json")
    report = json.loads(out)
    assert code == 1 and report["damaged"]
    assert any("needle_index.json" in p and "needle index --rebuild" in p for p in report["problems"]), report
