"""Needle's environment: where data and models live, the index's models, the store, the LLM server.

Settings hold what a graph needs from the machine it runs on, never a ranking knob: those are literal
values in the YAML graphs of `pipelines/`, changed per graph with `set` (below) or `--set`.

Sources, lowest precedence first: the defaults below, Needle's `config/needle.yml` (`needle.core.resources`), the file
named by `NEEDLE_CONFIG`, environment variables `NEEDLE_<SECTION>__<KEY>` (pydantic-settings: `NEEDLE_`
prefix, `__` nesting), then values given in code. A bad value raises `ConfigError` naming the key.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.sources import EnvSettingsSource, YamlConfigSettingsSource
from pydantic_settings.sources.utils import parse_env_vars

from needle.core.resources import DEFAULT_CONFIG_FILE

# The clone's top level: `needle eval` reads its golden files under eval/ there (an installed wheel has none).
PROJECT_ROOT = Path(__file__).resolve().parents[2]

ENV_PREFIX = "NEEDLE_"
CONFIG_ENV = "NEEDLE_CONFIG"


class ConfigError(ValueError):
    """A configuration value is missing, of the wrong type or out of range."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class EmbeddingSettings(_Section):
    """
    The dense model that builds and reads the index (its vectors mean nothing to another model), and where it runs.

    `provider: fastembed` runs the model in-process (offline for the bundled model); `openai` sends the texts
    to any OpenAI-compatible `/v1/embeddings` server at `url` (llama.cpp's server, vLLM, LM Studio, TEI,
    OpenAI), `ollama` to an Ollama server's `/api/embed` (see `needle.core.embedding_providers`).
    """

    provider: Literal["fastembed", "openai", "ollama"] = "fastembed"
    model: str = "local/all-MiniLM-L6-v2-int8"
    # null: the model's own prefixes when Needle knows them (nomic, e5, mxbai... on a server), else none.
    query_prefix: str | None = None
    document_prefix: str | None = None
    # A served model's server (null: Ollama's http://127.0.0.1:11434, llama.cpp's http://127.0.0.1:8080/v1).
    url: str | None = None
    # The environment variable holding the server's API key (never written to logs or errors).
    api_key_env: str = "OPENAI_API_KEY"
    # Seconds one request may take, texts per request (halved when the server answers 413), and retries
    # with backoff on 429, 5xx, timeouts and refused connections.
    timeout: float = Field(60.0, gt=0)
    batch_size: int = Field(32, ge=1)
    max_retries: int = Field(4, ge=0)


class SparseSettings(_Section):
    """The sparse (BM25) model of the index."""

    model: str = "Qdrant/bm25"


class StoreSettings(_Section):
    """Where the index lives: the embedded engine in `data_dir`, or a Qdrant server."""

    url: str | None = None
    api_key_env: str = "QDRANT_API_KEY"
    collection: str = Field("needle", min_length=1)
    timeout: int = Field(10, gt=0)


class IndexSettings(_Section):
    """
    How the index holds its vectors, on the embedded engine and on a Qdrant server alike.

    The memory an index needs, and how fast and how exactly it answers, depend on these and on the machine,
    not on what a graph ranks: so they are environment, recorded in the index's provenance, applied when the
    index is created and to an existing index by `needle optimize` (which rebuilds the segments laid out
    otherwise, without embedding anything again).
    """

    # HNSW graph: edges per node and candidates while building (more: better recall, slower build).
    hnsw_m: int = Field(16, ge=0)
    hnsw_ef_construct: int = Field(100, ge=4)
    # Candidates a dense query's graph search keeps; null: hnsw_ef_construct. A search-time setting.
    hnsw_ef: int | None = Field(200, gt=0)
    # Vector quantization, kept in RAM: none, int8 (4x smaller) or binary (32x smaller).
    quantization: Literal["none", "int8", "binary"] = "int8"
    # Search-time: re-score the best candidates with the original vectors, after fetching
    # oversampling x top_k candidates by quantized score (null: the engine's 1).
    quantization_rescore: bool = True
    quantization_oversampling: float | None = Field(3.0, ge=1)
    # What stays on disk (memory-mapped, read on demand) rather than in RAM.
    vectors_on_disk: bool = True
    hnsw_on_disk: bool = False
    sparse_on_disk: bool = False
    payload_on_disk: bool = True
    # Largest segment, in KB of dense vectors; the embedded engine also builds a segment each time this
    # much has been written, so a large bulk load is indexed in steps. null: the engine's default.
    max_segment_size_kb: int | None = Field(131_072, gt=0)


class ServeSettings(_Section):
    """How a long-running process (`needle serve`, MCP) answers requests that arrive together."""

    # Warmed instances of each graph, so that this many requests to one graph run at once (they share the
    # models and the index). Each instance costs little memory; beyond the machine's cores they only queue.
    graph_instances: int = Field(4, ge=1)
    # Largest request body, in bytes (413 above it). The largest real request is a chat of a few pages.
    max_body_bytes: int = Field(1_048_576, ge=1)
    # Web origins (scheme://host:port) whose pages may call the server besides its own; "*" for any.
    allowed_origins: list[str] = Field(default_factory=list)
    # Graph variants served beside the shipped graphs for online A/B tests: route name -> YAML file, each at
    # `POST /<name>/run` with the `query` route's request (`needle serve --pipeline NAME=FILE` adds more).
    pipelines: dict[str, str] = Field(default_factory=dict)
    # The routes `POST /split/run` assigns callers to by their key (`query` and variants); empty: all of them.
    split: list[str] = Field(default_factory=list)
    # Where the split route appends one JSON line per request (time, variant, query, result ids, latency);
    # empty: `interactions.jsonl` in the data folder. `needle eval interactions` reads it.
    interaction_log: str = ""


class WatchSettings(_Section):
    """How `needle watch` (and `serve --watch`, `mcp --watch`) turns file changes into index runs."""

    # Quiet time after the last change before the changes are indexed: a burst (a git checkout, a sync)
    # becomes one run.
    debounce_ms: int = Field(500, ge=10)
    # Longest a continuing burst is held back before its changes are indexed anyway.
    max_wait_ms: int = Field(5000, ge=10)


class OwnerSettings(_Section):
    """The background process that holds the embedded index for every `needle` command (`needle.owner.record`)."""

    # A command that needs the index while no process holds it starts a background owner and goes through it;
    # false: each command opens the index itself (and waits for, or is refused by, another that holds it).
    autostart: bool = True
    # A background owner exits after this many minutes without a request (never while it watches or serves).
    idle_minutes: float = Field(15.0, gt=0)
    # Seconds a command waits for the owner's answer to go on (it sends a line every second while it works).
    answer_timeout: float = Field(10.0, gt=0)
    # A `needle mcp` serving through another process's owner keeps the models loaded (the index unopened), so
    # that it takes the index over within a couple of seconds when that owner exits; false saves that memory
    # (a take-over then loads them first: several seconds).
    standby: bool = True


class LLMSettings(_Section):
    """The OpenAI-compatible server that LLM stages (expansion, judging, answers) talk to."""

    url: str = "http://127.0.0.1:11434/v1"
    model: str = "llama3.2"
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = Field(30.0, gt=0)


class JudgeSettings(_Section):
    """
    The LLM that judges answers for `needle eval ragas --llm`, apart from the one that writes them (`llm`), so
    that a small answering model can be judged by a stronger one; an empty value takes the `llm` section's.
    """

    url: str = ""
    model: str = ""
    api_key_env: str = ""
    # Seconds one request to the judge may take; a judgement that takes longer scores NaN for its sample
    # only (a model on a CPU may need minutes where answers are short).
    timeout: float = Field(300.0, gt=0)


class EvalSettings(_Section):
    """How `needle eval` scores: the ragas judge."""

    judge: JudgeSettings = JudgeSettings()


def parse_assignments(text: str) -> dict[str, Any]:
    """
    Read `key=value` pairs separated by commas or whitespace (values parsed as YAML).

    :param text: For example `"fuse.k=30, rerank.enabled=false, fuse.inputs=[bm25, vector]"`.
    :returns: The pairs, in order.
    :raises ValueError: When a pair has no `=` or no key.
    """
    pairs: dict[str, Any] = {}
    for item in (i for i in re.split(r"[,\s]+(?=[\w.-]+=)", text.strip()) if i):
        key, found, raw = item.partition("=")
        if not found or not key:
            raise ValueError(f"expected key=value, got {item!r}")
        pairs[key] = yaml.safe_load(raw.rstrip(", ")) if raw else ""
    return pairs


_OVERRIDES_SOURCES: ContextVar[tuple[Mapping[str, str], list[Path]] | None] = ContextVar(
    "needle_settings_sources", default=None
)


class Settings(BaseSettings):
    """Everything Needle reads from its environment."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        validate_assignment=True,
        env_parse_none_str="null",  # NEEDLE_INDEX__HNSW_EF=null, as `null` in the YAML files
    )

    data_dir: Path = Path("~/.local/share/needle")
    model_dir: Path = Path("~/.cache/needle/models")
    embedding: EmbeddingSettings = EmbeddingSettings()
    sparse: SparseSettings = SparseSettings()
    store: StoreSettings = StoreSettings()
    index: IndexSettings = IndexSettings()
    serve: ServeSettings = ServeSettings()
    watch: WatchSettings = WatchSettings()
    llm: LLMSettings = LLMSettings()
    owner: OwnerSettings = OwnerSettings()
    eval: EvalSettings = EvalSettings()
    # Graph overrides by component and parameter, applied to every graph that has that component:
    # {"fuse.k": 30, "rerank.ranker.bm25_weight": 0.65}. From the environment: NEEDLE_SET="fuse.k=30".
    set: dict[str, Any] = Field(default_factory=dict)

    @field_validator("data_dir", "model_dir", mode="after")
    @classmethod
    def _expand(cls, path: Path) -> Path:
        return Path(os.path.expandvars(str(path))).expanduser()

    @field_validator("set", mode="before")
    @classmethod
    def _assignments(cls, value: Any) -> Any:
        return parse_assignments(value) if isinstance(value, str) else value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Values given in code, then the environment, then the YAML files (user file over the repository's)."""
        chosen = _OVERRIDES_SOURCES.get()
        if chosen is None:
            return (init_settings,)
        env, files = chosen
        return (init_settings, _MappingEnvSource(settings_cls, env), _YamlFiles(settings_cls, files))

    @property
    def index_dir(self) -> Path:
        """Folder of the embedded index."""
        return self.data_dir / "index"

    @property
    def cache_file(self) -> Path:
        """The SQLite file of cached LLM work (expansions, rerank scores)."""
        return self.data_dir / "cache.sqlite"

    @property
    def collections_file(self) -> Path:
        """The YAML file that lists the user's collections."""
        return self.data_dir / "collections.yml"

    @property
    def provenance_file(self) -> Path:
        """The index's provenance (`needle.lifecycle.provenance`): beside the embedded index, or per server collection."""
        if self.store.url:
            return self.data_dir / f"server-{self.store.collection}-needle_index.json"
        return self.index_dir / "needle_index.json"


class _MappingEnvSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping (tests pass their own environment)."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self._mapping = {k: v for k, v in env.items() if k != CONFIG_ENV}
        for name in self._mapping:
            section, nested, _ = name[len(ENV_PREFIX) :].partition("__")
            if name.startswith(ENV_PREFIX) and nested and section.lower() not in settings_cls.model_fields:
                raise ConfigError(
                    f"{name}: {section.lower()} is not a section of the configuration (it has "
                    f"{', '.join(settings_cls.model_fields)}); ranking and chunking knobs live in the graphs: "
                    "set them with NEEDLE_SET='component.parameter=value' or --set (see docs/configuration.md)"
                )
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self._mapping, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str)

    def decode_complex_value(self, field_name: str, field: Any, value: Any) -> Any:
        """JSON as pydantic-settings reads it, else `key=value` pairs for `set` (NEEDLE_SET="fuse.k=30")."""
        try:
            return super().decode_complex_value(field_name, field, value)
        except ValueError:
            if field_name == "set" and isinstance(value, str):
                return parse_assignments(value)
            raise


class _YamlFiles(YamlConfigSettingsSource):
    """The YAML files, later ones deep-merged over earlier ones; a file that is not a mapping is an error."""

    def __init__(self, settings_cls: type[BaseSettings], files: list[Path]) -> None:
        super().__init__(settings_cls, yaml_file=files, deep_merge=True)

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        try:
            data = yaml.safe_load(Path(file_path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as error:
            raise ConfigError(f"cannot read configuration file {file_path}: {error}") from error
        if not isinstance(data, dict):
            raise ConfigError(f"configuration file {file_path} must hold a mapping, not {type(data).__name__}")
        return data


def load_settings(
    config_file: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """
    Load and validate Needle's settings.

    :param config_file: A YAML file to apply over the defaults; `NEEDLE_CONFIG` when not given.
    :param env: The environment to read overrides from; `os.environ` when not given.
    :param overrides: Values applied last (nested mapping), e.g. from a CLI flag.
    :returns: The validated settings.
    :raises ConfigError: When a file cannot be read or a value is invalid.
    """
    env = os.environ if env is None else env
    files = [DEFAULT_CONFIG_FILE] if DEFAULT_CONFIG_FILE.exists() else []
    user_file = config_file or env.get(CONFIG_ENV)
    if user_file:
        user_path = Path(user_file).expanduser()
        if not user_path.is_file():
            raise ConfigError(f"cannot read configuration file {user_path}: no such file")
        files.append(user_path)
    token = _OVERRIDES_SOURCES.set((env, files))
    try:
        return Settings(**dict(overrides or {}))
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in error.errors())
        raise ConfigError(f"invalid configuration: {problems}") from None
    except (ValueError, TypeError) as error:  # a value pydantic-settings could not even decode
        if isinstance(error, ConfigError):
            raise
        raise ConfigError(f"invalid configuration: {error}") from None
    finally:
        _OVERRIDES_SOURCES.reset(token)


# The settings a graph is being built with (`using_settings`), read by the components and stores that fill in
# what the YAML leaves out (a model, a folder, the index's location) through `active_settings`.
_ACTIVE: ContextVar[tuple[Settings, bool] | None] = ContextVar("needle_active_settings", default=None)
_LOADED: dict[tuple[tuple[str, str], ...], Settings] = {}
_LOADED_LOCK = threading.Lock()


@contextmanager
def using_settings(settings: Settings, progress_bar: bool = False) -> Iterator[Settings]:
    """
    Make `settings` the ones `active_settings` gives inside the block (in this thread and its context).

    Needle builds its graphs inside one, so a graph's components and stores fill what the YAML leaves out from
    the settings Needle runs with (tests and `--config` included), not from the process's environment.

    :param progress_bar: Whether components that may show progress bars (document embedders) show them
        (`progress_bars`): a command run in a terminal does.
    """
    token = _ACTIVE.set((settings, progress_bar))
    try:
        yield settings
    finally:
        _ACTIVE.reset(token)


def active_settings() -> Settings:
    """
    The settings a component or store reads what its YAML left out from: those of the enclosing
    `using_settings`, else `load_settings()` from this process's environment (loaded once per set of
    `NEEDLE_*` variables), which is what a graph loaded by plain Haystack (`Pipeline.loads`) gets.

    :raises ConfigError: When the configuration is invalid.
    """
    chosen = _ACTIVE.get()
    if chosen is not None:
        return chosen[0]
    key = tuple(sorted((name, value) for name, value in os.environ.items() if name.startswith(ENV_PREFIX)))
    with _LOADED_LOCK:
        found = _LOADED.get(key)
        if found is None:
            found = _LOADED[key] = load_settings()
        return found


def progress_bars() -> bool:
    """Whether components whose YAML leaves `progress_bar` out show progress bars (see `using_settings`); off by default."""
    chosen = _ACTIVE.get()
    return chosen is not None and chosen[1]


__all__ = [
    "DEFAULT_CONFIG_FILE",
    "PROJECT_ROOT",
    "ConfigError",
    "Settings",
    "active_settings",
    "load_settings",
    "parse_assignments",
    "progress_bars",
    "using_settings",
]
