"""What a graph needs from outside its YAML, handed to its components while Haystack builds them.

A graph file holds its knobs as literal values and names its stores by role (`document_store: chunks`,
`file_document_store: files`); it leaves out what depends on the machine: where the index lives (the
embedded engine's folder or a Qdrant server), the models' folders, the LLM server. `Environment` fills
those in through Haystack's own hook, `DeserializationCallbacks(component_pre_init=...)`, so that

    Pipeline.loads(Path("pipelines/query.yml").read_text(), callbacks=Environment(settings).callbacks())

builds the same graph Needle runs with the in-process (fastembed) dense model; with a served one, pass the
graph through `env.resolve` first (`needle.runtime.loader.build_pipeline` does both). Rules, applied to every
component (nested ones included) just before its constructor runs, filling only what the graph left out
(a value in the YAML always wins):

- a parameter ending in `document_store` whose value is a role name gets the one store object of that
  role (one object per location, shared by every component and graph of this environment); a store
  object equal to one of the environment's (a graph loaded back from `Pipeline.dumps()`) is swapped for it;
- fastembed embedders get the index's dense or sparse model (name, folder, offline flag) and its query or
  document prefix; document embedders also get the progress-bar preference;
- with a served dense model (`embedding.provider: openai | ollama`, see `needle.core.embedding_providers`), `resolve` first
  puts the provider's embedders in place of the graph's dense fastembed ones (before Haystack builds it:
  a callback cannot change a class), and they get the server, model, key variable, timeout, retries, batch
  size, prefix and the index's dimension; components embedding by name get that query embedder as
  `dense_embedder`;
- any other component taking `dense_model`/`sparse_model`-style parameters (`VariantRetriever`) gets the
  same, by parameter name;
- OpenAI-compatible chat generators get the `llm:` server (URL, model, API key variable, timeout);
- a `cache_path` parameter gets the data folder's cache file; fastembed rankers a model cache folder;
- a `records_path` parameter gets the index folder's stat record of indexed files (`needle.core.file_records`).
"""

from __future__ import annotations

import importlib
import inspect
import threading
from functools import cache
from typing import Any

from haystack.core.serialization import DeserializationCallbacks
from haystack.utils import Secret

from needle.core import embedding_providers as embedders
from needle.core.file_records import records_file
from needle.core.model_files import dense_embedder_params, register_local_models, sparse_embedder_params
from needle.core.schema import STORE_ROLES
from needle.core.settings import Settings
from needle.lifecycle import provenance as index_info


class Environment:
    """
    The machine-dependent part of Needle's graphs: stores, model folders, the LLM server, the cache file.

    Usage example:
    ```python
    env = Environment(load_settings())
    pipeline = Pipeline.loads(text, callbacks=env.callbacks())
    env.close()  # releases the stores (the embedded index unlocks)
    ```
    """

    def __init__(self, settings: Settings, progress_bar: bool = False) -> None:
        """
        :param settings: Needle's settings.
        :param progress_bar: Whether document embedders show progress bars (a terminal is attached).
        """
        self.settings = settings
        self.progress_bar = progress_bar
        self._stores: dict[str, Any] = {}
        self._lock = threading.RLock()

    def derive(self, settings: Settings) -> Environment:
        """
        An environment with other settings (another LLM server, say) that shares this one's stores.

        :param settings: The new settings; their data folder and store must be this environment's.
        :raises ValueError: When they point at another index.
        """
        if (settings.data_dir, settings.store) != (self.settings.data_dir, self.settings.store):
            raise ValueError("a derived environment must use the same index (data_dir and store)")
        derived = Environment(settings, self.progress_bar)
        derived._stores, derived._lock = self._stores, self._lock
        return derived

    # ---- stores -------------------------------------------------------------------------------------
    def store_definition(self, role: str) -> dict[str, Any]:
        """
        The serialised store of a role: the embedded engine in the data folder, or a Qdrant server collection.

        :param role: `chunks` or `files` (whole-file documents, kept apart so each has its own BM25 statistics).
        :returns: A `{"type", "init_parameters"}` mapping.
        :raises ValueError: On an unknown role.
        """
        if role not in STORE_ROLES:
            raise ValueError(f"unknown store {role!r}; graphs name one of: {', '.join(STORE_ROLES)}")
        suffix = STORE_ROLES[role]
        settings = self.settings
        dim = index_info.dense_dimension(settings)
        if settings.store.url:
            from haystack_integrations.document_stores.needle.qdrant_server import layout_parameters

            return {
                "type": "haystack_integrations.document_stores.needle.qdrant_server.QdrantServerDocumentStore",
                "init_parameters": {
                    "url": settings.store.url,
                    "index": settings.store.collection + suffix,
                    "embedding_dim": dim,
                    "use_sparse_embeddings": True,
                    "sparse_idf": True,
                    "timeout": settings.store.timeout,
                    "api_key": {"type": "env_var", "env_vars": [settings.store.api_key_env], "strict": False},
                    **layout_parameters(**settings.index.model_dump()),
                },
            }
        return {
            "type": "haystack_integrations.document_stores.needle.edge.document_store.EdgeDocumentStore",
            "init_parameters": {
                "path": str(settings.index_dir / f"edge{suffix}"),
                "embedding_dim": dim,
                **settings.index.model_dump(),
            },
        }

    def store(self, role: str) -> Any:
        """
        The one store object of a role in this environment (created on first use, opened lazily by the store).

        :raises ValueError: On an unknown role.
        """
        with self._lock:
            if role not in self._stores:
                definition = self.store_definition(role)
                module, _, name = definition["type"].rpartition(".")
                self._stores[role] = getattr(importlib.import_module(module), name).from_dict(definition)
            return self._stores[role]

    def open_stores(self) -> list[Any]:
        """The stores this environment has handed out so far."""
        with self._lock:
            return list(self._stores.values())

    def close(self) -> None:
        """Release every store handed out (the embedded index unlocks); the same objects reopen on next use."""
        with self._lock:
            stores = list(self._stores.values())
        for store in stores:
            if hasattr(store, "close"):
                store.close()

    def _shared_store(self, value: Any) -> Any:
        """A role name, or a store equal to one of ours, as our store; anything else unchanged."""
        if isinstance(value, str):
            return self.store(value) if value in STORE_ROLES else value
        to_dict = getattr(value, "to_dict", None)
        if to_dict is None:
            return value
        serialised = to_dict()
        for role in STORE_ROLES:
            if serialised == self.store(role).to_dict():
                return self.store(role)
        return value

    # ---- injection ----------------------------------------------------------------------------------
    def resolve(self, graph: dict[str, Any]) -> dict[str, Any]:
        """
        A graph's dictionary with the configured provider's dense embedders in place of its fastembed ones.

        :param graph: A pipeline dictionary (`Pipeline.to_dict()` form); not changed.
        :returns: The same dictionary for fastembed, else a copy with the swapped components (their
            `meta_fields_to_embed`, `embedding_separator` and `suffix` kept; the rest comes from `inject`).
        """
        if not embedders.is_served(self.settings):
            return graph
        components = dict(graph.get("components") or {})
        for name, definition in components.items():
            kind = _fastembed_kind(_class_named(definition.get("type"))) if isinstance(definition, dict) else None
            if kind not in ("dense_query", "dense_document"):
                continue
            side = "query" if kind == "dense_query" else "document"
            params = definition.get("init_parameters") or {}
            kept = {key: params[key] for key in embedders.CARRIED if key in params} if side == "document" else {}
            components[name] = {"type": embedders.served_type(self.settings, side), "init_parameters": kept}
        return {**graph, "components": components}

    def callbacks(self) -> DeserializationCallbacks:
        """Haystack's deserialisation hook that injects this environment (pass to `Pipeline.from_dict`/`loads`)."""
        return DeserializationCallbacks(component_pre_init=self.inject)

    def inject(self, component_name: str, component_class: type, init_params: dict[str, Any]) -> None:
        """
        Fill a component's init parameters from the environment (the rules in the module docstring).

        :param component_name: The component's name in its graph (of the outer component, for nested ones).
        :param component_class: The class about to be built.
        :param init_params: Its init parameters, changed in place.
        :raises MissingModelError: When a graph needs an offline model that is not provisioned.
        """
        accepted = _init_parameters(component_class)
        for key in list(init_params):
            if key.endswith("document_store"):
                init_params[key] = self._shared_store(init_params[key])
        for key, value in self._values_for(component_class, accepted).items():
            if key in accepted and key not in init_params:
                init_params[key] = value
        if str(init_params.get("model", "")).startswith("local/") or str(init_params.get("dense_model", "")).startswith(
            "local/"
        ):
            register_local_models()

    def _values_for(self, component_class: type, accepted: frozenset[str]) -> dict[str, Any]:
        kind = _fastembed_kind(component_class)
        settings = self.settings
        values: dict[str, Any] = {}
        query_prefix, document_prefix = embedders.prefixes(settings)
        served = _served_kind(component_class)
        if served is not None:
            values.update(embedders.served_params(settings, served, index_info.dense_dimension(settings)))
            if served == "document":
                values["progress_bar"] = self.progress_bar
        if kind in ("dense_query", "dense_document"):
            values.update(dense_embedder_params(settings.embedding.model, settings.model_dir))
            values["prefix"] = query_prefix if kind == "dense_query" else document_prefix
        elif kind in ("sparse_query", "sparse_document"):
            values.update(sparse_embedder_params(settings.sparse.model, settings.model_dir))
        elif kind == "ranker":
            values["cache_dir"] = str(settings.model_dir / "hub")
        if kind in ("dense_document", "sparse_document"):
            values["progress_bar"] = self.progress_bar
        if _is_chat_generator(component_class):
            llm = settings.llm
            values.update(
                api_base_url=llm.url,
                model=llm.model,
                api_key=Secret.from_env_var([llm.api_key_env], strict=False),
                timeout=llm.timeout,
            )
        if "cache_path" in accepted:
            values["cache_path"] = str(settings.cache_file)
        if "records_path" in accepted:
            values["records_path"] = str(records_file(settings))
        if accepted & _BY_NAME:
            dense = dense_embedder_params(settings.embedding.model, settings.model_dir)
            sparse = sparse_embedder_params(settings.sparse.model, settings.model_dir)
            for prefix, params in (("dense", dense), ("sparse", sparse)):
                values[f"{prefix}_model"] = params["model"]
                values[f"{prefix}_model_kwargs"] = params.get("model_kwargs")
                values[f"{prefix}_local_files_only"] = params["local_files_only"]
                values[f"{prefix}_cache_dir"] = params.get("cache_dir")
            values["query_prefix"] = query_prefix
            values["document_prefix"] = document_prefix
            if embedders.is_served(settings) and "dense_embedder" in accepted:
                values["dense_embedder"] = embedders.served_embedder(
                    settings, "query", index_info.dense_dimension(settings)
                )
        return values


# Parameters filled by name on components that embed with the index's models themselves.
_BY_NAME = frozenset(
    f"{prefix}_{key}"
    for prefix in ("dense", "sparse")
    for key in ("model", "model_kwargs", "local_files_only", "cache_dir")
)


@cache
def _init_parameters(component_class: type) -> frozenset[str]:
    try:
        init = vars(component_class).get("__init__") or component_class.__init__  # type: ignore[misc]  # read, not called
        return frozenset(inspect.signature(init).parameters) - {"self"}
    except (TypeError, ValueError):
        return frozenset()


@cache
def _fastembed_kind(component_class: type) -> str | None:
    from haystack_integrations.components.embedders.fastembed import (
        FastembedDocumentEmbedder,
        FastembedSparseDocumentEmbedder,
        FastembedSparseTextEmbedder,
        FastembedTextEmbedder,
    )
    from haystack_integrations.components.rankers.fastembed import FastembedRanker

    for base, kind in (
        (FastembedTextEmbedder, "dense_query"),
        (FastembedDocumentEmbedder, "dense_document"),
        (FastembedSparseTextEmbedder, "sparse_query"),
        (FastembedSparseDocumentEmbedder, "sparse_document"),
        (FastembedRanker, "ranker"),
    ):
        if isinstance(component_class, type) and issubclass(component_class, base):
            return kind
    return None


@cache
def _served_kind(component_class: type) -> str | None:
    """ "query" or "document" for Needle's served dense embedders (by name: no provider's client is imported)."""
    if not isinstance(component_class, type):
        return None
    names = {f"{base.__module__}.{base.__qualname__}" for base in component_class.__mro__}
    for query, document in embedders.SERVED_TYPES.values():
        if query in names:
            return "query"
        if document in names:
            return "document"
    return None


def _class_named(type_name: Any) -> type | None:
    """The class a graph's `type` names, or None when it cannot be imported (Haystack reports that itself)."""
    from haystack.core.serialization import import_class_by_name

    if not isinstance(type_name, str):
        return None
    try:
        return import_class_by_name(type_name)
    except Exception:
        return None


_CHAT_GENERATOR = "haystack.components.generators.chat.openai.OpenAIChatGenerator"


@cache
def _is_chat_generator(component_class: type) -> bool:
    """Whether the class is (or extends) Haystack's OpenAI chat generator, by name: importing it imports
    `openai`, over half a second of every process's start-up, also for graphs that have no generator."""
    return isinstance(component_class, type) and any(
        f"{base.__module__}.{base.__qualname__}" == _CHAT_GENERATOR for base in component_class.__mro__
    )


__all__ = ["STORE_ROLES", "Environment", "records_file"]
