"""The graph runtime: the YAML graphs, each loaded once per set of overrides in a pool of warmed instances."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from haystack import Pipeline

from needle.core.languages import forget_identifier
from needle.core.settings import Settings
from needle.lifecycle import provenance as index_info
from needle.runtime.contract import GraphContract
from needle.runtime.environment import Environment
from needle.runtime.loader import apply_overrides, load_pipeline, read_graph
from needle.runtime.pool import GraphPool, drop_unused_models, give_back_memory

INGEST = "ingest"
# Graphs load one at a time in a process: fastembed-haystack's cache of models is not locked, so two graphs
# that load the same model on two threads (an owner warming its graphs while a request loads another) each
# built an ONNX session of it, and both stayed (about 90 MB more). Runs of loaded graphs never wait for it.
LOADING = threading.RLock()


def reported_stages(graph: Pipeline, contract: GraphContract) -> set[str]:
    """
    The stages of a graph whose outputs a run returns: those the contract reads, and every stage with a
    `warnings` output (a response reports them all).
    """
    known = getattr(graph, "_needle_reported", None)
    if known is None:
        nodes = graph.graph.nodes
        warned = {name for name in nodes if "warnings" in nodes[name].get("output_sockets", {})}
        known = contract.stages | warned
        graph._needle_reported = known  # type: ignore[attr-defined]  # Needle's note on Haystack's Pipeline
    return set(known)


def configured_graph(name: str, settings: Settings) -> dict[str, Any]:
    """
    A graph's dictionary with the configuration's `set` overrides that apply to it.

    :param name: Graph name or file.
    :param settings: Needle's settings.
    :returns: A fresh dictionary.
    """
    graph = read_graph(name)
    return apply_overrides(graph, settings.set, strict=False) if settings.set else graph


def _user_inputs(graph: Pipeline | None, name: str, free: Mapping[str, Any]) -> list[str]:
    """A graph's free run inputs that its contract does not feed (those a user may set per run), as `stage.socket`."""
    fed = GraphContract.of(graph, name).fed() if graph is not None else set()
    return [f"{c}.{s}" for c, sockets in free.items() for s in sockets if f"{c}.{s}" not in fed]


class GraphRuntime:
    """
    The graphs of one configuration, loaded once each (thread-safe), and what an index built with it must match.

    Usage example:
    ```python
    runtime = GraphRuntime(settings, Environment(settings))
    pool, run_data = runtime.with_overrides("query", {"bm25_retriever.top_k": 80})
    with pool.lend() as graph:
        graph.run(...)
    ```
    """

    def __init__(self, settings: Settings, environment: Environment) -> None:
        """
        :param settings: Needle's settings (the configuration's `set` applies to every graph it names).
        :param environment: What the graphs need from the machine: stores, models, the LLM server.
        """
        self.settings = settings
        self.environment = environment
        self._pools: dict[tuple[str, str], GraphPool] = {}
        self._building: dict[tuple[str, str], threading.Lock] = {}
        self._lock = threading.Lock()
        self._ingest_graph: dict[str, Any] | None = None
        self._fingerprint: dict[str, Any] | None = None
        # Graphs let go of (with their models) once a run of them ends (`release`): a process that loads the
        # ingest graph only when an index run asks for it gives its memory back after the run.
        self.transient: frozenset[str] = frozenset()

    def pipeline(self, name: str, overrides: Mapping[str, Any] | None = None) -> Pipeline:
        """
        A graph (`pipelines/<name>.yml` or a path), loaded and warmed once per set of overrides.

        :param name: Graph name or file.
        :param overrides: `component.parameter` → value, on top of the configuration's `set`.
        :raises PipelineError: When the graph or an override is invalid.
        """
        return self.pool(name, overrides).first

    def pool(self, name: str, overrides: Mapping[str, Any] | None = None) -> GraphPool:
        """The pool of a graph's instances for a set of overrides (`serve.graph_instances` at most)."""
        key = (str(name), json.dumps(dict(overrides or {}), sort_keys=True, default=str))
        with self._lock:
            pool = self._pools.get(key)
            if pool is not None:
                return pool
            building = self._building.setdefault(key, threading.Lock())
        # One graph builds at a time per key, outside the Needle's lock: a run of a graph already loaded
        # does not wait while another loads (an owner warming its graphs in the background).
        with building:
            with self._lock:
                pool = self._pools.get(key)
            if pool is None:
                combined = {**self._configured_overrides(name), **dict(overrides or {})}

                def build() -> Pipeline:
                    with LOADING:
                        pipeline = load_pipeline(name, self.environment, combined)
                        pipeline.warm_up()
                    return pipeline

                pool = GraphPool(build, self.settings.serve.graph_instances)
                with self._lock:
                    self._pools[key] = pool
            return pool

    def warm(self, name: str) -> Pipeline:
        """
        Load and warm every instance of a graph that concurrent runs may need (a server at start-up); the
        ingest graph needs one, since index runs take turns. Components that load their models on first use
        (the ingest graph's embedders, so that an index run with nothing to embed loads none) load them now.

        :returns: The graph's first instance.
        """
        pool = self.pool(name)
        if name != INGEST:
            pool.fill()
        for _, component in pool.first.walk():
            load = getattr(component, "load", None)
            if callable(load):
                with LOADING:
                    load()
        return pool.first

    def release(self, name: str) -> bool:
        """
        Let go of every loaded instance of a graph and the models only it held (for the ingest graph, the
        language identifier of its files too), and give the memory back to the system; its next run loads
        them again. The caller makes sure no run of it is under way (index runs
        release the ingest graph while they hold the index's lock).

        :returns: Whether anything was loaded.
        """
        with self._lock:
            keys = [key for key in self._pools if key[0] == str(name)]
            for key in keys:
                del self._pools[key]
        if keys:
            if str(name) == INGEST:  # the language identifier of its files (a multilingual query reloads it)
                forget_identifier()
            drop_unused_models()
            give_back_memory(collect=False)  # drop_unused_models has collected the garbage
        return bool(keys)

    def release_transient(self, name: str) -> None:
        """`release` the graph if it is one of `transient`."""
        if name in self.transient:
            self.release(name)

    def with_overrides(
        self, name: str, overrides: Mapping[str, Any] | None, init_level: bool = True
    ) -> tuple[GraphPool, dict[str, dict[str, Any]]]:
        """
        The graph's pool for a set of overrides, and the run data for those that are run inputs of a component.

        A key naming a run input that no connection feeds (`bm25_retriever.top_k`) goes into this run's
        data; any other key is an init parameter, for which a variant of the graph is built once.

        :param init_level: Allow init-parameter overrides (a server refuses them per request).
        :raises ValueError: When `init_level` is off and a key is not a free run input.
        """
        run_data: dict[str, dict[str, Any]] = {}
        init: dict[str, Any] = {}
        graph = self.pipeline(name) if overrides else None
        free = graph.inputs() if graph is not None else {}
        for key, value in (overrides or {}).items():
            component, _, parameter = str(key).partition(".")
            if parameter in free.get(component, {}):
                run_data.setdefault(component, {})[parameter] = value
            elif init_level:
                init[key] = value
            else:
                raise ValueError(
                    f"set: '{key}' is not a run input of graph {name} (it has "
                    f"{', '.join(_user_inputs(graph, name, free)) or 'none'}); "
                    "init parameters are configured when the server starts (`set:` in the configuration)"
                )
        return self.pool(name, init), run_data

    def _configured_overrides(self, name: str) -> dict[str, Any]:
        """The configuration's `set`, restricted to the components this graph has."""
        if not self.settings.set:
            return {}
        components = read_graph(name)["components"]
        return {k: v for k, v in self.settings.set.items() if str(k).split(".", 1)[0] in components}

    def fingerprint(self) -> dict[str, Any]:
        """The fingerprint an index built with this configuration has (every query compares it), computed once."""
        if self._fingerprint is None:
            self._fingerprint = index_info.fingerprint(self.settings, self.ingest_graph())
        return self._fingerprint

    def check_index(self) -> None:
        """
        Refuse to search an index built with other embedding settings than this configuration's.

        :raises IndexMismatchError: Naming what differs and the command that rebuilds the index.
        """
        index_info.check(self.settings, self.ingest_graph(), self.fingerprint())

    def ingest_graph(self) -> dict[str, Any]:
        """The ingest graph's dictionary with the configuration's overrides (for the index's provenance)."""
        if self._ingest_graph is None:
            self._ingest_graph = configured_graph(INGEST, self.settings)
        return self._ingest_graph
