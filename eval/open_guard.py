"""What the guards on opening the embedded index cost: the clean-close seal, the child-process probe, free space.

    python -m eval.open_guard DATA_DIR            # an index built by `needle index` (it is copied, not changed)
    python -m eval.open_guard DATA_DIR --repeat 7

On a copy of the chunk store of DATA_DIR, each is timed `--repeat` times and the median printed:

- `open, sealed`: opening a store closed cleanly (stat walk of its folder against the seal, no probe);
- `open, probed`: opening a store whose seal is missing (a process died with it open): the probe in a child
  process, then the open;
- `probe alone`, `probe, read all` (what `needle check` adds), `seal check alone` and `free-space check alone`.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from eval.corpus_index import scratch, settings_for
from eval.stopwatch import median_seconds
from haystack_integrations.document_stores.needle.edge.document_store import EdgeDocumentStore
from haystack_integrations.document_stores.needle.edge.probe import probe
from haystack_integrations.document_stores.needle.edge.seal import SEAL_FILE_NAME, seal, unseal
from haystack_integrations.document_stores.needle.edge.shards import LOCK_FILE_NAME
from needle.core.disk import ensure_space
from needle.core.model_files import embedding_dim

SKIP = frozenset({LOCK_FILE_NAME})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.open_guard", description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    settings = settings_for(args.data_dir)
    params = settings.index.model_dump()
    with scratch("needle-open-guard-") as tmp:
        folder = tmp / "edge"
        shutil.copytree(settings.index_dir / "edge", folder, ignore=shutil.ignore_patterns(LOCK_FILE_NAME))
        files = sum(1 for path in folder.rglob("*") if path.is_file())

        def open_store(sealed: bool) -> None:
            if not sealed:
                (folder / SEAL_FILE_NAME).unlink(missing_ok=True)
            store = EdgeDocumentStore(path=str(folder), embedding_dim=embedding_dim(settings.embedding.model), **params)
            store.count_documents()
            store.close()

        open_store(sealed=False)  # leaves the folder sealed
        rows = {
            "open, sealed": median_seconds(lambda: open_store(True), args.repeat),
            "open, probed": median_seconds(lambda: open_store(False), args.repeat),
            "probe alone": median_seconds(lambda: probe(str(folder)), args.repeat),
            "probe, read all": median_seconds(lambda: probe(str(folder), read_all=True), args.repeat),
            "seal check alone": median_seconds(
                lambda: (seal(str(folder), SKIP), unseal(str(folder), SKIP)), args.repeat
            ),
            "free-space check alone": median_seconds(lambda: ensure_space(folder), args.repeat),
        }
    print(f"chunk store of {args.data_dir}: {files} files; median of {args.repeat} runs")
    print("| step | seconds |\n|---|---|")
    for name, seconds in rows.items():
        print(f"| {name} | {seconds:.4f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
