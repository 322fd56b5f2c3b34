"""Each graph's contract: the application feeds and reads names only, so renaming every stage changes nothing.

Every graph of `pipelines/` is copied with every stage renamed (components, connections, inputs and outputs
rewritten programmatically); Needle pointed at the copies indexes, searches, reads files and
answers exactly as with the originals. The new names keep the old names' alphabetical order: when several
stages are ready at once Haystack runs them by name, which orders what a joiner receives; that order is
Haystack's, not the application's.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack.core.super_component import SuperComponent

import needle.runtime.loader as loader
from needle.core.requests import AnswerRequest, IndexRequest, ListRequest, QueryRequest, SearchRequest
from needle.core.resources import PIPELINES_DIR
from needle.facade.api import Needle
from needle.runtime.contract import REQUIRED, ContractError, GraphContract
from tests.conftest import DEMO_NOTES, make_settings
from tests.llm_server import MODEL_NAME

GRAPHS = sorted(PIPELINES_DIR.glob("*.yml"))
NOTES = [
    "recipes/sourdough-starter-feeding.md",
    "recipes/espresso-dialing-in.md",
    "recipes/pancakes.txt",
    "howto/restic-laptop-backups.md",
    "howto/sqlite-wal-mode.md",
]
HTML = "<html><head><title>Kettle</title></head><body><h1>Kettle descaling</h1><p>Descale the kettle with citric acid every month.</p></body></html>"


def _stage_names() -> list[str]:
    names: set[str] = set()
    for path in GRAPHS:
        data = yaml.safe_load(path.read_text())
        names |= set(data.get("components") or {})
    return sorted(names)


# Every stage name of every graph → a new name of the same alphabetical rank ("snippets" → "n0042").
RENAMED = {name: f"n{rank:04d}" for rank, name in enumerate(_stage_names())}


def renamed(path: str) -> str:
    """`stage.rest` with the stage renamed."""
    stage, _, rest = path.partition(".")
    return f"{RENAMED[stage]}.{rest}" if rest else RENAMED[stage]


def _rename_graph(data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    out["components"] = {RENAMED[name]: spec for name, spec in (data.get("components") or {}).items()}
    for key in ("connections", "remove_connections"):
        if key in data:
            out[key] = [{"sender": renamed(c["sender"]), "receiver": renamed(c["receiver"])} for c in data[key]]
    if "set" in data:
        out["set"] = {renamed(key): value for key, value in data["set"].items()}
    if "inputs" in data:
        out["inputs"] = {
            name: {"optional": [renamed(p) for p in paths["optional"]]}
            if isinstance(paths, dict)
            else [renamed(p) for p in paths]
            for name, paths in data["inputs"].items()
        }
    if "outputs" in data:
        out["outputs"] = {name: renamed(path) for name, path in data["outputs"].items()}
    if "parameters" in data:
        out["parameters"] = {name: renamed(path) for name, path in data["parameters"].items()}
    return out


@pytest.fixture(scope="module")
def renamed_graphs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("renamed-pipelines")
    for path in GRAPHS:
        data = yaml.safe_load(path.read_text())
        (folder / path.name).write_text(yaml.safe_dump(_rename_graph(data), sort_keys=False))
    return folder


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("few-notes")
    for name in NOTES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DEMO_NOTES / name, folder / name)
    (folder / "home").mkdir()
    (folder / "home" / "kettle.html").write_text(HTML)
    return folder


def _without_seconds(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if "seconds" not in k}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


def _graphs_in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "PIPELINES_DIR", folder)


class TestEveryStageRenamed:
    def test_the_copies_rename_every_stage(self, renamed_graphs):
        new = set(RENAMED.values())
        for path in renamed_graphs.glob("*.yml"):
            data = yaml.safe_load(path.read_text())
            inputs = [p["optional"] if isinstance(p, dict) else p for p in data["inputs"].values()]
            named = [
                *data["components"],
                *(c[k] for c in data.get("connections") or [] for k in ("sender", "receiver")),
                *(p for paths in inputs for p in paths),
                *data["outputs"].values(),
            ]
            assert {name.split(".")[0] for name in named} <= new, path.name

    @pytest.mark.integration
    def test_index_search_get_and_status_give_the_same_results(
        self, renamed_graphs, notes, tmp_path, model_dir, monkeypatch
    ):
        seen: dict[str, Any] = {}
        for label, folder in (("original", PIPELINES_DIR), ("renamed", renamed_graphs)):
            _graphs_in(folder, monkeypatch)
            needle = Needle(make_settings(tmp_path / label, model_dir))
            try:
                needle.collections.add(notes, "notes", include=["**/*.md", "**/*.txt", "**/*.html"])
                first = needle.index(IndexRequest())
                again = needle.index(IndexRequest())
                searches = {
                    (graph, query): needle.search(
                        SearchRequest(query=query, limit=3, explain=True), pipeline=graph
                    ).model_dump()
                    for graph in ("search", "vsearch", "query", "query-plain", "search-native")
                    for query in ("feed the sourdough starter", "kettle descaling citric acid")
                }
                filtered = needle.search(
                    SearchRequest(query="backups #restic", collections=["notes"]), pipeline="query"
                ).model_dump()
                files = needle.files
                seen[label] = {
                    "index": _without_seconds(first.model_dump()),
                    "again": _without_seconds(again.model_dump()),
                    "searches": searches,
                    "filtered": filtered,
                    "limits": (files.max_file_bytes, files.max_document_bytes, files.extractor.limits),
                    "get": files.read("notes/recipes/pancakes.txt", from_line=2, max_lines=3).model_dump(),
                    "get_html": files.read("notes/home/kettle.html").model_dump(),
                    "multi_get": files.read_many("notes/recipes/*").model_dump(),
                    "ls": needle.ls(ListRequest()),
                }
            finally:
                needle.close()
        original, renamed_ = seen["original"], seen["renamed"]
        assert original["index"]["files_read"] == len(NOTES) + 1 and original["index"]["chunks_embedded"] > 0
        assert original["searches"]["query", "feed the sourdough starter"]["results"]
        for key in original:
            assert renamed_[key] == original[key], key

    def test_crossencoder_graph_loads_renamed(self, renamed_graphs, settings, monkeypatch):
        # Its cross-encoder comes from the model hub on first use (warm-up), so it is built, not run, here.
        from needle.runtime.environment import Environment

        _graphs_in(renamed_graphs, monkeypatch)
        pipeline = loader.load_pipeline("query-crossencoder", Environment(settings))
        GraphContract.of(pipeline, "query-crossencoder").require("search")


@pytest.mark.integration
class TestRenamedWithAnLLM:
    def test_answer_and_llm_search_give_the_same_results(
        self, renamed_graphs, notes, tmp_path, model_dir, llm_server, monkeypatch
    ):
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
        seen: dict[str, Any] = {}
        for label, folder in (("original", PIPELINES_DIR), ("renamed", renamed_graphs)):
            name = (lambda stage: stage) if label == "original" else renamed
            _graphs_in(folder, monkeypatch)
            settings = make_settings(
                tmp_path / label,
                model_dir,
                NEEDLE_LLM__URL=llm_server,
                NEEDLE_LLM__MODEL=MODEL_NAME,
                NEEDLE_LLM__TIMEOUT="120",
            )
            needle = Needle(settings)
            try:
                needle.collections.add(notes, "notes")
                needle.index(IndexRequest())
                answer = needle.answer(
                    AnswerRequest(
                        question="How do I feed my sourdough starter?",
                        limit=2,
                        retry=False,
                        set={
                            name("generate") + ".generation_kwargs.max_tokens": 32,
                            name("retry") + ".max_seconds": 600.0,
                        },
                    )
                )
                small = {
                    name("expander") + ".max_lex": 1,
                    name("expander") + ".max_vec": 1,
                    name("expander") + ".chat_generator.generation_kwargs": {"max_tokens": 24, "temperature": 0.0},
                    name("rerank") + ".ranker.chat_generator.generation_kwargs": {"max_tokens": 24, "temperature": 0.0},
                    name("rerank") + ".candidates": 2,
                    name("rerank") + ".top_k": 2,
                }
                llm_search = needle.search(
                    QueryRequest(query="sourdough starter feeding", limit=2, set=small, expand=False),
                    pipeline="query-llm",
                )
                # The local LLM's words can differ between two runs of one prompt (llama.cpp reuses the cached
                # prefix of the previous prompt, which changes its arithmetic): what the graphs were fed and
                # gave back is compared, the LLM's own text only for being there.
                assert answer.answer.strip() and answer.label and llm_search.label
                seen[label] = (
                    answer.model_dump(include={"results", "warnings"}),
                    sorted((r.path, r.start_line) for r in llm_search.results),
                )
            finally:
                needle.close()
        assert seen["original"][0]["results"] and seen["original"][1]
        assert seen["renamed"] == seen["original"]


class TestContractChecks:
    def _write(self, tmp_path: Path, graph: str, change) -> Path:
        data = yaml.safe_load((PIPELINES_DIR / f"{graph}.yml").read_text())
        change(data)
        path = tmp_path / f"broken-{graph}.yml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def test_every_graph_declares_what_its_kind_needs_and_superComponent_accepts_it(self, settings, monkeypatch):
        from needle.runtime.environment import Environment

        # Older Haystack releases build the OpenAI client of query-llm's and rag's generators when the graph
        # loads, and that client wants a key (nothing is sent: the graphs are only loaded here).
        monkeypatch.setenv("OPENAI_API_KEY", "not-used-by-this-test")

        environment = Environment(settings)
        for path in GRAPHS:
            pipeline = loader.load_pipeline(path, environment)
            contract = GraphContract.of(pipeline, path.stem)
            kinds = {"ingest": "ingest", "rag": "answer", "related": "related"}
            kind = kinds.get(path.stem, "search")
            contract.require(kind)
            # Haystack's own wrapper takes the same two mappings (it checks every socket and type).
            SuperComponent(
                pipeline,
                input_mapping={name: [".".join(p) for p in paths] for name, paths in contract.inputs.items()},
                output_mapping={".".join(path): name for name, path in contract.outputs.items()},
            )
        assert set(REQUIRED) == {"search", "answer", "ingest", "related"}

    def test_a_contract_naming_a_missing_socket_is_refused_in_one_line(self, tmp_path, settings):
        from needle.runtime.environment import Environment

        path = self._write(
            tmp_path,
            "search",
            lambda c: c["outputs"].update({"documents": "snippets.documentz"}),
        )
        with pytest.raises(ContractError) as refused:
            loader.load_pipeline(path, Environment(settings))
        message = str(refused.value)
        assert "\n" not in message and str(path) in message and "snippets.documentz" in message

    def test_a_contract_missing_a_stage_is_refused_in_one_line(self, tmp_path, settings):
        from needle.runtime.environment import Environment

        path = self._write(tmp_path, "ingest", lambda c: c["inputs"].update({"paths": ["walker.paths"]}))
        with pytest.raises(
            ContractError, match=r"^graph .*broken-ingest\.yml: contract input 'paths' names no stage 'walker'$"
        ):
            loader.load_pipeline(path, Environment(settings))

    def test_a_graph_without_a_contract_is_refused(self, tmp_path, settings):
        from needle.runtime.environment import Environment

        data = yaml.safe_load((PIPELINES_DIR / "vsearch.yml").read_text())
        del data["inputs"], data["outputs"]
        path = tmp_path / "bare.yml"
        path.write_text(yaml.safe_dump(data))
        with pytest.raises(ContractError, match="declares no contract"):
            loader.load_pipeline(path, Environment(settings))

    @pytest.mark.integration
    def test_a_graph_lacking_a_name_its_command_needs_is_one_line_and_exit_2(self, cli, tmp_path):
        path = self._write(tmp_path, "vsearch", lambda c: c["inputs"].pop("where"))
        code, out, err = cli("vsearch", "--pipeline", str(path), "sourdough")
        assert code == 2 and out == ""
        assert err.strip() == f"error: graph {path}: it declares no input 'where', which a search graph needs"
