"""An owner gives back the memory a finished index run freed: glibc keeps freed heap mapped below the last
block still in use, which a process that lives all day would hold; `give_back_memory` returns it."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

FREED_BELOW_A_LIVE_BLOCK = """
from pathlib import Path

def anonymous_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) // 1024

held = [b"x" * 50_000 + bytes([i % 256]) for i in range(6000)]  # about 300 MB on the heap
last = b"y" * 50_000 + b"z"  # allocated last and kept: the heap's top stays in use
del held
before = anonymous_mb()
from needle.runtime.pool import give_back_memory
give_back_memory()
print(before, anonymous_mb())
"""


def test_memory_freed_by_a_run_goes_back_to_the_system():
    done = subprocess.run(
        [sys.executable, "-c", FREED_BELOW_A_LIVE_BLOCK], cwd=REPO, capture_output=True, text=True, check=True
    )
    before, after = map(int, done.stdout.split())
    assert before > 200 and after < before - 200, (before, after)


def test_an_index_run_in_the_owner_gives_its_memory_back():
    from needle.owner.routes import GIVES_BACK

    assert {"index", "optimize", "restore"} <= GIVES_BACK


@pytest.mark.integration
def test_an_index_run_lets_go_of_a_transient_ingest_graph_and_the_model_only_it_held(demo_needle):
    # A background owner loads the ingest graph for an index run and lets it go after: the document model's
    # ONNX session (about 90 MB) goes with it, while the query side's model stays loaded.
    from haystack_integrations.components.embedders.fastembed.embedding_backend.fastembed_backend import (
        _FastembedEmbeddingBackendFactory as Models,
    )
    from needle.core import languages
    from needle.core.requests import IndexRequest, SearchRequest

    demo_needle.search(SearchRequest(query="renew a certificate", limit=1), pipeline="vsearch")
    embedder = demo_needle.pipeline("ingest").get_component("dense_embedder")
    embedder.load()
    document_model = id(embedder.embedder.embedding_backend)
    del embedder
    languages.identify("an index run tells its files' languages with this identifier")
    loaded = {id(model) for model in Models._instances.values()}
    assert document_model in loaded and len(loaded) >= 2  # the query side's model beside it
    demo_needle.runtime.transient = frozenset({"ingest"})
    collections: list[int] = []
    collect = gc.collect
    try:
        gc.collect = lambda *args: collections.append(1) or collect(*args)  # type: ignore[assignment]
        report = demo_needle.index(IndexRequest())
    finally:
        gc.collect = collect  # type: ignore[assignment]
        demo_needle.runtime.transient = frozenset()
    # Letting go of the graph collects the garbage once to find the models no one holds, once more to free them.
    assert len(collections) <= 2, collections
    assert report.files_seen == 54 and not report.chunks_embedded
    assert not [key for key in demo_needle.runtime._pools if key[0] == "ingest"]
    remaining = {id(model): model for model in Models._instances.values()}
    assert set(remaining) >= loaded - {document_model}  # the query side's model stays
    if document_model in remaining:  # only while something else still holds it (another test's graph)
        holders = gc.get_referrers(remaining.pop(document_model))
        assert [h for h in holders if h is not Models._instances and not isinstance(h, types.FrameType)]
    assert languages._identifier is None  # the files' language identifier goes too (about 90 MB)
    assert demo_needle.search(SearchRequest(query="renew a certificate", limit=1), pipeline="vsearch").results


@pytest.mark.integration
def test_graphs_loading_on_two_threads_share_one_model(settings):
    # An owner warms its graphs on a thread while a request loads another: each built its own ONNX session
    # of the same model before graphs loaded one at a time (about 90 MB more).
    from haystack_integrations.components.embedders.fastembed.embedding_backend.fastembed_backend import (
        _FastembedEmbeddingBackendFactory as Models,
    )
    from needle.facade.api import Needle

    kept = dict(Models._instances)
    Models._instances.clear()  # nothing loaded yet, as in a fresh owner
    try:
        needle = Needle(settings)
        threads = [threading.Thread(target=needle.pipeline, args=(name,)) for name in ("query", "vsearch")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        models = {
            id(needle.pipeline(name).get_component("dense_embedder").embedder.embedding_backend)
            for name in ("query", "vsearch")
        }
        assert len(models) == 1 and len(Models._instances) == 1
    finally:
        Models._instances.clear()
        Models._instances.update(kept)


def test_an_owner_that_leaves_ingest_on_demand_from_its_start_lets_its_first_index_run_go(settings, monkeypatch):
    # A background owner says so before its facade exists: its first index run (which may end before the
    # HTTP routes are built) releases the ingest graph too.
    from needle.owner import served_facade as service

    monkeypatch.setenv("NEEDLE_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("NEEDLE_MODEL_DIR", str(settings.model_dir))
    previous = service._needle
    service._needle = None
    try:
        service.warm_on_demand(["ingest"])
        assert service.get_needle().runtime.transient == {"ingest"}  # type: ignore[attr-defined]
        service.warm_on_demand(())
        assert service.get_needle().runtime.transient == frozenset()  # type: ignore[attr-defined]
    finally:
        service.warm_on_demand(())
        service._needle = previous


OPENS_THE_EMBEDDED_INDEX = """
import sys
from needle.facade.api import Needle
needle = Needle()
print(needle.store.count_documents(), needle.file_store.count_documents(), "qdrant_client" in sys.modules)
"""


def test_an_owner_of_the_embedded_index_does_not_import_the_qdrant_server_client(tmp_path):
    # qdrant-client (with httpx, gRPC and protobuf) serves a Qdrant server's store only: importing it cost every
    # owner about 30 MB and every command that opens the index half a second.
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    env["NEEDLE_DATA_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", OPENS_THE_EMBEDDED_INDEX], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["0", "0", "False"], done.stderr[-2000:]
