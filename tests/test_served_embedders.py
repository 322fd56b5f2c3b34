"""Needle with its dense model on a server: the configuration swap, provenance, and failures at the boundary.

The server is tests/embedding_server.py on 127.0.0.1 (the offline MiniLM behind OpenAI's and Ollama's APIs);
Needle's own graphs, stores and clients run against it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from haystack.core.errors import PipelineRuntimeError

from haystack_integrations.components.needle._served import EmbeddingDimensionError
from needle.commands.failures import classify
from needle.core.requests import IndexRequest, SearchRequest
from needle.lifecycle.provenance import IndexMismatchError
from needle.runtime.loader import loads_pipeline
from tests.conftest import make_settings
from tests.embedding_server import MODEL, NOMIC, closed_port_url

pytestmark = pytest.mark.integration

NOTES = {
    "postgres.md": "# Postgres\n\n## Replication slots\n\nSet wal_level to logical, then create a replication slot per subscriber.\n",
    "docker.md": "# Docker\n\n## Bridge networks\n\nEach container on a user-defined bridge network gets its own address and DNS name.\n",
    "raft.md": "# Raft\n\n## Leader election\n\nA follower that hears no heartbeat becomes a candidate and asks for votes.\n",
    "bread.md": "# Sourdough\n\n## Proofing\n\nA long cold proof overnight gives the crumb its open structure and sour taste.\n",
}


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def served_needle(
    data_dir: Path, model_dir: Path, notes: Path, provider: str, url: str, model: str = MODEL, **env: str
):
    from needle.facade.api import Needle

    settings = make_settings(
        data_dir,
        model_dir,
        NEEDLE_EMBEDDING__PROVIDER=provider,
        NEEDLE_EMBEDDING__URL=url,
        NEEDLE_EMBEDDING__MODEL=model,
        NEEDLE_EMBEDDING__MAX_RETRIES="0",
        **env,
    )
    needle = Needle(settings)
    if not needle.collections.load():
        needle.collections.add(notes, "notes")
    return needle


def test_two_lines_of_configuration_index_and_search_through_the_server(served, tmp_path, model_dir, notes):
    needle = served_needle(tmp_path / "data", model_dir, notes, "openai", served.openai_url)
    try:
        report = needle.index(IndexRequest())
        assert report.chunks_embedded == 4 and served.stats()["texts"] >= 4
        fingerprint = needle_fingerprint(needle)
        assert {
            k: fingerprint[k]
            for k in ("embedding_provider", "embedding_model", "embedding_dim", "query_prefix", "document_prefix")
        } == {
            "embedding_provider": "openai",
            "embedding_model": MODEL,
            "embedding_dim": 384,
            "query_prefix": "",
            "document_prefix": "",
        }
        answer = needle.search(SearchRequest(query="replication slot for a subscriber"), pipeline="vsearch")
        assert answer.results[0].path.endswith("postgres.md") and answer.warnings == []
        graph = needle.pipeline("vsearch")
        embedder = graph.get_component("dense_embedder").embedder
        assert type(embedder).__name__ == "OpenAIDenseQueryEmbedder" and embedder.embedding_dim == 384
        # The graph Needle runs dumps and loads back as the same served graph.
        again = loads_pipeline(graph.dumps(), needle.environment)
        assert again.get_component("dense_embedder").embedder.to_dict() == embedder.to_dict()
        ingest = needle.pipeline("ingest").get_component("dense_embedder").embedder
        assert type(ingest).__name__ == "OpenAIDenseDocumentEmbedder"
    finally:
        needle.close()


def needle_fingerprint(needle) -> dict:
    from needle.lifecycle import provenance as index_info

    return index_info.read(needle.settings)["fingerprint"]


def test_a_known_models_prefixes_are_applied_and_recorded(served, tmp_path, model_dir, notes):
    needle = served_needle(tmp_path / "data", model_dir, notes, "ollama", served.root, model=NOMIC)
    try:
        needle.index(IndexRequest())
        fingerprint = needle_fingerprint(needle)
        assert (fingerprint["embedding_provider"], fingerprint["query_prefix"], fingerprint["document_prefix"]) == (
            "ollama",
            "search_query: ",
            "search_document: ",
        )
        embedder = needle.pipeline("query").get_component("dense_embedder").embedder
        assert type(embedder).__name__ == "OllamaDenseQueryEmbedder" and embedder.prefix == "search_query: "
        assert (
            needle.search(SearchRequest(query="leader election heartbeat"), pipeline="query")
            .results[0]
            .path.endswith("raft.md")
        )
    finally:
        needle.close()


def test_searching_with_another_model_refuses_naming_both(served, tmp_path, model_dir, notes):
    from needle.facade.api import Needle

    needle = served_needle(tmp_path / "data", model_dir, notes, "openai", served.openai_url)
    needle.index(IndexRequest())
    needle.close()
    local = Needle(make_settings(tmp_path / "data", model_dir))
    try:
        with pytest.raises(IndexMismatchError) as caught:
            local.search(SearchRequest(query="replication"), pipeline="vsearch")
        message = str(caught.value)
        assert "embedding_provider: index has 'openai', config has 'fastembed'" in message
        assert "embedding_model: index has 'minilm', config has 'local/all-MiniLM-L6-v2-int8'" in message
        assert "\n" not in message and message.endswith("rebuild it with `needle index --rebuild`")
    finally:
        local.close()


def test_a_failure_mid_run_keeps_the_finished_batches_and_the_next_run_continues(served, tmp_path, model_dir, notes):
    needle = served_needle(tmp_path / "data", model_dir, notes, "openai", served.openai_url)
    batches = []

    def fail_after_the_first_batch(report: dict) -> None:
        batches.append(report)
        served.faults(fail=1000)

    try:
        with pytest.raises(PipelineRuntimeError) as caught:
            needle.index(IndexRequest(set={"scanner.batch_files": 1}), fail_after_the_first_batch)
        failure = classify(caught.value)
        assert failure.exit_code == 1 and failure.http_status == 503 and "\n" not in failure.message
        assert (
            failure.message.startswith("the embedding server at http://127.0.0.1:")
            and "HTTP 500, model minilm" in failure.message
        )
        assert len(batches) == 1 and needle.store.count_documents() == 1  # the first file's chunk stayed
        served.reset()
        report = needle.index(IndexRequest(set={"scanner.batch_files": 1}))
        assert report.files_skipped_by_stat == 1 and report.files_new == 3
        assert needle.store.count_documents() == 4 and served.stats()["texts"] == 3
    finally:
        needle.close()


def test_a_server_that_goes_down_leaves_queries_to_keyword_search(served, tmp_path, model_dir, notes):
    needle = served_needle(tmp_path / "data", model_dir, notes, "openai", served.openai_url)
    needle.index(IndexRequest())
    needle.close()
    down = closed_port_url() + "/v1"
    needle = served_needle(tmp_path / "data", model_dir, notes, "openai", down)
    try:
        answer = needle.search(SearchRequest(query="replication slot"), pipeline="query")
        assert answer.results[0].path.endswith("postgres.md")
        assert any(
            w.startswith(f"vector search skipped: no embedding server answers at {down}") for w in answer.warnings
        )
    finally:
        needle.close()


def test_a_server_answering_another_dimension_is_refused_in_one_line(served, tmp_path, model_dir, notes):
    needle = served_needle(tmp_path / "data", model_dir, notes, "openai", served.openai_url)
    try:
        needle.index(IndexRequest())
        served.faults(dim=256)
        with pytest.raises(Exception) as caught:
            needle.search(SearchRequest(query="replication slot"), pipeline="vsearch")
        failure = classify(caught.value)
        assert isinstance(_root(caught.value), EmbeddingDimensionError)
        assert failure.http_status == 409 and "\n" not in failure.message
        assert "returned vectors of 256 values for model minilm, the index holds vectors of 384" in failure.message
    finally:
        needle.close()


def test_a_model_not_pulled_stops_the_index_run_in_one_line(served, tmp_path, model_dir, notes):
    needle = served_needle(tmp_path / "data", model_dir, notes, "ollama", served.root, model="bge-m3")
    try:
        with pytest.raises(Exception) as caught:
            needle.index(IndexRequest())
        message = classify(caught.value).message
        assert message.startswith(
            f"Ollama at {served.root} does not have the model bge-m3: pull it with `ollama pull bge-m3`"
        )
        assert "\n" not in message and not (needle.settings.index_dir / "needle_index.json").exists()
    finally:
        needle.close()


def _root(error: BaseException) -> BaseException:
    from needle.core.errors import root_cause

    return root_cause(error)
