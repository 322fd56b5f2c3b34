"""What a graph takes and gives, by name: the contract each YAML graph declares, checked when it loads.

A graph declares, at the top level of its file, the inputs a caller may feed and the outputs it reads, as
hayhooks reads a YAML pipeline (`hayhooks pipeline deploy-yaml`) and in the vocabulary of Haystack's
`SuperComponent` (`input_mapping`, `output_mapping`):

    inputs:
      query: [request.query]                   # a name -> the sockets its value goes to
      limit: {optional: [request.top_k]}       # an input a caller may leave out
    outputs:
      documents: snippets.documents            # a name -> the socket it is read from

hayhooks makes every input it reads a required field of its request, so an input a caller may leave out is
written `{optional: [sockets]}`, which hayhooks leaves out of its schema (a stock `/NAME/run` then takes
`{"query": "..."}`); Needle feeds it like any other. The ingest graph also names the init parameters the
application reads (`parameters`: name -> `stage.parameter`, its file limits). Haystack keeps none of these
keys when it builds a graph, so Needle's loader reads the contract from the file and keeps it on the
pipeline (`GraphContract.of`). The application feeds and reads these names only: renaming a stage is a
change to the graph's file alone.

Needle applies the mappings itself rather than wrapping each graph in a `SuperComponent`, because a
`SuperComponent` run takes its mapped inputs only and returns its mapped outputs only: the application also
passes the user's own run inputs by stage (`--set bm25_retriever.top_k=5`), collects every stage's
`warnings`, and runs a pool of `NeedlePipeline` instances (`needle.runtime.pipeline`, no copy of Needle's stages'
inputs) directly. Mapping is a few dictionary look-ups per run (`python -m eval.contract_overhead` measures it).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from haystack import Pipeline

from needle.core.requests import QueryRequest, params

# The request every query graph takes: what `Needle.search` and `Needle.answer` may feed (the hybrid search
# request's fields by their graph input names, `needle.core.requests`, every filter and `now` included).
REQUEST_INPUTS = frozenset(p.graph for p in params(QueryRequest) if p.graph)

# The names each kind of graph must declare (a `search` graph runs for search, vsearch and query).
REQUIRED: dict[str, dict[str, frozenset[str]]] = {
    "search": {"inputs": REQUEST_INPUTS, "outputs": frozenset({"documents"})},
    "answer": {
        "inputs": REQUEST_INPUTS,
        "outputs": frozenset({"answer", "documents", "cited", "unknown_citations"}),
    },
    "ingest": {
        "inputs": frozenset({"collections", "paths", "after", "optimize"}),
        "outputs": frozenset(
            {
                "scan_skipped",
                "pending",
                "sources",
                "next",
                "counts",
                "gone",
                "read_documents",
                "read_skipped",
                "chunk_skipped",
                "diff_stats",
                "chunks_written",
                "chunks_deleted",
                "file_points_written",
                "file_points_deleted",
            }
        ),
    },
    # `needle related`: one note's file id in, the related notes out (pipelines/related.yml).
    "related": {"inputs": frozenset({"file_id"}), "outputs": frozenset({"documents"})},
}


class ContractError(ValueError):
    """A graph's contract is missing, malformed, names a socket the graph lacks, or lacks a name the application needs."""


def _split(path: Any, graph: str, where: str) -> tuple[str, str]:
    if not isinstance(path, str) or path.count(".") < 1 or not all(path.split(".", 1)):
        raise ContractError(f"graph {graph}: contract {where} '{path}' is not 'stage.socket'")
    stage, _, socket = path.partition(".")
    return stage, socket


@dataclass(frozen=True)
class GraphContract:
    """
    A graph's declared inputs, outputs and parameters, by the names the application uses.

    Usage example:
    ```python
    contract = GraphContract.of(pipeline, "query")  # a graph loaded by `needle.runtime.loader.load_pipeline`
    output = pipeline.run(contract.feed({"query": "restic"}), include_outputs_from=contract.stages)
    contract.read(output)["documents"]
    ```
    """

    graph: str
    inputs: dict[str, tuple[tuple[str, str], ...]]
    outputs: dict[str, tuple[str, str]]
    parameters: dict[str, tuple[str, str]] = field(default_factory=dict)
    optional: frozenset[str] = frozenset()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], graph: str) -> GraphContract:
        """
        Read the contract from a graph's file (its top-level `inputs`, `outputs` and `parameters`), unchecked
        against the stages.

        :param data: The graph as its file holds it (`Pipeline.to_dict()` form plus the contract's keys).
        :param graph: The graph's name or file, for messages.
        :raises ContractError: When there is no contract or its form is wrong (one line naming the graph).
        """
        inputs_raw, outputs_raw, params_raw = (data.get(k) or {} for k in ("inputs", "outputs", "parameters"))
        if not inputs_raw and not outputs_raw:
            raise ContractError(
                f"graph {graph} declares no contract: add top-level inputs: and outputs: (see pipelines/query.yml)"
            )
        if not all(isinstance(m, Mapping) for m in (inputs_raw, outputs_raw, params_raw)):
            raise ContractError(f"graph {graph}: inputs, outputs and parameters must be mappings")
        inputs: dict[str, tuple[tuple[str, str], ...]] = {}
        optional: set[str] = set()
        for name, paths in inputs_raw.items():
            if isinstance(paths, Mapping):
                if set(paths) != {"optional"}:
                    raise ContractError(
                        f"graph {graph}: input '{name}' must list 'stage.socket' paths, or {{optional: [paths]}}"
                    )
                optional.add(str(name))
                paths = paths["optional"]
            listed = [paths] if isinstance(paths, str) else paths
            if not isinstance(listed, list) or not listed:
                raise ContractError(f"graph {graph}: input '{name}' must list 'stage.socket' paths")
            inputs[str(name)] = tuple(_split(p, graph, f"input '{name}':") for p in listed)
        outputs = {str(name): _split(path, graph, f"output '{name}':") for name, path in outputs_raw.items()}
        parameters = {str(name): _split(path, graph, f"parameter '{name}':") for name, path in params_raw.items()}
        return cls(graph, inputs, outputs, parameters, frozenset(optional))

    @classmethod
    def of(cls, pipeline: Pipeline, graph: str, data: Mapping[str, Any] | None = None) -> GraphContract:
        """
        The contract of a built graph, every mapped socket checked; kept on the pipeline after the first time.

        :param pipeline: The graph as Haystack built it.
        :param graph: The graph's name or file, for messages.
        :param data: The graph's file as read (`needle.runtime.loader.read_graph`): where the contract is
            declared. Needle's loader passes it when it builds the graph; later calls find the kept one.
        :raises ContractError: When the contract is missing or malformed, or names a stage, socket or
            parameter the graph lacks (one line naming the graph and the name).
        """
        known = getattr(pipeline, "_needle_contract", None)
        if isinstance(known, GraphContract):
            return known
        if data is None:
            raise ContractError(
                f"graph {graph} was not loaded by Needle's loader (needle.runtime.loader.load_pipeline), which "
                "reads its inputs and outputs"
            )
        contract = cls.from_dict(data, graph)
        contract.check(pipeline)
        pipeline._needle_contract = contract  # type: ignore[attr-defined]  # Needle's note on Haystack's Pipeline
        return contract

    def check(self, pipeline: Pipeline) -> None:
        """
        Check that every mapped stage, socket and parameter exists in the built graph.

        :raises ContractError: Naming the graph and the first name that does not resolve.
        """
        nodes = pipeline.graph.nodes
        free = pipeline.inputs()

        def stage(name: str, kind: str, label: str) -> dict[str, Any]:
            if name not in nodes:
                raise ContractError(f"graph {self.graph}: contract {kind} '{label}' names no stage '{name}'")
            return nodes[name]

        for name, paths in self.inputs.items():
            for owner, socket in paths:
                stage(owner, "input", name)
                if socket not in free.get(owner, {}):
                    raise ContractError(
                        f"graph {self.graph}: contract input '{name}' names {owner}.{socket}, which is not an "
                        f"unconnected input of stage '{owner}'"
                    )
        for name, (owner, socket) in self.outputs.items():
            if socket not in stage(owner, "output", name).get("output_sockets", {}):
                raise ContractError(
                    f"graph {self.graph}: contract output '{name}' names {owner}.{socket}, which stage '{owner}' does not give"
                )
        for name, (owner, parameter) in self.parameters.items():
            instance = stage(owner, "parameter", name)["instance"]
            accepted = inspect.signature(type(instance).__init__).parameters
            if parameter not in accepted:
                raise ContractError(
                    f"graph {self.graph}: contract parameter '{name}' names {owner}.{parameter}, which stage '{owner}' does not take"
                )

    def require(self, kind: str) -> GraphContract:
        """
        Check that the contract declares every name a kind of graph needs (`search`, `answer`, `ingest`).

        :returns: The contract.
        :raises ContractError: Naming the graph and the first missing name.
        """
        for side in ("inputs", "outputs"):
            declared = getattr(self, side)
            missing = sorted(REQUIRED[kind][side] - set(declared))
            if missing:
                raise ContractError(
                    f"graph {self.graph}: it declares no {side[:-1]} '{missing[0]}', which a {kind} graph needs"
                )
        return self

    @property
    def stages(self) -> set[str]:
        """The stages whose outputs the contract reads (for `include_outputs_from`)."""
        return {owner for owner, _ in self.outputs.values()}

    def fed(self) -> set[str]:
        """Every `stage.socket` the contract feeds."""
        return {f"{owner}.{socket}" for paths in self.inputs.values() for owner, socket in paths}

    def feed(
        self, values: Mapping[str, Any], data: Mapping[str, Mapping[str, Any]] | None = None
    ) -> dict[str, dict[str, Any]]:
        """
        Run data for `Pipeline.run`: each named value on every socket its name maps to, over `data`.

        :param values: Input name → value; every name must be declared.
        :param data: Run data by stage (the user's run-input overrides), kept where the names do not set it.
        :raises ContractError: When a name is not an input of the contract.
        """
        run: dict[str, dict[str, Any]] = {stage: dict(sockets) for stage, sockets in (data or {}).items()}
        for name, value in values.items():
            paths = self.inputs.get(name)
            if paths is None:
                raise ContractError(f"graph {self.graph}: it declares no input '{name}'")
            for owner, socket in paths:
                run.setdefault(owner, {})[socket] = value
        return run

    def accepts(self, name: str) -> bool:
        """Whether the graph takes an input of this name."""
        return name in self.inputs

    def read(self, output: Mapping[str, Mapping[str, Any]], names: Iterable[str] | None = None) -> dict[str, Any]:
        """
        The named outputs of a run (those whose stage ran and gave the socket).

        :param output: What `Pipeline.run` returned, with the contract's stages included.
        :param names: Only these names (all when `None`).
        """
        found: dict[str, Any] = {}
        for name in self.outputs if names is None else names:
            path = self.outputs.get(name)
            if path is None:
                continue
            given = output.get(path[0])
            if isinstance(given, Mapping) and path[1] in given:
                found[name] = given[path[1]]
        return found

    def parameter(self, data: Mapping[str, Any], name: str, default: Any = None) -> Any:
        """
        An init parameter the contract names, read from the graph's dictionary (its YAML value).

        :param data: The graph in `Pipeline.to_dict()` form.
        :param default: When the contract does not name it or the YAML does not set it.
        """
        path = self.parameters.get(name)
        if path is None:
            return default
        params = ((data.get("components") or {}).get(path[0]) or {}).get("init_parameters") or {}
        return params.get(path[1], default)

    def without_parameter(self, data: Mapping[str, Any], name: str) -> dict[str, Any]:
        """A deep copy of a graph's dictionary without one named init parameter (when it is set)."""
        import copy

        graph = copy.deepcopy(dict(data))
        path = self.parameters.get(name)
        if path is not None:
            ((graph.get("components") or {}).get(path[0]) or {}).get("init_parameters", {}).pop(path[1], None)
        return graph


__all__ = ["REQUEST_INPUTS", "REQUIRED", "ContractError", "GraphContract"]
