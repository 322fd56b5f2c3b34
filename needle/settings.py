"""Needle's configuration: defaults, `config/needle.yml`, a user file and environment overrides.

Precedence, lowest first: the defaults below, the repository's `config/needle.yml`, the file named by
`NEEDLE_CONFIG`, then environment variables `NEEDLE_<SECTION>__<KEY>` (and `NEEDLE_DATA_DIR`,
`NEEDLE_MODEL_DIR`). Values are validated when they load; a bad one raises `ConfigError` naming the key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG_FILE = PROJECT_ROOT / "config" / "needle.yml"
ENV_PREFIX = "NEEDLE_"


class ConfigError(ValueError):
    """A configuration value is missing, of the wrong type or out of range."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class EmbeddingSettings(_Section):
    model: str = "local/all-MiniLM-L6-v2-int8"
    query_prefix: str = ""
    document_prefix: str = ""
    batch_size: int = Field(16, gt=0)
    threads: int | None = Field(None, gt=0)
    query_threads: int | None = Field(1, gt=0)
    embed_context: bool = True


class SparseSettings(_Section):
    model: str = "Qdrant/bm25"


class ChunkingSettings(_Section):
    target_chars: int = Field(700, gt=0)
    overlap_chars: int = Field(100, ge=0)
    min_chars: int = Field(100, gt=0)
    max_chars: int = Field(1400, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> "ChunkingSettings":
        if not self.min_chars <= self.target_chars <= self.max_chars:
            raise ValueError("chunking needs min_chars <= target_chars <= max_chars")
        if self.overlap_chars >= self.target_chars:
            raise ValueError("chunking.overlap_chars must be smaller than target_chars")
        return self


class ReaderSettings(_Section):
    max_file_bytes: int = Field(5_000_000, gt=0)


class StoreSettings(_Section):
    url: str | None = None
    api_key_env: str = "QDRANT_API_KEY"
    collection: str = Field("needle", min_length=1)
    timeout: int = Field(10, gt=0)


class RetrievalSettings(_Section):
    top_k: int = Field(10, gt=0, le=1000)
    bm25_top_k: int = Field(40, gt=0, le=10000)
    vector_top_k: int = Field(40, gt=0, le=10000)
    fusion_top_k: int = Field(40, gt=0, le=10000)
    rrf_k: int = Field(60, ge=0)
    original_weight: float = Field(2.0, ge=0.0)
    expansion_weight: float = Field(1.0, ge=0.0)
    rank1_bonus: float = Field(0.05, ge=0.0)
    rank23_bonus: float = Field(0.02, ge=0.0)
    min_score: float = Field(0.0, ge=0.0)
    file_weight: float = Field(0.5, ge=0.0, le=1.0)


class ExpansionSettings(_Section):
    enabled: bool = False
    feedback_docs: int = Field(5, gt=0)
    lex_terms: int = Field(8, gt=0)
    rocchio_beta: float = Field(0.5, ge=0.0)
    include_lex: bool = True
    include_vec: bool = True
    strong_signal_min_score: float = Field(0.85, ge=0.0, le=1.0)
    strong_signal_min_gap: float = Field(0.15, ge=0.0, le=1.0)


class GateSettings(_Section):
    min_similarity: float = Field(0.0, ge=0.0, le=1.0)
    min_bm25: float = Field(0.0, ge=0.0, le=1.0)
    min_rerank: float = Field(0.5, ge=0.0, le=1.0)
    high_similarity: float = Field(0.6, ge=0.0, le=1.0)


HYBRID_RANKER = "hybrid"


class RerankSettings(_Section):
    enabled: bool = True
    # `hybrid` (offline: exact BM25 + cosine of each candidate file) or a fastembed cross-encoder name.
    model: str = HYBRID_RANKER
    bm25_weight: float = Field(0.5, ge=0.0, le=1.0)
    cosine_scale: Literal["best", "raw"] = "best"
    candidates: int = Field(40, gt=0, le=1000)
    top_n: int = Field(10, gt=0, le=1000)
    cache_ttl_hours: float = Field(168, gt=0)
    # Position-aware blending: final = w / fused rank + (1 - w) * rerank score, w by fused rank.
    blend_top_weight: float = Field(0.0, ge=0.0, le=1.0)
    blend_mid_weight: float = Field(0.0, ge=0.0, le=1.0)
    blend_tail_weight: float = Field(0.0, ge=0.0, le=1.0)


class LLMSettings(_Section):
    url: str = "http://127.0.0.1:11434/v1"
    model: str = "llama3.2"
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = Field(30.0, gt=0)
    max_tokens: int = Field(300, gt=0)
    max_lex: int = Field(3, ge=0)
    max_vec: int = Field(3, ge=0)
    include_hyde: bool = True


class SnippetSettings(_Section):
    max_lines: int = Field(10, gt=0)
    context_lines: int = Field(2, ge=0)


class Settings(_Section):
    """Everything Needle reads from configuration."""

    data_dir: Path = Path("~/.local/share/needle")
    model_dir: Path = Path("~/.cache/needle/models")
    embedding: EmbeddingSettings = EmbeddingSettings()
    sparse: SparseSettings = SparseSettings()
    chunking: ChunkingSettings = ChunkingSettings()
    reader: ReaderSettings = ReaderSettings()
    store: StoreSettings = StoreSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    expansion: ExpansionSettings = ExpansionSettings()
    gate: GateSettings = GateSettings()
    rerank: RerankSettings = RerankSettings()
    snippet: SnippetSettings = SnippetSettings()
    llm: LLMSettings = LLMSettings()

    @model_validator(mode="after")
    def _expand_paths(self) -> "Settings":
        object.__setattr__(self, "data_dir", Path(os.path.expandvars(str(self.data_dir))).expanduser())
        object.__setattr__(self, "model_dir", Path(os.path.expandvars(str(self.model_dir))).expanduser())
        return self

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


def _merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"cannot read configuration file {path}: {error}") from error
    if not isinstance(data, dict):
        raise ConfigError(f"configuration file {path} must hold a mapping, not {type(data).__name__}")
    return data


def _env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or name == "NEEDLE_CONFIG":
            continue
        parts = name[len(ENV_PREFIX) :].lower().split("__")
        if parts[0] not in Settings.model_fields:
            continue
        value = yaml.safe_load(raw) if raw.strip() else None
        node = overrides
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return overrides


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
    data: dict[str, Any] = {}
    if DEFAULT_CONFIG_FILE.exists():
        data = _merge(data, _read_yaml(DEFAULT_CONFIG_FILE))
    user_file = config_file or env.get("NEEDLE_CONFIG")
    if user_file:
        data = _merge(data, _read_yaml(Path(user_file).expanduser()))
    data = _merge(data, _env_overrides(env))
    if overrides:
        data = _merge(data, overrides)
    try:
        return Settings.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in error.errors()
        )
        raise ConfigError(f"invalid configuration: {problems}") from None
