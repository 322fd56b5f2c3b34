"""Provenance of an index: which models, prefixes and chunking built it, and how it holds its vectors.

Vectors from one model mean nothing to another, so Needle refuses to search or extend an index built
with different embedding settings, and says how to rebuild it. The models and prefixes come from the
settings (the environment); what to embed beside the text and how to chunk come from the ingest graph.
Chunking is recorded but not enforced: every index run re-chunks every file, so the next run moves the
index to the new chunking, embedding only the chunks whose text changed (the others keep their ids and
vectors).

The index settings (`index:`: HNSW, quantization, what stays on disk) are recorded apart as the index's
`layout`: another layout answers the same queries, so it is never refused. The layout is recorded when
the index is built and whenever the stores were optimised (an index run that changed something, or
`needle optimize`), since optimising is what rebuilds the segments laid out otherwise; `pending_layout`
names the settings the configuration changes that the index does not have yet.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from haystack_integrations.document_stores.needle.protocol import IndexDamagedError
from needle.core import embedding_providers as embedders
from needle.core.atomic import write_atomic
from needle.core.settings import Settings

_CHUNKER = "MarkdownChunker"
# A whole file's dense vector is pooled from its chunks' when the ingest graph has this component, else
# the model embeds the file's text.
_POOLER = "FileVectorPooler"
_CHUNKING_DEFAULTS = {"target_chars": 700, "overlap_chars": 100, "min_chars": 100, "max_chars": 1400}


class IndexMismatchError(RuntimeError):
    """The index was built with other embedding settings than the configured ones."""


# Keys of the fingerprint that a run can change in place or that do not change the vectors (the same model on
# another server); the others need `needle index --rebuild`.
_SOFT_KEYS = frozenset({"chunking", "file_vectors", "embedding_url"})
# What an index recorded before a key existed (every index before served models was embedded by fastembed).
_RECORDED_BEFORE = {"embedding_provider": "fastembed"}
# Index settings that only take effect at search time: nothing to rebuild when they change.
_SEARCH_TIME = frozenset({"hnsw_ef", "quantization_rescore", "quantization_oversampling"})
# The layout every index had before the index settings existed (float vectors and graph in RAM, one build).
LEGACY_LAYOUT = {
    "hnsw_m": 16,
    "hnsw_ef_construct": 100,
    "quantization": "none",
    "vectors_on_disk": False,
    "hnsw_on_disk": False,
    "sparse_on_disk": False,
    "payload_on_disk": True,
    "max_segment_size_kb": None,
}


def fingerprint(settings: Settings, ingest: dict[str, Any]) -> dict[str, Any]:
    """
    The settings an index depends on.

    :param settings: Needle's settings (models and prefixes).
    :param ingest: The ingest graph's dictionary, overrides applied (chunking, fields embedded with the text).
    :returns: A JSON-ready mapping.
    """
    chunking = dict(_CHUNKING_DEFAULTS)
    embed_context = False
    pooled = False
    for component in ingest.get("components", {}).values():
        params = component.get("init_parameters") or {}
        pooled = pooled or component.get("type", "").endswith(_POOLER)
        if component.get("type", "").endswith(_CHUNKER):
            chunking.update({key: params[key] for key in _CHUNKING_DEFAULTS if key in params})
        if component.get("type", "").endswith((".FastembedDocumentEmbedder", ".DenseDocumentEmbedder")):
            embed_context = "context" in (params.get("meta_fields_to_embed") or [])
    query_prefix, document_prefix = embedders.prefixes(settings)
    return {
        "embedding_provider": settings.embedding.provider,
        "embedding_model": settings.embedding.model,
        "embedding_dim": dense_dimension(settings),
        "embedding_url": embedders.server_url(settings) if embedders.is_served(settings) else None,
        "query_prefix": query_prefix,
        "document_prefix": document_prefix,
        "embed_context": embed_context,
        "sparse_model": settings.sparse.model,
        "chunking": chunking,
        "file_vectors": "pooled" if pooled else "embedded",
    }


def dense_dimension(settings: Settings) -> int:
    """The size of the index's dense vectors: the model's, or for a served model the recorded or first answer's."""
    if not embedders.is_served(settings):
        return embedders.dimension(settings)  # fastembed's list: the provenance is not read
    return embedders.dimension(settings, (read(settings) or {}).get("fingerprint"))


def differences(recorded: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """The keys of two fingerprints that differ and that no index run can change in place (models, prefixes)."""
    return [
        key
        for key, value in expected.items()
        if key not in _SOFT_KEYS and recorded.get(key, _RECORDED_BEFORE.get(key)) != value
    ]


def info_path(settings: Settings) -> Path:
    """Where the index's provenance is kept (beside the embedded index, or per server collection)."""
    return settings.provenance_file


def read(settings: Settings) -> dict[str, Any] | None:
    """
    The recorded provenance, or `None` for an index never built.

    Every query reads it (the index's languages, its fingerprint): the file is parsed again only when its
    stat changed, so the same object comes back until then; callers read it and never change it.

    :raises IndexDamagedError: When the file cannot be read as the JSON object Needle writes.
    """
    path = info_path(settings)
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise IndexDamagedError(str(path), f"its provenance cannot be read: {error}") from error
    version = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
    cached = _parsed.get(path)
    if cached is not None and cached[0] == version:
        return cached[1]
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise IndexDamagedError(str(path), f"its provenance cannot be read: {error}") from error
    if not isinstance(recorded, dict):
        raise IndexDamagedError(str(path), "its provenance is not a JSON object")
    _parsed[path] = (version, recorded)
    return recorded


def check(settings: Settings, ingest: dict[str, Any], expected: dict[str, Any] | None = None) -> None:
    """
    Refuse an index built with other embedding settings (other chunking is fine: see the module).

    :param expected: `fingerprint(settings, ingest)` when the caller keeps it (every query checks).
    :raises IndexMismatchError: With the differing keys and the command that rebuilds the index.
    """
    recorded = read(settings)
    if recorded is None:
        return
    expected = expected if expected is not None else fingerprint(settings, ingest)
    differing = differences(recorded.get("fingerprint", {}), expected)
    if differing:
        had = recorded["fingerprint"]
        details = ", ".join(
            f"{k}: index has {had.get(k, _RECORDED_BEFORE.get(k))!r}, config has {expected[k]!r}" for k in differing
        )
        raise IndexMismatchError(
            f"the index at {info_path(settings).parent} was built with other settings ({details}); "
            "rebuild it with `needle index --rebuild`"
        )


def layout(settings: Settings) -> dict[str, Any]:
    """The configured index settings that shape the index itself (search-time ones left out)."""
    return {key: value for key, value in settings.index.model_dump().items() if key not in _SEARCH_TIME}


def pending_layout(settings: Settings) -> dict[str, dict[str, Any]]:
    """
    The index settings the configuration changes and the index does not have yet (`needle optimize` applies them).

    :returns: Setting → `{"index": recorded, "config": configured}`; empty for an index never built. An index
        built before layouts were recorded has `LEGACY_LAYOUT`.
    """
    provenance = read(settings)
    if provenance is None:
        return {}
    recorded = provenance.get("layout") or LEGACY_LAYOUT
    return {
        key: {"index": recorded.get(key), "config": value}
        for key, value in layout(settings).items()
        if recorded.get(key) != value
    }


def record(
    settings: Settings,
    ingest: dict[str, Any],
    optimized: bool = True,
    languages: dict[str, dict[str, int]] | None = None,
    summaries: dict[str, dict[str, Any]] | None = None,
) -> None:
    """
    Write the provenance after a successful index run.

    :param optimized: Whether the run optimised the stores (which applies the configured layout); when it
        did not, the recorded layout stays as it was (`LEGACY_LAYOUT` for an index built before layouts).
    :param languages: Collection → language → how many of its chunks are in it now, for the query side of
        keyword search; replaces what was recorded for each collection named (the others keep theirs).
    :param summaries: Collection → its counts, fields and tags (`needle.lifecycle.field_summary`), for `status`;
        replaces what was recorded for each collection named (the others keep theirs).
    """
    previous = read(settings) or {}
    known = _counts(previous.get("languages"))
    known.update(_counts(languages))
    summarised = {**(previous.get("summaries") or {}), **(summaries or {})}
    _write(
        settings,
        {
            "fingerprint": fingerprint(settings, ingest),
            "layout": layout(settings) if optimized or not previous else previous.get("layout") or LEGACY_LAYOUT,
            "languages": {name: dict(sorted(found.items())) for name, found in sorted(known.items())},
            "summaries": dict(sorted(summarised.items())),
            "created": previous.get("created", time.time()),
            "updated": time.time(),
            **({"backup": previous["backup"]} if "backup" in previous else {}),
        },
    )


def forget_collection(settings: Settings, name: str) -> None:
    """Drop what was recorded of a collection whose chunks left the index (its languages, fields and tags)."""
    previous = read(settings)
    if previous is not None and (
        name in (previous.get("summaries") or {}) or name in (previous.get("languages") or {})
    ):
        _write(
            settings,
            {
                **previous,
                "languages": {k: v for k, v in (previous.get("languages") or {}).items() if k != name},
                "summaries": {k: v for k, v in (previous.get("summaries") or {}).items() if k != name},
            },
        )


def languages(settings: Settings) -> dict[str, dict[str, int]]:
    """Collection → language → how many of its chunks are in it, as recorded by the last index runs."""
    return _counts((read(settings) or {}).get("languages"))


def languages_uncounted(settings: Settings) -> bool:
    """Whether the index recorded its collections' languages without their chunk counts (built before counts)."""
    return any(isinstance(found, list) for found in ((read(settings) or {}).get("languages") or {}).values())


def _counts(recorded: Any) -> dict[str, dict[str, int]]:
    """Recorded languages as counts; an index recorded before counts (a list per collection) counts each once."""
    counts: dict[str, dict[str, int]] = {}
    for name, found in (recorded or {}).items():
        if isinstance(found, dict):
            counts[name] = {str(language): int(n) for language, n in found.items() if int(n) > 0}
        elif isinstance(found, list):
            counts[name] = {str(language): 1 for language in found}
    return counts


def record_layout(settings: Settings) -> None:
    """Record the configured layout as the index's, after the stores were optimised to it."""
    previous = read(settings)
    if previous is not None:
        _write(settings, {**previous, "layout": layout(settings), "updated": time.time()})


def record_backup(settings: Settings, backup: dict[str, Any]) -> None:
    """Record the last backup (where, when, how many chunks) in the provenance, for `needle status`."""
    previous = read(settings)
    if previous is not None:
        _write(settings, {**previous, "backup": backup})


def _write(settings: Settings, data: dict[str, Any]) -> None:
    path = info_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=2))


# Path → (stat, parsed provenance) of the last read (see `read`).
_parsed: dict[Path, tuple[tuple[int, int, int], dict[str, Any]]] = {}


def forget(settings: Settings) -> None:
    """Remove the provenance (before a rebuild)."""
    info_path(settings).unlink(missing_ok=True)
