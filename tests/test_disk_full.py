"""A full disk is one line, exit 1, and damages nothing: on a real small tmpfs (skipped where it cannot be mounted).

Writing through the engine's memory maps onto a full tmpfs kills the process with SIGBUS, so the first
command runs in a process of its own: a regression fails the test instead of ending the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from needle.core.collections import CollectionRegistry
from needle.shells.cli import main

REPO = Path(__file__).resolve().parent.parent
NOTES = {
    "garden.md": "# Tomatoes\n\nWater tomatoes deeply twice a week and mulch to keep the soil moist in summer.\n",
    "sourdough.md": "# Sourdough starter\n\nFeed the starter twice a day at room temperature with equal flour and water.\n",
}


def _mounted(folder: Path, size_mb: int) -> bool:
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(folder)], capture_output=True, check=False
    )
    return done.returncode == 0


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 20 MB tmpfs, as the data folder's disk."""
    folder = tmp_path / "disk"
    if os.geteuid() != 0 or not _mounted(folder, 20):
        pytest.skip("mounting a tmpfs needs root and a sandbox that allows it")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def run(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_no_space(code: int, err: str, data: Path) -> None:
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err[-500:]
    assert lines[0].startswith(f"error: no space left on {data} (") and " MB free)" in lines[0]


@pytest.mark.integration
def test_every_command_on_a_full_disk_is_one_line_and_exit_1(small_disk, notes, model_dir, monkeypatch, capsys):
    data = small_disk / "data"
    CollectionRegistry(data / "collections.yml").add(notes, "notes")
    env = {**os.environ, "NEEDLE_DATA_DIR": str(data), "NEEDLE_MODEL_DIR": str(model_dir), "PYTHONPATH": str(REPO)}
    first = subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", "index"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert_no_space(first.returncode, first.stderr, data)
    monkeypatch.setenv("NEEDLE_DATA_DIR", str(data))
    monkeypatch.setenv("NEEDLE_MODEL_DIR", str(model_dir))
    for command in (["status"], ["check"], ["index", "--rebuild"], ["search", "tomatoes"], ["collection", "list"]):
        code, _, err = run(capsys, *command)
        assert_no_space(code, err, data)
    assert not (data / "index").exists()


@pytest.mark.integration
def test_a_disk_that_fills_up_refuses_and_loses_nothing(tmp_path, notes, model_dir, monkeypatch, capsys):
    disk = tmp_path / "disk"
    if os.geteuid() != 0 or not _mounted(disk, 400):
        pytest.skip("mounting a tmpfs needs root and a sandbox that allows it")
    try:
        data = disk / "data"
        monkeypatch.setenv("NEEDLE_DATA_DIR", str(data))
        monkeypatch.setenv("NEEDLE_MODEL_DIR", str(model_dir))
        assert run(capsys, "collection", "add", str(notes), "--name", "notes")[0] == 0
        assert run(capsys, "index")[0] == 0
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        filler = disk / "filler"
        with open(filler, "wb") as handle:  # leave 40 MB: less than Needle's margin
            handle.truncate(0)
            block = b"\0" * (1 << 20)
            handle.writelines(block for _ in range(max(0, free // (1 << 20) - 40)))
        for command in (["status"], ["check"], ["index"], ["index", "--rebuild"], ["search", "tomatoes"]):
            code, _, err = run(capsys, *command)
            assert_no_space(code, err, data)
        filler.unlink()
        assert run(capsys, "check")[0] == 0
        code, out, _ = run(capsys, "search", "tomatoes mulch", "--json")
        assert code == 0 and json.loads(out)["results"][0]["path"] == "garden.md"
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_refusal_that_needs_more_than_the_margin_says_what_for(tmp_path):
    from needle.core.disk import MIN_FREE_MB, DiskFullError, ensure_space, free_mb

    free = free_mb(tmp_path)
    with pytest.raises(DiskFullError) as refused:
        ensure_space(tmp_path, free, "to optimise the index (it rewrites its segments)")
    message = str(refused.value)
    assert f"({free} MB free)" in message and "\n" not in message
    assert f"plus {free} MB to optimise the index (it rewrites its segments)" in message
    assert f"needs {MIN_FREE_MB + free} MB here" in message
