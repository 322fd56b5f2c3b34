"""What Needle's components read from Needle's settings when their YAML leaves it out.

A graph file holds ranking knobs; what depends on the machine is not in it: the index's dense and sparse
models (and the folders the offline ones are assembled in), their prefixes, where the model server is, the
LLM server of the answering stages, the cache file and the stat record of indexed files. A component given
none of these reads them here, from `needle.core.settings.active_settings()`: the settings Needle builds its
graphs with, or, in a graph loaded by plain Haystack (`Pipeline.loads`), the configuration of this process
(`config/needle.yml`, `NEEDLE_CONFIG`, `NEEDLE_*` variables). Every import of Needle's settings and model
code happens inside these functions, so importing a component loads none of it.

A parameter that may be switched off with `null` (the cache, the record) defaults to `FROM_SETTINGS`, so that
a YAML `null` still means off; a component writes back to its YAML only what it was given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from needle.core.settings import Settings


class _FromSettings:
    """The default of a parameter that Needle's settings fill in (`FROM_SETTINGS`)."""

    _instance: _FromSettings | None = None

    def __new__(cls) -> _FromSettings:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "FROM_SETTINGS"

    def __deepcopy__(self, memo: dict[int, Any]) -> _FromSettings:
        return self


FROM_SETTINGS: Any = _FromSettings()


def settings() -> Settings:
    """Needle's settings in force (`needle.core.settings.active_settings`)."""
    from needle.core.settings import active_settings

    return active_settings()


def progress_bar(given: bool | None) -> bool:
    """A progress bar switch as given, else the preference of whoever builds the graph (a terminal: on)."""
    if given is not None:
        return given
    from needle.core.settings import progress_bars

    return progress_bars()


def is_served() -> bool:
    """Whether the index's dense model runs on a model server (`embedding.provider` is not `fastembed`)."""
    from needle.core.embedding_providers import is_served as served

    return served(settings())


def dense_model(model: str | None = None) -> dict[str, Any]:
    """
    fastembed-haystack's parameters that load a dense model: `model`, `local_files_only`, `model_kwargs`,
    `cache_dir`. The index's model when `model` is `None`; an offline (`local/`) model from its assembled
    folder, registered with fastembed; any other from the model folder's hub cache.

    :raises MissingModelError: When an offline model is not assembled (`needle models`).
    :raises ValueError: When the settings' model runs on a server (name a fastembed model, or use
        `DenseQueryEmbedder`/`DenseDocumentEmbedder`, which follow the provider).
    """
    from needle.core.model_files import dense_embedder_params

    chosen = settings()
    if model is None:
        if is_served():
            raise ValueError(
                f"the index's dense model runs on a server (embedding.provider: {chosen.embedding.provider}); "
                "name a fastembed model here, or use DenseQueryEmbedder / DenseDocumentEmbedder, which follow it"
            )
        model = chosen.embedding.model
    return dense_embedder_params(model, chosen.model_dir)


def sparse_model(model: str | None = None) -> dict[str, Any]:
    """
    fastembed-haystack's parameters that load a sparse model (the index's, `sparse.model`, when `None`);
    BM25's stopword folder is the model folder's.

    :raises MissingModelError: When BM25's folder is not assembled (`needle models`).
    """
    from needle.core.model_files import sparse_embedder_params

    chosen = settings()
    return sparse_embedder_params(model or chosen.sparse.model, chosen.model_dir)


def prefixes() -> tuple[str, str]:
    """The index's query and document prefixes (a served model's own when the settings leave them `null`)."""
    from needle.core.embedding_providers import prefixes as configured

    return configured(settings())


def served_embedder(
    kind: str, provider: str | None = None, model: str | None = None, prefix: str | None = None, **extra: Any
) -> Any:
    """
    A model server's embedder of `kind` (`query` or `document`) as the `embedding:` settings describe it
    (server, key variable, timeout, retries, batch size), checking the index's dimension.

    :param provider: `openai` or `ollama`; default: `embedding.provider`.
    :param model: The served model; default: `embedding.model`.
    :param prefix: Default: the model's known prefix, or the configured one.
    :param extra: Further init parameters (`meta_fields_to_embed`, ...).
    :raises ValueError: When the provider is fastembed (in-process).
    """
    from haystack.core.serialization import import_class_by_name

    from needle.core.embedding_providers import index_dimension, served_params, served_type

    chosen = settings()
    changes = {key: value for key, value in (("provider", provider), ("model", model)) if value is not None}
    if changes:
        chosen = chosen.model_copy(update={"embedding": chosen.embedding.model_copy(update=changes)})
    params = served_params(chosen, kind, index_dimension(chosen))
    if prefix is not None:
        params["prefix"] = prefix
    return import_class_by_name(served_type(chosen, kind))(**params, **extra)


def cache_file() -> str:
    """The data folder's SQLite cache of LLM and rerank work."""
    return str(settings().cache_file)


def records_file() -> str:
    """The index folder's stat record of indexed files (`needle.core.file_records`)."""
    from needle.core.file_records import records_file as record

    return str(record(settings()))


def records_path_or_settings(records_path: Any) -> str | None:
    """
    A recorder's `records_path`: `FROM_SETTINGS` becomes the index's stat record (`records_file`), `None` stays
    (record nothing), any other value must be a non-empty path.

    :raises ValueError: When `records_path` is not a path, `None` or `FROM_SETTINGS`.
    """
    if records_path is FROM_SETTINGS:
        return records_file()
    if records_path is not None and (not isinstance(records_path, str) or not records_path.strip()):
        raise ValueError(f"records_path must be a file path or None, got {records_path!r}")
    return records_path


def llm_server() -> dict[str, Any]:
    """The OpenAI-compatible LLM server of `llm:`: `api_base_url`, `model`, `api_key` (a `Secret`) and `timeout`."""
    from haystack.utils import Secret

    llm = settings().llm
    return {
        "api_base_url": llm.url,
        "model": llm.model,
        "api_key": Secret.from_env_var([llm.api_key_env], strict=False),
        "timeout": llm.timeout,
    }


def fastembed_model(
    kind: str,
    side: str,
    model: str | None,
    cache_dir: str | None,
    local_files_only: bool | None,
    model_kwargs: dict[str, Any] | None,
    prefix: str | None = None,
) -> tuple[dict[str, Any], set[str]]:
    """
    A fastembed embedder's model parameters with what was left out (`None`) filled in: the index's `kind`
    (`dense` or `sparse`) model, where its files are, and for a dense one the `side`'s (`query` or `document`)
    prefix.

    :returns: The parameters (`model`, `cache_dir`, `local_files_only`, `model_kwargs`, and `prefix` for a dense
        model), and the names of those the settings filled (which the component does not write back).
    :raises MissingModelError: When an offline model is not assembled (`needle models`).
    """
    where = {"cache_dir": cache_dir, "local_files_only": local_files_only, "model_kwargs": model_kwargs}
    values: dict[str, Any] = {"model": model, **where}
    filled: set[str] = set()
    if model is None or all(value is None for value in where.values()):
        found = dense_model(model) if kind == "dense" else sparse_model(model)
        for key in ("model", *where):
            if values[key] is None:
                values[key] = found.get(key)
                filled.add(key)
    elif str(model).startswith("local/"):
        from needle.core.model_files import register_local_models

        register_local_models()
    if values["local_files_only"] is None:
        values["local_files_only"] = False
        filled.add("local_files_only")
    if kind == "dense":
        values["prefix"] = prefix
        if prefix is None:
            query, document = prefixes()
            values["prefix"] = query if side == "query" else document
            filled.add("prefix")
    return values, filled


def by_name(
    kind: str,
    model: str | None,
    model_kwargs: dict[str, Any] | None,
    local_files_only: bool | None,
    cache_dir: str | None,
    dense_embedder: Any = None,
) -> tuple[dict[str, Any], set[str]]:
    """
    For components that embed with the index's model themselves (`VariantRetriever`, `ConfidenceScorer`,
    `ClaimCoverage`): their `<kind>_model`, `<kind>_model_kwargs`, `<kind>_local_files_only` and
    `<kind>_cache_dir` (`kind`: `dense` or `sparse`) with what was left out (`None`) filled in, and for a dense
    model that runs on a server, `dense_embedder`: the server's query embedder.

    :returns: The parameters by their names, and the names the settings filled (not written back).
    """
    names = {key: f"{kind}_{key}" for key in ("model", "model_kwargs", "local_files_only", "cache_dir")}
    values: dict[str, Any] = {
        names["model"]: model,
        names["model_kwargs"]: model_kwargs,
        names["local_files_only"]: local_files_only,
        names["cache_dir"]: cache_dir,
    }
    filled: set[str] = set()
    if kind == "dense":
        values["dense_embedder"] = dense_embedder
        if model is None and dense_embedder is None and is_served():
            values["dense_embedder"] = served_embedder("query")
            values[names["model"]] = settings().embedding.model
            filled |= {"dense_embedder", names["model"]}
            if local_files_only is None:
                values[names["local_files_only"]] = False
                filled.add(names["local_files_only"])
            return values, filled
        if dense_embedder is not None:
            values[names["local_files_only"]] = bool(local_files_only)
            return values, filled
    found, from_settings = fastembed_model(kind, "query", model, cache_dir, local_files_only, model_kwargs)
    for key, name in names.items():
        values[name] = found[key]
        if key in from_settings:
            filled.add(name)
    return values, filled


def without(data: dict[str, Any], filled: set[str]) -> dict[str, Any]:
    """A component's `to_dict()` output without the init parameters the settings filled in."""
    params = {key: value for key, value in data.get("init_parameters", {}).items() if key not in filled}
    return {**data, "init_parameters": params}


__all__ = [
    "FROM_SETTINGS",
    "by_name",
    "cache_file",
    "dense_model",
    "fastembed_model",
    "is_served",
    "llm_server",
    "prefixes",
    "progress_bar",
    "records_file",
    "served_embedder",
    "settings",
    "sparse_model",
    "without",
]
