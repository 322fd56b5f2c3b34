"""The one place that turns a pipeline YAML into a Haystack `Pipeline`.

Every process (CLI, tests, eval, server) loads graphs through `load_pipeline`, which:
1. reads the YAML and fills `${name}` placeholders from the settings (`${embedding.model}`,
   `${document_store}`, ...): a placeholder that is a whole value takes any type (a mapping for the
   store); one inside a longer string is replaced by text;
2. registers the offline models with fastembed;
3. builds the graph with Haystack's deserialisation allowlist extended to Needle's packages
   (Haystack 3.x refuses classes from modules outside it; 2.x has no allowlist and ignores it).
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
from pathlib import Path
from typing import Any

import yaml
from haystack import Pipeline
from haystack.core import errors as haystack_errors

from needle.models import MissingModelError, dense_embedder_params, embedding_dim, sparse_embedder_params
from needle.settings import HYBRID_RANKER, PROJECT_ROOT, Settings, load_settings

PIPELINES_DIR = PROJECT_ROOT / "pipelines"
ALLOWED_MODULES = ["components", "components.*", "needle", "needle.*", "haystack_integrations.*"]
ALLOWLIST_ENV = "HAYSTACK_DESERIALIZATION_ALLOWLIST"
GRAPH_PREFIX = "pipelines."
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.-]+)\}")


def allow_needle_modules() -> None:
    """
    Add Needle's packages to Haystack's deserialisation allowlist for this process (and its children).

    `load_pipeline` passes the allowlist per call; this covers code that deserialises components itself
    (a component's `from_dict` rebuilding its store, hayhooks loading a wrapper).
    """
    current = [p for p in os.environ.get(ALLOWLIST_ENV, "").split(",") if p]
    os.environ[ALLOWLIST_ENV] = ",".join(dict.fromkeys([*current, *ALLOWED_MODULES]))


class PipelineError(ValueError):
    """A pipeline file is missing, malformed or names a value the settings lack."""


class PlaceholderValues(dict):
    """
    The values placeholders may name, plus `${pipelines.<name>}`: another graph of `pipelines/`, whole.

    `${pipelines.query}` is the dictionary of `pipelines/query.yml` with its own placeholders filled
    from the same values (a fresh copy each time it is named), so that one graph can run another as a
    stage (a Haystack `SuperComponent`, as `pipelines/rag.yml` runs `query.yml`) without copying its steps.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._including: list[str] = []

    def __missing__(self, name: str) -> Any:
        if not name.startswith(GRAPH_PREFIX):
            raise KeyError(name)
        graph = name[len(GRAPH_PREFIX) :]
        if graph in self._including:
            raise PipelineError(f"pipelines include each other in a cycle: {' -> '.join([*self._including, graph])}")
        path = PIPELINES_DIR / f"{graph}.yml"
        if not path.is_file():
            raise KeyError(name)
        self._including.append(graph)
        try:
            return resolve_placeholders(_read_graph(path), self)
        finally:
            self._including.pop()


def store_definition(settings: Settings, files: bool = False) -> dict[str, Any]:
    """
    The serialised document store the graphs share: the embedded engine, or a Qdrant server.

    Chunks and whole-file documents (see `FileDocumentBuilder`) live in two stores side by side (a second
    engine folder, or a second server collection named `<collection>_files`), so that each has its own
    BM25 statistics and a chunk search never returns a file.

    :param settings: Needle's settings.
    :param files: The store of whole-file documents instead of the chunk store.
    :returns: A `{"type": ..., "init_parameters": ...}` mapping, as in a pipeline YAML.
    """
    dim = embedding_dim(settings.embedding.model)
    suffix = "_files" if files else ""
    if settings.store.url:
        return {
            "type": "needle.document_stores.qdrant_server.QdrantServerDocumentStore",
            "init_parameters": {
                "url": settings.store.url,
                "index": settings.store.collection + suffix,
                "embedding_dim": dim,
                "use_sparse_embeddings": True,
                "sparse_idf": True,
                "timeout": settings.store.timeout,
                "api_key": {"type": "env_var", "env_vars": [settings.store.api_key_env], "strict": False},
            },
        }
    return {
        "type": "needle.document_stores.edge.document_store.EdgeDocumentStore",
        "init_parameters": {"path": str(settings.index_dir / f"edge{suffix}"), "embedding_dim": dim},
    }


def make_store(settings: Settings, files: bool = False) -> Any:
    """
    The document store the graphs share, as an object (for status, `get` and collection removal).

    :param settings: Needle's settings.
    :param files: The store of whole-file documents instead of the chunk store.
    :returns: An `EdgeDocumentStore` or a `QdrantServerDocumentStore`.
    """
    definition = store_definition(settings, files)
    module_name, _, class_name = definition["type"].rpartition(".")
    return getattr(importlib.import_module(module_name), class_name).from_dict(definition)


def placeholder_values(settings: Settings, progress_bar: bool = False) -> dict[str, Any]:
    """
    Every value a pipeline YAML may name as `${...}`.

    :param settings: Needle's settings.
    :param progress_bar: Whether embedders show progress bars.
    :returns: A flat mapping of dotted names to values.
    :raises MissingModelError: When a configured offline model is not provisioned.
    """
    values: dict[str, Any] = PlaceholderValues(
        {
            "document_store": store_definition(settings),
            "file_document_store": store_definition(settings, files=True),
            "progress_bar": progress_bar,
        }
    )
    for section in ("embedding", "sparse", "chunking", "reader", "retrieval", "expansion", "gate", "rerank", "snippet", "llm"):
        for key, value in getattr(settings, section).model_dump().items():
            values[f"{section}.{key}"] = value
    dense = dense_embedder_params(settings.embedding.model, settings.model_dir)
    sparse = sparse_embedder_params(settings.sparse.model, settings.model_dir)
    for prefix, params in (("embedding", dense), ("sparse", sparse)):
        values[f"{prefix}.local_files_only"] = params["local_files_only"]
        values[f"{prefix}.model_kwargs"] = params["model_kwargs"]
        values[f"{prefix}.cache_dir"] = params.get("cache_dir")
    values["embedding.meta_fields_to_embed"] = ["context"] if settings.embedding.embed_context else []
    values["embedding.dim"] = embedding_dim(settings.embedding.model)
    values["data_dir"] = str(settings.data_dir)
    values["cache_file"] = str(settings.cache_file)
    values["rerank.ranker"] = ranker_definition(settings, values)
    return values


def ranker_definition(settings: Settings, values: dict[str, Any]) -> dict[str, Any]:
    """
    The ranker the rerank stage wraps: the offline `HybridScoreRanker` for `rerank.model: hybrid`, else
    a fastembed cross-encoder of that name (downloaded from the model hub on first use).
    """
    if settings.rerank.model == HYBRID_RANKER:
        return {
            "type": "components.hybrid_score_ranker.HybridScoreRanker",
            "init_parameters": {
                "document_store": values["document_store"],
                "file_document_store": values["file_document_store"],
                "bm25_weight": settings.rerank.bm25_weight,
                "file_weight": settings.retrieval.file_weight,
                "cosine_scale": settings.rerank.cosine_scale,
            },
        }
    return {
        "type": "haystack_integrations.components.rankers.fastembed.ranker.FastembedRanker",
        "init_parameters": {
            "model_name": settings.rerank.model,
            "cache_dir": values["embedding.cache_dir"],
            "threads": settings.embedding.query_threads,
        },
    }


def resolve_placeholders(node: Any, values: dict[str, Any]) -> Any:
    """
    Replace `${name}` placeholders in a parsed YAML tree.

    :param node: A parsed YAML value.
    :param values: The values placeholders may name.
    :returns: A copy of `node` with placeholders filled.
    :raises PipelineError: When a placeholder names an unknown value.
    """
    if isinstance(node, dict):
        return {key: resolve_placeholders(value, values) for key, value in node.items()}
    if isinstance(node, list):
        return [resolve_placeholders(value, values) for value in node]
    if not isinstance(node, str) or "${" not in node:
        return node

    def lookup(name: str) -> Any:
        try:
            return values[name]
        except KeyError:
            raise PipelineError(f"unknown placeholder ${{{name}}}; known: {', '.join(sorted(values))}") from None

    whole = _PLACEHOLDER.fullmatch(node)
    if whole:
        return lookup(whole.group(1))
    return _PLACEHOLDER.sub(lambda m: str(lookup(m.group(1))), node)


def pipeline_path(name_or_path: str | Path) -> Path:
    """
    Find a pipeline file: a path, or the name of a graph in `pipelines/` (`query` → `pipelines/query.yml`).

    :raises PipelineError: When no such file exists.
    """
    candidate = Path(name_or_path)
    if candidate.suffix in {".yml", ".yaml"} and candidate.exists():
        return candidate
    named = PIPELINES_DIR / f"{name_or_path}.yml"
    if named.exists():
        return named
    raise PipelineError(f"no pipeline named '{name_or_path}' (looked for {candidate} and {named})")


def build_pipeline(data: dict[str, Any]) -> Pipeline:
    """
    Build a graph from its dictionary form, with Needle's modules allowed.

    :param data: A pipeline dictionary (`Pipeline.to_dict()` form) without placeholders.
    :returns: The pipeline.
    """
    if "allowed_modules" in inspect.signature(Pipeline.from_dict).parameters:
        return Pipeline.from_dict(data, allowed_modules=ALLOWED_MODULES)
    return Pipeline.from_dict(data)


def loads_pipeline(text: str) -> Pipeline:
    """
    `Pipeline.loads` with Needle's modules allowed (for YAML that has no placeholders, e.g. `p.dumps()`).

    :param text: Pipeline YAML.
    :returns: The pipeline.
    """
    if "allowed_modules" in inspect.signature(Pipeline.loads).parameters:
        return Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)
    return Pipeline.loads(text)


def _read_graph(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise PipelineError(f"cannot read pipeline {path}: {error}") from error
    if not isinstance(data, dict) or "components" not in data:
        raise PipelineError(f"{path} is not a pipeline: it has no 'components' mapping")
    return data


def load_pipeline(
    name_or_path: str | Path, settings: Settings | None = None, progress_bar: bool = False
) -> Pipeline:
    """
    Load a pipeline YAML with placeholders filled from the settings.

    :param name_or_path: A file path or a graph name in `pipelines/`.
    :param settings: Needle's settings; loaded from the environment when `None`.
    :param progress_bar: Whether embedders show progress bars.
    :returns: The pipeline, not yet warmed up.
    :raises PipelineError: When the file is missing or malformed.
    :raises MissingModelError: When a configured offline model is not provisioned.
    """
    settings = settings or load_settings()
    path = pipeline_path(name_or_path)
    data = _read_graph(path)
    resolved = resolve_placeholders(data, placeholder_values(settings, progress_bar=progress_bar))
    try:
        return build_pipeline(resolved)
    except (PipelineError, MissingModelError):
        raise
    except (
        haystack_errors.PipelineError,
        haystack_errors.DeserializationError,
        haystack_errors.ComponentError,
        haystack_errors.ComponentDeserializationError,
        ImportError,
        TypeError,
        ValueError,
    ) as error:
        raise PipelineError(f"cannot build pipeline {path}: {error}") from error
