"""Every start-up failure is one line naming the fix, exit 1, the same through a background owner as without
one: a missing model or one whose weights changed since it was installed (`needle models`), a data folder that
cannot be used (the path and NEEDLE_DATA_DIR), a busy port (`--port`)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DEMO_NOTES = REPO / "needle" / "demo" / "notes"


def needle(data: Path, *args: str, autostart: bool, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    return subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**clean, "NEEDLE_DATA_DIR": str(data), "NEEDLE_OWNER__AUTOSTART": str(autostart).lower(), **env},
    )


def stop_owner(data: Path) -> None:
    needle(data, "owner", "stop", autostart=False)


@pytest.mark.parametrize("autostart", [True, False])
@pytest.mark.parametrize("folder", ["a-file", "a-file/below"])
@pytest.mark.parametrize("command", [["search", "x"], ["status"], ["collection", "list"], ["serve", "--port", "1"]])
def test_a_data_folder_that_is_no_folder_is_one_line_naming_it(tmp_path, autostart, folder, command):
    (tmp_path / "a-file").write_text("not a folder")
    data = tmp_path / folder
    done = needle(data, *command, autostart=autostart)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: the data folder {data} "), done.stderr
    assert "NEEDLE_DATA_DIR" in done.stderr


@pytest.mark.skipif(os.getuid() == 0, reason="root reads and writes every folder")
def test_a_data_folder_you_cannot_write_names_chmod(tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o500)
    try:
        done = needle(data, "search", "x", autostart=True)
    finally:
        data.chmod(0o700)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and f"chmod u+rwx {data}" in done.stderr


@pytest.mark.integration
@pytest.mark.parametrize("command", [["index"], ["search", "certbot"], ["vsearch", "certbot"], ["query", "certbot"]])
def test_a_missing_model_is_one_line_naming_needle_models_with_and_without_an_owner(tmp_path, command):
    data, models = tmp_path / "data", tmp_path / "no-models"
    models.mkdir()
    added = needle(data, "collection", "add", str(DEMO_NOTES), "--name", "notes", autostart=False)
    assert added.returncode == 0, added.stderr
    seen = []
    try:
        for autostart in (True, False):
            done = needle(data, *command, autostart=autostart, NEEDLE_MODEL_DIR=str(models))
            assert done.returncode == 1 and done.stdout == "", done.stderr
            assert done.stderr.count("\n") == 1 and "run `needle models`" in done.stderr, done.stderr
            seen.append(done.stderr)
    finally:
        stop_owner(data)
    assert seen[0] == seen[1]  # the same through the owner as without it


@pytest.mark.integration
def test_model_weights_changed_since_install_are_one_line_naming_needle_models(tmp_path):
    from needle.core import model_files

    data, models = tmp_path / "data", tmp_path / "models"
    model_files.provision(models)
    onnx = model_files.dense_model_dir(models) / "model.onnx"
    weights = bytearray(onnx.read_bytes())
    weights[len(weights) // 2] ^= 0xFF
    onnx.write_bytes(bytes(weights))
    added = needle(data, "collection", "add", str(DEMO_NOTES), "--name", "notes", autostart=False)
    assert added.returncode == 0, added.stderr
    seen = []
    try:
        for autostart in (True, False):
            done = needle(data, "vsearch", "certbot", autostart=autostart, NEEDLE_MODEL_DIR=str(models))
            assert done.returncode == 1 and done.stdout == "", done.stderr
            assert done.stderr.count("\n") == 1 and "sha256 does not match); run `needle models`" in done.stderr
            seen.append(done.stderr)
    finally:
        stop_owner(data)
    assert seen[0] == seen[1]


def test_a_busy_port_is_one_line_naming_the_port_flag(tmp_path):
    data = tmp_path / "data"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = needle(data, "serve", "--port", str(port), autostart=False)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and f"port {port}" in done.stderr and "--port" in done.stderr, done.stderr
