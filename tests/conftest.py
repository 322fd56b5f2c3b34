"""Shared fixtures: real models (provisioned once), real embedded stores in temporary folders."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import needle.runtime.loader  # noqa: F401 - imported for its effect: Needle's deserialisation allowlist, as in every process
from needle.core.model_files import provision
from needle.core.requests import IndexRequest
from needle.core.settings import Settings, load_settings

# The session's servers: their fixtures (`embedding_server`, `served`, `llm_server`) serve every test module.
pytest_plugins = ("tests.llm_server", "tests.embedding_server")

REPO = Path(__file__).resolve().parent.parent
DEMO_NOTES = REPO / "needle" / "demo" / "notes"
# Commands run in the test's own process (or its subprocesses) unless a test starts an owner itself: a
# background owner per temporary data folder would outlive the test.
AUTOSTART_ENV = "NEEDLE_OWNER__AUTOSTART"
os.environ[AUTOSTART_ENV] = "false"
# Indexes the evaluation builds (`prepare_index`, `needle eval ...` in subprocesses) go to a folder of this run,
# never the user's ~/.cache/needle/eval, which the user's own evaluation may hold open. Set before any test
# module imports needle.evaluation, which reads it once.
EVAL_CACHE = Path(tempfile.mkdtemp(prefix="needle-test-eval-"))
os.environ["NEEDLE_EVAL_CACHE"] = str(EVAL_CACHE)


@pytest.fixture(scope="session", autouse=True)
def _remove_eval_cache() -> Iterator[None]:
    yield
    shutil.rmtree(EVAL_CACHE, ignore_errors=True)


@pytest.fixture(autouse=True)
def own_data_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """
    Every test gets a data folder of its own in the environment: a component left to Needle's settings for its
    cache file or stat record (`FROM_SETTINGS`) writes there, never to the user's, and no test sees another's.
    (Not through `monkeypatch`, which a test's own patches would then outlive.)
    """
    if "NEEDLE_DATA_DIR" in os.environ:
        yield
        return
    os.environ["NEEDLE_DATA_DIR"] = str(tmp_path_factory.mktemp("needle-data"))
    try:
        yield
    finally:
        os.environ.pop("NEEDLE_DATA_DIR", None)


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The provisioned offline models (`make models` already did the work; this is a no-op check)."""
    settings = load_settings()
    provision(settings.model_dir)
    return settings.model_dir


def make_settings(data_dir: Path, model_dir: Path, **env: str) -> Settings:
    """Settings isolated from the user's environment, with data in `data_dir`."""
    return load_settings(env={"NEEDLE_DATA_DIR": str(data_dir), "NEEDLE_MODEL_DIR": str(model_dir), **env})


@pytest.fixture
def settings(tmp_path: Path, model_dir: Path) -> Settings:
    """Fresh settings with an empty data folder per test."""
    return make_settings(tmp_path / "data", model_dir)


@pytest.fixture(scope="session")
def demo_needle(tmp_path_factory: pytest.TempPathFactory, model_dir: Path):
    """A Needle with the bundled demo notes indexed once for the whole session."""
    from needle.facade.api import Needle

    data_dir = tmp_path_factory.mktemp("demo-data")
    needle = Needle(make_settings(data_dir, model_dir))
    needle.collections.add(DEMO_NOTES, "notes")
    needle.first_report = needle.index(IndexRequest())
    return needle


@pytest.fixture
def cli(demo_needle, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    """Run `needle ...` in-process against the demo index; returns (exit code, stdout, stderr)."""
    from needle.shells.cli import main

    monkeypatch.setenv("NEEDLE_DATA_DIR", str(demo_needle.settings.data_dir))
    monkeypatch.setenv("NEEDLE_MODEL_DIR", str(demo_needle.settings.model_dir))

    def run(*args: str) -> tuple[int, str, str]:
        demo_needle.close()  # the command opens the index itself, as a process of its own would
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
