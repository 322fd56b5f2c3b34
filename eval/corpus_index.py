"""An index of a folder of files, for a benchmark: a `Needle` on its own data folder with one collection.

`needle_on` opens a data folder with the user's models (settings from the environment, `NEEDLE_SET` graph
overrides included); `needle_with_collection` adds a folder to it as a collection, and `index_timed` runs the
ingest graph over it, warmed beforehand (model loading is not ingest time), with the seconds of each stage.
`scratch` is a temporary folder for the files and indexes of one run, removed afterwards. The golden and BEIR
sets have cached indexes of their own (`needle.evaluation.golden.prepare_index`, `needle.evaluation.beir`).
Needle itself is imported on first use, so that a benchmark that only spawns processes stays small (see
`eval.servers`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from needle.core.index_results import IndexReport
from needle.core.requests import IndexRequest

if TYPE_CHECKING:
    from needle.core.settings import Settings
    from needle.facade.api import Needle


def graph_overrides() -> dict[str, str]:
    """`NEEDLE_SET` from the environment (`NEEDLE_SET=chunker.overlap_chars=100`): `load_settings(env=...)` reads no other."""
    return {"NEEDLE_SET": os.environ["NEEDLE_SET"]} if os.environ.get("NEEDLE_SET") else {}


def settings_for(data_dir: Path, **env: str) -> Settings:
    """Settings on the data folder `data_dir`: the models and the rest from the environment, `env` on top."""
    from needle.core.settings import load_settings

    return load_settings(env={**os.environ, **graph_overrides(), "NEEDLE_DATA_DIR": str(data_dir), **env})


def needle_on(data_dir: Path, progress_bar: bool = False, **env: str) -> Needle:
    """A `Needle` on the data folder `data_dir` (see `settings_for`)."""
    from needle.facade.api import Needle

    return Needle(settings_for(data_dir, **env), progress_bar=progress_bar)


def needle_with_collection(
    data_dir: Path,
    root: Path,
    name: str = "notes",
    include: list[str] | None = None,
    language: str | None = None,
    **env: str,
) -> Needle:
    """
    A `Needle` on the data folder `data_dir` with the folder `root` as its collection `name` (not indexed yet).

    :param include: The collection's globs (Needle's default: markdown and text).
    :param language: Its notes' language, or `auto` (the default) to tell it per file.
    :param env: Settings on top of the environment's (`NEEDLE_EMBEDDING__PROVIDER="ollama"`, say).
    """
    needle = needle_on(data_dir, **env)
    needle.collections.add(root, name, include=include, language=language)
    return needle


def index_timed(needle: Needle, collections: list[str] | None = None) -> tuple[IndexReport, float, dict[str, float]]:
    """
    Run the ingest graph, warmed first (its models loaded), timing the run and each stage.

    :returns: The run's report, its wall seconds and the seconds per stage (Haystack's tracing hooks).
    """
    from needle.evaluation.timing import ComponentTimer

    needle.warm("ingest")
    with ComponentTimer.active() as timer:
        started = time.perf_counter()
        report = needle.index(IndexRequest(collections=collections))
        seconds = time.perf_counter() - started
    return report, seconds, timer.seconds


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A temporary folder for a benchmark's files and indexes, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True) as folder:
        yield Path(folder)
